/* The compute of the deployed stages: activations and their derivatives fused into tiles, residual
 * adds, pools, the cross-entropy, depthwise steps over a batch of maps, and one copy each of the
 * odl_kernels.h building blocks the stages use. Compiled once per platform and flags, linked into
 * every deployed program (see odl_deploy.h). */
#include <odl_deploy.h>

/* ---------------------------------------------------------------- moving tiles (master core) */

void odl_get(odl_xfer_t *x, odl_stream_t *s, uint32_t row0, uint32_t nrows, uint32_t col0, uint32_t ncols,
                           void *l1) {
  uint32_t rb = (ncols + (ncols & 1)) * 2, stride = s->pitch * 2;
  if (s->whole) {   /* the whole tensor's transfer lands: from now on it is read in L2 */
    odl_wait_slab(s, 0);
    s->whole = 0;
    s->home = ODL_L2;
    s->addr = s->slab[0];
  }
  if (s->home == ODL_L2) {
    odl_dma_rows(&x->dma, s->addr + row0 * stride + col0 * 2, (uint32_t)l1, rb, nrows, stride, PI_CL_DMA_DIR_EXT2LOC);
    return;
  }
  /* one transfer record holds one pending slab -> L1 hop: an earlier one goes first */
  if (x->hop) {
    odl_wait_slab(x->hop, x->hop_slab);
    odl_dma_rows(&x->dma, x->hop_l2, x->hop_l1, x->hop_row, x->hop_rows, x->hop_stride, PI_CL_DMA_DIR_EXT2LOC);
    x->hop = 0;
  }
  /* more rows than a slab holds: all but the last slab-full move now, one after the other */
  uint32_t per = s->slab_bytes / stride;
  if (per == 0) per = 1;
  while (nrows > per) {
    static odl_xfer_t y;
    odl_xfer_init(&y);
    odl_get(&y, s, row0, per, col0, ncols, l1);
    odl_get_wait(&y);
    row0 += per;
    nrows -= per;
    l1 = (void *)((uint32_t)l1 + per * rb);
  }
  int k = s->cur;
  s->cur ^= 1;
  odl_wait_slab(s, k);
  uint32_t slab = s->slab[k];
  if (s->home == ODL_RAM)
    pi_ram_read_async(&odl_ram_dev, s->addr + row0 * stride, (void *)slab, nrows * stride, &s->ud[k]);
  else
    pi_flash_read_async(&odl_flash_dev, s->addr + row0 * stride, (void *)slab, nrows * stride, &s->ud[k]);
  s->busy[k] = 1;
  x->hop = s;
  x->hop_slab = k;
  x->hop_l2 = slab + col0 * 2;
  x->hop_l1 = (uint32_t)l1;
  x->hop_row = rb;
  x->hop_rows = nrows;
  x->hop_stride = stride;
}

void odl_get_wait(odl_xfer_t *x) {
  if (x->hop) {
    odl_wait_slab(x->hop, x->hop_slab);
    odl_dma_rows(&x->dma, x->hop_l2, x->hop_l1, x->hop_row, x->hop_rows, x->hop_stride, PI_CL_DMA_DIR_EXT2LOC);
    x->hop = 0;
  }
  odl_wait_dma(&x->dma);
}

void odl_put(odl_xfer_t *x, odl_stream_t *s, uint32_t row0, uint32_t nrows, uint32_t col0, uint32_t ncols,
                           const void *l1, uint32_t slab_row0, uint32_t slab_rows, int flush) {
  uint32_t rb = (ncols + (ncols & 1)) * 2, stride = s->pitch * 2;
  if (s->home == ODL_L2) {
    odl_dma_rows(&x->dma, s->addr + row0 * stride + col0 * 2, (uint32_t)l1, rb, nrows, stride, PI_CL_DMA_DIR_LOC2EXT);
    return;
  }
  /* whole rows, more than a slab holds: all but the last slab-full leave now, one slab after the other */
  uint32_t per = s->slab_bytes / stride;
  if (per == 0) per = 1;
  if (flush && col0 == 0 && rb >= stride && row0 == slab_row0 && nrows == slab_rows) {
    while (nrows > per) {
      odl_put(x, s, row0, per, 0, ncols, l1, row0, per, 1);
      row0 += per;
      nrows -= per;
      l1 = (const void *)((uint32_t)l1 + per * rb);
    }
    slab_row0 = row0;
    slab_rows = nrows;
  }
  int k = s->cur;
  odl_wait_slab(s, k);   /* the slab's previous rows have left */
  uint32_t slab = s->slab[k];
  odl_dma_rows(&x->dma, slab + (row0 - slab_row0) * stride + col0 * 2, (uint32_t)l1, rb, nrows, stride,
               PI_CL_DMA_DIR_LOC2EXT);
  if (flush) {
    odl_wait_dma(&x->dma);
    if (s->home == ODL_RAM) {
      pi_ram_write_async(&odl_ram_dev, s->addr + slab_row0 * stride, (void *)slab, slab_rows * stride, &s->ud[k]);
      s->busy[k] = 1;
    } else {
      uint32_t t0 = pulp_mcycle();
      pi_flash_program(&odl_flash_dev, s->addr + slab_row0 * stride, (const void *)slab, slab_rows * stride);
      odl_tm.ext += pulp_mcycle() - t0;
    }
    s->cur ^= 1;
  }
}

void odl_stream_drain(odl_stream_t *s) {
  odl_wait_slab(s, 0);
  odl_wait_slab(s, 1);
}

/* ---------------------------------------------------------------- fused epilogues and prologues */


/* The activations and their derivatives without data-dependent branches (min/max and compare
 * results as 0/1 values), so that a stage's cycles do not depend on the values it sees: the cycles
 * of a stage measured on random data are its cycles inside a training step. */
static inline float odl_clampf(float v, float lo, float hi) { return __builtin_fminf(__builtin_fmaxf(v, lo), hi); }

/* exp(x) as odl_expf, with the floor and the range limits as selects */
static inline float odl_expf_sel(float x) {
  float z = (float)(x >= -87.0f);
  x = odl_clampf(x, -87.0f, 88.0f);
  float t = x * 1.44269504f;
  int n = (int)(t - (float)(t < 0.0f));
  float f = (t - (float)n) * 0.69314718f;
  float p = 1.0f + f * (1.0f + f * (0.5f + f * (0.16666667f + f * (0.041666668f + f * (0.008333334f + f * 0.0013888889f)))));
  uint32_t bits = (uint32_t)(n + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, 4);
  return p * scale * z;
}

/* 1 / (1 + exp(-v)) without a division: the cluster's one divide unit would serialise the 8 cores (14 cycles
 * a division, blocking). The reciprocal of x = 1 + exp(-v), x in [1, 2^64) with v clamped at -44 (where the
 * result rounds to zero in FP16 either way), starts from the bits of x subtracted from a constant (relative
 * error under 1/8) and takes three Newton steps e = 1 - x y, y += y e (error squared each step: under 2^-23
 * after the third), each step two fused multiply-adds. */
static inline float odl_sigmoidf(float v) {
  const float x = 1.0f + odl_expf_sel(-__builtin_fmaxf(v, -44.0f));
  const uint32_t b = 0x7ef311c7u - odl_f32_bits(x);
  float y;
  __builtin_memcpy(&y, &b, 4);
  for (int i = 0; i < 3; i++) y = __builtin_fmaf(y, __builtin_fmaf(-x, y, 1.0f), y);
  return y;
}

static inline float odl_act_f(int act, float v) {
  if (act == ODL_ACT_RELU6) return odl_clampf(v, 0.0f, 6.0f);
  if (act == ODL_ACT_RELU) return __builtin_fmaxf(v, 0.0f);
  if (act == ODL_ACT_HSWISH) return v * odl_clampf(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f);
  if (act == ODL_ACT_SIGMOID) return odl_sigmoidf(v);
  return v;
}

/* Activation derivative times the incoming gradient, from the stashed post-activation (ReLU6: 0 < y < 6;
 * ReLU: y > 0; sigmoid: y (1 - y)). h-swish differentiates its stashed pre-activation: odl_hswish_grad. */
static inline float odl_act_grad(int act, float st, float g) {
  if (act == ODL_ACT_RELU6) return g * (float)((st > 0.0f) & (st < 6.0f));
  if (act == ODL_ACT_RELU) return g * (float)(st > 0.0f);
  if (act == ODL_ACT_SIGMOID) return g * st * (1.0f - st);
  return g;
}

/* Rows [lo, hi) of a tile, split across the cores. */
static inline void odl_rows(int rows, int *lo, int *hi) { odl_chunk(rows, lo, hi); }


/* In place on a tile of `rows` x `cols` (pitch p): y = act(y); pre-activation stash of the first
 * `keep` columns into `pre` (pitch pp) before it, post-activation stash into `post` after it. */
/* The first `keep` halves of a row into dst and a zero after an odd count, a word at a time (both rows start
 * on a word: their pitches are even). */
static inline void odl_keep_row(f16 *dst, const f16 *src, int keep) {
  uint32_t *d = (uint32_t *)dst;
  const uint32_t *s = (const uint32_t *)src;
  int n = keep / 2;
  for (int i = 0; i < n; i++) d[i] = s[i];
  if (keep & 1) d[n] = s[n] & 0xffffu;
}

