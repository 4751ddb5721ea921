"""Instruction semantics, checked with programs that run on the embedded simulator.

Per instruction class one program runs many inputs through each instruction (inline asm, or the
pulp_isa.h C functions for PULP register-to-register instructions) and prints every result; the
expected values are computed here in Python.

- RV32I: ALU, shifts, compares, branches, jumps, loads and stores (signed/unsigned, byte/half/word,
  misaligned), RV32M (including divide by zero and INT_MIN / -1), Zicsr (mscratch, fflags, frm, fcsr)
- RV32C: every compressed instruction explicitly, plus a C program built with -Os
- every instruction of isa/xpulp.toml and isa/xfvec.toml. The reference is GVSoC's pulp-open model
  (gvsoc-core models/cpu/iss/include/isa/pulp_v2.hpp, rv32Xfvec.hpp, rv32Xfaux.hpp and
  isa_lib/int.h at the snapshot of platform-facts.md); IEEE arithmetic comes from NumPy float16 /
  float32 where NumPy computes it correctly rounded, and from an exact Fraction reference for fused
  operations (tests/helpers.py).
- the `sem.*` cases of the GVSoC calibration kit (fc_pulp.gvsoc.txt), with GVSoC's printed values.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from helpers import (CALIB_DIR, F16, F32, PROGRAMS, RNE, SPECIAL16, Op, check_ops, fp_fma, fp_mul,
                     np_bits16, np_bits32, np_f16, np_f32, ops_program, pulp_elf_cache, rand_fp, run_program,  # noqa: F401
                     s32, u32)

M32 = 0xFFFFFFFF
NORVC = '".option push\\n.option norvc\\n"'
POP = '".option pop\\n"'
TMP_CLOBBER = '"t0", "t1", "t2", "memory"'

EDGE = [0, 1, 2, 3, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 0x7FFF, 0x8000, 0xFFFF,
        0x10000, 0x7F, 0x80, 0xFF, 31, 32, 33, 0x12345678, 0x87654321, 0xFFFF8000, 0x00FF7F80]


def int_pairs(seed, n_rand=48, edges=EDGE[:16]):
    rng = random.Random(seed)
    pairs = [(a, b) for a in edges for b in edges]
    for _ in range(n_rand):
        pairs.append((rng.getrandbits(32), rng.getrandbits(32)))
        pairs.append((s32(rng.randint(-300, 300)) & M32, rng.getrandbits(rng.choice([3, 8, 16, 32]))))
    return pairs


def int_singles(seed, n_rand=64):
    rng = random.Random(seed)
    vals = [(v,) for v in EDGE]
    vals += [(rng.getrandbits(rng.choice([1, 4, 8, 15, 16, 17, 31, 32])) ^ (M32 if rng.random() < 0.4 else 0),)
             for _ in range(n_rand)]
    return vals


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# --------------------------------------------------------------------------------------------
# RV32I / RV32M
# --------------------------------------------------------------------------------------------
def rv32im_ops():
    P = int_pairs(1)
    S = int_singles(2)
    ops = []
    rr = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "sll": lambda a, b: a << (b & 31),
        "slt": lambda a, b: int(s32(a) < s32(b)), "sltu": lambda a, b: int(a < b), "xor": lambda a, b: a ^ b,
        "srl": lambda a, b: a >> (b & 31), "sra": lambda a, b: s32(a) >> (b & 31), "or": lambda a, b: a | b,
        "and": lambda a, b: a & b,
        "mul": lambda a, b: a * b, "mulh": lambda a, b: (s32(a) * s32(b)) >> 32,
        "mulhsu": lambda a, b: (s32(a) * b) >> 32, "mulhu": lambda a, b: (a * b) >> 32,
        "div": lambda a, b: -1 if b == 0 else (a if (a, b) == (0x80000000, M32) else trunc_div(s32(a), s32(b))),
        "divu": lambda a, b: M32 if b == 0 else a // b,
        "rem": lambda a, b: a if b == 0 else (0 if (a, b) == (0x80000000, M32)
                                              else s32(a) - trunc_div(s32(a), s32(b)) * s32(b)),
        "remu": lambda a, b: a if b == 0 else a % b,
    }
    for name, f in rr.items():
        ops.append(Op(name, f'"{name} %0, %1, %2"', f, P))
    imm_ops = {"addi": lambda a, i: a + i, "slti": lambda a, i: int(s32(a) < i), "sltiu": lambda a, i: int(a < (i & M32)),
               "xori": lambda a, i: a ^ (i & M32), "ori": lambda a, i: a | (i & M32), "andi": lambda a, i: a & (i & M32)}
    for name, f in imm_ops.items():
        for imm in (-2048, -1, 0, 1, 0x555, 2047):
            ops.append(Op(f"{name}.{imm}", f'"{name} %0, %1, {imm}"', (lambda f, imm: lambda a: f(a, imm))(f, imm), S))
    for name, f in {"slli": lambda a, s: a << s, "srli": lambda a, s: a >> s, "srai": lambda a, s: s32(a) >> s}.items():
        for sh in (0, 1, 7, 16, 31):
            ops.append(Op(f"{name}.{sh}", f'"{name} %0, %1, {sh}"', (lambda f, sh: lambda a: f(a, sh))(f, sh), S))
    for imm in (0, 1, 0x7FFFF, 0x80000, 0xFFFFF, 0x12345):
        ops.append(Op(f"lui.{imm:x}", f'"lui %0, {imm:#x}"', (lambda imm: lambda a: imm << 12)(imm), [(0,)]))
        ops.append(Op(f"auipc.{imm:x}", f'"1: auipc %0, {imm:#x}\\n la t0, 1b\\n sub %0, %0, t0"',
                      (lambda imm: lambda a: imm << 12)(imm), [(0,)], clobber='"t0"'))
    # branches: result 1 if taken
    br = {"beq": lambda a, b: a == b, "bne": lambda a, b: a != b, "blt": lambda a, b: s32(a) < s32(b),
          "bge": lambda a, b: s32(a) >= s32(b), "bltu": lambda a, b: a < b, "bgeu": lambda a, b: a >= b}
    BP = int_pairs(3, n_rand=16, edges=EDGE[:10]) + [(v, v) for v in EDGE]
    for name, f in br.items():
        ops.append(Op(name, f'"li %0, 1\\n {name} %1, %2, 1f\\n li %0, 0\\n1:"', (lambda f: lambda a, b: int(f(a, b)))(f),
                      BP))
    # jumps: the link register holds the address after the jump; jalr clears bit 0 of the target
    ops.append(Op("jal.link", NORVC + ' "jal %0, 1f\\n nop\\n1: auipc t0, 0\\n sub %0, t0, %0\\n" ' + POP,
                  lambda a: 4, [(0,)], clobber='"t0"'))
    ops.append(Op("jalr.odd_target", NORVC + ' "la t0, 1f\\n addi t0, t0, 1\\n jalr %0, 0(t0)\\n nop\\n'
                  '1: auipc t1, 0\\n sub %0, t1, %0\\n" ' + POP, lambda a: 4, [(0,)], clobber='"t0", "t1"'))
    ops.append(Op("jalr.negative_offset", NORVC + ' "la t0, 2f\\n addi t0, t0, 8\\n j 3f\\n2: li %0, 0x5a\\n j 4f\\n'
                  '3: jalr zero, -8(t0)\\n li %0, 0\\n4:\\n" ' + POP, lambda a: 0x5A, [(0,)], clobber='"t0"'))
    return ops


MEM_BYTES = bytes([0x80, 0x7F, 0xFF, 0x01, 0x34, 0x12, 0xFE, 0xCA, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                   0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x00, 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xF8])
MEM_PRELUDE = ("uint32_t th_mem[8] __attribute__((aligned(16))) = {" +
               ", ".join(f"0x{int.from_bytes(MEM_BYTES[i:i + 4], 'little'):08x}u" for i in range(0, 32, 4)) + "};\n"
               "uint32_t th_smem[4] __attribute__((aligned(16)));\n")


def mem_load(addr, size, signed):
    v = int.from_bytes(MEM_BYTES[addr:addr + size], "little")
    if signed and v >> (8 * size - 1):
        v -= 1 << (8 * size)
    return v & M32


def mem_store(offset, size, value, word):
    buf = bytearray(16)
    buf[offset:offset + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return int.from_bytes(buf[4 * word:4 * word + 4], "little")


LOADS = {"lb": (1, True), "lh": (2, True), "lw": (4, False), "lbu": (1, False), "lhu": (2, False)}
STORES = {"sb": 1, "sh": 2, "sw": 4}
STORE_VALUES = [0x8BADF00D, 0x000000FF, 0xFFFF8001]


def rv32_mem_ops():
    ops = []
    for name, (size, signed) in LOADS.items():
        # register base + offset (every alignment), and a negative immediate offset
        ops.append(Op(name, f'"la t0, th_mem\\n add t0, t0, %1\\n {name} %0, 0(t0)"',
                      (lambda size, signed: lambda o: mem_load(o, size, signed))(size, signed),
                      [(o,) for o in range(0, 12)], clobber='"t0"'))
        ops.append(Op(name + ".negimm", f'"la t0, th_mem\\n add t0, t0, %1\\n {name} %0, -5(t0)"',
                      (lambda size, signed: lambda o: mem_load(o - 5, size, signed))(size, signed),
                      [(o,) for o in range(5, 17)], clobber='"t0"'))
    for name, size in STORES.items():
        ins = [(o, v, w) for o in range(0, 8) for v in STORE_VALUES for w in (0, 1, 2)]
        ops.append(Op(name, '"la t0, th_smem\\n sw zero, 0(t0)\\n sw zero, 4(t0)\\n sw zero, 8(t0)\\n'
                      f' add t1, t0, %1\\n {name} %2, 0(t1)\\n slli t2, %3, 2\\n add t2, t0, t2\\n lw %0, 0(t2)"',
                      (lambda size: lambda o, v, w: mem_store(o, size, v, w))(size), ins, clobber=TMP_CLOBBER))
    return ops


def test_rv32im_alu_branches_jumps():
    ops = rv32im_ops()
    _, out = run_program(ops_program(ops), name="sem_rv32im")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


def test_rv32i_loads_stores_all_alignments():
    ops = rv32_mem_ops()
    _, out = run_program(ops_program(ops, prelude=MEM_PRELUDE), name="sem_rv32mem")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


# --------------------------------------------------------------------------------------------
# Zicsr
# --------------------------------------------------------------------------------------------
CSR_STEPS = [  # (asm, input or None, expected value written to the result)
    ('csrrw %0, mscratch, %1', 0x12345678, None),
    ('csrrw %0, mscratch, %1', 0xA5A5A5A5, 0x12345678),
    ('csrrs %0, mscratch, %1', 0x0000FFFF, 0xA5A5A5A5),
    ('csrr %0, mscratch', None, 0xA5A5FFFF),
    ('csrrc %0, mscratch, %1', 0xF0F0F0F0, 0xA5A5FFFF),
    ('csrr %0, mscratch', None, 0x05050F0F),
    ('csrrwi %0, mscratch, 0x15', None, 0x05050F0F),
    ('csrrsi %0, mscratch, 0x0a', None, 0x15),
    ('csrrci %0, mscratch, 0x03', None, 0x1F),
    ('csrr %0, mscratch', None, 0x1C),
    ('csrrs %0, mscratch, zero', None, 0x1C),
    ('csrrc %0, mscratch, zero', None, 0x1C),
    ('csrrsi %0, mscratch, 0', None, 0x1C),
    ('csrrs %0, mhartid, zero', None, 0x3E0),          # read-only CSR: rs1 = x0 does not write
    ('csrr %0, misa', None, 0x40000000),
    ('csrrwi %0, fcsr, 0', None, None),
    ('csrrwi %0, fflags, 0x1f', None, 0),
    ('csrr %0, fcsr', None, 0x1F),
    ('csrrwi %0, frm, 3', None, 0),
    ('csrr %0, fcsr', None, 0x7F),
    ('csrrci %0, fflags, 0x05', None, 0x1F),
    ('csrr %0, fcsr', None, 0x7A),
    ('csrrw %0, fcsr, %1', 0xFFFFFFFF, 0x7A),
    ('csrr %0, fcsr', None, 0xFF),                      # only frm (3 bits) and fflags (5 bits) exist
    ('csrr %0, frm', None, 7),
    ('csrr %0, fflags', None, 0x1F),
    ('csrrw %0, frm, %1', 0xFFFFFFF9, 7),
    ('csrr %0, fcsr', None, 0x3F),
    ('csrrs %0, fflags, %1', 0xFFFFFFE0, 0x1F),         # bits above 4 are not kept
    ('csrrwi %0, fcsr, 0', None, 0x3F),
    # FP instructions accumulate flags (NV 0x10, DZ 0x08, OF 0x04, UF 0x02, NX 0x01)
    ('fdiv.s %0, %1, zero', 0x3F800000, 0x7F800000),    # 1 / +0 = +inf
    ('csrrw %0, fflags, zero', None, 0x08),
    ('fdiv.s %0, %1, %1', 0, 0x7FC00000),               # 0 / 0
    ('csrrw %0, fflags, zero', None, 0x10),
    ('fmul.s %0, %1, %1', 0x7F7FFFFF, 0x7F800000),      # overflow
    ('csrrw %0, fflags, zero', None, 0x05),
    ('fmul.s %0, %1, %1', 0x1F800001, fp_mul(F32, 0x1F800001, 0x1F800001, RNE)[0]),  # tiny and inexact
    ('csrrw %0, fflags, zero', None, 0x03),
    ('fsqrt.s %0, %1', 0x40000000, 0x3FB504F3),         # sqrt(2): inexact
    ('fdiv.s %0, %1, zero', 0xBF800000, 0xFF800000),    # flags are sticky: NX then DZ
    ('csrr %0, fflags', None, 0x09),
    ('csrrwi %0, fflags, 0', None, 0x09),
    ('fsqrt.s %0, %1', 0xBF800000, 0x7FC00000),         # sqrt(-1): invalid
    ('csrrw %0, fflags, zero', None, 0x10),
    ('flt.s %0, %1, %1', 0x7FC00000, 0),                # quiet NaN compare: flt signals
    ('csrrw %0, fflags, zero', None, 0x10),
    ('feq.s %0, %1, %1', 0x7FC00000, 0),                # feq does not
    ('csrrw %0, fflags, zero', None, 0x00),
    # dynamic rounding: 1 + 1.5 ulp
    ('csrrwi %0, frm, 1', None, 0),
    ('fadd.s %0, %1, %2', (0x3F800000, 0x34400000), 0x3F800001),
    ('csrrwi %0, frm, 3', None, 1),
    ('fadd.s %0, %1, %2', (0x3F800000, 0x34400000), 0x3F800002),
    ('csrrwi %0, frm, 2', None, 3),
    ('fadd.s %0, %1, %2', (0xBF800000, 0xB4400000), 0xBF800002),
    ('fadd.s %0, %1, %2, rtz', (0xBF800000, 0xB4400000), 0xBF800001),  # a static rm wins
    ('csrrwi %0, frm, 0', None, 2),
    ('fadd.s %0, %1, %2', (0x3F800000, 0x34400000), 0x3F800002),
    ('csrrwi %0, fcsr, 0', None, 0x01),
]


def test_zicsr_and_fp_csrs():
    body = []
    expected = []
    for k, (asm, inp, exp) in enumerate(CSR_STEPS):
        if inp is None:
            body.append(f'  __asm__ volatile("{asm}" : "=r"(r));')
        elif isinstance(inp, tuple):
            body.append(f'  __asm__ volatile("{asm}" : "=r"(r) : "r"(0x{inp[0]:x}u), "r"(0x{inp[1]:x}u));')
        else:
            body.append(f'  __asm__ volatile("{asm}" : "=r"(r) : "r"(0x{inp:x}u));')
        body.append(f"  v[{k}] = r;")
        expected.append(exp)
    src = ('#include "tharness.h"\nint main(void) {\n  uint32_t r, v[%d];\n%s\n  th_arr("csr", v, %d);\n  return 0;\n}\n'
           % (len(CSR_STEPS), "\n".join(body), len(CSR_STEPS)))
    _, out = run_program(src, name="sem_zicsr")
    errs = [f"step {k} `{CSR_STEPS[k][0]}`: got {g:08x}, expected {e:08x}"
            for k, (g, e) in enumerate(zip(out["csr"], expected)) if e is not None and g != e]
    assert not errs, "\n".join(errs)


def test_minstret_reads_zero_like_gvsoc():
    """GVSoC's pulp-open leaves minstret unimplemented: minstret, instret and their high halves read 0."""
    src = ('#include "tharness.h"\nint main(void) {\n'
           '  for (volatile int i = 0; i < 10; i++) ;\n'
           '  uint32_t v[2] = {TH_CSRR(0xB02), TH_CSRR(0xC02)};\n  th_arr("instret", v, 2);\n  return 0;\n}\n')
    _, out = run_program(src, name="sem_minstret")
    assert out["instret"] == [0, 0]


