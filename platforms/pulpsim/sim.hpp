// pulpsim: cycle-level model of a PULP MCU (fabric controller + cluster), following the timing
// rules of GVSoC's pulp-open ISS (see platforms/pulp-open.toml and the platform facts).
//
// Every number comes from the platform file through Config; the instruction set comes from the
// generated isa_ops.hpp / isa_exec.inc (isa/*.toml).
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "devices.hpp"
#include "insn.hpp"
#include "isa_ops.hpp"

namespace pulpsim {

// Event indices: 0..31 are the PULP performance counters (isa/counters.toml, generated as EV_* in
// isa_ops.hpp: PCER bit n <-> PCCR n); from 32 on, extra statistics for the cycle report, never
// visible to the program.
enum Ev : int {
  X_BRANCH = 32,    // taken-branch penalty cycles
  X_JUMP,           // jump penalty cycles
  X_DEP,            // dependency stalls on non-load producers (mul/mulh result used next)
  X_MUL,            // unconditional mul/mulh stalls
  X_DIV,            // integer divide cycles beyond the first
  X_FDIV,           // FP divide/sqrt blocking cycles
  X_FPU,            // FP op cycles beyond the first (timing.fpu > 1)
  X_FPU_CONT,       // waiting for a shared FPU
  X_BUS,            // load/store latency beyond one cycle (L2, peripherals, ...)
  X_MISALIGNED,     // extra cycles of word-crossing accesses
  X_WAIT,           // cycles asleep (event unit, barrier, wfi)
  X_TCDM,           // L1 bank-conflict stalls
  X_LOAD_USE,       // load-use stalls (the same as LD_STALL minus mul stalls)
  X_HWLOOP,         // hardware-loop back-edge cycles (timing.hwloop_overhead)
  // Events the energy model prices (harness/energy.py); they change no timing.
  X_ACC_L1,         // data accesses to L1 (a word-crossing access counts twice)
  X_ACC_L2,         // data accesses to L2
  X_ACC_PERIPH,     // data accesses to peripherals (event unit, DMA and uDMA registers, ...)
  X_L2_BYTES,       // bytes of the data accesses to L2
  X_IREFILL,        // instruction lines fetched from L2 (cache disabled, or a miss of every level)
  X_IREFILL_BYTES,  // their bytes
  // L1 bank accesses as the banks see them, by direction and size (1 to 4 bytes): a word-crossing
  // access is two, up to its word's end and the rest (GVSoC's LSU splits it so), and a test-and-set
  // read is a read and a write of the bank. X_L1_RD1 + n - 1 counts n-byte reads, X_L1_WR1 + n - 1
  // n-byte writes. They let a cross-check count the accesses another model prices (its own sizes).
  X_L1_RD1, X_L1_RD2, X_L1_RD3, X_L1_RD4,
  X_L1_WR1, X_L1_WR2, X_L1_WR3, X_L1_WR4,
  NEV
};

enum class Status { Running, Exited, Fault, CycleLimit, Deadlock, Interrupted, Rerun };

// The platform's numbers (harness.platform.Platform.sim_config). Every read is recorded, so the
// machine can refuse a key it was given but does not model: a platform number is never ignored.
struct Config {
  std::map<std::string, double> v;
  mutable std::set<std::string> used;
  double get(const std::string& k) const {
    auto it = v.find(k);
    if (it == v.end()) throw std::runtime_error("platform config is missing '" + k + "'");
    used.insert(k);
    return it->second;
  }
  uint32_t u(const std::string& k) const { return (uint32_t)get(k); }
  bool has(const std::string& k) const { return v.count(k) != 0; }
  void check_all_read() const {
    for (auto& kv : v)
      if (!used.count(kv.first))
        throw std::runtime_error("platform key '" + kv.first + "' is not modelled by the simulator");
  }
};

// A set-associative instruction cache as GVSoC's cache model times it (gvsoc-core models/cache):
// it may be split into line-interleaved banks (the cluster's shared L1: each bank a cache of its own),
// each bank refills one line at a time (a miss waits for the refill in progress), a line being
// refilled delays a hit until it arrives, and the victim way comes from an 8-bit LFSR per bank
// (GVSoC's replacement) or from a round-robin pointer per set (the choice `icache_replacement`).
struct ICache {
  enum Replacement { LFSR8 = 0, ROUND_ROBIN = 1 };
  bool enabled = false;
  uint32_t sets = 0, ways = 0, banks = 1, bank_bits = 0;
  bool sets_pow2 = false;
  uint32_t replacement = LFSR8;
  std::vector<uint32_t> tags;      // banks*sets*ways line numbers, 0xffffffff = invalid
  std::vector<uint64_t> ready;     // cycle at which a line's refill completes
  std::vector<uint8_t> next;       // round robin: next victim per set
  std::vector<uint8_t> lfsr;       // per bank
  std::vector<uint64_t> refill_until;  // per bank: the refill in progress ends then
  void init(uint32_t size, uint32_t nways, uint32_t line, uint32_t nbanks, uint32_t repl) {
    ways = nways;
    banks = nbanks;
    bank_bits = (uint32_t)__builtin_ctz(nbanks);
    replacement = repl;
    sets = nways && nbanks ? size / (line * nways * nbanks) : 0;
    sets_pow2 = sets && !(sets & (sets - 1));
    if (sets == 0 || (nbanks & (nbanks - 1)))
      throw std::runtime_error("an instruction cache of " + std::to_string(size) + " bytes cannot hold " +
                               std::to_string(nbanks) + " bank(s) of " + std::to_string(nways) + " ways of " +
                               std::to_string(line) + "-byte lines");
    tags.assign(banks * sets * ways, 0xffffffffu);
    ready.assign(banks * sets * ways, 0);
    next.assign(banks * sets, 0);
    lfsr.assign(banks, 0);
    refill_until.assign(banks, 0);
  }
  uint32_t bank_of(uint32_t lineno) const { return lineno & (banks - 1); }
  uint32_t set_base(uint32_t lineno) const {  // first slot of the line's set
    uint32_t b = bank_of(lineno);
    uint32_t i = lineno >> bank_bits;
    return (b * sets + (sets_pow2 ? i & (sets - 1) : i % sets)) * ways;   // no division on the usual sizes
  }
  int find(uint32_t lineno) const {
    uint32_t k = set_base(lineno);
    for (uint32_t w = 0; w < ways; w++)
      if (tags[k + w] == lineno) return (int)(k + w);
    return -1;
  }
  bool holds(uint32_t lineno) const { return find(lineno) >= 0; }  // a hit, without touching anything
  uint32_t victim(uint32_t lineno) {
    uint32_t b = bank_of(lineno);
    if (replacement == ROUND_ROBIN) {
      uint32_t s = set_base(lineno) / ways;
      uint32_t w = next[s];
      next[s] = (uint8_t)((w + 1) % ways);
      return w;
    }
    uint8_t& r = lfsr[b];  // GVSoC's 8-bit LFSR, taps 7, 3, 2, 1 (stepped on every refill of the bank)
    uint32_t fb = !(((r >> 7) ^ (r >> 3) ^ (r >> 2) ^ (r >> 1)) & 1u);
    r = (uint8_t)((r << 1) | fb);
    return ((r >> 1) & (ways - 1)) % ways;
  }
  // The latency of a request for `lineno` made at cycle `now`: 0 on a hit (or the rest of the line's
  // refill), on a miss the refill in progress, then `lower` (what the next level answers) plus
  // `refill` of its own. `lower_fn(start)` gives the next level's answer for a request made at `now`.
  template <typename F>
  uint64_t access(uint32_t lineno, uint64_t now, uint32_t refill, F lower_fn) {
    int k = find(lineno);
    if (k >= 0) return ready[k] > now ? ready[k] - now : 0;
    uint32_t b = bank_of(lineno);
    uint64_t lat = refill_until[b] > now ? refill_until[b] - now : 0;
    lat += lower_fn() + refill;
    uint32_t slot = set_base(lineno) + victim(lineno);
    tags[slot] = lineno;
    ready[slot] = now + lat;
    refill_until[b] = now + lat;
    return lat;
  }
  void flush() { std::fill(tags.begin(), tags.end(), 0xffffffffu); }
};

// A simulated memory, zero at reset. Its pages are anonymous mappings the host zero-fills on first
// touch, so a machine costs host time only for the pages its program uses (a program touches a few
// hundred KiB of the megabytes of L2, L1, HyperRAM and flash), and freeing it returns them at once.
class Memory {
 public:
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() { release(); }
  void assign(size_t n);   // n zero bytes (what there was is gone)
  uint8_t* data() { return p_; }
  const uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  uint8_t& operator[](size_t i) { return p_[i]; }
 private:
  void release();
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

class Machine;
class Core;

// What a timeline records (pulp-odl's --timeline): spans of the simulator's own events and sampled
// core counters, only when asked. Recording reads the simulated state and never changes it, and the
// cores run a separate instantiation of their loop while it is on, so runs without a timeline keep
// their speed and every run keeps its cycle counts.
struct Timeline {
  // A span: [start, end) on a track. Tracks: core index (0 = FC, 1.. = cluster cores), or one of these.
  enum Track : uint32_t { T_CLUSTER_DMA = 1000, T_UDMA = 1001 };
  // Kinds of span. Sleeps carry what the core waits for; transfers their direction and memory.
  enum Kind : uint32_t {
    K_WFI = 1, K_BARRIER, K_DMA_EVENT, K_EVENT, K_DISPATCH, K_MUTEX,   // a core asleep
    K_FUNCTION = 16,                                                     // a = function index, b = depth
    K_DMA_TO_L1 = 32, K_DMA_TO_L2,                                       // a = bytes, b = channel | rows << 8
    K_UDMA_READ = 48, K_UDMA_WRITE,                                      // a = bytes, b = 0 HyperRAM / 1 flash
  };
  struct Span { uint32_t track, kind; uint64_t start, end; uint64_t a, b; };
  // Counters sampled per core whenever its clock crosses a multiple of `period` cycles.
  enum Counter { C_CYCLE, C_INSTR, C_ACTIVE, C_FPU_CONT, C_TCDM, C_DEPEND, C_BUS, C_FETCH, C_WAIT, C_MULTI, C_CONTROL,
                 NCOUNTERS };

