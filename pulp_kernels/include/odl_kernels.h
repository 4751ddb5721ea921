/* odl_kernels.h: the building blocks of pulp-odl's generated training kernels.
 *
 * Everything is static inline and called by generated code with constant arguments, so the
 * compiler specialises each use to the layer's shapes. Work is split across the cluster cores by
 * pi_core_id(); callers fork them with pi_cl_team_fork.
 *
 * Matrix products are C[M][N] = A[M][K] . B[N][K]^T on FP16 data with FP32 accumulation
 * (vfdotpex.s.h: 2 MACs per instruction). Both operands are first packed into panels of 4 rows:
 * panel word (kk, i) holds elements 2kk and 2kk+1 of row 4*blk + i, so the generated 4x4 assembly
 * micro-kernel (odl_mm4x4) streams each panel with post-increment loads inside a hardware loop.
 */
#ifndef ODL_KERNELS_H
#define ODL_KERNELS_H

#include <pmsis.h>
#include <pulp_isa.h>

typedef uint16_t f16;

/* The generated micro-kernel: out[4*i + j] = sum_kk dot(A-panel row i, B-panel row j) in FP32. */
void odl_mm4x4(const uint32_t *ap, const uint32_t *bp, uint32_t k2, float *out);
/* The same block written straight to FP16 rows of C (`pitch_bytes` apart) after adding 4 FP32 biases. */
void odl_mm4x4_st(const uint32_t *ap, const uint32_t *bp, uint32_t k2, f16 *c, uint32_t pitch_bytes, const float *bias4);
void odl_mm4x4_run(const uint32_t *ap, const uint32_t *bp, uint32_t k2, f16 *c, uint32_t pitch_bytes, uint32_t nblocks);
void odl_mm4x4_run_acc(const uint32_t *ap, const uint32_t *bp, uint32_t k2, float *acc, uint32_t pitch_bytes, uint32_t nblocks);
void odl_mm4x4_run_bias(const uint32_t *ap, const uint32_t *bp, uint32_t k2, f16 *c, uint32_t pitch_bytes,
                        uint32_t nblocks, const float *bias);
/* The same with relu, relu6 or h-swish applied to the FP16 pairs before the stores (odl_act_pair's operations). */
#define ODL_MM4X4_RUN_ACT(act)                                                                                        \
  void odl_mm4x4_run_##act(const uint32_t *ap, const uint32_t *bp, uint32_t k2, f16 *c, uint32_t pitch_bytes,        \
                           uint32_t nblocks);                                                                         \
  void odl_mm4x4_run_bias_##act(const uint32_t *ap, const uint32_t *bp, uint32_t k2, f16 *c, uint32_t pitch_bytes,   \
                                uint32_t nblocks, const float *bias);
