// The macro vocabulary in which isa/*.toml writes instruction semantics (the `sem` strings).
// It is expanded inside Core::run, where `d` is the decoded instruction and `pc` its address.
#pragma once
#include <cstdint>

#include "fp.hpp"   // (and <immintrin.h> when built with F16C)

namespace pulpsim {

// ---- FP16 SIMD lanes (2 x binary16 in one 32-bit register) ----
static inline uint16_t lane(uint32_t v, int i) { return (uint16_t)(v >> (16 * i)); }
static inline uint32_t pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }

template <typename F>
static inline uint32_t vf2(uint32_t a, uint32_t b, bool rep, F f) {
  uint16_t b0 = lane(b, 0), b1 = rep ? b0 : lane(b, 1);
  uint16_t r0 = f(lane(a, 0), b0);
  uint16_t r1 = f(lane(a, 1), b1);
  return pack(r0, r1);
}

// Comparisons (GVSoC VF_CMP): the 0/1 result of lane i goes to bit i of rd.
template <typename F>
static inline uint32_t vfcmp(uint32_t a, uint32_t b, bool rep, F f) {
  uint16_t b0 = lane(b, 0), b1 = rep ? b0 : lane(b, 1);
  return f(lane(a, 0), b0) | (f(lane(a, 1), b1) << 1);
}
static inline bool nan16(uint16_t a) { return (a & 0x7fffu) > 0x7c00u; }

// vfclass.h (GVSoC lib_flexfloat_vclass): one byte per lane, bit 7 sign, 6 not sign, 5 quiet NaN,
// 4 signalling NaN, 3 zero, 2 subnormal, 1 normal, 0 infinity.
static inline uint32_t vclass16(uint16_t a) {
  uint32_t s = a >> 15, e = (a >> 10) & 0x1fu, m = a & 0x3ffu;
  uint32_t c = (s << 7) | ((s ^ 1u) << 6);
  if (e == 0x1fu)
    c |= m == 0 ? 1u : (m & 0x200u) ? 1u << 5 : 1u << 4;
  else if (e == 0)
    c |= m == 0 ? 1u << 3 : 1u << 2;
  else
    c |= 1u << 1;
  return c;
}

