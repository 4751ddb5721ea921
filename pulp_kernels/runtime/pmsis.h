/* pmsis.h: the PMSIS subset that pulp-odl programs use, with PULP SDK names and signatures so the
 * same C builds against the PULP SDK. Every hardware number comes from the generated headers:
 * addresses and device registers from pulp_platform.h, instructions, CSRs and counters from pulp_isa.h. */
#ifndef PULP_ODL_PMSIS_H
#define PULP_ODL_PMSIS_H

#include <stddef.h>
#include <stdint.h>

#include "pulp_isa.h"
#include "pulp_platform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- C library subset ---- */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int putchar(int c);
int puts(const char *s);
void exit(int status) __attribute__((noreturn));
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

/* ---- identity ---- */
static inline uint32_t pulp_hartid(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, mhartid" : "=r"(v));
  return v;
}
static inline uint32_t pi_core_id(void) { return pulp_hartid() & ((1u << PULP_SOC_HARTID_CORE_BITS) - 1); }
static inline uint32_t pi_cluster_id(void) {
  return (pulp_hartid() >> PULP_SOC_HARTID_CORE_BITS) & ((1u << PULP_SOC_HARTID_CLUSTER_BITS) - 1);
}
static inline int pi_is_fc(void) { return pi_cluster_id() == PULP_FC_CLUSTER_ID; }

/* ---- performance counters (PCER, PCMR, PCCR n: pulp_isa.h) ---- */
typedef enum {
  /* elapsed cycles (mcycle), also while the core sleeps: PMSIS's own number, which pi_perf_read
   * answers from mcycle (no hardware counter) */
  PI_PERF_CYCLES = 17,
  PI_PERF_ACTIVE_CYCLES = PULP_PERF_CYCLES, /* cycles of executed instructions, stalls included */
  PI_PERF_INSTR = PULP_PERF_INSTR,
  PI_PERF_LD_STALL = PULP_PERF_LD_STALL,
  PI_PERF_JR_STALL = PULP_PERF_JR_STALL,
  PI_PERF_IMISS = PULP_PERF_IMISS,
  PI_PERF_LD = PULP_PERF_LD,
  PI_PERF_ST = PULP_PERF_ST,
  PI_PERF_JUMP = PULP_PERF_JUMP,
  PI_PERF_BRANCH = PULP_PERF_BRANCH,
  PI_PERF_BTAKEN = PULP_PERF_BTAKEN,
  PI_PERF_RVC = PULP_PERF_RVC,
  PI_PERF_LD_EXT = PULP_PERF_CLUSTER_LD_EXT,
  PI_PERF_ST_EXT = PULP_PERF_CLUSTER_ST_EXT,
  PI_PERF_LD_EXT_CYC = PULP_PERF_CLUSTER_LD_EXT_CYC,
  PI_PERF_ST_EXT_CYC = PULP_PERF_CLUSTER_ST_EXT_CYC,
  PI_PERF_TCDM_CONT = PULP_PERF_CLUSTER_TCDM_CONT,
} pi_perf_event_e;

#define PULP_PERF_MAX_CORES 32
extern uint32_t __pulp_perf_cycles_start[PULP_PERF_MAX_CORES];
extern uint32_t __pulp_perf_cycles_acc[PULP_PERF_MAX_CORES];
extern uint8_t __pulp_perf_running[PULP_PERF_MAX_CORES];

static inline uint32_t pulp_perf_slot(void) { return pi_is_fc() ? PULP_PERF_MAX_CORES - 1 : pi_core_id(); }
static inline uint32_t pulp_mcycle(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, mcycle" : "=r"(v));
  return v;
}
/* The same count through the user-level `cycle` CSR, with the same timing. The embedded simulator
 * takes these reads as marks of the section whose energy a program measures: they open and close
 * windows in turn, and the events of every closed window add up (`pulp-odl run --json`,
 * "energy_window"). Other code reads mcycle, so that it never moves a window. */
static inline uint32_t pulp_energy_mark(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, cycle" : "=r"(v));
  return v;
}

