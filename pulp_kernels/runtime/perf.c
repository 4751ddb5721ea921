/* pi_perf_read: counter n is CSR PULP_CSR_PCCR0 + n, which must be an immediate, hence the switch
 * over every counter index of pulp_isa.h. */
#include "pmsis.h"

uint32_t __pulp_perf_cycles_start[PULP_PERF_MAX_CORES];
uint32_t __pulp_perf_cycles_acc[PULP_PERF_MAX_CORES];
uint8_t __pulp_perf_running[PULP_PERF_MAX_CORES];

#define PCCR(n)                                     \
  case n: {                                         \
    uint32_t v;                                     \
    __asm__ volatile("csrr %0, " PULP_STR(PULP_CSR_PCCR0) " + " #n : "=r"(v)); \
    return v;                                       \
  }

unsigned int pi_perf_read(int id) {
  if (id == PI_PERF_CYCLES) {
    uint32_t s = pulp_perf_slot();
    uint32_t v = __pulp_perf_cycles_acc[s];
    if (__pulp_perf_running[s]) v += pulp_mcycle() - __pulp_perf_cycles_start[s];
    return v;
  }
  switch (id) {
    PULP_PERF_COUNTERS(PCCR)
    default: return 0;
  }
}
