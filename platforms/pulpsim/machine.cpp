// The MCU around the cores: memories, the loader view, the SoC peripherals a program sees
// (stdout, end of simulation, FC icache control, timers) and the run loop.
#include <algorithm>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "sim.hpp"

namespace pulpsim {

void Memory::assign(size_t n) {
  release();
  if (n == 0) return;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  p_ = static_cast<uint8_t*>(p);
  n_ = n;
}

void Memory::release() {
  if (p_) munmap(p_, n_);
  p_ = nullptr;
  n_ = 0;
}

Machine::Machine(const std::map<std::string, double>& values) {
  cfg.v = values;
  fp_separate = cfg.u("isa.fp_regfile") != 0;
  ext_on[0] = true;
  for (int i = 0; i < ISA_SWITCHES; i++) ext_on[i + 1] = cfg.u(isa_switch_keys[i]) != 0;
  l2_base = cfg.u("mem.l2.base");
  l2_size = cfg.u("mem.l2.size");
  l1_base = cfg.u("mem.l1.base");
  l1_size = cfg.u("mem.l1.size");
  l2_fc_alias = cfg.u("mem.l2.fc_alias_size");
  l1_tas = cfg.u("mem.l1.tas_offset");
  cluster_space = cfg.u("cluster.space_size");
  l2.assign(l2_size);
  l1.assign(l1_size);
  map_peripherals();
  uint32_t fc_hartid = (cfg.u("fc.cluster_id") << SOC_HARTID_CORE_BITS) | cfg.u("fc.core_id");
  hyperram.assign(cfg.u("mem.hyperram.size"));
  flash.assign(cfg.u("mem.flash.size"));
  n_cluster = (int)cfg.u("cluster.cores");
  cluster_hartid_base = cfg.u("cluster.hartid_cluster") << SOC_HARTID_CORE_BITS;
  cl_icache_l1.init(cfg.u("cluster.icache_l1_size"), cfg.u("cluster.icache_l1_ways"), cfg.u("cluster.fetch_line"),
                    cfg.u("cluster.icache_l1_banks"), cfg.u("cluster.icache_replacement"));
  bootaddr.assign(n_cluster, SOC_BOOTADDR_RESET);
  uint32_t fpus = cfg.u("cluster.fpus"), divs = cfg.u("cluster.div_units");
  fpu_busy.assign(fpus, 0);
  div_busy.assign(divs, 0);
  uint32_t bank_width = cfg.u("mem.l1.bank_width");
  if (cfg.u("cluster.tcdm_conflicts")) tcdm_busy.assign(cfg.u("mem.l1.banks"), 0);
  else (void)cfg.get("mem.l1.banks");
  eu.mask.assign(n_cluster, 0);
  eu.irq_mask.assign(n_cluster, 0);
  eu.buffer.assign(n_cluster, 0);
  eu.fifo.assign(n_cluster, {});
  for (auto& o : eu.mutex_owner) o = -1;
  dma_chan.assign(n_cluster + 1, DmaChannel{});
  dma_bpc = cfg.u("dma.bytes_per_cycle");
  dma_burst = cfg.u("dma.l1_to_l2_burst");
  dma_issue = cfg.u("dma.issue_cycles");
  for (int i = 0; i < 2; i++) {
    std::string k = std::string("mem.") + (i ? "flash" : "hyperram") + ".";
    ext_mem[i] = ExtMem{cfg.get(k + "read_cycles_per_byte"), cfg.get(k + "write_cycles_per_byte"),
                        cfg.u(k + "read_setup_cycles"), cfg.u(k + "write_setup_cycles"), cfg.u(k + "write_fast_bytes")};
  }
  core_order = cfg.u("cluster.core_order");
  for (auto& m : soc_eu_fc_mask) m = 0xffffffffu;  // every SoC event held back at reset
  cores.emplace_back(new Core(this, 0, true, fc_hartid));
  for (int i = 0; i < n_cluster; i++) {
    Core* c = new Core(this, 1 + i, false, cluster_hartid_base | (uint32_t)i);
    c->cluster_core = i;
    // Core i uses FPU i mod fpus; with one FPU per core nothing is shared, so nothing is tracked.
    if (fpus < (uint32_t)n_cluster) c->fpu_busy = &fpu_busy[i % fpus];
    c->div_busy = &div_busy[i % divs];
    if (!tcdm_busy.empty()) {
      c->tcdm_busy = tcdm_busy.data();
      c->tcdm_banks = (uint32_t)tcdm_busy.size();
      c->tcdm_shift = (uint32_t)__builtin_ctz(bank_width);
      if (!(c->tcdm_banks & (c->tcdm_banks - 1))) c->tcdm_mask = c->tcdm_banks - 1;
    }
    cores.emplace_back(c);
  }
  for (int i = 0; i < n_cluster; i++)
    for (int j = 0; j < n_cluster; j++)
      if (j != i && pe(i).fpu_busy && pe(i).fpu_busy == pe(j).fpu_busy) pe(i).fpu_peers.push_back(&pe(j));
  for (auto& k : cores) {
    k->order = (uint32_t)k->index;
    by_order.push_back(k.get());
  }
  cfg.check_all_read();
}

// The windows of [peripherals]: devices the model knows by name, every other window quiet (reads
// 0, ignores writes). A window's bus path is the APB inside soc_apb, the demux for a core's own
// event-unit and DMA views, the cluster's peripheral bus otherwise.
void Machine::map_peripherals() {
  static const std::map<std::string, Dev> known = {
      {"stdout", D_STDOUT}, {"soc_ctrl", D_SOC_CTRL}, {"soc_eu", D_SOC_EU}, {"fc_itc", D_FC_ITC}, {"fc_timer", D_FC_TIMER},
      {"fc_icache_ctrl", D_FC_ICACHE}, {"udma", D_UDMA}, {"cluster_ctrl", D_CL_CTRL}, {"cluster_timer", D_CL_TIMER},
      {"event_unit", D_EU}, {"cluster_icache_ctrl", D_CL_ICACHE}, {"dma", D_DMA}, {"eu_demux", D_EU_DEMUX},
      {"dma_demux", D_DMA_DEMUX}};
  const std::string pre = "peripherals.", suf = ".base";
  std::vector<std::string> names;
  for (auto& kv : cfg.v) {
    const std::string& k = kv.first;
    if (k.compare(0, pre.size(), pre) == 0 && k.size() > pre.size() + suf.size() &&
        k.compare(k.size() - suf.size(), suf.size(), suf) == 0)
      names.push_back(k.substr(pre.size(), k.size() - pre.size() - suf.size()));
  }
  auto win = [&](const std::string& n) {
    return std::make_pair(cfg.u(pre + n + ".base"), cfg.u(pre + n + ".size"));
  };
  auto apb = win("soc_apb");
  std::vector<Window> devices, regions;
  for (auto& n : names) {
    if (n == "soc_apb") continue;
    auto w = win(n);
    auto it = known.find(n);
    Dev dev = it == known.end() ? D_QUIET : it->second;
    Path path = w.first - apb.first < apb.second ? P_APB : (dev == D_EU_DEMUX || dev == D_DMA_DEMUX) ? P_DEMUX : P_CL_PERIPH;
    (n == "cluster_periph" ? regions : devices).push_back(Window{w.first, w.second, dev, path});
  }
  windows = devices;
  windows.insert(windows.end(), regions.begin(), regions.end());
  for (size_t i = 0; i < windows.size(); i++) {
    Window& w = windows[i];
    w.first = true;
    for (size_t j = 0; j < i; j++)   // [base, base + size) of the two intersect
      if ((uint64_t)windows[j].base < (uint64_t)w.base + w.size && (uint64_t)w.base < (uint64_t)windows[j].base + windows[j].size)
        w.first = false;
  }
  last_window = nullptr;
  hyper_base = win("udma").first + HYPER_PERIPH_STRIDE * (HYPER_PERIPH_ID + 1);
}

const Machine::Window* Machine::window_at(uint32_t addr) const {
  // The window of the last access first (a program prints, polls or programs one device at a time),
  // when no window before it overlaps it: it is then the first that holds any of its addresses.
  const Window* h = last_window;
  if (h && addr - h->base < h->size) return h;
  for (const auto& w : windows)
    if (addr - w.base < w.size) {
      if (w.first) last_window = &w;
      return &w;
    }
  return nullptr;
}

void Machine::set_text(uint32_t lo, uint32_t hi) {
  text_lo = lo & ~1u;
  text_hi = (hi + 1) & ~1u;
  dcache.assign((text_hi - text_lo) / 2, Insn{});
  for (auto& d : dcache) d.op = OP_UNDECODED;
}

uint8_t* Machine::host_ptr(uint32_t addr, size_t n) {
  if (addr - l2_base < l2_size && n <= l2_size - (addr - l2_base)) return &l2[addr - l2_base];
  if (addr - l1_base < l1_size && n <= l1_size - (addr - l1_base)) return &l1[addr - l1_base];
  return nullptr;
}

void Machine::load_bytes(uint32_t addr, const uint8_t* data, size_t n) {
  uint8_t* p = host_ptr(addr, n);
  if (!p) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "cannot load %zu bytes at 0x%08x: not inside L2 or L1 of this platform", n, addr);
    throw std::runtime_error(buf);
  }
  std::memcpy(p, data, n);
  invalidate(addr, (int)n);
  if (!dcache.empty() && addr < text_hi && addr + n > text_lo)
    for (auto& d : dcache) d.op = OP_UNDECODED;
}

