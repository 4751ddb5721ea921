"""The whole MCU: cluster start, fork/join, barriers, mutexes, both DMAs, external memories, the
shared-resource timing models, and clean errors for runaway or forever-waiting cores."""
import pytest

from harness import ROOT
from tests.conftest import needs_clang

pytestmark = needs_clang
PROG = ROOT / "tests" / "programs"


def src(name):
    return (PROG / name).read_text()


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
@pytest.mark.parametrize("ncores", [1, 3, 8])
def test_fork_reduction_and_barrier(build_c, run_elf, platform, ncores):
    r = run_elf(build_c(src("cl_fork_reduce.c"), platform=platform, defines=(f"NCORES={ncores}",)), platform=platform)
    assert r["status"] == "exit" and r["exit_code"] == 0, r["stdout"] + str(r.get("fault"))
    assert r["stdout"].count(f"phase2 {ncores} cores {ncores}") == 2
    ran = [c for c in r["cores"] if c["core"] != "fc"]
    assert len(ran) >= ncores
    busy = [c for c in ran if c["instructions"] > 0]
    assert all(c["event_wait"] > 0 for c in busy[1:ncores]) or ncores == 1


def test_cluster_cycles_are_deterministic(build_c, run_elf):
    elf = build_c(src("cl_fork_reduce.c"))
    a, b = run_elf(elf), run_elf(elf)
    assert a["cycles"] == b["cycles"]
    assert [c["cycles"] for c in a["cores"]] == [c["cycles"] for c in b["cores"]]


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
def test_cluster_dma_copies_are_byte_exact(build_c, run_elf, platform):
    r = run_elf(build_c(src("cl_dma_copy.c"), platform=platform), platform=platform)
    assert r["exit_code"] == 0 and "checked 37 failures 0" in r["stdout"]
    dma = next(d for d in r["dmas"] if d["name"] == "cluster_dma")
    assert dma["transfers"] == 2 * 35 + 2 and dma["bytes"] > 0 and dma["busy_cycles"] > 0


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
def test_hyperram_and_flash_round_trips(build_c, run_elf, platform):
    r = run_elf(build_c(src("hyper_roundtrip.c"), platform=platform), platform=platform)
    assert r["exit_code"] == 0 and "failures 0" in r["stdout"]
    udma = next(d for d in r["dmas"] if d["name"] == "udma")
    assert udma["transfers"] == 7 and udma["bytes"] == 4997 * 2 + 333 * 2 + 1000 * 2 + 100


def _micro(build_c, run_elf, platform):
    r = run_elf(build_c(src("cl_micro.c"), platform=platform), platform=platform)
    assert r["status"] == "exit", r.get("fault")
    return {k: int(v) for k, v in (line.split() for line in r["stdout"].splitlines())}


def test_bank_conflicts_follow_the_model(build_c, run_elf):
    from harness import platform as platmod

    paper = _micro(build_c, run_elf, "paper")
    # 8 cores, one load every 2 cycles each: on one bank they share one access per cycle -> 8 cycles
    # per iteration for the last core; on 8 different banks nothing stalls.
    assert paper["tcdm.diff"] == 2 * 64 + 2
    # (+1 or +2: which core the bank serves last in a cycle follows the order the cores run in)
    assert 8 * 64 + 1 <= paper["tcdm.same"] <= 8 * 64 + 2
    assert platmod.load("paper").cluster["tcdm_conflicts"]
    gv = _micro(build_c, run_elf, "pulp-open")  # GVSoC's pulp-open has no TCDM conflicts
    assert gv["tcdm.same"] == gv["tcdm.diff"] == 2 * 64 + 2


def test_fpu_sharing_on_pulp_open(build_c, run_elf):
    m = _micro(build_c, run_elf, "pulp-open")
    alone = m["fpu.alone"]
    # cores 0..3 use FPUs 0..3: no contention, only an instruction-cache refill (2 cycles: an L0 miss that
    # hits the shared L1) that the LFSR replacement may or may not leave
    assert alone <= m["fpu.quad"] <= alone + 2
    assert 1.9 < m["fpu.pair"] / alone < 2.05  # cores 0 and 4 share FPU 0 (GVSoC: 514 vs 263)
    assert 1.9 < m["fpu.all"] / alone < 2.05
    p = _micro(build_c, run_elf, "paper")      # one FPU per core
    assert all(p["fpu.alone"] <= p[k] <= p["fpu.alone"] + 2 for k in ("fpu.pair", "fpu.quad", "fpu.all"))


