/* Simulator speed benchmark: a long single-core loop of integer and FP (FP32 and FP16) work. */
#include <pmsis.h>

#ifndef ITERS
#define ITERS 2000000
#endif

static volatile int seed = 12345;

int main(void) {
  uint32_t x = (uint32_t)seed, acc = 0;
  float f = 1.0f, g = 0.0f;
  _Float16 h = (_Float16)0.5, hacc = 0;
  for (int i = 0; i < ITERS; i++) {
    x = x * 1664525u + 1013904223u;
    acc += (x >> 7) ^ (acc << 3);
    if (x & 0x100) acc -= i;
    g = g * 0.999f + f * (float)(x & 0xff);
    hacc = hacc * (_Float16)0.5 + h;
  }
  printf("acc %x g %d h %d\n", acc, (int)g, (int)(hacc * 100));
  return 0;
}
