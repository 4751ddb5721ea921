/* Cluster start, task offload and fork/join, over the cluster control unit and the event unit.
 *
 * The FC fetch-enables the cluster cores at _start (crt0 sends them here). Core 0 is the master:
 * it sleeps until the FC signals software event 0, runs the task's entry, then wakes the FC. Cores
 * 1..n-1 wait on the event unit's dispatch FIFO for (entry, arg) pairs pushed by pi_cl_team_fork and
 * join on hardware barrier 0.
 *
 * The FC waits for a task as the PULP OS does on pulp-open: it sleeps in wfi, and the master ends the
 * task by raising a software-event line of the FC's interrupt controller (ITC STATUS_SET), which the
 * FC unmasks. Interrupts stay disabled, so the line only ends the wfi; the FC clears it and looks at
 * the mailbox. The same ELF runs on the embedded simulator and on GVSoC. */
#include "pmsis.h"

/* The ITC line the master raises: software event 1, the PULP OS's choice (POS_EVENT_FC_ENQUEUE). */
#define FC_WAKE_LINE (PULP_ITC_SW_EVENT + 1)

extern char _start[];
extern char __cluster_stacks[];

/* The mailbox between the FC and the master core lives in L2 (cheap to poll for the FC). */
static struct pi_cluster_task *volatile mailbox_task;
static volatile uint32_t mailbox_done;
volatile uint32_t __pulp_team_cores = PULP_CLUSTER_CORES;
static int cluster_on;

void pi_open_from_conf(struct pi_device *device, void *conf) {
  device->config = conf;
  device->data = 0;
}

void pi_cluster_conf_init(struct pi_cluster_conf *conf) { conf->id = 0; }

int pi_cluster_open(struct pi_device *device) {
  (void)device;
  if (cluster_on) return 0;
  mailbox_done = 1;
  pulp_wr(PULP_FC_ITC + PULP_ITC_MASK_SET, 1u << FC_WAKE_LINE);
  pulp_wr(PULP_CLUSTER_ICACHE_CTRL + PULP_SOC_ICACHE_ENABLE, 0xFFFFFFFFu);
  for (int i = 0; i < PULP_CLUSTER_CORES; i++) pulp_wr(PULP_CLUSTER_CTRL + PULP_SOC_BOOTADDR + 4 * i, (uint32_t)_start);
  pulp_wr(PULP_CLUSTER_CTRL + PULP_SOC_FETCH_EN, (1u << PULP_CLUSTER_CORES) - 1);
  cluster_on = 1;
  return 0;
}

int pi_cluster_close(struct pi_device *device) {
  (void)device;
  return 0;  /* the cores stay asleep in their wait loops */
}

struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *), void *arg) {
  task->entry = entry;
  task->arg = arg;
  task->stacks = 0;
  task->stack_size = 0;
  task->slave_stack_size = 0;
  task->nb_cores = 0;
  return task;
}

int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task) {
  if (!cluster_on) pi_cluster_open(device);
  mailbox_done = 0;
  mailbox_task = task;
  pulp_wr(PULP_EVENT_UNIT + PULP_EU_FULL_SW_EVENT + 4 * PULP_EU_EVT_SW0, 1u);  /* software event 0 to core 0 */
  while (!mailbox_done) {
    __asm__ volatile("wfi");  /* ends once the master has raised FC_WAKE_LINE (or at once if it already has) */
    pulp_wr(PULP_FC_ITC + PULP_ITC_STATUS_CLR, 1u << FC_WAKE_LINE);
  }
  return 0;
}

void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg) {
  if (nb_cores <= 0 || nb_cores > PULP_CLUSTER_CORES) nb_cores = PULP_CLUSTER_CORES;
  uint32_t mask = (1u << nb_cores) - 1;
  __pulp_team_cores = (uint32_t)nb_cores;
  pulp_wr(PULP_EU_DEMUX + PULP_EU_BARRIER + PULP_EU_BAR_TRIGGER_MASK, mask); /* barrier 0: participants */
  pulp_wr(PULP_EU_DEMUX + PULP_EU_BARRIER + PULP_EU_BAR_TARGET_MASK, mask);  /* ... and whom it wakes */
  if (nb_cores > 1) {
    pulp_wr(PULP_EU_DEMUX + PULP_EU_TEAM_CONFIG, mask & ~1u); /* dispatch to the slaves */
    pulp_wr(PULP_EU_DEMUX + PULP_EU_DISPATCH, (uint32_t)entry);
    pulp_wr(PULP_EU_DEMUX + PULP_EU_DISPATCH, (uint32_t)arg);
  }
  entry(arg);
  pi_cl_team_barrier();
}

static void slave_loop(void) {
  for (;;) {
    void (*entry)(void *) = (void (*)(void *))pulp_elw(PULP_EU_DEMUX + PULP_EU_DISPATCH);
    void *arg = (void *)pulp_elw(PULP_EU_DEMUX + PULP_EU_DISPATCH);
    entry(arg);
    pi_cl_team_barrier();
  }
}

static void master_loop(void) {
  for (;;) {
    pulp_evt_wait_clear(1u << PULP_EU_EVT_SW0);
    struct pi_cluster_task *t = mailbox_task;
    if (!t) continue;
    mailbox_task = 0;
    t->entry(t->arg);
    mailbox_done = 1;
    pulp_wr(PULP_FC_ITC + PULP_ITC_STATUS_SET, 1u << FC_WAKE_LINE);
  }
}

/* crt0 jumps here on every cluster core, with the stack not yet set. */
void __pulp_cluster_main(uint32_t core) {
  pulp_wr(PULP_EU_DEMUX + PULP_EU_MASK_OR,
          (1u << PULP_EU_EVT_BARRIER) | (1u << PULP_EU_EVT_MUTEX) | (1u << PULP_EU_EVT_DISPATCH));
  if (core == 0)
    master_loop();
  else
    slave_loop();
}

/* A size that pi_cl_dma_cmd cannot encode: the hardware would read its high bits as flags and move
 * something else, so the program stops here, saying why. */
void __pulp_cl_dma_size_error(uint32_t size) {
  printf("pi_cl_dma_cmd: %u bytes do not fit the %d-bit size of a cluster-DMA command (at most %u); split the "
         "transfer\n", size, PULP_MCHAN_LEN_BITS, (1u << PULP_MCHAN_LEN_BITS) - 1);
  exit(1);
}
