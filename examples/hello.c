/* A first program: integer, FP32 and FP16 arithmetic, printf, perf counters, and an exit code. */
#include <pmsis.h>

static volatile float xs[4] = {1.5f, -2.25f, 3.0f, 0.125f};
static volatile _Float16 hs[4] = {0.5, 1.25, -3.0, 2.0};

int main(void) {
  pi_perf_conf((1 << PI_PERF_CYCLES) | (1 << PI_PERF_INSTR));
  pi_perf_reset();
  pi_perf_start();

  int isum = 0;
  for (int i = 1; i <= 100; i++) isum += i * i;

  float fdot = 0.0f;
  _Float16 hdot = 0;
  for (int i = 0; i < 4; i++) {
    fdot += xs[i] * xs[i];
    hdot += hs[i] * hs[i];
  }
  float root = __builtin_sqrtf(fdot);

  pi_perf_stop();
  printf("sum of squares 1..100 = %d\n", isum);
  printf("fp32 dot = %d/1000, sqrt = %d/1000\n", (int)(fdot * 1000), (int)(root * 1000));
  printf("fp16 dot = %d/1000\n", (int)((float)hdot * 1000));
  printf("measured %u cycles, %u instructions\n", pi_perf_read(PI_PERF_CYCLES), pi_perf_read(PI_PERF_INSTR));
  return isum == 338350 ? 7 : 1; /* 7: a non-zero exit code on purpose */
}
