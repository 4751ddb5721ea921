/* odl_deploy.h: what the deployed training-step programs share: moving tiles of tensors wherever the
 * memory plan put them, and the work fused into the kernels' prologues and epilogues.
 *
 * A tensor lives in L2 (an address in the program's arena) or in an external memory (an address in
 * HyperRAM or flash, reached only by the peripheral DMA). Tiles always land in L1:
 *   L2 tensor:       one cluster-DMA transfer (2-D when only some columns are wanted);
 *   external tensor: the uDMA brings whole rows into an L2 slab, then the cluster DMA moves the wanted
 *                    columns to L1; stores go the other way and leave for external memory once a
 *                    slab holds whole rows (odl_put with flush).
 * Every wait is timed: cluster-DMA waits in odl_tm.dma, uDMA waits in odl_tm.ext, forked compute in
 * odl_tm.compute, so each stage reports where its cycles went. Generated stage code calls these with
 * constant arguments; the home of a tensor is a constant, so each call compiles to one path. */
#ifndef ODL_DEPLOY_H
#define ODL_DEPLOY_H

#include <odl_kernels.h>

#define ODL_L2 0
#define ODL_RAM 1
#define ODL_FLASH 2

typedef struct {
  uint32_t compute, dma, ext;
} odl_times_t;
extern odl_times_t odl_tm;
extern struct pi_device odl_ram_dev, odl_flash_dev;

/* A tensor as a stage sees it: where it lives, its pitch, and for an external tensor two L2 slabs
 * that loads and stores alternate between (a uDMA transfer can be in flight on one while the other
 * is used). `addr` already includes the chunk's first sample. */
typedef struct {
  int home;
  uint32_t addr;
  uint32_t pitch;      /* halves per row */
  uint32_t slab[2];
  uint32_t slab_bytes;
  pi_task_t ud[2];
  int busy[2];
  int cur;
  int whole;           /* the tensor is on its way into L2 whole (see odl_stream) */
} odl_stream_t;

/* `whole` > 0: an external tensor read by the stage that fits its two slabs (contiguous) comes into L2
 * whole, in one uDMA transfer started here, before the stage's first tile; from its first load on
 * the stream is an L2 one, so tiles that want some of its columns, or its rows again, read it there
 * instead of bringing whole rows from external memory each time. */
static inline void odl_stream(odl_stream_t *s, int home, uint32_t addr, uint32_t pitch, uint32_t slab0, uint32_t slab1,
                              uint32_t slab_bytes, uint32_t whole) {
  s->home = home;
  s->slab_bytes = slab_bytes;
  s->addr = addr;
  s->pitch = pitch;
  s->slab[0] = slab0;
  s->slab[1] = slab1;
  s->busy[0] = s->busy[1] = 0;
  s->cur = 0;
  s->whole = 0;
  if (whole && home != ODL_L2) {
    if (home == ODL_RAM)
      pi_ram_read_async(&odl_ram_dev, addr, (void *)slab0, whole, &s->ud[0]);
    else
      pi_flash_read_async(&odl_flash_dev, addr, (void *)slab0, whole, &s->ud[0]);
    s->busy[0] = 1;
    s->whole = 1;
  }
}

/* One load or store in flight: its cluster-DMA commands, and for an external load the slab -> L1 hop
 * that follows the uDMA transfer. */
typedef struct {
  odl_dma_t dma;
  odl_stream_t *hop;    /* the stream whose uDMA transfer must land before the hop */
  int hop_slab;
  uint32_t hop_l2, hop_l1, hop_row, hop_rows, hop_stride;
} odl_xfer_t;

static inline void odl_xfer_init(odl_xfer_t *x) {
  x->dma.n = 0;
  x->hop = 0;
}

static inline void odl_wait_dma(odl_dma_t *d) {
  if (!d->n) return;
  uint32_t t0 = pulp_mcycle();
  for (int i = 0; i < d->n; i++) pi_cl_dma_cmd_wait(&d->cmd[i]);
  d->n = 0;
  odl_tm.dma += pulp_mcycle() - t0;
}

static inline void odl_wait_slab(odl_stream_t *s, int k) {
  if (!s->busy[k]) return;
  uint32_t t0 = pulp_mcycle();
  pi_task_wait_on(&s->ud[k]);
  s->busy[k] = 0;
  odl_tm.ext += pulp_mcycle() - t0;
}

