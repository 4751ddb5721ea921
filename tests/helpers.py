"""Shared helpers for the ISA tests: build a C program for a platform, run it on the embedded
simulator, parse what it printed, plus exact IEEE-754 references for the FP checks.

    build_and_run(source_text, platform='pulp-open', opt='2') -> result dict (harness.backends.embedded.run)
    run_program(...)  -> (result, {tag: [int, ...]})  after asserting a clean exit

Programs include "tharness.h" (tests/programs/), which prints results as lines
"tag hex hex ..." (see th_arr / th_kv there). ELFs are cached per pytest session, keyed by the
source text and build options, in a directory from pytest's tmp_path_factory (fixture
`pulp_elf_cache` below; import it into a test module to use it, otherwise a temporary directory is
used).

The simulator is the installed extension (harness._pulpsim) unless PULP_ODL_SIM_DIR names a
directory holding a separately built _pulpsim module.
"""
from __future__ import annotations

import hashlib
import math
import random
import struct
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from shared_data import CALIB as CALIB_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"

_CACHE: Path | None = None


def set_cache_dir(path: Path) -> None:
    global _CACHE
    _CACHE = Path(path)
    _CACHE.mkdir(parents=True, exist_ok=True)


def cache_dir() -> Path:
    if _CACHE is None:
        set_cache_dir(Path(tempfile.mkdtemp(prefix="pulp-odl-tests-")))
    return _CACHE


@pytest.fixture(scope="session", autouse=True)
def pulp_elf_cache(tmp_path_factory):
    """Cache built ELFs for the whole session in pytest's temporary directory."""
    if _CACHE is None or not str(_CACHE).startswith(str(tmp_path_factory.getbasetemp())):
        set_cache_dir(tmp_path_factory.mktemp("elf"))
    return _CACHE


# --------------------------------------------------------------------------------------------
# build and run
# --------------------------------------------------------------------------------------------
def _platform(name: str):
    from harness import platform as platmod

    return platmod.load(name)


def build(source_text: str, platform: str = "pulp-open", opt: str = "2", defines=(), name: str = "prog") -> Path:
    """Compile SOURCE_TEXT (C) with the runtime; returns the cached ELF path."""
    from harness import toolchain

    key = hashlib.sha256("\0".join([source_text, platform, opt, *defines]).encode()).hexdigest()[:20]
    elf = cache_dir() / f"{name}-{key}.elf"
    if elf.exists():
        return elf
    src = cache_dir() / f"{name}-{key}.c"
    src.write_text(source_text)
    toolchain.build([src], elf, _platform(platform), opt=opt, defines=list(defines), include_dirs=[PROGRAMS])
    return elf


def run(elf: Path, platform: str = "pulp-open", max_cycles: int | None = 200_000_000) -> dict:
    from harness.backends import embedded

    return embedded.run(str(elf), _platform(platform), max_cycles=max_cycles)


def build_and_run(source_text: str, platform: str = "pulp-open", opt: str = "2", defines=(), name: str = "prog",
                  max_cycles: int | None = 200_000_000) -> dict:
    """Build (cached) and run one program; returns the simulator's result dict."""
    return run(build(source_text, platform, opt, defines, name), platform, max_cycles)