/* relu, relu6 or hswish on n words of FP16 pairs in place, four words a turn with their loads first: no
 * load-use stall, and one taken branch (3 cycles on these cores) for four words rather than each. */
static inline __attribute__((always_inline)) void odl_act_words(uint32_t *v, int n, int act) {
  int i = 0;
  for (; i + 4 <= n; i += 4, v += 4) {
    uint32_t a = v[0], b = v[1], c = v[2], d = v[3];
    v[0] = odl_act_pair(a, act);
    v[1] = odl_act_pair(b, act);
    v[2] = odl_act_pair(c, act);
    v[3] = odl_act_pair(d, act);
  }
  for (; i < n; i++, v++) *v = odl_act_pair(*v, act);
}

void odl_act_tile(f16 *y, int rows, int cols, int p, int act, f16 *pre, int pp, f16 *post, int keep) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    f16 *row = y + r * p;
    if (pre) odl_keep_row(pre + r * pp, row, keep);
    if (act == ODL_ACT_RELU6) {
      odl_act_words((uint32_t *)row, (cols + 1) / 2, ODL_ACT_RELU6);
    } else if (act == ODL_ACT_RELU) {
      odl_act_words((uint32_t *)row, (cols + 1) / 2, ODL_ACT_RELU);
    } else if (act != ODL_ACT_NONE) {
      /* one loop per activation, so that the compiler sees a constant and the element loop carries no
       * dispatch (the same FP32 arithmetic, rounded once) */
      if (act == ODL_ACT_HSWISH) {
        odl_act_words((uint32_t *)row, (cols + 1) / 2, ODL_ACT_HSWISH);
      } else if (act == ODL_ACT_SIGMOID)
        for (int c = 0; c < cols; c++) row[c] = odl_f2h(odl_act_f(ODL_ACT_SIGMOID, odl_h2f(row[c])));
      else
        for (int c = 0; c < cols; c++) row[c] = odl_f2h(odl_act_f(act, odl_h2f(row[c])));
      if (cols & 1) row[cols] = 0;
    }
    if (post) odl_keep_row(post + r * pp, row, keep);
  }
}

/* hswish'(st) g, from the pre-activation st: (2 st + 3) / 6 between -3 and 3 (2 st + 3 exact, one rounding),
 * 1 above, +0 below. The side is picked with masks, not branches, so that
 * the time does not depend on the data: d = (mid & (in ^ hi)) | (1.0 & hi), in and hi all ones or zero. */
static inline __attribute__((always_inline)) float odl_hswish_pick(float mid, uint32_t in, uint32_t hi, float g) {
  const uint32_t d = (odl_f32_bits(mid) & (in ^ hi)) | (0x3f800000u & hi);
  float df;
  __builtin_memcpy(&df, &d, 4);
  return g * df;
}

static inline float odl_hswish_grad(float st, float g) {
  uint32_t in = 0u - (uint32_t)(st >= -3.0f), hi = 0u - (uint32_t)(st > 3.0f);
  __asm__("" : "+r"(in), "+r"(hi));   /* masks, not branches (the compiler would branch on the compares) */
  return odl_hswish_pick((2.0f * st + 3.0f) * (1.0f / 6.0f), in, hi, g);
}

/* A pair of FP16 lanes: hswish'(st) g on each, the two results packed with one rounding each; the two
 * compares of each side test both lanes at once. */
static inline __attribute__((always_inline)) uint32_t odl_hswish_grad_pair(uint32_t st, uint32_t g) {
  const uint32_t in = pulp_vfge_h(st, odl_pair(-3.0f)), hi = pulp_vfgt_h(st, odl_pair(3.0f));
  uint32_t in0 = 0u - (in & 1u), in1 = 0u - (in >> 1), hi0 = 0u - (hi & 1u), hi1 = 0u - (hi >> 1);
  __asm__("" : "+r"(in0), "+r"(in1), "+r"(hi0), "+r"(hi1));
  const float s0 = odl_h2f((f16)st), s1 = odl_h2f((f16)(st >> 16));
  const float r0 = odl_hswish_pick((2.0f * s0 + 3.0f) * (1.0f / 6.0f), in0, hi0, odl_h2f((f16)g));
  const float r1 = odl_hswish_pick((2.0f * s1 + 3.0f) * (1.0f / 6.0f), in1, hi1, odl_h2f((f16)(g >> 16)));
  return pulp_vfcpka_h_s(odl_f32_bits(r0), odl_f32_bits(r1));
}

/* A pair of FP16 lanes: sigmoid'(y) g = g y (1 - y) from the post-activation y, in FP32 as odl_act_grad. */
static inline __attribute__((always_inline)) uint32_t odl_sigmoid_grad_pair(uint32_t st, uint32_t g) {
  const float r0 = odl_act_grad(ODL_ACT_SIGMOID, odl_h2f((f16)st), odl_h2f((f16)g));
  const float r1 = odl_act_grad(ODL_ACT_SIGMOID, odl_h2f((f16)(st >> 16)), odl_h2f((f16)(g >> 16)));
  return pulp_vfcpka_h_s(odl_f32_bits(r0), odl_f32_bits(r1));
}

/* The result of an FP16 SIMD compare (bit i: lane i holds) as a mask of the lanes that hold. */
static inline uint32_t odl_lane_mask(uint32_t bits) {
  return ((0u - (bits & 1u)) & 0xffffu) | ((0u - (bits >> 1)) << 16);
}

/* g = g act'(st) on n words of FP16 pairs (relu and relu6: the mask of the lanes where the derivative is
 * 1, two lanes a compare; hswish and sigmoid: FP32 per lane), two words a turn with their loads first. */
static inline __attribute__((always_inline)) void odl_act_bw_words(uint32_t *g, const uint32_t *st, int n, int act) {
  const uint32_t six = odl_pair(6.0f);
  int i = 0;
  for (; i + 2 <= n; i += 2) {
    const uint32_t s0 = st[i], s1 = st[i + 1], g0 = g[i], g1 = g[i + 1];
    if (act == ODL_ACT_HSWISH) {
      g[i] = odl_hswish_grad_pair(s0, g0);
      g[i + 1] = odl_hswish_grad_pair(s1, g1);
    } else if (act == ODL_ACT_SIGMOID) {
      g[i] = odl_sigmoid_grad_pair(s0, g0);
      g[i + 1] = odl_sigmoid_grad_pair(s1, g1);
    } else if (act == ODL_ACT_RELU6) {
      g[i] = g0 & odl_lane_mask(pulp_vfgt_h(s0, 0u) & pulp_vflt_h(s0, six));
      g[i + 1] = g1 & odl_lane_mask(pulp_vfgt_h(s1, 0u) & pulp_vflt_h(s1, six));
    } else {
      g[i] = g0 & odl_lane_mask(pulp_vfgt_h(s0, 0u));
      g[i + 1] = g1 & odl_lane_mask(pulp_vfgt_h(s1, 0u));
    }
  }
  for (; i < n; i++) {
    if (act == ODL_ACT_HSWISH) g[i] = odl_hswish_grad_pair(st[i], g[i]);
    else if (act == ODL_ACT_SIGMOID) g[i] = odl_sigmoid_grad_pair(st[i], g[i]);
    else if (act == ODL_ACT_RELU6) g[i] &= odl_lane_mask(pulp_vfgt_h(st[i], 0u) & pulp_vflt_h(st[i], six));
    else g[i] &= odl_lane_mask(pulp_vfgt_h(st[i], 0u));
  }
}

/* In place: g = g * act'(stash) on `rows` x `cols` (g pitch gp, stash pitch sp); the pad lane after an odd
 * count is left as it is. Rows that start on a word go by pairs of lanes (the same values as one lane at a
 * time). */
void odl_act_bw_tile(f16 *g, int gp, const f16 *st, int sp, int rows, int cols, int act) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  const int words = (act == ODL_ACT_RELU || act == ODL_ACT_RELU6 || act == ODL_ACT_HSWISH || act == ODL_ACT_SIGMOID) &&
                    !((((uintptr_t)g | (uintptr_t)st) & 3u) | (((uint32_t)gp | (uint32_t)sp) & 1u));
  for (int r = lo; r < hi; r++) {
    f16 *gr = g + r * gp;
    const f16 *sr = st + r * sp;
    int c = 0;
    if (words) {
      if (act == ODL_ACT_HSWISH) odl_act_bw_words((uint32_t *)gr, (const uint32_t *)sr, cols / 2, ODL_ACT_HSWISH);
      else if (act == ODL_ACT_SIGMOID) odl_act_bw_words((uint32_t *)gr, (const uint32_t *)sr, cols / 2, ODL_ACT_SIGMOID);
      else if (act == ODL_ACT_RELU6) odl_act_bw_words((uint32_t *)gr, (const uint32_t *)sr, cols / 2, ODL_ACT_RELU6);
      else odl_act_bw_words((uint32_t *)gr, (const uint32_t *)sr, cols / 2, ODL_ACT_RELU);
      c = cols & ~1;
    }
    if (act == ODL_ACT_RELU6) {
      for (; c < cols; c++) {
        float s = odl_h2f(sr[c]);
        gr[c] &= (f16)(0u - (uint32_t)((s > 0.0f) & (s < 6.0f)));
      }
    } else if (act == ODL_ACT_RELU) {
      for (; c < cols; c++) gr[c] &= (f16)(0u - (uint32_t)(odl_h2f(sr[c]) > 0.0f));
    } else if (act == ODL_ACT_HSWISH) {
      for (; c < cols; c++) gr[c] = odl_f2h(odl_hswish_grad(odl_h2f(sr[c]), odl_h2f(gr[c])));
    } else if (act == ODL_ACT_SIGMOID) {   /* one loop per activation: no dispatch per element */
      for (; c < cols; c++) gr[c] = odl_f2h(odl_act_grad(ODL_ACT_SIGMOID, odl_h2f(sr[c]), odl_h2f(gr[c])));
    } else {
      for (; c < cols; c++) gr[c] = odl_f2h(odl_act_grad(act, odl_h2f(sr[c]), odl_h2f(gr[c])));
    }
  }
}

