/* Microbenchmarks of the cluster's shared resources, timed on every participating core:
 *   tcdm.same / tcdm.diff : 8 cores x 64 loads, all to one L1 bank or each to its own bank
 *   fpu.alone / fpu.pair / fpu.quad / fpu.all : 64 x 4 independent fmadd.s on cores {0}, {0,4}, {0..3}, {0..7}
 *   dma.<bytes> : one L2 -> L1 transfer, cycles from the first command word to completion */
#include <pmsis.h>

static PI_L1 volatile uint32_t arr[16 * 16];
static PI_L1 volatile uint32_t cyc[16];
static PI_L1 uint8_t dma_l1[32768];
static PI_L2 uint8_t dma_l2[32768];
static volatile uint32_t mode, mask;

static inline uint32_t now(void) { uint32_t v; __asm__ volatile("csrr %0, mcycle" : "=r"(v)); return v; }

static void loads(void *arg) {
  (void)arg;
  int id = pi_core_id();
  volatile uint32_t *p = mode ? &arr[16 * id] : &arr[id];   /* 64-byte stride hits one bank */
  uint32_t t0 = now(), tmp;
  __asm__ volatile(".option push\n.option norvc\n"
                   ".insn i 0x7b, 5, x0, x4, 64\n"            /* lp.setupi 64 iterations, body of 2 */
                   "lw %0, 0(%1)\n"
                   "addi zero, zero, 0\n"
                   ".option pop\n"
                   : "=&r"(tmp) : "r"(p) : "memory");
  cyc[id] = now() - t0;
}

static void fmadds(void *arg) {
  (void)arg;
  int id = pi_core_id();
  pi_cl_team_barrier();
  if (!(mask >> id & 1)) return;
  uint32_t a = 0x3f800000, b = 0x3f800000, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  uint32_t t0 = now();
  __asm__ volatile(".option push\n.option norvc\n"
                   ".insn i 0x7b, 5, x0, x8, 64\n"
                   "fmadd.s %0, %4, %5, %0\n"
                   "fmadd.s %1, %4, %5, %1\n"
                   "fmadd.s %2, %4, %5, %2\n"
                   "fmadd.s %3, %4, %5, %3\n"
                   ".option pop\n"
                   : "+r"(c0), "+r"(c1), "+r"(c2), "+r"(c3) : "r"(a), "r"(b));
  cyc[id] = now() - t0;
}

static void entry(void *arg) {
  (void)arg;
  static const char *const names[2] = {"diff", "same"};
  for (uint32_t m = 0; m < 2; m++) {
    mode = m;
    pi_cl_team_fork(8, loads, 0);  /* warm-up: icache */
    pi_cl_team_fork(8, loads, 0);
    uint32_t mx = 0;
    for (int i = 0; i < 8; i++) if (cyc[i] > mx) mx = cyc[i];
    printf("tcdm.%s %u\n", names[m], mx);
  }
  static const uint32_t masks[4] = {0x01, 0x11, 0x0F, 0xFF};
  static const char *const fn[4] = {"alone", "pair", "quad", "all"};
  for (int k = 0; k < 4; k++) {
    mask = masks[k];
    pi_cl_team_fork(8, fmadds, 0);
    pi_cl_team_fork(8, fmadds, 0);
    uint32_t mx = 0;
    for (int i = 0; i < 8; i++) if ((masks[k] >> i & 1) && cyc[i] > mx) mx = cyc[i];
    printf("fpu.%s %u\n", fn[k], mx);
  }
  static const uint32_t sizes[3] = {1024, 8192, 32768};
  for (int k = 0; k < 3; k++) {
    pi_cl_dma_cmd_t cmd;
    uint32_t t0 = now();
    pi_cl_dma_cmd((uint32_t)dma_l2, (uint32_t)dma_l1, sizes[k], PI_CL_DMA_DIR_EXT2LOC, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
    printf("dma.%u %u\n", sizes[k], now() - t0);
  }
}

int main(void) {
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, entry, 0));
  return 0;
}
