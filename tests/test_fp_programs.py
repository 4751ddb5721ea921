"""FP32 and FP16 (Zfinx / Zhinx, values in x registers) results of programs run on the simulator,
checked bit-exactly, with fflags, for many random inputs: rounding in every static rounding mode,
subnormals, overflow, infinities and NaNs (a NaN result must be the canonical 0x7fc00000 / 0x7e00).

Inputs are generated here and written into the C source; each instruction runs in inline asm with an
explicit rounding mode and fflags is read and cleared after it. Round-to-nearest-even results are
compared with NumPy float32 / float16 arithmetic (correctly rounded for +, -, *, /, sqrt and the
conversions); the other rounding modes, the fused multiply-adds and fflags use the exact Fraction
reference of tests/helpers.py, which is itself checked against NumPy here.

Half-precision operands carry random upper 16 bits, which the instructions must ignore (GVSoC reads
only the low half); half results must be zero-extended (platform-facts.md section 10).
A second group compiles plain C arithmetic on float and _Float16 and checks it the same way.
"""
from __future__ import annotations

import random

import numpy as np

from helpers import (F16, F32, RDN, RM_NAMES, RNE, RTZ, RUP, SPECIAL16, SPECIAL32, c_array, fp_add, fp_class,  # noqa: F401
                     fp_cmp, fp_convert, fp_div, fp_fma, fp_from_int, fp_minmax, fp_mul, fp_sqrt, fp_to_int,
                     mismatches, np_bits16, np_bits32, np_f16, np_f32, pulp_elf_cache, rand_fp, run_program, s32)

M32 = 0xFFFFFFFF
RMS = (RNE, RTZ, RDN, RUP)
N = 96


class FPOp:
    """One FP instruction over many inputs; prints results (tag) and fflags (tag.fl)."""

    def __init__(self, tag, asm, ref, inputs, np_ref=None, flags=True):
        self.tag, self.asm, self.ref, self.inputs, self.np_ref, self.flags = tag, asm, ref, inputs, np_ref, flags
        self.cname = "f_" + "".join(c if c.isalnum() else "_" for c in tag)

    def c_code(self):
        n, k = len(self.inputs), len(self.inputs[0])
        ins = ", ".join(f'"r"(x[{j}])' for j in range(k))
        return "\n".join([
            c_array(f"{self.cname}_in", [v for row in self.inputs for v in row]),
            f"static uint32_t {self.cname}_r[{n}], {self.cname}_f[{n}];",
            f"static __attribute__((noinline)) void {self.cname}(void) {{",
            f"  for (int i = 0; i < {n}; i++) {{",
            f"    const uint32_t *x = &{self.cname}_in[i * {k}];",
            "    uint32_t r, f;",
            f'    __asm__ volatile("{self.asm}\\n csrrw %1, fflags, zero" : "=&r"(r), "=&r"(f) : {ins});',
            f"    {self.cname}_r[i] = r; {self.cname}_f[i] = f;\n  }}",
            f'  th_arr("{self.tag}", {self.cname}_r, {n});',
            f'  th_arr("{self.tag}.fl", {self.cname}_f, {n});\n}}'])

    def check(self, out):
        exp = [self.ref(*x) for x in self.inputs]
        errs = mismatches(self.tag, out[self.tag], [e[0] & M32 for e in exp], self.inputs)
        if self.flags:
            errs += mismatches(self.tag + ".fl", out[self.tag + ".fl"], [e[1] for e in exp], self.inputs, fmt="{:08x}")
        if self.np_ref is not None:  # the exact reference agrees with NumPy (RNE)
            npr = self.np_ref(self.inputs)
            errs += mismatches(self.tag + " (reference vs numpy)", [e[0] & M32 for e in exp], npr, self.inputs)
        return errs


def program(ops):
    parts = ['#include "tharness.h"'] + [op.c_code() for op in ops]
    parts.append('int main(void) {\n  __asm__ volatile("csrwi fcsr, 0");')
    parts += [f"  {op.cname}();" for op in ops]
    parts.append("  return 0;\n}\n")
    return "\n".join(parts)


def run_ops(ops, name):
    _, out = run_program(program(ops), name=name)
    errs = []
    for op in ops:
        errs += op.check(out)
    assert not errs, f"{len(errs)} mismatches:\n" + "\n".join(errs[:60])