void Machine::read_bytes(uint32_t addr, uint8_t* data, size_t n) {
  uint8_t* p = host_ptr(addr, n);
  if (!p) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "cannot read %zu bytes at 0x%08x: not inside L2 or L1 of this platform", n, addr);
    throw std::runtime_error(buf);
  }
  std::memcpy(data, p, n);
}

void Machine::start_fc(uint32_t entry) {
  Core& c = fc();
  c.pc = entry;
  c.mtvec = entry & ~0xffu;
  c.active = true;
  c.start_cycle = c.cycle;
}

void Machine::counts_now(Counts& out) {
  size_t n = cores.size();
  for (auto& c : cores) c->sync_counts();
  out.ev.resize(n * NEV);
  out.ops.resize(n * OP_COUNT);
  for (size_t i = 0; i < n; i++) {
    std::copy(cores[i]->ev, cores[i]->ev + NEV, out.ev.begin() + i * NEV);
    std::copy(cores[i]->op_count, cores[i]->op_count + OP_COUNT, out.ops.begin() + i * OP_COUNT);
  }
  out.dma_bytes = dma_bytes;
  out.udma_bytes = udma_bytes;
  std::memcpy(out.ext, ext_bytes, sizeof out.ext);
}

void Machine::energy_mark(uint64_t when) {
  if (!win_open) {
    counts_now(win_start);
    win_from = when;
    win_open = true;
    return;
  }
  Counts now;
  counts_now(now);
  if (win_sum.ev.empty()) {
    win_sum.ev.assign(now.ev.size(), 0);
    win_sum.ops.assign(now.ops.size(), 0);
  }
  for (size_t i = 0; i < now.ev.size(); i++) win_sum.ev[i] += now.ev[i] - win_start.ev[i];
  for (size_t i = 0; i < now.ops.size(); i++) win_sum.ops[i] += now.ops[i] - win_start.ops[i];
  win_sum.dma_bytes += now.dma_bytes - win_start.dma_bytes;
  win_sum.udma_bytes += now.udma_bytes - win_start.udma_bytes;
  for (int m = 0; m < 2; m++)
    for (int d = 0; d < 2; d++) win_sum.ext[m][d] += now.ext[m][d] - win_start.ext[m][d];
  energy_spans.emplace_back(win_from, when);
  win_open = false;
}