ODL_MM4X4_RUN_ACT(relu)
ODL_MM4X4_RUN_ACT(relu6)
ODL_MM4X4_RUN_ACT(hswish)
void odl_packk2(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
/* Pack 4 rows (`pitch_bytes` apart, k2 words each) into one panel: 2 instructions per word. */
void odl_pack4(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
static const float odl_zero4[4] = {0.0f, 0.0f, 0.0f, 0.0f};


static inline uint32_t odl_f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
static inline float odl_h2f(f16 h) {
  _Float16 v;
  __builtin_memcpy(&v, &h, 2);
  return (float)v;
}
static inline f16 odl_f2h(float f) {
  _Float16 v = (_Float16)f;
  f16 u;
  __builtin_memcpy(&u, &v, 2);
  return u;
}

/* Split [0, n) into nearly equal contiguous chunks, one per core. */
static inline void odl_chunk(int n, int *lo, int *hi) {
  int nc = pi_cl_team_nb_cores(), id = pi_core_id();
  int q = n / nc, r = n % nc;
  *lo = id * q + (id < r ? id : r);
  *hi = *lo + q + (id < r ? 1 : 0);
}

/* ---------------------------------------------------------------- register-blocked matrix products
 * The generated micro-kernels (harness/kernels/mmblock.py) each run one A block against `nblocks`
 * consecutive B blocks; a product tile is a table of such runs, planned at generation time
 * (harness/kernels/mmplan.py) so that every core gets an equal share: core c runs
 * runs[first[c]] .. runs[first[c + 1] - 1]. Offsets are bytes from the tile's operands. */
typedef void (*odl_mm_fn)(const void *a, const void *b, void *c, uint32_t nblocks, const void *bias);
typedef struct {
  uint16_t fn, nb;
  int32_t a, b, c, bias;
} odl_run_t;

/* The same with the runs of core `id` (each core may read its own copy of B). */
static inline void odl_mm_runs_b(odl_mm_fn const *fn, const odl_run_t *runs, const uint16_t *first, const void *a,
                                 const void *b, void *c, const void *bias, int id) {
  for (int r = first[id], e = first[id + 1]; r < e; r++) {
    const odl_run_t *R = runs + r;
    fn[R->fn]((const char *)a + R->a, (const char *)b + R->b, (char *)c + R->c, R->nb, (const char *)bias + R->bias);
  }
}

static inline void odl_mm_runs(odl_mm_fn const *fn, const odl_run_t *runs, const uint16_t *first, const void *a,
                               const void *b, void *c, const void *bias) {
  odl_mm_runs_b(fn, runs, first, a, b, c, bias, pi_core_id());
}

/* The same with micro-kernels that take C's row pitch (bytes) as an argument: tiles of different widths
 * run one routine, already in the instruction caches after the first tile. */
typedef void (*odl_mm_fnp)(const void *a, const void *b, void *c, uint32_t nblocks, const void *bias, uint32_t c_pitch);
static inline void odl_mm_runs_p(odl_mm_fnp const *fn, const odl_run_t *runs, const uint16_t *first, const void *a,
                                 const void *b, void *c, const void *bias, uint32_t c_pitch) {
  for (int r = first[pi_core_id()], e = first[pi_core_id() + 1]; r < e; r++) {
    const odl_run_t *R = runs + r;
    fn[R->fn]((const char *)a + R->a, (const char *)b + R->b, (char *)c + R->c, R->nb, (const char *)bias + R->bias,
              c_pitch);
  }
}

/* Generated packers: s rows of a row-major matrix into one panel; one or two columns of a K-major
 * matrix into rows of K-pairs (see harness/kernels/mmblock.py). */
void odl_packr2(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
void odl_packr3(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
void odl_packr4(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
void odl_packr5(uint32_t *dst, const f16 *src, uint32_t k2, uint32_t pitch_bytes);
void odl_packc2(uint32_t *d0, const f16 *src, uint32_t k2, uint32_t pitch_bytes, uint32_t *d1, uint32_t dstep);
void odl_packc2l(uint32_t *d0, const f16 *src, uint32_t k2, uint32_t pitch_bytes, uint32_t *d1, uint32_t dstep);
void odl_packc1(uint32_t *d0, const f16 *src, uint32_t k2, uint32_t pitch_bytes, uint32_t dstep);
void odl_tcs0(uint32_t *dst, const f16 *src, uint32_t kp, uint32_t pitch_bytes, uint32_t npairs, uint32_t gap_bytes, f16 *sums);
void odl_tcs1(uint32_t *dst, const f16 *src, uint32_t kp, uint32_t pitch_bytes, uint32_t npairs, uint32_t gap_bytes, f16 *sums);
uint64_t odl_packc2s(uint32_t *d0, const f16 *src, uint32_t k2, uint32_t pitch_bytes, uint32_t *d1, uint32_t dstep);

/* Panels of a row-major FP16 source (rows `pitch` halves apart, k2 words used): panel p holds rows
 * tab[3p] .. tab[3p] + tab[3p + 1] - 1 and starts tab[3p + 2] words into dst. Rows at or past `valid`
 * are zero. Panels are dealt round-robin to the cores. */
static inline void odl_panels(uint32_t *dst, const f16 *src, const uint16_t *tab, int np, int valid, int k2, int pitch) {
  int nc = pi_cl_team_nb_cores();
  for (int p = pi_core_id(); p < np; p += nc) {
    int r0 = tab[3 * p], h = tab[3 * p + 1];
    uint32_t *d = dst + tab[3 * p + 2];
    const f16 *s = src + r0 * pitch;
    uint32_t pb = (uint32_t)pitch * 2;
    if (r0 + h <= valid) {
      if (h == 4) odl_packr4(d, s, (uint32_t)k2, pb);
      else if (h == 5) odl_packr5(d, s, (uint32_t)k2, pb);
      else if (h == 2) odl_packr2(d, s, (uint32_t)k2, pb);
      else if (h == 3) odl_packr3(d, s, (uint32_t)k2, pb);
      else for (int kk = 0; kk < k2; kk++) d[kk] = ((const uint32_t *)s)[kk];
      continue;
    }
    for (int i = 0; i < h; i++) {
      const uint32_t *sr = (const uint32_t *)(s + i * pitch);
      for (int kk = 0; kk < k2; kk++) d[kk * h + i] = r0 + i < valid ? sr[kk] : 0;
    }
  }
}

/* Two adjacent columns into two rows of K-pairs (odl_packc2): from ODL_PACK_LONG pairs on, the routine whose
 * pairs are made in registers (6 cycles a pair instead of 7, 8 more a call: it pays from 8 pairs; at 12,
 * small layers' input gradients came out 0.2 - 0.3 % slower on `paper`, their code's first fetch). */
#define ODL_PACK_LONG 16
static inline void odl_packc2_any(uint32_t *d0, const f16 *src, int kp, int pitch, uint32_t *d1, uint32_t dstep) {
  if (kp >= ODL_PACK_LONG)
    odl_packc2l(d0, src, (uint32_t)kp, (uint32_t)pitch * 2, d1, dstep);
  else if (kp)
    odl_packc2(d0, src, (uint32_t)kp, (uint32_t)pitch * 2, d1, dstep);
}

/* Rows of K-pairs from columns of a K-major FP16 source S[kdim][cols] (element (k, r) at src[k * pitch + r]),
 * by units: unit u = tab[4u..4u+3] = (first column, 1 for one column or 1 + the words from its row to the
 * second's for two, word offset of its first row in dst, words between the row's K-pairs): two rows of
 * panels (step = the panels' rows; 2: the next row of one panel, more: the first row of the next panel
 * after an odd one) or of a transposed matrix (step 1, code 2, the second row tab[4 nu] words on). An odd kdim pairs its last
 * element with zero; a column at or past `valid` gives a zero row. Units are dealt round-robin starting
 * with core `c0`, so that two calls in a row together keep the cores even. The K-pairs go from pair kk0 on
 * in dst (src holds K from row 2 kk0 on): a source that arrives in parts is packed part by part. */
static inline void odl_units_tk(uint32_t *dst, const f16 *src, const uint16_t *tab, int nu, int valid, int kdim, int pitch,
                                int c0, int kk0) {
  int nc = pi_cl_team_nb_cores(), k2 = (kdim + 1) / 2, kp = kdim / 2, gap = tab[4 * nu];
  int u = pi_core_id() - c0;
  if (u < 0) u += nc;
  for (; u < nu; u += nc) {
    const uint16_t *e = tab + 4 * u;
    int r = e[0], two = e[1] >= 2, step = e[3];
    uint32_t *d = dst + e[2] + kk0 * step, *d1 = step == 1 ? d + gap : d + e[1] - 1;
    if (two && r + 1 < valid) {
      odl_packc2_any(d, src + r, kp, pitch, d1, (uint32_t)step * 4);
      if (kdim & 1) {
        uint32_t w = *(const uint32_t *)(src + (kdim - 1) * pitch + r);
        d[kp * step] = w & 0xffffu;
        d1[kp * step] = w >> 16;
      }
      continue;
    }
    for (int q = 0; q <= two; q++) {
      uint32_t *dq = q ? d1 : d;
      if (r + q < valid) {
        if (kp) odl_packc1(dq, src + r + q, (uint32_t)kp, (uint32_t)pitch * 2, (uint32_t)step * 4);
        if (kdim & 1) dq[kp * step] = src[(kdim - 1) * pitch + r + q];
      } else {
        for (int kk = 0; kk < k2; kk++) dq[kk * step] = 0;
      }
    }
  }
}
/* The same from K-pair 0: the whole of K. */
static inline void odl_units_t(uint32_t *dst, const f16 *src, const uint16_t *tab, int nu, int valid, int kdim, int pitch,
                               int c0) {
  odl_units_tk(dst, src, tab, nu, valid, kdim, pitch, c0, 0);
}

/* The transpose of a K-major FP16 source S[kdim][cols] as rows of K-pairs: row r (dpitch bytes apart)
 * holds column r of S; an odd kdim pairs the last element with zero. Column pairs dealt round-robin. */
static inline void odl_rows_t(uint32_t *dst, int dpitch, const f16 *src, int cols, int kdim, int pitch) {
  int nc = pi_cl_team_nb_cores(), kp = kdim / 2;
  for (int r = 2 * pi_core_id(); r < cols; r += 2 * nc) {
    uint32_t *d0 = (uint32_t *)((char *)dst + r * dpitch);
    if (r + 1 < cols) {
      uint32_t *d1 = (uint32_t *)((char *)d0 + dpitch);
      odl_packc2_any(d0, src + r, kp, pitch, d1, 4);
      if (kdim & 1) {
        uint32_t w = *(const uint32_t *)(src + (kdim - 1) * pitch + r);
        d0[kp] = w & 0xffffu;
        d1[kp] = w >> 16;
      }
    } else {
      if (kp) odl_packc1(d0, src + r, (uint32_t)kp, (uint32_t)pitch * 2, 4);
      if (kdim & 1) d0[kp] = src[(kdim - 1) * pitch + r];
    }
  }
}

/* A convolution's weights W[co][(kh k + kw) cin + ci] (rows wpitch halves apart) into rows of k segments
 * of sh halves (sh even): in segment kh, tap kw's cin channels at kw * pp (pp: halves a pixel in the
 * input tiles), zeros elsewhere. */
static inline void odl_conv_weights(f16 *dst, const f16 *src, int cout, int k, int cin, int wpitch, int pp, int sh, int nc) {
  for (int co = pi_core_id(); co < cout; co += nc) {
    f16 *d = dst + co * k * sh;
    const f16 *sr = src + co * wpitch;
    for (int i = 0; i < k * sh; i++) d[i] = 0;
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++)
        for (int c = 0; c < cin; c++) d[kh * sh + kw * pp + c] = sr[(kh * k + kw) * cin + c];
  }
}

/* An input tile with pixels of cin halves (dense) from rows of w pixels of `sp` halves each (as the DMA
 * left them): nin rows of rh halves, the image rows at [lo, hi) from pixel pl on, zeros elsewhere. */
static inline void odl_conv_dense(f16 *dst, const f16 *src, int nin, int rh, int w, int cin, int sp, int pl, int lo,
                                  int hi, int nc) {
  for (int r = pi_core_id(); r < nin; r += nc) {
    f16 *d = dst + r * rh;
    if (r < lo || r >= hi) {
      for (int i = 0; i < rh; i++) d[i] = 0;
      continue;
    }
    const f16 *sr = src + (r - lo) * w * sp;
    int i = 0;
    for (; i < pl * cin; i++) d[i] = 0;
    for (int px = 0; px < w; px++, sr += sp)
      for (int c = 0; c < cin; c++) d[i++] = sr[c];
    for (; i < rh; i++) d[i] = 0;
  }
}

/* The padding of an input tile of nin rows of rw words: rows before lo and from hi on are zero, and in the
 * rows between, the first lw and the last rw2 words (what the DMA brought of the neighbouring rows). */
static inline void odl_conv_pad(uint32_t *buf, int nin, int rw, int lw, int rw2, int lo, int hi, int nc) {
  for (int r = pi_core_id(); r < nin; r += nc) {
    uint32_t *row = buf + r * rw;
    if (r < lo || r >= hi) {
      for (int i = 0; i < rw; i++) row[i] = 0;
      continue;
    }
    for (int i = 0; i < lw; i++) row[i] = 0;
    for (int i = rw - rw2; i < rw; i++) row[i] = 0;
  }
}

/* The `cols` columns (even) of a K-major FP16 source S[kdim][cols] (rows `pitch` halves apart, kdim >= 2) into
 * rows of K-pairs `row_bytes` apart, each row's sum in FP16 to sums[] (a bias gradient whose rows see every
 * pixel in one tile): every core one call for its contiguous share of column pairs. */
static inline void odl_rows_ts(uint32_t *dst, const f16 *src, int cols, int kdim, int pitch, int row_bytes, f16 *sums) {
  int lo, hi;
  odl_chunk(cols / 2, &lo, &hi);
  if (hi <= lo) return;
  uint32_t *d = (uint32_t *)((char *)dst + 2 * lo * row_bytes);
  if (kdim & 1)
    odl_tcs1(d, src + 2 * lo, (uint32_t)(kdim / 2), (uint32_t)pitch * 2, (uint32_t)(hi - lo), (uint32_t)row_bytes, sums + 2 * lo);
  else
    odl_tcs0(d, src + 2 * lo, (uint32_t)(kdim / 2), (uint32_t)pitch * 2, (uint32_t)(hi - lo), (uint32_t)row_bytes, sums + 2 * lo);
}

/* odl_units_t for rows of a transposed matrix (step 1) that also writes each row's sum in FP16 to
 * sums[r] for the rows r < nsum (a bias gradient whose rows see every pixel in one tile), summed in the
 * order of the row's K-pairs. */
static inline void odl_units_ts(uint32_t *dst, const f16 *src, const uint16_t *tab, int nu, int valid, int kdim, int pitch,
                                int c0, f16 *sums, int nsum) {
  int nc = pi_cl_team_nb_cores(), k2 = (kdim + 1) / 2, kp = kdim / 2, gap = tab[4 * nu];
  int u = pi_core_id() - c0;
  if (u < 0) u += nc;
  for (; u < nu; u += nc) {
    const uint16_t *e = tab + 4 * u;
    int r = e[0], two = e[1] == 2;
    uint32_t *d = dst + e[2], *d1 = d + gap;
    if (two && r + 1 < valid) {
      uint32_t s0 = 0, s1 = 0;
      if (kp) {
        uint64_t s = odl_packc2s(d, src + r, (uint32_t)kp, (uint32_t)pitch * 2, d1, 4);
        s0 = (uint32_t)s;
        s1 = (uint32_t)(s >> 32);
      }
      if (kdim & 1) {
        uint32_t w = *(const uint32_t *)(src + (kdim - 1) * pitch + r);
        d[kp] = w & 0xffffu;
        d1[kp] = w >> 16;
        s0 = pulp_vfdotpex_s_h(s0, d[kp], 0x3c003c00u);
        s1 = pulp_vfdotpex_s_h(s1, d1[kp], 0x3c003c00u);
      }
      if (r < nsum) sums[r] = (f16)pulp_vfcpka_h_s(s0, 0);
      if (r + 1 < nsum) sums[r + 1] = (f16)pulp_vfcpka_h_s(s1, 0);
      continue;
    }
    for (int q = 0; q <= two; q++) {
      uint32_t *dq = q ? d1 : d, s = 0;
      for (int kk = 0; kk < k2; kk++) {
        int k0 = 2 * kk, c = r + q;
        uint32_t lo = c < valid ? src[k0 * pitch + c] : 0, hi = c < valid && k0 + 1 < kdim ? src[(k0 + 1) * pitch + c] : 0;
        dq[kk] = lo | hi << 16;
        s = pulp_vfdotpex_s_h(s, dq[kk], 0x3c003c00u);
      }
      if (r + q < nsum) sums[r + q] = (f16)pulp_vfcpka_h_s(s, 0);
    }
  }
}

/* Pack rows of a row-major FP16 matrix (rows contiguous in K, `pitch` halves apart, K even) into
 * 4-row panels. Rows past `rows` are zero. */
static inline void odl_pack_rows(uint32_t *dst, const f16 *src, int rows, int blocks, int k2, int pitch) {
  int lo, hi;
  odl_chunk(blocks, &lo, &hi);
  for (int b = lo; b < hi; b++) {
    uint32_t *d = dst + b * k2 * 4;
    if (4 * b + 3 < rows) {
      odl_pack4(d, src + 4 * b * pitch, (uint32_t)k2, (uint32_t)pitch * 2);
      continue;
    }
    for (int i = 0; i < 4; i++) {
      int r = 4 * b + i;
      if (r < rows) {
        const uint32_t *s = (const uint32_t *)(src + r * pitch);
        for (int kk = 0; kk < k2; kk++) d[kk * 4 + i] = s[kk];
      } else {
        for (int kk = 0; kk < k2; kk++) d[kk * 4 + i] = 0;
      }
    }
  }
}

/* Pack the transpose of a row-major FP16 matrix S[K][rows] (element (k, r) at src[k*pitch + r]) into
 * 4-row panels of A[r][k]. K may be odd: the last pair is padded with zero. */
static inline void odl_pack_cols(uint32_t *dst, const f16 *src, int rows, int blocks, int kdim, int pitch) {
  int k2 = (kdim + 1) / 2, lo, hi;
  odl_chunk(blocks, &lo, &hi);
  for (int b = lo; b < hi; b++) {
    uint32_t *d = dst + b * k2 * 4;
    for (int i = 0; i < 4; i++) {
      int r = 4 * b + i;
      if (r >= rows) {
        for (int kk = 0; kk < k2; kk++) d[kk * 4 + i] = 0;
        continue;
      }
      const f16 *s = src + r;
      for (int kk = 0; kk < kdim / 2; kk++) d[kk * 4 + i] = s[2 * kk * pitch] | ((uint32_t)s[(2 * kk + 1) * pitch] << 16);
      if (kdim & 1) d[(k2 - 1) * 4 + i] = s[(kdim - 1) * pitch];
    }
  }
}

/* C[M][N] = A.B^T (+ bias) for packed panels; rows of C are `pitch` halves apart, N is rounded up to
 * even with a zero pad column. Blocks of 4x4 outputs are dealt out to the cores round-robin. */
static inline void odl_matmul(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, f16 *c, int pitch,
                              const float *bias) {
  int mb = (m + 3) / 4, nb = (n + 3) / 4, nc = pi_cl_team_nb_cores(), id = pi_core_id(), turn = 0;
  float acc[16];
  for (int bm = 0; bm < mb; bm++) {
    for (int bn = 0; bn < nb; bn++) {
      int mine = turn == id;
      if (++turn == nc) turn = 0;
      if (!mine) continue;
      const uint32_t *a = ap + bm * k2 * 4, *b = bp + bn * k2 * 4;
      if (4 * bm + 3 < m && 4 * bn + 3 < n) {  /* a full block: stored by the micro-kernel itself */
        odl_mm4x4_st(a, b, (uint32_t)k2, c + 4 * bm * pitch + 4 * bn, (uint32_t)pitch * 2, bias ? bias + 4 * bn : odl_zero4);
        continue;
      }
      odl_mm4x4(a, b, (uint32_t)k2, acc);
      for (int i = 0; i < 4; i++) {
        int r = 4 * bm + i;
        if (r >= m) break;
        uint32_t *row = (uint32_t *)(c + r * pitch);
        for (int j = 0; j < 4; j += 2) {
          int col = 4 * bn + j;
          if (col >= n) break;
          float v0 = acc[4 * i + j], v1 = col + 1 < n ? acc[4 * i + j + 1] : 0.0f;
          if (bias) {
            v0 += bias[col];
            if (col + 1 < n) v1 += bias[col + 1];
          }
          row[col / 2] = pulp_vfcpka_h_s(odl_f32_bits(v0), odl_f32_bits(v1));
        }
      }
    }
  }
}

/* Widen an FP16 vector to FP32 (biases are added in FP32 before the final rounding). */
static inline void odl_widen(float *dst, const f16 *src, int n) {
  int lo, hi;
  odl_chunk(n, &lo, &hi);
  for (int i = lo; i < hi; i++) dst[i] = odl_h2f(src[i]);
}

/* Copy the first `keep` channels of each of `pixels` rows (pitch `sp` halves) to rows of pitch `dp`,
 * zeroing the pad channel when `keep` is odd: the stored activations of the forward pass. */
static inline void odl_keep_channels(f16 *dst, const f16 *src, int pixels, int sp, int keep, int dp) {
  int lo, hi;
  odl_chunk(pixels, &lo, &hi);
  for (int p = lo; p < hi; p++) {
    const uint32_t *s = (const uint32_t *)(src + p * sp);
    uint32_t *d = (uint32_t *)(dst + p * dp);
    for (int c = 0; c < keep / 2; c++) d[c] = s[c];
    if (keep & 1) d[keep / 2] = s[keep / 2] & 0xffffu;
  }
}

/* SGD on a block: w[r][c] -= lr * g[r][c] for r < rows, c < cols (pairs of FP16, vfmac with -lr).
 * g has pitch gp, w pitch wp (halves, both even). The pad of g is zero, so w's neighbour survives. */
static inline void odl_sgd_block(f16 *w, int wp, const f16 *g, int gp, int rows, int cols, uint32_t neg_lr2) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  int c2 = (cols + 1) / 2;
  for (int r = lo; r < hi; r++) {
    uint32_t *wr = (uint32_t *)(w + r * wp);
    const uint32_t *gr = (const uint32_t *)(g + r * gp);
    for (int c = 0; c < c2; c++) wr[c] = pulp_vfmac_h(wr[c], gr[c], neg_lr2);
  }
}


/* ---------------------------------------------------------------- orchestration (master core) */

/* Cluster-DMA transfers of any size: split into commands of at most 32 KiB (the runtimes keep the
 * length field to 16 bits), so they go straight to the command queue without pi_cl_dma_cmd's size
 * check. Time spent waiting is accounted as DMA wait. */
typedef struct {
  pi_cl_dma_cmd_t cmd[16];
  int n;
} odl_dma_t;

extern uint32_t odl_t_dma, odl_t_compute;

static inline void odl_dma_1d(odl_dma_t *d, uint32_t ext, uint32_t loc, uint32_t bytes, pi_cl_dma_dir_e dir) {
  while (bytes) {
    uint32_t n = bytes > 32768 ? 32768 : bytes;
    pulp_cl_dma_push(ext, loc, n, dir, &d->cmd[d->n++]);
    ext += n;
    loc += n;
    bytes -= n;
  }
}
/* `rows` rows of `row_bytes` in L1 (contiguous), `stride` bytes apart on the external side, with
 * row_bytes > stride allowed: rows overlap outside (L1 rows padded to spread them over the banks). */
static inline void odl_dma_2d_long(odl_dma_t *d, uint32_t ext, uint32_t loc, uint32_t row_bytes, uint32_t rows,
                                   uint32_t stride, pi_cl_dma_dir_e dir) {
  uint32_t per = 32768 / row_bytes;
  if (per == 0) per = 1;
  while (rows) {
    uint32_t r = rows > per ? per : rows;
    pulp_cl_dma_push_2d(ext, loc, r * row_bytes, stride, row_bytes, dir, &d->cmd[d->n++]);
    ext += r * stride;
    loc += r * row_bytes;
    rows -= r;
  }
}
/* `rows` rows of `row_bytes` each, `stride` bytes apart on the external side, packed in L1. */
static inline void odl_dma_2d(odl_dma_t *d, uint32_t ext, uint32_t loc, uint32_t row_bytes, uint32_t rows,
                              uint32_t stride, pi_cl_dma_dir_e dir) {
  if (row_bytes == stride) {
    odl_dma_1d(d, ext, loc, row_bytes * rows, dir);
    return;
  }
  odl_dma_2d_long(d, ext, loc, row_bytes, rows, stride, dir);
}
static inline void odl_dma_wait(odl_dma_t *d) {
  uint32_t t0 = pulp_mcycle();
  for (int i = 0; i < d->n; i++) pi_cl_dma_cmd_wait(&d->cmd[i]);
  d->n = 0;
  odl_t_dma += pulp_mcycle() - t0;
}
/* The same from inside forked compute (its time is the fork's). */
static inline void odl_dma_wait_quiet(odl_dma_t *d) {
  for (int i = 0; i < d->n; i++) pi_cl_dma_cmd_wait(&d->cmd[i]);
  d->n = 0;
}
static inline void odl_fork(void (*fn)(void *), void *arg) {
  uint32_t t0 = pulp_mcycle();
  pi_cl_team_fork(0, fn, arg);
  odl_t_compute += pulp_mcycle() - t0;
}

/* ---------------------------------------------------------------- more compute blocks */

/* FP32 accumulation variant of odl_matmul: acc[r][col] += (A.B^T)[r][col], acc rows `apitch` floats. */
static inline void odl_matmul_acc(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, float *accm,
                                  int apitch) {
  int mb = (m + 3) / 4, nb = (n + 3) / 4, nc = pi_cl_team_nb_cores(), id = pi_core_id(), turn = 0;
  float acc[16];
  for (int bm = 0; bm < mb; bm++)
  for (int bn = 0; bn < nb; bn++) {
    int mine = turn == id;
    if (++turn == nc) turn = 0;
    if (!mine) continue;
    odl_mm4x4(ap + bm * k2 * 4, bp + bn * k2 * 4, (uint32_t)k2, acc);
    for (int i = 0; i < 4; i++) {
      int r = 4 * bm + i;
      if (r >= m) break;
      float *row = accm + r * apitch;
      for (int j = 0; j < 4; j++) {
        int col = 4 * bn + j;
        if (col >= n) break;
        row[col] += acc[4 * i + j];
      }
    }
  }
}

/* FP32 accumulator rows -> FP16 rows (pitch in halves, zero pad when n is odd). */
static inline void odl_narrow_rows(f16 *dst, int dpitch, const float *src, int spitch, int rows, int n) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    uint32_t *d = (uint32_t *)(dst + r * dpitch);
    const float *s = src + r * spitch;
    for (int c = 0; c < n; c += 2)
      d[c / 2] = pulp_vfcpka_h_s(odl_f32_bits(s[c]), odl_f32_bits(c + 1 < n ? s[c + 1] : 0.0f));
  }
}

static inline void odl_zero_f32(float *p, int n) {
  int lo, hi;
  odl_chunk(n, &lo, &hi);
  for (int i = lo; i < hi; i++) p[i] = 0.0f;
}

/* Column sums in FP32 (bias gradients): acc[c] += sum_r S[r][c] for c < cols. */
static inline void odl_colsum_acc(float *acc, const f16 *src, int rows, int pitch, int cols) {
  int lo, hi;
  odl_chunk(cols, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += odl_h2f(src[r * pitch + c]);
    acc[c] += s;
  }
}

/* One panel row of an output pixel: its (kh, kw) taps start at words `off` from the window's first
 * pixel (`base`), each tap cin halves of a pixel of `pitch` (even) halves; a tap whose bit is set in
 * `zmask` lies in the padding and reads `zero` (a zero pixel) instead. The halves are paired into
 * words as they come: with an odd cin every other tap starts on a half, so its words are shifted by one
 * half (the pad lane of each pixel never reaches the panel). Words go to cw[0], cw[4], ... (4-row
 * panels); the rest of the row, up to k2 words, is zeroed. */
#define ODL_TAP(t) (((zmask) >> (t)) & 1 ? zero : base + off[t])
static inline __attribute__((always_inline)) void odl_im2col_row(uint32_t *cw, const uint32_t *base, const int *off, uint32_t zmask,
                                  const uint32_t *zero, int taps, int cin, int k2) {
  uint32_t *end = cw + 4 * k2;
  int full = cin >> 1;
  if (cin == 3) {   /* three channels (an image's): two taps make three words */
    int t = 0;
    for (; t + 1 < taps; t += 2, cw += 12) {
      const uint32_t *p = ODL_TAP(t), *q = ODL_TAP(t + 1);
      uint32_t q0 = q[0];
      cw[0] = p[0];
      cw[4] = (p[1] & 0xffffu) | (q0 << 16);
      cw[8] = (q0 >> 16) | (q[1] << 16);
    }
    if (t < taps) {
      const uint32_t *p = ODL_TAP(t);
      cw[0] = p[0];
      cw[4] = p[1] & 0xffffu;
      cw += 8;
    }
  } else if (!(cin & 1)) {
    for (int t = 0; t < taps; t++) {
      const uint32_t *p = ODL_TAP(t);
      for (int c = 0; c < full; c++, cw += 4) *cw = p[c];
    }
  } else {
    uint32_t pend = 0;
    int odd = 0;
    for (int t = 0; t < taps; t++) {
      const uint32_t *p = ODL_TAP(t);
      if (!odd) {
        for (int c = 0; c < full; c++, cw += 4) *cw = p[c];
        pend = p[full] & 0xffffu;
      } else {
        *cw = pend | (p[0] << 16);
        cw += 4;
        for (int c = 1; c <= full; c++, cw += 4) *cw = (p[c - 1] >> 16) | (p[c] << 16);
      }
      odd ^= 1;
    }
    if (odd) {
      *cw = pend;
      cw += 4;
    }
  }
  for (; cw < end; cw += 4) *cw = 0;
}
#undef ODL_TAP

/* The panel row of a 3x3 window of three-channel pixels (pitch 4: an image's) inside the image, from its
 * first pixel r0 and the words of an input row rs: two taps make three words, 27 halves and a zero. */
static inline __attribute__((always_inline)) void odl_im2col_rgb3(uint32_t *cw, const uint32_t *r0, int rs) {
  const uint32_t *r1 = r0 + rs, *r2 = r1 + rs;
#define ODL_TAP_PAIR(o, p, q)                                 \
  do {                                                        \
    uint32_t q0 = (q)[0];                                     \
    cw[o] = (p)[0];                                           \
    cw[(o) + 4] = ((p)[1] & 0xffffu) | (q0 << 16);            \
    cw[(o) + 8] = (q0 >> 16) | ((q)[1] << 16);                \
  } while (0)
  ODL_TAP_PAIR(0, r0, r0 + 2);
  ODL_TAP_PAIR(12, r0 + 4, r1);
  ODL_TAP_PAIR(24, r1 + 2, r1 + 4);
  ODL_TAP_PAIR(36, r2, r2 + 2);
#undef ODL_TAP_PAIR
  cw[48] = r2[4];
  cw[52] = r2[5] & 0xffffu;
}

/* im2col into 4-row panels for a convolution tile of whole output rows: panel row t is output pixel
 * (oh0 + t / w_out, t % w_out); its K index (kh*k + kw)*cin + ci reads input row ih - ih0 of `raw`
 * (rows of w_in pixels, `pitch` halves per pixel), zero outside the image (padding) and past K.
 * Pixels of an even pitch (every layout the deployed steps use) and at most 5x5 taps are copied by
 * words (odl_im2col_row), the padding's taps from a zero pixel; others half by half. */
static inline void odl_pack_im2col(uint32_t *dst, const f16 *raw, int rows, int oh0, int ih0, int w_out, int h_in,
                                   int w_in, int pitch, int cin, int k, int stride, int pad_top, int pad_left,
                                   int k2) {
  int lo, hi;
  int blocks = (rows + 3) / 4;
  odl_chunk(blocks, &lo, &hi);
  f16 *d16 = (f16 *)dst;
  int off[25];
  static const uint32_t zero[64];   /* a pixel of the padding: at most 128 halves */
  int taps = k * k, words = !(pitch & 1) && k <= 5 && pitch <= 128;
  int rgb3 = cin == 3 && pitch == 4 && k == 3 && k2 == 14;
  if (words)
    for (int kh = 0, t = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++, t++) off[t] = (kh * w_in + kw) * pitch / 2;
  int oh = oh0 + 4 * lo / w_out, ow = 4 * lo % w_out;   /* panel row t's pixel, advanced row by row */
  for (int b = lo; b < hi; b++) {
    for (int i = 0; i < 4; i++) {
      int t = 4 * b + i;
      f16 *col = d16 + (b * k2 * 4 + i) * 2;  /* halves (kk) of this row: col[(kk/2)*8 + (kk&1)] */
      int kk = 0;
      if (t < rows) {
        int top = oh * stride - pad_top, left = ow * stride - pad_left;
        if (++ow == w_out) {
          ow = 0;
          oh++;
        }
        if (words) {
          uint32_t *cw = dst + b * k2 * 4 + i;
          const uint32_t *base = (const uint32_t *)raw + ((top - ih0) * w_in + left) * (pitch / 2);
          if (top >= 0 && top + k <= h_in && left >= 0 && left + k <= w_in) {
            if (rgb3)
              odl_im2col_rgb3(cw, base, w_in * 2);
            else
              odl_im2col_row(cw, base, off, 0, zero, taps, cin, k2);   /* inside the image: no tap tested */
          } else {
            uint32_t zmask = 0;
            for (int kh = 0, tt = 0; kh < k; kh++)
              for (int kw = 0; kw < k; kw++, tt++)
                if (top + kh < 0 || top + kh >= h_in || left + kw < 0 || left + kw >= w_in) zmask |= 1u << tt;
            odl_im2col_row(cw, base, off, zmask, zero, taps, cin, k2);
          }
          continue;
        }
        for (int kh = 0; kh < k; kh++) {
          int ih = top + kh;
          for (int kw = 0; kw < k; kw++) {
            int iw = left + kw;
            int ok = ih >= 0 && ih < h_in && iw >= 0 && iw < w_in;
            const f16 *s = raw + ((ih - ih0) * w_in + iw) * pitch;
            for (int ci = 0; ci < cin; ci++, kk++) col[(kk >> 1) * 8 + (kk & 1)] = ok ? s[ci] : 0;
          }
        }
      }
      for (; kk < 2 * k2; kk++) col[(kk >> 1) * 8 + (kk & 1)] = 0;
    }
  }
}

/* Transposed im2col into panels for a convolution's weight gradient: panel row n = (kh*k + kw)*cin + ci
 * (n0 + 4b + i), panel word kk = output pixels p0 + 2kk, p0 + 2kk + 1 of a tile of whole output rows
 * starting at output row oh0; `raw` holds input rows from ih0 (w_in pixels of `pitch` halves). */
static inline void odl_pack_im2col_t(uint32_t *dst, const f16 *raw, int rows, int n0, int npix, int oh0, int ih0,
                                     int w_out, int h_in, int w_in, int pitch, int cin, int k, int stride,
                                     int pad_top, int pad_left) {
  int k2 = (npix + 1) / 2, lo, hi;
  int blocks = (rows + 3) / 4;
  odl_chunk(blocks, &lo, &hi);
  f16 *d16 = (f16 *)dst;
  for (int b = lo; b < hi; b++) {
    for (int i = 0; i < 4; i++) {
      int r = 4 * b + i;
      f16 *row = d16 + (b * k2 * 4 + i) * 2;
      if (r >= rows) {
        for (int kk = 0; kk < 2 * k2; kk++) row[(kk >> 1) * 8 + (kk & 1)] = 0;
        continue;
      }
      int n = n0 + r, tap = n / cin, ci = n % cin, kh = tap / k, kw = tap % k;
      for (int q = 0; q < 2 * k2; q++) {
        f16 v = 0;
        if (q < npix) {
          int oh = oh0 + q / w_out, ow = q % w_out;
          int ih = oh * stride + kh - pad_top, iw = ow * stride + kw - pad_left;
          if (ih >= 0 && ih < h_in && iw >= 0 && iw < w_in) v = raw[((ih - ih0) * w_in + iw) * pitch + ci];
        }
        row[(q >> 1) * 8 + (q & 1)] = v;
      }
    }
  }
}

/* ---------------------------------------------------------------- linear (one sample) */

/* y[r] = W[r] . x (+ b[r]) for rows r < rows, K halves per row (even), FP32 accumulation, 4 rows at a
 * time so that each word of x is loaded once per 4 rows. */
static inline void odl_matvec(f16 *y, const f16 *w, int wpitch, const f16 *x, int rows, int k, const f16 *bias) {
  int nb = (rows + 3) / 4, lo, hi;
  odl_chunk(nb, &lo, &hi);
  const uint32_t *xv = (const uint32_t *)x;
  for (int b = lo; b < hi; b++) {
    int r0 = 4 * b;
    const uint32_t *w0 = (const uint32_t *)(w + r0 * wpitch);
    const uint32_t *w1 = (const uint32_t *)(w + (r0 + 1 < rows ? r0 + 1 : r0) * wpitch);
    const uint32_t *w2 = (const uint32_t *)(w + (r0 + 2 < rows ? r0 + 2 : r0) * wpitch);
    const uint32_t *w3 = (const uint32_t *)(w + (r0 + 3 < rows ? r0 + 3 : r0) * wpitch);
    uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int kk = 0; kk < k / 2; kk++) {
      uint32_t xx = xv[kk];
      a0 = pulp_vfdotpex_s_h(a0, w0[kk], xx);
      a1 = pulp_vfdotpex_s_h(a1, w1[kk], xx);
      a2 = pulp_vfdotpex_s_h(a2, w2[kk], xx);
      a3 = pulp_vfdotpex_s_h(a3, w3[kk], xx);
    }
    uint32_t acc[4] = {a0, a1, a2, a3};
    for (int i = 0; i < 4 && r0 + i < rows; i++) {
      float v;
      __builtin_memcpy(&v, &acc[i], 4);
      if (bias) v += odl_h2f(bias[r0 + i]);
      y[r0 + i] = odl_f2h(v);
    }
  }
}

