/* The integer + FP (FP32 and FP16) work loop that both simulator speed benchmarks run, so that the
 * single-core and 8-core figures measure the same instruction mix. */
#ifndef SIM_LOOP_WORK_H
#define SIM_LOOP_WORK_H
#include <stdint.h>

struct sim_loop_result {
  uint32_t acc;
  float g;
  _Float16 hacc;
};

static inline struct sim_loop_result sim_loop_work(uint32_t x, int iters) {
  uint32_t acc = 0;
  float f = 1.0f, g = 0.0f;
  _Float16 h = (_Float16)0.5, hacc = 0;
  for (int i = 0; i < iters; i++) {
    x = x * 1664525u + 1013904223u;
    acc += (x >> 7) ^ (acc << 3);
    if (x & 0x100) acc -= i;
    g = g * 0.999f + f * (float)(x & 0xff);
    hacc = hacc * (_Float16)0.5 + h;
  }
  return (struct sim_loop_result){acc, g, hacc};
}
#endif