def test_dma_bandwidth_within_5_percent(build_c, run_elf):
    from harness import platform as platmod

    m = _micro(build_c, run_elf, "pulp-open")
    bpc = platmod.load("pulp-open").dma["bytes_per_cycle"]
    measured = 32768 / m["dma.32768"]
    assert abs(measured - bpc) / bpc < 0.05
    # the marginal rate between two sizes is the platform's figure
    assert abs((32768 - 8192) / (m["dma.32768"] - m["dma.8192"]) - bpc) / bpc < 0.01


def test_example_program_whole_mcu(build_c, run_elf):
    for platform in ("pulp-open", "paper"):
        r = run_elf(build_c((ROOT / "examples" / "cluster_tiles.c").read_text(), platform=platform), platform=platform)
        assert r["exit_code"] == 0 and "4096 elements, 0 errors" in r["stdout"]
        names = {d["name"]: d for d in r["dmas"]}
        assert names["cluster_dma"]["bytes"] == 2 * 4096 * 2 and names["udma"]["bytes"] >= 3 * 4096 * 2


RUNAWAY = r'''
#include <pmsis.h>
static void spin(void *a) { (void)a; if (pi_core_id() == 5) for (;;) __asm__ volatile("nop"); }
static void entry(void *a) { (void)a; pi_cl_team_fork(8, spin, 0); }
int main(void) {
  struct pi_device cl; struct pi_cluster_conf c; struct pi_cluster_task t;
  pi_cluster_conf_init(&c); pi_open_from_conf(&cl, &c); pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&t, entry, 0));
  return 0;
}'''

WAIT_FOREVER = r'''
#include <pmsis.h>
static void stuck(void *a) { (void)a; if (pi_core_id() == 3) pulp_evt_wait_clear(1u << 5); }
static void entry(void *a) { (void)a; pi_cl_team_fork(8, stuck, 0); }
int main(void) {
  struct pi_device cl; struct pi_cluster_conf c; struct pi_cluster_task t;
  pi_cluster_conf_init(&c); pi_open_from_conf(&cl, &c); pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&t, entry, 0));
  return 0;
}'''

# The cores wait forever while the FC polls a flag of its own instead of sleeping in wfi.
POLL_FOREVER = r'''
#include <pmsis.h>
static volatile int done;
static void stuck(void *a) { (void)a; pulp_evt_wait_clear(1u << 5); }
int main(void) {
  struct pi_device cl; struct pi_cluster_conf c;
  pi_cluster_conf_init(&c); pi_open_from_conf(&cl, &c); pi_cluster_open(&cl);
  pulp_wr(PULP_EVENT_UNIT + PULP_EU_FULL_SW_EVENT + 4 * PULP_EU_EVT_SW0, 1u);  /* core 0 looks at its mailbox */
  (void)stuck;
  while (!done) {
  }
  return 0;
}'''