/* dx[c] = sum_{r < rows} dy[r] * W[r][c] for c < cols (pairs of columns per step, FP32 per lane: the
 * gradient value is placed in one lane of the second operand so vfdotpex multiplies one lane only). */
static inline void odl_matvec_t(f16 *dx, const f16 *w, int wpitch, const f16 *dy, int rows, int cols) {
  int c2 = (cols + 1) / 2, lo, hi;
  odl_chunk(c2, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    uint32_t a0 = 0, a1 = 0;
    for (int r = 0; r < rows; r++) {
      uint32_t wv = ((const uint32_t *)(w + r * wpitch))[c];
      uint32_t d = dy[r];
      a0 = pulp_vfdotpex_s_h(a0, wv, d);
      a1 = pulp_vfdotpex_s_h(a1, wv, d << 16);
    }
    ((uint32_t *)dx)[c] = pulp_vfcpka_h_s(a0, 2 * c + 1 < cols ? a1 : 0u);
  }
}

/* dW[r][c] = dy[r] * x[c] (outer product, rows r < rows), rows `dpitch` halves apart. */
static inline void odl_outer(f16 *dw, int dpitch, const f16 *dy, const f16 *x, int rows, int cols) {
  int lo, hi, c2 = (cols + 1) / 2;
  odl_chunk(rows, &lo, &hi);
  const uint32_t *xv = (const uint32_t *)x;
  for (int r = lo; r < hi; r++) {
    uint32_t *d = (uint32_t *)(dw + r * dpitch);
    uint32_t g = dy[r];
    for (int c = 0; c < c2; c++) d[c] = pulp_vfmul_r_h(xv[c], g);
    if (cols & 1) d[c2 - 1] &= 0xffffu;  /* 0 * negative is -0: keep the pad a plain zero */
  }
}