# --------------------------------------------------------------------------------------------
# RV32C: every compressed instruction (explicit mnemonics), and a -Os C program
# --------------------------------------------------------------------------------------------
RVC_FUNCS = {  # name: (asm body, args -> expected a0); functions take a0, a1 and return a0
    "c_li": ("c.li a0, -7", lambda a, b: -7),
    "c_addi": ("c.addi a0, -3", lambda a, b: a - 3),
    "c_addi_31": ("c.addi a0, 31", lambda a, b: a + 31),
    "c_lui": ("c.lui a0, 0xfffe1", lambda a, b: 0xFFFE1000),
    "c_lui_pos": ("c.lui a0, 0x1f", lambda a, b: 0x1F000),
    "c_mv": ("c.mv a0, a1", lambda a, b: b),
    "c_add": ("c.add a0, a1", lambda a, b: a + b),
    "c_sub": ("c.sub a0, a1", lambda a, b: a - b),
    "c_xor": ("c.xor a0, a1", lambda a, b: a ^ b),
    "c_or": ("c.or a0, a1", lambda a, b: a | b),
    "c_and": ("c.and a0, a1", lambda a, b: a & b),
    "c_andi": ("c.andi a0, -6", lambda a, b: a & 0xFFFFFFFA),
    "c_slli": ("c.slli a0, 13", lambda a, b: a << 13),
    "c_srli": ("c.srli a0, 7", lambda a, b: a >> 7),
    "c_srai": ("c.srai a0, 7", lambda a, b: s32(a) >> 7),
    "c_nop": ("c.nop", lambda a, b: a),
    "c_lw_sw": ("la a2, th_cbuf\n c.sw a0, 4(a2)\n c.sw a1, 8(a2)\n c.lw a0, 8(a2)\n c.lw a3, 4(a2)\n c.xor a0, a3",
                lambda a, b: a ^ b),
    "c_lwsp_swsp": ("c.addi16sp sp, -32\n c.swsp a1, 12(sp)\n c.swsp a0, 28(sp)\n c.lwsp a0, 12(sp)\n"
                    " c.lwsp a3, 28(sp)\n c.addi16sp sp, 32\n c.sub a0, a3", lambda a, b: b - a),
    "c_addi4spn": ("c.addi4spn a0, sp, 20\n sub a0, a0, sp", lambda a, b: 20),
    "c_addi16sp": ("mv a2, sp\n c.addi16sp sp, -496\n sub a0, a2, sp\n c.addi16sp sp, 496", lambda a, b: 496),
    "c_j": ("c.li a0, 1\n c.j 1f\n c.li a0, 2\n1:", lambda a, b: 1),
    "c_jal": ("mv t0, ra\n c.li a0, 0\n c.jal 1f\n c.addi a0, 1\n mv ra, t0\n ret\n1: c.addi a0, 2\n c.jr ra",
              lambda a, b: 3),
    "c_jal_link": ("mv t0, ra\n c.jal 2f\n2: auipc a0, 0\n sub a0, a0, ra\n mv ra, t0", lambda a, b: 0),
    "c_jr": ("la t1, 1f\n c.li a0, 1\n c.jr t1\n c.li a0, 2\n1:", lambda a, b: 1),
    "c_jalr": ("mv t0, ra\n la t1, 1f\n c.li a0, 0\n c.jalr t1\n c.addi a0, 4\n mv ra, t0\n ret\n1: c.addi a0, 3\n"
               " c.jr ra", lambda a, b: 7),
    "c_beqz": ("c.beqz a0, 1f\n c.li a0, 0\n ret\n1: c.li a0, 1", lambda a, b: int(a == 0)),
    "c_bnez": ("c.bnez a0, 1f\n c.li a0, 0\n ret\n1: c.li a0, 1", lambda a, b: int(a != 0)),
}
RVC_INPUTS = [(0, 0), (1, 2), (0xFFFFFFFF, 5), (0x80000000, 0x7FFFFFFF), (0x12345678, 0x9ABCDEF0), (0x7F, 0xFFFF8000)]


