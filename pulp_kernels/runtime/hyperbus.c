/* HyperRAM and HyperFlash through the uDMA hyper channel (register sequence of the PULP SDK's
 * hyperbus v3 driver). The FC programs a transaction, then polls its STATUS busy bit. */
#include "pmsis.h"

#define UDMA_CG 0x1A102000u
#define HYPER (0x1A102000u + 0x80u + (8u << 7))
#define HCOM (HYPER + 0x400u)
#define H_MEM_SEL 0x20u
#define H_TID_ALLOC 0x24u
#define T_RX_SADDR 0x00u
#define T_RX_SIZE 0x04u
#define T_RX_CFG 0x08u
#define T_TX_SADDR 0x0Cu
#define T_TX_SIZE 0x10u
#define T_TX_CFG 0x14u
#define T_CA_SETUP 0x18u
#define T_HYPER_ADDR 0x1Cu
#define T_STATUS 0x24u
#define CFG_EN 0x10u

static uint32_t ram_next;  /* bump allocator over the external address space, with reuse of the last free */

void pi_hyperram_conf_init(struct pi_hyperram_conf *conf) {
  conf->id = 0;
  conf->ram_size = PULP_HYPERRAM_SIZE;
}
void pi_hyperflash_conf_init(struct pi_hyperflash_conf *conf) { conf->id = 0; }

static void hyper_setup(uint32_t mem) {
  pulp_wr(UDMA_CG, pulp_rd(UDMA_CG) | (1u << 8));
  pulp_wr(HCOM + 0x08, mem ? 0 : 1);          /* EN_LATENCY_ADD */
  pulp_wr(HCOM + 0x04, mem ? 0xF : 6);        /* T_LATENCY_ACCESS */
  pulp_wr(HCOM + 0x00, mem ? 4 : 3);          /* PAGE_BOUND */
  pulp_wr(HCOM + 0x0C, 0xFFFFFFFFu);          /* T_CS_MAX */
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
  pulp_wr(HCOM + H_MEM_SEL, mem);
  uint32_t tid;
  while ((tid = pulp_rd(HCOM + H_TID_ALLOC)) >= 8) {
  }
  uint32_t ch = HYPER + 0x80u * tid;
  pulp_wr(ch + T_CA_SETUP, write ? 0x1 : 0x5);
  pulp_wr(ch + T_HYPER_ADDR, ext);
  if (write) {
    pulp_wr(ch + T_TX_SADDR, (uint32_t)l2);
    pulp_wr(ch + T_TX_SIZE, size);
    pulp_wr(ch + T_TX_CFG, CFG_EN);
  } else {
    pulp_wr(ch + T_RX_SADDR, (uint32_t)l2);
    pulp_wr(ch + T_RX_SIZE, size);
    pulp_wr(ch + T_RX_CFG, CFG_EN);
  }
  return (int32_t)tid;
}

static void hyper_wait(int32_t tid) {
  uint32_t st = HYPER + 0x80u * (uint32_t)tid + T_STATUS;
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