/* y = W . x (+ b) for few rows: every core takes a slice of K for all rows, then the partial FP32 sums
 * (`part`, cores x rows floats) are added up, so all cores work even when rows < 4 x cores. */
static inline void odl_matvec_ksplit(f16 *y, const f16 *w, int wpitch, const f16 *x, int rows, int k, const f16 *bias,
                                     float *part) {
  int lo, hi, id = pi_core_id();
  odl_chunk(k / 2, &lo, &hi);
  const uint32_t *xv = (const uint32_t *)x;
  for (int r = 0; r < rows; r++) {
    const uint32_t *wr = (const uint32_t *)(w + r * wpitch);
    uint32_t a = 0;
    for (int kk = lo; kk < hi; kk++) a = pulp_vfdotpex_s_h(a, wr[kk], xv[kk]);
    __builtin_memcpy(&part[id * rows + r], &a, 4);
  }
  pi_cl_team_barrier();
  odl_chunk(rows, &lo, &hi);
  int nc = pi_cl_team_nb_cores();
  for (int r = lo; r < hi; r++) {
    float v = bias ? odl_h2f(bias[r]) : 0.0f;
    for (int c = 0; c < nc; c++) v += part[c * rows + r];
    y[r] = odl_f2h(v);
  }
}

/* ---------------------------------------------------------------- depthwise 3x3, padding 1: the generated
 * routines of harness/kernels/dwblock.py run one item (channel pair, band of rows) each. */