def _c_string(asm: str) -> str:
    return "".join('"' + ln.strip().replace('"', '\\"') + '\\n"\n' for ln in asm.split("\n"))


def test_rv32c_every_compressed_instruction():
    parts = ['#include "tharness.h"', "uint32_t th_cbuf[4];",
             '__asm__(".pushsection .text.rvc_tests,\\"ax\\",@progbits\\n.option push\\n.option rvc\\n"']
    for name, (asm, _) in RVC_FUNCS.items():
        parts.append(f'".balign 4\\n.global {name}\\n{name}:\\n"\n{_c_string(asm)}"ret\\n"')
    parts.append('".option pop\\n.popsection\\n");')
    for name in RVC_FUNCS:
        parts.append(f"extern uint32_t {name}(uint32_t, uint32_t);")
    parts.append("int main(void) {\n  uint32_t r[%d];" % len(RVC_INPUTS))
    for name in RVC_FUNCS:
        for k, (a, b) in enumerate(RVC_INPUTS):
            parts.append(f"  r[{k}] = {name}(0x{a:x}u, 0x{b:x}u);")
        parts.append(f'  th_arr("{name}", r, {len(RVC_INPUTS)});')
    parts.append("  return 0;\n}\n")
    res, out = run_program("\n".join(parts), name="sem_rvc")
    errs = []
    for name, (_, f) in RVC_FUNCS.items():
        exp = [f(a, b) & M32 for a, b in RVC_INPUTS]
        if out[name] != exp:
            errs.append(f"{name}: got {[hex(x) for x in out[name]]} expected {[hex(x) for x in exp]}")
    assert not errs, "\n".join(errs)
    assert res["cores"][0]["compressed"] > 0


def _crc32(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _lcg(seed, n):
    out = []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) & M32
        out.append(seed)
    return out


