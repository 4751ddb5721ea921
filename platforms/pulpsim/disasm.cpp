// Disassembler: text as llvm-objdump-19 -d -M no-aliases prints it for standard instructions, and
// the mnemonics of the PULP extensions. The per-instruction formats are generated (isa_disasm.inc).
#include <cstdio>
#include <string>

#include "sim.hpp"

namespace pulpsim {

static const char* const abi[32] = {"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
                                    "a1",   "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
                                    "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
static const char* const fabi[32] = {"ft0", "ft1", "ft2",  "ft3",  "ft4", "ft5", "ft6",  "ft7",
                                     "fs0", "fs1", "fa0",  "fa1",  "fa2", "fa3", "fa4",  "fa5",
                                     "fa6", "fa7", "fs2",  "fs3",  "fs4", "fs5", "fs6",  "fs7",
                                     "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11"};

static std::string uhex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}
static std::string shex(int32_t v) {
  char b[16];
  if (v < 0)
    std::snprintf(b, sizeof b, "-0x%x", (uint32_t)(-(int64_t)v));
  else
    std::snprintf(b, sizeof b, "0x%x", (uint32_t)v);
  return b;
}
static std::string csr_name(int32_t c) {
  const char* n = csr_table_name((uint32_t)c);
  return n ? std::string(n) : uhex((uint32_t)c);
}
static std::string rm_suffix(uint8_t rm, bool legacy) {
  static const char* const names[8] = {"rne", "rtz", "rdn", "rup", "rmm", "frm5", "frm6", "dyn"};
  if (legacy && rm == 0) return "";
  return std::string(", ") + names[rm & 7];
}
static std::string fence_set(int32_t v) {
  std::string s;
  if (v & 8) s += 'i';
  if (v & 4) s += 'o';
  if (v & 2) s += 'r';
  if (v & 1) s += 'w';
  return s.empty() ? "0" : s;
}

std::string disasm(uint32_t word, uint32_t pc, bool fp_separate) {
  Insn d;
  isa_decode(word, d, fp_separate);
  // Two encodings llvm-objdump names although they are not instructions of their own: the all-zero
  // halfword (defined illegal; undecoded here) and `csrrw zero, cycle, zero` (a write to a read-only CSR,
  // the canonical 32-bit illegal instruction).
  if (d.size == 2 && d.raw == 0) return "c.unimp";
  if (d.size == 4 && d.raw == 0xc0001073u) return "unimp";
  auto xreg = [](uint8_t r) { return std::string(abi[r & 31]); };
  auto freg = [fp_separate](uint8_t r) { return std::string(fp_separate ? fabi[r & 31] : abi[r & 31]); };
  std::string s;
  switch (d.op) {
#include "isa_disasm.inc"
    default:
      s = "<unknown>";
      break;
  }
  return s;
}

}  // namespace pulpsim