# --------------------------------------------------------------------------------------------
# input generators
# --------------------------------------------------------------------------------------------
def with_exp(f, rng, e, sign=None):
    """A random encoding with biased exponent field e (clamped; 0 = subnormal)."""
    e = min(max(e, 0), (1 << f.ew) - 2)
    m = rng.getrandbits(f.p - 1)
    if rng.random() < 0.3:
        m &= ~((1 << rng.randint(0, f.p - 2)) - 1)
    s = (rng.random() < 0.5) if sign is None else sign
    return (f.sign if s else 0) | (e << (f.p - 1)) | m


def efield(f, a):
    return (a >> (f.p - 1)) & ((1 << f.ew) - 1)


def gen_pairs(f, specials, rng, kind, n=N):
    out = []
    for i in range(n):
        a = rand_fp(rng, f, specials)
        if i < len(specials):
            b = specials[(i * 5 + 1) % len(specials)]
        elif kind == "add":
            b = with_exp(f, rng, efield(f, a) + rng.randint(-(f.p + 2), f.p + 2)) if rng.random() < 0.7 \
                else rand_fp(rng, f, specials)
        elif kind == "mul":  # products near underflow / overflow
            target = rng.choice([1 - (f.p - 1), f.bias // 2, 2 * f.bias - 1, 1])
            b = with_exp(f, rng, target - efield(f, a) + f.bias + rng.randint(-3, 3))
        elif kind == "div":
            target = rng.choice([1, f.bias, 2 * f.bias - 1, -(f.p - 2)])
            b = with_exp(f, rng, efield(f, a) - target + f.bias + rng.randint(-3, 3))
        else:
            b = rand_fp(rng, f, specials)
        out.append((a, b))
    return out


def gen_triples(f, specials, rng, n=N):
    out = []
    for i in range(n):
        a, b = rand_fp(rng, f, specials), rand_fp(rng, f, specials)
        pe = efield(f, a) + efield(f, b) - f.bias
        if rng.random() < 0.75:
            c = with_exp(f, rng, pe + rng.randint(-(f.p + 2), 3))
        else:
            c = rand_fp(rng, f, specials)
        out.append((a, b, c))
    return out


def gen_to_int(f, rng, n=N):
    vals = []
    for i in range(n):
        r = rng.random()
        if r < 0.15:
            vals.append(rng.choice(SPECIAL32 if f is F32 else SPECIAL16))
        elif r < 0.45:  # integers and halves
            k = rng.randint(0, 40 if f is F32 else 12)
            v = rng.randint(0, 1 << k) + rng.choice([0, 0.5, 0.25, 0.75])
            v = -v if rng.random() < 0.4 else v
            vals.append(np_bits32(np.array([v], dtype=np.float32))[0] if f is F32 else np_bits16(
                np.array([v], dtype=np.float16))[0])
        elif r < 0.6 and f is F32:  # around +-2^31 and 2^32
            base = rng.choice([0x4EFFFFFF, 0x4F000000, 0x4F000001, 0xCF000000, 0xCF000001, 0x4F7FFFFF, 0x4F800000])
            vals.append(base)
        else:
            vals.append(with_exp(f, rng, f.bias + rng.randint(-4, 32 if f is F32 else 15)))
    return [(v,) for v in vals]


def gen_ints(rng, n=N):
    vals = [0, 1, M32, 0x80000000, 0x7FFFFFFF, 0x01000001, 0x01000003, 0xFEFFFFFF, 0x00000801, 0x0000FFE0,
            0x0000FFF0, 0x00010000, 0xFFFF0001]
    while len(vals) < n:
        k = rng.randint(1, 32)
        v = rng.getrandbits(k)
        if rng.random() < 0.5:  # few significant bits around the rounding position
            v = (v | 1) << rng.randint(0, 32 - k)
        vals.append(v & M32)
    return [(v,) for v in vals]


def hi_noise(rng, rows, f):
    """Random upper 16 bits on every half-precision operand."""
    if f is not F16:
        return rows
    return [tuple(v | (rng.getrandbits(16) << 16) for v in row) for row in rows]


def lo(f, v):
    return v & 0xFFFF if f is F16 else v


# --------------------------------------------------------------------------------------------
# op table
# --------------------------------------------------------------------------------------------
def fp_ops(f: type, seed: int):
    rng = random.Random(seed)
    sfx = ".s" if f is F32 else ".h"
    sp = SPECIAL32 if f is F32 else SPECIAL16
    npf, npb = (np_f32, np_bits32) if f is F32 else (np_f16, np_bits16)
    mask = M32 if f is F32 else 0xFFFF

    def npr(fn):
        def g(rows):
            cols = [npf([lo(f, r[j]) for r in rows]) for j in range(len(rows[0]))]
            with np.errstate(all="ignore"):
                res = fn(*cols)
            return [int(x) for x in res] if res.dtype == np.bool_ else npb(res)
        return g

    ops = []
    arith = {"fadd": (lambda a, b, rm: fp_add(f, a, b, rm), np.add, "add"),
             "fsub": (lambda a, b, rm: fp_add(f, a, b, rm, sub=True), np.subtract, "add"),
             "fmul": (lambda a, b, rm: fp_mul(f, a, b, rm), np.multiply, "mul"),
             "fdiv": (lambda a, b, rm: fp_div(f, a, b, rm), np.divide, "div")}
    for name, (ref, npfn, kind) in arith.items():
        for rm in RMS:
            ins = hi_noise(rng, gen_pairs(f, sp, rng, kind), f)
            ops.append(FPOp(f"{name}{sfx}.{RM_NAMES[rm]}", f"{name}{sfx} %0, %2, %3, {RM_NAMES[rm]}",
                            (lambda ref, rm: lambda a, b: ref(lo(f, a), lo(f, b), rm))(ref, rm), ins,
                            npr(npfn) if rm == RNE else None))
    for rm in RMS:
        ins = hi_noise(rng, [(a,) for a, _ in gen_pairs(f, sp, rng, "x")], f)
        ops.append(FPOp(f"fsqrt{sfx}.{RM_NAMES[rm]}", f"fsqrt{sfx} %0, %2, {RM_NAMES[rm]}",
                        (lambda rm: lambda a: fp_sqrt(f, lo(f, a), rm))(rm), ins, npr(np.sqrt) if rm == RNE else None))
    for name, negp, negc in (("fmadd", False, False), ("fmsub", False, True), ("fnmsub", True, False),
                             ("fnmadd", True, True)):
        for rm in RMS:
            ins = hi_noise(rng, gen_triples(f, sp, rng), f)
            ops.append(FPOp(f"{name}{sfx}.{RM_NAMES[rm]}", f"{name}{sfx} %0, %2, %3, %4, {RM_NAMES[rm]}",
                            (lambda rm, negp, negc: lambda a, b, c: fp_fma(f, lo(f, a), lo(f, b), lo(f, c), rm, negp,
                                                                           negc))(rm, negp, negc), ins))
    P = hi_noise(rng, gen_pairs(f, sp, rng, "add", 2 * N) + [(a, a) for a in sp], f)
    ops.append(FPOp(f"fmin{sfx}", f"fmin{sfx} %0, %2, %3", lambda a, b: fp_minmax(f, lo(f, a), lo(f, b), False), P))
    ops.append(FPOp(f"fmax{sfx}", f"fmax{sfx} %0, %2, %3", lambda a, b: fp_minmax(f, lo(f, a), lo(f, b), True), P))
    sg = f.sign
    ops.append(FPOp(f"fsgnj{sfx}", f"fsgnj{sfx} %0, %2, %3",
                    lambda a, b: ((lo(f, a) & ~sg & mask) | (lo(f, b) & sg), 0), P))
    ops.append(FPOp(f"fsgnjn{sfx}", f"fsgnjn{sfx} %0, %2, %3",
                    lambda a, b: ((lo(f, a) & ~sg & mask) | (~lo(f, b) & sg), 0), P))
    ops.append(FPOp(f"fsgnjx{sfx}", f"fsgnjx{sfx} %0, %2, %3", lambda a, b: (lo(f, a) ^ (lo(f, b) & sg), 0), P))
    for c in ("eq", "lt", "le"):
        ops.append(FPOp(f"f{c}{sfx}", f"f{c}{sfx} %0, %2, %3", (lambda c: lambda a, b: fp_cmp(f, lo(f, a), lo(f, b), c))(c),
                        P, npr({"eq": np.equal, "lt": np.less, "le": np.less_equal}[c])))
    C = hi_noise(rng, [(v,) for v in sp] + [(a,) for a, _ in gen_pairs(f, sp, rng, "x")], f)
    ops.append(FPOp(f"fclass{sfx}", f"fclass{sfx} %0, %2", lambda a: (fp_class(f, lo(f, a)), 0), C))
    for rm in RMS:
        T = hi_noise(rng, gen_to_int(f, rng), f)
        ops.append(FPOp(f"fcvt.w{sfx}.{RM_NAMES[rm]}", f"fcvt.w{sfx} %0, %2, {RM_NAMES[rm]}",
                        (lambda rm: lambda a: fp_to_int(f, lo(f, a), rm, True))(rm), T))
        ops.append(FPOp(f"fcvt.wu{sfx}.{RM_NAMES[rm]}", f"fcvt.wu{sfx} %0, %2, {RM_NAMES[rm]}",
                        (lambda rm: lambda a: fp_to_int(f, lo(f, a), rm, False))(rm), T))
        I = gen_ints(rng)
        ops.append(FPOp(f"fcvt{sfx}.w.{RM_NAMES[rm]}", f"fcvt{sfx}.w %0, %2, {RM_NAMES[rm]}",
                        (lambda rm: lambda a: fp_from_int(f, s32(a), rm))(rm), I,
                        (lambda rows: npb(np.array([s32(r[0]) for r in rows], dtype=np.float64).astype(
                            np.float32 if f is F32 else np.float16))) if rm == RNE and f is F32 else None))
        ops.append(FPOp(f"fcvt{sfx}.wu.{RM_NAMES[rm]}", f"fcvt{sfx}.wu %0, %2, {RM_NAMES[rm]}",
                        (lambda rm: lambda a: fp_from_int(f, a, rm))(rm), I))
    if f is F16:  # conversions between the formats
        for rm in RMS:
            S = [(v,) for v in SPECIAL32] + [(rand_fp(rng, F32, SPECIAL32, spread=18),) for _ in range(N)] + \
                [(with_exp(F32, rng, 127 - 14 - rng.randint(0, 12)),) for _ in range(32)]  # binary16 subnormals
            ops.append(FPOp(f"fcvt.h.s.{RM_NAMES[rm]}", f"fcvt.h.s %0, %2, {RM_NAMES[rm]}",
                            (lambda rm: lambda a: fp_convert(F32, F16, a, rm))(rm), S,
                            (lambda rows: np_bits16(np_f32([r[0] for r in rows]).astype(np.float16)))
                            if rm == RNE else None))
        H = hi_noise(rng, [(v,) for v in SPECIAL16] + [(rand_fp(rng, F16, SPECIAL16),) for _ in range(N)], F16)
        ops.append(FPOp("fcvt.s.h", "fcvt.s.h %0, %2", lambda a: fp_convert(F16, F32, a & 0xFFFF, RNE), H,
                        lambda rows: np_bits32(np_f16([r[0] & 0xFFFF for r in rows]).astype(np.float32))))
    return ops


def test_fp32_instructions():
    run_ops(fp_ops(F32, 101), "fp32_insns")


def test_fp16_zhinx_instructions():
    run_ops(fp_ops(F16, 202), "fp16_insns")


def test_fp_reference_matches_numpy():
    """The exact reference rounds like NumPy (RNE) on a larger random sample (no simulator involved)."""
    rng = random.Random(7)
    for f, sp, npf, npb in ((F32, SPECIAL32, np_f32, np_bits32), (F16, SPECIAL16, np_f16, np_bits16)):
        for kind, ref, fn in (("add", lambda a, b: fp_add(f, a, b, RNE), np.add),
                              ("mul", lambda a, b: fp_mul(f, a, b, RNE), np.multiply),
                              ("div", lambda a, b: fp_div(f, a, b, RNE), np.divide)):
            P = gen_pairs(f, sp, rng, kind, 600)
            with np.errstate(all="ignore"):
                want = npb(fn(npf([a for a, _ in P]), npf([b for _, b in P])))
            got = [ref(a, b)[0] for a, b in P]
            assert got == want, (f.nbits, kind)


# --------------------------------------------------------------------------------------------
# C arithmetic on float and _Float16 (the compiler picks the instructions; dynamic rounding = RNE)
# --------------------------------------------------------------------------------------------
C_FP = r"""
#include "tharness.h"
#pragma clang fp contract(off)
%(arrays)s
#define NV %(n)d
static uint32_t o[NV];
#define OUT(tag, T, expr) do { for (int i = 0; i < NV; i++) { T r = (expr); uint32_t u = 0; \
  __builtin_memcpy(&u, &r, sizeof r); o[i] = u; } th_arr(tag, o, NV); } while (0)
typedef _Float16 h_t;
static inline h_t H(uint32_t v) { uint16_t b = (uint16_t)v; h_t h; __builtin_memcpy(&h, &b, 2); return h; }
static inline float F(uint32_t v) { float f; __builtin_memcpy(&f, &v, 4); return f; }
int main(void) {
  OUT("h.add", h_t, H(ha[i]) + H(hb[i]));
  OUT("h.sub", h_t, H(ha[i]) - H(hb[i]));
  OUT("h.mul", h_t, H(ha[i]) * H(hb[i]));
  OUT("h.div", h_t, H(ha[i]) / H(hb[i]));
  OUT("h.lt", uint32_t, H(ha[i]) < H(hb[i]));
  OUT("h.to_f", float, (float)H(ha[i]));
  OUT("h.from_f", h_t, (h_t)F(fa[i]));
  OUT("h.to_i", int32_t, (int32_t)H(hc[i]));
  OUT("h.from_i", h_t, (h_t)(int32_t)ia[i]);
  OUT("f.add", float, F(fa[i]) + F(fb[i]));
  OUT("f.mul", float, F(fa[i]) * F(fb[i]));
  OUT("f.div", float, F(fa[i]) / F(fb[i]));
  OUT("f.fma", float, __builtin_fmaf(F(fa[i]), F(fb[i]), F(fc[i])));
  OUT("f.sqrt", float, __builtin_sqrtf(F(fa[i])));
  OUT("f.to_i", int32_t, (int32_t)F(fd[i]));
  OUT("f.from_i", float, (float)(int32_t)ia[i]);
  return 0;
}
"""


def test_c_float_and_float16_arithmetic():
    rng = random.Random(303)
    n = 64
    ha = [rand_fp(rng, F16, SPECIAL16) for _ in range(n)]
    hb = [rand_fp(rng, F16, SPECIAL16) for _ in range(n)]
    hc = [v for (v,) in gen_to_int(F16, rng, n)]
    fa = [rand_fp(rng, F32, SPECIAL32) for _ in range(n)]
    fb = [rand_fp(rng, F32, SPECIAL32) for _ in range(n)]
    fc = [rand_fp(rng, F32, SPECIAL32) for _ in range(n)]
    fd = [v for v in (r[0] for r in gen_to_int(F32, rng, 4 * n)) if not F32.is_nan(v) and not F32.is_inf(v)
          and abs(float(np_f32([v])[0])) < 2.0 ** 31][:n]
    ia = [v for (v,) in gen_ints(rng, n)]
    arrays = "".join(c_array(k, v).replace("static const", "static volatile") for k, v in (("ha", ha), ("hb", hb), ("hc", hc), ("fa", fa), ("fb", fb),
                                                ("fc", fc), ("fd", fd), ("ia", ia)))
    _, out = run_program(C_FP % {"arrays": arrays, "n": n}, name="fp_c")
    H, Fl = np_f16, np_f32
    with np.errstate(all="ignore"):
        exp = {
            "h.add": np_bits16(H(ha) + H(hb)), "h.sub": np_bits16(H(ha) - H(hb)), "h.mul": np_bits16(H(ha) * H(hb)),
            "h.div": np_bits16(H(ha) / H(hb)), "h.lt": [int(x) for x in (H(ha) < H(hb))],
            "h.to_f": np_bits32(H(ha).astype(np.float32)), "h.from_f": np_bits16(Fl(fa).astype(np.float16)),
            "h.to_i": [fp_to_int(F16, v, RTZ, True)[0] for v in hc],
            "h.from_i": np_bits16(np.array([s32(v) for v in ia], dtype=np.float64).astype(np.float16)),
            "f.add": np_bits32(Fl(fa) + Fl(fb)), "f.mul": np_bits32(Fl(fa) * Fl(fb)),
            "f.div": np_bits32(Fl(fa) / Fl(fb)),
            "f.fma": [fp_fma(F32, a, b, c, RNE)[0] for a, b, c in zip(fa, fb, fc)],
            "f.sqrt": np_bits32(np.sqrt(Fl(fa))),
            "f.to_i": [fp_to_int(F32, v, RTZ, True)[0] for v in fd],
            "f.from_i": np_bits32(np.array([s32(v) for v in ia], dtype=np.int32).astype(np.float32)),
        }
    errs = []
    for k, v in exp.items():
        if k.startswith("h.") and k not in ("h.lt", "h.to_f", "h.to_i"):
            got = [x & 0xFFFF for x in out[k]]  # C stores the 16-bit value; the upper half is padding
        else:
            got = out[k]
        errs += mismatches(k, got, [x & M32 for x in v])
    assert not errs, "\n".join(errs[:40])


# --------------------------------------------------------------------------------------------
# FP values in x registers: loads, stores and moves (platform-facts.md sections 2.1 and 10)
# --------------------------------------------------------------------------------------------
def test_fp_values_in_x_registers():
    """flh fills the upper half with ones; fsh stores the low half; fmv.x.h / fmv.h.x / fmv.x.w /
    fmv.w.x move all 32 bits, as in
    GVSoC where FREG_GET/FREG_SET are plain x-register accesses; half results are zero-extended.
    The loads, stores and moves have no assembler mnemonic under Zfinx/Zhinx: they are encoded with .insn."""
    from helpers import Op, check_ops, ops_program

    rng = random.Random(404)
    words = [0x12343E00, 0xFFFF7C01, 0x0000FC00, 0x80008000] + [rng.getrandbits(32) for _ in range(12)]
    W = [(w,) for w in words]
    prelude = "uint32_t fpx_buf[4] __attribute__((aligned(16)));\n"
    st = '"la t0, fpx_buf\\n sw %2, 0(t0)\\n sw %2, 4(t0)\\n" '
    ops = [
        Op("flh", st + '".insn i 0x07, 1, %0, 2(t0)"', lambda _, w: 0xFFFF0000 | (w >> 16), [(0, w) for w in words],
           clobber='"t0", "memory"'),
        Op("flw", st + '".insn i 0x07, 2, %0, 4(t0)"', lambda w, v: v, [(0, w) for w in words], clobber='"t0", "memory"'),
        Op("fsh", st + '".insn s 0x27, 1, %1, 2(t0)\\n lw %0, 0(t0)"', lambda w, v: (v & 0xFFFF) | (w & 0xFFFF) << 16,
           [(w, rng.getrandbits(32)) for w in words], clobber='"t0", "memory"'),
        Op("fsw", st + '".insn s 0x27, 2, %1, 4(t0)\\n lw %0, 4(t0)"', lambda w, v: w, [(w, 1) for w in words],
           clobber='"t0", "memory"'),
        Op("fmv.x.h", '".insn r 0x53, 0, 0x72, %0, %1, x0"', lambda w: w, W),
        Op("fmv.h.x", '".insn r 0x53, 0, 0x7a, %0, %1, x0"', lambda w: w, W),
        Op("fmv.x.w", '".insn r 0x53, 0, 0x70, %0, %1, x0"', lambda w: w, W),
        Op("fmv.w.x", '".insn r 0x53, 0, 0x78, %0, %1, x0"', lambda w: w, W),
        Op("fsgnjx.h.zero_extended", '"fsgnjx.h %0, %1, %1"', lambda w: w & 0x7FFF, W),
        Op("fmin.h.zero_extended", '"fmin.h %0, %1, %1"', lambda w: F16.cnan if F16.is_nan(w & 0xFFFF) else w & 0xFFFF,
           W),
    ]
    _, out = run_program(ops_program(ops, prelude=prelude), name="fp_xregs")
    errs = check_ops(ops, out)
    assert not errs, "\n".join(errs)
