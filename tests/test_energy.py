"""The energy model (harness/energy.py): coefficients from the platform files, instruction classes
from isa/energy.toml, and a sanity suite of analytic cases run on the simulator, each computed by
hand from the coefficients: a sleeping cluster costs its leakage and sleep power over the time;
doubling a warm loop doubles its dynamic (per-event) energy, which is the loop body's
instructions priced one by one; moving the same bytes from HyperRAM costs what L2 costs plus the uDMA and the
HyperRAM per byte; the same work with private FPUs has the same FP energy."""
from __future__ import annotations

import math

import pytest
import tomlkit

from harness import energy
from harness import platform as platmod
from harness.backends import embedded
from harness.errors import UserError
from harness.isa import model

# ---------------------------------------------------------------- unit tier


def test_every_instruction_has_an_energy_class():
    isa = model.load()
    assert set(isa.energy) == {(i.name, i.ext) for i in isa.insns}
    assert isa.energy[("fmadd.s", "f")] == "fp32"
    assert isa.energy[("fmadd.h", "zfh")] == "fp16"
    assert isa.energy[("vfdotpex.s.h", "xfvec")] == "fp16_simd"
    assert isa.energy[("p.mac", "xpulp")] == "muldiv" and isa.energy[("mul", "m")] == "muldiv"
    assert isa.energy[("lw", "i")] == "access" and isa.energy[("p.elw", "xpulp")] == "access"
    assert isa.energy[("add", "i")] == "alu"


@pytest.mark.parametrize("name", platmod.available())
def test_every_coefficient_is_in_every_platform(name):
    plat = platmod.load(name)
    assert set(plat.raw["energy"]) == set(energy.KEYS)
    assert all(v >= 0 for v in plat.raw["energy"].values())


def test_pulp_open_prices_what_gvsoc_tables_say():
    """GVSoC's pulp-open power tables (gvsoc-pulp pulp/chips/pulp_open/power_models/): 4.98 pJ an
    instruction, 2.124 pJ an L1 bank access, 2.84 mW cluster background, 1.6 uW a clock-gated core;
    leakage 35.5 uW a core x 8 + 5.2 uW an L1 bank x 16 + 1.1045 mW."""
    c = platmod.load("pulp-open").raw["energy"]
    assert {c[f"{k}_pJ"] for k in ("alu", "muldiv", "fp32", "fp16", "fp16_simd", "l1_load_store", "l2_load_store",
                                   "periph_load_store")} == {4.98}
    assert c["l1_bank_access_pJ"] == 2.124 and c["cluster_clocked_W"] == 0.00284 and c["core_wait_W"] == 1.6e-6
    assert c["cluster_leakage_W"] == pytest.approx(8 * 35.5e-6 + 16 * 5.2e-6 + 1.1045e-3)
    assert c["cluster_dma_byte_pJ"] == pytest.approx(0.187e-3 / 50e6 / 8 * 1e12)


def test_paper_lists_only_what_differs():
    own = tomlkit.parse((platmod.PLATFORM_DIR / "paper.toml").read_text())["energy"]
    base = platmod.load("pulp-open").raw["energy"]
    assert own and all(own[k] != base[k] for k in own)


def _events(**kw) -> dict:
    ev = dict.fromkeys(energy.EVENTS, 0)
    ev.update(kw)
    return ev


