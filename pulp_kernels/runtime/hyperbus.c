/* HyperRAM and HyperFlash through the uDMA hyper channel (register sequence of the PULP SDK's
 * hyperbus v3 driver). The FC programs a transaction, then polls its STATUS busy bit. */
#include "pmsis.h"

#define UDMA_CG (PULP_UDMA + PULP_HYPER_UDMA_CG)
#define HYPER (PULP_UDMA + PULP_HYPER_PERIPH_STRIDE * (PULP_HYPER_PERIPH_ID + 1))
#define HCOM (HYPER + PULP_HYPER_COMMON)

static uint32_t ram_next;  /* bump allocator over the external address space, with reuse of the last free */

void pi_hyperram_conf_init(struct pi_hyperram_conf *conf) {
  conf->id = 0;
  conf->ram_size = PULP_HYPERRAM_SIZE;
}
void pi_hyperflash_conf_init(struct pi_hyperflash_conf *conf) { conf->id = 0; }

static void hyper_setup(uint32_t mem) {
  pulp_wr(UDMA_CG, pulp_rd(UDMA_CG) | (1u << PULP_HYPER_PERIPH_ID));
  /* the PULP SDK driver's settings for each memory */
  pulp_wr(HCOM + PULP_HYPER_EN_LATENCY_ADD, mem ? 0 : 1);
  pulp_wr(HCOM + PULP_HYPER_T_LATENCY_ACCESS, mem ? 0xF : 6);
  pulp_wr(HCOM + PULP_HYPER_PAGE_BOUND, mem ? 4 : 3);
  pulp_wr(HCOM + PULP_HYPER_T_CS_MAX, 0xFFFFFFFFu);
}

int32_t pi_ram_open(struct pi_device *device) {
  (void)device;
  hyper_setup(0);
  return 0;
}
void pi_ram_close(struct pi_device *device) { (void)device; }

int32_t pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size) {
  (void)device;
  size = (size + 7) & ~7u;
  if (ram_next + size > PULP_HYPERRAM_SIZE) return -1;
  *addr = ram_next;
  ram_next += size;
  return 0;
}
int32_t pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size) {
  (void)device;
  size = (size + 7) & ~7u;
  if (addr + size == ram_next) ram_next = addr;
  return 0;
}

static int32_t hyper_start(uint32_t mem, int write, uint32_t ext, void *l2, uint32_t size) {
  pulp_wr(HCOM + PULP_HYPER_MEM_SEL, mem);
  uint32_t tid;
  while ((tid = pulp_rd(HCOM + PULP_HYPER_TID_ALLOC)) >= PULP_HYPER_CHANNELS) {
  }
  uint32_t ch = HYPER + PULP_HYPER_CHANNEL_STRIDE * tid;
  pulp_wr(ch + PULP_HYPER_CA_SETUP, write ? 0x1 : 0x5);
  pulp_wr(ch + PULP_HYPER_HYPER_ADDR, ext);
  if (write) {
    pulp_wr(ch + PULP_HYPER_TX_SADDR, (uint32_t)l2);
    pulp_wr(ch + PULP_HYPER_TX_SIZE, size);
    pulp_wr(ch + PULP_HYPER_TX_CFG, PULP_HYPER_CFG_EN);
  } else {
    pulp_wr(ch + PULP_HYPER_RX_SADDR, (uint32_t)l2);
    pulp_wr(ch + PULP_HYPER_RX_SIZE, size);
    pulp_wr(ch + PULP_HYPER_RX_CFG, PULP_HYPER_CFG_EN);
  }
  return (int32_t)tid;
}

static void hyper_wait(int32_t tid) {
  uint32_t st = HYPER + PULP_HYPER_CHANNEL_STRIDE * (uint32_t)tid + PULP_HYPER_STATUS;
  while (pulp_rd(st) & 1) {
  }
}

pi_task_t *pi_task_block(pi_task_t *task) {
  task->id = -1;
  task->done = 0;
  return task;
}
void pi_task_wait_on(pi_task_t *task) {
  if (task->id >= 0) hyper_wait(task->id);
  task->id = -1;
  task->done = 1;
}

void pi_ram_read(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size) {
  (void)device;
  hyper_wait(hyper_start(0, 0, ram_addr, data, size));
}
void pi_ram_write(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size) {
  (void)device;
  hyper_wait(hyper_start(0, 1, ram_addr, data, size));
}
void pi_ram_read_async(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size, pi_task_t *task) {
  (void)device;
  task->done = 0;
  task->id = hyper_start(0, 0, ram_addr, data, size);
}
void pi_ram_write_async(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size, pi_task_t *task) {
  (void)device;
  task->done = 0;
  task->id = hyper_start(0, 1, ram_addr, data, size);
}

int32_t pi_flash_open(struct pi_device *device) {
  (void)device;
  hyper_setup(1);
  return 0;
}
void pi_flash_close(struct pi_device *device) { (void)device; }
void pi_flash_read(struct pi_device *device, uint32_t flash_addr, void *data, uint32_t size) {
  (void)device;
  hyper_wait(hyper_start(1, 0, flash_addr, data, size));
}
void pi_flash_read_async(struct pi_device *device, uint32_t flash_addr, void *data, uint32_t size, pi_task_t *task) {
  (void)device;
  task->done = 0;
  task->id = hyper_start(1, 0, flash_addr, data, size);
}
void pi_flash_program(struct pi_device *device, uint32_t flash_addr, const void *data, uint32_t size) {
  (void)device;
  hyper_wait(hyper_start(1, 1, flash_addr, (void *)data, size));
}
