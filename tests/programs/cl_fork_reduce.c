/* Fork with NCORES cores, skewed work per core, a parallel reduction under a critical section and
 * a barrier between phases; the FC checks the sums. */
#include <pmsis.h>

#ifndef NCORES
#define NCORES 8
#endif
#define N 960

static PI_L1 int data[N];
static PI_L1 volatile int partial[16];
static PI_L1 volatile int total;
static PI_L1 volatile int phase2_ok;
static int result_total, result_phase2, result_cores;

static void work(void *arg) {
  (void)arg;
  int id = pi_core_id(), nc = pi_cl_team_nb_cores();
  int s = 0;
  for (int i = id; i < N; i += nc) {
    s += data[i];
    for (int k = 0; k < id * 3; k++) __asm__ volatile("nop");  /* skew: core i works longer */
  }
  partial[id] = s;
  pi_cl_team_critical_enter();
  total += s;
  pi_cl_team_critical_exit();
  pi_cl_team_barrier();                   /* every partial is written before anyone reads them */
  int check = 0;
  for (int c = 0; c < nc; c++) check += partial[c];
  if (check == total) {
    pi_cl_team_critical_enter();
    phase2_ok++;
    pi_cl_team_critical_exit();
  }
}

static void entry(void *arg) {
  (void)arg;
  total = 0;
  phase2_ok = 0;
  pi_cl_team_fork(NCORES, work, 0);
  result_total = total;
  result_phase2 = phase2_ok;
  result_cores = pi_cl_team_nb_cores();
}

int main(void) {
  int expect = 0;
  for (int i = 0; i < N; i++) {
    data[i] = i * 7 - 100;
    expect += i * 7 - 100;
  }
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  for (int rep = 0; rep < 2; rep++) {
    pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, entry, 0));
    printf("rep %d: total %d expect %d phase2 %d cores %d\n", rep, result_total, expect, result_phase2, result_cores);
    if (result_total != expect || result_phase2 != NCORES || result_cores != NCORES) return 1;
  }
  return 0;
}
