// One RI5CY-class core: fetch, decode cache, execute, and the timing rules of GVSoC's ISS v1
// (platform-facts 3.1-3.4): one instruction per cycle plus stalls; loads stall for the bus latency
// and leave a load-use gap; mul/mulh stall unconditionally and leave a gap; taken branches and jumps
// pay a penalty; the prefetch buffer refills per line. Every number is a platform key.
#include <algorithm>
#include <cstring>

#include "sem.hpp"
#include "sim.hpp"

namespace pulpsim {

Core::Core(Machine* mach, int idx, bool fc, uint32_t hid) : m(mach), index(idx), is_fc(fc), hartid(hid) {
  const Config& c = m->cfg;
  std::memset(X, 0, sizeof(X));
  std::memset(ev, 0, sizeof(ev));
  std::memset(op_count, 0, sizeof(op_count));
  std::memset(pccr, 0, sizeof(pccr));
  std::memset(pc_base, 0, sizeof(pc_base));
  reset_scoreboard();
  fo = m->fp_separate ? 32 : 0;
  apu_idx = fc ? EV_FC_APU_CONT : EV_CLUSTER_APU_CONT;
#define PULPSIM_TIMING_READ(k) t_##k = c.u("timing." #k);
  TIMING_KEYS(PULPSIM_TIMING_READ)
#undef PULPSIM_TIMING_READ
  if (t_div != TIMING_DIV_CLZ) throw std::runtime_error("timing.div: unknown divider model");
  const std::string who = fc ? "fc." : "cluster.";
  uint32_t line = c.u(who + "fetch_line");
  line_shift = (uint32_t)__builtin_ctz(line);
  line_mask = line - 1;
  fetch_latency = c.u(who + "fetch_latency");
  icache_miss = c.u(who + "icache_miss_latency");
  if (fc) {
    lat_l2 = c.u("mem.l2.fc_latency");
    lat_l1 = c.u("mem.l1.fc_latency");
    lat_apb = c.u("bus.fc_apb");
    lat_cl_periph = c.u("bus.fc_cluster_periph");
    lat_demux = c.u("bus.fc_cluster_periph");
    icache.init(c.u("fc.icache_size"), c.u("fc.icache_ways"), line, 1, c.u("fc.icache_replacement"));
  } else {
    lat_l2 = c.u("mem.l2.cluster_latency");
    lat_l1 = c.u("mem.l1.cluster_latency");
    lat_apb = c.u("bus.cluster_apb");
    lat_cl_periph = c.u("bus.cluster_periph");
    lat_demux = c.u("bus.cluster_demux");
    icache.init(c.u("cluster.icache_l0_size"), c.u("cluster.icache_l0_ways"), line, 1,
                c.u("cluster.icache_replacement"));
    icache_l0_latency = c.u("cluster.icache_l0_latency");
  }
}

void Core::reset_scoreboard() {
  for (int i = 0; i < 64; i++) {
    ready[i] = 0;
    ready_load[i] = false;
  }
}

void Core::fault(const std::string& kind, const std::string& detail, bool has_addr, uint32_t addr) {
  if (m->status != Status::Running) return;
  m->status = Status::Fault;
  m->fault.kind = kind;
  m->fault.detail = detail;
  m->fault.pc = pc;
  m->fault.has_addr = has_addr;
  m->fault.addr = addr;
  m->fault.core = index;
  slow |= SLOW_STOP;
}

// The host bytes of an access of `size` bytes wholly inside L2 or L1 (or the alias of either at 0x0),
// with its latency and whether it reaches L1; nullptr when it is not plain memory.
__attribute__((always_inline)) inline uint8_t* Core::mem_at(uint32_t addr, uint32_t size, int& lat, bool& in_l1) {
  uint32_t o = addr - m->l2_base;
  if (o < m->l2_size && size <= m->l2_size - o) {
    lat = lat_l2;
    in_l1 = false;
    return &m->l2[o];
  }
  o = addr - m->l1_base;
  if (o < m->l1_size && size <= m->l1_size - o) {
    lat = lat_l1;
    in_l1 = true;
    return &m->l1[o];
  }
  if (is_fc) {
    // The SoC interconnect maps 0x0 to the first private L2 bank.
    if (addr < m->l2_fc_alias && size <= m->l2_fc_alias - addr) {
      lat = lat_l2;
      in_l1 = false;
      return &m->l2[addr];
    }
  } else if (addr < m->l1_size && size <= m->l1_size - addr) {
    lat = lat_l1;  // cluster alias of the own L1 at 0x0
    in_l1 = true;
    return &m->l1[addr];
  }
  return nullptr;
}

uint8_t* Core::ram(uint32_t addr, uint32_t size, int& lat) {
  bool in_l1;
  return mem_at(addr, size, lat, in_l1);
}

// Copies of the access sizes, each of a fixed size: a copy of a variable size is a library call.
static inline uint32_t rd_le(const uint8_t* p, int size) {
  switch (size) {
    case 1: return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint32_t v = 0;
      std::memcpy(&v, p, size);
      return v;
    }
  }
}

