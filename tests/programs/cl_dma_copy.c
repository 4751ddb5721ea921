/* Cluster DMA 1-D and 2-D copies with odd sizes and alignments, both directions, checked byte by byte. */
#include <pmsis.h>

static PI_L2 uint8_t src[3000], dst[3000];
static PI_L1 uint8_t l1[3000];
static int failures, checked;

static void fill(uint8_t *p, int n, int salt) { for (int i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + salt); }

static void entry(void *arg) {
  (void)arg;
  static const int sizes[] = {1, 3, 7, 64, 129, 1001, 2047};
  static const int offs[] = {0, 1, 2, 3, 5};
  pi_cl_dma_cmd_t cmd;
  for (unsigned si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    for (unsigned oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
      int n = sizes[si], o = offs[oi], lo = (o * 3) % 4;
      for (int i = 0; i < 3000; i++) { l1[i] = 0xEE; dst[i] = 0xDD; }
      pi_cl_dma_cmd((uint32_t)&src[o], (uint32_t)&l1[lo], n, PI_CL_DMA_DIR_EXT2LOC, &cmd);
      pi_cl_dma_cmd_wait(&cmd);
      for (int i = 0; i < n; i++) if (l1[lo + i] != src[o + i]) { failures++; break; }
      if (l1[lo + n] != 0xEE || (lo && l1[lo - 1] != 0xEE)) failures++;
      pi_cl_dma_cmd((uint32_t)&dst[o + 1], (uint32_t)&l1[lo], n, PI_CL_DMA_DIR_LOC2EXT, &cmd);
      pi_cl_dma_cmd_wait(&cmd);
      for (int i = 0; i < n; i++) if (dst[o + 1 + i] != src[o + i]) { failures++; break; }
      if (dst[o + 1 + n] != 0xDD || dst[o] != 0xDD) failures++;
      checked++;
    }
  }
  /* 2-D: 13 rows of 37 bytes, 50 apart in L2, packed in L1; then back with another stride */
  for (int i = 0; i < 3000; i++) { l1[i] = 0; dst[i] = 0; }
  pi_cl_dma_cmd_2d((uint32_t)&src[3], (uint32_t)&l1[1], 13 * 37, 50, 37, PI_CL_DMA_DIR_EXT2LOC, &cmd);
  pi_cl_dma_cmd_wait(&cmd);
  for (int r = 0; r < 13; r++)
    for (int c = 0; c < 37; c++) if (l1[1 + r * 37 + c] != src[3 + r * 50 + c]) { failures++; r = 13; break; }
  pi_cl_dma_cmd_2d((uint32_t)&dst[2], (uint32_t)&l1[1], 13 * 37, 41, 37, PI_CL_DMA_DIR_LOC2EXT, &cmd);
  pi_cl_dma_cmd_wait(&cmd);
  for (int r = 0; r < 13; r++)
    for (int c = 0; c < 37; c++) if (dst[2 + r * 41 + c] != src[3 + r * 50 + c]) { failures++; r = 13; break; }
  checked += 2;
}

int main(void) {
  fill(src, 3000, 5);
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, entry, 0));
  printf("dma copies checked %d failures %d\n", checked, failures);
  return failures != 0;
}