/* y += s element-wise (FP16 SIMD), rows x cols, pitches yp / sp (even). */
void odl_add_tile(f16 *y, int yp, const f16 *s, int sp, int rows, int cols) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    uint32_t *yv = (uint32_t *)(y + r * yp);
    const uint32_t *sv = (const uint32_t *)(s + r * sp);
    for (int c = 0; c < (cols + 1) / 2; c++) yv[c] = pulp_vfadd_h(yv[c], sv[c]);
    if (cols & 1) y[r * yp + cols] = 0;
  }
}

/* A column's two FP32 sums, in order down its n words (FP16 pairs, p2 words apart) from *s0 and *s1: each word
 * adds its low lane to one with vfdotpex against {1, 0}, its high lane to the other against {0, 1} (the other
 * lane's product is an exact zero: each sum is rounded as an FP32 addition). Four words a turn, loaded first
 * with post-incrementing loads (p.lw rd, rs2(rs1!)): no load-use stall, one taken branch for four words.
 * Returns the address past the column. */
static inline __attribute__((always_inline)) const uint32_t *odl_col_sums(const uint32_t *v, int n, int p2,
                                                                          uint32_t *s0, uint32_t *s1) {
  const uint32_t one_lo = 0x3c00u, one_hi = 0x3c000000u;
  const int step = 4 * p2;
  uint32_t a = *s0, b = *s1;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t x0, x1, x2, x3;
    __asm__ volatile(PULP_P_LW_POSTINC_REG(%0, %1, %2) : "=r"(x0), "+r"(v) : "r"(step) : "memory");
    __asm__ volatile(PULP_P_LW_POSTINC_REG(%0, %1, %2) : "=r"(x1), "+r"(v) : "r"(step) : "memory");
    __asm__ volatile(PULP_P_LW_POSTINC_REG(%0, %1, %2) : "=r"(x2), "+r"(v) : "r"(step) : "memory");
    __asm__ volatile(PULP_P_LW_POSTINC_REG(%0, %1, %2) : "=r"(x3), "+r"(v) : "r"(step) : "memory");
    a = pulp_vfdotpex_s_h(a, x0, one_lo);
    b = pulp_vfdotpex_s_h(b, x0, one_hi);
    a = pulp_vfdotpex_s_h(a, x1, one_lo);
    b = pulp_vfdotpex_s_h(b, x1, one_hi);
    a = pulp_vfdotpex_s_h(a, x2, one_lo);
    b = pulp_vfdotpex_s_h(b, x2, one_hi);
    a = pulp_vfdotpex_s_h(a, x3, one_lo);
    b = pulp_vfdotpex_s_h(b, x3, one_hi);
  }
  for (; i < n; i++, v += p2) {
    a = pulp_vfdotpex_s_h(a, *v, one_lo);
    b = pulp_vfdotpex_s_h(b, *v, one_hi);
  }
  *s0 = a;
  *s1 = b;
  return v;
}

/* Per-sample channel sums for a fused average pool: rows m0.. of the tile belong to sample
 * (m0 + r) / rows_ps; acc[sample][col0 + c] += y[r][c] (FP32), channels split across the cores. */
void odl_pool_acc(float *acc, int acc_pitch, const f16 *y, int yp, int rows, int cols, int m0,
                                int rows_ps, int col0, float *part) {
  /* A core a run of channel pairs, each row's pair added to two FP32 sums (odl_col_sums). */
  int lo, hi, yp2 = yp / 2, np = (cols + 1) / 2, nc = pi_cl_team_nb_cores(), id = pi_core_id();
  int first = m0 / rows_ps, r_in = m0 - first * rows_ps;   /* the tile starts r_in rows into sample `first` */
  if (part && np < nc && r_in + rows <= rows_ps) {
    /* Fewer channel pairs than cores (a narrow channel tile of a large map) and the rows of one sample: the
     * rows split into g parts as well, g such that the np * g items share evenly round the cores, each
     * item's two sums into `part` (2 np g floats in L1); then a core a pair adds its parts in order. */
    int g = nc;
    while (g > 1 && (np * (g / 2)) % nc == 0) g /= 2;
    for (int it = id; it < np * g; it += nc) {
      int c = it % np, k = it / np;
      const uint32_t *v = (const uint32_t *)y + (k * rows / g) * yp2 + c;
      uint32_t s0 = 0, s1 = 0;
      odl_col_sums(v, (k + 1) * rows / g - k * rows / g, yp2, &s0, &s1);
      __builtin_memcpy(part + 2 * it, &s0, 4);
      __builtin_memcpy(part + 2 * it + 1, &s1, 4);
    }
    pi_cl_team_barrier();
    if (id < np) {
      float t0 = 0.0f, t1 = 0.0f, *a = acc + first * acc_pitch + col0 + 2 * id;
      for (int j = 0; j < g; j++) {
        t0 += part[2 * (j * np + id)];
        t1 += part[2 * (j * np + id) + 1];
      }
      a[0] += t0;
      if (2 * id + 1 < cols) a[1] += t1;
    }
    return;
  }
  odl_chunk(np, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    const uint32_t *v = (const uint32_t *)y + c;
    float *a = acc + first * acc_pitch + col0 + 2 * c;
    int two = 2 * c + 1 < cols;
    for (int r = 0, left = rows_ps - r_in; r < rows; left = rows_ps, a += acc_pitch) {
      int n = rows - r < left ? rows - r : left;
      uint32_t s0 = 0, s1 = 0;
      v = odl_col_sums(v, n, yp2, &s0, &s1);
      float f0, f1;
      __builtin_memcpy(&f0, &s0, 4);
      __builtin_memcpy(&f1, &s1, 4);
      a[0] += f0;
      if (two) a[1] += f1;
      r += n;
    }
  }
}

/* Cross-entropy from logits, one row per sample: dz = softmax(z) - onehot(label), loss = logsumexp - z[label]. */
static inline float odl_logf(float x) {
  /* x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh((m - 1) / (m + 1)), a series in s^2 */
  uint32_t b = odl_f32_bits(x);
  int e = (int)((b >> 23) & 0xff) - 127;
  b = (b & 0x007fffffu) | 0x3f800000u;
  float m;
  __builtin_memcpy(&m, &b, 4);
  if (m > 1.41421356f) {
    m *= 0.5f;
    e += 1;
  }
  float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float t = s * (2.0f + s2 * (0.66666667f + s2 * (0.4f + s2 * (0.28571429f + s2 * 0.22222222f))));
  return t + (float)e * 0.69314718f;
}

void odl_ce_rows(f16 *dz, int dzp, f16 *loss, const f16 *z, int zp, const int32_t *label, int rows, int n) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    const f16 *zr = z + r * zp;
    float m = odl_h2f(zr[0]), sum = 0.0f, e[64];
    for (int i = 1; i < n; i++) m = __builtin_fmaxf(m, odl_h2f(zr[i]));
    for (int i = 0; i < n; i++) sum += (e[i] = odl_expf_sel(odl_h2f(zr[i]) - m));
    int lab = label[r];
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) dz[r * dzp + i] = odl_f2h(e[i] * inv - (float)(i == lab));
    if (n & 1) dz[r * dzp + n] = 0;
    loss[r * 2] = odl_f2h(odl_logf(sum) + m - odl_h2f(zr[lab]));
    loss[r * 2 + 1] = 0;
  }
}

/* FP32 rows -> FP16 rows (+ an FP16 tile already there when `acc`, in FP16 as the method's gradient
 * accumulators are), n columns, zero pad. */
void odl_narrow_acc(f16 *dst, int dp, const float *src, int sp, int rows, int n, int acc) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    for (int c = 0; c < n; c++) {
      f16 v = odl_f2h(src[r * sp + c]);
      dst[r * dp + c] = acc ? odl_f2h(odl_h2f(dst[r * dp + c]) + odl_h2f(v)) : v;
    }
    if (n & 1) dst[r * dp + n] = 0;
  }
}

/* Floor division and remainder by a stride: strides 1 and 2 (every depthwise layer of the networks)
 * without the cluster's one shared divider, which eight cores would queue for. */
static inline int odl_sdiv(int x, int s) { return s == 1 ? x : (s == 2 ? x >> 1 : (x >= 0 ? x / s : -((s - 1 - x) / s))); }
static inline int odl_smod(int x, int s) { return s == 1 ? 0 : (s == 2 ? x & 1 : x - odl_sdiv(x, s) * s); }