static inline void wr_le(uint8_t* p, uint32_t value, int size) {
  switch (size) {
    case 1: *p = (uint8_t)value; break;
    case 2: {
      uint16_t v = (uint16_t)value;
      std::memcpy(p, &v, 2);
      break;
    }
    case 4: std::memcpy(p, &value, 4); break;
    default: std::memcpy(p, &value, size); break;
  }
}

static inline uint32_t sign_extend(uint32_t v, int size) {
  return size == 1 ? (uint32_t)(int32_t)(int8_t)v : size == 2 ? (uint32_t)(int32_t)(int16_t)v : v;
}

// Which memory a data access reaches (an X_ACC_* event); L2 accesses also count their bytes, L1
// accesses meet the banks.
__attribute__((always_inline)) inline int Core::access_target(uint8_t* p, bool in_l1, int size) {
  if (in_l1) {
    if (tcdm_busy) tcdm_access((uint32_t)(p - m->l1.data()));
    return X_ACC_L1;
  }
  ev[X_L2_BYTES] += size;
  return X_ACC_L2;
}

// An L1 access of `size` bytes at `addr` in the bank pieces it becomes (X_L1_RD1..X_L1_WR4).
inline void Core::count_l1_pieces(uint32_t addr, int size, bool write) {
  int first = std::min(size, 4 - (int)(addr & 3));
  int base = write ? X_L1_WR1 : X_L1_RD1;
  ev[base + first - 1]++;
  if (first < size) ev[base + size - first - 1]++;
}

// A memory-mapped access: the test-and-set alias of L1 is an L1 access, the rest peripherals.
int Core::mmio_target(uint32_t addr, int size) const {
  return m->tas_offset(m->global(*this, addr), size) != UINT32_MAX ? X_ACC_L1 : X_ACC_PERIPH;
}

__attribute__((always_inline)) inline uint32_t Core::load(uint32_t addr, int size, bool sign, uint32_t& total) {
  int lat = 0;
  uint32_t v = 0;
  bool in_l1;
  uint8_t* p = mem_at(addr, size, lat, in_l1);
  int where;
  if (p) {
    where = access_target(p, in_l1, size);
    v = rd_le(p, size);
  } else if (m->mmio_read(*this, addr, size, v, lat)) {
    where = mmio_target(addr, size);
    if (where == X_ACC_L1) count_l1_pieces(addr, size, true);  // the test-and-set's write of all ones
  } else {
    char buf[96];
    std::snprintf(buf, sizeof buf, "load of %d bytes from unmapped address 0x%08x", size, addr);
    fault("unmapped access", buf, true, addr);
    total = 1;
    return 0;
  }
  if (sign) v = sign_extend(v, size);
  total = lat + 1;
  ev[EV_LD]++;
  ev[X_BUS] += lat;
  ev[where]++;
  if (where == X_ACC_L1) count_l1_pieces(addr, size, false);
  if ((addr & 3) + size > 4) {  // crosses a 32-bit word: a second full access
    ev[EV_MISALIGNED]++;
    ev[EV_LD]++;
    ev[where]++;
    uint32_t more = t_misaligned == TIMING_MISALIGNED_EXTRA_ACCESS ? lat + 1 : 1;
    ev[X_MISALIGNED] += more;
    total += more;
  }
  return v;
}