// A finite binary16 value as the binary32 of the same value, from its bits (exact; no host conversion).
// Without branches: zeros and subnormals are frequent and random in training data (a relu's output),
// where a branch on them would be mispredicted.
static inline float h_to_f(uint16_t h) {
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  const float sub = (float)m * 0x1p-24f;   // zero or subnormal: m * 2^-24, a normal binary32 (or zero)
  uint32_t sub_bits;
  std::memcpy(&sub_bits, &sub, 4);
  const uint32_t bits = (e ? ((e + 112u) << 23) | (m << 13) : sub_bits) | (uint32_t)(h & 0x8000u) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// The rare cases of vfdotpex.s.h, out of line so that its usual case stays small enough to inline: another
// rounding mode, an accumulator near the bottom of binary32's range, a sum that overflows, or a lane that is
// infinite or NaN.
// The lanes of b are the ones to multiply (the .r form's are replicated before).
__attribute__((noinline)) static uint32_t vfdotpex_long(uint32_t acc, uint32_t a, uint32_t b, bool neg, int rm, uint32_t& fl) {
  uint16_t a0 = lane(a, 0), a1 = lane(a, 1), b0 = lane(b, 0), b1 = lane(b, 1);
  using fp::detail::F16;
  using fp::detail::F32;
  if (!(fp::detail::is_special<F16>(a0) | fp::detail::is_special<F16>(a1) | fp::detail::is_special<F16>(b0) |
        fp::detail::is_special<F16>(b1))) {
    // Finite lanes: the conversions and the products are exact and raise nothing, so the products go
    // to the sum as the exact doubles the long way would rebuild from their binary32 encodings.
    double p0 = fp::detail::to_double<F16>(a0) * fp::detail::to_double<F16>(b0);
    double p1 = fp::detail::to_double<F16>(a1) * fp::detail::to_double<F16>(b1);
    uint32_t s = fp::detail::add_exact<F32>(p0, p1, rm, fl);
    return neg ? fp::sub32(acc, s, rm, fl) : fp::add32(acc, s, rm, fl);
  }
  uint32_t p0 = fp::mul32(fp::h_to_s(a0, fl), fp::h_to_s(b0, fl), rm, fl);
  uint32_t p1 = fp::mul32(fp::h_to_s(a1, fl), fp::h_to_s(b1, fl), rm, fl);
  uint32_t s = fp::add32(p0, p1, rm, fl);
  return neg ? fp::sub32(acc, s, rm, fl) : fp::add32(acc, s, rm, fl);
}

// The two products of the lanes of a and b, exact in binary32. Built with F16C (CMakeLists.txt adds it when
// the build host has it) one instruction converts the four lanes, exactly, subnormals included.
static inline void lane_products(uint32_t a, uint32_t b, float& p0, float& p1) {
#ifdef __F16C__
  const __m128 x = _mm_cvtph_ps(_mm_cvtsi32_si128((int)a));
  const __m128 y = _mm_cvtph_ps(_mm_cvtsi32_si128((int)b));
  const __m128 p = _mm_mul_ps(x, y);
  p0 = _mm_cvtss_f32(p);
  p1 = _mm_cvtss_f32(_mm_movehdup_ps(p));
#else
  p0 = h_to_f(lane(a, 0)) * h_to_f(lane(b, 0));
  p1 = h_to_f(lane(a, 1)) * h_to_f(lane(b, 1));
#endif
}

__attribute__((always_inline)) inline uint32_t vfdotpex(uint32_t acc, uint32_t a, uint32_t b, bool rep, bool neg, int rm, uint32_t& fl) {
  // Products of two binary16 values are exact in binary32; the sum of the two products is rounded, then
  // added to the binary32 accumulator.
  if (rep) b = (b & 0xffffu) * 0x10001u;
  // A lane is infinite or NaN when its exponent bits are all ones: adding one to them carries into its sign.
  const uint32_t EXP = 0x7c007c00u, ONE = 0x04000400u, SIGN = 0x80008000u;
  const bool finite = !((((a & EXP) + ONE) | ((b & EXP) + ONE)) & SIGN);
  // The usual case in host binary32, which rounds to nearest even as the long way does: finite lanes and
  // an accumulator that is zero or at least 2^-102. Then every value below is a multiple of 2^-125 (the
  // products of 2^-48, the accumulator's ulp of 2^-125 or more), so each nonzero one is a normal number:
  // no host flush-to-zero or denormals-are-zero mode can touch them, a sum is zero only when it is exactly
  // zero (with IEEE's sign), and TwoSum's error terms are exact, which gives the inexact flag. A sum that
  // overflows takes the long way.
  const uint32_t ae = acc & 0x7f800000u;
  if (rm == fp::RNE && finite && ae != 0x7f800000u && (ae >= (25u << 23) || (acc & 0x7fffffffu) == 0)) {
    float p0, p1;
    lane_products(a, b, p0, p1);
    const float s = p0 + p1;
    const float sb = s - p0, se = (p0 - (s - sb)) + (p1 - sb);                 // s + se == p0 + p1
    float c, y = neg ? -s : s;
    std::memcpy(&c, &acc, 4);
    const float r = c + y;
    if (std::fabs(r) <= FLT_MAX) {
      const float rb = r - c, re = (c - (r - rb)) + (y - rb);
      fl |= (uint32_t)((se != 0.0f) | (re != 0.0f)) * fp::NX;
      uint32_t out;
      std::memcpy(&out, &r, 4);
      return out;
    }
  }
  return vfdotpex_long(acc, a, b, neg, rm, fl);
}

}  // namespace pulpsim

namespace fp {
// vfavg.h as GVSoC computes it (flexfloat: ff_add, then ff_div by 2): the sum is rounded to binary16 first,
// so a sum that overflows gives infinity. (fp::avg16 is the single-rounding (a+b)/2.)
static inline uint16_t avg16_gvsoc(uint16_t a, uint16_t b, int rm, uint32_t& fl) {
  return mul16(add16(a, b, rm, fl), 0x3800u, rm, fl);
}
}  // namespace fp

#define RS1 X[d->rs1]
#define RS2 X[d->rs2]
#define RS3 X[d->rs3]
#define RDV X[d->rd]
#define FRS1 X[fo + d->rs1]
#define FRS2 X[fo + d->rs2]
#define FRS3 X[fo + d->rs3]
#define FRS1_S FRS1
#define FRS2_S FRS2
#define FRS3_S FRS3
#define FRS1_H ((uint16_t)FRS1)
#define FRS2_H ((uint16_t)FRS2)
#define FRS3_H ((uint16_t)FRS3)
#define IMM d->imm
#define IMM2 d->imm2
#define IMM_RD d->rd
#define PC pc
#define FL fflags
#define RM rm_resolve(d->rm)
#define FRM rm_resolve(7)
#define VRM fp::RNE  // FP16 SIMD: GVSoC passes rounding mode 0 (or uses the host default), never frm

