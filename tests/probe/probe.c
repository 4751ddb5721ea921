/* probe.c: touches every part of the MCU whose timing or behaviour a platform key sets, and prints
 * what it saw, so that tests/test_perturbation.py can check that changing any key changes the run.
 * The test passes the layout facts the probe is built around as -D values read from the platform:
 *   FC_SPREAD, L0_SPREAD, L1I_SPREAD   bytes between code blocks that share an icache set
 *   FC_ALIAS_END                       end of the FC's alias of L2 at address 0
 *   TAS_OFFSET, QUIET_WINDOWS          L1's test-and-set alias; X(name) for every quiet window */
#include <pmsis.h>
#include <pulp_isa.h>

#define REG(a) (*(volatile uint32_t *)(a))

/* Five code blocks a set-stride apart: they share one icache set, so whether they fit depends on
 * the cache's size and ways. */
#define BLOCK(g, n, align) \
  __attribute__((noinline, aligned(align))) uint32_t g##n(uint32_t x) { return x * 3u + n; }
#define BLOCKS(g, align) BLOCK(g, 0, align) BLOCK(g, 1, align) BLOCK(g, 2, align) BLOCK(g, 3, align) BLOCK(g, 4, align)
BLOCKS(fcb, FC_SPREAD)
BLOCKS(l0b, L0_SPREAD)
BLOCKS(l1b, L1I_SPREAD)
#define RUN_BLOCKS(g, x) for (int r_ = 0; r_ < 4; r_++) x = g##0(g##1(g##2(g##3(g##4(x)))));

static uint32_t l2src[256];
static volatile uint32_t l2word[8];
static uint8_t xbuf[64];
PI_L1 static uint32_t l1dst[256];
PI_L1 static volatile uint32_t banks[512];
static volatile uint32_t core_cycles[16];
static volatile uint32_t core_hart[16];
static volatile uint32_t core_val[16];

static uint32_t arith(uint32_t x) {
  uint32_t acc = x;
  for (int i = 0; i < 8; i++) {
    acc = acc * 7u + (uint32_t)(((uint64_t)acc * 0x9E3779B9u) >> 32); /* mul, mulh, result used next */
    acc += acc / (uint32_t)(i + 3);                                  /* div */
    if (acc & 1) acc ^= 0x55u;                                        /* branches */
  }
  uint32_t n = 16, s = 0;
  __asm__ volatile(".option push\n.option norvc\n" PULP_LP_SETUP(0, %[n], 4)
                   "\n addi %[s], %[s], 1\n addi %[s], %[s], 2\n.option pop\n"
                   : [s] "+r"(s) : [n] "r"(n));                       /* a hardware loop */
  return acc + s;
}

static uint32_t fp(uint32_t x) {
  float f = (float)(x & 255) + 1.5f;
  for (int i = 0; i < 3; i++) f = f / 3.0f + __builtin_sqrtf(f);  /* fdiv.s, fsqrt.s */
  _Float16 h = (_Float16)f;
  h = h / (_Float16)1.25f;                                        /* fdiv.h */
  uint32_t acc = 0, a = 0x3c003c00u;
  for (int i = 0; i < 16; i++) acc = pulp_vfmac_h(acc, a, a);    /* FP16 SIMD, dependent chain */
  return (uint32_t)(int)f + (uint32_t)(int)h + acc;
}

static uint32_t memory(volatile uint32_t *base, int stride) {
  uint32_t s = 0;
  for (int i = 0; i < 8; i++) {
    uint32_t v = base[i * stride];
    s += v; /* load-use */
  }
  uint32_t m;
  __builtin_memcpy(&m, xbuf + 2, 4); /* possibly misaligned */
  return s + m + *(volatile uint32_t *)(xbuf + 5 - 5 + 2);
}

