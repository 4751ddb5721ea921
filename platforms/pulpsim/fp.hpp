// fp.hpp -- bit-exact IEEE-754 binary32 / binary16 arithmetic for the RISC-V
// (F / Zfh / Xfvec-style SIMD fp16) instruction-set simulator.  Header-only, C++17.
//
// All floating-point values are raw bit patterns: uint32_t = binary32, uint16_t =
// binary16.  `rm` is an already-resolved RISC-V rounding mode
//   0=RNE 1=RTZ 2=RDN 3=RUP 4=RMM   (5..7 never arrive; anything else acts as RNE)
// `fl` accumulates RISC-V fflags bits (NV=0x10 DZ=0x08 OF=0x04 UF=0x02 NX=0x01); the
// functions only ever OR bits into it.
//
// RISC-V semantics implemented:
//   * every NaN produced by an arithmetic / conversion op is the canonical quiet NaN
//     (0x7fc00000 / 0x7e00); sign injection is non-arithmetic and keeps payloads;
//   * tininess is detected after rounding; UF is raised only for tiny AND inexact
//     results; subnormals are fully supported (no flush-to-zero);
//   * overflow honours the rounding mode (RTZ/RDN/RUP can give the max finite value);
//   * fma(0, inf, qNaN) raises NV (Berkeley SoftFloat / Spike behaviour);
//   * min/max follow RISC-V 2.2+ (IEEE 754-2019 minimumNumber/maximumNumber);
//   * float->int conversions saturate (NaN -> max positive), NV on out-of-range/NaN/inf
//     only, NX only for in-range inexact results (same for the int16/uint16 SIMD lanes).
//
// API (namespace fp; F = binary32 "32" or binary16 "16"; fp16 values are uint16_t):
//   addF subF mulF divF (a, b, rm, fl)      sqrtF (a, rm, fl)
//   fmaF (a, b, c, neg_prod, neg_c, rm, fl)  = (+-a*b) + (+-c), one rounding
//   sgnjF sgnjnF sgnjxF (a, b)               minF maxF (a, b, fl)
//   eqF ltF leF (a, b, fl) -> 0/1            classifyF (a) -> fclass mask
//   to_i32_F to_u32_F (a, rm, fl)            from_i32_F from_u32_F (uint32_t v, rm, fl)
//   h_to_s (h, fl)   s_to_h (s, rm, fl)      avg16 (a, b, rm, fl) = (a+b)/2, one rounding
//   to_i16_16 to_u16_16 (a, rm, fl)          from_i16_16 from_u16_16 (uint16_t v, rm, fl)
//
// Implementation: no host rounding-mode changes and no host exception flags.  Each
// operation builds the exact result, or its binary64 round-to-odd approximation,
// using default-rounding double arithmetic plus error-free transforms:
//   * the product of two binary32 (or binary16) values is exact in binary64;
//   * sums use TwoSum to obtain the exact error term;
//   * quotient / square-root directions come from the sign of the fma() residual.
// A round-to-odd double has 53 >= p+2 significant bits, so rounding it once more to
// the target (p = 24 or 11, including the subnormal range) with the hand-written
// `round_pack` is correctly rounded in every rounding mode, including the tininess
// decision.  All intermediates stay inside the binary64 normal range (no double
// overflow/underflow), which is what makes the transforms exact.
//
// Requirements: strict IEEE binary64 evaluation (SSE2 / AArch64 / RISC-V host; not
// x87 excess precision, not -ffast-math).  FP contraction (-ffp-contract=fast with
// -mfma) is harmless: the only products that could be contracted are exact.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#ifdef __F16C__
#include <immintrin.h>
#endif

#if defined(__FAST_MATH__)
#error "fp.hpp needs strict IEEE-754 binary64 arithmetic; do not compile it with -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "fp.hpp needs FLT_EVAL_METHOD == 0 (no excess precision, e.g. x87); use SSE2 double arithmetic"
#endif