typedef void (*odl_dw_fn)(void *y, const void *x, const void *w, uint32_t bias, uint32_t nrows, uint32_t pix);

/* Run a generated depthwise routine over the items of a tile: (channel pair, band of nb bands of rows),
 * y (ho rows of wo pixels), xpad (the input map of wd pixels a row between two zero rows), p2 words a
 * pixel, c2 channel pairs, nc cores. Every size is a constant of the call, so no division is left. */
static inline void odl_dw3_items(odl_dw_fn fn, uint32_t *y, const uint32_t *xpad, const uint32_t *w, const uint32_t *b,
                                 int c2, int ho, int wo, int wd, int s, int p2, int nb, int nc) {
  for (int it = pi_core_id(); it < c2 * nb; it += nc) {
    int c = it % c2, band = it / c2;
    int r0 = band * ho / nb, r1 = (band + 1) * ho / nb;
    if (r1 > r0) fn(y + r0 * wo * p2 + c, xpad + r0 * s * wd * p2 + c, w + c, b ? b[c] : 0u, (uint32_t)(r1 - r0), 4 * p2);
  }
}

/* The weight gradient over a tile: dw its 9 taps (3 p2 words a row of taps), xpad the stored activations
 * between their zero rows (`row` words a map row), dy, db the bias gradient or 0. Without `split`, one item
 * a channel pair, all three rows of taps (full: its routine, also summing the bias); with it, one item a
 * (row of taps, channel pair), three times as many items to share over the cores (fn_b sums the bias along
 * the first row of taps, fn the others), rows of taps outer so that cores working in step read
 * neighbouring words, in different banks. The routines take the pixel pitch in bytes last. */