  uint64_t from = 0, to = UINT64_MAX;   // the window: what ends before `from` or starts at `to` is left out
  uint64_t period = 16;                  // cycles between samples; doubles to keep <= max_samples per core
  uint64_t max_samples = 4096;
  uint64_t max_spans = 2000000;          // then the shortest spans are dropped (min_span doubles)
  uint64_t min_span = 0;
  bool dropped = false;
  std::vector<Span> spans;
  std::vector<std::vector<uint64_t>> samples;   // per core: NCOUNTERS values per sample

  // Functions: entry address -> index (1-based, per halfword of the text range), and per core the
  // frames entered and not yet returned from (a frame returns when the core reaches its return
  // address with the stack pointer it had on entry).
  std::vector<uint32_t> func_at;
  uint32_t text_lo = 0;
  struct Frame { uint32_t ra, sp, fn; uint64_t start; };
  std::vector<std::vector<Frame>> frames;

  bool in_window(uint64_t s, uint64_t e) const { return e > from && s < to; }
  void span(uint32_t track, uint32_t kind, uint64_t s, uint64_t e, uint64_t a = 0, uint64_t b = 0);
  void record(Core& c);   // one row of counters, now
  void sample(Core& c);         // a row when the core's clock has crossed the next period
  void call(Core& c);
  void ret(Core& c);
  void finish(Machine& m, uint64_t end);
};

struct Fault {
  std::string kind;     // "illegal instruction", "unmapped access", ...
  std::string detail;
  uint32_t pc = 0, raw = 0, addr = 0;
  bool has_addr = false;
  int core = -1;
};

class Core {
 public:
  Core(Machine* m, int index, bool is_fc, uint32_t hartid);