def test_rv32c_os_program():
    """tests/programs/compressed_algos.c built with -Os: mostly compressed code, known answers."""
    res, out = run_program((PROGRAMS / "compressed_algos.c").read_text(), opt="s", name="sem_rvc_os")
    vals = _lcg(1, 64)
    data = bytes((v >> 16) & 0xFF for v in _lcg(7, 200))
    srt = sorted(s32(v) for v in vals)
    hist = [0] * 8
    for b in data:
        hist[b & 7] += 1
    fib = [0, 1]
    for _ in range(45):
        fib.append((fib[-1] + fib[-2]) & M32)
    sw = []
    for v in vals[:16]:
        k = v % 7
        sw.append({0: v + 1, 1: v ^ 0x55, 2: v >> 3, 3: (v * 3), 4: s32(v) >> 5, 5: ~v, 6: v & 0xFF}[k] & M32)
    q = [(s32(v) // 7 if s32(v) >= 0 else -((-s32(v)) // 7)) & M32 for v in vals[:16]]
    expected = {"crc": [_crc32(data)], "sorted": [u32(v) for v in srt[:8] + srt[-8:]], "hist": hist,
                "fib": [fib[45]], "switch": sw, "div7": q}
    for k, v in expected.items():
        assert out[k] == v, f"{k}: got {[hex(x) for x in out[k]]}, expected {[hex(x) for x in v]}"
    core = res["cores"][0]
    assert core["compressed"] > 0.3 * core["instructions"], "an -Os build should run mostly compressed code"


# --------------------------------------------------------------------------------------------
# Xpulp (isa/xpulp.toml)
# --------------------------------------------------------------------------------------------
def clrsb(a):
    s = s32(a)
    if s < 0:
        s = ~s
    return 31 - s.bit_length()


def lanes16(w):
    return [w & 0xFFFF, (w >> 16) & 0xFFFF]


def lanes8(w):
    return [(w >> (8 * i)) & 0xFF for i in range(4)]


def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def pack16(l):
    return (l[0] & 0xFFFF) | ((l[1] & 0xFFFF) << 16)


def pack8(l):
    return sum((x & 0xFF) << (8 * i) for i, x in enumerate(l))


def clip(v, lo, hi):  # GVSoC lib_CLIP: the low bound is checked first
    return lo if v < lo else hi if v > hi else v


def clipu(v, hi):  # GVSoC lib_CLIPU
    return hi if v > hi else 0 if v <= 0 else v


def ror(a, b):
    s = b & 31
    return ((a >> s) | (a << (32 - s))) & M32 if s else a


XPULP_RR = {  # id: reference (GVSoC pulp_v2.hpp / isa_lib/int.h)
    "p_avgu": lambda a, b: ((a + b) & M32) >> 1,        # lib_AVGU adds in 32-bit unsigned: the carry is lost
    "p_slet": lambda a, b: int(s32(a) <= s32(b)),
    "p_sletu": lambda a, b: int(a <= b),
    "p_min": lambda a, b: a if s32(a) < s32(b) else b,
    "p_minu": lambda a, b: min(a, b),
    "p_max": lambda a, b: a if s32(a) > s32(b) else b,
    "p_maxu": lambda a, b: max(a, b),
    "p_ror": ror,
    "p_clip": lambda a, b: clip(s32(a), -s32(b) - 1, s32(b)),
    "p_clipu": lambda a, b: clipu(s32(a), s32(b)),
    "pv_add_h": lambda a, b: pack16([x + y for x, y in zip(lanes16(a), lanes16(b))]),
    "pv_add_b": lambda a, b: pack8([x + y for x, y in zip(lanes8(a), lanes8(b))]),
    "pv_sub_h": lambda a, b: pack16([x - y for x, y in zip(lanes16(a), lanes16(b))]),
    "pv_sub_b": lambda a, b: pack8([x - y for x, y in zip(lanes8(a), lanes8(b))]),
    "pv_dotup_h": lambda a, b: sum(x * y for x, y in zip(lanes16(a), lanes16(b))),
    "pv_dotsp_h": lambda a, b: sum(sx(x, 16) * sx(y, 16) for x, y in zip(lanes16(a), lanes16(b))),
    "pv_dotsp_b": lambda a, b: sum(sx(x, 8) * sx(y, 8) for x, y in zip(lanes8(a), lanes8(b))),
    "pv_pack_h": lambda a, b: pack16([b & 0xFFFF, a & 0xFFFF]),
}


def shuffle2_h(c, a, b):
    """pv.shuffle2.h: each half of the result is a half of rd (c) or rs1 (a), as the half of rs2 (b) says."""
    return pack16([lanes16(a if sel & 2 else c)[sel & 1] for sel in lanes16(b)])


XPULP_ACC = {
    "p_mac": lambda c, a, b: c + a * b,
    "p_msu": lambda c, a, b: c - a * b,
    "pv_sdotup_h": lambda c, a, b: c + XPULP_RR["pv_dotup_h"](a, b),
    "pv_sdotsp_h": lambda c, a, b: c + XPULP_RR["pv_dotsp_h"](a, b),
    "pv_sdotsp_b": lambda c, a, b: c + XPULP_RR["pv_dotsp_b"](a, b),
    "pv_shuffle2_h": shuffle2_h,
}
XPULP_R = {
    "p_abs": lambda a: a if s32(a) >= 0 else -s32(a),
    "p_ff1": lambda a: (a & -a).bit_length() - 1 if a else 32,
    "p_fl1": lambda a: a.bit_length() - 1 if a else 32,
    "p_clb": lambda a: 0 if a == 0 else clrsb(a),
    "p_cnt": lambda a: bin(a).count("1"),
    "p_exths": lambda a: sx(a, 16),
    "p_exthz": lambda a: a & 0xFFFF,
    "p_extbs": lambda a: sx(a, 8),
    "p_extbz": lambda a: a & 0xFF,
}


def xpulp_alu_ops():
    ops = []
    P = int_pairs(11)
    rng = random.Random(12)
    for i, f in XPULP_RR.items():
        ins = P
        if i in ("p_clip", "p_clipu"):  # bounds: small positive, negative, extremes
            ins = P + [(rng.getrandbits(32), rng.choice([0, 1, 127, 255, 0x7FFF, -1 & M32, -128 & M32]))
                       for _ in range(40)]
        ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", f, ins, covers=[i]))
    for i, f in XPULP_ACC.items():
        ins = [(rng.getrandbits(32), a, b) for a, b in P]
        if i == "pv_shuffle2_h":   # every choice of both halves, with the other bits of each half set or clear
            ins += [(rng.getrandbits(32), rng.getrandbits(32), (hi << 16 | lo) | (rng.getrandbits(14) << 2) * k)
                    for hi in range(4) for lo in range(4) for k in (0, 1)]
        ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", f, ins, acc=True, covers=[i]))
    for i, f in XPULP_R.items():
        ops.append(Op(i, f"PULP_{i.upper()}(%0, %1)", f, int_singles(13), covers=[i]))
    for imm in (0, 1, 2, 5, 8, 12, 16, 31):
        ops.append(Op(f"p_clipi.{imm}", f"PULP_P_CLIPI(%0, %1, {imm})",
                      (lambda imm: lambda a: clip(s32(a), -(1 << max(imm - 1, 0)), (1 << max(imm - 1, 0)) - 1))(imm),
                      int_singles(14) + [(v & M32,) for v in range(-200, 200, 9)], covers=["p_clipi"]))
        ops.append(Op(f"p_clipui.{imm}", f"PULP_P_CLIPUI(%0, %1, {imm})",
                      (lambda imm: lambda a: clipu(s32(a), (1 << max(imm - 1, 0)) - 1))(imm),
                      int_singles(15) + [(v & M32,) for v in range(-200, 200, 9)], covers=["p_clipui"]))
    for i, eq in (("p_beqimm", True), ("p_bneimm", False)):
        for field in (0, 1, 5, 15, 16, 17, 30, 31):
            simm = field - 32 if field >= 16 else field
            ins = [((simm + d) & M32,) for d in (-1, 0, 1)] + [((simm + 32) & M32,), (0x80000000,), ((simm << 8) & M32,)]
            ops.append(Op(f"{i}.{simm}", f'"li %0, 1\\n" PULP_{i.upper()}(%1, {field}, 1f) "\\n li %0, 0\\n1:"',
                          (lambda simm, eq: lambda a: int((s32(a) == simm) == eq))(simm, eq), ins, covers=[i]))
    return ops


# ---- PULP loads and stores (post-increment immediate / register, register offset) and p.elw
PL = {"lb": (1, True), "lh": (2, True), "lw": (4, False), "lbu": (1, False), "lhu": (2, False)}


def _pload(w, form, what):
    size, signed = PL[w]
    m = f"PULP_P_{w.upper()}_{form.upper()}"
    head = '"la t0, th_mem\\n add t0, t0, %1\\n mv t1, t0\\n"'
    tail = '"\\n sub %0, t0, t1\\n"' if what == "delta" else '"\\n"'
    if form == "postinc_imm":
        def mk(inc):
            return Op(f"p.{w}.{form}.{inc}.{what}", f"{head} {m}(%0, t0, {inc}) {tail}",
                      (lambda o: inc) if what == "delta" else (lambda o: mem_load(o, size, signed)),
                      [(o,) for o in range(0, 8)] + [(16 + size,)], covers=[f"p_{w}_{form}"], clobber='"t0", "t1"')
        return [mk(inc) for inc in (-8, size, 7)]
    # register increment / register offset: %2
    if form == "postinc_reg":
        ref = (lambda o, r: r) if what == "delta" else (lambda o, r: mem_load(o, size, signed))
    else:
        ref = (lambda o, r: 0) if what == "delta" else (lambda o, r: mem_load(o + s32(r), size, signed))
    ins = [(o, r & M32) for o in (0, 1, 2, 3, 8, 13) for r in (0, 1, 3, 4, 8, -1, -2)
           if 0 <= o + (s32(r & M32) if form == "regoff" else 0) <= 28]
    return [Op(f"p.{w}.{form}.{what}", f"{head} {m}(%0, t0, %2) {tail}", ref, ins, covers=[f"p_{w}_{form}"],
               clobber='"t0", "t1"')]


def _pstore(w, form):
    size = STORES[w]
    m = f"PULP_P_{w.upper()}_{form.upper()}"
    clear = '"la t0, th_smem\\n sw zero, 0(t0)\\n sw zero, 4(t0)\\n sw zero, 8(t0)\\n sw zero, 12(t0)\\n' \
            ' add t1, t0, %1\\n mv t2, t1\\n"'
    # result: word %3 of th_smem after the store, plus 0x100 * (pointer delta & 0xff) in a separate op
    read = '"\\n slli t2, %3, 2\\n add t2, t0, t2\\n lw %0, 0(t2)\\n"'
    delta = '"\\n sub %0, t1, t2\\n"'
    ops = []
    if form == "postinc_imm":
        for inc in (-4, size, 9):
            ins = [(o, v, k) for o in (0, 1, 2, 3, 6) for v in STORE_VALUES[:2] for k in (0, 1, 2)]
            ops.append(Op(f"p.{w}.{form}.{inc}", f"{clear} {m}(%2, t1, {inc}) {read}",
                          lambda o, v, k: mem_store(o, size, v, k), ins, covers=[f"p_{w}_{form}"], clobber=TMP_CLOBBER))
            ops.append(Op(f"p.{w}.{form}.{inc}.delta", f"{clear} {m}(%2, t1, {inc}) {delta}",
                          (lambda inc: lambda o, v, k: inc)(inc), [(4, 0x55, 0)], covers=[f"p_{w}_{form}"],
                          clobber=TMP_CLOBBER))
    else:
        # %4 = increment (postinc_reg) or offset (regoff)
        ins = [(o, v, k, r) for o in (0, 1, 3, 4) for v in STORE_VALUES[:2] for k in (0, 1, 2) for r in (0, 2, 5)]
        if form == "postinc_reg":
            ref, dref = (lambda o, v, k, r: mem_store(o, size, v, k)), (lambda o, v, k, r: r)
        else:
            ref, dref = (lambda o, v, k, r: mem_store(o + r, size, v, k)), (lambda o, v, k, r: 0)
        ops.append(Op(f"p.{w}.{form}", f"{clear} {m}(%2, t1, %4) {read}", ref, ins, covers=[f"p_{w}_{form}"],
                      clobber=TMP_CLOBBER))
        ops.append(Op(f"p.{w}.{form}.delta", f"{clear} {m}(%2, t1, %4) {delta}", dref,
                      [(4, 0x55, 0, r & M32) for r in (0, 3, 4, -4)], covers=[f"p_{w}_{form}"], clobber=TMP_CLOBBER))
    return ops


def xpulp_mem_ops():
    ops = []
    for w in PL:
        for form in ("postinc_imm", "postinc_reg", "regoff"):
            ops += _pload(w, form, "value") + _pload(w, form, "delta")
    for w in STORES:
        for form in ("postinc_imm", "postinc_reg", "regoff"):
            ops += _pstore(w, form)
    ops.append(Op("p.elw", '"la t0, th_mem\\n add t0, t0, %1\\n" PULP_P_ELW(%0, t0, 4) "\\n"',
                  lambda o: mem_load(o + 4, 4, False), [(o,) for o in (0, 4, 8, 12, 16)], covers=["p_elw"],
                  clobber='"t0"'))
    return ops


# ---- hardware loops
def _hwl(asm):
    return NORVC + " " + asm + " " + POP


def xpulp_hwloop_ops():
    L = lambda m: f"PULP_{m.upper()}"  # noqa: E731
    cnt = [(c,) for c in (0, 1, 2, 3, 7, 100)]
    ops = [
        # lp.setup: count in a register; the body (2 insns) runs max(count, 1) times (count 0 = loop off)
        Op("lp.setup", _hwl(f'"li %0, 0\\n" {L("lp_setup")}(0, %1, 4) "\\n addi %0, %0, 1\\n addi t0, t0, 1\\n"'),
           lambda c: max(c, 1), cnt, covers=["lp_setup"], clobber='"t0"'),
        Op("lp.setup.loop1", _hwl(f'"li %0, 0\\n" {L("lp_setup")}(1, %1, 4) "\\n addi %0, %0, 1\\n addi t0, t0, 1\\n"'),
           lambda c: max(c, 1), cnt, covers=["lp_setup"], clobber='"t0"'),
        Op("lp.setupi", _hwl(f'"li %0, 0\\n" {L("lp_setupi")}(0, 25, 6) "\\n addi t0, t0, 1\\n addi %0, %0, 2\\n'
                             f' addi %0, %0, 1\\n"'), lambda c: 75, [(0,)], covers=["lp_setupi"], clobber='"t0"'),
        Op("lp.setupi.one", _hwl(f'"li %0, 0\\n" {L("lp_setupi")}(1, 1, 2) "\\n addi %0, %0, 1\\n"'),
           lambda c: 1, [(0,)], covers=["lp_setupi"]),
        # explicit start / end / count (immediate and register)
        Op("lp.starti.endi.counti", _hwl(f'"li %0, 0\\n" {L("lp_starti")}(0, 6) "\\n" {L("lp_endi")}(0, 6) "\\n"'
                                         f' {L("lp_counti")}(0, 13) "\\n addi %0, %0, 3\\n addi %0, %0, 1\\n"'),
           lambda c: 52, [(0,)], covers=["lp_starti", "lp_endi", "lp_counti"]),
        Op("lp.starti.endi.count", _hwl(f'"li %0, 0\\n" {L("lp_starti")}(1, 6) "\\n" {L("lp_endi")}(1, 6) "\\n"'
                                        f' {L("lp_count")}(1, %1) "\\n addi %0, %0, 3\\n addi %0, %0, 1\\n"'),
           lambda c: 4 * max(c, 1), cnt, covers=["lp_starti", "lp_endi", "lp_count"]),
        # nesting: loop 1 outer (count %1), loop 0 inner (count %2); inner body adds 1, outer adds 0x10000
        Op("lp.nested", _hwl(f'"li %0, 0\\n li t0, 0x10000\\n" {L("lp_setup")}(1, %1, 8) "\\n"'
                             f' {L("lp_setup")}(0, %2, 4) "\\n addi %0, %0, 1\\n addi t1, t1, 1\\n add %0, %0, t0\\n"'),
           lambda o, i: o * (i + 0x10000), [(o, i) for o in (1, 2, 5) for i in (1, 3, 8)],
           covers=["lp_setup"], clobber='"t0", "t1"'),
        # both loops ending on the same instruction (what compilers emit for perfect nests): when loop 0
        # runs out, loop 1 is checked at once (GVSoC hwloop_check_exec)
        Op("lp.nested.shared_end", _hwl(f'"li %0, 0\\n" {L("lp_setup")}(1, %1, 6) "\\n" {L("lp_setup")}(0, %2, 4)'
                                        f' "\\n addi t1, t1, 1\\n addi %0, %0, 1\\n"'),
           lambda o, i: o * i, [(o, i) for o in (1, 2, 7) for i in (1, 3, 5)], covers=["lp_setup"], clobber='"t1"'),
        # a body of compressed instructions: the end offset counts halfwords
        Op("lp.setupi.rvc_body", f'".option push\\n.option rvc\\n li %0, 0\\n" {L("lp_setupi")}(0, 5, 3)'
                                 f' "\\n c.addi %0, 1\\n c.addi %0, 2\\n.option pop\\n"', lambda c: 15, [(0,)],
           covers=["lp_setupi"]),
        # loop registers are CSRs: start 0x7C0/0x7C4, end 0x7C1/0x7C5, count 0x7C2/0x7C6
        Op("lp.csr.start1", _hwl(f'"1:" {L("lp_starti")}(1, 0x40) "\\n csrr %0, 0x7C4\\n la t0, 1b\\n sub %0, %0, t0\\n"'),
           lambda c: 0x80, [(0,)], covers=["lp_starti"], clobber='"t0"'),
        Op("lp.csr.end1", _hwl(f'"1:" {L("lp_endi")}(1, 0x41) "\\n csrr %0, 0x7C5\\n la t0, 1b\\n sub %0, %0, t0\\n"'),
           lambda c: 0x82, [(0,)], covers=["lp_endi"], clobber='"t0"'),
        Op("lp.csr.count1", _hwl(f'{L("lp_endi")}(1, 0x7ff) "\\n" {L("lp_counti")}(1, 0x123) "\\n csrr %0, 0x7C6\\n"'
                                 f' {L("lp_counti")}(1, 0) "\\n"'),
           lambda c: 0x123, [(0,)], covers=["lp_counti"]),
        Op("lp.csr.count0_reg", _hwl(f'{L("lp_endi")}(0, 0x7ff) "\\n" {L("lp_count")}(0, %1) "\\n csrr %0, 0x7C2\\n"'
                                     f' {L("lp_counti")}(0, 0) "\\n"'),
           lambda c: c, [(5,), (0xFFFF,), (0x12345678,)], covers=["lp_count"]),
        Op("lp.csr.setupi.start", _hwl(f'"1:" {L("lp_setupi")}(0, 3, 4) "\\n nop\\n nop\\n csrr %0, 0x7C0\\n'
                                       f' la t0, 1b\\n sub %0, %0, t0\\n"'), lambda c: 4, [(0,)], covers=["lp_setupi"],
           clobber='"t0"'),
        Op("lp.csr.setupi.end", _hwl(f'"1:" {L("lp_setupi")}(0, 3, 4) "\\n nop\\n nop\\n csrr %0, 0x7C1\\n'
                                     f' la t0, 1b\\n sub %0, %0, t0\\n"'), lambda c: 8, [(0,)], covers=["lp_setupi"],
           clobber='"t0"'),
    ]
    return ops


def test_every_pulp_instruction_has_a_semantic_check():
    from harness.isa import model

    isa = model.load()
    want = {i.id for i in isa.insns if i.ext in ("xpulp", "xfvec")}
    covered = {c for op in xpulp_alu_ops() + xpulp_mem_ops() + xpulp_hwloop_ops() + xfvec_ops() for c in op.covers}
    assert want - covered == set(), f"PULP instructions without a semantic check: {sorted(want - covered)}"


def test_xpulp_alu_mac_simd_branch():
    ops = xpulp_alu_ops()
    _, out = run_program(ops_program(ops), name="sem_xpulp_alu")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


def test_xpulp_c_functions_from_header():
    """The pulp_<id>() C functions of pulp_isa.h give the same results as the instructions."""
    rng = random.Random(21)
    lines = ['#include "tharness.h"', "int main(void) {", "  uint32_t r[3];"]
    exp = {}
    for i, f in list(XPULP_RR.items())[:8] + list(XPULP_ACC.items())[:2] + list(XPULP_R.items())[:4]:
        args = [rng.getrandbits(32) for _ in range(3)]
        nargs = 3 if i in XPULP_ACC else (2 if i in XPULP_RR else 1)
        call = f"pulp_{i}(" + ", ".join(f"0x{a:x}u" for a in args[:nargs]) + ")"
        lines.append(f"  r[0] = {call};")
        lines.append(f'  th_arr("{i}", r, 1);')
        exp[i] = [f(*args[:nargs]) & M32]
    lines.append("  return 0;\n}")
    _, out = run_program("\n".join(lines), name="sem_xpulp_cfuncs")
    for i, v in exp.items():
        assert out[i] == v, i


def test_xpulp_loads_stores_elw():
    ops = xpulp_mem_ops()
    _, out = run_program(ops_program(ops, prelude=MEM_PRELUDE), name="sem_xpulp_mem")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


def test_xpulp_hardware_loops():
    ops = xpulp_hwloop_ops()
    _, out = run_program(ops_program(ops), name="sem_xpulp_hwloop")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


# --------------------------------------------------------------------------------------------
# Xfvec / Xfaux (isa/xfvec.toml): 2 x binary16 per register, GVSoC semantics
# --------------------------------------------------------------------------------------------
def _h(bits):
    return np_f16([bits & 0xFFFF])[0]


def _hb(x) -> int:
    return np_bits16([x])[0]


def _sqrt16(x):
    with np.errstate(all="ignore"):
        return _hb(np.sqrt(_h(x)))


def vlane(fn, rep=False):
    """Lane-wise binary op; .r variants use lane 0 of rs2 for both lanes."""
    def f(a, b):
        bl = lanes16(b)
        if rep:
            bl = [bl[0], bl[0]]
        return pack16([fn(x, y) for x, y in zip(lanes16(a), bl)])
    return f


def np2(op):
    def f(x, y):
        with np.errstate(all="ignore"):
            return _hb(op(_h(x), _h(y)))
    return f


def fminmax(want_max):
    def f(x, y):
        nx, ny = F16.is_nan(x), F16.is_nan(y)
        if nx and ny:
            return F16.cnan
        if nx:
            return y
        if ny:
            return x
        vx, vy = F16.value(x), F16.value(y)
        return (x if vx >= vy else y) if want_max else (x if vx <= vy else y)
    return f


def fcmp(op):
    """GVSoC lib_flexfloat_<op>: any NaN operand gives 0 (also for ne)."""
    def f(x, y):
        if F16.is_nan(x) or F16.is_nan(y):
            return 0
        vx, vy = F16.value(x), F16.value(y)
        return int({"eq": vx == vy, "ne": vx != vy, "lt": vx < vy, "le": vx <= vy, "gt": vx > vy, "ge": vx >= vy}[op])
    return f


def vcmp(op, rep=False):
    """GVSoC VF_CMP: the flag of lane i is bit i of rd."""
    c = fcmp(op)

    def f(a, b):
        bl = lanes16(b)
        if rep:
            bl = [bl[0], bl[0]]
        return sum(c(x, y) << i for i, (x, y) in enumerate(zip(lanes16(a), bl)))
    return f


def vclass_lane(x):
    """GVSoC lib_flexfloat_vclass: one byte per lane: sign, !sign, qNaN, sNaN, zero, subnormal, normal, inf."""
    s = x >> 15
    c = (s << 7) | ((1 - s) << 6)
    e, m = (x >> 10) & 0x1F, x & 0x3FF
    if e == 0x1F:
        c |= 1 if m == 0 else (1 << 5 if m & 0x200 else 1 << 4)
    elif e == 0:
        c |= 1 << 3 if m == 0 else 1 << 2
    else:
        c |= 1 << 1
    return c


def cvt_x_h(x, signed):
    """GVSoC lib_flexfloat_cvt_x(u)_ff_round with RNE, saturating to 16 bits."""
    if F16.is_nan(x):
        return 0x7FFF if signed else 0xFFFF
    if F16.is_inf(x):
        return (0x8000 if x & 0x8000 else 0x7FFF) if signed else (0 if x & 0x8000 else 0xFFFF)
    v = float(_h(x))
    if not signed and v < 0:
        return 0
    r = int(np.rint(v))
    lo, hi = (-32768, 32767) if signed else (0, 65535)
    return min(max(r, lo), hi) & 0xFFFF


def dotpex(a, b, acc, rep=False, neg=False):
    al, bl = lanes16(a), lanes16(b)
    if rep:
        bl = [bl[0], bl[0]]
    with np.errstate(all="ignore"):
        p = [np.float32(_h(x)) * np.float32(_h(y)) for x, y in zip(al, bl)]  # exact in binary32
        s = np.float32(p[1] + p[0])
        c = np_f32([acc])[0]
        r = np.float32(c - s) if neg else np.float32(c + s)
    return np_bits32([r])[0]


def vf_avg(x, y):
    """GVSoC lib_flexfloat_avg: (a + b) rounded to binary16, then / 2 rounded again."""
    with np.errstate(all="ignore"):
        return _hb(np.float16(np.float16(_h(x) + _h(y)) / np.float16(2)))


def fp16_words(seed, n, pairs=True, no_zero_pairs=False):
    rng = random.Random(seed)
    out = []
    for k in range(n):
        if k < len(SPECIAL16) and pairs:
            a0, b0 = SPECIAL16[k], SPECIAL16[(k * 7 + 3) % len(SPECIAL16)]
        else:
            a0, b0 = rand_fp(rng, F16, SPECIAL16), rand_fp(rng, F16, SPECIAL16)
        a1, b1 = rand_fp(rng, F16, SPECIAL16), rand_fp(rng, F16, SPECIAL16)
        if no_zero_pairs:
            if F16.is_zero(a0) and F16.is_zero(b0):
                b0 = 0x3C00
            if F16.is_zero(a1) and F16.is_zero(b1):
                b1 = 0x3C00
        out.append((a0 | a1 << 16, b0 | b1 << 16))
    return out


VF_ARITH = {"vfadd": np.add, "vfsub": np.subtract, "vfmul": np.multiply, "vfdiv": np.divide}
VF_CMPS = ["eq", "ne", "lt", "ge", "le", "gt"]


def xfvec_ops(n=96):
    ops = []
    W = fp16_words(31, n)
    Wnz = fp16_words(32, n, no_zero_pairs=True)
    rng = random.Random(33)
    for name, op in VF_ARITH.items():
        for rep in (False, True):
            i = f"{name}_{'r_' if rep else ''}h"
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", vlane(np2(op), rep), W, covers=[i]))
    for name, mx in (("vfmin", False), ("vfmax", True)):
        for rep in (False, True):
            i = f"{name}_{'r_' if rep else ''}h"
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", vlane(fminmax(mx), rep), Wnz, covers=[i]))
    ops.append(Op("vfsqrt_h", "PULP_VFSQRT_H(%0, %1)",
                  lambda a: pack16([_sqrt16(x) for x in lanes16(a)]),
                  [(a,) for a, _ in W], covers=["vfsqrt_h"]))
    for name, negc in (("vfmac", False), ("vfmre", True)):
        for rep in (False, True):
            i = f"{name}_{'r_' if rep else ''}h"

            def ref(c, a, b, rep=rep, negc=negc):
                bl = lanes16(b)
                if rep:
                    bl = [bl[0], bl[0]]
                return pack16([fp_fma(F16, x, y, z, RNE, neg_c=negc)[0] for x, y, z in zip(lanes16(a), bl, lanes16(c))])
            ins = [(rand_fp(rng, F16, SPECIAL16) | rand_fp(rng, F16, SPECIAL16) << 16, a, b) for a, b in W]
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", ref, ins, acc=True, covers=[i]))
    for name, bit in (("vfsgnj", None), ("vfsgnjn", None), ("vfsgnjx", None)):
        for rep in (False, True):
            i = f"{name}_{'r_' if rep else ''}h"
            fn = {"vfsgnj": lambda x, y: (x & 0x7FFF) | (y & 0x8000),
                  "vfsgnjn": lambda x, y: (x & 0x7FFF) | (~y & 0x8000),
                  "vfsgnjx": lambda x, y: x ^ (y & 0x8000)}[name]
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", vlane(fn, rep), W, covers=[i]))
    for c in VF_CMPS:
        for rep in (False, True):
            i = f"vf{c}_{'r_' if rep else ''}h"
            ins = W + [(a, a) for a, _ in W[:24]] + [(0x80003C00, 0x00003C00), (0x3C000000, 0xBC008000)]
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", vcmp(c, rep), ins, covers=[i]))
    ops.append(Op("vfmv_x_h", "PULP_VFMV_X_H(%0, %1)", lambda a: a, [(a,) for a, _ in W[:32]], covers=["vfmv_x_h"]))
    ops.append(Op("vfmv_h_x", "PULP_VFMV_H_X(%0, %1)", lambda a: a, [(a,) for a, _ in W[:32]], covers=["vfmv_h_x"]))
    ops.append(Op("vfclass_h", "PULP_VFCLASS_H(%0, %1)",
                  lambda a: vclass_lane(a & 0xFFFF) | vclass_lane(a >> 16) << 8,
                  [(a,) for a, _ in W] + [(s | SPECIAL16[(k + 5) % 32] << 16,) for k, s in enumerate(SPECIAL16)],
                  covers=["vfclass_h"]))
    cvt_in = [(a,) for a, _ in W] + [(f16_pair,) for f16_pair in
                                     (0x7BFF_C500, 0x7800_F800, 0x3800_3E00, 0x4100_4300, 0xB800_BE00, 0x3C01_BC01,
                                      0x77FF_F7FF, 0x7A00_FA00, 0x0001_8001)]
    ops.append(Op("vfcvt_x_h", "PULP_VFCVT_X_H(%0, %1)", lambda a: pack16([cvt_x_h(x, True) for x in lanes16(a)]),
                  cvt_in, covers=["vfcvt_x_h"]))
    ops.append(Op("vfcvt_xu_h", "PULP_VFCVT_XU_H(%0, %1)", lambda a: pack16([cvt_x_h(x, False) for x in lanes16(a)]),
                  cvt_in, covers=["vfcvt_xu_h"]))
    ints = [(rng.getrandbits(32),) for _ in range(48)] + [(v,) for v in (0, 0x7FFF8000, 0xFFFF0001, 0xFFE0FFF0,
                                                                         0x08010801, 0x7FFF7FF0)]
    ops.append(Op("vfcvt_h_x", "PULP_VFCVT_H_X(%0, %1)",
                  lambda a: pack16([_hb(np.float16(sx(x, 16))) for x in lanes16(a)]), ints, covers=["vfcvt_h_x"]))
    ops.append(Op("vfcvt_h_xu", "PULP_VFCVT_H_XU(%0, %1)",
                  lambda a: pack16([_hb(np.float16(x)) for x in lanes16(a)]), ints, covers=["vfcvt_h_xu"]))
    f32in = [(rand_fp(rng, F32, [0x477FE000, 0x477FF000, 0x38800000, 0x33800000, 0x7F800001, 0x47800000, 0xC77FF000],
                      spread=16),
              rand_fp(rng, F32, [0x3FC00000, 0x387FC000, 0x33000000, 0x33000001, 0xFF800000], spread=16))
             for _ in range(n)]
    ops.append(Op("vfcpka_h_s", "PULP_VFCPKA_H_S(%0, %1, %2)",
                  lambda a, b: np_bits16(np_f32([a, b]).astype(np.float16))[0] | np_bits16(
                      np_f32([a, b]).astype(np.float16))[1] << 16, f32in, covers=["vfcpka_h_s"]))
    for name, neg in (("vfdotpex_s", False), ("vfndotpex_s", True)):
        for rep in (False, True):
            i = f"{name}_{'r_' if rep else ''}h"
            ins = [(rand_fp(rng, F32, [0, 0x80000000, 0x7F800000, 0x7FC00000], spread=6), a, b) for a, b in W]
            ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)",
                          (lambda rep, neg: lambda c, a, b: dotpex(a, b, c, rep, neg))(rep, neg), ins, acc=True,
                          covers=[i]))
    for rep in (False, True):
        i = f"vfavg_{'r_' if rep else ''}h"
        ops.append(Op(i, f"PULP_{i.upper()}(%0, %1, %2)", vlane(vf_avg, rep),
                      W + [(0x7BFF7BFF, 0x7BFF7800), (0x00010003, 0x00000001)], covers=[i]))
    return ops