/* `rows` rows of `row_bytes` bytes, `stride` bytes apart on the L2 side, contiguous in L1. */
static inline void odl_dma_rows(odl_dma_t *d, uint32_t l2, uint32_t l1, uint32_t row_bytes, uint32_t rows,
                                uint32_t stride, pi_cl_dma_dir_e dir) {
  if (rows == 0 || row_bytes == 0) return;
  odl_dma_2d(d, l2, l1, row_bytes, rows, stride, dir);
}

/* Start loading rows [row0, row0 + nrows), columns [col0, col0 + ncols) (rounded up to even) into L1
 * (rows packed, cp(ncols) halves each). An external tensor's rows come whole into the next slab. */
void odl_get(odl_xfer_t *x, odl_stream_t *s, uint32_t row0, uint32_t nrows, uint32_t col0, uint32_t ncols, void *l1);

void odl_get_wait(odl_xfer_t *x);

/* Start storing a tile (rows packed in L1, cp(ncols) halves each) into rows [row0, row0 + nrows),
 * columns [col0, col0 + ncols). An external tensor's tiles collect in its current slab, which holds
 * whole rows from `slab_row0`; `flush` sends those rows out and moves to the other slab (the caller
 * flushes once every column of the slab's rows is written). */
void odl_put(odl_xfer_t *x, odl_stream_t *s, uint32_t row0, uint32_t nrows, uint32_t col0, uint32_t ncols, const void *l1, uint32_t slab_row0, uint32_t slab_rows, int flush);

static inline void odl_put_wait(odl_xfer_t *x) { odl_wait_dma(&x->dma); }

/* Every transfer of a stream has landed (end of a stage). */
void odl_stream_drain(odl_stream_t *s);

static inline void odl_run(void (*fn)(void *), void *arg) {
  uint32_t t0 = pulp_mcycle();
  pi_cl_team_fork(0, fn, arg);
  odl_tm.compute += pulp_mcycle() - t0;
}

/* ---------------------------------------------------------------- compute (pulp_kernels/deploy/odl_deploy.c)
 * One copy in every program, compiled once: a stage calls the same code whether it runs alone or in
 * a whole step, and the step's code stays small enough to leave L2 to its tensors. */

#define ODL_ACT_NONE 0
#define ODL_ACT_RELU6 1
#define ODL_ACT_HSWISH 2
#define ODL_ACT_SIGMOID 3
#define ODL_ACT_RELU 4

/* A word holding v in both FP16 lanes (a constant when v is). */
static inline uint32_t odl_pair(float v) {
  uint32_t h = odl_f2h(v);
  return h | h << 16;
}

/* relu, relu6 or hswish of a channel pair (FP16 SIMD, two channels an instruction). hswish: y = x *
 * (min(max(x + 3, 0), 6) * 1/6): three roundings and 1/6 in FP16 stay within 3.5 * 2^-11 of |y|, inside
 * the stage tolerance (docs/deploy.md); scaling the clamp first keeps x * 6 from overflowing. The
 * generated depthwise rows (harness/kernels/dwblock.py) and small maps (dw.c.j2) apply the same operations. */
static inline uint32_t odl_act_pair(uint32_t x, int act) {
  if (act == ODL_ACT_RELU) return pulp_vfmax_h(x, 0u);
  if (act == ODL_ACT_RELU6) return pulp_vfmin_h(pulp_vfmax_h(x, 0u), odl_pair(6.0f));
  uint32_t t = pulp_vfmin_h(pulp_vfmax_h(pulp_vfadd_h(x, odl_pair(3.0f)), 0u), odl_pair(6.0f));
  return pulp_vfmul_h(x, pulp_vfmul_h(t, odl_pair(1.0f / 6.0f)));
}

void odl_act_tile(f16 *y, int rows, int cols, int p, int act, f16 *pre, int pp, f16 *post, int keep);
void odl_act_bw_tile(f16 *g, int gp, const f16 *st, int sp, int rows, int cols, int act);
void odl_add_tile(f16 *y, int yp, const f16 *s, int sp, int rows, int cols);
void odl_pool_acc(float *acc, int acc_pitch, const f16 *y, int yp, int rows, int cols, int m0, int rows_ps, int col0,
                  float *part);