  Machine* m;
  int index;          // position in Machine::cores
  bool is_fc;
  uint32_t hartid;
  bool active = false;     // fetch-enabled and not halted
  bool sleeping = false;   // waiting (wfi / event unit)
  // Order among the cores due in the same cycle: the lower position runs first (Machine::woke). The FC,
  // alone in its clock domain, keeps position 0; the others start in index order.
  uint32_t order = 0;
  uint64_t cycle = 0;      // the cycle at which the next instruction issues (beside what the scheduler reads)
  // What the execution loop reads and writes for every instruction, at the start of the object: apart from
  // the cold members after the counters (pccr, pc_base, CSRs), so that no two of them are 4 KiB apart
  // (addresses equal in their low 12 bits make the host wait for a store to a different address).
  uint32_t pc = 0;
  uint64_t turn_bound = 0;  // the last cycle of this core's turn (Machine::lower_bound), kept beside pc and t
  // Active cycles are counted per turn, not per instruction: those from here to `cycle` are not yet in
  // ev[EV_CYCLES] (Machine::run adds them as the turn ends, sync_counts when read during it).
  uint64_t cycles_from = 0;
  // How far past its turn a core may run ahead (Core::run), in cycles: a copy of Machine::run_ahead.
  uint64_t run_ahead = 0;
  // Where the loop must look up from its usual path, so that one compare an instruction covers the turn's
  // bound and the stop (the cycle limit or the next host poll): check_at, the smaller of turn_bound + 1 and
  // the stop; ahead_stop, the smaller of turn_bound + run_ahead + 1 and the stop (set_checks).
  uint64_t check_at = 0;
  uint64_t ahead_stop = 0;
  static uint64_t past_bound(uint64_t bound, uint64_t n) { return bound > UINT64_MAX - n ? UINT64_MAX : bound + n; }
  void set_checks(uint64_t stop) {
    check_at = std::min(past_bound(turn_bound, 1), stop);
    ahead_stop = std::min(past_bound(turn_bound, run_ahead + 1), stop);
  }
  // The turn ends sooner (Machine::lower_bound): the same two checks, with the stop they already hold.
  void lower_turn_bound(uint64_t b) {
    turn_bound = b;
    check_at = std::min(check_at, past_bound(b, 1));
    ahead_stop = std::min(ahead_stop, past_bound(b, run_ahead + 1));
  }
  // State the loop reads, kept beside it for the same reason: the cluster's icache switch (set for every
  // cluster core by a write to the cluster's icache control), a copy of Machine::ahead_refills (at the start
  // of a run), and the latest cycle of a refill this core ran ahead of its turn (Machine::icache_write).
  bool cl_icache_on = false;
  bool ahead_refills = true;
  uint64_t ahead_refill_t = 0;
  // per-instruction state
  uint64_t t = 0;          // issue time of the instruction being executed
  uint32_t extra = 0;      // cycles beyond the first that it occupies
  uint32_t npc = 0;
  // fetch
  // The line the core fetches from: its first byte, and how far past it an instruction may start without
  // needing another line (0 before the first fetch; after it the line's size - 2, as an instruction that
  // starts 2 bytes before the line's end needs the next line too). One compare an instruction.
  uint32_t fetch_base = 0;
  uint32_t fetch_span = 0;
  uint32_t line_shift = 4; // log2 of the fetch line (fc.fetch_line / cluster.fetch_line)
  uint32_t line_mask = 15;
  bool hwl_active = false;
  // Rare events are flagged here and handled once after the instruction, keeping the fast path short.
  enum : uint32_t { SLOW_STOP = 1, SLOW_PERF_REBASE = 2, SLOW_SLEEP = 4 };
  uint32_t slow = 0;
  int apu_idx;             // the APU_CONT counter: its index differs between the FC and cluster cores
  int fo = 0;              // offset of f registers in X (0 = FP values in the integer registers)
  uint64_t* fpu_busy = nullptr;  // the shared FPU this core issues to (nullptr: its own, no clash)
  // timing parameters: t_<key> for every [timing] key of the platform (isa/timing.toml)
#define PULPSIM_TIMING_MEMBER(k) uint32_t t_##k = 0;
  TIMING_KEYS(PULPSIM_TIMING_MEMBER)
#undef PULPSIM_TIMING_MEMBER
  ICache icache;