// A load of N bytes inside one word of L1, inline: the usual load of a kernel's loops. Its accounting is
// that of load() and ld_rd() for such an access; every other load (L2, a peripheral, the cluster's alias of
// L1, an access across a word) goes through ld_rd.
template <int N>
__attribute__((always_inline)) inline void Core::ld_l1(uint32_t rd, uint32_t addr, bool sign) {
  const uint32_t o = addr - m->l1_base;
  if (o >= m->l1_size || (uint32_t)N > m->l1_size - o || (addr & 3) + N > 4) {
    ld_rd(rd, addr, N, sign);
    return;
  }
  uint8_t* p = &m->l1[o];
  ev[access_target(p, true, N)]++;
  uint32_t v = rd_le(p, N);
  if (sign) v = sign_extend(v, N);
  ev[EV_LD]++;
  ev[X_BUS] += lat_l1;
  count_l1_pieces(addr, N, false);
  loaded(rd, v, lat_l1 + 1);
}

// The loaded value reaches register r (x or f) when the load's `total` cycles are over.
__attribute__((always_inline)) inline void Core::loaded(uint32_t r, uint32_t v, uint32_t total) {
  X[r] = v;
  extra += total - 1;
  if (r) {
    ready[r] = t + total + t_load_use;
    ready_load[r] = true;
  }
}

void Core::ld_rd(uint32_t rd, uint32_t addr, int size, bool sign) {
  uint32_t total;
  uint32_t v = load(addr, size, sign, total);
  if (block_pending) {  // an event-unit register made the core sleep; the value arrives on wake-up
    block_pending = false;
    wait_rd = rd;
    slow |= SLOW_SLEEP;
    return;
  }
  loaded(rd, v, total);
}

void Core::ld_frd(uint32_t rd, uint32_t addr, int size) {
  uint32_t total;
  uint32_t v = load(addr, size, false, total);
  if (size == 2) v |= 0xffff0000u;  // flh NaN-boxes (GVSoC fills the upper half with ones in x registers too)
  loaded(fo + rd, v, total);
}

void Core::st(uint32_t addr, int size, uint32_t value) {
  int lat = 0;
  m->stores++;
  bool in_l1;
  uint8_t* p = mem_at(addr, size, lat, in_l1);
  int where;
  if (p) {
    where = access_target(p, in_l1, size);
    wr_le(p, value, size);
    m->invalidate(addr, size);
  } else if (m->mmio_write(*this, addr, size, value, lat)) {
    where = mmio_target(addr, size);
  } else {
    char buf[96];
    std::snprintf(buf, sizeof buf, "store of %d bytes to unmapped address 0x%08x", size, addr);
    fault("unmapped access", buf, true, addr);
    return;
  }
  uint32_t total = lat + 1;
  ev[EV_ST]++;
  ev[X_BUS] += lat;
  ev[where]++;
  if (where == X_ACC_L1) count_l1_pieces(addr, size, true);
  if ((addr & 3) + size > 4) {
    ev[EV_MISALIGNED]++;
    ev[EV_LD]++;  // GVSoC counts the second beat as a load, even for a store
    ev[where]++;
    uint32_t more = t_misaligned == TIMING_MISALIGNED_EXTRA_ACCESS ? lat + 1 : 1;
    ev[X_MISALIGNED] += more;
    total += more;
  }
  extra += total - 1;
}

