/* compressed_algos.c - small integer algorithms built with -Os by tests/test_isa_semantics.py, so
 * that most of the executed code is RV32C. The test recomputes every printed value in Python. */
#include "tharness.h"

static uint32_t lcg_state;
static uint32_t lcg(void) {
  lcg_state = lcg_state * 1103515245u + 12345u;
  return lcg_state;
}

static uint32_t vals[64];
static uint8_t data[200];

static uint32_t crc32(const uint8_t *p, int n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (int i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1));
  }
  return ~crc;
}

static void isort(int32_t *a, int n) {
  for (int i = 1; i < n; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

static __attribute__((noinline)) uint32_t sw(uint32_t v) {
  switch (v % 7) {
    case 0: return v + 1;
    case 1: return v ^ 0x55;
    case 2: return v >> 3;
    case 3: return v * 3;
    case 4: return (uint32_t)((int32_t)v >> 5);
    case 5: return ~v;
    default: return v & 0xFF;
  }
}

int main(void) {
  uint32_t out[16];
  lcg_state = 1;
  for (int i = 0; i < 64; i++) vals[i] = lcg();
  lcg_state = 7;
  for (int i = 0; i < 200; i++) data[i] = (uint8_t)(lcg() >> 16);

  out[0] = crc32(data, 200);
  th_arr("crc", out, 1);

  int32_t s[64];
  for (int i = 0; i < 64; i++) s[i] = (int32_t)vals[i];
  isort(s, 64);
  for (int i = 0; i < 8; i++) {
    out[i] = (uint32_t)s[i];
    out[8 + i] = (uint32_t)s[56 + i];
  }
  th_arr("sorted", out, 16);

  uint32_t hist[8] = {0};
  for (int i = 0; i < 200; i++) hist[data[i] & 7]++;
  th_arr("hist", hist, 8);

  uint32_t a = 0, b = 1;
  for (int i = 0; i < 45; i++) {
    uint32_t t = a + b;
    a = b;
    b = t;
  }
  out[0] = a;
  th_arr("fib", out, 1);

  for (int i = 0; i < 16; i++) out[i] = sw(vals[i]);
  th_arr("switch", out, 16);

  for (int i = 0; i < 16; i++) out[i] = (uint32_t)((int32_t)vals[i] / 7);
  th_arr("div7", out, 16);
  return 0;
}