  // What a sleeping core waits for, and where the value of its waiting load goes when it wakes.
  enum WaitKind { W_NONE, W_WFI, W_EVENT, W_BARRIER, W_DISPATCH, W_MUTEX } wait = W_NONE;
  uint32_t wait_rd = 0, wait_arg = 0;
  bool wait_clear = false;   // EVENT_WAIT_CLEAR / TRIGGER_WAIT_CLEAR: clear the events that woke it
  uint32_t wait_delay = 0;   // cycles from the wake-up condition to the next instruction
  uint64_t sleep_from = 0;
  bool block_pending = false;  // set by an event-unit read that must sleep
  uint32_t block_value = 0;
  int cluster_core = -1;       // index inside the cluster, -1 for the FC
  bool elw_access = false;     // the current load is a p.elw
  bool eu_touched = false;     // ...and it reached the event unit
  uint32_t icache_l0_latency = 0;

  uint32_t X[64];          // x0..x31, then f0..f31 when FP registers are separate
  uint64_t ready[64];      // scoreboard: cycle at which each register can be read without stall
  bool ready_load[64];     // ...and whether its producer was a load (for LD_STALL)
  uint64_t ev[NEV];        // always-on event totals
  uint64_t op_count[OP_COUNT];  // instructions executed, per operation (the energy model's classes)

  // hardware loops (hwl_active: above)
  uint32_t lp_start[2] = {0, 0}, lp_end[2] = {0, 0}, lp_count[2] = {0, 0};

  // CSRs
  uint32_t frm = 0, fflags = 0, mstatus = 0, mtvec = 0, mepc = 0, mcause = 0, mscratch = 0, mie = 0, mtval = 0;
  uint32_t pcer = 0x3, pcmr = 0;
  uint64_t pccr[32];
  uint64_t pc_base[32];

  int fetch_latency;       // per line when the cache is off or misses
  int icache_miss;

  // bus latencies (cycles added by the path; an access costs latency + 1)
  int lat_l2, lat_l1, lat_apb, lat_cl_periph, lat_demux;



  template <bool TRACE, bool TIMELINE>
  Status run(uint64_t limit, uint64_t bound);
  uint64_t tl_next = 0;    // with a timeline: the cycle of the next counter sample
  void reset_scoreboard();