void Core::div_cost(uint32_t divisor, bool is_signed) {
  // GVSoC's serial divider: clz(divisor) + 3 (negative signed: clz(-d) + 2; signed by zero: 1).
  // Unsigned by zero takes clz(0), which GVSoC's x86 build evaluates to 31.
  uint32_t cycles;
  if (is_signed) {
    int32_t dv = (int32_t)divisor;
    if (dv == 0)
      cycles = 1;
    else if (dv > 0)
      cycles = __builtin_clz(divisor) + 3;
    else
      cycles = __builtin_clz(0u - divisor) + 2;
  } else {
    cycles = (divisor ? __builtin_clz(divisor) : 31) + 3;
  }
  extra += cycles - 1;
  ev[X_DIV] += cycles - 1;
}

int Core::rm_invalid(int rm) {
  fault("illegal instruction", "invalid rounding mode " + std::to_string(rm));
  return 0;
}

// INSTR and RVC follow from the per-operation counts, which the execution loop keeps instead of
// counting those two for every instruction; they are brought up to date wherever counters are read.
// The loop counts an instruction before executing it: a CSR instruction that reads or writes the
// counters (`during_csr`) is not yet one of them, as on the hardware (a 32-bit one: not RVC).
void Core::sync_counts(bool during_csr) {
  if (m->running == this) {   // the cycles of the turn so far (Machine::run adds the rest as the turn ends)
    ev[EV_CYCLES] += cycle - cycles_from;
    cycles_from = cycle;
  }
  uint64_t n = 0, rvc = 0;
  for (int o = 0; o < OP_COUNT; o++) {
    n += op_count[o];
    if (op_info[o].size == 2) rvc += op_count[o];
  }
  ev[EV_INSTR] = n - (during_csr ? 1 : 0);
  ev[EV_RVC] = rvc;
}

uint64_t Core::perf_read(int n) {
  sync_counts(true);
  uint64_t v = pccr[n];
  if ((pcmr & 1) && (pcer >> n & 1)) v += ev[n] - pc_base[n];
  return v;
}

void Core::perf_set_active(bool on) {
  sync_counts(true);
  bool was = pcmr & 1;
  if (was && !on) {
    for (int n = 0; n < 32; n++)
      if (pcer >> n & 1) pccr[n] += ev[n] - pc_base[n];
  } else if (!was && on) {
    // The instruction that starts counting is itself not counted: rebase after it completes.
    slow |= SLOW_PERF_REBASE;
    for (int n = 0; n < 32; n++) pc_base[n] = ev[n];
  }
}

uint32_t Core::csr_read(uint32_t csr, bool& ok) {
  ok = true;
  switch (csr) {
    case CSR_FFLAGS: return fflags;
    case CSR_FRM: return frm;
    case CSR_FCSR: return (frm << 5) | fflags;
    case CSR_MSTATUS: return mstatus;
    case CSR_MISA: return CSR_VALUE_MISA;
    case CSR_MIE: return mie;
    case CSR_MTVEC: return mtvec;
    case CSR_MSCRATCH: return mscratch;
    case CSR_MEPC: return mepc;
    case CSR_MCAUSE: return mcause;
    case CSR_MTVAL: return mtval;
    case CSR_MIP: return 0;
    // GVSoC's mcycle does not yet include the refill of the reading instruction's own line.
    case CSR_MCYCLE: case CSR_CYCLE: case CSR_TIME: return (uint32_t)cycle;
    case CSR_MCYCLEH: case CSR_CYCLEH: case CSR_TIMEH: return (uint32_t)(cycle >> 32);
    case CSR_MINSTRET: case CSR_INSTRET: case CSR_MINSTRETH: case CSR_INSTRETH:
      return 0;  // minstret is not implemented in GVSoC's ISS: reads 0
    case CSR_MVENDORID: case CSR_MARCHID: case CSR_MIMPID: case CSR_MCONFIGPTR: return 0;
    case CSR_MHARTID: case CSR_UHARTID: return hartid;
    case CSR_PCER: return pcer;
    case CSR_PCMR: return pcmr;
    case CSR_LPSTART0: return lp_start[0];
    case CSR_LPEND0: return lp_end[0];
    case CSR_LPCOUNT0: return lp_count[0];
    case CSR_LPSTART1: return lp_start[1];
    case CSR_LPEND1: return lp_end[1];
    case CSR_LPCOUNT1: return lp_count[1];
    default: break;
  }
  if (csr >= CSR_PCCR0 && csr < CSR_PCCR_ALL) return (uint32_t)perf_read(csr - CSR_PCCR0);
  if (csr == CSR_PCCR_ALL) return 0;
  ok = false;
  return 0;
}