def test_runaway_cluster_core_hits_the_cycle_limit(build_c, capsys):
    from harness.cli import main

    code = main(["run", str(build_c(RUNAWAY)), "--max-cycles", "200000"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "cycle limit" in err[0]


def test_cores_waiting_forever_while_the_fc_polls_is_a_deadlock(build_c, capsys):
    from harness.cli import main

    code = main(["run", str(build_c(POLL_FOREVER))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1
    assert "deadlock" in err[0] and "cluster core 0 waits for events 0x" in err[0]
    assert "fc polls" in err[0]


def test_fc_in_wfi_with_cores_waiting_forever_is_a_deadlock(build_c, capsys):
    from harness.cli import main

    code = main(["run", str(build_c(WAIT_FOREVER))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1
    assert "deadlock" in err[0] and "fc in wfi" in err[0] and "cluster core 3 waits" in err[0]


def test_run_json_has_cores_and_dmas(build_c, capsys):
    import json

    from harness.cli import main

    main(["run", str(build_c(src("cl_fork_reduce.c"))), "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert [c["core"] for c in obj["cores"]][:2] == ["fc", "0"]
    for c in obj["cores"]:
        for k in ("cycles", "instructions", "load_use", "branch", "jump", "tcdm_conflict", "fpu_contention", "wait"):
            assert k in c
    assert {d["name"] for d in obj["dmas"]} == {"cluster_dma", "udma"}
    assert all({"busy_cycles", "bytes"} <= set(d) for d in obj["dmas"])


# A core running ahead of its turn across instruction lines that hit its own L0 touches nothing shared;
# only an icache control write could make that inexact, and then the run is made again without it.
FLUSH_BEHIND = r"""
#include <pmsis.h>
static PI_L1 volatile uint32_t out[8];
static void work(void *arg) {
  (void)arg;
  uint32_t x = pi_core_id() + 1, acc = 0;
  if (pi_core_id() == 0) {
    for (int i = 0; i < 200; i++) { x = x * 1664525u + 1013904223u; acc ^= x >> 3; }
    pulp_wr(PULP_CLUSTER_ICACHE_CTRL + PULP_SOC_ICACHE_FLUSH, 1);   /* while the others are ahead */
  }
  for (int i = 0; i < 3000; i++) {   /* a loop body longer than a line: refills that hit the L0 */
    x = x * 1664525u + 1013904223u; acc += (x >> 7) ^ (acc << 3); acc ^= x >> 11; acc += i; x ^= acc << 5;
    acc = (acc << 1) | (acc >> 31); x += acc; acc -= x >> 2;
  }
  out[pi_core_id()] = acc;
}
static void entry(void *arg) { (void)arg; pi_cl_team_fork(0, work, 0); }
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
"""


def _simulated(r):
    """Every simulated figure of a run (the host's timing aside): what run-ahead must leave as it is."""
    return {k: v for k, v in r.items() if k not in ("mips", "host_seconds")}


def _same_run(a, b):
    assert a["cycles"] == b["cycles"] and a["stdout"] == b["stdout"]
    assert _simulated(a) == _simulated(b)


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
@pytest.mark.parametrize("prog", ["cl_fork_reduce.c", "cl_micro.c", "cl_dma_copy.c"])
def test_refill_run_ahead_changes_no_cycle(build_c, platform, prog):
    from harness import platform as platmod
    from harness.backends import embedded

    plat = platmod.load(platform)
    elf = build_c(src(prog), platform=platform)
    _same_run(embedded._run(elf, plat, None, None, None, None, None, ahead_refills=True),
              embedded._run(elf, plat, None, None, None, None, None, ahead_refills=False))


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
def test_an_icache_flush_behind_a_run_ahead_runs_again(build_c, platform):
    from harness import platform as platmod
    from harness.backends import embedded

    plat = platmod.load(platform)
    elf = build_c(FLUSH_BEHIND, platform=platform)
    first = embedded._run(elf, plat, None, None, None, None, None, ahead_refills=True)
    assert first["status"] == "rerun"
    r = embedded.run(elf, plat)
    assert r["status"] == "exit" and r["exit_code"] == 0
    _same_run(r, embedded._run(elf, plat, None, None, None, None, None, ahead_refills=False))


@pytest.mark.parametrize("platform", ["pulp-open", "paper"])
@pytest.mark.parametrize("prog", ["cl_fork_reduce.c", "cl_micro.c", "cl_dma_copy.c", "bench loop"])
def test_run_ahead_reproduces_the_schedule_of_one_instruction_at_a_time(build_c, build_dir, platform, prog):
    """A core past its turn runs ahead only on what touches nothing shared (no memory, an FPU it shares only
    while its peers come later, no refill from the shared icache): with run-ahead off (`run_ahead` 0) every
    core stops at its turn's end, the plain schedule by (cycle, position). Every counter of every core, both
    DMAs and the energy must come out the same; the bench loop shares the FPUs of `pulp-open` in pairs."""
    from harness import platform as platmod, toolchain
    from harness.backends import embedded
    from harness.bench_sim import BENCH

    plat = platmod.load(platform)
    if prog == "bench loop":
        elf = toolchain.build([BENCH / "sim_loop_cluster.c"], build_dir / f"bench_loop_{platform}.elf", plat,
                              opt="2", defines=["ITERS=2000"])
    else:
        elf = build_c(src(prog), platform=platform)
    ahead = embedded._run(elf, plat, None, None, None, None, None)
    plain = embedded._run(elf, plat, None, None, None, None, None, run_ahead=0)
    assert ahead["status"] == "exit" and ahead["exit_code"] == 0, ahead["stdout"]
    _same_run(ahead, plain)