void Machine::flush_stdout() {
  for (auto& kv : chan_buf) {
    if (!kv.second.empty()) {
      out += kv.second;
      kv.second.clear();
    }
  }
}

void Machine::exit_program(int code) {
  if (status != Status::Running) return;
  status = Status::Exited;
  exit_code = code;
  for (auto& c : cores) c->slow |= Core::SLOW_STOP;
}

int Machine::latency(const Core& c, Path p) {
  return p == P_APB ? c.lat_apb : p == P_DEMUX ? c.lat_demux : c.lat_cl_periph;
}

// The global address of an access: cluster cores also see the cluster's space (L1, its test-and-set
// alias, the peripherals) from address 0.
uint32_t Machine::global(const Core& c, uint32_t addr) const {
  return !c.is_fc && addr < cluster_space ? addr + l1_base : addr;
}

// Offset into L1 of an access to its test-and-set alias, or UINT32_MAX when the access is not
// wholly inside it.
uint32_t Machine::tas_offset(uint32_t addr, int size) const {
  uint32_t toff = addr - (l1_base + l1_tas);
  return toff < l1_size && toff + size <= l1_size ? toff : UINT32_MAX;
}

bool Machine::mmio_read(Core& c, uint32_t addr, int size, uint32_t& value, int& lat) {
  value = 0;
  addr = global(c, addr);
  // The L1 test-and-set alias: a read returns the word and leaves all ones behind.
  uint32_t toff = tas_offset(addr, size);
  if (toff != UINT32_MAX) {
    lat = c.lat_l1;
    std::memcpy(&value, &l1[toff], size);
    std::memset(&l1[toff], 0xff, size);
    return true;
  }
  const Window* w = window_at(addr);
  if (!w) return false;
  lat = latency(c, w->path);
  uint32_t off = addr - w->base;
  switch (w->dev) {
    case D_UDMA:
      if (addr - hyper_base < HYPER_WINDOW) return udma_read(c, addr - hyper_base, value);
      return true;
    case D_FC_ITC: return itc_read(off, value, c.t);
    case D_SOC_EU:
      if (off >= SOC_EU_FC_MASK && off < SOC_EU_FC_MASK + 4 * SOC_EU_MASK_REGS) value = soc_eu_fc_mask[(off - SOC_EU_FC_MASK) / 4];
      return true;
    case D_FC_TIMER:
      if (off == SOC_TIMER_LO) value = (uint32_t)c.t;
      if (off == SOC_TIMER_HI) value = (uint32_t)(c.t >> 32);
      return true;
    case D_EU_DEMUX: return eu_read(c, off, value, c.elw_access) || true;
    case D_DMA_DEMUX:
      if (c.is_fc) return true;
      return dma_read(c, off, c.cluster_core, value);
    case D_DMA: return dma_read(c, off, n_cluster, value);
    case D_CL_CTRL:
      if (off == SOC_FETCH_EN) value = fetch_en;
      if (off >= SOC_BOOTADDR && (int)((off - SOC_BOOTADDR) / 4) < n_cluster) value = bootaddr[(off - SOC_BOOTADDR) / 4];
      return true;
    case D_CL_TIMER:
      if (off == SOC_TIMER_LO) value = (uint32_t)c.t;
      return true;
    default: return true;
  }
}