void odl_ce_rows(f16 *dz, int dzp, f16 *loss, const f16 *z, int zp, const int32_t *label, int rows, int n);
void odl_narrow_acc(f16 *dst, int dp, const float *src, int sp, int rows, int n, int acc);
/* a stage's generated 3x3 forward routine: (y, x at the input row above, w, bias pair, rows, pixel bytes) */
typedef void (*odl_dw3_fn)(uint32_t *y, const uint32_t *x, const uint32_t *w, uint32_t bias, int nrows, int pix);
void odl_dw3_fw_batch(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo, int s, int p, int ns, int r0, int r1, odl_dw3_fn fn, int act);
void odl_dw_fw_batch(f16 *y, const f16 *x, const f16 *w, const f16 *b, int c2, int h, int wd, int ho, int wo, int k, int s, int pt, int pl, int p, int ns, int r0, int r1);
void odl_dw_ig_batch(f16 *dx, const f16 *dy, const f16 *w, int c2, int h, int wd, int ho, int wo, int k, int s, int pt, int pl, int p, int ns, int r0, int r1);
void odl_dw_wg_batch(float *acc, float *accb, int ap, const f16 *dy, const f16 *x, int c2, int h, int wd, int ho, int wo, int k, int s, int pt, int pl, int p, int ns, int r0, int r1);
void odl_narrow_bias(f16 *dst, int dp, const float *acc, int ap, int rows, int n, const float *bias);
void odl_mean_rows(f16 *dst, int dp, const float *src, int sp, int rows, int n, float scale);

/* the building blocks of odl_kernels.h, through one copy each */
void odl_lib_pack_rows(uint32_t *dst, const f16 *src, int rows, int blocks, int k2, int pitch);
void odl_lib_pack_cols(uint32_t *dst, const f16 *src, int rows, int blocks, int kdim, int pitch);
/* act: ODL_ACT_NONE, or relu, relu6 or hswish applied to C's FP16 values (a frozen layer's forward) */
void odl_lib_matmul(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, f16 *c, int pitch, const float *bias,
                    int m_pad, int act);
uint32_t odl_lib_wg1_pack(const f16 *dy, int dyp, const f16 *x, int xp, int m, int kdim, uint32_t *apan,
                          uint32_t *bpan, const uint16_t *ctab, int nc, f16 *db, odl_dma_t *xin);
/* A one-tile weight gradient whose X, weight or bias gradient lives in HyperRAM (odl_lib_wg1x, forked
 * with one of these, on the master's stack): its operands in L1, X's rows and the results' in L2 slabs
 * (or their L2 homes), the micro-kernels of its blocks, and what the fork waited for. */
typedef struct {
  const f16 *dy;
  f16 *x, *out, *db;
  uint32_t *apan, *bpan;
  odl_mm_fn kh, kr;               /* blocks of h and of m % h dY columns by 4 X columns */
  uint32_t x_l2, x_ram, dw_l2, dw_ram, db_l2, db_ram;   /* *_ram: ~0u when the tensor is in L2 */
  pi_task_t *rd, *wr;             /* X's reads, one a chunk; the bias gradient's write, then each part's */
  odl_dma_t *dma;
  uint32_t ext_wait, dma_wait;
  int16_t dyp, xp, m, kdim, nc, h, g, chunks;
  int16_t q[3], r[3];             /* blocks a core of the first, a later and a short last part, and how many
                                     cores take one more */
} odl_wg1x_t;
void odl_lib_wg1x(void *arg);
void odl_lib_matmul_acc(const uint32_t *ap, const uint32_t *bp, int m, int n, int k2, float *accm, int apitch);
void odl_lib_keep_channels(f16 *dst, const f16 *src, int pixels, int sp, int keep, int dp);
void odl_lib_zero_f32(float *p, int n);
void odl_lib_widen(float *dst, const f16 *src, int n);
void odl_lib_colsum_acc(float *acc, const f16 *src, int rows, int pitch, int cols);
void odl_lib_zero_lane(f16 *x, int rows, int p, int ch);
void odl_lib_sgd_block(f16 *w, int wp, const f16 *g, int gp, int rows, int cols, uint32_t neg_lr2);
void odl_lib_sgd_conv(f16 *w, int wp, const f16 *g, int gp, int rows, int taps, int cin, int ki, uint32_t neg_lr);
void odl_im2col_rows(f16 *dst, int dp, const f16 *src, int sp, int c, int npix, int oh0, int ih0, int ih1, int wo,
                     int w, int k, int s, int pt, int pl);
void odl_dycols_rows(f16 *dst, int dp, const f16 *src, int sp, int c, int npix, int ih0, int oh_lo, int oh_hi, int w,
                     int wo, int k, int s, int pt, int pl);
void odl_transpose_into(f16 *dst, int dp, const f16 *src, int sp, int ko, int nci, int col0);
void odl_lib_pack_im2col(uint32_t *dst, const f16 *raw, int rows, int oh0, int ih0, int w_out, int h_in, int w_in, int pitch, int cin, int k, int stride, int pad_top, int pad_left, int k2);

#endif