static inline void pi_perf_conf(unsigned int events) {
  __asm__ volatile("csrw " PULP_STR(PULP_CSR_PCER) ", %0" ::"r"(events & ~(1u << PI_PERF_CYCLES)));
}
static inline void pi_perf_reset(void) {
  uint32_t s = pulp_perf_slot();
  __asm__ volatile("csrw " PULP_STR(PULP_CSR_PCCR_ALL) ", zero");
  __pulp_perf_cycles_acc[s] = 0;
  __pulp_perf_cycles_start[s] = pulp_mcycle();
}
static inline void pi_perf_start(void) {
  uint32_t s = pulp_perf_slot();
  __pulp_perf_cycles_start[s] = pulp_mcycle();
  __pulp_perf_running[s] = 1;
  __asm__ volatile("csrwi " PULP_STR(PULP_CSR_PCMR) ", 1");
}
static inline void pi_perf_stop(void) {
  __asm__ volatile("csrwi " PULP_STR(PULP_CSR_PCMR) ", 0");
  uint32_t s = pulp_perf_slot();
  if (__pulp_perf_running[s]) __pulp_perf_cycles_acc[s] += pulp_mcycle() - __pulp_perf_cycles_start[s];
  __pulp_perf_running[s] = 0;
}
unsigned int pi_perf_read(int id);

/* ---- devices and tasks ---- */
struct pi_device {
  void *config;
  void *data;
};
typedef struct pi_task {
  volatile int32_t id;   /* uDMA transaction id while in flight, -1 when done */
  volatile int32_t done;
} pi_task_t;
void pi_open_from_conf(struct pi_device *device, void *conf);
pi_task_t *pi_task_block(pi_task_t *task);
void pi_task_wait_on(pi_task_t *task);

/* ---- memory allocators (first fit over the linker's heap regions) ---- */
void *pi_l2_malloc(uint32_t size);
void pi_l2_free(void *chunk, uint32_t size);
void *pi_l1_malloc(struct pi_device *device, uint32_t size);
void pi_l1_free(struct pi_device *device, void *chunk, uint32_t size);
#define PI_L1 __attribute__((section(".l1")))
#define PI_L1_DATA __attribute__((section(".l1_data")))
#define PI_L2 __attribute__((section(".l2_data")))

/* ---- cluster ---- */
struct pi_cluster_conf {
  int id;
};
struct pi_cluster_task {
  void (*entry)(void *arg);
  void *arg;
  void *stacks;
  uint32_t stack_size;
  uint32_t slave_stack_size;
  int nb_cores;
};
void pi_cluster_conf_init(struct pi_cluster_conf *conf);
int pi_cluster_open(struct pi_device *device);
int pi_cluster_close(struct pi_device *device);
struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *), void *arg);
int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task);
#define pi_cluster_send_task pi_cluster_send_task_to_cl
static inline int pi_cl_cluster_nb_cores(void) { return PULP_CLUSTER_CORES; }
void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg);
static inline int pi_cl_team_nb_cores(void);

/* event unit, per-core view (cluster cores): PULP_EU_DEMUX */
static inline uint32_t pulp_elw(uint32_t addr) {
  uint32_t v;
  __asm__ volatile(PULP_P_ELW(%0, %1, 0) : "=r"(v) : "r"(addr) : "memory");
  return v;
}
static inline void pulp_wr(uint32_t addr, uint32_t v) { *(volatile uint32_t *)addr = v; }
static inline uint32_t pulp_rd(uint32_t addr) { return *(volatile uint32_t *)addr; }
/* wait for (and clear) the events of `mask`, as eu_evt_maskWaitAndClr */
static inline uint32_t pulp_evt_wait_clear(uint32_t mask) {
  pulp_wr(PULP_EU_DEMUX + PULP_EU_MASK_OR, mask);
  uint32_t v = pulp_elw(PULP_EU_DEMUX + PULP_EU_EVENT_WAIT_CLEAR);
  pulp_wr(PULP_EU_DEMUX + PULP_EU_MASK_AND, mask);
  return v;
}
extern volatile uint32_t __pulp_team_cores;
static inline int pi_cl_team_nb_cores(void) { return (int)__pulp_team_cores; }
static inline void pi_cl_team_barrier(void) {
  (void)pulp_elw(PULP_EU_DEMUX + PULP_EU_BARRIER + PULP_EU_BAR_TRIGGER_WAIT_CLEAR);
}
static inline void pi_cl_team_critical_enter(void) { (void)pulp_elw(PULP_EU_DEMUX + PULP_EU_MUTEX); }
static inline void pi_cl_team_critical_exit(void) { pulp_wr(PULP_EU_DEMUX + PULP_EU_MUTEX, 0); }