bool Machine::mmio_write(Core& c, uint32_t addr, int size, uint32_t value, int& lat) {
  addr = global(c, addr);
  uint32_t toff = tas_offset(addr, size);
  if (toff != UINT32_MAX) {
    lat = c.lat_l1;
    std::memcpy(&l1[toff], &value, size);
    return true;
  }
  const Window* w = window_at(addr);
  if (!w) return false;
  lat = latency(c, w->path);
  uint32_t off = addr - w->base;
  switch (w->dev) {
    case D_UDMA:
      if (addr - hyper_base < HYPER_WINDOW) return udma_write(c, addr - hyper_base, value);
      return true;
    case D_STDOUT: {
      // One channel per (cluster, core); lines are flushed on '\n' so that cores do not interleave.
      uint32_t chan = off >> SOC_STDOUT_CORE_SHIFT;
      std::string& b = chan_buf[chan];
      char ch = (char)(value & 0xff);
      b.push_back(ch);
      if (ch == '\n') {
        out += b;
        b.clear();
      }
      return true;
    }
    case D_SOC_CTRL:
      if (off == SOC_CORESTATUS && (value >> SOC_EOC_BIT & 1)) {
        // CORESTATUS with EOC: the 31-bit status, read as a signed number so that -1 stays -1.
        int32_t code = (int32_t)(value << 1) >> 1;
        exit_program(code);
      }
      return true;
    case D_SOC_EU:  // the FC's event masks; EVENT (+0) triggers nothing on pulp-open
      if (off >= SOC_EU_FC_MASK && off < SOC_EU_FC_MASK + 4 * SOC_EU_MASK_REGS) soc_eu_fc_mask[(off - SOC_EU_FC_MASK) / 4] = value;
      return true;
    case D_FC_ITC: itc_write(off, value, c.t); return true;
    case D_FC_ICACHE:
      icache_write(c);
      if (off == SOC_ICACHE_ENABLE) fc().icache.enabled = value != 0;
      if (off == SOC_ICACHE_FLUSH) fc().icache.flush();
      return true;
    case D_EU_DEMUX: return c.is_fc ? true : eu_write(c, off, value);
    case D_DMA_DEMUX:
      if (c.is_fc) return true;
      return dma_write(c, off, c.cluster_core, value);
    case D_DMA: return dma_write(c, off, n_cluster, value);
    case D_CL_CTRL:
      if (off >= SOC_BOOTADDR && (int)((off - SOC_BOOTADDR) / 4) < n_cluster) bootaddr[(off - SOC_BOOTADDR) / 4] = value;
      if (off == SOC_FETCH_EN) {
        // A rising fetch-enable bit starts that core at its boot address.
        for (int i = 0; i < n_cluster; i++)
          if ((value >> i & 1) && !(fetch_en >> i & 1)) schedule(c.t + 1, T_CORE_START, i, bootaddr[i]);
        fetch_en = value;
      }
      return true;
    case D_CL_ICACHE:
      icache_write(c);
      if (off == SOC_ICACHE_ENABLE)
        for (int i = 0; i < n_cluster; i++) pe(i).cl_icache_on = value != 0;
      if (off == SOC_ICACHE_FLUSH) {
        cl_icache_l1.flush();
        for (int i = 0; i < n_cluster; i++) pe(i).icache.flush();
      }
      return true;
    case D_EU:
      // full event-unit map: software events (the FC's way in)
      if (off >= EU_FULL_SW_EVENT && off < EU_FULL_SW_EVENT + 4 * EU_SW_EVENT_COUNT) {
        uint32_t mask = value ? value : (1u << n_cluster) - 1;
        eu_set_events(mask, 1u << ((off - EU_FULL_SW_EVENT) >> 2), c.t);
      }
      return true;
    default: return true;
  }
}

