/* pi_perf_read: PCCR n is CSR 0x780 + n, which must be an immediate, hence the switch. */
#include "pmsis.h"

uint32_t __pulp_perf_cycles_start[PULP_PERF_MAX_CORES];
uint32_t __pulp_perf_cycles_acc[PULP_PERF_MAX_CORES];
uint8_t __pulp_perf_running[PULP_PERF_MAX_CORES];

#define PCCR(n)                                     \
  case n: {                                         \
    uint32_t v;                                     \
    __asm__ volatile("csrr %0, 0x780 + " #n : "=r"(v)); \
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
    PCCR(0) PCCR(1) PCCR(2) PCCR(3) PCCR(4) PCCR(5) PCCR(6) PCCR(7) PCCR(8) PCCR(9) PCCR(10) PCCR(11)
    PCCR(12) PCCR(13) PCCR(14) PCCR(15) PCCR(16) PCCR(17) PCCR(18) PCCR(29)
    default: return 0;
  }
}