  // helpers used by the generated semantics
  uint32_t load(uint32_t addr, int size, bool sign, uint32_t& total);
  inline int access_target(uint8_t* p, bool in_l1, int size);
  inline uint8_t* mem_at(uint32_t addr, uint32_t size, int& lat, bool& in_l1);
  inline void count_l1_pieces(uint32_t addr, int size, bool write);
  int mmio_target(uint32_t addr, int size) const;
  void ld_rd(uint32_t rd, uint32_t addr, int size, bool sign);
  template <int N> inline void ld_l1(uint32_t rd, uint32_t addr, bool sign);
  inline void loaded(uint32_t r, uint32_t v, uint32_t total);
  void ld_frd(uint32_t rd, uint32_t addr, int size);
  void st(uint32_t addr, int size, uint32_t value);
  void div_cost(uint32_t divisor, bool is_signed);
  uint32_t csr_op(uint32_t csr, uint32_t value, int op, bool write);
  uint32_t csr_read(uint32_t csr, bool& ok);
  bool csr_write(uint32_t csr, uint32_t value);
  void trap(uint32_t cause, uint32_t tval);
  void mret();
  void wfi();
  void elw(uint32_t rd, uint32_t addr);
  int rm_resolve(int rm) {  // a valid mode inline; the fault out of line
    if (rm == 7) rm = (int)frm;
    return rm <= 4 ? rm : rm_invalid(rm);
  }
  int rm_invalid(int rm);
  uint64_t perf_read(int n);
  void sync_counts(bool during_csr = false);
  void perf_set_active(bool on);
  void refill(uint32_t line);
  void refilled() {  // a line fetched from L2 (the cache is off, or every level missed)
    ev[X_IREFILL]++;
    ev[X_IREFILL_BYTES] += line_mask + 1;
  }
  void fault(const std::string& kind, const std::string& detail, bool has_addr = false, uint32_t addr = 0);
  const Insn* fetch(uint32_t pc, Insn& tmp);
  uint8_t* ram(uint32_t addr, uint32_t size, int& lat);
  bool hwloop_step(uint32_t pc);
  bool is_private(const Insn* d) const;
  bool fpu_ahead() const;
  bool refill_private(int& slot_line, int& slot_next) const;
  void fetch_refill(uint32_t line, int slot);
  void fetch_lines(int slot_line, int slot_next);
  void fetching(uint32_t line) {
    fetch_base = line << line_shift;
    fetch_span = line_mask - 1;
  }
  // Of the instruction at pc: whether it starts on a line other than the one the core fetches from, and
  // whether it also needs the next line (the prefetcher always asks for 4 bytes).
  bool on_new_line() const { return fetch_span == 0 || (pc & ~line_mask) != fetch_base; }
  bool straddles() const { return (pc & line_mask) == line_mask - 1; }


  __attribute__((always_inline)) inline void stall_on(int r) {
    uint64_t rdy = ready[r];
    if (rdy > t) {
      uint64_t s = rdy - t;
      t = rdy;
      if (ready_load[r]) {
        ev[EV_LD_STALL] += s;
        ev[X_LOAD_USE] += s;
      } else {
        ev[X_DEP] += s;
      }
    }
  }
  inline void fixed_latency(uint32_t rd, uint32_t n) {
    extra += n - 1;
    ev[EV_LD_STALL] += n - 1;
    ev[X_MUL] += n - 1;
    if (rd) {
      ready[rd] = t + n + t_mul_use;
      ready_load[rd] = false;
    }
  }
  std::vector<const Core*> fpu_peers;  // the other cores that issue to it
  uint64_t* div_busy = nullptr;  // the divide/sqrt unit it shares (nullptr: its own)
  uint64_t* tcdm_busy = nullptr; // per-bank busy-until cycles when the platform models bank conflicts
  uint32_t tcdm_banks = 1;
  uint32_t tcdm_shift = 2;       // log2 of the bank width
  uint32_t tcdm_mask = 0;        // tcdm_banks - 1 when a power of two (no division per access), else 0
  Insn tmp_insn;

