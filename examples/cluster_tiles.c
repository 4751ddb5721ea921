/* The whole MCU at work: data goes HyperRAM -> L2 (peripheral DMA) -> L1 (cluster DMA), 8 cores
 * scale it in parallel (FP16 SIMD), results go back L1 -> L2 -> HyperRAM, and the FC checks them. */
#include <pmsis.h>
#include <pulp_isa.h>

#define N 4096          /* fp16 elements */
#define TILE 1024       /* elements per tile */
#define NT (N / TILE)

static PI_L2 uint16_t l2_in[N], l2_out[N];
static uint16_t *l1_buf;
static uint32_t ram_in, ram_out;
static struct pi_device ram;

static inline uint16_t f2h(float f) { _Float16 h = (_Float16)f; uint16_t u; __builtin_memcpy(&u, &h, 2); return u; }
static inline float h2f(uint16_t u) { _Float16 h; __builtin_memcpy(&h, &u, 2); return (float)h; }

static void scale(void *arg) {
  (void)arg;
  int core = pi_core_id(), nc = pi_cl_team_nb_cores();
  uint32_t *v = (uint32_t *)l1_buf;                   /* 2 x fp16 per word */
  uint32_t two = f2h(2.0f) | ((uint32_t)f2h(2.0f) << 16), one = f2h(1.0f) | ((uint32_t)f2h(1.0f) << 16);
  for (int i = core; i < TILE / 2; i += nc) {
    uint32_t acc = one;
    v[i] = pulp_vfmac_h(acc, v[i], two);             /* 2x + 1 */
  }
}

static void cluster_entry(void *arg) {
  (void)arg;
  pi_cl_dma_cmd_t cmd;
  for (int t = 0; t < NT; t++) {
    pi_cl_dma_cmd((uint32_t)&l2_in[t * TILE], (uint32_t)l1_buf, TILE * 2, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
    pi_cl_team_fork(0, scale, 0);
    pi_cl_dma_cmd((uint32_t)&l2_out[t * TILE], (uint32_t)l1_buf, TILE * 2, PI_CL_DMA_DIR_LOC2EXT, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
  }
}

int main(void) {
  struct pi_hyperram_conf rconf;
  pi_hyperram_conf_init(&rconf);
  pi_open_from_conf(&ram, &rconf);
  pi_ram_open(&ram);
  pi_ram_alloc(&ram, &ram_in, N * 2);
  pi_ram_alloc(&ram, &ram_out, N * 2);
  for (int i = 0; i < N; i++) l2_in[i] = f2h((float)(i % 64) * 0.25f);
  pi_ram_write(&ram, ram_in, l2_in, N * 2);          /* the input starts in HyperRAM */
  for (int i = 0; i < N; i++) l2_in[i] = 0;

  struct pi_device cluster;
  struct pi_cluster_conf conf;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cluster, &conf);
  pi_cluster_open(&cluster);
  l1_buf = pi_l1_malloc(&cluster, TILE * 2);

  pi_perf_conf(1 << PI_PERF_CYCLES);
  pi_perf_reset();
  pi_perf_start();
  pi_ram_read(&ram, ram_in, l2_in, N * 2);
  struct pi_cluster_task task;
  pi_cluster_send_task_to_cl(&cluster, pi_cluster_task(&task, cluster_entry, 0));
  pi_ram_write(&ram, ram_out, l2_out, N * 2);
  pi_perf_stop();

  for (int i = 0; i < N; i++) l2_out[i] = 0;
  pi_ram_read(&ram, ram_out, l2_out, N * 2);
  int errors = 0;
  for (int i = 0; i < N; i++)
    if (h2f(l2_out[i]) != 2.0f * ((float)(i % 64) * 0.25f) + 1.0f) errors++;
  printf("cluster tiles: %d elements, %d errors, %u cycles\n", N, errors, pi_perf_read(PI_PERF_CYCLES));
  return errors != 0;
}