bool Core::csr_write(uint32_t csr, uint32_t v) {
  switch (csr) {
    case CSR_FFLAGS: fflags = v & 0x1f; return true;
    case CSR_FRM: frm = v & 7; return true;
    case CSR_FCSR: fflags = v & 0x1f; frm = (v >> 5) & 7; return true;
    case CSR_MSTATUS: mstatus = v; return true;
    case CSR_MISA: return true;
    case CSR_MIE: mie = v; return true;
    case CSR_MTVEC: mtvec = v; return true;
    case CSR_MSCRATCH: mscratch = v; return true;
    case CSR_MEPC: mepc = v; return true;
    case CSR_MCAUSE: mcause = v; return true;
    case CSR_MTVAL: mtval = v; return true;
    case CSR_MIP: return true;
    case CSR_MCYCLE: case CSR_MINSTRET: case CSR_MCYCLEH: case CSR_MINSTRETH:
      return true;  // writes to the cycle counters are ignored
    case CSR_PCER: {
      bool act = pcmr & 1;
      if (act) perf_set_active(false);
      pcer = v;
      if (act) {
        perf_set_active(true);
        slow &= ~SLOW_PERF_REBASE;
      }
      return true;
    }
    case CSR_PCMR: perf_set_active(v & 1); pcmr = v & 3; return true;
    case CSR_LPSTART0: lp_start[0] = v; return true;
    case CSR_LPEND0: lp_end[0] = v; return true;
    case CSR_LPCOUNT0: HWL_COUNT(0, v); return true;
    case CSR_LPSTART1: lp_start[1] = v; return true;
    case CSR_LPEND1: lp_end[1] = v; return true;
    case CSR_LPCOUNT1: HWL_COUNT(1, v); return true;
    default: break;
  }
  if (csr >= CSR_PCCR0 && csr <= CSR_PCCR_ALL) {
    sync_counts(true);
    for (int n = 0; n < 32; n++) {
      if (csr == CSR_PCCR_ALL || (int)(csr - CSR_PCCR0) == n) {
        pccr[n] = v;
        pc_base[n] = ev[n];
      }
    }
    return true;
  }
  return false;
}

uint32_t Core::csr_op(uint32_t csr, uint32_t value, int op, bool write) {
  bool ok;
  uint32_t old = csr_read(csr, ok);
  if (!ok) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CSR 0x%03x is not implemented", csr);
    fault("illegal instruction", buf);
    return 0;
  }
  if (csr == CSR_CYCLE && !write) m->energy_mark(cycle);  // the value the read returns
  if (write) {
    uint32_t nv = op == 0 ? value : op == 1 ? (old | value) : (old & ~value);
    // CSR numbers with bits 11:10 set are read-only (RISC-V privileged spec 2.1); PULP keeps its
    // counter control registers there writable.
    if ((csr >> 10) == 3 && csr != CSR_PCER && csr != CSR_PCMR) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "write to read-only CSR 0x%03x", csr);
      fault("illegal instruction", buf);
      return 0;
    }
    csr_write(csr, nv);
  }
  return old;
}

void Core::trap(uint32_t cause, uint32_t) {
  fault(cause == 11 ? "environment call" : "breakpoint", cause == 11 ? "ecall executed" : "ebreak executed");
}