def test_each_term_is_its_coefficient_times_its_amount():
    plat = platmod.load("paper")
    c, f = plat.raw["energy"], plat.clock_hz
    ev = _events(cycles=900, alu_instructions=10, fp16_simd_instructions=4, stall_cycles=7, l1_accesses=3,
                 cluster_dma_bytes=64, udma_bytes=100, hyperram_read_bytes=100, icache_refills=2,
                 icache_refill_bytes=32, core_wait_cycles=1800, cluster_on_cycles=900, cluster_gated_cycles=300)
    t = energy.price(ev, plat)["terms_J"]
    pj = 1e-12
    assert t["alu_pJ"] == pytest.approx(10 * c["alu_pJ"] * pj)
    assert t["fp16_simd_pJ"] == pytest.approx(4 * c["fp16_simd_pJ"] * pj)
    assert t["stall_cycle_pJ"] == pytest.approx(7 * c["stall_cycle_pJ"] * pj)
    # three core accesses and 64 DMA bytes at 4 bytes a bank access
    assert t["l1_bank_access_pJ"] == pytest.approx((3 + 64 / 4) * c["l1_bank_access_pJ"] * pj)
    assert t["l2_byte_pJ"] == pytest.approx((64 + 100 + 32) * c["l2_byte_pJ"] * pj)
    assert t["hyperram_read_byte_pJ"] == pytest.approx(100 * c["hyperram_read_byte_pJ"] * pj)
    assert t["cluster_clocked_W"] == pytest.approx(c["cluster_clocked_W"] * 600 / f)
    assert t["cluster_gated_W"] == pytest.approx(c["cluster_gated_W"] * 300 / f)
    assert t["core_wait_W"] == pytest.approx(c["core_wait_W"] * 1800 / f)
    assert t["cluster_leakage_W"] == pytest.approx(c["cluster_leakage_W"] * 900 / f)
    assert t["soc_leakage_W"] == pytest.approx(c["soc_leakage_W"] * 900 / f)
    assert t["fp32_pJ"] == 0 and t["flash_write_byte_pJ"] == 0


def test_the_parts_add_up_to_the_total():
    plat = platmod.load("pulp-open")
    ev = _events(cycles=1000, alu_instructions=500, l2_accesses=20, cluster_dma_bytes=8, udma_bytes=8,
                 flash_read_bytes=8, core_wait_cycles=100)
    p = energy.price(ev, plat)
    assert p["energy_J"] == pytest.approx(sum(p[f"energy_{c}_J"] for c in energy.CATEGORIES))
    assert p["energy_J"] == pytest.approx(sum(p["terms_J"].values()))
    for key, (part, _, _) in energy.KEYS.items():
        assert part in energy.CATEGORIES, key


def _with(tmp_path, base: str, **values) -> platmod.Platform:
    doc = tomlkit.parse(platmod.load(base).resolved_toml())
    for k, v in values.items():
        sec, key = k.split(".")
        doc[sec][key] = v
    path = tmp_path / f"{base}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(doc))
    return platmod.load_file(path)


def test_a_coefficient_change_keeps_the_run_sha(tmp_path):
    base = platmod.load("pulp-open")
    changed = _with(tmp_path, "pulp-open", **{"energy.alu_pJ": 9.0})
    assert changed.run_sha256 == base.run_sha256 and changed.sha256 != base.sha256
    timing = _with(tmp_path, "pulp-open", **{"timing.mul": 3})
    assert timing.run_sha256 != base.run_sha256