/* ---- cluster DMA (MCHAN, per-core channel PULP_DMA_DEMUX) ---- */
typedef enum { PI_CL_DMA_DIR_LOC2EXT = 0, PI_CL_DMA_DIR_EXT2LOC = 1 } pi_cl_dma_dir_e;
typedef struct pi_cl_dma_cmd_s {
  int id;
} pi_cl_dma_cmd_t;
#define PULP_DMA_CMD (PULP_DMA_DEMUX + PULP_MCHAN_CMD)
#define PULP_DMA_STATUS (PULP_DMA_DEMUX + PULP_MCHAN_STATUS)
/* A size wider than the command word's length field would spill into the flags, so
 * pi_cl_dma_cmd refuses it. */
void __pulp_cl_dma_size_error(uint32_t size) __attribute__((noreturn));
/* The commands without the size check, for callers that split transfers themselves (odl_kernels.h). */
static inline void pulp_cl_dma_push(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                                    pi_cl_dma_cmd_t *cmd) {
  uint32_t tid = pulp_rd(PULP_DMA_CMD);
  pulp_wr(PULP_DMA_CMD, size | ((uint32_t)dir << PULP_MCHAN_DIR_BIT) | (1u << PULP_MCHAN_INC_BIT) |
                            (1u << PULP_MCHAN_EVENT_BIT));
  pulp_wr(PULP_DMA_CMD, loc);
  pulp_wr(PULP_DMA_CMD, ext);
  cmd->id = (int)tid;
}
static inline void pulp_cl_dma_push_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                                       pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd) {
  uint32_t tid = pulp_rd(PULP_DMA_CMD);
  pulp_wr(PULP_DMA_CMD, size | ((uint32_t)dir << PULP_MCHAN_DIR_BIT) | (1u << PULP_MCHAN_INC_BIT) |
                            (1u << PULP_MCHAN_TWOD_BIT) | (1u << PULP_MCHAN_EVENT_BIT));
  pulp_wr(PULP_DMA_CMD, loc);
  pulp_wr(PULP_DMA_CMD, ext);
  pulp_wr(PULP_DMA_CMD, length);
  pulp_wr(PULP_DMA_CMD, stride);
  cmd->id = (int)tid;
}
static inline void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                                 pi_cl_dma_cmd_t *cmd) {
  if (size >> PULP_MCHAN_LEN_BITS) __pulp_cl_dma_size_error(size);
  pulp_cl_dma_push(ext, loc, size, dir, cmd);
}
/* 2-D: `length` bytes per external row, rows `stride` bytes apart; the L1 side is contiguous */
static inline void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                                    pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd) {
  if (size >> PULP_MCHAN_LEN_BITS) __pulp_cl_dma_size_error(size);
  pulp_cl_dma_push_2d(ext, loc, size, stride, length, dir, cmd);
}
static inline void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd) {
  uint32_t bit = 1u << cmd->id;
  while (pulp_rd(PULP_DMA_STATUS) & bit) pulp_evt_wait_clear(1u << PULP_EU_EVT_DMA);
  pulp_wr(PULP_DMA_STATUS, bit);
}
static inline void pi_cl_dma_flush(void) {
  while (pulp_rd(PULP_DMA_STATUS) & ((1u << PULP_MCHAN_COUNTERS) - 1)) pulp_evt_wait_clear(1u << PULP_EU_EVT_DMA);
}

/* ---- HyperRAM and flash through the peripheral DMA (uDMA hyper channel) ---- */
struct pi_hyperram_conf {
  int id;
  uint32_t ram_size;
};
struct pi_hyperflash_conf {
  int id;
};
void pi_hyperram_conf_init(struct pi_hyperram_conf *conf);
void pi_hyperflash_conf_init(struct pi_hyperflash_conf *conf);
int32_t pi_ram_open(struct pi_device *device);
void pi_ram_close(struct pi_device *device);
int32_t pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size);
int32_t pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size);
void pi_ram_read(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size);
void pi_ram_write(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size);
void pi_ram_read_async(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size, pi_task_t *task);
void pi_ram_write_async(struct pi_device *device, uint32_t ram_addr, void *data, uint32_t size, pi_task_t *task);
int32_t pi_flash_open(struct pi_device *device);
void pi_flash_close(struct pi_device *device);
void pi_flash_read(struct pi_device *device, uint32_t flash_addr, void *data, uint32_t size);
void pi_flash_read_async(struct pi_device *device, uint32_t flash_addr, void *data, uint32_t size, pi_task_t *task);
/* Writes flash contents through the same channel (the simulated flash accepts plain writes). */
void pi_flash_program(struct pi_device *device, uint32_t flash_addr, const void *data, uint32_t size);

#ifdef __cplusplus
}
#endif
#endif
