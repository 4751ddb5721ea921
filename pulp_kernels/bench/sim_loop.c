/* Simulator speed benchmark: a long single-core loop of integer and FP (FP32 and FP16) work. */
#include <pmsis.h>

#include "sim_loop_work.h"

#ifndef ITERS
#define ITERS 2000000
#endif

static volatile int seed = 12345;

int main(void) {
  struct sim_loop_result r = sim_loop_work((uint32_t)seed, ITERS);
  printf("acc %x g %d h %d\n", r.acc, (int)r.g, (int)(r.hacc * 100));
  return 0;
}