static inline void odl_dw3_wg_items(odl_dw_fn full, odl_dw_fn fn, odl_dw_fn fn_b, uint32_t *dw, const uint32_t *xpad,
                                    const uint32_t *dy, uint32_t *db, int c2, int p2, int row, int ho, int split, int nc) {
  typedef void (*wg_fn)(uint32_t *, const uint32_t *, const uint32_t *, uint32_t *, uint32_t, uint32_t);
  if (!split) {
    for (int c = pi_core_id(); c < c2; c += nc) ((wg_fn)full)(dw + c, xpad + c, dy + c, db ? db + c : db, 4 * p2, ho);
    return;
  }
  int c = pi_core_id(), kh = 0;
  while (c >= c2) { c -= c2; kh++; }
  while (kh < 3) {
    if (kh == 0 && db) ((wg_fn)fn_b)(dw + c, xpad + c, dy + c, db + c, 4 * p2, ho);
    else ((wg_fn)fn)(dw + 3 * kh * p2 + c, xpad + kh * row + c, dy + c, 0, 4 * p2, ho);
    c += nc;
    while (c >= c2) { c -= c2; kh++; }
  }
}

/* Zero n words, split across the nc cores (word i by core i mod nc: the cores' stores in different banks).
 * Eight stores a loop turn, since a taken branch costs more than a store; not inlined, so that the calls
 * of a program share its lines in the instruction cache. */
static __attribute__((noinline, unused)) void odl_zero_words(uint32_t *p, int n, int nc) {
  uint32_t *q = p + pi_core_id(), *end = p + n;
  for (; q + 7 * nc < end; q += 8 * nc) {
    q[0] = 0; q[nc] = 0; q[2 * nc] = 0; q[3 * nc] = 0; q[4 * nc] = 0; q[5 * nc] = 0; q[6 * nc] = 0; q[7 * nc] = 0;
  }
  for (; q < end; q += nc) *q = 0;
}

/* ---------------------------------------------------------------- depthwise (channel pairs in SIMD lanes) */

/* Forward on a channel tile: y[oh][ow][c] = b[c] + sum over valid taps x[ih][iw][c] * w[kh][kw][c], FP16
 * accumulation of the k*k terms (vfmac.h). All tensors of the tile have a pitch of `p` halves. */
static inline uint32_t odl_dw_px(const uint32_t *xv, const uint32_t *wv, uint32_t acc, int c, int oh, int ow, int h,
                                  int wd, int k, int s, int pt, int pl, int p2) {
  for (int kh = 0; kh < k; kh++) {
    int ih = oh * s + kh - pt;
    if (ih < 0 || ih >= h) continue;
    for (int kw = 0; kw < k; kw++) {
      int iw = ow * s + kw - pl;
      if (iw < 0 || iw >= wd) continue;
      acc = pulp_vfmac_h(acc, xv[(ih * wd + iw) * p2 + c], wv[(kh * k + kw) * p2 + c]);
    }
  }
  return acc;
}

/* Output rows [r0, r1) of the layer; the caller may pass x and y shifted so that rows outside the tile
 * held in L1 are never touched (row tiling of large feature maps). */
static inline void odl_dw_fw_rows(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo,
                                  int k, int s, int pt, int pl, int p, int r0, int r1) {
  int lo, hi;
  odl_chunk(r1 - r0, &lo, &hi);
  lo += r0;
  hi += r0;
  const uint32_t *xv = (const uint32_t *)x, *wv = (const uint32_t *)w, *bv = (const uint32_t *)b;
  uint32_t *yv = (uint32_t *)y;
  int p2 = p / 2;
  /* interior: every tap inside the image, no bounds checks */
  int oh0 = (pt + s - 1) / s, oh1 = (h - k + pt) / s + 1, ow0 = (pl + s - 1) / s, ow1 = (wd - k + pl) / s + 1;
  if (oh1 > ho) oh1 = ho;
  if (ow1 > wo) ow1 = wo;
  for (int c = 0; c < c2; c++) {
    uint32_t bias = bv ? bv[c] : 0;
    if (k == 3) {
      uint32_t w0 = wv[c], w1 = wv[p2 + c], w2 = wv[2 * p2 + c], w3 = wv[3 * p2 + c], w4 = wv[4 * p2 + c],
               w5 = wv[5 * p2 + c], w6 = wv[6 * p2 + c], w7 = wv[7 * p2 + c], w8 = wv[8 * p2 + c];
      for (int oh = lo; oh < hi; oh++) {
        uint32_t *yo = yv + oh * wo * p2 + c;
        if (oh < oh0 || oh >= oh1) {
          for (int ow = 0; ow < wo; ow++) yo[ow * p2] = odl_dw_px(xv, wv, bias, c, oh, ow, h, wd, k, s, pt, pl, p2);
          continue;
        }
        for (int ow = 0; ow < ow0; ow++) yo[ow * p2] = odl_dw_px(xv, wv, bias, c, oh, ow, h, wd, k, s, pt, pl, p2);
        const uint32_t *r0 = xv + ((oh * s - pt) * wd + ow0 * s - pl) * p2 + c;
        const uint32_t *r1 = r0 + wd * p2, *r2 = r1 + wd * p2;
        uint32_t *yp = yo + ow0 * p2;
        for (int ow = ow0; ow < ow1; ow++) {
          uint32_t acc = pulp_vfmac_h(bias, r0[0], w0);
          acc = pulp_vfmac_h(acc, r0[p2], w1);
          acc = pulp_vfmac_h(acc, r0[2 * p2], w2);
          acc = pulp_vfmac_h(acc, r1[0], w3);
          acc = pulp_vfmac_h(acc, r1[p2], w4);
          acc = pulp_vfmac_h(acc, r1[2 * p2], w5);
          acc = pulp_vfmac_h(acc, r2[0], w6);
          acc = pulp_vfmac_h(acc, r2[p2], w7);
          acc = pulp_vfmac_h(acc, r2[2 * p2], w8);
          *yp = acc;
          yp += p2;
          r0 += s * p2;
          r1 += s * p2;
          r2 += s * p2;
        }
        for (int ow = ow1; ow < wo; ow++) yo[ow * p2] = odl_dw_px(xv, wv, bias, c, oh, ow, h, wd, k, s, pt, pl, p2);
      }
    } else {
      for (int oh = lo; oh < hi; oh++)
        for (int ow = 0; ow < wo; ow++) yv[(oh * wo + ow) * p2 + c] = odl_dw_px(xv, wv, bias, c, oh, ow, h, wd, k, s, pt, pl, p2);
    }
  }
}