@pytest.mark.parametrize("old,new,words", [
    ("alu_pJ = 4.98", "alu_pJ = -1.0", ["[energy] alu_pJ", "non-negative number"]),
    ("alu_pJ = 4.98", "alu_pJ = \"cheap\"", ["[energy] alu_pJ", "non-negative number"]),
    ("alu_pJ = 4.98", "alu_pj = 4.98", ["[energy]"]),
    ("soc_leakage_W = 0.00034", "soc_leakage_W = 0.00034\nleakage_W = 1.0", ["[energy]", "nothing reads it"]),
])
def test_bad_coefficient_is_one_line_error(tmp_path, old, new, words):
    text = (platmod.PLATFORM_DIR / "pulp-open.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(UserError) as e:
        platmod.load_file(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    for w in words:
        assert w in msg


def test_joules_are_readable():
    assert energy.joules(0.0) == "0 J"
    assert energy.joules(1.5e-3) == "1.5 mJ"
    assert energy.joules(3.456e-7) == "346 nJ"
    assert energy.joules(2.0) == "2 J"


# ---------------------------------------------------------------- analytic cases on the simulator

# The FC's part of a test program: run `work` on the cluster once.
CLUSTER_MAIN = r"""
int main(void) {
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, work, 0));
  return 0;
}
"""

SLEEP = r"""
#include <pmsis.h>
#define STATUS(id) (PULP_UDMA + PULP_HYPER_PERIPH_STRIDE * (PULP_HYPER_PERIPH_ID + 1) \
                    + PULP_HYPER_CHANNEL_STRIDE * (uint32_t)(id) + PULP_HYPER_STATUS)
static uint8_t buf[BYTES];
int main(void) {
  struct pi_device cl, ram;
  struct pi_cluster_conf conf;
  struct pi_hyperram_conf rconf;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_hyperram_conf_init(&rconf);
  pi_open_from_conf(&ram, &rconf);
  pi_ram_open(&ram);
  for (volatile int i = 0; i < 3000; i++) {}   /* the cluster cores boot and fall asleep */
  /* the read's end event reaches the FC: unmasked in the SoC event unit, its FIFO line in the ITC */
  uint32_t ev = PULP_HYPER_EOT_RX_EVENT;
  uint32_t m = PULP_SOC_EU + PULP_SOC_EU_FC_MASK + 4 * (ev / 32);
  pulp_wr(m, pulp_rd(m) & ~(1u << (ev % 32)));
  pulp_wr(PULP_FC_ITC + PULP_ITC_MASK_SET, 1u << PULP_ITC_FIFO_IRQ);
  pi_task_t t;
  pulp_energy_mark();
  pi_ram_read_async(&ram, 0, buf, BYTES, &t);
  while (pulp_rd(STATUS(t.id)) & 1) __asm__ volatile("wfi");   /* the uDMA's completion wakes the FC */
  pulp_energy_mark();
  return 0;
}
"""

# The marked loop runs on cluster core 0 (the others sleep): per iteration one ALU instruction, one
# multiply, one FP32, one scalar FP16 and one FP16 SIMD instruction, a load and a store to L1.
LOOP = r"""
#include <pmsis.h>
#include <pulp_isa.h>
PI_L1 static volatile uint32_t cell[4];
static volatile uint32_t out;
static void work(void *arg) {
  (void)arg;
  uint32_t n = ITERS, a = 3, m = 5, f = 0x3f800000u, h = 0x3c00u, v = 0x3c003c00u, x = 0;
  uint32_t *p = (uint32_t *)cell;
  pulp_energy_mark();
  if (n)
    __asm__ volatile(".option push\n.option norvc\n" PULP_LP_SETUP(0, %[n], 16) "\n"
                     " add %[a], %[a], %[m]\n"
                     " mul %[m], %[m], %[m]\n"
                     " fadd.s %[f], %[f], %[f]\n"
                     " fadd.h %[h], %[h], %[h]\n"
                     " " PULP_VFADD_H(%[v], %[v], %[v]) "\n"
                     " lw %[x], 0(%[p])\n"
                     " sw %[a], 4(%[p])\n"
                     " nop\n.option pop\n"
                     : [a] "+r"(a), [m] "+r"(m), [f] "+r"(f), [h] "+r"(h), [v] "+r"(v), [x] "=&r"(x)
                     : [n] "r"(n), [p] "r"(p) : "memory");
  pulp_energy_mark();
  out = a + m + f + h + v + x;
}
""" + CLUSTER_MAIN

# B bytes brought into L1 by the cluster DMA, from L2 (FROM_RAM 0) or first from HyperRAM into
# L2 by the uDMA (FROM_RAM 1); the FC marks the window around both.
MOVE = r"""
#include <pmsis.h>
static uint8_t src[BYTES] __attribute__((aligned(16)));
PI_L1 static uint8_t dst[BYTES] __attribute__((aligned(16)));
static void work(void *arg) {
  (void)arg;
  pi_cl_dma_cmd_t c;
  pi_cl_dma_cmd((uint32_t)src, (uint32_t)dst, BYTES, PI_CL_DMA_DIR_EXT2LOC, &c);
  pi_cl_dma_cmd_wait(&c);
}
int main(void) {
  struct pi_device cl, ram;
  struct pi_cluster_conf conf;
  struct pi_hyperram_conf rconf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_hyperram_conf_init(&rconf);
  pi_open_from_conf(&ram, &rconf);
  pi_ram_open(&ram);
  pulp_energy_mark();
  if (FROM_RAM) pi_ram_read(&ram, 0, src, BYTES);
  pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, work, 0));
  pulp_energy_mark();
  return 0;
}
"""


def _window(build_c, text, platform="pulp-open", **defines):
    plat = platmod.load(platform)
    # the FC sleeps while the cluster works (the runtime waits for a task in wfi)
    elf = build_c(text, platform=platform, defines=[f"{k}={v}" for k, v in defines.items()])
    res = embedded.run(elf, plat)
    assert res["status"] == "exit" and res["exit_code"] == 0, res.get("fault")
    win = res["energy_window"]
    assert win is not None and win["windows"] == 1
    return plat, win


def _dynamic(win) -> float:
    """The per-event (pJ) terms: what the work itself costs, without power over time."""
    return sum(j for k, j in win["terms_J"].items() if k.endswith("_pJ"))


@pytest.mark.e2e
@pytest.mark.parametrize("platform", platmod.available())
def test_a_sleeping_cluster_costs_its_leakage_and_sleep_power(build_c, platform):
    plat, win = _window(build_c, SLEEP, platform, BYTES=8192)
    c, ev, t = plat.raw["energy"], win["events"], win["terms_J"]
    cycles = ev["cycles"]
    assert cycles > 8192   # the FC slept through the transfer
    secs = cycles / plat.clock_hz
    assert win["seconds"] == secs
    # the cluster is powered and clock-gated the whole window: nothing of it runs
    assert ev["cluster_on_cycles"] == cycles and ev["cluster_gated_cycles"] == cycles
    assert t["cluster_clocked_W"] == 0
    cores = plat.cluster["cores"]
    cluster = t["cluster_leakage_W"] + t["cluster_gated_W"]
    assert cluster == pytest.approx((c["cluster_leakage_W"] + c["cluster_gated_W"]) * secs, rel=1e-12)
    # every cluster core waits the whole window, the FC all but the few cycles it ran
    fc_ran = cycles * (cores + 1) - ev["core_wait_cycles"]
    assert 0 < fc_ran < 200
    assert t["core_wait_W"] == pytest.approx(c["core_wait_W"] * (cores * cycles + cycles - fc_ran) / plat.clock_hz)
    leak = c["soc_leakage_W"] + c["cluster_leakage_W"] + c["hyperram_standby_W"] + c["flash_standby_W"]
    assert win["energy_leakage_J"] == pytest.approx(leak * secs, rel=1e-12)
    # what moved: 8192 bytes from HyperRAM into L2 through the uDMA
    assert (ev["hyperram_read_bytes"], ev["udma_bytes"], ev["cluster_dma_bytes"]) == (8192, 8192, 0)
    assert win["energy_dma_J"] == pytest.approx(8192 * (c["udma_byte_pJ"] + c["hyperram_read_byte_pJ"]) * 1e-12)


ITERS = 200


@pytest.mark.e2e
@pytest.mark.parametrize("platform", platmod.available())
def test_doubling_a_loop_doubles_its_dynamic_energy(build_c, platform):
    """Iterations past the first cost the same (the first also fills the instruction cache): the
    iterations that double from 2N to 4N cost twice those from N to 2N, each what its instructions,
    accesses and stall cost one by one."""
    runs = {n: _window(build_c, LOOP, platform, ITERS=n)[1] for n in (ITERS, 2 * ITERS, 4 * ITERS)}
    plat = platmod.load(platform)
    c = plat.raw["energy"]
    one, two, four = (_dynamic(runs[n]) for n in (ITERS, 2 * ITERS, 4 * ITERS))
    assert four - two == pytest.approx(2 * (two - one), rel=1e-9)
    # by hand: the body's instructions, its two L1 accesses, and the multiply's stall (timing.mul - 1)
    stalls = plat.timing["mul"] - 1
    per_iter = (2 * c["alu_pJ"] + c["muldiv_pJ"] + c["fp32_pJ"] + c["fp16_pJ"] + c["fp16_simd_pJ"]  # add, nop
                + 2 * (c["l1_load_store_pJ"] + c["l1_bank_access_pJ"]) + stalls * c["stall_cycle_pJ"]) * 1e-12
    assert two - one == pytest.approx(ITERS * per_iter, rel=1e-9)
    d = {k: runs[2 * ITERS]["events"][k] - runs[ITERS]["events"][k] for k in runs[ITERS]["events"]}
    assert (d["fp32_instructions"], d["fp16_instructions"], d["fp16_simd_instructions"], d["l1_accesses"]) == \
           (ITERS, ITERS, ITERS, 2 * ITERS)
    assert d["icache_refills"] == 0 and d["stall_cycles"] == stalls * ITERS


# The marked loop on cluster core 0 makes, per iteration, one L1 access of each kind: byte, half and word
# loads and stores, a word load at offset 1 and a word store at offset 2 (each crossing a word), and a
# read of the test-and-set alias (TAS, L1's base + tas_offset: a read that writes all ones back).
PIECES = r"""
#include <pmsis.h>
PI_L1 static volatile uint32_t cell[8] __attribute__((aligned(16)));
static volatile uint32_t out;
static void work(void *arg) {
  (void)arg;
  uint32_t x = 0, y;
  uint8_t *p = (uint8_t *)cell;
  uint32_t tas = (uint32_t)&cell[4] + TAS;
  pulp_energy_mark();
  for (uint32_t i = 0; i < ITERS; i++) {
    __asm__ volatile("lbu %[y], 0(%[p])\n lhu %[y], 2(%[p])\n lw %[y], 4(%[p])\n lw %[y], 9(%[p])\n"
                     "sb %[x], 16(%[p])\n sh %[x], 18(%[p])\n sw %[x], 20(%[p])\n sw %[x], 26(%[p])\n"
                     "lw %[y], 0(%[t])\n"
                     : [y] "=&r"(y) : [p] "r"(p), [x] "r"(x), [t] "r"(tas) : "memory");
    x += y;
  }
  pulp_energy_mark();
  out = x;
}
""" + CLUSTER_MAIN


@pytest.mark.e2e
def test_l1_bank_accesses_are_counted_by_direction_and_size(build_c):
    """What a bank serves, per iteration: reads of 1, 2 and 4 bytes; a word load at offset 1 as a
    3-byte and a 1-byte read; writes of 1, 2 and 4 bytes; a word store at offset 2 as two 2-byte writes;
    the test-and-set read as a 4-byte read and a 4-byte write. The priced term still counts each core
    access once (a word-crossing one twice), as before."""
    tas = platmod.load("pulp-open").memory("l1").tas_offset
    runs = {n: _window(build_c, PIECES, ITERS=n, TAS=tas)[1] for n in (ITERS, 2 * ITERS)}
    a, b = (runs[n]["l1_bank_accesses"] for n in (ITERS, 2 * ITERS))
    d = {k: [y - x for x, y in zip(a[k], b[k])] for k in ("reads", "writes")}
    per_iter = {"reads": [2, 1, 1, 2], "writes": [1, 3, 0, 2]}   # 1-, 2-, 3- and 4-byte pieces
    assert d == {k: [ITERS * n for n in v] for k, v in per_iter.items()}
    assert runs[2 * ITERS]["events"]["l1_accesses"] - runs[ITERS]["events"]["l1_accesses"] == 11 * ITERS


@pytest.mark.e2e
@pytest.mark.parametrize("platform", platmod.available())
def test_bytes_from_hyperram_cost_more_than_from_l2(build_c, platform):
    n = 4096
    plat, l2 = _window(build_c, MOVE, platform, BYTES=n, FROM_RAM=0)
    _, ram = _window(build_c, MOVE, platform, BYTES=n, FROM_RAM=1)
    c = plat.raw["energy"]
    assert ram["energy_J"] > l2["energy_J"]
    assert l2["events"]["cluster_dma_bytes"] == ram["events"]["cluster_dma_bytes"] == n
    assert (l2["events"]["udma_bytes"], ram["events"]["udma_bytes"]) == (0, n)
    # by hand: the uDMA and the HyperRAM per byte, on top of the same cluster-DMA transfer
    assert ram["energy_dma_J"] - l2["energy_dma_J"] == \
        pytest.approx(n * (c["udma_byte_pJ"] + c["hyperram_read_byte_pJ"]) * 1e-12, rel=1e-9)
    assert ram["terms_J"]["l2_byte_pJ"] - l2["terms_J"]["l2_byte_pJ"] >= n * c["l2_byte_pJ"] * 1e-12


@pytest.mark.e2e
def test_private_fpus_do_the_same_work_for_the_same_fp_energy(build_c, tmp_path):
    """The same kernel on pulp-open (4 FPUs shared by 8 cores) and on pulp-open with one FPU per
    core: other cycles (no FPU contention), the same FP instructions and FP energy."""
    private = _with(tmp_path, "pulp-open", **{"cluster.fpus": 8})
    from harness.kernels import runner, spec as specmod

    rows = {}
    for name, plat in (("shared", platmod.load("pulp-open")), ("private", private)):
        sp = specmod.make("pw", 16, 16, 8, 8, "fw", platform=str(plat.path), placement="l2")
        rows[name] = runner.run_spec(sp)
        assert rows[name]["ok"]
    a, b = rows["shared"], rows["private"]
    assert a["cycles"] > b["cycles"]    # contention for the shared FPUs
    fp = ("fp32_instructions", "fp16_instructions", "fp16_simd_instructions")
    assert [a["energy_events"][k] for k in fp] == [b["energy_events"][k] for k in fp]
    assert a["energy_events"]["fp16_simd_instructions"] > 0
    pa, pb = (energy.price(r["energy_events"], platmod.load("pulp-open")) for r in (a, b))
    for k in ("fp32_pJ", "fp16_pJ", "fp16_simd_pJ"):
        assert pa["terms_J"][k] == pb["terms_J"][k]


@pytest.mark.e2e
def test_counts_are_deterministic(build_c):
    plat = platmod.load("paper")
    elf = build_c(LOOP, platform="paper", defines=[f"ITERS={ITERS}"])
    a, b = (embedded.run(elf, plat) for _ in range(2))
    assert a["energy"]["events"] == b["energy"]["events"]
    assert a["energy_window"]["events"] == b["energy_window"]["events"]
    assert math.isclose(a["energy"]["energy_J"], b["energy"]["energy_J"], rel_tol=0, abs_tol=0)


# ---------------------------------------------------------------- every coefficient counts

@pytest.mark.e2e
@pytest.mark.parametrize("name", platmod.available())
def test_every_coefficient_changes_the_energy_of_the_probe(name, tmp_path):
    """Each [energy] key of the platform file, changed in the file (read back by the loader),
    changes the energy of a run of the perturbation probe (tests/probe/probe.c), which touches every
    event the model prices (TCDM conflicts where the platform models them: switched on here)."""
    from harness import toolchain
    from tests.test_perturbation import PROBE, _defines

    base = _with(tmp_path / "base", name, **{"cluster.tcdm_conflicts": True}) \
        if not platmod.load(name).cluster["tcdm_conflicts"] else platmod.load(name)
    elf = toolchain.build([PROBE], tmp_path / "probe.elf", base, defines=_defines(base))
    res = embedded.run(elf, base)
    assert res["status"] == "exit" and res["exit_code"] == 0
    ev = res["energy"]["events"]
    ref = energy.price(ev, base)["energy_J"]
    silent = []
    for n, key in enumerate(energy.KEYS):
        value = base.raw["energy"][key]
        changed = _with(tmp_path / f"v{n}", name, **{"cluster.tcdm_conflicts": base.cluster["tcdm_conflicts"],
                                                     f"energy.{key}": value * 2 if value else 1.0})
        if energy.price(ev, changed)["energy_J"] == ref:
            silent.append(key)
    assert not silent, f"{name}: changing these coefficients leaves the probe's energy unchanged: {silent}"