/* ---------------------------------------------------------------- depthwise over a batch of maps
 * A tile holds `ns` maps (one per sample, `h*w` rows of pitch p each) of the same channel block, or
 * a band of rows of one map: rows [r0, r1) of the output (forward, weight gradient) or of the input
 * gradient, with the tensors' pointers set so that row indices are those of the whole map.
 * Work items are (sample, row, channel-pair group): on the small maps of the networks' last blocks
 * (1x1, 2x2) the rows alone would leave most cores idle, so channel pairs split too. */

/* Advance an item (channel group cg, row rr of sample smp) by `nc` items without dividing. */
static inline void odl_dw_step(int *cg, int *rr, int *smp, int nc, int g, int rows) {
  *cg += nc;
  while (*cg >= g) {
    *cg -= g;
    if (++*rr == rows) {
      *rr = 0;
      ++*smp;
    }
  }
}

static inline void odl_dw_items(int ns, int rows, int c2, int *groups, int *items) {
  int nc = pi_cl_team_nb_cores(), g = 1;
  while (ns * rows * g < 2 * nc && g < c2) g++;
  *groups = g;
  *items = ns * rows * g;
}

/* One output row of the forward on channel pairs [c_lo, c_hi), FP16 accumulation of the taps in
 * tap order (vfmac.h), interior pixels without bounds checks for k = 3. */
/* tap lists live on the cores' 1 KiB stacks: up to 5x5 kernels */
#define ODL_DW_MAXK 5

/* out[c] = (b[c] or 0) + sum over the taps t of x[goff[t] + c] w[woff[t] + c], in tap order, for the channel
 * pairs [c_lo, c_hi); the usual tap counts (4, 6, 9) unrolled with a pointer per tap. */
#define ODL_TAP_PTRS(n) const uint32_t *g_[n], *w_[n]; for (int t = 0; t < n; t++) { g_[t] = xv + goff[t]; w_[t] = wv + woff[t]; }
static inline void odl_dw_taps(uint32_t *out, const uint32_t *xv, const uint32_t *wv, const uint32_t *bv, const int *goff,
                               const int *woff, int ng, int c_lo, int c_hi) {
  if (ng == 9) {
    ODL_TAP_PTRS(9)
    for (int c = c_lo; c < c_hi; c++) {
      uint32_t a = pulp_vfmac_h(bv ? bv[c] : 0u, g_[0][c], w_[0][c]);
      a = pulp_vfmac_h(a, g_[1][c], w_[1][c]);
      a = pulp_vfmac_h(a, g_[2][c], w_[2][c]);
      a = pulp_vfmac_h(a, g_[3][c], w_[3][c]);
      a = pulp_vfmac_h(a, g_[4][c], w_[4][c]);
      a = pulp_vfmac_h(a, g_[5][c], w_[5][c]);
      a = pulp_vfmac_h(a, g_[6][c], w_[6][c]);
      a = pulp_vfmac_h(a, g_[7][c], w_[7][c]);
      out[c] = pulp_vfmac_h(a, g_[8][c], w_[8][c]);
    }
  } else if (ng == 6) {
    ODL_TAP_PTRS(6)
    for (int c = c_lo; c < c_hi; c++) {
      uint32_t a = pulp_vfmac_h(bv ? bv[c] : 0u, g_[0][c], w_[0][c]);
      a = pulp_vfmac_h(a, g_[1][c], w_[1][c]);
      a = pulp_vfmac_h(a, g_[2][c], w_[2][c]);
      a = pulp_vfmac_h(a, g_[3][c], w_[3][c]);
      a = pulp_vfmac_h(a, g_[4][c], w_[4][c]);
      out[c] = pulp_vfmac_h(a, g_[5][c], w_[5][c]);
    }
  } else if (ng == 4) {
    ODL_TAP_PTRS(4)
    for (int c = c_lo; c < c_hi; c++) {
      uint32_t a = pulp_vfmac_h(bv ? bv[c] : 0u, g_[0][c], w_[0][c]);
      a = pulp_vfmac_h(a, g_[1][c], w_[1][c]);
      a = pulp_vfmac_h(a, g_[2][c], w_[2][c]);
      out[c] = pulp_vfmac_h(a, g_[3][c], w_[3][c]);
    }
  } else {
    for (int c = c_lo; c < c_hi; c++) {
      uint32_t a = bv ? bv[c] : 0u;
      for (int t = 0; t < ng; t++) a = pulp_vfmac_h(a, xv[goff[t] + c], wv[woff[t] + c]);
      out[c] = a;
    }
  }
}

/* One output pixel outside the interior: its valid taps (a rectangle) listed once, then every channel
 * pair of the group through them, in tap order from the bias (the arithmetic of odl_dw_px). */
static inline void odl_dw_fw_edge(uint32_t *yp, const uint32_t *xv, const uint32_t *wv, const uint32_t *bv, int c_lo,
                                  int c_hi, int h, int wd, int k, int s, int pt, int pl, int p2, int oh, int ow) {
  if (k > ODL_DW_MAXK) {   /* larger kernels: the generic per-tap path */
    for (int c = c_lo; c < c_hi; c++) yp[c] = odl_dw_px(xv, wv, bv ? bv[c] : 0, c, oh, ow, h, wd, k, s, pt, pl, p2);
    return;
  }
  int goff[ODL_DW_MAXK * ODL_DW_MAXK], woff[ODL_DW_MAXK * ODL_DW_MAXK], ng = 0;
  for (int kh = 0; kh < k; kh++) {
    int ih = oh * s + kh - pt;
    if (ih < 0 || ih >= h) continue;
    for (int kw = 0; kw < k; kw++) {
      int iw = ow * s + kw - pl;
      if (iw < 0 || iw >= wd) continue;
      goff[ng] = (ih * wd + iw) * p2;
      woff[ng++] = (kh * k + kw) * p2;
    }
  }
  odl_dw_taps(yp, xv, wv, bv, goff, woff, ng, c_lo, c_hi);
}

/* One output row of the forward on channel pairs [c_lo, c_hi), FP16 accumulation of the taps in tap
 * order (vfmac.h). For k = 3 every pixel takes the nine-tap path with the pair's weights in registers:
 * a tap outside the map reads a pixel inside it (its row or column clamped) with a zero weight, which
 * adds exactly zero, so edge pixels and whole edge rows (most of a small map) cost what interior ones
 * do instead of a tap list each. Other kernel sizes take the tap lists. */