// An icache control write at c.t: a core that already refilled ahead of its turn at or after c.t may
// have seen a line this write changes, so the run is not exact: stop it, to be run again without.
void Machine::icache_write(const Core& c) {
  uint64_t latest = 0;
  for (auto& k : cores) latest = std::max(latest, k->ahead_refill_t);
  if (!ahead_refills || latest < c.t || status != Status::Running) return;
  status = Status::Rerun;
  for (auto& k : cores) k->slow |= Core::SLOW_STOP;
}

static std::string wait_text(const Core& c) {
  char buf[160];
  const char* who = c.is_fc ? "fc" : nullptr;
  std::string name = who ? std::string(who) : "cluster core " + std::to_string(c.cluster_core);
  switch (c.wait) {
    case Core::W_WFI: std::snprintf(buf, sizeof buf, "%s in wfi at pc 0x%08x", name.c_str(), c.pc); break;
    case Core::W_EVENT:
      std::snprintf(buf, sizeof buf, "%s waits for events 0x%x at pc 0x%08x", name.c_str(), c.wait_arg, c.pc);
      break;
    case Core::W_DISPATCH: std::snprintf(buf, sizeof buf, "%s waits on the dispatch FIFO at pc 0x%08x", name.c_str(), c.pc); break;
    case Core::W_MUTEX: std::snprintf(buf, sizeof buf, "%s waits for mutex %u at pc 0x%08x", name.c_str(), c.wait_arg, c.pc); break;
    default: std::snprintf(buf, sizeof buf, "%s at pc 0x%08x", name.c_str(), c.pc); break;
  }
  return buf;
}