namespace fp {

enum : uint32_t { NV = 0x10, DZ = 0x08, OF = 0x04, UF = 0x02, NX = 0x01 };
enum : int { RNE = 0, RTZ = 1, RDN = 2, RUP = 3, RMM = 4 };

namespace detail {

static inline uint64_t d2u(double d) { uint64_t u; std::memcpy(&u, &d, sizeof u); return u; }
static inline double u2d(uint64_t u) { double d; std::memcpy(&d, &u, sizeof d); return d; }

// Format descriptors.  All masks are uint32_t so binary16 code never mixes in `int`.
struct F32 {
    using T = uint32_t;
    static constexpr int P = 24, EW = 8, BIAS = 127, EMIN = -126, EMAX = 127;
    static constexpr uint32_t SIGN = 0x80000000u, EXPM = 0x7f800000u, FRACM = 0x007fffffu,
                              QBIT = 0x00400000u, CNAN = 0x7fc00000u, MAXF = 0x7f7fffffu;
    static constexpr double SUBSCALE = 0x1p-149;   // value of one subnormal ulp
    static constexpr bool ADD_EXACT = false;       // x+y of two values not always exact in double
};
struct F16 {
    using T = uint16_t;
    static constexpr int P = 11, EW = 5, BIAS = 15, EMIN = -14, EMAX = 15;
    static constexpr uint32_t SIGN = 0x8000u, EXPM = 0x7c00u, FRACM = 0x03ffu,
                              QBIT = 0x0200u, CNAN = 0x7e00u, MAXF = 0x7bffu;
    static constexpr double SUBSCALE = 0x1p-24;
    static constexpr bool ADD_EXACT = true;        // 2^-24 .. 2^17 spans only 41 bits
};

template <class F> static inline bool is_nan(uint32_t a) { return (a & ~F::SIGN) > F::EXPM; }
template <class F> static inline bool is_snan(uint32_t a) { return is_nan<F>(a) && !(a & F::QBIT); }
template <class F> static inline bool is_inf(uint32_t a) { return (a & ~F::SIGN) == F::EXPM; }
template <class F> static inline bool is_zero(uint32_t a) { return (a & ~F::SIGN) == 0; }
template <class F> static inline bool is_special(uint32_t a) { return (a & F::EXPM) == F::EXPM; }

// Exact value of a finite encoding as a (normal or zero) double.  Built from bits so
// that host DAZ/FTZ modes can never interfere.
template <class F> static inline double to_double(uint32_t a) {
    const uint32_t e = (a >> (F::P - 1)) & ((1u << F::EW) - 1);
    const uint32_t m = a & F::FRACM;
    const uint64_t s = (uint64_t)((a & F::SIGN) != 0) << 63;
    if (e == 0) {
        const double v = (double)m * F::SUBSCALE;   // exact: m < 2^23, result normal
        return s ? -v : v;
    }
    return u2d(s | ((uint64_t)(e + (1023 - F::BIAS)) << 52) | ((uint64_t)m << (53 - F::P)));
}

// Round-to-odd fix-up: `s` is the round-to-nearest double of an exact value v;
// `inexact` says v != s; `up` says |v| > |s|.  Returns RO(v).
// Written without data-dependent branches: inexactness and the rounding direction are
// essentially random in real workloads, so branches here would be mispredicted.
static inline double round_odd(double s, bool inexact, bool up) {
    const uint64_t u = d2u(s);
    const uint64_t step = (uint64_t)(inexact & !(u & 1));   // even and inexact: move to
    const uint64_t down = (uint64_t)0 - (uint64_t)!up;       // the odd neighbour on v's side
    return u2d(u + ((step ^ down) - down));                  // (+step or -step)
}

// Whether to increment the magnitude of the truncated significand `kept`
// (`rem` = discarded bits, `half` = weight of the first discarded bit).
static inline uint64_t round_inc(uint64_t kept, uint64_t rem, uint64_t half, int rm, bool neg) {
    const bool inexact = rem != 0;
    switch (rm) {
    case RTZ: return 0;
    case RDN: return inexact & neg;
    case RUP: return inexact & !neg;
    case RMM: return rem >= half;
    default:  return (rem > half) | ((rem == half) & (bool)(kept & 1));
    }
}

template <class F> static inline uint32_t overflow_result(bool neg, int rm, uint32_t& fl) {
    fl |= OF | NX;
    const bool to_inf = rm == RNE || rm == RMM || (rm == RUP && !neg) || (rm == RDN && neg);
    return (neg ? F::SIGN : 0u) | (to_inf ? F::EXPM : F::MAXF);
}

// Round a finite double (exact value or a round-to-odd approximation of it) to format F.
template <class F> static inline uint32_t round_pack(double x, int rm, uint32_t& fl) {
    if constexpr (std::is_same_v<F, F32>) {
        // The usual case, binary32 results in the normal range under RNE: the host's conversion
        // rounds to nearest even exactly as the code below (input and output are normal numbers, so
        // no host flush-to-zero mode can touch them); a result that overflows takes the long way.
        const double ax = std::fabs(x);
        if (rm == RNE && ax >= 0x1p-126 && ax < 0x1p128) {
            const float f = (float)x;
            if (std::fabs(f) <= FLT_MAX) {
                fl |= (uint32_t)((double)f != x) * NX;
                uint32_t r;
                std::memcpy(&r, &f, sizeof r);
                return r;
            }
        }
    }
    if constexpr (std::is_same_v<F, F16>) {
        // The usual case for binary16, a normal result under RNE, rounded on the double's bits: the
        // exponent and the kept fraction bits are one field, so adding half an ulp (less one, plus the
        // kept lowest bit: ties to even) carries into the exponent as a rounding up must. A result that
        // overflows takes the long way.
        const uint64_t mag = d2u(x) & ~(1ull << 63);
        constexpr int DROP = 53 - F::P;
        if (rm == RNE && mag >= (uint64_t)(1023 + F::EMIN) << 52 && mag < (uint64_t)(1023 + F::EMAX + 1) << 52) {
            const uint64_t r = ((mag + (1ull << (DROP - 1)) - 1 + ((mag >> DROP) & 1)) >> DROP) -
                               ((uint64_t)(1023 - F::BIAS) << (F::P - 1));
            if (r < F::EXPM) {
                fl |= (uint32_t)((mag & ((1ull << DROP) - 1)) != 0) * NX;
                return (std::signbit(x) ? F::SIGN : 0u) | (uint32_t)r;
            }
        }
    }
    const uint64_t u = d2u(x);
    const bool neg = (u >> 63) != 0;
    const uint32_t sbit = neg ? F::SIGN : 0u;
    int E = (int)((u >> 52) & 0x7ff);
    if (E == 0) return sbit;                  // +-0 (double subnormals never occur here)
    E -= 1023;
    if (E > F::EMAX) return overflow_result<F>(neg, rm, fl);
    const uint64_t m = (u & ((1ull << 52) - 1)) | (1ull << 52);
    int shift = 53 - F::P;
    bool tiny = false;
    if (E < F::EMIN) {
        // Tininess after rounding: tiny unless rounding to P bits with an unbounded
        // exponent carries up to 2^EMIN (only possible for E == EMIN-1).
        tiny = true;
        if (E == F::EMIN - 1) {
            const uint64_t k = m >> shift, r = m & ((1ull << shift) - 1);
            if (k + round_inc(k, r, 1ull << (shift - 1), rm, neg) == (1ull << F::P)) tiny = false;
        }
        shift += F::EMIN - E;
        if (shift > 54) shift = 54;           // everything below half an ulp: pure sticky
    }
    uint64_t kept = m >> shift;
    const uint64_t rem = m & ((1ull << shift) - 1);
    fl |= (uint32_t)(rem != 0) * (tiny ? (NX | UF) : NX);
    kept += round_inc(kept, rem, 1ull << (shift - 1), rm, neg);
    if (E < F::EMIN) return sbit | (uint32_t)kept;   // carry into min normal is automatic
    // `kept` carries the hidden bit, which adds one to the exponent field; a carry out
    // of the significand bumps the exponent again, as it should.
    const uint32_t r = ((uint32_t)(E + F::BIAS - 1) << (F::P - 1)) + (uint32_t)kept;
    if (r >= F::EXPM) return overflow_result<F>(neg, rm, fl);
    return sbit | r;
}

template <class F> static inline uint32_t nan_result(bool signaling, uint32_t& fl) {
    if (signaling) fl |= NV;
    return F::CNAN;
}

// Sign of an exact-zero sum x + y (IEEE 754 6.3).
template <class F> static inline uint32_t zero_sum_sign(uint32_t sx, uint32_t sy, int rm) {
    return sx == sy ? sx : (rm == RDN ? F::SIGN : 0u);
}

// The sum of two finite values of F given as their exact doubles (signed zeros kept), rounded to F.
// The FP16 dot products call it directly with their binary32 products, which are exact doubles.
template <class F> static inline uint32_t add_exact(double x, double y, int rm, uint32_t& fl) {
    const double s = x + y;
    if (s == 0) return zero_sum_sign<F>(std::signbit(x) ? F::SIGN : 0u, std::signbit(y) ? F::SIGN : 0u, rm);  // exact
    if (F::ADD_EXACT) return round_pack<F>(s, rm, fl);
    const double bv = s - x;                  // TwoSum
    const double e = (x - (s - bv)) + (y - bv);
    return round_pack<F>(round_odd(s, e != 0, std::signbit(e) == std::signbit(s)), rm, fl);
}

template <class F> static inline uint32_t add(uint32_t a, uint32_t b, int rm, uint32_t& fl) {
    if (is_special<F>(a) | is_special<F>(b)) {
        if (is_nan<F>(a) || is_nan<F>(b)) return nan_result<F>(is_snan<F>(a) || is_snan<F>(b), fl);
        if (is_inf<F>(a) && is_inf<F>(b) && ((a ^ b) & F::SIGN)) { fl |= NV; return F::CNAN; }
        return is_inf<F>(a) ? a : b;
    }
    return add_exact<F>(to_double<F>(a), to_double<F>(b), rm, fl);
}

template <class F> static inline uint32_t mul(uint32_t a, uint32_t b, int rm, uint32_t& fl) {
    const uint32_t sign = (a ^ b) & F::SIGN;
    if (is_special<F>(a) | is_special<F>(b)) {
        if (is_nan<F>(a) || is_nan<F>(b)) return nan_result<F>(is_snan<F>(a) || is_snan<F>(b), fl);
        if (is_zero<F>(a) || is_zero<F>(b)) { fl |= NV; return F::CNAN; }
        return sign | F::EXPM;
    }
    return round_pack<F>(to_double<F>(a) * to_double<F>(b), rm, fl);   // exact product
}

template <class F> static inline uint32_t div(uint32_t a, uint32_t b, int rm, uint32_t& fl) {
    const uint32_t sign = (a ^ b) & F::SIGN;
    if (is_special<F>(a) || is_special<F>(b)) {
        if (is_nan<F>(a) || is_nan<F>(b)) return nan_result<F>(is_snan<F>(a) || is_snan<F>(b), fl);
        if (is_inf<F>(a)) {
            if (is_inf<F>(b)) { fl |= NV; return F::CNAN; }
            return sign | F::EXPM;
        }
        return sign;                          // finite / inf
    }
    if (is_zero<F>(b)) {
        if (is_zero<F>(a)) { fl |= NV; return F::CNAN; }
        fl |= DZ;
        return sign | F::EXPM;
    }
    if (is_zero<F>(a)) return sign;
    const double x = to_double<F>(a), y = to_double<F>(b);
    const double q = x / y;
    // Residual x - q*y: only its sign / zero-ness is used.  (For p <= 24 a quotient can
    // never lie within 2^-53 relative of a p-bit rounding boundary, so RN(x/y) alone
    // would already round correctly; the round-to-odd fix-up is kept as a cheap
    // belt-and-braces guarantee.  The same holds for sqrt below.)
    const double r = std::fma(-q, y, x);
    const bool up = (std::signbit(r) != std::signbit(y)) == std::signbit(q);
    return round_pack<F>(round_odd(q, r != 0, up), rm, fl);
}

template <class F> static inline uint32_t sqrt(uint32_t a, int rm, uint32_t& fl) {
    if (is_nan<F>(a)) return nan_result<F>(is_snan<F>(a), fl);
    if (is_zero<F>(a)) return a;
    if (a & F::SIGN) { fl |= NV; return F::CNAN; }
    if (is_inf<F>(a)) return a;
    const double x = to_double<F>(a);
    const double s = std::sqrt(x);
    const double r = std::fma(s, s, -x);      // s*s - x
    return round_pack<F>(round_odd(s, r != 0, r < 0), rm, fl);
}

template <class F>
static inline uint32_t fma(uint32_t a, uint32_t b, uint32_t c, bool neg_prod, bool neg_c, int rm,
                           uint32_t& fl) {
    const uint32_t cc = neg_c ? (c ^ F::SIGN) : c;
    const uint32_t psign = ((a ^ b) & F::SIGN) ^ (neg_prod ? F::SIGN : 0u);
    if (is_special<F>(a) | is_special<F>(b) | is_special<F>(c)) {
        if (is_nan<F>(a) || is_nan<F>(b))
            return nan_result<F>(is_snan<F>(a) || is_snan<F>(b) || is_snan<F>(c), fl);
        if (is_inf<F>(a) || is_inf<F>(b)) {
            if (is_zero<F>(a) || is_zero<F>(b)) { fl |= NV; return F::CNAN; }   // even if c is qNaN
            if (is_nan<F>(c)) return nan_result<F>(is_snan<F>(c), fl);
            if (is_inf<F>(c) && (cc & F::SIGN) != psign) { fl |= NV; return F::CNAN; }
            return psign | F::EXPM;
        }
        if (is_nan<F>(c)) return nan_result<F>(is_snan<F>(c), fl);
        return cc;                            // finite product + inf
    }
    double xa, xb, z;
#ifdef __F16C__
    if constexpr (std::is_same_v<F, F16>) {
        // The three binary16 operands converted at once, exactly (F16C does not consult the host's
        // denormals-are-zero mode, and its binary32 results are normal or zero).
        float v[4];
        _mm_storeu_ps(v, _mm_cvtph_ps(_mm_set_epi64x(0, (long long)(a | b << 16 | (uint64_t)cc << 32))));
        xa = v[0], xb = v[1], z = v[2];
    } else
#endif
    {
        xa = to_double<F>(a), xb = to_double<F>(b), z = to_double<F>(cc);
    }
    double p = xa * xb;   // exact
    if (neg_prod) p = -p;
    const double s = p + z;
    if (s == 0) return zero_sum_sign<F>(psign, cc & F::SIGN, rm);
    const double bv = s - p;                  // TwoSum
    const double e = (p - (s - bv)) + (z - bv);
    return round_pack<F>(round_odd(s, e != 0, std::signbit(e) == std::signbit(s)), rm, fl);
}

// (a+b)/2 with a single rounding (binary16 only: the sum is exact in double).
static inline uint32_t avg16(uint32_t a, uint32_t b, int rm, uint32_t& fl) {
    using F = F16;
    if (is_special<F>(a) || is_special<F>(b)) {
        if (is_nan<F>(a) || is_nan<F>(b)) return nan_result<F>(is_snan<F>(a) || is_snan<F>(b), fl);
        if (is_inf<F>(a) && is_inf<F>(b) && ((a ^ b) & F::SIGN)) { fl |= NV; return F::CNAN; }
        return is_inf<F>(a) ? a : b;
    }
    const double s = to_double<F>(a) + to_double<F>(b);   // exact
    if (s == 0) return zero_sum_sign<F>(a & F::SIGN, b & F::SIGN, rm);
    return round_pack<F>(s * 0.5, rm, fl);                 // exact halving
}

// Ordering key for non-NaN encodings: monotonic, with -0 < +0.
template <class F> static inline int64_t order_key(uint32_t a) {
    const int64_t mag = (int64_t)(a & ~F::SIGN);
    return (a & F::SIGN) ? -mag - 1 : mag;
}

template <class F> static inline uint32_t minmax(uint32_t a, uint32_t b, bool want_max, uint32_t& fl) {
    const bool na = is_nan<F>(a), nb = is_nan<F>(b);
    if (na || nb) {
        if (is_snan<F>(a) || is_snan<F>(b)) fl |= NV;
        if (na && nb) return F::CNAN;
        return na ? b : a;
    }
    const bool a_le_b = order_key<F>(a) <= order_key<F>(b);
    return (a_le_b != want_max) ? a : b;
}

template <class F> static inline uint32_t feq(uint32_t a, uint32_t b, uint32_t& fl) {
    if (is_nan<F>(a) || is_nan<F>(b)) {
        if (is_snan<F>(a) || is_snan<F>(b)) fl |= NV;
        return 0;
    }
    return a == b || ((a | b) & ~F::SIGN) == 0;
}

template <class F> static inline uint32_t flt(uint32_t a, uint32_t b, bool or_equal, uint32_t& fl) {
    if (is_nan<F>(a) || is_nan<F>(b)) { fl |= NV; return 0; }
    if (((a | b) & ~F::SIGN) == 0) return or_equal;   // +-0 vs +-0
    return or_equal ? order_key<F>(a) <= order_key<F>(b) : order_key<F>(a) < order_key<F>(b);
}

template <class F> static inline uint32_t classify(uint32_t a) {
    const bool neg = (a & F::SIGN) != 0;
    const uint32_t e = a & F::EXPM, m = a & F::FRACM;
    if (e == F::EXPM) {
        if (m == 0) return neg ? (1u << 0) : (1u << 7);
        return (m & F::QBIT) ? (1u << 9) : (1u << 8);
    }
    if (e == 0) {
        if (m == 0) return neg ? (1u << 3) : (1u << 4);
        return neg ? (1u << 2) : (1u << 5);
    }
    return neg ? (1u << 1) : (1u << 6);
}

// Saturating float -> integer conversion into [lo, hi]; NaN gives hi.
template <class F>
static inline int64_t to_int(uint32_t a, int rm, int64_t lo, int64_t hi, uint32_t& fl) {
    if (is_special<F>(a)) {
        fl |= NV;
        if (is_nan<F>(a)) return hi;
        return (a & F::SIGN) ? lo : hi;
    }
    const double x = to_double<F>(a);
    if (std::fabs(x) >= 0x1p62) { fl |= NV; return x < 0 ? lo : hi; }
    const int64_t t = (int64_t)x;             // truncation, exact
    const double frac = x - (double)t;        // exact
    int64_t r = t;
    if (frac != 0) {
        const bool neg = x < 0;
        const double f = std::fabs(frac);
        bool inc;
        switch (rm) {
        case RTZ: inc = false; break;
        case RDN: inc = neg; break;
        case RUP: inc = !neg; break;
        case RMM: inc = f >= 0.5; break;
        default:  inc = f > 0.5 || (f == 0.5 && (t & 1)); break;
        }
        if (inc) r += neg ? -1 : 1;
    }
    if (r < lo) { fl |= NV; return lo; }
    if (r > hi) { fl |= NV; return hi; }
    if (frac != 0) fl |= NX;
    return r;
}

template <class F> static inline uint32_t from_int(int64_t v, int rm, uint32_t& fl) {
    return round_pack<F>((double)v, rm, fl);  // |v| < 2^53: exact in double
}

}  // namespace detail

// ------------------------------------------------------------------ binary32
static inline uint32_t add32(uint32_t a, uint32_t b, int rm, uint32_t& fl) { return detail::add<detail::F32>(a, b, rm, fl); }
static inline uint32_t sub32(uint32_t a, uint32_t b, int rm, uint32_t& fl) { return detail::add<detail::F32>(a, b ^ 0x80000000u, rm, fl); }
static inline uint32_t mul32(uint32_t a, uint32_t b, int rm, uint32_t& fl) { return detail::mul<detail::F32>(a, b, rm, fl); }
static inline uint32_t div32(uint32_t a, uint32_t b, int rm, uint32_t& fl) { return detail::div<detail::F32>(a, b, rm, fl); }
static inline uint32_t sqrt32(uint32_t a, int rm, uint32_t& fl) { return detail::sqrt<detail::F32>(a, rm, fl); }
static inline uint32_t fma32(uint32_t a, uint32_t b, uint32_t c, bool neg_prod, bool neg_c, int rm, uint32_t& fl) {
    return detail::fma<detail::F32>(a, b, c, neg_prod, neg_c, rm, fl);
}
static inline uint32_t sgnj32(uint32_t a, uint32_t b) { return (a & 0x7fffffffu) | (b & 0x80000000u); }
static inline uint32_t sgnjn32(uint32_t a, uint32_t b) { return (a & 0x7fffffffu) | (~b & 0x80000000u); }
static inline uint32_t sgnjx32(uint32_t a, uint32_t b) { return a ^ (b & 0x80000000u); }
static inline uint32_t min32(uint32_t a, uint32_t b, uint32_t& fl) { return detail::minmax<detail::F32>(a, b, false, fl); }
static inline uint32_t max32(uint32_t a, uint32_t b, uint32_t& fl) { return detail::minmax<detail::F32>(a, b, true, fl); }
static inline uint32_t eq32(uint32_t a, uint32_t b, uint32_t& fl) { return detail::feq<detail::F32>(a, b, fl); }
static inline uint32_t lt32(uint32_t a, uint32_t b, uint32_t& fl) { return detail::flt<detail::F32>(a, b, false, fl); }
static inline uint32_t le32(uint32_t a, uint32_t b, uint32_t& fl) { return detail::flt<detail::F32>(a, b, true, fl); }
static inline uint32_t classify32(uint32_t a) { return detail::classify<detail::F32>(a); }
static inline uint32_t to_i32_32(uint32_t a, int rm, uint32_t& fl) {
    return (uint32_t)(int32_t)detail::to_int<detail::F32>(a, rm, INT32_MIN, INT32_MAX, fl);
}
static inline uint32_t to_u32_32(uint32_t a, int rm, uint32_t& fl) {
    return (uint32_t)detail::to_int<detail::F32>(a, rm, 0, UINT32_MAX, fl);
}
static inline uint32_t from_i32_32(uint32_t v, int rm, uint32_t& fl) { return detail::from_int<detail::F32>((int32_t)v, rm, fl); }
static inline uint32_t from_u32_32(uint32_t v, int rm, uint32_t& fl) { return detail::from_int<detail::F32>(v, rm, fl); }

// ------------------------------------------------------------------ binary16
static inline uint16_t add16(uint16_t a, uint16_t b, int rm, uint32_t& fl) { return (uint16_t)detail::add<detail::F16>(a, b, rm, fl); }
static inline uint16_t sub16(uint16_t a, uint16_t b, int rm, uint32_t& fl) { return (uint16_t)detail::add<detail::F16>(a, b ^ 0x8000u, rm, fl); }
static inline uint16_t mul16(uint16_t a, uint16_t b, int rm, uint32_t& fl) { return (uint16_t)detail::mul<detail::F16>(a, b, rm, fl); }
static inline uint16_t div16(uint16_t a, uint16_t b, int rm, uint32_t& fl) { return (uint16_t)detail::div<detail::F16>(a, b, rm, fl); }
static inline uint16_t sqrt16(uint16_t a, int rm, uint32_t& fl) { return (uint16_t)detail::sqrt<detail::F16>(a, rm, fl); }
static inline uint16_t fma16(uint16_t a, uint16_t b, uint16_t c, bool neg_prod, bool neg_c, int rm, uint32_t& fl) {
    return (uint16_t)detail::fma<detail::F16>(a, b, c, neg_prod, neg_c, rm, fl);
}
static inline uint16_t sgnj16(uint16_t a, uint16_t b) { return (uint16_t)((a & 0x7fffu) | (b & 0x8000u)); }
static inline uint16_t sgnjn16(uint16_t a, uint16_t b) { return (uint16_t)((a & 0x7fffu) | (~b & 0x8000u)); }
static inline uint16_t sgnjx16(uint16_t a, uint16_t b) { return (uint16_t)(a ^ (b & 0x8000u)); }
static inline uint16_t min16(uint16_t a, uint16_t b, uint32_t& fl) { return (uint16_t)detail::minmax<detail::F16>(a, b, false, fl); }
static inline uint16_t max16(uint16_t a, uint16_t b, uint32_t& fl) { return (uint16_t)detail::minmax<detail::F16>(a, b, true, fl); }
static inline uint32_t eq16(uint16_t a, uint16_t b, uint32_t& fl) { return detail::feq<detail::F16>(a, b, fl); }
static inline uint32_t lt16(uint16_t a, uint16_t b, uint32_t& fl) { return detail::flt<detail::F16>(a, b, false, fl); }
static inline uint32_t le16(uint16_t a, uint16_t b, uint32_t& fl) { return detail::flt<detail::F16>(a, b, true, fl); }
static inline uint32_t classify16(uint16_t a) { return detail::classify<detail::F16>(a); }
static inline uint32_t to_i32_16(uint16_t a, int rm, uint32_t& fl) {
    return (uint32_t)(int32_t)detail::to_int<detail::F16>(a, rm, INT32_MIN, INT32_MAX, fl);
}
static inline uint32_t to_u32_16(uint16_t a, int rm, uint32_t& fl) {
    return (uint32_t)detail::to_int<detail::F16>(a, rm, 0, UINT32_MAX, fl);
}
static inline uint16_t from_i32_16(uint32_t v, int rm, uint32_t& fl) { return (uint16_t)detail::from_int<detail::F16>((int32_t)v, rm, fl); }
static inline uint16_t from_u32_16(uint32_t v, int rm, uint32_t& fl) { return (uint16_t)detail::from_int<detail::F16>(v, rm, fl); }

// SIMD lane conversions (int16 / uint16 lanes).
static inline uint16_t to_i16_16(uint16_t a, int rm, uint32_t& fl) {
    return (uint16_t)(int16_t)detail::to_int<detail::F16>(a, rm, INT16_MIN, INT16_MAX, fl);
}
static inline uint16_t to_u16_16(uint16_t a, int rm, uint32_t& fl) {
    return (uint16_t)detail::to_int<detail::F16>(a, rm, 0, UINT16_MAX, fl);
}
static inline uint16_t from_i16_16(uint16_t v, int rm, uint32_t& fl) { return (uint16_t)detail::from_int<detail::F16>((int16_t)v, rm, fl); }
static inline uint16_t from_u16_16(uint16_t v, int rm, uint32_t& fl) { return (uint16_t)detail::from_int<detail::F16>(v, rm, fl); }

static inline uint16_t avg16(uint16_t a, uint16_t b, int rm, uint32_t& fl) { return (uint16_t)detail::avg16(a, b, rm, fl); }

// ------------------------------------------------------------------ conversions between formats
// binary16 -> binary32: exact.  sNaN -> NV; every NaN -> canonical NaN.
static inline uint32_t h_to_s(uint16_t h, uint32_t& fl) {
    using namespace detail;
    if (is_nan<F16>(h)) return nan_result<F32>(is_snan<F16>(h), fl);
    if (is_inf<F16>(h)) return ((uint32_t)(h & 0x8000u) << 16) | F32::EXPM;
    uint32_t dummy = 0;
    return round_pack<F32>(to_double<F16>(h), RNE, dummy);   // exact, never raises
}

// binary32 -> binary16 with rounding.
static inline uint16_t s_to_h(uint32_t s, int rm, uint32_t& fl) {
    using namespace detail;
    if (is_nan<F32>(s)) return (uint16_t)nan_result<F16>(is_snan<F32>(s), fl);
    if (is_inf<F32>(s)) return (uint16_t)(((s >> 16) & 0x8000u) | 0x7c00u);
    return (uint16_t)round_pack<F16>(to_double<F32>(s), rm, fl);
}

}  // namespace fp