void Core::mret() {
  npc = mepc;
  extra += t_jump - 1;
  ev[X_JUMP] += t_jump - 1;
}

void Core::wfi() {
  // The FC does not sleep while a line of its interrupt controller is up (GVSoC: wfi_handle); a cluster
  // core's wfi waits for an interrupt the model never raises (crt0 parks finished cores there).
  if (is_fc && m->itc_pending()) return;
  sleeping = true;
  wait = W_WFI;
  wait_rd = 0;
  wait_delay = 1;
  sleep_from = t;
  slow |= SLOW_SLEEP;
}

void Core::elw(uint32_t rd, uint32_t addr) {
  elw_access = true;
  eu_touched = false;
  ld_rd(rd, addr, 4, false);
  // Without an event unit behind the address, p.elw behaves as a load plus its fixed overhead.
  if (!eu_touched) extra += t_elw_overhead;
  elw_access = false;
}

// A line the core's own first level (the FC's icache, a cluster core's L0) does not hold, with that
// level on (fetch_refill serves the hits and the cache that is off).
void Core::refill(uint32_t line) {
  // The caches see the request at the instruction's issue cycle (GVSoC fetches before it accounts any
  // stall of the instruction), also for the second line of an instruction that straddles two.
  uint64_t cost;
  if (is_fc) {
    refilled();
    cost = icache.access(line, cycle, icache_miss, [] { return (uint64_t)0; });
  } else {
    // private L0, then the cluster's shared L1 instruction cache
    Machine* mm = m;
    Core* self = this;
    uint32_t l1_miss = icache_miss - icache_l0_latency;
    uint64_t now = cycle;
    cost = icache.access(line, now, icache_l0_latency, [mm, self, line, now, l1_miss] {
      if (!mm->cl_icache_l1.holds(line)) self->refilled();
      return mm->cl_icache_l1.access(line, now, l1_miss, [] { return (uint64_t)0; });
    });
  }
  fetching(line);
  t += cost;
  ev[EV_IMISS] += cost;
}

const Insn* Core::fetch(uint32_t addr, Insn& tmp) {
  uint32_t o = addr - m->text_lo;
  Insn* d = nullptr;
  if (o < m->text_hi - m->text_lo) {
    d = &m->dcache[o >> 1];
    if (d->op != OP_UNDECODED) return d;
  } else {
    d = &tmp;
  }
  int lat;
  uint8_t* p = ram(addr, 2, lat);
  if (!p || (addr & 1)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "instruction fetch from %s address 0x%08x", p ? "misaligned" : "unmapped", addr);
    fault("unmapped access", buf, true, addr);
    return nullptr;
  }
  uint32_t w = rd_le(p, 2);
  if ((w & 3) == 3) {
    uint8_t* p4 = ram(addr, 4, lat);
    if (!p4) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "instruction fetch from unmapped address 0x%08x", addr + 2);
      fault("unmapped access", buf, true, addr + 2);
      return nullptr;
    }
    w = rd_le(p4, 4);
  }
  isa_decode(w, *d, m->fp_separate);
  if (!m->ext_on[op_info[d->op].ext_switch]) d->op = OP_ILLEGAL;  // an extension the platform lacks
  d->priv = d->op == OP_ILLEGAL ? (uint8_t)TP_NEVER : timing_private[op_info[d->op].timing];
  return d;
}

// Returns whether the loop branched back to its start.
bool Core::hwloop_step(uint32_t at) {
  // Loop 0 is checked first (the inner loop).
  bool back = false;
  for (int l = 0; l < 2; l++) {
    if (lp_count[l] && lp_end[l] == at) {
      lp_count[l]--;
      if (lp_count[l]) {
        npc = lp_start[l];
        back = true;
        break;
      }
    }
  }
  hwl_active = (lp_count[0] | lp_count[1]) != 0;
  return back;
}

