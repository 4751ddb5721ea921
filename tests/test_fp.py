"""Bit-exact tests for platforms/pulpsim/fp.hpp (IEEE-754 binary32/binary16, RISC-V semantics).

The C++ driver tests/fp/fp_driver.cpp is compiled with ``g++ -O2 -std=c++17`` into a pytest
temporary directory.  It reads ``op rm a b c`` lines (hex) on stdin and prints ``result flags``
(hex).  Every result and every fflags value is compared with an exact reference written here
with ``fractions.Fraction`` (exact value, then correct rounding to the target format in each of
the five RISC-V rounding modes, with subnormals, overflow and after-rounding tininess).  For RNE
the results are additionally cross-checked against numpy's float16/float32 arithmetic.

Set FP_TEST_SEED to explore other random streams, FP_TEST_SCALE (float, default 1) to run
proportionally more or fewer random cases, and FP_TEST_CXXFLAGS to append compiler flags
(e.g. "-O3 -march=native -ffp-contract=fast").
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEADER = REPO / "platforms" / "pulpsim" / "fp.hpp"
DRIVER_SRC = REPO / "tests" / "fp" / "fp_driver.cpp"

pytestmark = pytest.mark.e2e   # builds the C++ driver with g++ and runs thousands of cases through it
SEED = int(os.environ.get("FP_TEST_SEED", "20240607"))
SCALE = float(os.environ.get("FP_TEST_SCALE", "1"))

RNE, RTZ, RDN, RUP, RMM = range(5)
RMS = (RNE, RTZ, RDN, RUP, RMM)
RM_NAMES = ("RNE", "RTZ", "RDN", "RUP", "RMM")
NV, DZ, OF, UF, NX = 0x10, 0x08, 0x04, 0x02, 0x01


# --------------------------------------------------------------------------------------------
# Exact reference
# --------------------------------------------------------------------------------------------
class Fmt:
    def __init__(self, name: str, p: int, ew: int):
        self.name, self.p, self.ew = name, p, ew
        self.bias = (1 << (ew - 1)) - 1
        self.emin, self.emax = 1 - self.bias, self.bias
        self.nbits = p + ew
        self.mask = (1 << self.nbits) - 1
        self.sign = 1 << (self.nbits - 1)
        self.expm = ((1 << ew) - 1) << (p - 1)
        self.fracm = (1 << (p - 1)) - 1
        self.qbit = 1 << (p - 2)
        self.cnan = self.expm | self.qbit
        self.inf = self.expm
        self.maxf = self.expm - 1
        self.minnorm = 1 << (p - 1)
        self.one = self.bias << (p - 1)

    def is_nan(self, a):
        return (a & (self.sign - 1)) > self.expm

    def is_snan(self, a):
        return self.is_nan(a) and not (a & self.qbit)

    def is_inf(self, a):
        return (a & (self.sign - 1)) == self.expm

    def is_zero(self, a):
        return (a & (self.sign - 1)) == 0

    def neg(self, a):
        return bool(a & self.sign)

    def efield(self, a):
        return (a >> (self.p - 1)) & ((1 << self.ew) - 1)

    def encode(self, sign, efield, frac):
        return (self.sign if sign else 0) | (efield << (self.p - 1)) | (frac & self.fracm)

    def value(self, a):
        """Exact value of a finite encoding."""
        return _value(self.p, self.ew, a)


@lru_cache(maxsize=1 << 16)
def _value(p, ew, a):
    bias = (1 << (ew - 1)) - 1
    e = (a >> (p - 1)) & ((1 << ew) - 1)
    m = a & ((1 << (p - 1)) - 1)
    if e == 0:
        k = 1 - bias - (p - 1)
    else:
        m |= 1 << (p - 1)
        k = e - bias - (p - 1)
    v = Fraction(m << k) if k >= 0 else Fraction(m, 1 << -k)
    return -v if (a >> (p + ew - 1)) & 1 else v


F32 = Fmt("f32", 24, 8)
F16 = Fmt("f16", 11, 5)


def _round_int(num, den, rm, neg):
    """Round num/den >= 0 to an integer for a value of sign `neg`: (int, inexact)."""
    q, r = divmod(num, den)
    if r == 0:
        return q, False
    if rm == RNE:
        up = 2 * r > den or (2 * r == den and q & 1)
    elif rm == RTZ:
        up = False
    elif rm == RDN:
        up = neg
    elif rm == RUP:
        up = not neg
    else:
        up = 2 * r >= den
    return q + (1 if up else 0), True


def _div_pow2(n, d, k):
    """(n/d) / 2^k as a (num, den) pair."""
    return (n, d << k) if k >= 0 else (n << -k, d)


def overflow_result(f, neg, rm):
    to_inf = rm in (RNE, RMM) or (rm == RUP and not neg) or (rm == RDN and neg)
    return (f.sign if neg else 0) | (f.inf if to_inf else f.maxf), OF | NX


def round_frac(f: Fmt, x: Fraction, rm: int):
    """Correctly round a non-zero rational to format f: (bits, flags)."""
    assert x != 0
    neg = x < 0
    ax = -x if neg else x
    n, d = ax.numerator, ax.denominator
    e = n.bit_length() - d.bit_length()  # floor(log2(ax)) is e or e-1
    nn, dd = _div_pow2(n, d, e)
    if nn < dd:
        e -= 1
    q = max(e, f.emin) - (f.p - 1)  # exponent of the last kept bit
    m, inexact = _round_int(*_div_pow2(n, d, q), rm, neg)
    tiny = False
    if e < f.emin:  # tininess after rounding, i.e. with an unbounded exponent range
        m2, _ = _round_int(*_div_pow2(n, d, e - (f.p - 1)), rm, neg)
        tiny = m2 < (1 << (f.emin - e + f.p - 1))  # m2 * 2^(e-p+1) < 2^emin
    if m == 1 << f.p:
        m >>= 1
        q += 1
    flags = (NX | (UF if tiny else 0)) if inexact else 0
    sbit = f.sign if neg else 0
    if m >= f.minnorm:
        if q + f.p - 1 > f.emax:
            return overflow_result(f, neg, rm)
        return sbit | ((q + f.p - 1 + f.bias) << (f.p - 1)) | (m - f.minnorm), flags
    assert q == f.emin - f.p + 1
    return sbit | m, flags


def round_sqrt(f: Fmt, x: Fraction, rm: int):
    """Correctly rounded sqrt of a positive dyadic rational."""
    n, d = x.numerator, x.denominator
    assert d & (d - 1) == 0
    k = -(d.bit_length() - 1)  # x = n * 2^k
    if k & 1:
        n <<= 1
        k -= 1
    s = max(0, (130 - n.bit_length()) // 2 + 1)
    big = n << (2 * s)
    r = math.isqrt(big)  # >= 65 bits >> p+2
    half_k = k // 2 - s
    if r * r == big:
        val = Fraction(r) * Fraction(2) ** half_k
    else:  # sqrt lies strictly inside (r, r+1): r + 1/2 rounds identically
        val = Fraction(2 * r + 1, 2) * Fraction(2) ** half_k
    return round_frac(f, val, rm)


def _nan(f, *snan_ops):
    return f.cnan, (NV if any(f.is_snan(v) for v in snan_ops) else 0)


def _zero_sum_sign(f, sa, sb, rm):
    return sa if sa == sb else (f.sign if rm == RDN else 0)


def r_add(f, rm, a, b):
    if f.is_nan(a) or f.is_nan(b):
        return _nan(f, a, b)
    if f.is_inf(a) and f.is_inf(b) and a != b:
        return f.cnan, NV
    if f.is_inf(a):
        return a, 0
    if f.is_inf(b):
        return b, 0
    s = f.value(a) + f.value(b)
    if s == 0:
        return _zero_sum_sign(f, a & f.sign, b & f.sign, rm), 0
    return round_frac(f, s, rm)


def r_sub(f, rm, a, b):
    return r_add(f, rm, a, b ^ f.sign)


def r_mul(f, rm, a, b):
    sign = (a ^ b) & f.sign
    if f.is_nan(a) or f.is_nan(b):
        return _nan(f, a, b)
    if f.is_inf(a) or f.is_inf(b):
        if f.is_zero(a) or f.is_zero(b):
            return f.cnan, NV
        return sign | f.inf, 0
    p = f.value(a) * f.value(b)
    if p == 0:
        return sign, 0
    return round_frac(f, p, rm)


def r_div(f, rm, a, b):
    sign = (a ^ b) & f.sign
    if f.is_nan(a) or f.is_nan(b):
        return _nan(f, a, b)
    if f.is_inf(a) and f.is_inf(b):
        return f.cnan, NV
    if f.is_inf(a):
        return sign | f.inf, 0
    if f.is_inf(b):
        return sign, 0
    if f.is_zero(b):
        return (f.cnan, NV) if f.is_zero(a) else (sign | f.inf, DZ)
    if f.is_zero(a):
        return sign, 0
    return round_frac(f, f.value(a) / f.value(b), rm)


def r_sqrt(f, rm, a):
    if f.is_nan(a):
        return _nan(f, a)
    if f.is_zero(a):
        return a, 0
    if f.neg(a):
        return f.cnan, NV
    if f.is_inf(a):
        return a, 0
    return round_sqrt(f, f.value(a), rm)


def r_fma(f, rm, a, b, c, neg_prod, neg_c):
    cc = c ^ f.sign if neg_c else c
    psign = ((a ^ b) & f.sign) ^ (f.sign if neg_prod else 0)
    if f.is_nan(a) or f.is_nan(b):
        return _nan(f, a, b, c)
    if f.is_inf(a) or f.is_inf(b):
        # inf*0 is invalid even when c is a quiet NaN (SoftFloat / Spike behaviour)
        if f.is_zero(a) or f.is_zero(b):
            return f.cnan, NV
        if f.is_nan(c):
            return _nan(f, c)
        if f.is_inf(c) and (cc & f.sign) != psign:
            return f.cnan, NV
        return psign | f.inf, 0
    if f.is_nan(c):
        return _nan(f, c)
    if f.is_inf(c):
        return cc, 0
    p = f.value(a) * f.value(b)
    if neg_prod:
        p = -p
    s = p + f.value(cc)
    if s == 0:
        return _zero_sum_sign(f, psign, cc & f.sign, rm), 0
    return round_frac(f, s, rm)


def r_avg(f, rm, a, b):
    if f.is_nan(a) or f.is_nan(b):
        return _nan(f, a, b)
    if f.is_inf(a) and f.is_inf(b) and a != b:
        return f.cnan, NV
    if f.is_inf(a):
        return a, 0
    if f.is_inf(b):
        return b, 0
    s = f.value(a) + f.value(b)
    if s == 0:
        return _zero_sum_sign(f, a & f.sign, b & f.sign, rm), 0
    return round_frac(f, s / 2, rm)


def _order_key(f, a):
    # -0 < +0; other values ordered by exact value
    return (f.value(a), 0 if f.neg(a) else 1)


def r_minmax(f, a, b, want_max):
    na, nb = f.is_nan(a), f.is_nan(b)
    if na or nb:
        fl = NV if (f.is_snan(a) or f.is_snan(b)) else 0
        if na and nb:
            return f.cnan, fl
        return (b if na else a), fl

    def key(v):
        if f.is_inf(v):
            return (Fraction(-1 if f.neg(v) else 1) * 10**60, 0)
        return _order_key(f, v)

    ka, kb = key(a), key(b)
    if want_max:
        return (a if ka >= kb else b), 0
    return (a if ka <= kb else b), 0


def _cmp_value(f, v):
    if f.is_inf(v):
        return Fraction(-1 if f.neg(v) else 1) * 10**60
    return f.value(v)


def r_eq(f, a, b):
    if f.is_nan(a) or f.is_nan(b):
        return 0, (NV if (f.is_snan(a) or f.is_snan(b)) else 0)
    return int(_cmp_value(f, a) == _cmp_value(f, b)), 0


def r_lt(f, a, b):
    if f.is_nan(a) or f.is_nan(b):
        return 0, NV
    return int(_cmp_value(f, a) < _cmp_value(f, b)), 0


def r_le(f, a, b):
    if f.is_nan(a) or f.is_nan(b):
        return 0, NV
    return int(_cmp_value(f, a) <= _cmp_value(f, b)), 0


def r_classify(f, a):
    neg = f.neg(a)
    if f.is_nan(a):
        return 1 << (9 if a & f.qbit else 8)
    if f.is_inf(a):
        return 1 << (0 if neg else 7)
    if f.is_zero(a):
        return 1 << (3 if neg else 4)
    if f.efield(a) == 0:
        return 1 << (2 if neg else 5)
    return 1 << (1 if neg else 6)


def _round_to_integer(x: Fraction, rm):
    if rm == RNE:
        return round(x)  # Fraction.__round__ is exact, ties to even
    if rm == RTZ:
        return math.trunc(x)
    if rm == RDN:
        return math.floor(x)
    if rm == RUP:
        return math.ceil(x)
    r = math.floor(abs(x) + Fraction(1, 2))
    return -r if x < 0 else r


def r_to_int(f, rm, a, lo, hi, width):
    m = (1 << width) - 1
    if f.is_nan(a):
        return hi & m, NV
    if f.is_inf(a):
        return (lo if f.neg(a) else hi) & m, NV
    x = f.value(a)
    r = _round_to_integer(x, rm)
    if r < lo:
        return lo & m, NV
    if r > hi:
        return hi & m, NV
    return r & m, (NX if r != x else 0)


def r_from_int(f, rm, v):
    if v == 0:
        return 0, 0
    return round_frac(f, Fraction(v), rm)


def _signed(v, width):
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def r_h_to_s(h):
    if F16.is_nan(h):
        return F32.cnan, (NV if F16.is_snan(h) else 0)
    if F16.is_inf(h):
        return (F32.sign if F16.neg(h) else 0) | F32.inf, 0
    if F16.is_zero(h):
        return (F32.sign if F16.neg(h) else 0), 0
    r, fl = round_frac(F32, F16.value(h), RNE)
    assert fl == 0
    return r, 0


def r_s_to_h(rm, s):
    if F32.is_nan(s):
        return F16.cnan, (NV if F32.is_snan(s) else 0)
    if F32.is_inf(s):
        return (F16.sign if F32.neg(s) else 0) | F16.inf, 0
    if F32.is_zero(s):
        return (F16.sign if F32.neg(s) else 0), 0
    return round_frac(F16, F32.value(s), rm)


# op name -> (reference(rm, a, b, c) -> (result, flags), rounding-mode dependent?)
def _ops():
    ops = {}
    for f, w in ((F32, "32"), (F16, "16")):
        ops["add" + w] = (lambda rm, a, b, c, f=f: r_add(f, rm, a, b), True)
        ops["sub" + w] = (lambda rm, a, b, c, f=f: r_sub(f, rm, a, b), True)
        ops["mul" + w] = (lambda rm, a, b, c, f=f: r_mul(f, rm, a, b), True)
        ops["div" + w] = (lambda rm, a, b, c, f=f: r_div(f, rm, a, b), True)
        ops["sqrt" + w] = (lambda rm, a, b, c, f=f: r_sqrt(f, rm, a), True)
        for nm, npd, nc in (("fmadd", 0, 0), ("fmsub", 0, 1), ("fnmsub", 1, 0), ("fnmadd", 1, 1)):
            ops[nm + w] = (lambda rm, a, b, c, f=f, npd=npd, nc=nc: r_fma(f, rm, a, b, c, npd, nc), True)
        s = f.sign
        ops["sgnj" + w] = (lambda rm, a, b, c, s=s: ((a & (s - 1)) | (b & s), 0), False)
        ops["sgnjn" + w] = (lambda rm, a, b, c, s=s: ((a & (s - 1)) | (~b & s), 0), False)
        ops["sgnjx" + w] = (lambda rm, a, b, c, s=s: (a ^ (b & s), 0), False)
        ops["min" + w] = (lambda rm, a, b, c, f=f: r_minmax(f, a, b, False), False)
        ops["max" + w] = (lambda rm, a, b, c, f=f: r_minmax(f, a, b, True), False)
        ops["eq" + w] = (lambda rm, a, b, c, f=f: r_eq(f, a, b), False)
        ops["lt" + w] = (lambda rm, a, b, c, f=f: r_lt(f, a, b), False)
        ops["le" + w] = (lambda rm, a, b, c, f=f: r_le(f, a, b), False)
        ops["classify" + w] = (lambda rm, a, b, c, f=f: (r_classify(f, a), 0), False)
        ops["to_i32_" + w] = (lambda rm, a, b, c, f=f: r_to_int(f, rm, a, -(1 << 31), (1 << 31) - 1, 32), True)
        ops["to_u32_" + w] = (lambda rm, a, b, c, f=f: r_to_int(f, rm, a, 0, (1 << 32) - 1, 32), True)
        ops["from_i32_" + w] = (lambda rm, a, b, c, f=f: r_from_int(f, rm, _signed(a, 32)), True)
        ops["from_u32_" + w] = (lambda rm, a, b, c, f=f: r_from_int(f, rm, a), True)
    ops["h_to_s"] = (lambda rm, a, b, c: r_h_to_s(a), False)
    ops["s_to_h"] = (lambda rm, a, b, c: r_s_to_h(rm, a), True)
    ops["to_i16_16"] = (lambda rm, a, b, c: r_to_int(F16, rm, a, -(1 << 15), (1 << 15) - 1, 16), True)
    ops["to_u16_16"] = (lambda rm, a, b, c: r_to_int(F16, rm, a, 0, (1 << 16) - 1, 16), True)
    ops["from_i16_16"] = (lambda rm, a, b, c: r_from_int(F16, rm, _signed(a, 16)), True)
    ops["from_u16_16"] = (lambda rm, a, b, c: r_from_int(F16, rm, a), True)
    ops["avg16"] = (lambda rm, a, b, c: r_avg(F16, rm, a, b), True)
    return ops


OPS = _ops()


# --------------------------------------------------------------------------------------------
# Operand generators
# --------------------------------------------------------------------------------------------
def specials(f: Fmt):
    p = f.p
    pos = [
        0,
        f.inf,
        f.cnan,
        f.cnan | 0x5,  # quiet NaN with payload
        f.expm | 1,  # signaling NaNs
        f.expm | (f.qbit >> 1),
        1,  # min subnormal
        2,
        f.fracm,  # max subnormal
        f.minnorm,  # min normal
        f.minnorm + 1,
        f.maxf,  # max normal
        f.maxf - 1,
        f.one,  # 1.0
        f.one + 1,  # 1 + ulp
        f.one - 1,  # 1 - ulp/2
        f.one + (1 << (p - 1)),  # 2.0
        f.one - (1 << (p - 1)),  # 0.5
        f.one | (1 << (p - 2)),  # 1.5
        f.one + (1 << (p - 1)) + (1 << (p - 2)),  # 3.0
        f.one | (f.fracm ^ 1),  # just below 2
    ]
    return pos + [v | f.sign for v in pos]


class Gen:
    def __init__(self, rng: random.Random, f: Fmt):
        self.r, self.f = rng, f
        self.specials = specials(f)

    def mant(self):
        r, f = self.r, self.f
        k = r.randrange(8)
        if k == 0:
            return 0
        if k == 1:
            return f.fracm
        if k == 2:  # few leading bits -> exact / halfway products and quotients
            return r.getrandbits(r.randrange(1, 5)) << (f.p - 5)
        if k == 3:  # few trailing bits
            return r.getrandbits(r.randrange(1, 5))
        if k == 4:
            return 1 << r.randrange(f.p - 1)
        if k == 5:
            return f.fracm ^ (1 << r.randrange(f.p - 1))
        return r.getrandbits(f.p - 1)

    def with_exp(self, e, sign=None):
        """Finite encoding with unbiased exponent e (clamped into the finite range)."""
        r, f = self.r, self.f
        sign = r.getrandbits(1) if sign is None else sign
        ef = e + f.bias
        if ef <= 0:  # subnormal region: keep the value's scale
            sh = 1 - ef
            m = (self.mant() | f.minnorm) >> sh if sh < f.p + 2 else 0
            return f.encode(sign, 0, m) if m else f.encode(sign, 0, r.randrange(1, 4))
        if ef >= (1 << f.ew) - 1:
            return f.encode(sign, (1 << f.ew) - 2, self.mant())
        return f.encode(sign, ef, self.mant())

    def exponent(self):
        f, r = self.f, self.r
        k = r.randrange(6)
        if k == 0:
            return r.randrange(f.emin - f.p, f.emin + 3)  # subnormal / boundary
        if k == 1:
            return r.randrange(f.emax - 3, f.emax + 1)
        if k == 2:
            return r.randrange(-3, 4)
        return r.randrange(f.emin - f.p + 1, f.emax + 1)

    def value(self):
        r, f = self.r, self.f
        k = r.randrange(20)
        if k < 2:
            return r.choice(self.specials)
        if k < 7:
            return r.getrandbits(f.nbits)
        return self.with_exp(self.exponent())

    def finite(self):
        v = self.value()
        while self.f.is_nan(v) or self.f.is_inf(v):
            v = self.value()
        return v

    def exp_of(self, a):
        f = self.f
        ef = f.efield(a)
        if ef == 0:
            m = a & f.fracm
            return f.emin - (f.p - m.bit_length()) if m else f.emin - f.p
        return ef - f.bias

    def near(self, a, spread=3):
        """a moved by a few ulps (same sign), staying finite."""
        f = self.f
        mag = (a & (f.sign - 1)) + self.r.randint(-spread, spread)
        mag = min(max(mag, 0), f.maxf)
        return (a & f.sign) | mag

    def rounded(self, x: Fraction):
        """x rounded to nearest in this format (finite, clamped)."""
        f = self.f
        if x == 0:
            return 0
        v, fl = round_frac(f, x, RNE)
        if f.is_inf(v):
            v = (v & f.sign) | f.maxf
        return v

    # ---- operand tuples per operation family ---------------------------------------------
    def pair_add(self):
        r, f = self.r, self.f
        k = r.randrange(8)
        if k < 3:
            return self.value(), self.value(), 0
        a = self.finite()
        ea = self.exp_of(a)
        if k == 3:  # close exponents
            return a, self.with_exp(ea + r.randint(-3, 3)), 0
        if k == 4:  # cancellation: b ~ -a
            return a, self.near(a ^ f.sign, 4), 0
        if k == 5:  # b around half an ulp of a (rounding boundaries)
            return a, self.with_exp(ea - f.p + r.randint(-1, 2)), 0
        if k == 6:  # b far below a (sticky only)
            return a, self.with_exp(ea - f.p - r.randint(2, 40)), 0
        # near overflow
        return self.with_exp(f.emax - r.randrange(2)), self.with_exp(f.emax - r.randrange(3)), 0

    def near_minnorm(self):
        """A target value within a few subnormal ulps of the smallest normal number."""
        f, r = self.f, self.r
        if r.randrange(3):  # mostly within half an ulp below it: tiny before, not after rounding
            return f.value(f.minnorm) - f.value(1) * Fraction(r.randint(0, 32), 64)
        return f.value(f.minnorm) + f.value(1) * Fraction(r.randint(-8, 8), 1 << r.randint(0, 4))

    def pair_mul(self):
        r, f = self.r, self.f
        k = r.randrange(7)
        if k < 2:
            return self.value(), self.value(), 0
        if k == 6:  # product right at the tininess boundary (after-rounding detection)
            a = self.with_exp(r.randint(-f.p, f.p))
            b = self.rounded(self.near_minnorm() / f.value(a)) if not f.is_zero(a) else 1
            return a, self.near(b, r.choice((0, 0, 1))), 0
        if k == 2:  # product near the overflow threshold
            ea = r.randint(f.emin, f.emax)
            return self.with_exp(ea), self.with_exp(f.emax - ea + r.randint(-1, 1)), 0
        if k == 3:  # product near / in the subnormal range
            ea = r.randint(f.emin - f.p + 1, f.emax)
            return self.with_exp(ea), self.with_exp(f.emin - ea - r.randint(-1, f.p + 1)), 0
        return self.with_exp(self.exponent()), self.with_exp(r.randint(-4, 4)), 0

    def pair_div(self):
        r, f = self.r, self.f
        k = r.randrange(7)
        if k < 2:
            return self.value(), self.value(), 0
        b = self.finite()
        if k == 2:  # a ~ b*q with a short q: exact and near-exact quotients
            q = Fraction(r.randint(1, 64), 1 << r.randint(0, 8)) * r.choice((1, -1))
            a = self.rounded(f.value(b) * q) if not f.is_zero(b) else self.finite()
            return self.near(a, r.choice((0, 0, 1, 2))), b, 0
        if k == 4 and not f.is_zero(b):  # quotient at the tininess boundary
            return self.near(self.rounded(self.near_minnorm() * f.value(b)), r.choice((0, 1))), b, 0
        if k == 3:  # quotient near overflow / underflow
            eb = self.exp_of(b)
            tgt = r.choice((f.emax, f.emin, f.emin - f.p // 2, f.emin - f.p))
            return self.with_exp(eb + tgt + r.randint(-1, 1)), b, 0
        return self.finite(), b, 0

    def one_sqrt(self):
        r, f = self.r, self.f
        k = r.randrange(4)
        if k < 2:
            return self.value(), 0, 0
        s = self.finite() & (f.sign - 1)
        a = self.rounded(f.value(s) ** 2)
        return self.near(a, r.choice((0, 1, 2))), 0, 0

    def triple_fma(self):
        r, f = self.r, self.f
        k = r.randrange(10)
        if k < 2:
            return self.value(), self.value(), self.value()
        if k == 2:  # specials everywhere
            return r.choice(self.specials), r.choice(self.specials), r.choice(self.specials)
        a, b, _ = self.pair_mul()
        while f.is_nan(a) or f.is_inf(a) or f.is_nan(b) or f.is_inf(b):
            a, b, _ = self.pair_mul()
        prod = f.value(a) * f.value(b)
        if k < 6:  # c ~ -(a*b): massive cancellation, exact zeros
            c = self.near(self.rounded(-prod), r.choice((0, 0, 1, 3)))
            return a, b, c ^ (f.sign * r.getrandbits(1))
        if k == 6:  # a*b + c right at the tininess boundary
            a = self.with_exp(r.randint(-f.p, f.p))
            b = self.rounded(self.near_minnorm() / f.value(a)) if not f.is_zero(a) else 1
            b = self.near(b, r.choice((0, 1)))
            c = r.choice((0, f.sign, 1, 1 | f.sign, r.randrange(1, 8) | (f.sign * r.getrandbits(1))))
            return a, b, c
        if k < 8:  # c near half an ulp of the product: rounding boundaries
            if prod == 0:
                return a, b, self.value()
            ep = math.floor(math.log2(abs(prod))) if abs(prod) > 0 else 0
            return a, b, self.with_exp(ep - f.p + r.randint(-2, 2))
        return a, b, self.value()

    def one_to_int(self, bound_bits):
        r, f = self.r, self.f
        k = r.randrange(5)
        if k < 2:
            return self.value(), 0, 0
        if k == 2:  # near the saturation boundaries
            x = Fraction(r.choice((1, -1)) * (1 << r.choice(bound_bits)) + r.randint(-3, 3))
            x += Fraction(r.randint(-4, 4), 4)
            return self.near(self.rounded(x), r.choice((0, 1))), 0, 0
        # small values with fractions near .5
        x = Fraction(r.randint(-40, 40), 2) + Fraction(r.randint(-2, 2), 1 << r.randint(2, 12))
        return self.near(self.rounded(x) if x else 0, r.choice((0, 0, 1))), 0, 0

    def pair_cmp(self):
        r, f = self.r, self.f
        k = r.randrange(4)
        if k == 0:
            return r.choice(self.specials), r.choice(self.specials), 0
        a = self.value()
        if k == 1:
            return a, a, 0
        if k == 2 and not f.is_nan(a):
            return a, self.near(a, 2) ^ (f.sign * (r.randrange(4) == 0)), 0
        return a, self.value(), 0


def gen_int(r: random.Random, width):
    k = r.randrange(4)
    if k == 0:
        v = r.getrandbits(width)
    elif k == 1:
        v = r.getrandbits(r.randint(1, width))
    elif k == 2:  # around powers of two / rounding points
        v = (1 << r.randrange(width)) + r.randint(-3, 3)
    else:  # around the binary16 overflow threshold 65520 and max 65504
        v = r.choice((65504, 65520, 65536, 2048, 4096, 1 << 24)) + r.randint(-20, 20)
    if r.getrandbits(1):
        v = -v
    return v & ((1 << width) - 1)


def gen_s_to_h(r: random.Random, g32: Gen):
    k = r.randrange(5)
    if k == 0:
        return g32.value()
    e = r.randint(F16.emin - F16.p - 2, F16.emax + 1)
    sign = r.getrandbits(1)
    ef = e + F32.bias
    hi = r.getrandbits(10)
    lo = r.choice((0, 1 << 12, (1 << 12) + 1, (1 << 12) - 1, r.getrandbits(13), 1, (1 << 13) - 1))
    return F32.encode(sign, ef, (hi << 13) | lo)


def build_cases(rng: random.Random):
    """List of (op, rm, a, b, c)."""
    g32, g16 = Gen(rng, F32), Gen(rng, F16)
    cases = []

    def n(base):
        return max(1, int(base * SCALE))

    def add(op, rm_dep, fn, count):
        rms = RMS if rm_dep else (RNE,)
        for rm in rms:
            for _ in range(count):
                a, b, c = fn()
                cases.append((op, rm, a, b, c))

    for w, g in (("32", g32), ("16", g16)):
        f = g.f
        sp = g.specials
        # exhaustive special x special for the binary ops
        for op in ("add", "sub", "mul", "div", "min", "max", "eq", "lt", "le", "sgnj", "sgnjn", "sgnjx"):
            rms = RMS if OPS[op + w][1] else (RNE,)
            for rm in rms:
                cases += [(op + w, rm, a, b, 0) for a in sp for b in sp]
        for op in ("sqrt", "classify", "to_i32_", "to_u32_"):
            name = op + w
            rms = RMS if OPS[name][1] else (RNE,)
            for rm in rms:
                cases += [(name, rm, a, 0, 0) for a in sp]
        # special triples for fma: a deterministic 1-in-7 sample of a reduced special set
        sp_small = [v for v in sp if not (f.is_nan(v) and v & 0xF)][::2] + [0, f.sign]
        for op in ("fmadd", "fmsub", "fnmsub", "fnmadd"):
            for rm in RMS:
                cases += [(op + w, rm, a, b, c) for a in sp_small for b in sp_small for c in sp_small][::7]
        N = 3200 if w == "32" else 2400
        add("add" + w, True, g.pair_add, n(N))
        add("sub" + w, True, g.pair_add, n(N // 2))
        add("mul" + w, True, g.pair_mul, n(N))
        add("div" + w, True, g.pair_div, n(N))
        add("sqrt" + w, True, g.one_sqrt, n(N))
        for op in ("fmadd", "fmsub", "fnmsub", "fnmadd"):
            add(op + w, True, g.triple_fma, n(N // 2))
        for op in ("min", "max", "eq", "lt", "le"):
            add(op + w, False, g.pair_cmp, n(1500))
        for op in ("sgnj", "sgnjn", "sgnjx"):
            add(op + w, False, lambda g=g: (g.value(), g.value(), 0), n(300))
        add("classify" + w, False, lambda g=g: (g.value(), 0, 0), n(1000))
        add("to_i32_" + w, True, lambda g=g: g.one_to_int((31, 30, 15)), n(1000))
        add("to_u32_" + w, True, lambda g=g: g.one_to_int((32, 31, 0)), n(1000))
        add("from_i32_" + w, True, lambda: (gen_int(rng, 32), 0, 0), n(1000))
        add("from_u32_" + w, True, lambda: (gen_int(rng, 32), 0, 0), n(1000))

    # binary16-only operations
    add("to_i16_16", True, lambda: g16.one_to_int((15, 14, 3)), n(1000))
    add("to_u16_16", True, lambda: g16.one_to_int((16, 15, 0)), n(1000))
    add("from_i16_16", True, lambda: (gen_int(rng, 16), 0, 0), n(1000))
    add("from_u16_16", True, lambda: (gen_int(rng, 16), 0, 0), n(1000))
    add("avg16", True, g16.pair_add, n(1200))
    for rm in RMS:
        cases += [("avg16", rm, a, b, 0) for a in g16.specials for b in g16.specials]
    add("s_to_h", True, lambda: (gen_s_to_h(rng, g32), 0, 0), n(3000))
    for rm in RMS:
        cases += [("s_to_h", rm, a, 0, 0) for a in g32.specials]
    # h_to_s is cheap and rounding-free: exhaustive over all 65536 encodings
    cases += [("h_to_s", RNE, h, 0, 0) for h in range(1 << 16)]
    # sqrt16 exhaustive over all positive finite encodings, every rounding mode
    for rm in RMS:
        cases += [("sqrt16", rm, h, 0, 0) for h in range(0, 0x7C00)]
    return cases


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------
def _host_has_f16c() -> bool:
    try:
        return any(line.startswith("flags") and " f16c" in line for line in open("/proc/cpuinfo"))
    except OSError:
        return False


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found on PATH: cannot build tests/fp/fp_driver.cpp for the fp.hpp tests")
    assert HEADER.is_file() and DRIVER_SRC.is_file(), f"missing {HEADER} or {DRIVER_SRC}"
    out = tmp_path_factory.mktemp("fp") / "fp_driver"
    extra = os.environ.get("FP_TEST_CXXFLAGS", "").split()
    # as the simulator is built (CMakeLists.txt): with F16C where the host has it, whose paths are checked here
    f16c = ["-mf16c"] if _host_has_f16c() else []
    cmd = [gxx, "-O2", "-std=c++17", "-Wall", "-Wextra", *f16c, *extra, "-o", str(out), str(DRIVER_SRC)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"compiling fp_driver failed:\n{' '.join(cmd)}\n{proc.stderr}"
    return out, proc.stderr


def test_driver_builds_without_warnings(driver):
    _, warnings = driver
    assert not warnings.strip(), f"g++ -Wall -Wextra warnings for fp.hpp / fp_driver.cpp:\n{warnings}"


def run_driver(exe, cases):
    text = "".join(f"{op} {rm:x} {a:x} {b:x} {c:x}\n" for op, rm, a, b, c in cases)
    proc = subprocess.run([str(exe)], input=text, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"fp_driver failed (rc={proc.returncode}):\n{proc.stderr}"
    lines = proc.stdout.split("\n")[:-1]
    assert len(lines) == len(cases), f"fp_driver printed {len(lines)} lines for {len(cases)} inputs"
    out = []
    for ln in lines:
        r, fl = ln.split()
        out.append((int(r, 16), int(fl, 16)))
    return out


@pytest.fixture(scope="module")
def results(driver):
    cases = build_cases(random.Random(SEED))
    got = run_driver(driver[0], cases)
    by_op = {}
    for case, g in zip(cases, got):
        by_op.setdefault(case[0], []).append((case, g))
    return by_op


def _fmt_case(case, got, want):
    op, rm, a, b, c = case
    return (
        f"  {op} rm={RM_NAMES[rm]} a={a:#x} b={b:#x} c={c:#x}: "
        f"got {got[0]:#x} flags {got[1]:#04x}, want {want[0]:#x} flags {want[1]:#04x}"
    )


def _check(items):
    bad = []
    for case, got in items:
        op, rm, a, b, c = case
        want = OPS[op][0](rm, a, b, c)
        if tuple(got) != tuple(want):
            bad.append(_fmt_case(case, got, want))
    return bad


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------
def test_reference_selfcheck():
    """Sanity of the Python reference itself on hand-computed cases."""
    one32, one16 = F32.one, F16.one
    assert r_add(F32, RNE, one32, one32) == (0x40000000, 0)
    assert r_div(F32, RNE, one32, 0x40400000) == (0x3EAAAAAB, NX)
    assert r_div(F32, RTZ, one32, 0x40400000) == (0x3EAAAAAA, NX)
    assert r_sqrt(F32, RNE, 0x40000000) == (0x3FB504F3, NX)
    assert r_mul(F32, RNE, F32.maxf, 0x40000000) == (F32.inf, OF | NX)
    assert r_mul(F32, RTZ, F32.maxf, 0x40000000) == (F32.maxf, OF | NX)
    assert r_mul(F32, RNE, 1, 0x3F000000) == (0, UF | NX)  # min_sub/2 ties to even 0
    assert r_mul(F32, RUP, 1, 0x3F000000) == (1, UF | NX)
    # after-rounding tininess: (minnorm - half ulp) rounds up to minnorm in RNE -> not tiny
    x = F32.value(F32.minnorm) - F32.value(1) / 4
    assert round_frac(F32, x, RNE) == (F32.minnorm, NX)
    assert round_frac(F32, x, RTZ) == (F32.minnorm - 1, NX | UF)
    assert r_add(F16, RDN, one16, one16 | F16.sign) == (F16.sign, 0)
    assert r_add(F16, RNE, one16, one16 | F16.sign) == (0, 0)
    assert r_h_to_s(0x0001) == (0x33800000, 0)
    assert r_s_to_h(RNE, 0x477FF000) == (0x7C00, OF | NX)  # 65520 -> inf
    assert r_s_to_h(RNE, 0x477FEFFF) == (0x7BFF, NX)
    assert r_to_int(F32, RNE, 0x3FC00000, -(2**31), 2**31 - 1, 32) == (2, NX)  # 1.5 -> 2
    assert r_to_int(F32, RNE, 0x40200000, -(2**31), 2**31 - 1, 32) == (2, NX)  # 2.5 -> 2
    assert r_to_int(F32, RTZ, 0xBF000000, 0, 2**32 - 1, 32) == (0, NX)  # -0.5 -> 0
    assert r_to_int(F32, RDN, 0xBF000000, 0, 2**32 - 1, 32) == (0, NV)  # -0.5 -> -1 -> invalid
    assert r_fma(F16, RNE, F16.inf, 0, F16.cnan, 0, 0) == (F16.cnan, NV)


OP_GROUPS = {
    "add_sub": ["add32", "sub32", "add16", "sub16"],
    "mul": ["mul32", "mul16"],
    "div": ["div32", "div16"],
    "sqrt": ["sqrt32", "sqrt16"],
    "fma32": ["fmadd32", "fmsub32", "fnmsub32", "fnmadd32"],
    "fma16": ["fmadd16", "fmsub16", "fnmsub16", "fnmadd16"],
    "minmax_cmp": ["min32", "max32", "eq32", "lt32", "le32", "min16", "max16", "eq16", "lt16", "le16"],
    "sgnj_classify": ["sgnj32", "sgnjn32", "sgnjx32", "classify32", "sgnj16", "sgnjn16", "sgnjx16", "classify16"],
    "float_to_int": ["to_i32_32", "to_u32_32", "to_i32_16", "to_u32_16", "to_i16_16", "to_u16_16"],
    "int_to_float": ["from_i32_32", "from_u32_32", "from_i32_16", "from_u32_16", "from_i16_16", "from_u16_16"],
    "h_s_conversions": ["h_to_s", "s_to_h"],
    "avg16": ["avg16"],
}


def test_groups_cover_all_ops():
    grouped = [op for ops in OP_GROUPS.values() for op in ops]
    assert sorted(grouped) == sorted(OPS), "every op must be exercised by exactly one group"


@pytest.mark.parametrize("group", sorted(OP_GROUPS))
def test_bit_exact_vs_fraction_reference(results, group):
    report, total = [], 0
    for op in OP_GROUPS[group]:
        items = results.get(op, [])
        assert items, f"no cases generated for {op}"
        total += len(items)
        bad = _check(items)
        if bad:
            report.append(f"{op}: {len(bad)} of {len(items)} cases mismatch, e.g.\n" + "\n".join(bad[:6]))
    assert not report, f"fp.hpp disagrees with the exact reference ({group}, {total} cases):\n" + "\n".join(report)


def test_flag_coverage(results):
    """The generators must actually reach the interesting rounding situations."""
    need = {
        # (sums and square roots can never be tiny and inexact at the same time)
        "add32": (NX, OF, NV), "add16": (NX, OF, NV), "mul32": (NX, UF, OF, NV),
        "mul16": (NX, UF, OF, NV), "div32": (NX, UF, OF, NV, DZ), "div16": (NX, UF, OF, NV, DZ),
        "sqrt32": (NX, NV), "sqrt16": (NX, NV), "fmadd32": (NX, UF, OF, NV),
        "fmadd16": (NX, UF, OF, NV), "s_to_h": (NX, UF, OF, NV), "avg16": (NX, UF, NV),
        "from_i32_16": (NX, OF), "to_i32_32": (NX, NV), "to_u16_16": (NX, NV),
    }
    missing = []
    for op, flags in need.items():
        seen = 0
        for case, got in results[op]:
            seen |= got[1]
        for fl in flags:
            if not seen & fl:
                missing.append(f"{op} never raised {fl:#x}")
    assert not missing, "\n".join(missing)


# numpy cross-check (RNE only) --------------------------------------------------------------
def test_rne_matches_numpy(results):
    np = pytest.importorskip("numpy")
    problems = []
    checked = 0

    def compare(op, items, np_fn, dtype, utype, nargs):
        nonlocal checked
        items = [(c, g) for c, g in items if c[1] == RNE]
        if not items:
            return
        args = [np.array([c[2 + i] for c, _ in items], dtype=utype).view(dtype) for i in range(nargs)]
        with np.errstate(all="ignore"):
            ref = np.asarray(np_fn(*args))
        if ref.dtype == np.bool_:
            ref_bits = ref.astype(np.uint32)
            is_nan = np.zeros(len(items), dtype=bool)
        else:
            is_nan = np.isnan(ref)
            ref_bits = ref.view(np.uint16 if ref.dtype == np.float16 else np.uint32)
        cnan = F16.cnan if ref.dtype == np.float16 else F32.cnan
        bad = []
        for (case, got), rb, nan in zip(items, ref_bits.tolist(), is_nan.tolist()):
            ok = (got[0] == cnan) if nan else (got[0] == rb)
            if not ok:
                bad.append(f"  {op} a={case[2]:#x} b={case[3]:#x}: got {got[0]:#x}, numpy {'NaN' if nan else hex(rb)}")
        checked += len(items)
        if bad:
            problems.append(f"{op}: {len(bad)} of {len(items)} differ from numpy, e.g.\n" + "\n".join(bad[:6]))

    for w, dt, ut in (("32", np.float32, np.uint32), ("16", np.float16, np.uint16)):
        compare("add" + w, results["add" + w], np.add, dt, ut, 2)
        compare("sub" + w, results["sub" + w], np.subtract, dt, ut, 2)
        compare("mul" + w, results["mul" + w], np.multiply, dt, ut, 2)
        compare("div" + w, results["div" + w], np.divide, dt, ut, 2)
        compare("sqrt" + w, results["sqrt" + w], np.sqrt, dt, ut, 1)
        compare("eq" + w, results["eq" + w], np.equal, dt, ut, 2)
        compare("lt" + w, results["lt" + w], np.less, dt, ut, 2)
        compare("le" + w, results["le" + w], np.less_equal, dt, ut, 2)
    compare("h_to_s", results["h_to_s"], lambda x: x.astype(np.float32), np.float16, np.uint16, 1)
    compare("s_to_h", results["s_to_h"], lambda x: x.astype(np.float16), np.float32, np.uint32, 1)
    compare(
        "avg16",
        results["avg16"],
        lambda x, y: ((x.astype(np.float64) + y.astype(np.float64)) / 2).astype(np.float16),
        np.float16,
        np.uint16,
        2,
    )
    assert checked > 10000
    assert not problems, "fp.hpp disagrees with numpy (RNE):\n" + "\n".join(problems)