def parse_lines(stdout: str) -> dict:
    """'tag v1 v2 ...' lines (values in hex) -> {tag: [ints]}."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if not parts:
            continue
        vals = [int(p, 16) for p in parts[1:]]
        if parts[0] in out:
            raise AssertionError(f"duplicate output tag {parts[0]!r}")
        out[parts[0]] = vals
    return out


def run_program(source_text: str, platform: str = "pulp-open", opt: str = "2", defines=(), name: str = "prog"):
    """Build and run; assert a clean exit with status 0; return (result, parsed output)."""
    res = build_and_run(source_text, platform, opt, defines, name)
    if res["status"] != "exit" or res["exit_code"] != 0:
        from harness.backends import embedded

        why = embedded.fault_line(res) if "fault" in res else f"exit code {res['exit_code']}"
        raise AssertionError(f"program {name} did not exit cleanly: {why}\n--- stdout ---\n{res['stdout'][-3000:]}")
    return res, parse_lines(res["stdout"])


def c_array(name: str, values, ctype: str = "uint32_t", attrs: str = "") -> str:
    vals = ", ".join(f"0x{v & 0xFFFFFFFF:x}u" for v in values)
    return f"static const {ctype} {name}[{len(values)}] {attrs}= {{{vals}}};\n"


def mismatches(tag, got, expected, inputs=None, limit=12, fmt="{:08x}") -> list[str]:
    """Human-readable list of differing entries (empty when equal)."""
    out = []
    if len(got) != len(expected):
        return [f"{tag}: {len(got)} results, expected {len(expected)}"]
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            ins = "" if inputs is None else " inputs " + " ".join(fmt.format(x) for x in inputs[i])
            out.append(f"{tag}[{i}]: got {fmt.format(g)} expected {fmt.format(e)}{ins}")
            if len(out) >= limit:
                out.append("...")
                break
    return out


def u32(v: int) -> int:
    return v & 0xFFFFFFFF


def s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


# --------------------------------------------------------------------------------------------
# IEEE-754 binary32 / binary16: exact reference (Fraction), RISC-V rules, fflags
# --------------------------------------------------------------------------------------------
RNE, RTZ, RDN, RUP, RMM = range(5)
RM_NAMES = {RNE: "rne", RTZ: "rtz", RDN: "rdn", RUP: "rup"}
NV, DZ, OF, UF, NX = 0x10, 0x08, 0x04, 0x02, 0x01


class Fmt:
    def __init__(self, p: int, ew: int):
        self.p, self.ew = p, ew
        self.bias = (1 << (ew - 1)) - 1
        self.emin = 1 - self.bias
        self.nbits = p + ew
        self.sign = 1 << (self.nbits - 1)
        self.expm = ((1 << ew) - 1) << (p - 1)
        self.fracm = (1 << (p - 1)) - 1
        self.qbit = 1 << (p - 2)
        self.cnan = self.expm | self.qbit
        self.maxf = self.expm - 1

    def is_nan(self, a):
        return (a & (self.sign - 1)) > self.expm

    def is_snan(self, a):
        return self.is_nan(a) and not a & self.qbit

    def is_inf(self, a):
        return (a & (self.sign - 1)) == self.expm

    def is_zero(self, a):
        return (a & (self.sign - 1)) == 0

    def neg(self, a):
        return bool(a & self.sign)

    def value(self, a) -> Fraction:
        """Exact value of a finite encoding."""
        e = (a >> (self.p - 1)) & ((1 << self.ew) - 1)
        m = a & self.fracm
        if e == 0:
            v = Fraction(m) * Fraction(2) ** (self.emin - (self.p - 1))
        else:
            v = Fraction(m | (1 << (self.p - 1))) * Fraction(2) ** (e - self.bias - (self.p - 1))
        return -v if self.neg(a) else v

    def round(self, x: Fraction, rm: int, zero_sign: bool = False, sticky: bool = False):
        """Round exact x (plus an infinitesimal of x's sign if sticky) -> (bits, flags)."""
        if x == 0 and not sticky:
            return (self.sign if zero_sign else 0), 0
        neg = x < 0
        a = -x if neg else x
        sbit = self.sign if neg else 0
        # exponent of a: 2^e <= a < 2^(e+1)
        e = a.numerator.bit_length() - a.denominator.bit_length()
        if Fraction(2) ** e > a:
            e -= 1
        elif Fraction(2) ** (e + 1) <= a:
            e += 1

        def rnd(eq):
            q = Fraction(2) ** (eq - (self.p - 1))
            m = a / q
            n = m.numerator // m.denominator
            rem = m - n
            inexact = rem != 0 or sticky
            half = Fraction(1, 2)
            if not inexact:
                inc = False
            elif rm == RTZ:
                inc = False
            elif rm == RDN:
                inc = neg
            elif rm == RUP:
                inc = not neg
            elif rm == RMM:
                inc = rem >= half
            else:
                inc = rem > half or (rem == half and (sticky or n & 1))
            return n + inc, inexact

        n_unb, inexact_unb = rnd(e)
        tiny = e < self.emin and not (e == self.emin - 1 and n_unb == 1 << self.p)
        eq = max(e, self.emin)
        n, inexact = rnd(eq)
        bits = ((eq - self.emin) << (self.p - 1)) + n
        flags = NX if inexact else 0
        if tiny and inexact:
            flags |= UF
        if bits >= self.expm:
            flags = OF | NX
            to_inf = rm in (RNE, RMM) or (rm == RUP and not neg) or (rm == RDN and neg)
            return sbit | (self.expm if to_inf else self.maxf), flags
        return sbit | bits, flags


F32 = Fmt(24, 8)
F16 = Fmt(11, 5)


def _nan_in(f: Fmt, *xs):
    """(is any NaN, flags NV if any signalling)."""
    anynan = any(f.is_nan(x) for x in xs)
    return anynan, (NV if any(f.is_snan(x) for x in xs) else 0)


def fp_add(f: Fmt, a, b, rm, sub=False):
    if sub:
        b ^= f.sign
    isn, fl = _nan_in(f, a, b)
    if isn:
        return f.cnan, fl
    if f.is_inf(a) or f.is_inf(b):
        if f.is_inf(a) and f.is_inf(b) and f.neg(a) != f.neg(b):
            return f.cnan, NV
        return (a if f.is_inf(a) else b), 0
    s = f.value(a) + f.value(b)
    zs = (f.neg(a) and f.neg(b)) or (f.neg(a) != f.neg(b) and rm == RDN)
    return f.round(s, rm, zero_sign=zs)


def fp_mul(f: Fmt, a, b, rm):
    isn, fl = _nan_in(f, a, b)
    if isn:
        return f.cnan, fl
    sg = f.sign if f.neg(a) != f.neg(b) else 0
    if f.is_inf(a) or f.is_inf(b):
        if f.is_zero(a) or f.is_zero(b):
            return f.cnan, NV
        return sg | f.expm, 0
    return f.round(f.value(a) * f.value(b), rm, zero_sign=bool(sg))


def fp_div(f: Fmt, a, b, rm):
    isn, fl = _nan_in(f, a, b)
    if isn:
        return f.cnan, fl
    sg = f.sign if f.neg(a) != f.neg(b) else 0
    if f.is_inf(a):
        return (f.cnan, NV) if f.is_inf(b) else (sg | f.expm, 0)
    if f.is_inf(b):
        return sg, 0
    if f.is_zero(b):
        return (f.cnan, NV) if f.is_zero(a) else (sg | f.expm, DZ)
    return f.round(f.value(a) / f.value(b), rm, zero_sign=bool(sg))


def fp_sqrt(f: Fmt, a, rm):
    if f.is_nan(a):
        return f.cnan, (NV if f.is_snan(a) else 0)
    if f.is_zero(a):
        return a, 0
    if f.neg(a):
        return f.cnan, NV
    if f.is_inf(a):
        return a, 0
    v = f.value(a)
    k = 200  # sqrt(v) ~ r / 2^k with r = floor(sqrt(v * 4^k)): far more bits than p + 2
    t = v * Fraction(4) ** k
    r = math.isqrt(t.numerator // t.denominator)
    exact = Fraction(r * r) == t
    return f.round(Fraction(r, 1 << k), rm, sticky=not exact)


def fp_fma(f: Fmt, a, b, c, rm, neg_prod=False, neg_c=False):
    """RISC-V fmadd family: (+-a*b) + (+-c) with one rounding."""
    if neg_c:
        c ^= f.sign
    psign = f.neg(a) != f.neg(b)
    if neg_prod:
        psign = not psign
    if f.is_nan(a) or f.is_nan(b):
        return f.cnan, (NV if any(f.is_snan(x) for x in (a, b, c)) else 0)
    if f.is_inf(a) or f.is_inf(b):
        if f.is_zero(a) or f.is_zero(b):
            return f.cnan, NV
        if f.is_nan(c):
            return f.cnan, (NV if f.is_snan(c) else 0)
        if f.is_inf(c) and f.neg(c) != psign:
            return f.cnan, NV
        return (f.sign if psign else 0) | f.expm, 0
    if f.is_nan(c):
        return f.cnan, (NV if f.is_snan(c) else 0)
    if f.is_inf(c):
        return c, 0
    p = f.value(a) * f.value(b)
    if neg_prod:
        p = -p
    s = p + f.value(c)
    zs = (psign and f.neg(c)) or (psign != f.neg(c) and rm == RDN)
    return f.round(s, rm, zero_sign=zs)


def _order_key(f: Fmt, a):
    mag = a & (f.sign - 1)
    return -mag - 1 if f.neg(a) else mag


def fp_minmax(f: Fmt, a, b, want_max):
    fl = NV if (f.is_snan(a) or f.is_snan(b)) else 0
    if f.is_nan(a) and f.is_nan(b):
        return f.cnan, fl
    if f.is_nan(a):
        return b, fl
    if f.is_nan(b):
        return a, fl
    a_le_b = _order_key(f, a) <= _order_key(f, b)
    return (a if a_le_b != want_max else b), fl


def fp_cmp(f: Fmt, a, b, op):
    """op in eq, lt, le -> (0/1, flags) with RISC-V signalling rules."""
    if f.is_nan(a) or f.is_nan(b):
        if op == "eq":
            return 0, (NV if f.is_snan(a) or f.is_snan(b) else 0)
        return 0, NV
    if f.is_zero(a) and f.is_zero(b):
        return (1 if op in ("eq", "le") else 0), 0
    va, vb = f.value(a), f.value(b)
    return int({"eq": va == vb, "lt": va < vb, "le": va <= vb}[op]), 0


def fp_class(f: Fmt, a):
    neg = f.neg(a)
    if f.is_inf(a):
        return 1 << (0 if neg else 7)
    if f.is_nan(a):
        return 1 << (8 if f.is_snan(a) else 9)
    if f.is_zero(a):
        return 1 << (3 if neg else 4)
    if (a & f.expm) == 0:
        return 1 << (2 if neg else 5)
    return 1 << (1 if neg else 6)


def fp_to_int(f: Fmt, a, rm, signed: bool, width: int = 32):
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if f.is_nan(a):
        return hi & ((1 << width) - 1), NV
    if f.is_inf(a):
        return (lo if f.neg(a) else hi) & ((1 << width) - 1), NV
    v = f.value(a)
    n = math.floor(v)
    frac = v - n
    if frac == 0:
        r = n
    elif rm == RTZ:
        r = math.trunc(v)
    elif rm == RDN:
        r = n
    elif rm == RUP:
        r = n + 1
    elif rm == RMM:
        r = math.floor(v + Fraction(1, 2)) if v > 0 else math.ceil(v - Fraction(1, 2))
    else:
        r = n + (frac > Fraction(1, 2) or (frac == Fraction(1, 2) and n & 1))
    if r < lo:
        return lo & ((1 << width) - 1), NV
    if r > hi:
        return hi & ((1 << width) - 1), NV
    return r & ((1 << width) - 1), (NX if frac else 0)


def fp_from_int(f: Fmt, v: int, rm):
    return f.round(Fraction(v), rm)


def fp_convert(src: Fmt, dst: Fmt, a, rm):
    if src.is_nan(a):
        return dst.cnan, (NV if src.is_snan(a) else 0)
    if src.is_inf(a):
        return (dst.sign if src.neg(a) else 0) | dst.expm, 0
    return dst.round(src.value(a), rm, zero_sign=src.neg(a))


# ---- NumPy views (the RNE cross-checks) ----
def np_f32(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def np_f16(bits):
    return np.array(bits, dtype=np.uint16).view(np.float16)


def np_bits32(arr) -> list[int]:
    a = np.asarray(arr, dtype=np.float32)
    b = a.view(np.uint32).copy()
    b[np.isnan(a)] = F32.cnan
    return [int(x) for x in b]


def np_bits16(arr) -> list[int]:
    a = np.asarray(arr, dtype=np.float16)
    b = a.view(np.uint16).copy()
    b[np.isnan(a)] = F16.cnan
    return [int(x) for x in b]


def canon32(v: int) -> int:
    return F32.cnan if F32.is_nan(v) else v


def canon16(v: int) -> int:
    return F16.cnan if F16.is_nan(v & 0xFFFF) else v & 0xFFFF


# ---- random inputs ----
SPECIAL32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000,
             0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
             0x3F800000, 0xBF800000, 0x3F800001, 0x3F7FFFFF, 0x40000000, 0x3F000000, 0x4B000000, 0x4B7FFFFF,
             0x4F000000, 0xCF000000, 0x4F800000, 0xCF000001, 0x3EFFFFFF, 0x3FC00000, 0x40200000, 0xBFC00000]
SPECIAL16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D00, 0x0001, 0x8001, 0x03FF, 0x83FF,
             0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3C01, 0x3BFF, 0x4000, 0x3800, 0x6400, 0x67FF,
             0x7800, 0x3E00, 0x4100, 0xBE00, 0x3555, 0x0200, 0x7A00, 0xC500]


def rand_fp(rng: random.Random, f: Fmt, special, emin_bias=0, spread=None) -> int:
    """A random encoding: specials, raw bit patterns, or values with exponent near the middle."""
    r = rng.random()
    if r < 0.12:
        return rng.choice(special)
    if r < 0.30:
        return rng.getrandbits(f.nbits)
    spread = spread if spread is not None else (6 if f is F16 else 20)
    e = f.bias + emin_bias + rng.randint(-spread, spread)
    e = min(max(e, 0), (1 << f.ew) - 2)
    m = rng.getrandbits(f.p - 1)
    if rng.random() < 0.25:  # few significant bits: exact results and ties
        m &= ~((1 << rng.randint(0, f.p - 2)) - 1)
    return (f.sign if rng.random() < 0.5 else 0) | (e << (f.p - 1)) | m


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f16_bits(x: float) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


# --------------------------------------------------------------------------------------------
# Table-driven value checks: one asm instruction (or short sequence) per op, many inputs each
# --------------------------------------------------------------------------------------------
class Op:
    """One checked operation.

    asm:    C expression for the asm template (a string literal or a pulp_isa.h macro call); %0 is
            the result, %1.. the inputs. With acc=True, %0 is read-write and starts at inputs[i][0].
    ref:    Python reference, ref(*inputs[i]) -> expected 32-bit result.
    covers: instruction ids (isa tables) this op checks.
    clobber: C clobber list text, e.g. '"t0", "memory"'.
    """

    def __init__(self, tag, asm, ref, inputs, acc=False, covers=(), clobber=""):
        self.tag, self.asm, self.ref, self.inputs = tag, asm, ref, [tuple(x) for x in inputs]
        self.acc, self.covers, self.clobber = acc, tuple(covers), clobber
        self.nin = len(self.inputs[0])

    @property
    def cname(self):
        return "op_" + "".join(c if c.isalnum() else "_" for c in self.tag)

    def c_code(self) -> str:
        n, k = len(self.inputs), self.nin
        flat = [v for row in self.inputs for v in row]
        out = [c_array(f"{self.cname}_in", flat)]
        out.append(f"static uint32_t {self.cname}_out[{n}];")
        out.append(f"static __attribute__((noinline)) void {self.cname}(void) {{")
        out.append(f"  for (int i = 0; i < {n}; i++) {{")
        out.append(f"    const uint32_t *x = &{self.cname}_in[i * {k}];")
        clob = f" : {self.clobber}" if self.clobber else ""
        if self.acc:
            ins = ", ".join(f'"r"(x[{j}])' for j in range(1, k))
            out.append(f"    uint32_t r = x[0];")
            out.append(f"    __asm__ volatile({self.asm} : \"+r\"(r) : {ins}{clob});")
        else:
            ins = ", ".join(f'"r"(x[{j}])' for j in range(k))
            out.append(f"    uint32_t r;")
            out.append(f"    __asm__ volatile({self.asm} : \"=&r\"(r) : {ins}{clob});")
        out.append(f"    {self.cname}_out[i] = r;\n  }}")
        out.append(f'  th_arr("{self.tag}", {self.cname}_out, {n});\n}}')
        return "\n".join(out)

    def expected(self):
        return [self.ref(*x) & 0xFFFFFFFF for x in self.inputs]


def ops_program(ops, prelude: str = "", main_pre: str = "", main_post: str = "") -> str:
    parts = ['#include "tharness.h"', prelude]
    parts += [op.c_code() for op in ops]
    parts.append("int main(void) {")
    parts.append(main_pre)
    parts += [f"  {op.cname}();" for op in ops]
    parts.append(main_post)
    parts.append("  return 0;\n}\n")
    return "\n".join(parts)


def check_ops(ops, out, fmt="{:08x}") -> list[str]:
    errs = []
    for op in ops:
        if op.tag not in out:
            errs.append(f"{op.tag}: no output")
            continue
        errs += mismatches(op.tag, out[op.tag], op.expected(), op.inputs, fmt=fmt)
    return errs