  // GVSoC's shared-unit rule (gvsoc-core iss resource.cpp, iss_resource_offload): an FP op asks for its
  // unit at the cycle `t` it has reached; if the unit is busy until later, the core stalls until then
  // and the unit stays busy `hold` cycles more; else it is busy from t for `hold` cycles. The stall is
  // what APU_CONT counts. The op then blocks the core for its latency - 1 (counted in APU_CONT too).
  inline void unit_claim(uint64_t* busy, uint32_t hold) {
    if (!busy) return;
    if (*busy > t) {
      uint64_t s = *busy - t;
      t = *busy;
      ev[apu_idx] += s;
      ev[X_FPU_CONT] += s;
    }
    *busy = t + hold;
  }
  inline void fpu_claim(uint32_t lat) { unit_claim(fpu_busy, lat); }
  inline void fdiv_claim(uint32_t lat) { unit_claim(div_busy, lat); }
  inline void fpu_done(uint32_t lat) {
    if (lat <= 1) return;   // the usual one-cycle op: nothing to add (and extra, on every op's path, untouched)
    extra += lat - 1;
    ev[apu_idx] += lat - 1;
    ev[X_FPU] += lat - 1;
  }
  inline void fdiv_done(uint32_t lat) {
    extra += lat - 1;
    ev[apu_idx] += lat - 1;
    ev[X_FDIV] += lat - 1;
  }
  __attribute__((always_inline)) inline void tcdm_access(uint32_t l1_off) {
    uint32_t w = l1_off >> tcdm_shift;
    uint64_t& b = tcdm_busy[tcdm_mask ? w & tcdm_mask : w % tcdm_banks];
    if (b > t) {
      uint64_t s = b - t;
      t = b;
      ev[EV_CLUSTER_TCDM_CONT] += s;
      ev[X_TCDM] += s;
    }
    b = t + 1;
  }
  void sleep_on(WaitKind k, uint32_t rd, uint32_t arg, bool clear, uint32_t delay);

  // For the energy model, kept after the members the execution loop uses most.
  // When the core ran: its first cycle (UINT64_MAX: never started) and the intervals [from, to) it
  // waited (event unit, barrier, wfi), in order; the energy model prices waiting and running time.
  uint64_t start_cycle = UINT64_MAX;
  std::vector<std::pair<uint64_t, uint64_t>> waits;
};

class Machine {
 public:
  explicit Machine(const std::map<std::string, double>& cfg);

  Config cfg;
  std::vector<std::unique_ptr<Core>> cores;  // cores[0] is the FC; then cluster cores 0..n-1
  Core& fc() { return *cores[0]; }

  // memories
  uint32_t l2_base, l2_size, l1_base, l1_size;
  Memory l2, l1;
  bool fp_separate;

  // decode cache over the executable range
  uint32_t text_lo = 0, text_hi = 0;
  std::vector<Insn> dcache;
  void set_text(uint32_t lo, uint32_t hi);
  void invalidate(uint32_t addr, int size) {
    if (addr - text_lo < text_hi - text_lo + 4 && !dcache.empty()) {
      for (int64_t a = (int64_t)addr - 2; a < (int64_t)addr + size; a += 2)
        if (a >= text_lo && a < text_hi) dcache[(a - text_lo) >> 1].op = OP_UNDECODED;
    }
  }

  // extensions the platform switches on ([isa] keys; index 0: always on)
  bool ext_on[ISA_SWITCHES + 1];

  // address map outside the memories (platform [peripherals], [memory] aliases, [cluster] space_size)
  enum Dev { D_QUIET, D_STDOUT, D_SOC_CTRL, D_SOC_EU, D_FC_ITC, D_FC_TIMER, D_FC_ICACHE, D_UDMA, D_CL_CTRL, D_CL_TIMER, D_EU,
             D_CL_ICACHE, D_DMA, D_EU_DEMUX, D_DMA_DEMUX };
  enum Path { P_APB, P_CL_PERIPH, P_DEMUX };
  struct Window { uint32_t base, size; Dev dev; Path path; bool first; };   // first: no window before it overlaps it
  std::vector<Window> windows;   // devices before the regions that contain them
  mutable const Window* last_window = nullptr;   // window_at's last answer, when it is `first`
  uint32_t l1_tas, l2_fc_alias, cluster_space;
  uint32_t hyper_base;           // the uDMA's hyper peripheral
  const Window* window_at(uint32_t addr) const;
  std::map<uint32_t, std::string> chan_buf;  // stdout channel -> pending line
  std::string out;                           // the program's output, in order of flushed lines

