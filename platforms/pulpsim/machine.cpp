// The MCU around the cores: memories, the loader view, the SoC peripherals a program sees
// (stdout, end of simulation, FC icache control, timers) and the run loop.
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
  cores.emplace_back(new Core(this, 0, true, fc_hartid));
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
    {0x1A102000, 0x2000},  // uDMA (modelled with the cluster issue's peripheral DMA)
    {0x1A106000, 0x1000},  // SoC event unit
    {0x1A107000, 0x800},   // PMU
    {0x1A109800, 0x800},   // FC interrupt controller
    {0x1A10B800, 0x800},   // FC timer 1
    {0x1A190000, 0x1000},  // debug unit / ROM
};

bool Machine::mmio_read(Core& c, uint32_t addr, int size, uint32_t& value, int& lat) {
  value = 0;
  if (addr >= 0x1A100000 && addr < 0x1A200000) {
    lat = c.lat_apb;
    if (addr - p_stdout < 0x1000 || addr - p_soc_ctrl < 0x1000 || addr - p_fc_icache < 0x800) return true;
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
  if (addr - p_cluster_ctrl < 0x200000) {  // cluster peripherals
    lat = c.lat_cl_periph;
    (void)size;
    return true;
  }
  return false;
}

bool Machine::mmio_write(Core& c, uint32_t addr, int size, uint32_t value, int& lat) {
  if (addr >= 0x1A100000 && addr < 0x1A200000) {
    lat = c.lat_apb;
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
  if (addr - p_cluster_ctrl < 0x200000) {
    lat = c.lat_cl_periph;
    return true;
  }
  return false;
}

Status Machine::run(uint64_t max_cycles) {
  while (status == Status::Running) {
    Core& c = fc();
    if (!c.active) {
      status = Status::Deadlock;
      fault.kind = "deadlock";
      fault.detail = "no core is running";
      break;
    }
    if (c.sleeping) {
      status = Status::Deadlock;
      fault.kind = "deadlock";
      fault.detail = "every core is waiting and nothing can wake it (wfi)";
      fault.pc = c.pc;
      fault.core = c.index;
      break;
    }
    Status s = trace ? c.run<true>(max_cycles) : c.run<false>(max_cycles);
    if (s == Status::CycleLimit) {
      status = Status::CycleLimit;
      fault.kind = "cycle limit";
      fault.detail = "reached the cycle limit of " + std::to_string(max_cycles);
      fault.pc = c.pc;
      fault.core = c.index;
      break;
    }
  }
  flush_stdout();
  return status;
}

}  // namespace pulpsim