// The sleeping cores (cluster cores only, or every core) as "who waits for what; ...", for deadlock reports.
static std::string sleepers_text(const std::vector<std::unique_ptr<Core>>& cores, bool cluster_only) {
  std::string who;
  for (auto& k : cores)
    if (k->active && k->sleeping && !(cluster_only && k->is_fc)) who += (who.empty() ? "" : "; ") + wait_text(*k);
  return who;
}

bool Machine::poll_host(uint64_t now) {
  poll_at = now + POLL_CYCLES;
  if (!poll || !poll()) return false;
  status = Status::Interrupted;
  fault.kind = "interrupted";
  fault.detail = "stopped by the host at cycle " + std::to_string(now);
  return true;
}

// Deterministic scheduling: the running core with the smallest cycle count executes next, until it
// passes the next core's time or the next timed event; ties go by position (cluster.core_order).
static const unsigned KEY_BITS = 6;                 // bits of the core position in a scheduling key
static const uint64_t KEY_MASK = (1u << KEY_BITS) - 1;

static inline uint64_t sched_key(const Core& k) {
  return (k.active & !k.sleeping) ? (k.cycle << KEY_BITS) | k.order : UINT64_MAX;
}

Status Machine::run(uint64_t max_cycles) {
  // A FC that polls for cluster cores which all wait forever would spin to the cycle limit: when only
  // the FC runs, every active cluster core sleeps, nothing is scheduled and the FC stores nothing for
  // two windows of SPIN_WINDOW cycles while looping at the same pc, that is a deadlock too.
  const uint64_t SPIN_WINDOW = 1000000;
  uint64_t spin_stores = 0, spin_since = UINT64_MAX;
  uint32_t spin_pc = 0;
  const size_t ncores = cores.size();
  for (auto& k : cores) {
    k->ahead_refills = ahead_refills;
    k->run_ahead = run_ahead;
  }
  keys.assign(ncores, UINT64_MAX);
  keys_stale = true;
  // the loop of a turn, chosen once: with or without a trace and a timeline
  Status (Core::*const turn)(uint64_t, uint64_t) =
      timeline ? (trace ? &Core::run<true, true> : &Core::run<false, true>)
               : (trace ? &Core::run<true, false> : &Core::run<false, false>);
  Core* last = nullptr;   // the core of the last turn
  uint64_t big = 0;       // every cycle of a key, or-ed: keys are exact while it leaves room for the position
  while (status == Status::Running) {
    // c: the core to run; (second, second_pos): the earliest of the others. Each runnable core's key is
    // (cycle, position) in one word (the position orders cores due in the same cycle: Machine::woke), and
    // `keys` holds them in ascending order, so the two smallest are its first two; cycles that do not
    // leave room for the position take the exact slow path. Usually only the last core's key has changed
    // since the last turn: it was the first, and moves to its new place (when the cores run in step,
    // the back: a few moves, no branch mispredicted, where a scan for the two smallest is a chain of
    // dependent compares through every core).
    Core* c = nullptr;
    uint64_t second = UINT64_MAX;
    uint32_t second_pos = UINT32_MAX;
    uint64_t* kk = keys.data();
    if (keys_stale) {
      keys_stale = false;
      for (size_t i = 0; i < ncores; i++) {
        kk[i] = sched_key(*cores[i]);
        big |= cores[i]->cycle;
      }
      std::sort(kk, kk + ncores);
    } else if (last) {
      uint64_t key = sched_key(*last);
      big |= last->cycle;
      size_t i = 1;
      for (; i < ncores && kk[i] < key; i++) kk[i - 1] = kk[i];
      kk[i - 1] = key;
    }
    uint64_t k1 = kk[0], k2 = ncores > 1 ? kk[1] : UINT64_MAX;
    if (!(big >> (64 - KEY_BITS)) && ncores <= (1u << KEY_BITS)) {
      if (k1 != UINT64_MAX) c = by_order[k1 & KEY_MASK];
      if (k2 != UINT64_MAX) {
        second = k2 >> KEY_BITS;
        second_pos = (uint32_t)(k2 & KEY_MASK);
      }
    } else {
      keys_stale = true;   // the core chosen here need not be the first key
      for (auto& k : cores) {
        if (!k->active || k->sleeping) continue;
        if (!c || k->cycle < c->cycle || (k->cycle == c->cycle && k->order < c->order)) {
          if (c) {
            second = c->cycle;
            second_pos = c->order;
          }
          c = k.get();
        } else if (k->cycle < second || (k->cycle == second && k->order < second_pos)) {
          second = k->cycle;
          second_pos = k->order;
        }
      }
    }
    uint64_t next_ev = timed.empty() ? UINT64_MAX : timed.front().time;
    if (!c) {
      if (next_ev != UINT64_MAX) {
        process_timed(next_ev);
        keys_stale = true;
        continue;
      }
      status = Status::Deadlock;
      fault.kind = "deadlock";
      fault.detail = "every core is waiting and nothing can wake it: " + sleepers_text(cores, false);
      for (auto& k : cores)
        if (k->active && k->sleeping) {
          fault.pc = k->pc;
          fault.core = k->index;
          break;
        }
      break;
    }
    if (next_ev <= c->cycle) {
      process_timed(c->cycle);
      keys_stale = true;
      continue;
    }
    // run while ahead of nobody: up to second's cycle when c would run first in that cycle too
    uint64_t lim = second == UINT64_MAX ? second : (c->order < second_pos ? second : second - 1);
    uint64_t bound = std::min(lim, next_ev - 1);
    // the FC is the only runnable core and nothing is scheduled: every active cluster core sleeps
    bool fc_alone = c->is_fc && second == UINT64_MAX && next_ev == UINT64_MAX;
    if (fc_alone && std::any_of(cores.begin(), cores.end(), [](auto& k) { return !k->is_fc && k->active; })) {
      bound = std::min(bound, c->cycle + SPIN_WINDOW);
      // a poll loop is a few instructions: the FC must also be back near the same pc every window
      bool same_loop = c->pc - spin_pc < 64 || spin_pc - c->pc < 64;
      if (spin_since == UINT64_MAX || stores != spin_stores || !same_loop) {
        spin_since = c->cycle;
        spin_stores = stores;
        spin_pc = c->pc;
      } else if (c->cycle - spin_since > 2 * SPIN_WINDOW) {
        status = Status::Deadlock;
        fault.kind = "deadlock";
        fault.detail = "the cluster cores wait forever (" + sleepers_text(cores, true) +
                       ") while the fc polls without storing anything";
        fault.pc = c->pc;
        fault.core = c->index;
        break;
      }
    } else {
      spin_since = UINT64_MAX;
    }
    last = c;
    running = c;
    c->cycles_from = c->cycle;
    Status s = (c->*turn)(max_cycles, bound);
    c->ev[EV_CYCLES] += c->cycle - c->cycles_from;
    running = nullptr;
    if (s == Status::CycleLimit) {
      status = Status::CycleLimit;
      fault.kind = "cycle limit";
      fault.detail = "reached the cycle limit of " + std::to_string(max_cycles) +
                     (c->is_fc ? "" : " (cluster core " + std::to_string(c->cluster_core) + " still running)");
      fault.pc = c->pc;
      fault.core = c->index;
      break;
    }
  }
  flush_stdout();
  return status;
}

}  // namespace pulpsim