static inline int odl_clampi(int v, int n) { return v < 0 ? 0 : (v >= n ? n - 1 : v); }
static inline uint32_t odl_mask_in(int v, int n) { return v >= 0 && v < n ? 0xffffffffu : 0u; }
static inline void odl_dw_fw_row(uint32_t *yv, const uint32_t *xv, const uint32_t *wv, const uint32_t *bv, int c_lo, int c_hi,
                                 int h, int wd, int wo, int k, int s, int pt, int pl, int p2, int oh) {
  uint32_t *yrow = yv + oh * wo * p2;
  if (k != 3) {
    for (int ow = 0; ow < wo; ow++) odl_dw_fw_edge(yrow + ow * p2, xv, wv, bv, c_lo, c_hi, h, wd, k, s, pt, pl, p2, oh, ow);
    return;
  }
  int ow0 = odl_sdiv(pl + s - 1, s), ow1 = odl_sdiv(wd - k + pl, s) + 1;   /* columns with all three taps inside */
  if (ow0 > wo) ow0 = wo;
  if (ow1 > wo) ow1 = wo;
  if (ow1 < ow0) ow1 = ow0;
  int ih = oh * s - pt;
  uint32_t m0 = odl_mask_in(ih, h), m1 = odl_mask_in(ih + 1, h), m2 = odl_mask_in(ih + 2, h);
  const uint32_t *x0 = xv + odl_clampi(ih, h) * wd * p2, *x1 = xv + odl_clampi(ih + 1, h) * wd * p2,
                 *x2 = xv + odl_clampi(ih + 2, h) * wd * p2;
  for (int c = c_lo; c < c_hi; c++) {
    uint32_t bias = bv ? bv[c] : 0;
    uint32_t w0 = wv[c] & m0, w1 = wv[p2 + c] & m0, w2 = wv[2 * p2 + c] & m0, w3 = wv[3 * p2 + c] & m1,
             w4 = wv[4 * p2 + c] & m1, w5 = wv[5 * p2 + c] & m1, w6 = wv[6 * p2 + c] & m2, w7 = wv[7 * p2 + c] & m2,
             w8 = wv[8 * p2 + c] & m2;
    for (int ow = 0; ow < wo; ow++) {
      if (ow == ow0) {   /* the interior columns: three taps a row, no clamping */
        const uint32_t *r0 = x0 + (ow0 * s - pl) * p2 + c, *r1 = x1 + (ow0 * s - pl) * p2 + c, *r2 = x2 + (ow0 * s - pl) * p2 + c;
        uint32_t *yp = yrow + ow0 * p2 + c;
        for (; ow < ow1; ow++) {
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
        if (ow >= wo) break;
      }
      int iw = ow * s - pl;
      uint32_t n0 = odl_mask_in(iw, wd), n1 = odl_mask_in(iw + 1, wd), n2 = odl_mask_in(iw + 2, wd);
      int j0 = odl_clampi(iw, wd) * p2 + c, j1 = odl_clampi(iw + 1, wd) * p2 + c, j2 = odl_clampi(iw + 2, wd) * p2 + c;
      uint32_t acc = pulp_vfmac_h(bias, x0[j0], w0 & n0);
      acc = pulp_vfmac_h(acc, x0[j1], w1 & n1);
      acc = pulp_vfmac_h(acc, x0[j2], w2 & n2);
      acc = pulp_vfmac_h(acc, x1[j0], w3 & n0);
      acc = pulp_vfmac_h(acc, x1[j1], w4 & n1);
      acc = pulp_vfmac_h(acc, x1[j2], w5 & n2);
      acc = pulp_vfmac_h(acc, x2[j0], w6 & n0);
      acc = pulp_vfmac_h(acc, x2[j1], w7 & n1);
      yrow[ow * p2 + c] = pulp_vfmac_h(acc, x2[j2], w8 & n2);
    }
  }
}

void odl_dw_fw_batch(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo,
                                   int k, int s, int pt, int pl, int p, int ns, int r0, int r1) {
  int g, items, p2 = p / 2, rows = r1 - r0;
  odl_dw_items(ns, rows, c2, &g, &items);
  int nc = pi_cl_team_nb_cores();
  int id = pi_core_id(), cg = id % g, row = id / g, smp = row / rows, rr = row % rows;   /* then stepped, no divides */
  for (int it = id; it < items; it += nc) {
    int oh = r0 + rr;
    int c_lo = cg * c2 / g, c_hi = (cg + 1) * c2 / g;
    odl_dw_fw_row((uint32_t *)(y + smp * ho * wo * p), (const uint32_t *)(x + smp * h * wd * p), (const uint32_t *)w,
                  (const uint32_t *)b, c_lo, c_hi, h, wd, wo, k, s, pt, pl, p2, oh);
    odl_dw_step(&cg, &rr, &smp, nc, g, rows);
  }
}

/* The forward of a 3x3 layer with padding 1 (stride 1 or 2): the output rows whose three input rows lie in
 * the map run the stage's generated routine (harness/kernels/dwblock.py: the window slides along the row
 * in registers, one channel pair over a band of rows), the edge rows odl_dw_fw_row. Interior items are
 * (sample, channel pair, band of rows), so cores working in step read neighbouring words, with bands
 * enough for two items a core; edge items (sample, edge row, channel group) follow them round the cores. */
void odl_dw3_fw_batch(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo,
                      int s, int p, int ns, int r0, int r1, odl_dw3_fn fn, int act) {
  int p2 = p / 2, i0 = r0 < 1 ? 1 : r0, i1 = (h - 2) / s + 1;   /* interior output rows [i0, i1) */
  if (i1 > r1) i1 = r1;
  if (i1 < i0) i1 = i0;
  int nc = pi_cl_team_nb_cores(), id = pi_core_id(), ni = i1 - i0, nb = 1;
  while (nb < ni && ns * c2 * nb < 2 * nc) nb++;
  int bh = ni ? (ni + nb - 1) / nb : 0, na = ni ? ns * c2 * nb : 0;
  const uint32_t *wv = (const uint32_t *)w, *bv = (const uint32_t *)b;
  int band = 0, c = 0, smp = 0;
  odl_dw_step(&band, &c, &smp, id, nb, c2);   /* then stepped, no divides */
  for (int it = id; it < na; it += nc, odl_dw_step(&band, &c, &smp, nc, nb, c2)) {
    int lo = i0 + band * bh, hi = lo + bh < i1 ? lo + bh : i1;
    if (lo < hi)
      fn((uint32_t *)(y + (smp * ho + lo) * wo * p) + c, (const uint32_t *)(x + (smp * h + lo * s - 1) * wd * p) + c,
         wv + c, bv ? bv[c] : 0, hi - lo, 2 * p);
  }
  int top = i0 - r0, ne = top + (r1 - i1), g = 1;   /* edge rows [r0, i0) and [i1, r1) */
  while (ns * ne * g < nc && g < c2) g++;
  for (int j = ((id - na) % nc + nc) % nc; j < ns * ne * g; j += nc) {
    int gi = j % g, e = (j / g) % ne, sm = j / (g * ne), oh = e < top ? r0 + e : i1 + (e - top);
    int c_lo = gi * c2 / g, c_hi = (gi + 1) * c2 / g;
    uint32_t *yv = (uint32_t *)(y + sm * ho * wo * p);
    odl_dw_fw_row(yv, (const uint32_t *)(x + sm * h * wd * p), wv, bv, c_lo, c_hi, h, wd, wo, 3, s, 1, 1, p2, oh);
    if (act != ODL_ACT_NONE)   /* what the routine applies to the interior rows (relu, relu6, hswish) */
      for (uint32_t *px = yv + oh * wo * p2, *end = px + wo * p2; px < end; px += p2)
        for (int c = c_lo; c < c_hi; c++) px[c] = odl_act_pair(px[c], act);
  }
}

/* Input gradient: dx[ih][iw][c] = sum over the taps reaching (ih, iw) of dy[oh][ow][c] w[kh][kw][c]. */
void odl_dw_ig_batch(f16 *dx, const f16 *dy, const f16 *w, int c2, int h, int wd, int ho, int wo, int k, int s,
                                   int pt, int pl, int p, int ns, int r0, int r1) {
  int g, items, p2 = p / 2, rows = r1 - r0;
  odl_dw_items(ns, rows, c2, &g, &items);
  int nc = pi_cl_team_nb_cores();
  const uint32_t *wv = (const uint32_t *)w;
  int id = pi_core_id(), cg = id % g, row = id / g, smp = row / rows, rr = row % rows;
  for (int it = id; it < items; it += nc, odl_dw_step(&cg, &rr, &smp, nc, g, rows)) {
    int ih = r0 + rr;
    int c_lo = cg * c2 / g, c_hi = (cg + 1) * c2 / g;
    const uint32_t *dv = (const uint32_t *)(dy + smp * ho * wo * p);
    uint32_t *xv = (uint32_t *)(dx + smp * h * wd * p);
    int kh0 = odl_smod(ih + pt, s);
    for (int iw = 0; iw < wd; iw++) {
      int kw0 = odl_smod(iw + pl, s), ng = 0, goff[ODL_DW_MAXK * ODL_DW_MAXK], woff[ODL_DW_MAXK * ODL_DW_MAXK];
      for (int kh = kh0; kh < k; kh += s) {
        int oh = odl_sdiv(ih + pt - kh, s);
        if (oh < 0 || oh >= ho) continue;
        for (int kw = kw0; kw < k; kw += s) {
          int ow = odl_sdiv(iw + pl - kw, s);
          if (ow < 0 || ow >= wo || ng == ODL_DW_MAXK * ODL_DW_MAXK) continue;
          goff[ng] = (oh * wo + ow) * p2;
          woff[ng++] = (kh * k + kw) * p2;
        }
      }
      odl_dw_taps(xv + (ih * wd + iw) * p2, dv, wv, 0, goff, woff, ng, c_lo, c_hi);
    }
  }
}

/* Weight gradient of `ns` maps added to FP32 accumulators acc[tap][c] (pitch ap floats) and accb[c]:
 * items (tap or bias, channel pair), each
 * summing every map of the tile (the same FP16 partial sums of up to 8 terms as odl_dw_wg). */
void odl_dw_wg_batch(float *acc, float *accb, int ap, const f16 *dy, const f16 *x, int c2, int h, int wd, int ho,
                     int wo, int k, int s, int pt, int pl, int p, int ns, int r0, int r1) {
  const uint32_t one_lo = 0x3c00u, one_hi = 0x3c000000u;
  int p2 = p / 2, taps = k * k, items = (taps + (accb ? 1 : 0)) * c2;
  int nc = pi_cl_team_nb_cores(), id = pi_core_id();
  int tap = id / c2, c = id - tap * c2;                 /* then stepped by nc items, no divides */
  const int gs = ho * wo * p2, xsmp = h * wd * p2;      /* a sample further on */
  for (int it = id; it < items; it += nc) {
    int kh = odl_sdiv(tap, k), kw = tap - kh * k;
    int bias = tap == taps;
    int oh0 = 0, oh1 = ho, ow0 = 0, ow1 = wo;
    if (!bias) {
      oh0 = kh < pt ? odl_sdiv(pt - kh + s - 1, s) : 0;
      oh1 = odl_sdiv(h - 1 + pt - kh, s) + 1;
      ow0 = kw < pl ? odl_sdiv(pl - kw + s - 1, s) : 0;
      ow1 = odl_sdiv(wd - 1 + pl - kw, s) + 1;
      if (oh1 > ho) oh1 = ho;
      if (ow1 > wo) ow1 = wo;
    }
    if (oh0 < r0) oh0 = r0;   /* the output rows of this tile */
    if (oh1 > r1) oh1 = r1;
    uint32_t lo32 = 0, hi32 = 0;
    if (oh0 < oh1 && ow0 < ow1) {
      /* terms in FP16 lanes, 8 at a time across rows and samples, folded into FP32 */
      const uint32_t *gb = (const uint32_t *)dy + (oh0 * wo + ow0) * p2 + c;
      const uint32_t *xb = (const uint32_t *)x + ((oh0 * s + kh - pt) * wd + ow0 * s + kw - pl) * p2 + c;
      int n_ow = ow1 - ow0, n_oh = oh1 - oh0, gstep = s * p2;
      uint32_t a = 0;
      int cnt = 0;
      for (int smp = 0; smp < ns; smp++, gb += gs, xb += xsmp) {
        const uint32_t *gr = gb, *xr0 = xb;
        for (int r = 0; r < n_oh; r++, gr += wo * p2, xr0 += s * wd * p2) {
          const uint32_t *g = gr, *xr = xr0;
          for (int q = 0; q < n_ow; q++, g += p2, xr += gstep) {
            a = bias ? pulp_vfadd_h(a, *g) : pulp_vfmac_h(a, *g, *xr);
            if (++cnt == 8) {
              lo32 = pulp_vfdotpex_s_h(lo32, a, one_lo);
              hi32 = pulp_vfdotpex_s_h(hi32, a, one_hi);
              a = 0;
              cnt = 0;
            }
          }
        }
      }
      if (cnt) {
        lo32 = pulp_vfdotpex_s_h(lo32, a, one_lo);
        hi32 = pulp_vfdotpex_s_h(hi32, a, one_hi);
      }
    }
    float flo, fhi;
    __builtin_memcpy(&flo, &lo32, 4);
    __builtin_memcpy(&fhi, &hi32, 4);
    float *dst = bias ? accb : acc + tap * ap;
    dst[2 * c] += flo;
    dst[2 * c + 1] += fhi;
    c += nc;
    while (c >= c2) {
      c -= c2;
      tap++;
    }
  }
}

/* dst[r][c] = f16(src[r][c] * scale): the average of a fused pool, one rounding. */
void odl_mean_rows(f16 *dst, int dp, const float *src, int sp, int rows, int n, float scale) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    for (int c = 0; c < n; c++) dst[r * dp + c] = odl_f2h(src[r * sp + c] * scale);
    if (n & 1) dst[r * dp + n] = 0;
  }
}