// Whether the refills the instruction at `pc` needs touch only this core's state: the FC's icache is
// its own, a disabled cluster icache costs a fixed time, and a hit in the core's L0 goes no further.
// The L0 slots of the hits are kept in `slot_line` and `slot_next` for fetch_lines: a hit changes
// nothing, so they stay valid until the instruction's refills.
inline bool Core::refill_private(int& slot_line, int& slot_next) const {
  if (is_fc || !cl_icache_on) return true;
  const uint32_t line = pc >> line_shift;
  if (on_new_line() && (slot_line = icache.find(line)) < 0) return false;
  return !straddles() || (slot_next = icache.find(line + 1)) >= 0;
}

// refill(), inline but for a miss: no cache, or a hit in the core's own first level (the FC's icache, a
// cluster core's L0 when the cluster's icache is on), which changes no cache state.
// `k`: the line's slot if already found, else -1.
__attribute__((always_inline)) inline void Core::fetch_refill(uint32_t line, int k) {
  uint64_t cost;
  if (k >= 0 || (is_fc ? icache.enabled : cl_icache_on)) {
    if (k < 0) k = icache.find(line);
    if (k < 0) {
      refill(line);
      return;
    }
    uint64_t r = icache.ready[k];
    fetching(line);
    if (r > cycle) {   // the line is still arriving; else the hit costs nothing (and t stays as it is)
      cost = r - cycle;
      t += cost;
      ev[EV_IMISS] += cost;
    }
    return;
  }
  // no cache: every line comes from L2 (refill()'s path, inline)
  cost = (uint64_t)fetch_latency;
  refilled();
  fetching(line);
  t += cost;
  ev[EV_IMISS] += cost;
}

// The refills of the instruction at pc, once it is known to need a line other than the one the core
// fetches from: its own line when the core is not on it, then the next when it straddles two.
__attribute__((always_inline)) inline void Core::fetch_lines(int slot_line, int slot_next) {
  const uint32_t line = pc >> line_shift;
  const bool straddle = straddles();   // (before the first refill moves the core to the line)
  if (on_new_line()) fetch_refill(line, slot_line);
  if (straddle) fetch_refill(line + 1, slot_next);
}

// A shared FPU orders the claims of the cores that issue to it, so an FP op past the core's turn is
// exact when it cannot change that order: every other core of its FPU runs (a sleeping or stopped one
// may be woken at an earlier cycle) and is already at a later cycle than this op, so each of their
// claims still to come follows it, as in the schedule of one instruction at a time. The rule is
// symmetric, so none of their claims ran ahead of this one either.
inline bool Core::fpu_ahead() const {
  for (const Core* p : fpu_peers)
    if (!p->active || p->sleeping || p->cycle <= cycle) return false;
  return true;
}

inline bool Core::is_private(const Insn* d) const {
  return d->priv == TP_ALWAYS || (d->priv == TP_OWN_FPU && (fpu_busy == nullptr || fpu_ahead()));
}

