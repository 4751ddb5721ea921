// The MCU around the cores: memories, the loader view, the SoC peripherals a program sees
// (stdout, end of simulation, FC icache control, timers) and the run loop.
#include <algorithm>
#include <cstring>

#include "sim.hpp"

namespace pulpsim {

Machine::Machine(const std::map<std::string, double>& values) {
  cfg.v = values;
  fp_separate = cfg.u("isa.fp_separate") != 0;
  l2_base = cfg.u("mem.l2.base");
  l2_size = cfg.u("mem.l2.size");
  l1_base = cfg.u("mem.l1.base");
  l1_size = cfg.u("mem.l1.size");
  l2.assign(l2_size, 0);
  l1.assign(l1_size, 0);
  p_stdout = cfg.u("peripherals.stdout");
  p_soc_ctrl = cfg.u("peripherals.soc_ctrl");
  p_fc_timer = cfg.u("peripherals.fc_timer");
  p_fc_icache = cfg.u("fc.icache_ctrl");
  p_cluster_ctrl = cfg.u("peripherals.cluster_ctrl");
  p_cluster_icache = cfg.u("peripherals.cluster_icache_ctrl");
  uint32_t fc_hartid = (cfg.u("fc.cluster_id") << 5) | cfg.u("fc.core_id");
  hyperram.assign(cfg.u("mem.hyperram.size"), 0);
  flash.assign(cfg.u("mem.flash.size"), 0);
  n_cluster = (int)cfg.u("cluster.cores");
  cluster_hartid_base = cfg.u("cluster.hartid_cluster") << 5;
  cl_icache_l1.init(cfg.u("cluster.icache_l1_size"), cfg.u("cluster.icache_l1_ways"), 16);
  bootaddr.assign(n_cluster, 0x57575757u);
  fpu_busy.assign(cfg.u("cluster.fpus"), 0);
  if (cfg.u("cluster.tcdm_conflicts")) tcdm_busy.assign(cfg.u("mem.l1.banks"), 0);
  eu.mask.assign(n_cluster, 0);
  eu.irq_mask.assign(n_cluster, 0);
  eu.buffer.assign(n_cluster, 0);
  eu.fifo.assign(n_cluster, {});
  dma_chan.assign(n_cluster + 1, DmaChannel{});
  dma_bpc = cfg.u("dma.bytes_per_cycle");
  dma_burst = cfg.u("dma.l1_to_l2_burst");
  dma_issue = cfg.u("dma.issue_cycles");
  cores.emplace_back(new Core(this, 0, true, fc_hartid));
  bool shared_fpu = cfg.u("cluster.fpu_shared") != 0;
  for (int i = 0; i < n_cluster; i++) {
    Core* c = new Core(this, 1 + i, false, cluster_hartid_base | (uint32_t)i);
    c->cluster_core = i;
    if (shared_fpu) c->fpu_busy = &fpu_busy[i % fpu_busy.size()];
    c->div_busy = &div_busy;
    if (!tcdm_busy.empty()) {
      c->tcdm_busy = tcdm_busy.data();
      c->tcdm_banks = (uint32_t)tcdm_busy.size();
    }
    cores.emplace_back(c);
  }
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

// APB windows that exist on the SoC but are not modelled beyond reading 0 and ignoring writes.
struct Window {
  uint32_t base, size;
};
static const Window quiet_apb[] = {
    {0x1A100000, 0x1000},  // FLLs
    {0x1A101000, 0x1000},  // GPIO
    {0x1A102000, 0x480},   // uDMA control and the peripherals before the hyper channels
    {0x1A107000, 0x800},   // PMU
    {0x1A109800, 0x800},   // FC interrupt controller
    {0x1A10B800, 0x800},   // FC timer 1
    {0x1A190000, 0x1000},  // debug unit / ROM
};
static const uint32_t HYPER_BASE = 0x1A102480, HYPER_SIZE = 0x800, SOC_EU = 0x1A106000;

// Cluster peripheral offsets (from the cluster base, 0x10200000 global / 0x00200000 alias).
static const uint32_t CL_CTRL = 0x0000, CL_TIMER = 0x0400, CL_EU = 0x0800, CL_ICACHE = 0x1400, CL_DMA = 0x1800,
                      CL_EU_DEMUX = 0x4000, CL_DMA_DEMUX = 0x4400;

// Offset into L1 of an access to its test-and-set alias (L1 + 1 MiB; cluster cores also see it at
// 0x00100000), or UINT32_MAX when the access is not wholly inside it.
uint32_t Machine::tas_offset(const Core& c, uint32_t addr, int size) const {
  uint32_t toff = addr - (l1_base + 0x100000);
  if (!c.is_fc && addr - 0x100000 < l1_size) toff = addr - 0x100000;
  return toff < l1_size && toff + size <= l1_size ? toff : UINT32_MAX;
}

// Offset of ADDR in the cluster's peripheral space (cluster cores also see it at 0x00200000).
bool Machine::cluster_periph_offset(const Core& c, uint32_t addr, uint32_t& off) const {
  if (addr - p_cluster_ctrl < 0x200000)
    off = addr - p_cluster_ctrl;
  else if (!c.is_fc && addr - 0x00200000 < 0x200000)
    off = addr - 0x00200000;
  else
    return false;
  return true;
}

bool Machine::mmio_read(Core& c, uint32_t addr, int size, uint32_t& value, int& lat) {
  value = 0;
  (void)size;
  if (addr >= 0x1A100000 && addr < 0x1A200000) {
    lat = c.lat_apb;
    if (addr - HYPER_BASE < HYPER_SIZE) return udma_read(c, addr - HYPER_BASE, value);
    if (addr - p_stdout < 0x1000 || addr - p_soc_ctrl < 0x1000 || addr - p_fc_icache < 0x800 ||
        addr - SOC_EU < 0x1000)
      return true;
    if (addr - p_fc_timer < 0x800) {
      uint32_t off = addr - p_fc_timer;
      if (off == 0x8) value = (uint32_t)c.t;
      if (off == 0xC) value = (uint32_t)(c.t >> 32);
      return true;
    }
    for (const auto& w : quiet_apb)
      if (addr - w.base < w.size) return true;
    return false;
  }
  // The L1 test-and-set alias: a read returns the word and leaves all ones behind.
  uint32_t toff = tas_offset(c, addr, size);
  if (toff != UINT32_MAX) {
    lat = c.lat_l1;
    std::memcpy(&value, &l1[toff], size);
    std::memset(&l1[toff], 0xff, size);
    return true;
  }
  uint32_t off;
  if (!cluster_periph_offset(c, addr, off)) return false;
  if (off - CL_EU_DEMUX < 0x400) {
    lat = c.lat_demux;
    return eu_read(c, off - CL_EU_DEMUX, value, c.elw_access) || true;
  }
  if (off - CL_DMA_DEMUX < 0x400) {
    lat = c.lat_demux;
    if (c.is_fc) return true;
    return dma_read(c, off - CL_DMA_DEMUX, c.cluster_core, value);
  }
  lat = c.lat_cl_periph;
  if (off - CL_DMA < 0x400) return dma_read(c, off - CL_DMA, n_cluster, value);
  if (off - CL_CTRL < 0x400) {
    uint32_t r = off - CL_CTRL;
    if (r == 0x08) value = fetch_en;
    if (r >= 0x40 && (int)((r - 0x40) / 4) < n_cluster) value = bootaddr[(r - 0x40) / 4];
    return true;
  }
  if (off - CL_TIMER < 0x400) {
    uint32_t r = off - CL_TIMER;
    if (r == 0x8) value = (uint32_t)c.t;
    return true;
  }
  if (off - CL_EU < 0x800) return true;
  return off < 0x200000;
}

bool Machine::mmio_write(Core& c, uint32_t addr, int size, uint32_t value, int& lat) {
  if (addr >= 0x1A100000 && addr < 0x1A200000) {
    lat = c.lat_apb;
    if (addr - HYPER_BASE < HYPER_SIZE) return udma_write(c, addr - HYPER_BASE, value);
    if (addr - p_stdout < 0x1000) {
      // One channel per (cluster, core); lines are flushed on '\n' so that cores do not interleave.
      uint32_t chan = (addr - p_stdout) >> 3;
      std::string& b = chan_buf[chan];
      char ch = (char)(value & 0xff);
      b.push_back(ch);
      if (ch == '\n') {
        out += b;
        b.clear();
      }
      return true;
    }
    if (addr - p_soc_ctrl < 0x1000) {
      if (addr - p_soc_ctrl == 0xA0 && (value & 0x80000000u)) {
        // CORESTATUS with EOC: the 31-bit status, read as a signed number so that -1 stays -1.
        int32_t code = (int32_t)(value << 1) >> 1;
        exit_program(code);
      }
      return true;
    }
    if (addr - SOC_EU < 0x1000) {
      if (addr == SOC_EU) fc_notify(c.t);  // a software SoC event reaches the FC
      return true;
    }
    if (addr - p_fc_icache < 0x800) {
      uint32_t off = addr - p_fc_icache;
      if (off == 0) fc().icache.enabled = value != 0;
      if (off == 4) fc().icache.flush();
      return true;
    }
    if (addr - p_fc_timer < 0x800) return true;
    for (const auto& w : quiet_apb)
      if (addr - w.base < w.size) return true;
    (void)size;
    return false;
  }
  uint32_t toff = tas_offset(c, addr, size);
  if (toff != UINT32_MAX) {
    lat = c.lat_l1;
    std::memcpy(&l1[toff], &value, size);
    return true;
  }
  uint32_t off;
  if (!cluster_periph_offset(c, addr, off)) return false;
  if (off - CL_EU_DEMUX < 0x400) {
    lat = c.lat_demux;
    return c.is_fc ? true : eu_write(c, off - CL_EU_DEMUX, value);
  }
  if (off - CL_DMA_DEMUX < 0x400) {
    lat = c.lat_demux;
    if (c.is_fc) return true;
    return dma_write(c, off - CL_DMA_DEMUX, c.cluster_core, value);
  }
  lat = c.lat_cl_periph;
  if (off - CL_DMA < 0x400) return dma_write(c, off - CL_DMA, n_cluster, value);
  if (off - CL_CTRL < 0x400) {
    uint32_t r = off - CL_CTRL;
    if (r >= 0x40 && (int)((r - 0x40) / 4) < n_cluster) bootaddr[(r - 0x40) / 4] = value;
    if (r == 0x08) {
      // A rising fetch-enable bit starts that core at its boot address.
      for (int i = 0; i < n_cluster; i++)
        if ((value >> i & 1) && !(fetch_en >> i & 1)) schedule(c.t + 1 + lat, T_CORE_START, i, bootaddr[i]);
      fetch_en = value;
    }
    return true;
  }
  if (off - CL_ICACHE < 0x400) {
    uint32_t r = off - CL_ICACHE;
    if (r == 0) cl_icache_enabled = value != 0;
    if (r == 4) {
      cl_icache_l1.flush();
      for (int i = 0; i < n_cluster; i++) pe(i).icache.flush();
    }
    return true;
  }
  if (off - CL_EU < 0x800) {  // full event-unit map: software events at +0x600 (the FC's way in)
    uint32_t r = off - CL_EU;
    if (r >= 0x600 && r < 0x640) {
      uint32_t mask = value ? value : (1u << n_cluster) - 1;
      eu_set_events(mask, 1u << ((r - 0x600) >> 2), c.t + lat);
    }
    return true;
  }
  return off < 0x200000;
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
// passes the next core's time or the next timed event; ties go to the lower core index.
Status Machine::run(uint64_t max_cycles) {
  // A FC that polls for cluster cores which all wait forever would spin to the cycle limit: when only
  // the FC runs, every active cluster core sleeps, nothing is scheduled and the FC stores nothing for
  // two windows of SPIN_WINDOW cycles while looping at the same pc, that is a deadlock too.
  const uint64_t SPIN_WINDOW = 1000000;
  uint64_t spin_stores = 0, spin_since = UINT64_MAX;
  uint32_t spin_pc = 0;
  while (status == Status::Running) {
    // c: the core to run; (second, second_idx): the earliest of the others, ties to the lower index
    Core* c = nullptr;
    uint64_t second = UINT64_MAX;
    int second_idx = 1 << 30;
    for (auto& k : cores) {
      if (!k->active || k->sleeping) continue;
      if (!c || k->cycle < c->cycle) {
        if (c && (c->cycle < second || (c->cycle == second && c->index < second_idx))) {
          second = c->cycle;
          second_idx = c->index;
        }
        c = k.get();
      } else if (k->cycle < second || (k->cycle == second && k->index < second_idx)) {
        second = k->cycle;
        second_idx = k->index;
      }
    }
    uint64_t next_ev = timed.empty() ? UINT64_MAX : timed.front().time;
    if (!c) {
      if (next_ev != UINT64_MAX) {
        process_timed(next_ev);
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
      continue;
    }
    // run while ahead of nobody: equal cycles go to the lower core index first
    uint64_t lim = second == UINT64_MAX ? second : (c->index < second_idx ? second : second - 1);
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
    Status s = trace ? c->run<true>(max_cycles, bound) : c->run<false>(max_cycles, bound);
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