def test_xfvec_fp16_simd():
    ops = xfvec_ops()
    _, out = run_program(ops_program(ops), name="sem_xfvec")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


def _dotpex_flags(acc, a, b):
    """fflags of vfdotpex.s.h for finite lanes and a finite result that is normal, zero or exact: NX when
    either rounding (the lanes' sum, then the accumulation) is inexact."""
    from fractions import Fraction
    p = [np.float32(_h(x)) * np.float32(_h(y)) for x, y in zip(lanes16(a), lanes16(b))]
    with np.errstate(all="ignore"):
        s = np.float32(p[1] + p[0])
        r = np.float32(np_f32([acc])[0] + s)
    exact = Fraction(float(s)) == Fraction(float(p[0])) + Fraction(float(p[1])) and \
        Fraction(float(r)) == Fraction(float(np_f32([acc])[0])) + Fraction(float(s))
    return 0 if exact else 1


def test_vfdotpex_at_the_edges_of_the_host_shortcut():
    """vfdotpex.s.h takes a shortcut in host binary32 arithmetic for finite lanes and an accumulator that is
    zero or at least 2^-102 (platforms/pulpsim/sem.hpp); around that bound, on exact and near cancellations,
    subnormal lanes and accumulators, sums that overflow and specials, its values and its inexact flag must
    be those of the one-rounding-at-a-time reference."""
    rng = random.Random(53)
    lanes = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x5C00, 0x1400]
    rows = []
    for k in range(700):
        a = (rng.choice(lanes) if rng.random() < 0.3 else rand_fp(rng, F16, SPECIAL16)) | \
            (rng.choice(lanes) if rng.random() < 0.3 else rand_fp(rng, F16, SPECIAL16)) << 16
        b = rand_fp(rng, F16, SPECIAL16) | rand_fp(rng, F16, SPECIAL16) << 16
        s = dotpex(a, b, 0)
        kind = k % 7
        if kind == 0:       # exponent fields around the shortcut's bound (25: 2^-102)
            acc = rng.getrandbits(1) << 31 | rng.randint(18, 32) << 23 | rng.getrandbits(23)
        elif kind == 1:     # cancels the lanes' sum exactly
            acc = s ^ 0x80000000
        elif kind == 2:     # nearly cancels it
            acc = ((s ^ 0x80000000) + rng.randint(-3, 3)) & 0xFFFFFFFF
        elif kind == 3:     # subnormal or zero
            acc = rng.getrandbits(1) << 31 | (rng.getrandbits(23) if rng.random() < 0.8 else 0)
        elif kind == 4:     # large: the sum may overflow
            acc = rng.getrandbits(1) << 31 | rng.randint(250, 254) << 23 | rng.getrandbits(23)
        else:
            acc = rand_fp(rng, F32, [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF], spread=30)
        rows.append((acc, a, b))
    ops = [Op("vfdotpex_edges", "PULP_VFDOTPEX_S_H(%0, %1, %2)", lambda c, a, b: dotpex(a, b, c), rows, acc=True)]
    finite = [(c, a, b) for c, a, b in rows
              if all(x & 0x7C00 != 0x7C00 for w in (a, b) for x in lanes16(w)) and c & 0x7F800000 != 0x7F800000
              and dotpex(a, b, c) & 0x7F800000 not in (0, 0x7F800000)]
    ops.append(Op("vfdotpex_edges_nx", '"csrw fflags, zero\\n" PULP_VFDOTPEX_S_H(%0, %1, %2) "\\ncsrr %0, fflags"',
                  _dotpex_flags, finite, acc=True))
    _, out = run_program(ops_program(ops), platform="paper", name="sem_vfdotpex_edges")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs[:20])
    assert len(finite) > 300