/* FP32 accumulators (+ FP32 biases) -> FP16 rows, one rounding, zero pad lane. */
void odl_narrow_bias(f16 *dst, int dp, const float *acc, int ap, int rows, int n, const float *bias) {
  int lo, hi;
  odl_rows(rows, &lo, &hi);
  for (int r = lo; r < hi; r++) {
    for (int c = 0; c < n; c++) dst[r * dp + c] = odl_f2h(acc[r * ap + c] + (bias ? bias[c] : 0.0f));
    if (n & 1) dst[r * dp + n] = 0;
  }
}

/* ---------------------------------------------------------------- building blocks */
void odl_lib_pack_rows(uint32_t *dst, const f16 *src, int rows, int blocks, int k2, int pitch) { odl_pack_rows(dst, src, rows, blocks, k2, pitch); }
/* The transpose of S[kdim][rows] into 4-row panels (as odl_pack_cols), two columns of S at a time:
 * one word of two adjacent columns from each of two rows of S gives a panel word of each column. */
void odl_lib_pack_cols(uint32_t *dst, const f16 *src, int rows, int blocks, int kdim, int pitch) {
  int k2 = (kdim + 1) / 2, nc = pi_cl_team_nb_cores(), b = pi_core_id();
  /* Blocks dealt round-robin: neighbouring cores read neighbouring words of each row of S, in
   * different TCDM banks. Contiguous ranges would put every core in the same bank whenever a range's
   * width is a multiple of the bank stride. Whole word-aligned blocks of an even K take the short way. */
  if (!((uintptr_t)src & 3) && !(pitch & 1) && !(kdim & 1)) {
    int full = rows / 4 < blocks ? rows / 4 : blocks;
    uint32_t kh = (uint32_t)(kdim / 2), pb = (uint32_t)pitch * 2;
    if (full > 0 && full < nc) {
      /* Fewer whole blocks than cores (a tile of a few columns and a long K): each block's K cut into g
       * parts, the items (part, block) dealt round-robin, so that every core packs. */
      int g = nc / full;
      if (b < full * g) {
        int blk = b % full, part = b / full;
        uint32_t j0 = kh * (uint32_t)part / (uint32_t)g, j1 = kh * (uint32_t)(part + 1) / (uint32_t)g;
        uint32_t *d = dst + blk * k2 * 4 + j0 * 4;
        const f16 *sp = src + 4 * blk + 2 * j0 * (uint32_t)pitch;
        odl_packk2(d, sp, j1 - j0, pb);
        odl_packk2(d + 2, sp + 2, j1 - j0, pb);
      }
      while (b < full) b += nc;   /* the partial blocks below go where the round-robin deal puts them */
    }
    for (; b < full; b += nc) {
      odl_packk2(dst + b * k2 * 4, src + 4 * b, kh, pb);
      odl_packk2(dst + b * k2 * 4 + 2, src + 4 * b + 2, kh, pb);
    }
  }
  for (; b < blocks; b += nc) {
    uint32_t *d = dst + b * k2 * 4;
    for (int i = 0; i < 4; i += 2) {
      int r = 4 * b + i;
      if (r + 1 < rows && !((uintptr_t)(src + r) & 3) && !(pitch & 1)) {
        const uint32_t *s = (const uint32_t *)(src + r);
        int wp = pitch / 2;
        odl_packk2(d + i, src + r, (uint32_t)(kdim / 2), (uint32_t)pitch * 2);
        if (kdim & 1) {
          uint32_t w0 = s[(kdim - 1) * wp];
          d[(k2 - 1) * 4 + i] = w0 & 0xffffu;
          d[(k2 - 1) * 4 + i + 1] = w0 >> 16;
        }
        continue;
      }
      for (int q = i; q < i + 2; q++) {
        int rr = 4 * b + q;
        if (rr >= rows) {
          for (int kk = 0; kk < k2; kk++) d[kk * 4 + q] = 0;
          continue;
        }
        const f16 *s = src + rr;
        for (int kk = 0; kk < kdim / 2; kk++) d[kk * 4 + q] = s[2 * kk * pitch] | ((uint32_t)s[(2 * kk + 1) * pitch] << 16);
        if (kdim & 1) d[(k2 - 1) * 4 + q] = s[(kdim - 1) * pitch];
      }
    }
  }
}

/* C = A.B^T (+ bias) as odl_matmul. Each core takes a contiguous range of the 4x4 blocks in row-major
 * order and runs each stretch of whole blocks of one block row with one call of the row micro-kernel;
 * blocks cut by the edges of C go through a 4x4 FP32 tile. */
static void odl_lib_block(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, f16 *c, int pitch,
                          const float *bias, int bm, int bn, int act) {
  float acc[16];
  odl_mm4x4(ap + bm * k2 * 4, bp + bn * k2 * 4, (uint32_t)k2, acc);
  for (int i = 0; i < 4 && 4 * bm + i < m; i++) {
    uint32_t *row = (uint32_t *)(c + (4 * bm + i) * pitch);
    for (int j = 0; j < 4; j += 2) {
      int col = 4 * bn + j;
      if (col >= n) break;
      float v0 = acc[4 * i + j], v1 = col + 1 < n ? acc[4 * i + j + 1] : 0.0f;
      if (bias) {
        v0 += bias[col];
        if (col + 1 < n) v1 += bias[col + 1];
      }
      uint32_t v = pulp_vfcpka_h_s(odl_f32_bits(v0), odl_f32_bits(v1));
      row[col / 2] = act == ODL_ACT_NONE ? v : odl_act_pair(v, act);
    }
  }
}

/* A row of blocks through the generated routine of the bias and activation (microkernel.py). */
static inline void odl_lib_run(const uint32_t *a, const uint32_t *b, uint32_t k2, f16 *c, uint32_t pitch_bytes,
                               uint32_t cnt, const float *bias, int act) {
  if (bias) {
    if (act == ODL_ACT_RELU) odl_mm4x4_run_bias_relu(a, b, k2, c, pitch_bytes, cnt, bias);
    else if (act == ODL_ACT_RELU6) odl_mm4x4_run_bias_relu6(a, b, k2, c, pitch_bytes, cnt, bias);
    else if (act == ODL_ACT_HSWISH) odl_mm4x4_run_bias_hswish(a, b, k2, c, pitch_bytes, cnt, bias);
    else odl_mm4x4_run_bias(a, b, k2, c, pitch_bytes, cnt, bias);
  } else {
    if (act == ODL_ACT_RELU) odl_mm4x4_run_relu(a, b, k2, c, pitch_bytes, cnt);
    else if (act == ODL_ACT_RELU6) odl_mm4x4_run_relu6(a, b, k2, c, pitch_bytes, cnt);
    else if (act == ODL_ACT_HSWISH) odl_mm4x4_run_hswish(a, b, k2, c, pitch_bytes, cnt);
    else odl_mm4x4_run(a, b, k2, c, pitch_bytes, cnt);
  }
}