#define WRD(v) (X[d->rd] = (uint32_t)(v))
#define WRS1(v) (X[d->rs1] = (uint32_t)(v))
#define WRD_CSR(v) WRD(v)
#define WFRD_S(v) (X[fo + d->rd] = (uint32_t)(v))
// Half results: zero-extended in x registers (as GVSoC), NaN-boxed in separate f registers.
#define WFRD_H(v) (X[fo + d->rd] = fo ? (0xffff0000u | (uint16_t)(v)) : (uint32_t)(uint16_t)(v))
// fmv.x.h / fmv.h.x: with FP values in the x registers GVSoC moves all 32 bits (FREG_GET/FREG_SET are plain
// register accesses); separate f registers sign-extend / NaN-box as Zfh says.
#define FMV_X_H() (fo ? (uint32_t)(int32_t)(int16_t)FRS1_H : FRS1)
#define FMV_H_X() (fo ? (0xffff0000u | (uint16_t)RS1) : RS1)

#define JUMP(target)            \
  do {                          \
    npc = (target);             \
    extra += t_jump - 1;        \
    ev[X_JUMP] += t_jump - 1;   \
    ev[EV_JUMP]++;              \
  } while (0)
#define BRANCH(cond)                       \
  do {                                     \
    ev[EV_BRANCH]++;                       \
    if (cond) {                            \
      npc = pc + (uint32_t)d->imm;         \
      extra += t_branch_taken - 1;         \
      ev[X_BRANCH] += t_branch_taken - 1;  \
      ev[EV_BTAKEN]++;                     \
    }                                      \
  } while (0)

#define LD_RD(a, n, s) ld_l1<(n)>(d->rd, (a), (s))
#define LD_FRD(a, n) ld_frd(d->rd, (a), (n))
#define ST(a, n, v) st((a), (n), (v))
#define ELW_RD(a) elw(d->rd, (a))
#define DIV_COST(v, s) div_cost((v), (s))
#define CSR_W 0
#define CSR_S 1
#define CSR_C 2
#define CSR_OP(c, v, op, w) csr_op((uint32_t)(c), (uint32_t)(v), (op), (w))
#define TRAP(cause, tval) trap((cause), (tval))
#define MRET() mret()
#define WFI() wfi()

#define HWL_START(l, v) (lp_start[(l)&1] = (v))
#define HWL_END(l, v) (lp_end[(l)&1] = (v))
#define HWL_COUNT(l, v) (lp_count[(l)&1] = (v), hwl_active = (lp_count[0] | lp_count[1]) != 0)

// FP16 SIMD
#define VF2(fn, rep)                                                                                  \
  ([&] {                                                                                              \
    int rm_ = VRM;                                                                                    \
    return vf2(RS1, RS2, (rep), [&](uint16_t a_, uint16_t b_) { return fp::fn(a_, b_, rm_, fflags); }); \
  }())
#define VF2N(fn, rep) vf2(RS1, RS2, (rep), [&](uint16_t a_, uint16_t b_) { return fp::fn(a_, b_, fflags); })
#define VFSGN(fn, rep) vf2(RS1, RS2, (rep), [&](uint16_t a_, uint16_t b_) { return (uint16_t)fp::fn(a_, b_); })
#define VF1(fn)                                                                   \
  ([&] {                                                                          \
    int rm_ = VRM;                                                                \
    return pack(fp::fn(lane(RS1, 0), rm_, fflags), fp::fn(lane(RS1, 1), rm_, fflags)); \
  }())
#define VFMA(rep, negp, negc)                                                                   \
  ([&] {                                                                                        \
    int rm_ = VRM;                                                                              \
    uint16_t b0_ = lane(RS2, 0), b1_ = (rep) ? b0_ : lane(RS2, 1);                              \
    return pack(fp::fma16(lane(RS1, 0), b0_, lane(RDV, 0), (negp), (negc), rm_, fflags),        \
                fp::fma16(lane(RS1, 1), b1_, lane(RDV, 1), (negp), (negc), rm_, fflags));       \
  }())