def test_xfvec_rounds_to_nearest_whatever_frm():
    """GVSoC's vector FP16 operations pass rounding mode 0 (RNE) or use the host default, never frm."""
    rng = random.Random(41)
    W = [(0x3C013C01 ^ rng.getrandbits(10), 0x1401_9401 ^ rng.getrandbits(10)) for _ in range(24)]
    W += [(0x3C003C00, 0x1401_9401), (0x3C00_BC00, 0x1200_1200)]
    ops = [Op("vfadd_h", "PULP_VFADD_H(%0, %1, %2)", vlane(np2(np.add)), W),
           Op("vfmul_h", "PULP_VFMUL_H(%0, %1, %2)", vlane(np2(np.multiply)), W),
           Op("vfdiv_h", "PULP_VFDIV_H(%0, %1, %2)", vlane(np2(np.divide)), W),
           Op("vfsqrt_h", "PULP_VFSQRT_H(%0, %1)", lambda a: pack16([_sqrt16(x) for x in lanes16(a)]),
              [(a,) for a, _ in W]),
           Op("vfmac_h", "PULP_VFMAC_H(%0, %1, %2)",
              lambda c, a, b: pack16([fp_fma(F16, x, y, z, RNE)[0] for x, y, z in zip(lanes16(a), lanes16(b),
                                                                                     lanes16(c))]),
              [(b, a, a) for a, b in W], acc=True),
           Op("vfcvt_x_h", "PULP_VFCVT_X_H(%0, %1)", lambda a: pack16([cvt_x_h(x, True) for x in lanes16(a)]),
              [(0x3E00_4100,), (0xBE00_C100,), (0x3C01_3BFF,)]),
           Op("vfcpka_h_s", "PULP_VFCPKA_H_S(%0, %1, %2)",
              lambda a, b: np_bits16(np_f32([a, b]).astype(np.float16))[0] | np_bits16(
                  np_f32([a, b]).astype(np.float16))[1] << 16,
              [(0x3F801000, 0xBF801000), (0x3F803000, 0x3F800001)]),
           Op("vfdotpex_s_h", "PULP_VFDOTPEX_S_H(%0, %1, %2)", lambda c, a, b: dotpex(a, b, c),
              [(0x3F800000, a, b) for a, b in W], acc=True)]
    errs = []
    for frm in (1, 2, 3):
        src = ops_program(ops, main_pre=f'  __asm__ volatile("csrwi frm, {frm}");')
        _, out = run_program(src, name=f"sem_xfvec_frm{frm}")
        errs += [f"frm={frm}: {e}" for e in check_ops(ops, out)]
    assert not errs, "\n".join(errs)


