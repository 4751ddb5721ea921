/* pmsis.h: the PMSIS subset that pulp-odl programs use, with PULP SDK names and signatures so the
 * same C builds against the PULP SDK. Addresses come from the generated pulp_platform.h. */
#ifndef PULP_ODL_PMSIS_H
#define PULP_ODL_PMSIS_H

#include <stddef.h>
#include <stdint.h>

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
static inline uint32_t pi_core_id(void) { return pulp_hartid() & 0x1f; }
static inline uint32_t pi_cluster_id(void) { return (pulp_hartid() >> 5) & 0x3f; }
static inline int pi_is_fc(void) { return pi_cluster_id() == PULP_FC_CLUSTER_ID; }

/* ---- performance counters (PCER 0xCC0, PCMR 0xCC1, PCCR 0x780 + n) ---- */
typedef enum {
  PI_PERF_CYCLES = 17,       /* elapsed cycles (mcycle), also while the core sleeps */
  PI_PERF_ACTIVE_CYCLES = 0, /* cycles of executed instructions, stalls included */
  PI_PERF_INSTR = 1,
  PI_PERF_LD_STALL = 2,
  PI_PERF_JR_STALL = 3,
  PI_PERF_IMISS = 4,
  PI_PERF_LD = 5,
  PI_PERF_ST = 6,
  PI_PERF_JUMP = 7,
  PI_PERF_BRANCH = 8,
  PI_PERF_BTAKEN = 9,
  PI_PERF_RVC = 10,
  PI_PERF_LD_EXT = 12,
  PI_PERF_ST_EXT = 13,
  PI_PERF_LD_EXT_CYC = 14,
  PI_PERF_ST_EXT_CYC = 15,
  PI_PERF_TCDM_CONT = 16,
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

static inline void pi_perf_conf(unsigned int events) {
  __asm__ volatile("csrw 0xCC0, %0" ::"r"(events & ~(1u << PI_PERF_CYCLES)));
}
static inline void pi_perf_reset(void) {
  uint32_t s = pulp_perf_slot();
  __asm__ volatile("csrw 0x79F, zero");
  __pulp_perf_cycles_acc[s] = 0;
  __pulp_perf_cycles_start[s] = pulp_mcycle();
}
static inline void pi_perf_start(void) {
  uint32_t s = pulp_perf_slot();
  __pulp_perf_cycles_start[s] = pulp_mcycle();
  __pulp_perf_running[s] = 1;
  __asm__ volatile("csrwi 0xCC1, 1");
}
static inline void pi_perf_stop(void) {
  __asm__ volatile("csrwi 0xCC1, 0");
  uint32_t s = pulp_perf_slot();
  if (__pulp_perf_running[s]) __pulp_perf_cycles_acc[s] += pulp_mcycle() - __pulp_perf_cycles_start[s];
  __pulp_perf_running[s] = 0;
}
unsigned int pi_perf_read(int id);

#ifdef __cplusplus
}
#endif
#endif
