// A decoded instruction: what the generated decoder fills and the executor reads.
#pragma once
#include <cstdint>

namespace pulpsim {

struct Insn {
  uint16_t op = 0;   // Op enum (isa_ops.hpp); OP_UNDECODED in an empty decode-cache slot
  uint8_t size = 4;  // bytes
  uint8_t rd = 0, rs1 = 0, rs2 = 0, rs3 = 0, rm = 0;
  uint8_t priv = 0;  // TimingPrivate of the op (isa_ops.hpp), kept here so that run-ahead tests one byte
  int32_t imm = 0, imm2 = 0;
  uint32_t raw = 0;
};

}  // namespace pulpsim