static inline void odl_dw_fw(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo,
                             int k, int s, int pt, int pl, int p) {
  odl_dw_fw_rows(y, x, w, b, c2, h, wd, ho, wo, k, s, pt, pl, p, 0, ho);
}

/* Input gradient on a channel tile: dx[ih][iw][c] = sum over taps that reach (ih, iw) of
 * dy[oh][ow][c] * w[kh][kw][c], with oh = (ih + pt - kh) / s when it divides exactly. */
static inline void odl_dw_ig(f16 *dx, const f16 *dy, const f16 *w, int c2, int h, int wd, int ho, int wo, int k, int s,
                             int pt, int pl, int p) {
  int lo, hi;
  odl_chunk(h, &lo, &hi);
  const uint32_t *dv = (const uint32_t *)dy, *wv = (const uint32_t *)w;
  uint32_t *xv = (uint32_t *)dx;
  int p2 = p / 2;
  for (int ih = lo; ih < hi; ih++) {
    /* taps that reach row ih: kh = (ih + pt) mod s, then every s-th; oh = (ih + pt - kh) / s */
    int kh0 = (ih + pt) % s;
    for (int iw = 0; iw < wd; iw++) {
      int kw0 = (iw + pl) % s;
      /* the taps of this pixel, as (dy word offset, w word offset) pairs */
      int ng = 0, goff[64], woff[64];
      for (int kh = kh0; kh < k; kh += s) {
        int oh = (ih + pt - kh) / s;
        if (oh < 0 || oh >= ho) continue;
        for (int kw = kw0; kw < k; kw += s) {
          int ow = (iw + pl - kw) / s;
          if (ow < 0 || ow >= wo || ng == 64) continue;
          goff[ng] = (oh * wo + ow) * p2;
          woff[ng++] = (kh * k + kw) * p2;
        }
      }
      uint32_t *out = xv + (ih * wd + iw) * p2;
      if (ng == 9) {
        const uint32_t *g0 = dv + goff[0], *g1 = dv + goff[1], *g2 = dv + goff[2], *g3 = dv + goff[3], *g4 = dv + goff[4],
                       *g5 = dv + goff[5], *g6 = dv + goff[6], *g7 = dv + goff[7], *g8 = dv + goff[8];
        const uint32_t *w0 = wv + woff[0], *w1 = wv + woff[1], *w2 = wv + woff[2], *w3 = wv + woff[3], *w4 = wv + woff[4],
                       *w5 = wv + woff[5], *w6 = wv + woff[6], *w7 = wv + woff[7], *w8 = wv + woff[8];
        for (int c = 0; c < c2; c++) {
          uint32_t acc = pulp_vfmac_h(0u, g0[c], w0[c]);
          acc = pulp_vfmac_h(acc, g1[c], w1[c]);
          acc = pulp_vfmac_h(acc, g2[c], w2[c]);
          acc = pulp_vfmac_h(acc, g3[c], w3[c]);
          acc = pulp_vfmac_h(acc, g4[c], w4[c]);
          acc = pulp_vfmac_h(acc, g5[c], w5[c]);
          acc = pulp_vfmac_h(acc, g6[c], w6[c]);
          acc = pulp_vfmac_h(acc, g7[c], w7[c]);
          out[c] = pulp_vfmac_h(acc, g8[c], w8[c]);
        }
      } else {
        for (int c = 0; c < c2; c++) out[c] = 0;
        for (int t = 0; t < ng; t++) {
          const uint32_t *g = dv + goff[t], *ww = wv + woff[t];
          for (int c = 0; c < c2; c++) out[c] = pulp_vfmac_h(out[c], g[c], ww[c]);
        }
      }
    }
  }
}

/* Weight (and bias) gradient on a channel tile. Work items are (tap, channel pair) and, for the bias,
 * (k*k, channel pair); each sums over the output pixels in FP16 lanes for 8 terms at a time, then folds
 * the pair of partial sums into two FP32 accumulators (vfdotpex with {1, 0} and {0, 1}). */
static inline void odl_dw_wg(f16 *dw, f16 *db, const f16 *dy, const f16 *x, int c2, int h, int wd, int ho, int wo, int k,
                             int s, int pt, int pl, int p) {
  const uint32_t one_lo = 0x3c00u, one_hi = 0x3c000000u;
  const uint32_t *dv = (const uint32_t *)dy, *xv = (const uint32_t *)x;
  int p2 = p / 2, taps = k * k, items = (taps + (db ? 1 : 0)) * c2;
  int nc = pi_cl_team_nb_cores();
  for (int it = pi_core_id(); it < items; it += nc) {
    int tap = it / c2, c = it % c2, kh = tap / k, kw = tap % k;
    int bias = tap == taps;
    /* output pixels whose tap (kh, kw) falls inside the image: a rectangle */
    int oh0 = 0, oh1 = ho, ow0 = 0, ow1 = wo;
    if (!bias) {
      oh0 = kh < pt ? (pt - kh + s - 1) / s : 0;
      oh1 = (h - 1 + pt - kh) / s + 1;
      ow0 = kw < pl ? (pl - kw + s - 1) / s : 0;
      ow1 = (wd - 1 + pl - kw) / s + 1;
      if (oh1 > ho) oh1 = ho;
      if (ow1 > wo) ow1 = wo;
    }
    uint32_t lo32 = 0, hi32 = 0;
    for (int oh = oh0; oh < oh1; oh++) {
      const uint32_t *g = dv + (oh * wo + ow0) * p2 + c;
      const uint32_t *xr = xv + ((oh * s + kh - pt) * wd + ow0 * s + kw - pl) * p2 + c;
      for (int ow = ow0; ow < ow1; ow += 8) {
        int n = ow1 - ow < 8 ? ow1 - ow : 8;
        uint32_t acc = 0;
        if (bias)
          for (int j = 0; j < n; j++, g += p2) acc = pulp_vfadd_h(acc, *g);
        else
          for (int j = 0; j < n; j++, g += p2, xr += s * p2) acc = pulp_vfmac_h(acc, *g, *xr);
        lo32 = pulp_vfdotpex_s_h(lo32, acc, one_lo);
        hi32 = pulp_vfdotpex_s_h(hi32, acc, one_hi);
      }
    }
    uint32_t *dst = bias ? (uint32_t *)db : (uint32_t *)(dw + tap * p);
    dst[c] = pulp_vfcpka_h_s(lo32, hi32);
  }
}

/* ---------------------------------------------------------------- convolution input gradient */

/* Panel row t = input pixel (ih0 + t / w_in, t % w_in); K index (kh*k + kw)*ko + co holds
 * dy[oh][ow][co] when the tap reaches that pixel: oh = (ih + pt - kh) / s exactly and in range.
 * `raw` holds dy rows from oh_base (w_out pixels of `pitch` halves). */
static inline void odl_pack_dy_cols(uint32_t *dst, const f16 *raw, int rows, int ih0, int oh_base, int w_in, int h_out,
                                    int w_out, int pitch, int ko, int k, int s, int pt, int pl, int k2) {
  int lo, hi, blocks = (rows + 3) / 4;
  odl_chunk(blocks, &lo, &hi);
  f16 *d16 = (f16 *)dst;
  for (int b = lo; b < hi; b++) {
    for (int i = 0; i < 4; i++) {
      int t = 4 * b + i;
      f16 *col = d16 + (b * k2 * 4 + i) * 2;
      int kk = 0;
      if (t < rows) {
        int ih = ih0 + t / w_in, iw = t % w_in;
        for (int kh = 0; kh < k; kh++) {
          int th = ih + pt - kh, oh = th / s;
          int okh = th >= 0 && th % s == 0 && oh < h_out;
          for (int kw = 0; kw < k; kw++) {
            int tw = iw + pl - kw, ow = tw / s;
            int ok = okh && tw >= 0 && tw % s == 0 && ow < w_out;
            const f16 *src = raw + ((oh - oh_base) * w_out + ow) * pitch;
            for (int co = 0; co < ko; co++, kk++) col[(kk >> 1) * 8 + (kk & 1)] = ok ? src[co] : 0;
          }
        }
      }
      for (; kk < 2 * k2; kk++) col[(kk >> 1) * 8 + (kk & 1)] = 0;
    }
  }
}

/* Panel row r = input channel n0 + r; K index (kh*k + kw)*ko + co holds W[co][(kh*k + kw)*cin + ci]
 * (`raw`: the first ko rows of W, `pitch` halves apart). */