  // ---- cluster ----
  int n_cluster = 0;
  uint32_t cluster_hartid_base = 0;
  ICache cl_icache_l1;                      // shared L1 instruction cache of the cluster
  std::vector<uint32_t> bootaddr;
  uint32_t fetch_en = 0;
  std::vector<uint64_t> fpu_busy;           // one per shared FPU
  std::vector<uint64_t> div_busy;           // one per divide/sqrt unit
  std::vector<uint64_t> tcdm_busy;
  Core& pe(int i) { return *cores[1 + i]; }
  // cluster.core_order: who runs first among the cores due in the same cycle
  enum CoreOrder { LAST_WOKEN_FIRST = 0, BY_INDEX = 1 };
  uint32_t core_order = LAST_WOKEN_FIRST;
  std::vector<Core*> by_order;  // the cores by their position (Core::order)
  // The scheduler's keys of the cores (Machine::run), in ascending order. Between two turns only the core
  // that ran changes its own key, unless a core is woken or started or positions move: those mark them stale.
  std::vector<uint64_t> keys;
  bool keys_stale = true;
  // A cluster core (re)starts: with last_woken_first it now runs before every other cluster core due in
  // the same cycle, as GVSoC puts a core's clock event at the front of its list when it is enabled again.
  void woke(Core& c) {
    if (c.is_fc || core_order != LAST_WOKEN_FIRST || c.order == 1) return;
    keys_stale = true;
    for (uint32_t p = c.order; p > 1; p--) {
      by_order[p] = by_order[p - 1];
      by_order[p]->order = p;
    }
    by_order[1] = &c;
    c.order = 1;
  }

  struct Barrier { uint32_t trigger_mask = 0, target_mask = 0, status = 0; };
  struct EventUnit {
    std::vector<uint32_t> mask, irq_mask, buffer;
    std::vector<std::vector<uint32_t>> fifo;  // dispatch FIFO, one per core
    uint32_t team = 0;
    Barrier bar[EU_BARRIER_COUNT];
    int mutex_owner[EU_MUTEX_COUNT];
  } eu;
  void eu_set_events(uint32_t core_mask, uint32_t bits, uint64_t when);
  void eu_try_wake(Core& c, uint64_t when);
  bool eu_read(Core& c, uint32_t off, uint32_t& value, bool elw);
  bool eu_write(Core& c, uint32_t off, uint32_t value);
  void barrier_arrive(int b, int core, uint64_t when);

  // ---- cluster DMA (MCHAN) ----
  struct DmaXfer {
    uint32_t tid, loc, ext, len, row_len, stride;
    bool to_l1, two_d, event, irq, bcast;
    int channel;
    uint64_t end;
  };
  struct DmaChannel { uint32_t words[5]; int n = 0; int tid = -1; };  // tid: the counter its CMD read returned
  std::vector<DmaChannel> dma_chan;
  uint32_t dma_alloc = 0, dma_active = 0;   // TID bitmaps
  // MCHAN has an engine per direction (GVSoC: a read and a write command in flight at once): a transfer
  // waits for the ones before it in its own direction only. [0]: L1 -> L2, [1]: L2 -> L1.
  uint64_t dma_free_at[2] = {0, 0};
  std::map<uint32_t, DmaXfer> dma_inflight;
  uint64_t dma_busy_cycles = 0, dma_bytes = 0, dma_transfers = 0;
  uint32_t dma_bpc, dma_burst, dma_issue;
  bool dma_read(Core& c, uint32_t off, int channel, uint32_t& value);
  bool dma_write(Core& c, uint32_t off, int channel, uint32_t value);
  void dma_complete(uint32_t tid, uint64_t when);

  // ---- peripheral DMA (uDMA) and external memories ----
  Memory hyperram, flash;
  uint64_t ext_bytes[2][2] = {{0, 0}, {0, 0}};  // [HyperRAM, flash][read, written]
  struct ExtMem { double read_cpb, write_cpb; uint64_t read_setup, write_setup, write_fast; };
  ExtMem ext_mem[2];                         // [hyper_mem_sel]: HyperRAM, flash
  uint32_t hyper_mem_sel = 0;
  struct HyperTrans { uint32_t rx_saddr = 0, rx_size = 0, tx_saddr = 0, tx_size = 0, ca = 0, addr = 0; bool busy = false; };
  HyperTrans hyper[HYPER_CHANNELS];
  uint32_t hyper_next_id = 0;
  uint64_t udma_free_at = 0, udma_busy_cycles = 0, udma_bytes = 0, udma_transfers = 0;
  bool udma_read(Core& c, uint32_t off, uint32_t& value);
  bool udma_write(Core& c, uint32_t off, uint32_t value);
  // ---- what wakes the FC: its interrupt controller (ITC) and the SoC event unit's FC masks ----
  uint32_t itc_mask = 0, itc_status = 0, itc_ack = 0;
  std::vector<uint32_t> itc_fifo;           // SoC events waiting to be read, oldest first
  uint32_t soc_eu_fc_mask[SOC_EU_MASK_REGS];
  bool itc_pending() const { return (itc_status & itc_mask) != 0; }
  void itc_set_status(uint32_t v, uint64_t when);  // and wake the FC from wfi if a line it listens to is up
  void soc_event(uint32_t event, uint64_t when);   // a SoC event, to the FC unless its mask holds it back
  bool itc_read(uint32_t off, uint32_t& value, uint64_t when);
  void itc_write(uint32_t off, uint32_t value, uint64_t when);