static void cluster_work(void *arg) {
  (void)arg;
  uint32_t id = pi_core_id();
  uint32_t t0 = pulp_mcycle();
  uint32_t x = arith(id) + fp(id);
  x += memory(&banks[id], 1) + memory(&banks[16 * id], 16) + memory(&banks[2 * id], 16);  /* bank patterns */
  x += memory(l2word, 0);                                                  /* L2 from the cluster */
  x += pulp_elw((uint32_t)&banks[id]);                                     /* p.elw on plain memory */
  /* divides on just-loaded operands, all cores at once: whether the divider is claimed before the
   * load-use stall (then the contention stall hides it) shows in the load-stall counter */
  pi_perf_conf(1u << PI_PERF_LD_STALL);
  pi_perf_reset();
  pi_perf_start();
  for (int i = 0; i < 4; i++) {
    uint32_t q;
    __asm__ volatile("lw %0, 0(%1)\n\tfdiv.s %0, %0, %2" : "=&r"(q) : "r"(&banks[id + i]), "r"(0x40400000u));
    x += q;
  }
  pi_perf_stop();
  x += pi_perf_read(PI_PERF_LD_STALL) << 8;
  pulp_wr(PULP_EU_DEMUX + PULP_EU_MASK_OR, 1u << 3);
  pulp_wr(PULP_EU_DEMUX + PULP_EU_SW_EVENT + 4 * 3, 1u << id);
  x += pulp_rd(PULP_EU_DEMUX + PULP_EU_EVENT_WAIT_CLEAR);                  /* an event-unit wait with lw */
  RUN_BLOCKS(l0b, x)
  RUN_BLOCKS(l1b, x)
  pi_cl_team_barrier();
  if (id == 0) {
    /* the cluster timer through the cluster's own alias, from the cluster peripheral bus */
    x += REG(PULP_CLUSTER_TIMER + PULP_SOC_TIMER_LO - PULP_L1_BASE) & 0;
    x += REG(PULP_CLUSTER_PERIPH + PULP_CLUSTER_PERIPH_SIZE - 4);          /* the quiet rest of it */
    x += REG(PULP_L1_BASE + TAS_OFFSET + (uint32_t)&banks[40] - PULP_L1_BASE);   /* test-and-set */
    x += REG(PULP_L1_BASE + PULP_L1_SIZE - 4);                             /* the end of L1 */
    x += REG(PULP_SOC_CTRL) & 0;                                           /* the APB from the cluster */
    pi_cl_dma_cmd_t c1, c2;
    pi_cl_dma_cmd((uint32_t)l2src, (uint32_t)l1dst, sizeof l2src, PI_CL_DMA_DIR_EXT2LOC, &c1);
    pi_cl_dma_cmd_wait(&c1);
    pi_cl_dma_cmd_2d((uint32_t)l2src, (uint32_t)l1dst, 512, 64, 16, PI_CL_DMA_DIR_LOC2EXT, &c2);
    pi_cl_dma_cmd_wait(&c2);
    REG(PULP_CLUSTER_ICACHE_CTRL + PULP_SOC_ICACHE_ENABLE) = 0;           /* fetch with the icache off */
    RUN_BLOCKS(l0b, x)
    REG(PULP_CLUSTER_ICACHE_CTRL + PULP_SOC_ICACHE_ENABLE) = 0xFFFFFFFFu;
  }
  pi_cl_team_barrier();
  core_cycles[id] = pulp_mcycle() - t0;
  core_hart[id] = pulp_hartid();
  core_val[id] = x;
}

static void cluster_entry(void *arg) { pi_cl_team_fork(0, cluster_work, arg); }

#define TOUCH(name) s += REG(PULP_##name) + REG(PULP_##name + PULP_##name##_SIZE - 4);

int main(void) {
  uint32_t t0 = pulp_mcycle();
  uint32_t s = arith(7) + fp(7) + memory(l2word, 1);
  RUN_BLOCKS(fcb, s)                                               /* icache off */
  REG(PULP_FC_ICACHE_CTRL + PULP_SOC_ICACHE_ENABLE) = 0xFFFFFFFFu;
  RUN_BLOCKS(fcb, s)                                               /* icache on */
  s += REG(FC_ALIAS_END - 4);                                      /* the FC's view of L2 at 0 */
  s += REG(PULP_L2_BASE + PULP_L2_SIZE - 4) & 0;                  /* the end of L2 */
  s += REG(PULP_L1_BASE + 64);                                     /* L1 from the FC */
  QUIET_WINDOWS(TOUCH)
  s += REG(PULP_FC_TIMER + PULP_SOC_TIMER_LO) & 0;
  uint32_t tid = REG(PULP_DMA + PULP_MCHAN_CMD);                  /* the shared DMA channel: allocate, */
  s += REG(PULP_DMA + PULP_MCHAN_STATUS);                          /* see it allocated, */
  REG(PULP_DMA + PULP_MCHAN_STATUS) = 1u << tid;                   /* free it */
  for (int i = 0; i < 256; i++) l2src[i] = i * 2654435761u;
  struct pi_device ram, flash;
  struct pi_hyperram_conf rc;
  struct pi_hyperflash_conf fcf;
  pi_hyperram_conf_init(&rc);
  pi_open_from_conf(&ram, &rc);
  pi_ram_open(&ram);
  pi_ram_write(&ram, PULP_HYPERRAM_SIZE - 1024, l2src, 1024);      /* the end of HyperRAM */
  pi_ram_read(&ram, PULP_HYPERRAM_SIZE - 1024, l2src, 512);
  /* let the end of a read reach the FC (SoC event unit mask), then take it from the ITC's FIFO */
  REG(PULP_SOC_EU + PULP_SOC_EU_FC_MASK + 4 * (PULP_HYPER_EOT_RX_EVENT / 32)) &= ~(1u << (PULP_HYPER_EOT_RX_EVENT % 32));
  pi_ram_read(&ram, PULP_HYPERRAM_SIZE - 1024, l2src, 64);
  s += REG(PULP_FC_ITC + PULP_ITC_STATUS) + REG(PULP_FC_ITC + PULP_ITC_FIFO) + REG(PULP_FC_ITC + PULP_ITC_FIFO);
  pi_hyperflash_conf_init(&fcf);
  pi_open_from_conf(&flash, &fcf);
  pi_flash_open(&flash);
  pi_flash_program(&flash, PULP_FLASH_SIZE - 512, l2src, 512);     /* the end of flash */
  pi_flash_read(&flash, PULP_FLASH_SIZE - 512, l2src, 256);
  struct pi_device cl;
  struct pi_cluster_conf cc;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&cc);
  pi_open_from_conf(&cl, &cc);
  pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, cluster_entry, 0));
  printf("fc hart %x cycles %u sum %x\n", (unsigned)pulp_hartid(), (unsigned)(pulp_mcycle() - t0), (unsigned)s);
  for (int i = 0; i < PULP_CLUSTER_CORES; i++)
    printf("core %d hart %x cycles %u val %x\n", i, (unsigned)core_hart[i], (unsigned)core_cycles[i],
           (unsigned)core_val[i]);
  return 0;
}