static inline void odl_pack_w_t(uint32_t *dst, const f16 *raw, int rows, int n0, int ko, int taps, int cin, int pitch,
                                int k2) {
  int lo, hi, blocks = (rows + 3) / 4;
  odl_chunk(blocks, &lo, &hi);
  f16 *d16 = (f16 *)dst;
  for (int b = lo; b < hi; b++) {
    for (int i = 0; i < 4; i++) {
      int r = 4 * b + i;
      f16 *col = d16 + (b * k2 * 4 + i) * 2;
      int kk = 0;
      if (r < rows) {
        int ci = n0 + r;
        for (int tap = 0; tap < taps; tap++)
          for (int co = 0; co < ko; co++, kk++) col[(kk >> 1) * 8 + (kk & 1)] = raw[co * pitch + tap * cin + ci];
      }
      for (; kk < 2 * k2; kk++) col[(kk >> 1) * 8 + (kk & 1)] = 0;
    }
  }
}

/* Convolution SGD: row r of W holds taps*cin weights, row r of dW taps*ki gradients (only the first ki
 * input channels of every tap are updated): w -= lr * g with one fused FP16 rounding (fmadd.h). */
static inline void odl_sgd_conv(f16 *w, int wp, const f16 *g, int gp, int rows, int taps, int cin, int ki,
                                uint32_t neg_lr) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int t = 0; t < taps; t++)
      for (int c = 0; c < ki; c++) {
        uint32_t wv = w[r * wp + t * cin + c], gv = g[r * gp + t * ki + c], out;
        __asm__("fmadd.h %0, %1, %2, %3" : "=r"(out) : "r"(gv), "r"(neg_lr), "r"(wv));
        w[r * wp + t * cin + c] = (f16)out;
      }
}

/* ---------------------------------------------------------------- elementwise operators */
/* Rows of `c` channels (pitch p halves), rows split across the cores. FP16 SIMD where one rounding
 * suffices (ReLU6, add, scale); FP32 per element where a chain of operations would round more. */

static inline void odl_relu6_fw(f16 *y, const f16 *x, int rows, int c, int p) {
  int lo, hi, c2 = (c + 1) / 2;
  odl_chunk(rows, &lo, &hi);
  const uint32_t six = 0x46004600u;
  for (int r = lo; r < hi; r++) {
    const uint32_t *xv = (const uint32_t *)(x + r * p);
    uint32_t *yv = (uint32_t *)(y + r * p);
    for (int i = 0; i < c2; i++) yv[i] = pulp_vfmin_h(pulp_vfmax_h(xv[i], 0u), six);
  }
}

static inline void odl_relu6_bw(f16 *dx, const f16 *x, const f16 *dy, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int i = 0; i < c; i++) {
      float v = odl_h2f(x[r * p + i]);
      dx[r * p + i] = (v > 0.0f && v < 6.0f) ? dy[r * p + i] : 0;
    }
}

static inline void odl_relu_fw(f16 *y, const f16 *x, int rows, int c, int p) {
  int lo, hi, c2 = (c + 1) / 2;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    const uint32_t *xv = (const uint32_t *)(x + r * p);
    uint32_t *yv = (uint32_t *)(y + r * p);
    for (int i = 0; i < c2; i++) yv[i] = pulp_vfmax_h(xv[i], 0u);
  }
}

static inline void odl_relu_bw(f16 *dx, const f16 *x, const f16 *dy, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int i = 0; i < c; i++) dx[r * p + i] = odl_h2f(x[r * p + i]) > 0.0f ? dy[r * p + i] : 0;
}

static inline void odl_hswish_fw(f16 *y, const f16 *x, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int i = 0; i < c; i++) {
      float v = odl_h2f(x[r * p + i]), t = v + 3.0f;
      t = t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
      y[r * p + i] = odl_f2h(v * t / 6.0f);
    }
}

static inline void odl_hswish_bw(f16 *dx, const f16 *x, const f16 *dy, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int i = 0; i < c; i++) {
      float v = odl_h2f(x[r * p + i]), d = odl_h2f(dy[r * p + i]);
      float g = v < -3.0f ? 0.0f : (v > 3.0f ? 1.0f : (2.0f * v + 3.0f) / 6.0f);
      dx[r * p + i] = odl_f2h(d * g);
    }
}

static inline void odl_add(f16 *y, const f16 *a, const f16 *b, int rows, int c, int p) {
  int lo, hi, c2 = (c + 1) / 2;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    const uint32_t *av = (const uint32_t *)(a + r * p), *bv = (const uint32_t *)(b + r * p);
    uint32_t *yv = (uint32_t *)(y + r * p);
    for (int i = 0; i < c2; i++) yv[i] = pulp_vfadd_h(av[i], bv[i]);
  }
}

/* y[r][ch] = x[r][ch] * s[ch] (squeeze-excite gate applied to every pixel) */
static inline void odl_scale(f16 *y, const f16 *x, const f16 *s, int rows, int c, int p) {
  int lo, hi, c2 = (c + 1) / 2;
  odl_chunk(rows, &lo, &hi);
  const uint32_t *sv = (const uint32_t *)s;
  for (int r = lo; r < hi; r++) {
    const uint32_t *xv = (const uint32_t *)(x + r * p);
    uint32_t *yv = (uint32_t *)(y + r * p);
    for (int i = 0; i < c2; i++) yv[i] = pulp_vfmul_h(xv[i], sv[i]);
    if (c & 1) yv[c2 - 1] &= 0xffffu;  /* 0 * negative is -0: keep the pad a plain zero */
  }
}

/* Channel sums in FP32 over rows (global average pool numerator, gate gradient): acc[ch] += sum_r f(r, ch)
 * with f = x or x*y. Channels are split across the cores. */
static inline void odl_chansum_acc(float *acc, const f16 *x, const f16 *y, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(c, &lo, &hi);
  for (int ch = lo; ch < hi; ch++) {
    float s = 0.0f;
    for (int r = 0; r < rows; r++) {
      float v = odl_h2f(x[r * p + ch]);
      s += y ? v * odl_h2f(y[r * p + ch]) : v;
    }
    acc[ch] += s;
  }
}

/* dx[r][ch] = g[ch] * scale for every row (global average pool backward: scale = 1 / (H*W)) */
static inline void odl_broadcast(f16 *dx, const f16 *g, float scale, int rows, int c, int p) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    for (int ch = 0; ch < c; ch++) dx[r * p + ch] = odl_f2h(odl_h2f(g[ch]) * scale);
}

/* exp(x) in FP32: 2^(x log2 e) split into an integer power (exponent bits) and a degree-6 polynomial
 * of the fraction; relative error below 1e-7 over the FP16 range. */
static inline float odl_expf(float x) {
  if (x < -87.0f) return 0.0f;
  if (x > 88.0f) x = 88.0f;
  float t = x * 1.44269504f;
  int n = (int)(t < 0.0f ? t - 1.0f : t);
  float f = (t - (float)n) * 0.69314718f;  /* in [0, ln 2) */
  float p = 1.0f + f * (1.0f + f * (0.5f + f * (0.16666667f + f * (0.041666668f + f * (0.008333334f + f * 0.0013888889f)))));
  uint32_t bits = (uint32_t)(n + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, 4);
  return p * scale;
}

static inline void odl_sigmoid_fw(f16 *y, const f16 *x, int n) {
  int lo, hi;
  odl_chunk(n, &lo, &hi);
  for (int i = lo; i < hi; i++) y[i] = odl_f2h(1.0f / (1.0f + odl_expf(-odl_h2f(x[i]))));
}

static inline void odl_sigmoid_bw(f16 *dx, const f16 *y, const f16 *dy, int n) {
  int lo, hi;
  odl_chunk(n, &lo, &hi);
  for (int i = lo; i < hi; i++) {
    float s = odl_h2f(y[i]);
    dx[i] = odl_f2h(odl_h2f(dy[i]) * s * (1.0f - s));
  }
}

/* Cross-entropy gradient from logits for one sample: dz = softmax(z) - onehot(label). Few classes: one core. */
static inline void odl_ce_grad(f16 *dz, const f16 *z, int n, int label) {
  if (pi_core_id() != 0) return;
  float m = odl_h2f(z[0]), sum = 0.0f;
  for (int i = 1; i < n; i++) m = odl_h2f(z[i]) > m ? odl_h2f(z[i]) : m;
  float e[64];
  for (int i = 0; i < n; i++) sum += (e[i] = odl_expf(odl_h2f(z[i]) - m));
  for (int i = 0; i < n; i++) dz[i] = odl_f2h(e[i] / sum - (i == label ? 1.0f : 0.0f));
}

/* Zero channel `ch` of `rows` rows (pitch p halves): the pad lane of stored activations when an odd
 * number of channels is kept and the neighbour is a real channel. */
static inline void odl_zero_lane(f16 *x, int rows, int p, int ch) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) x[r * p + ch] = 0;
}

#endif /* ODL_KERNELS_H */
