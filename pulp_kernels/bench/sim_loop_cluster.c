/* Simulator speed benchmark, 8 cores: every cluster core runs the integer + FP loop of sim_loop.c. */
#include <pmsis.h>

#include "sim_loop_work.h"

#ifndef ITERS
#define ITERS 300000
#endif

static PI_L1 volatile uint32_t out[16];

static void loop(void *arg) {
  (void)arg;
  struct sim_loop_result r = sim_loop_work(12345u + pi_core_id(), ITERS);
  out[pi_core_id()] = r.acc + (uint32_t)r.g + (uint32_t)(int)r.hacc;
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