# --------------------------------------------------------------------------------------------
# The calibration kit's semantic cases (fc_pulp.c), with the values GVSoC printed
# --------------------------------------------------------------------------------------------
CALIB_SEM = [  # (kit key, asm, inputs, acc, GVSoC's result)
    ("sem.p.mac.5+6*7", "PULP_P_MAC(%0, %1, %2)", (5, 6, 7), True, 0x2F),
    ("sem.p.msu.47-6*7", "PULP_P_MSU(%0, %1, %2)", (47, 6, 7), True, 0x5),
    ("sem.p.mac.7fffffff+10000*10001", "PULP_P_MAC(%0, %1, %2)", (0x7FFFFFFF, 0x10000, 0x10001), True, 0x8000FFFF),
    ("sem.p.mac.0+(-3)*40000000", "PULP_P_MAC(%0, %1, %2)", (0, M32 - 2, 0x40000000), True, 0x40000000),
    ("sem.pv.dotsp.h.{3,-2}.{5,4}", "PULP_PV_DOTSP_H(%0, %1, %2)", ((3 << 16) | 0xFFFE, (5 << 16) | 4), False, 7),
    ("sem.pv.sdotsp.h.100+{3,-2}.{5,4}", "PULP_PV_SDOTSP_H(%0, %1, %2)", (100, (3 << 16) | 0xFFFE, (5 << 16) | 4),
     True, 0x6B),
    ("sem.vfadd.h.{3,2}+{0.5,4}", "PULP_VFADD_H(%0, %1, %2)", (0x42004000, 0x38004400), False, 0x43004600),
    ("sem.vfmul.h.{3,2}*{0.5,4}", "PULP_VFMUL_H(%0, %1, %2)", (0x42004000, 0x38004400), False, 0x3E004800),
    ("sem.vfmac.h.{2,1}+{3,2}*{0.5,4}", "PULP_VFMAC_H(%0, %1, %2)", (0x40003C00, 0x42004000, 0x38004400), True,
     0x43004880),
    ("sem.vfdotpex.s.h.1f+{3,2}.{0.5,4}", "PULP_VFDOTPEX_S_H(%0, %1, %2)", (0x3F800000, 0x42004000, 0x38004400), True,
     0x41280000),
    ("sem.vfmul.h.{65504,-1}*{2,+0}", "PULP_VFMUL_H(%0, %1, %2)", (0x7BFFBC00, 0x40000000), False, 0x7C008000),
    ("sem.vfadd.h.{65504,65504}+{65504,2^-24}", "PULP_VFADD_H(%0, %1, %2)", (0x7BFF7BFF, 0x7BFF0001), False,
     0x7C007BFF),
    ("sem.vfadd.h.{nan,1}+{1,-inf}", "PULP_VFADD_H(%0, %1, %2)", (0x7E003C00, 0x3C00FC00), False, 0x7E00FC00),
    ("sem.vfmac.h.{-(1+2^-9)}+{1+2^-10}^2", "PULP_VFMAC_H(%0, %1, %2)", (0xBC02BC02, 0x3C013C01, 0x3C013C01), True,
     0x00100010),
    ("sem.vfdotpex.s.h.0f+{256,256}.{256,256}", "PULP_VFDOTPEX_S_H(%0, %1, %2)", (0, 0x5C005C00, 0x5C005C00), True,
     0x48000000),
    ("sem.vfdotpex.s.h.-2f+{1+2^-10}^2*2", "PULP_VFDOTPEX_S_H(%0, %1, %2)", (0xC0000000, 0x3C013C01, 0x3C013C01),
     True, 0x3B801000),
    ("sem.fadd.h.ffff3e00+12344000", '"fadd.h %0, %1, %2"', (0xFFFF3E00, 0x12344000), False, 0x00004300),
    ("sem.fcvt.h.s.1.5f", '"fcvt.h.s %0, %1"', (0x3FC00000,), False, 0x00003E00),
    ("sem.fcvt.s.h.1.5h", '"fcvt.s.h %0, %1"', (0x3E00,), False, 0x3FC00000),
]
# post-increment cases of fc_pulp.c: (key, asm, base word index into wbuf/bbuf, what, GVSoC's value)
CALIB_SEM_MEM = [
    ("sem.p.lw_imm4.value", "PULP_P_LW_POSTINC_IMM(%0, t0, 4)", "w", 4, "value", 0x22222222),
    ("sem.p.lw_imm4.rs1_delta", "PULP_P_LW_POSTINC_IMM(%0, t0, 4)", "w", 4, "delta", 4),
    ("sem.p.lw_imm-8.value", "PULP_P_LW_POSTINC_IMM(%0, t0, -8)", "w", 16, "value", 0x55555555),
    ("sem.p.lw_imm-8.rs1_delta", "PULP_P_LW_POSTINC_IMM(%0, t0, -8)", "w", 16, "delta", 0xFFFFFFF8),
    ("sem.p.lw_reg12.value", "PULP_P_LW_POSTINC_REG(%0, t0, t2)", "w", 0, "value", 0x11111111),
    ("sem.p.lw_reg12.rs1_delta", "PULP_P_LW_POSTINC_REG(%0, t0, t2)", "w", 0, "delta", 12),
    ("sem.p.lw_rr8.value", "PULP_P_LW_REGOFF(%0, t0, t3)", "w", 0, "value", 0x33333333),
    ("sem.p.lb_imm1.value", "PULP_P_LB_POSTINC_IMM(%0, t0, 1)", "b", 0, "value", 0xFFFFFF80),
    ("sem.p.lb_imm1.rs1_delta", "PULP_P_LB_POSTINC_IMM(%0, t0, 1)", "b", 0, "delta", 1),
    ("sem.p.lbu_imm1.value", "PULP_P_LBU_POSTINC_IMM(%0, t0, 1)", "b", 0, "value", 0x80),
    ("sem.p.lh_imm2.value", "PULP_P_LH_POSTINC_IMM(%0, t0, 2)", "b", 2, "value", 0x1FF),
    ("sem.p.lh_imm2.rs1_delta", "PULP_P_LH_POSTINC_IMM(%0, t0, 2)", "b", 2, "delta", 2),
    ("sem.p.lhu_imm2.value", "PULP_P_LHU_POSTINC_IMM(%0, t0, 2)", "b", 2, "value", 0x1FF),
]
CALIB_PRELUDE = ("uint32_t kit_w[8] __attribute__((aligned(16))) = {0x11111111, 0x22222222, 0x33333333, 0x44444444,"
                 " 0x55555555, 0x66666666, 0x77777777, 0x88888888};\n"
                 "uint8_t kit_b[8] __attribute__((aligned(16))) = {0x80, 0x7f, 0xff, 0x01, 0x34, 0x12, 0xfe, 0xca};\n")