  // ---- timed events (DMA completions, core starts), processed in time order ----
  struct Timed { uint64_t time; uint64_t seq; int kind; uint32_t a, b; };
  std::vector<Timed> timed;  // a min-heap on (time, seq)
  Core* running = nullptr;   // the core whose turn it is
  // New events and wake-ups during a turn: the running core yields once past b. Between turns there is
  // nothing to lower: the next turn's bound is computed from the events and the cores' keys.
  void lower_bound(uint64_t b) {
    if (running && b < running->turn_bound) running->lower_turn_bound(b);
  }
  uint64_t stores = 0;       // stores by any core: evidence that a spinning FC can still change something
  // Run-ahead across instruction-line refills that touch only the core's own state (a hit in its L0, a
  // disabled cluster icache, the FC's icache): exact unless an icache control write (enable, flush) lands
  // at or before the latest such refill; the run then stops with Status::Rerun and is run again without.
  bool ahead_refills = true;      // (each core reads its copy, Core::ahead_refills, and keeps its Core::ahead_refill_t)
  // How many cycles past its turn a core may run ahead on instructions that touch nothing shared. 0 runs
  // the schedule of one instruction at a time that run-ahead must reproduce exactly (tests compare the two).
  uint64_t run_ahead = 64;
  void icache_write(const Core& c);
  uint64_t timed_seq = 0;
  void schedule(uint64_t time, int kind, uint32_t a, uint32_t b = 0);
  void process_timed(uint64_t upto);
  enum { T_DMA_DONE = 1, T_UDMA_DONE = 2, T_CORE_START = 3 };

  void map_peripherals();

  // ---- energy windows ----
  // A program marks the section whose energy it wants by reading the `cycle` CSR (the same value as
  // mcycle, and the same timing): reads open and close windows in turn, and the event counts of
  // every closed window add up in win_sum. Counts are taken from every core as it stands when the
  // marking core reads, which the deterministic schedule makes deterministic.
  struct Counts {
    std::vector<uint64_t> ev;   // cores x NEV
    std::vector<uint64_t> ops;  // cores x OP_COUNT
    uint64_t dma_bytes = 0, udma_bytes = 0, ext[2][2] = {{0, 0}, {0, 0}};
  };
  void counts_now(Counts& out);
  void energy_mark(uint64_t when);
  Counts win_sum, win_start;
  bool win_open = false;
  uint64_t win_from = 0;
  std::vector<std::pair<uint64_t, uint64_t>> energy_spans;  // the closed windows, [from, to)

  // run state
  Status status = Status::Running;
  int exit_code = 0;
  Fault fault;
  FILE* trace = nullptr;
  Timeline* timeline = nullptr;   // recording only when asked (pulp-odl --timeline)
  std::unique_ptr<Timeline> timeline_owner;

  // Host interruption (Ctrl-C, SIGTERM): `poll` is asked every POLL_CYCLES simulated cycles whether
  // to stop. It reads and changes nothing of the simulated state, so no cycle count depends on it.
  static constexpr uint64_t POLL_CYCLES = 1u << 20;
  std::function<bool()> poll;
  uint64_t poll_at = POLL_CYCLES;
  bool poll_host(uint64_t now);  // true: stop now (status becomes Interrupted)

  void load_bytes(uint32_t addr, const uint8_t* data, size_t n);
  void read_bytes(uint32_t addr, uint8_t* data, size_t n);
  uint8_t* host_ptr(uint32_t addr, size_t n);  // loader view: L2 or L1 by global address

  Status run(uint64_t max_cycles);
  void start_fc(uint32_t entry);
  void flush_stdout();

  // memory-mapped accesses that are not plain memory; return false if nothing is mapped there
  bool mmio_read(Core& c, uint32_t addr, int size, uint32_t& value, int& lat);
  bool mmio_write(Core& c, uint32_t addr, int size, uint32_t value, int& lat);
  // address decoding shared by mmio_read and mmio_write
  uint32_t global(const Core& c, uint32_t addr) const;
  uint32_t tas_offset(uint32_t addr, int size) const;
  static int latency(const Core& c, Path p);
  void exit_program(int code);
};

uint32_t sleep_kind(const Core& c, uint32_t bits);   // Timeline::K_* of what a sleeping core waited for
std::string disasm(uint32_t word, uint32_t pc, bool fp_separate);

}  // namespace pulpsim