// GVSoC lib_flexfloat_{eq,ne,lt,ge,le,gt}: a NaN operand gives 0 for every predicate (ne too); eq signals
// only on a signalling NaN, lt/le on any NaN, ne/ge/gt never.
#define VFCMP_eq(a, b) fp::eq16(a, b, fflags)
#define VFCMP_ne(a, b) (nan16(a) || nan16(b) ? 0u : fp::eq16(a, b, fflags) ^ 1u)
#define VFCMP_lt(a, b) fp::lt16(a, b, fflags)
#define VFCMP_le(a, b) fp::le16(a, b, fflags)
#define VFCMP_ge(a, b) (nan16(a) || nan16(b) ? 0u : fp::le16(b, a, fflags))
#define VFCMP_gt(a, b) (nan16(a) || nan16(b) ? 0u : fp::lt16(b, a, fflags))
#define VFCMP(op, rep) vfcmp(RS1, RS2, (rep), [&](uint16_t a_, uint16_t b_) { return (uint32_t)VFCMP_##op(a_, b_); })
#define VFCLASS() (vclass16(lane(RS1, 0)) | (vclass16(lane(RS1, 1)) << 8))
#define VFCVT_X(sgn)                                                                                 \
  ([&] {                                                                                             \
    int rm_ = VRM;                                                                                   \
    return (sgn) ? pack(fp::to_i16_16(lane(RS1, 0), rm_, fflags), fp::to_i16_16(lane(RS1, 1), rm_, fflags)) \
                 : pack(fp::to_u16_16(lane(RS1, 0), rm_, fflags), fp::to_u16_16(lane(RS1, 1), rm_, fflags)); \
  }())
#define VFCVT_H(sgn)                                                                                     \
  ([&] {                                                                                                 \
    int rm_ = VRM;                                                                                       \
    return (sgn) ? pack(fp::from_i16_16(lane(RS1, 0), rm_, fflags), fp::from_i16_16(lane(RS1, 1), rm_, fflags)) \
                 : pack(fp::from_u16_16(lane(RS1, 0), rm_, fflags), fp::from_u16_16(lane(RS1, 1), rm_, fflags)); \
  }())
#define VFDOTPEX(rep, neg) vfdotpex(RDV, RS1, RS2, (rep), (neg), VRM, fflags)

// Integer SIMD
#define SIMD_H(expr)                                                                                  \
  ([&] {                                                                                              \
    uint32_t r_ = 0;                                                                                  \
    for (int i_ = 0; i_ < 2; i_++) {                                                                  \
      uint32_t a = (RS1 >> (16 * i_)) & 0xffff, b = (RS2 >> (16 * i_)) & 0xffff;                      \
      r_ |= ((uint32_t)(expr) & 0xffffu) << (16 * i_);                                                \
    }                                                                                                 \
    return r_;                                                                                        \
  }())
#define SIMD_B(expr)                                                                                  \
  ([&] {                                                                                              \
    uint32_t r_ = 0;                                                                                  \
    for (int i_ = 0; i_ < 4; i_++) {                                                                  \
      uint32_t a = (RS1 >> (8 * i_)) & 0xff, b = (RS2 >> (8 * i_)) & 0xff;                            \
      r_ |= ((uint32_t)(expr) & 0xffu) << (8 * i_);                                                   \
    }                                                                                                 \
    return r_;                                                                                        \
  }())
#define DOT_H(ta, tb, acc) \
  ((uint32_t)(acc) + (uint32_t)((int32_t)(ta)(RS1) * (int32_t)(tb)(RS2) + (int32_t)(ta)(RS1 >> 16) * (int32_t)(tb)(RS2 >> 16)))
#define DOT_B(ta, tb, acc)                                                                         \
  ((uint32_t)(acc) + (uint32_t)((int32_t)(ta)(RS1) * (int32_t)(tb)(RS2) +                          \
                                (int32_t)(ta)(RS1 >> 8) * (int32_t)(tb)(RS2 >> 8) +                \
                                (int32_t)(ta)(RS1 >> 16) * (int32_t)(tb)(RS2 >> 16) +              \
                                (int32_t)(ta)(RS1 >> 24) * (int32_t)(tb)(RS2 >> 24)))

// Scoreboard: wait until a source register's producer has delivered it.
#define STALL_X(r) stall_on(r)
#define STALL_F(r) stall_on(fo + (r))
// The timing classes' TIMING_<CLASS>() costs are generated into isa_ops.hpp from isa/timing.toml.