def calib_sem_ops():
    ops = []
    for key, asm, ins, acc, val in CALIB_SEM:
        ops.append(Op(key, asm, (lambda val: lambda *a: val)(val), [ins], acc=acc))
    for key, macro, buf, off, what, val in CALIB_SEM_MEM:
        tail = '"\\n sub %0, t0, t1\\n"' if what == "delta" else '"\\n"'
        ops.append(Op(key, f'"la t0, kit_{buf}\\n addi t0, t0, {off}\\n mv t1, t0\\n li t2, 12\\n li t3, 8\\n" '
                           f'{macro} {tail}', (lambda val: lambda *a: val)(val), [(0,)],
                      clobber='"t0", "t1", "t2", "t3"'))
    return ops


def test_calibration_kit_semantics():
    ops = calib_sem_ops()
    _, out = run_program(ops_program(ops, prelude=CALIB_PRELUDE), name="sem_calib")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)


@pytest.mark.skipif(not (CALIB_DIR / "fc_pulp.gvsoc.txt").exists(), reason="calibration kit not present")
def test_calibration_semantics_table_matches_kit():
    ref = {}
    for line in (CALIB_DIR / "fc_pulp.gvsoc.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("sem."):
            ref[parts[0]] = int(parts[1], 0)
    ours = {k: v for k, *_, v in CALIB_SEM} | {k: v for k, *_, v in CALIB_SEM_MEM}
    for k, v in ours.items():
        assert ref[k] == v, k