void odl_lib_matmul(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, f16 *c, int pitch, const float *bias,
                    int m_pad, int act) {
  int mb = (m + 3) / 4, nb = (n + 3) / 4, lo, hi;
  /* Block rows and columns the row micro-kernel may write whole: with m_pad, C has rows up to a
   * multiple of 4 (the A panel's rows past m are zero, what lands there is never read); a column
   * block fits when its 4 columns stay within the pitch. */
  int full_m = m_pad ? mb : m / 4, full_n = 4 * nb <= pitch ? nb : n / 4;
  odl_chunk(mb * nb, &lo, &hi);
  for (int b = lo; b < hi;) {
    int bm = b / nb, bn = b % nb;
    int end = bm * nb + nb < hi ? bm * nb + nb : hi;   /* this block row's part of the range */
    if (bm < full_m) {
      int run_end = bm * nb + full_n < end ? bm * nb + full_n : end;
      int cnt = run_end - b;
      if (cnt > 0) {
        f16 *cb = c + 4 * bm * pitch + 4 * bn;
        const uint32_t *a = ap + bm * k2 * 4, *bb = bp + bn * k2 * 4;
        odl_lib_run(a, bb, (uint32_t)k2, cb, (uint32_t)pitch * 2, (uint32_t)cnt, bias ? bias + 4 * bn : 0, act);
        b += cnt;
        bn += cnt;
      }
    }
    for (; b < end; b++, bn++) odl_lib_block(ap, bp, m, n, k2, c, pitch, bias, bm, bn, act);
  }
}

/* accm: whole 4x4 blocks (rows of apitch floats, apitch a multiple of 4, the rows rounded up to 4), of
 * which the caller reads the m x n it wants. Each core adds its contiguous share of the blocks, a row of
 * blocks at a time. */
void odl_lib_matmul_acc(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, float *accm, int apitch) {
  int nb = (n + 3) / 4, lo, hi;
  odl_chunk((m + 3) / 4 * nb, &lo, &hi);
  while (lo < hi) {
    int bm = lo / nb, bn = lo - bm * nb, end = (bm + 1) * nb < hi ? (bm + 1) * nb : hi;
    odl_mm4x4_run_acc(ap + bm * k2 * 4, bp + bn * k2 * 4, (uint32_t)k2, accm + 4 * bm * apitch + 4 * bn,
                      (uint32_t)apitch * 4, (uint32_t)(end - lo));
    lo = end;
  }
}
/* The operands of a whole weight gradient that fits L1 as one tile, packed in one fork, and its bias
 * gradient: dW[m][n] = dY^T X over kdim samples (kdim even; dY [kdim][m] rows dyp halves apart, X
 * [kdim][n] rows xp apart, both in L1, xp a multiple of 4) as panels for register blocks
 * (harness/kernels/mmplan.py): X's in 4-column panels (the transposing pair packer), dY's in the
 * panels `atab` lists (first column, columns, word offset each: blocks of 5 and 4); db[c] = the sum
 * of dY's column c as it is packed (vfdotpex with {1, 1}, FP32, rounded once; db 0: none). X may
 * still be arriving when the fork starts (`xin`, the master's transfer: core 0 waits for it and
 * returns the cycles it waited) after its share of dY's columns, which every core packs and sums from
 * the last core down; then every core packs X's panels. */
uint32_t odl_lib_wg1_pack(const f16 *dy, int dyp, const f16 *x, int xp, int m, int kdim, uint32_t *apan,
                          uint32_t *bpan, const uint16_t *ctab, int nc, f16 *db, odl_dma_t *xin) {
  int id = pi_core_id(), k2 = kdim / 2, nb = xp / 4;
  uint32_t waited = 0;
  for (int c = nc - 1 - id; c < m; c += nc) {   /* a column of dY each, from the last core down */
    int h = ctab[2 * c + 1];
    uint32_t *d = apan + ctab[2 * c];
    const f16 *col = dy + c;
    uint32_t s = 0;
    for (int kk = 0; kk < k2; kk++, col += 2 * dyp) {
      uint32_t w = col[0] | ((uint32_t)col[dyp] << 16);
      d[kk * h] = w;
      s = pulp_vfdotpex_s_h(s, w, 0x3c003c00u);
    }
    if (db) {
      float f;
      __builtin_memcpy(&f, &s, 4);
      db[c] = odl_f2h(f);
    }
  }
  if (db && (m & 1) && id == nc - 1) db[m] = 0;
  if (id == 0 && xin) {
    uint32_t t0 = pulp_mcycle();
    odl_dma_wait_quiet(xin);
    waited = pulp_mcycle() - t0;
  }
  pi_cl_team_barrier();
  uint32_t xb = (uint32_t)xp * 2;
  for (int t = id; t < nb; t += nc) {   /* nc: the cores of the team */
    uint32_t *d = bpan + t * k2 * 4;
    odl_packk2(d, x + 4 * t, (uint32_t)k2, xb);
    odl_packk2(d + 2, x + 4 * t + 2, (uint32_t)k2, xb);
  }
  pi_cl_team_barrier();
  return waited;
}
/* odl_lib_wg1 when X, the weight gradient or the bias gradient lives in HyperRAM (T: odl_wg1x_t). The
 * master starts X's reads in `chunks` chunks of rows before the fork; in it every core packs and sums
 * dY's columns, then each chunk of X, as core 0 brings it from its slab, adds its sample pairs to X's
 * panels. dY's columns are in blocks of h (the last of m % h), and the product runs in parts of g
 * blocks: after each, core 0 moves its rows of the weight gradient to their slab and starts their
 * write (the bias gradient's after the first) while the other cores compute the next part, so the
 * writes, the slowest step, start early and follow each other. Core 0 adds what it waited for to
 * ext_wait and dma_wait. */
static inline void odl_wg1x_out(odl_wg1x_t *T, uint32_t l2, uint32_t ram, const void *l1, uint32_t bytes,
                                pi_task_t *task) {
  uint32_t t0 = pulp_mcycle();
  odl_dma_1d(T->dma, l2, (uint32_t)l1, bytes, PI_CL_DMA_DIR_LOC2EXT);
  odl_dma_wait_quiet(T->dma);
  T->dma_wait += pulp_mcycle() - t0;
  if (ram != ~0u) pi_ram_write_async(&odl_ram_dev, ram, (void *)l2, bytes, task);
}
void odl_lib_wg1x(void *arg) {
  odl_wg1x_t *T = arg;
  int id = pi_core_id(), nc = T->nc, k2 = T->kdim / 2, nb = T->xp / 4, m = T->m, dyp = T->dyp, h = T->h;
  int na = (m + h - 1) / h;
  for (int c = nc - 1 - id; c < m; c += nc) {   /* a column of dY each, from the last core down */
    int j = c % h, hh = c - j + h <= m ? h : m - (c - j);
    uint32_t *d = T->apan + (c - j) * k2 + j;
    const f16 *col = T->dy + c;
    uint32_t s = 0;
    for (int kk = 0; kk < k2; kk++, col += 2 * dyp) {
      uint32_t w = col[0] | ((uint32_t)col[dyp] << 16);
      d[kk * hh] = w;
      s = pulp_vfdotpex_s_h(s, w, 0x3c003c00u);
    }
    if (T->db) {
      float f;
      __builtin_memcpy(&f, &s, 4);
      T->db[c] = odl_f2h(f);
    }
  }
  if (T->db && (m & 1) && id == nc - 1) T->db[m] = 0;
  int rows = T->kdim / T->chunks;
  uint32_t rb = (uint32_t)T->xp * 2;
  for (int ch = 0; ch < T->chunks; ch++) {
    f16 *xc = T->x + ch * rows * T->xp;
    if (id == 0) {
      uint32_t t0 = pulp_mcycle();
      if (T->x_ram != ~0u) pi_task_wait_on(&T->rd[ch]);
      uint32_t t1 = pulp_mcycle();
      odl_dma_1d(T->dma, T->x_l2 + ch * rows * rb, (uint32_t)xc, rows * rb, PI_CL_DMA_DIR_EXT2LOC);
      odl_dma_wait_quiet(T->dma);
      T->ext_wait += t1 - t0;
      T->dma_wait += pulp_mcycle() - t1;
    }
    pi_cl_team_barrier();
    for (int t = id; t < nb; t += nc) {
      uint32_t *d = T->bpan + t * k2 * 4 + ch * (rows / 2) * 4;
      odl_packk2(d, xc + 4 * t, (uint32_t)(rows / 2), rb);
      odl_packk2(d + 2, xc + 4 * t + 2, (uint32_t)(rows / 2), rb);
    }
  }
  pi_cl_team_barrier();
  for (int a0 = 0, part = 0; a0 < na; a0 += T->g, part++) {
    int a1 = a0 + T->g < na ? a0 + T->g : na;
    /* the blocks of dY blocks a0 .. a1 - 1 over all cores, or over all but core 0 after the first part */
    int me = part ? id - 1 : id;
    if (me >= 0) {
      /* shares of whole parts (q blocks, r cores one more) from the generator: no divisions here */
      int sh = a1 - a0 < T->g ? 2 : (part ? 1 : 0), q = T->q[sh], r = T->r[sh];
      int lo = me * q + (me < r ? me : r), hi = lo + q + (me < r ? 1 : 0), ia = a0;
      while (lo >= nb) {
        lo -= nb;
        hi -= nb;
        ia++;
      }
      while (hi > 0) {
        int cnt = (hi < nb ? hi : nb) - lo;
        (ia * h + h <= m ? T->kh : T->kr)(T->apan + ia * h * k2, T->bpan + lo * k2 * 4, T->out + ia * h * T->xp + 4 * lo,
                                          (uint32_t)cnt, 0);
        lo = 0;
        hi -= nb;
        ia++;
      }
    }
    pi_cl_team_barrier();
    if (id == 0) {
      int r0 = a0 * h, r1 = a1 * h < m ? a1 * h : m;
      odl_wg1x_out(T, T->dw_l2 + r0 * rb, T->dw_ram == ~0u ? ~0u : T->dw_ram + r0 * rb, T->out + r0 * T->xp,
                   (r1 - r0) * rb, &T->wr[part + 1]);
      if (!part && T->db) odl_wg1x_out(T, T->db_l2, T->db_ram, T->db, (uint32_t)(m + (m & 1)) * 2, &T->wr[0]);
    }
  }
}
void odl_lib_keep_channels(f16 *dst, const f16 *src, int pixels, int sp, int keep, int dp) { odl_keep_channels(dst, src, pixels, sp, keep, dp); }
void odl_lib_zero_f32(float *p, int n) { odl_zero_f32(p, n); }
void odl_lib_widen(float *dst, const f16 *src, int n) { odl_widen(dst, src, n); }
void odl_lib_colsum_acc(float *acc, const f16 *src, int rows, int pitch, int cols) { odl_colsum_acc(acc, src, rows, pitch, cols); }
void odl_lib_zero_lane(f16 *x, int rows, int p, int ch) { odl_zero_lane(x, rows, p, ch); }
/* SGD on a block (odl_sgd_block's operation, the same roundings) four words a turn, their loads first: no
 * load-use stall and one taken branch for four words, where a word a turn cost about 10 cycles (the loaded
 * gradient used at once, the product stored at once, the branch). The deployed updates are blocks of
 * hundreds of columns: PhiNet CIFAR-10's B8.project.update 128,524 -> 105,798 cycles. (The isolated kernels
 * keep odl_sgd_block, whose cycles the GVSoC cross-check of the regress set holds.) */