template <bool TRACE, bool TIMELINE>
Status Core::run(uint64_t limit, uint64_t bound) {
  turn_bound = bound;
  uint64_t stop = std::min(limit, m->poll_at);  // the cycle limit, or the next host poll before it
  set_checks(stop);
  const uint32_t text_lo = m->text_lo, text_span = m->text_hi - m->text_lo;
  const Insn* const dc = m->dcache.data();
  const Insn* d;
  bool lines;   // whether the instruction needs a line other than the one the core fetches from
  // The instruction at pc, from the decode cache first (its slots are filled by fetch, emptied by stores
  // into the text), and whether it needs another line. (A fetch that faults ends the run: the fault is
  // recorded.)
#define PULPSIM_LOCATE()                                                              \
  do {                                                                                \
    uint32_t o = pc - text_lo;                                                        \
    if (o < text_span && dc[o >> 1].op != OP_UNDECODED) {                             \
      d = &dc[o >> 1];                                                                \
    } else if (!(d = fetch(pc, tmp_insn))) {                                          \
      return m->status;                                                               \
    }                                                                                 \
    lines = pc - fetch_base >= fetch_span;                                            \
  } while (0)
  while (true) {
    int slot_line = -1, slot_next = -1;   // their L0 slots when the run-ahead check found them (hits)
    if (cycle >= check_at) {   // past the turn's bound, or at the stop
      if (cycle >= ahead_stop) {
        if (cycle < stop) break;   // run_ahead cycles past the turn
        if (cycle >= limit) return Status::CycleLimit;
        if (m->poll_host(cycle)) return m->status;
        stop = std::min(limit, m->poll_at);
        set_checks(stop);   // (the stop is now later, and so is every check but the turn's)
        if (cycle < check_at) goto in_turn;
        if (cycle >= ahead_stop) break;
      }
      // Before ahead_stop, hence before the stop: past the turn's bound. Past its turn, a core may still
      // run ahead a little on instructions that touch nothing shared (no memory, no shared FPU, no refill
      // from the shared icache): they cannot observe or affect another core, so running them early
      // changes no cycle count and keeps the order of every shared interaction. It saves a trip through
      // the scheduler per instruction.
      PULPSIM_LOCATE();
      if (!is_private(d)) break;
      if (lines) {
        if (!ahead_refills || !refill_private(slot_line, slot_next)) break;
        if (cycle > ahead_refill_t) ahead_refill_t = cycle;
      }
    } else {
    in_turn:
      PULPSIM_LOCATE();
    }
    if (TIMELINE) {   // before the instruction: its issue cycle, the counters up to it
      Timeline& tl = *m->timeline;
      if (cycle >= tl_next) tl.sample(*this);
      if (!tl.frames[index].empty() && pc == tl.frames[index].back().ra) tl.ret(*this);
      uint32_t o = (pc - tl.text_lo) >> 1;
      if (o < tl.func_at.size() && tl.func_at[o]) tl.call(*this);
    }
    t = cycle;
    extra = 0;
    if (lines) fetch_lines(slot_line, slot_next);
    npc = pc + d->size;
    // Counted here, with the op the switch reads anyway (also the INSTR and RVC counters:
    // sync_counts); an instruction that faults is taken back below.
    op_count[d->op]++;
    switch (d->op) {
#include "isa_exec.inc"
      default: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "undecodable word 0x%08x", d->raw);
        fault("illegal instruction", buf);
        break;
      }
    }
    if (slow & SLOW_STOP) {
      if (m->status == Status::Fault) {
        op_count[d->op]--;
        return m->status;
      }
    }
    X[0] = 0;
    // (a loop's end is rarely this pc: test that before the call)
    if (hwl_active && (pc == lp_end[0] || pc == lp_end[1]) && npc == pc + d->size && hwloop_step(pc)) {
      extra += t_hwloop_overhead;
      ev[X_HWLOOP] += t_hwloop_overhead;
    }
    cycle = t + 1 + extra;
    if (TRACE && m->trace) {
      std::string s = disasm(d->raw, pc, m->fp_separate);
      std::fprintf(m->trace, "%llu %d %08x %0*x %s\n", (unsigned long long)t, index, pc, d->size * 2, d->raw, s.c_str());
    }
    pc = npc;
    if (slow) {
      if (slow & SLOW_PERF_REBASE) {
        sync_counts();
        for (int n = 0; n < 32; n++) pc_base[n] = ev[n];
      }
      uint32_t s = slow;
      slow = 0;
      if (s & SLOW_STOP) return m->status;
      if (s & SLOW_SLEEP) return Status::Running;
    }
  }
  return Status::Running;
}

#undef PULPSIM_LOCATE

template Status Core::run<true, false>(uint64_t, uint64_t);
template Status Core::run<false, false>(uint64_t, uint64_t);
template Status Core::run<true, true>(uint64_t, uint64_t);
template Status Core::run<false, true>(uint64_t, uint64_t);

}  // namespace pulpsim
