/* Simulator speed benchmark, 8 cores: every cluster core runs the integer + FP loop of sim_loop.c. */
#include <pmsis.h>

#ifndef ITERS
#define ITERS 300000
#endif

static PI_L1 volatile uint32_t out[16];

static void loop(void *arg) {
  (void)arg;
  uint32_t x = 12345u + pi_core_id(), acc = 0;
  float f = 1.0f, g = 0.0f;
  _Float16 h = (_Float16)0.5, hacc = 0;
  for (int i = 0; i < ITERS; i++) {
    x = x * 1664525u + 1013904223u;
    acc += (x >> 7) ^ (acc << 3);
    if (x & 0x100) acc -= i;
    g = g * 0.999f + f * (float)(x & 0xff);
    hacc = hacc * (_Float16)0.5 + h;
  }
  out[pi_core_id()] = acc + (uint32_t)g + (uint32_t)(int)hacc;
}

static void entry(void *arg) { (void)arg; pi_cl_team_fork(0, loop, 0); }

int main(void) {
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, entry, 0));
  printf("out %x\n", out[0] ^ out[7]);
  return 0;
}