static inline __attribute__((always_inline)) void odl_sgd_words(uint32_t *wr, const uint32_t *gr, int n,
                                                                uint32_t neg_lr2) {
  int c = 0;
  for (; c + 4 <= n; c += 4, wr += 4, gr += 4) {
    uint32_t w0 = wr[0], w1 = wr[1], w2 = wr[2], w3 = wr[3];
    uint32_t g0 = gr[0], g1 = gr[1], g2 = gr[2], g3 = gr[3];
    wr[0] = pulp_vfmac_h(w0, g0, neg_lr2);
    wr[1] = pulp_vfmac_h(w1, g1, neg_lr2);
    wr[2] = pulp_vfmac_h(w2, g2, neg_lr2);
    wr[3] = pulp_vfmac_h(w3, g3, neg_lr2);
  }
  for (; c < n; c++, wr++, gr++) wr[0] = pulp_vfmac_h(wr[0], gr[0], neg_lr2);
}

void odl_lib_sgd_block(f16 *w, int wp, const f16 *g, int gp, int rows, int cols, uint32_t neg_lr2) {
  int lo, hi;
  odl_chunk(rows, &lo, &hi);
  for (int r = lo; r < hi; r++)
    odl_sgd_words((uint32_t *)(w + r * wp), (const uint32_t *)(g + r * gp), (cols + 1) / 2, neg_lr2);
}
void odl_lib_pack_im2col(uint32_t *dst, const f16 *raw, int rows, int oh0, int ih0, int w_out, int h_in, int w_in, int pitch, int cin, int k, int stride, int pad_top, int pad_left, int k2) { odl_pack_im2col(dst, raw, rows, oh0, ih0, w_out, h_in, w_in, pitch, cin, k, stride, pad_top, pad_left, k2); }
void odl_lib_sgd_conv(f16 *w, int wp, const f16 *g, int gp, int rows, int taps, int cin, int ki, uint32_t neg_lr) { odl_sgd_conv(w, wp, g, gp, rows, taps, cin, ki, neg_lr); }

/* ---------------------------------------------------------------- gathers of a convolution
 * Rows split across the cores; each core steps its pixels' coordinates without dividing. Channels move
 * as words when c is even (every column block starts at an even half), one half at a time otherwise; four
 * a turn, their loads first (no load-use stall, one taken branch for four). */
#define ODL_COPY_RUN(d, s, n)                                                                 \
  do {                                                                                        \
    int i_ = 0;                                                                               \
    for (; i_ + 4 <= (n); i_ += 4) {                                                          \
      __typeof__(*(s)) a_ = (s)[i_], b_ = (s)[i_ + 1], e_ = (s)[i_ + 2], f_ = (s)[i_ + 3];    \
      (d)[i_] = a_;                                                                           \
      (d)[i_ + 1] = b_;                                                                       \
      (d)[i_ + 2] = e_;                                                                       \
      (d)[i_ + 3] = f_;                                                                       \
    }                                                                                         \
    for (; i_ < (n); i_++) (d)[i_] = (s)[i_];                                                 \
  } while (0)
#define ODL_ZERO_RUN(d, n)                                                                    \
  do {                                                                                        \
    int i_ = 0;                                                                               \
    for (; i_ + 4 <= (n); i_ += 4) {                                                          \
      (d)[i_] = 0;                                                                            \
      (d)[i_ + 1] = 0;                                                                        \
      (d)[i_ + 2] = 0;                                                                        \
      (d)[i_ + 3] = 0;                                                                        \
    }                                                                                         \
    for (; i_ < (n); i_++) (d)[i_] = 0;                                                       \
  } while (0)

static inline void odl_copy_c(f16 *d, const f16 *s, int c) {
  if (!(c & 1))
    ODL_COPY_RUN((uint32_t *)d, (const uint32_t *)s, c / 2);
  else
    ODL_COPY_RUN(d, s, c);
}

static inline void odl_zero_c(f16 *d, int c) {
  if (!(c & 1))
    ODL_ZERO_RUN((uint32_t *)d, c / 2);
  else
    ODL_ZERO_RUN(d, c);
}

/* dst row p (pitch dp) = the k x k window of output pixel (oh0 + p / wo, p % wo), columns (kh, kw, ci) for
 * ci < c, zero outside the map; src holds input rows [ih0, ih1) of w pixels (pitch sp). */
void odl_im2col_rows(f16 *dst, int dp, const f16 *src, int sp, int c, int npix, int oh0, int ih0, int ih1, int wo,
                     int w, int k, int s, int pt, int pl) {
  int lo, hi;
  odl_chunk(npix, &lo, &hi);
  if (lo >= hi) return;
  int oh = oh0 + lo / wo, ow = lo % wo, kkc = k * k * c;
  for (int p = lo; p < hi; p++) {
    f16 *d = dst + p * dp;
    for (int kh = 0; kh < k; kh++) {
      int ih = oh * s + kh - pt, okh = ih >= ih0 && ih < ih1;
      const f16 *row = src + (ih - ih0) * w * sp;
      for (int kw = 0; kw < k; kw++, d += c) {
        int iw = ow * s + kw - pl;
        if (okh && iw >= 0 && iw < w)
          odl_copy_c(d, row + iw * sp, c);
        else
          odl_zero_c(d, c);
      }
    }
    if (kkc & 1) dst[p * dp + kkc] = 0;
    if (++ow == wo) {
      ow = 0;
      oh++;
    }
  }
}

/* dst row p = input pixel (ih0 + p / w, p % w): columns (kh, kw, co) hold dz at the output pixel that tap
 * maps it to ((ih + pt - kh) / s exactly, in range), zero where none; src holds dz rows [oh_lo, oh_hi). */
void odl_dycols_rows(f16 *dst, int dp, const f16 *src, int sp, int c, int npix, int ih0, int oh_lo, int oh_hi, int w,
                     int wo, int k, int s, int pt, int pl) {
  int lo, hi;
  odl_chunk(npix, &lo, &hi);
  if (lo >= hi) return;
  int ih = ih0 + lo / w, iw = lo % w, kkc = k * k * c;
  for (int p = lo; p < hi; p++) {
    f16 *d = dst + p * dp;
    for (int kh = 0; kh < k; kh++) {
      int th = ih + pt - kh, oh = odl_sdiv(th, s);
      int okh = th >= 0 && odl_smod(th, s) == 0 && oh >= oh_lo && oh < oh_hi;
      for (int kw = 0; kw < k; kw++, d += c) {
        int tw = iw + pl - kw, ow = odl_sdiv(tw, s);
        if (okh && tw >= 0 && odl_smod(tw, s) == 0 && ow < wo)
          odl_copy_c(d, src + ((oh - oh_lo) * wo + ow) * sp, c);
        else
          odl_zero_c(d, c);
      }
    }
    if (kkc & 1) dst[p * dp + kkc] = 0;
    if (++iw == w) {
      iw = 0;
      ih++;
    }
  }
}

/* dst[ci][col0 + co] = src[co][ci] for ci < nci, co < ko (src pitch sp, dst pitch dp); channels split across
 * the cores. */
void odl_transpose_into(f16 *dst, int dp, const f16 *src, int sp, int ko, int nci, int col0) {
  int lo, hi;
  odl_chunk(nci, &lo, &hi);
  for (int ci = lo; ci < hi; ci++)
    for (int co = 0; co < ko; co++) dst[ci * dp + col0 + co] = src[co * sp + ci];
}
