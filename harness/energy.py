"""Energy in joules from the simulator's event counts and the platform's [energy] section.

    E = sum over events of (count x energy per event) + sum over domains of (power x time)

The simulator counts, per run and per energy window (the sections a program marks with
pulp_energy_mark(), pmsis.h), every instruction by operation, data accesses by the memory they
reach, stalled cycles, TCDM conflicts, instruction lines fetched from L2, the bytes each DMA moves
and each external memory reads or writes, and how long cores wait, the cluster is powered and the
cluster is clock-gated (every core of it waiting). `events` turns those counts into the quantities
priced here (instructions by energy class: isa/energy.toml); `price` applies a platform's
coefficients. Each coefficient is one key of [energy], in pJ per event or W over a time, and
belongs to one part of the breakdown:

    compute   instructions by class, stalled cycles, the clocked cluster's background power
    memory    core loads and stores by target, L1 bank accesses (cores and cluster DMA), TCDM
              conflicts, L2 bytes (cores, both DMAs, instruction refills), instruction-cache refills
    dma       bytes through the cluster DMA and the uDMA, bytes read and written in HyperRAM and flash
    idle      waiting cores, the clock-gated cluster, the SoC domain's background power
    leakage   SoC and cluster (while powered) leakage, the external memories' standby power

Counts are recorded once and priced whenever a table is written, so changing a coefficient
re-prices cached results without simulating again (Platform.run_sha256 leaves [energy] out).
"""
from __future__ import annotations

from functools import lru_cache

CATEGORIES = ("compute", "memory", "dma", "idle", "leakage")
INSN_CLASSES = ("alu", "muldiv", "fp32", "fp16", "fp16_simd")


def _secs(n: str):
    return lambda e, geo: e[n] / geo["clock_hz"]


def _ev(n: str):
    return lambda e, geo: e[n]


# key: (part of the breakdown, what one unit of it prices, amount of that unit in the events)
KEYS = {
    "alu_pJ": ("compute", "an ALU, branch, jump, CSR, hardware-loop or register-move instruction",
               _ev("alu_instructions")),
    "muldiv_pJ": ("compute", "a multiply, divide, multiply-accumulate or integer dot-product instruction",
                  _ev("muldiv_instructions")),
    "fp32_pJ": ("compute", "an FP32 instruction on the FPU", _ev("fp32_instructions")),
    "fp16_pJ": ("compute", "a scalar FP16 instruction on the FPU", _ev("fp16_instructions")),
    "fp16_simd_pJ": ("compute", "an FP16 SIMD (2 x FP16) instruction on the FPU", _ev("fp16_simd_instructions")),
    "stall_cycle_pJ": ("compute", "a cycle a running core issues nothing (a stall)", _ev("stall_cycles")),
    "cluster_clocked_W": ("compute", "the cluster's background while one of its cores runs",
                          lambda e, geo: (e["cluster_on_cycles"] - e["cluster_gated_cycles"]) / geo["clock_hz"]),
    "l1_load_store_pJ": ("memory", "a core's load or store to L1 (a word-crossing one counts twice)",
                         _ev("l1_accesses")),
    "l2_load_store_pJ": ("memory", "a core's load or store to L2", _ev("l2_accesses")),
    "periph_load_store_pJ": ("memory", "a core's load or store to a peripheral register", _ev("periph_accesses")),
    "l1_bank_access_pJ": ("memory", "an L1 bank access: a core's, or bank_width bytes of a cluster-DMA transfer",
                          lambda e, geo: e["l1_accesses"] + e["cluster_dma_bytes"] / geo["bank_width"]),
    "tcdm_conflict_cycle_pJ": ("memory", "a cycle a core waits for an L1 bank", _ev("tcdm_conflict_cycles")),
    "l2_byte_pJ": ("memory", "a byte read or written in L2 by a core, a DMA or an instruction refill",
                   lambda e, geo: e["l2_core_bytes"] + e["cluster_dma_bytes"] + e["udma_bytes"]
                   + e["icache_refill_bytes"]),
    "icache_refill_pJ": ("memory", "an instruction line fetched from L2 into a cache", _ev("icache_refills")),
    "cluster_dma_byte_pJ": ("dma", "a byte the cluster DMA moves", _ev("cluster_dma_bytes")),
    "udma_byte_pJ": ("dma", "a byte the uDMA moves", _ev("udma_bytes")),
    "hyperram_read_byte_pJ": ("dma", "a byte read from HyperRAM", _ev("hyperram_read_bytes")),
    "hyperram_write_byte_pJ": ("dma", "a byte written to HyperRAM", _ev("hyperram_write_bytes")),
    "flash_read_byte_pJ": ("dma", "a byte read from flash", _ev("flash_read_bytes")),
    "flash_write_byte_pJ": ("dma", "a byte programmed into flash", _ev("flash_write_bytes")),
    "core_wait_W": ("idle", "each core (FC or cluster) waiting on an event, or idle in a powered cluster",
                    _secs("core_wait_cycles")),
    "cluster_gated_W": ("idle", "the cluster while every core of it waits (clock-gated)", _secs("cluster_gated_cycles")),
    "soc_background_W": ("idle", "the SoC domain's background (clocks, L2, interconnect), all the time", _secs("cycles")),
    "soc_leakage_W": ("leakage", "the SoC domain's leakage, all the time", _secs("cycles")),
    "cluster_leakage_W": ("leakage", "the cluster's leakage while it is powered", _secs("cluster_on_cycles")),
    "hyperram_standby_W": ("leakage", "the HyperRAM's standby power, all the time", _secs("cycles")),
    "flash_standby_W": ("leakage", "the flash's standby power, all the time", _secs("cycles")),
}

# The events `events` returns, in a stable order (rows carry them as `energy_events`).
EVENTS = ("cycles", "instructions", *(f"{c}_instructions" for c in INSN_CLASSES), "stall_cycles", "l1_accesses",
          "l2_accesses", "periph_accesses", "l2_core_bytes", "icache_refills", "icache_refill_bytes",
          "tcdm_conflict_cycles", "cluster_dma_bytes", "udma_bytes", "hyperram_read_bytes", "hyperram_write_bytes",
          "flash_read_bytes", "flash_write_bytes", "core_wait_cycles", "cluster_on_cycles", "cluster_gated_cycles")
# The columns of a priced row, total first.
COLUMNS = ("energy_J", *(f"energy_{c}_J" for c in CATEGORIES))


@lru_cache(maxsize=None)
def op_classes() -> tuple:
    """The energy class of each operation of the simulator, in the order of its counts."""
    from harness.backends import embedded
    from harness.isa import model

    classes = model.load().energy
    return tuple(classes.get((name, ext), "alu") for name, ext in embedded.simulator().op_table())


def events(counts: dict) -> dict:
    """The simulator's counts of a run or window (`energy_counts`, `energy_window`) as the events
    the model prices: instructions by energy class, stalled cycles, everything else as counted."""
    per = dict.fromkeys(INSN_CLASSES, 0)
    for n, cls in zip(counts["ops"], op_classes()):
        if n and cls in per:
            per[cls] += n
    out = {k: counts[k] for k in EVENTS if k in counts}
    out.update({f"{c}_instructions": per[c] for c in INSN_CLASSES})
    out["stall_cycles"] = counts["active_cycles"] - counts["instructions"]
    return {k: out[k] for k in EVENTS}


def _geometry(plat) -> dict:
    return {"clock_hz": plat.clock_hz, "bank_width": plat.memory("l1").bank_width}


def terms(ev: dict, plat) -> dict:
    """Joules of each coefficient of the platform for these events."""
    coef = plat.raw["energy"]
    geo = _geometry(plat)
    scale = {"pJ": 1e-12, "W": 1.0}
    return {k: coef[k] * scale[k.rsplit("_", 1)[1]] * amount(ev, geo) for k, (_, _, amount) in KEYS.items()}


def price(ev: dict, plat) -> dict:
    """Energy of the events in joules: the total, the five parts (COLUMNS) and every term."""
    t = terms(ev, plat)
    parts = dict.fromkeys(CATEGORIES, 0.0)
    for k, j in t.items():
        parts[KEYS[k][0]] += j
    out = {"energy_J": sum(parts.values()), **{f"energy_{c}_J": parts[c] for c in CATEGORIES},
           "seconds": ev["cycles"] / plat.clock_hz}
    out["terms_J"] = t
    return out


def row_fields(ev: dict | None, plat) -> dict:
    """The energy columns of a result row (None where no events were recorded)."""
    if ev is None:
        return dict.fromkeys(COLUMNS)
    p = price(ev, plat)
    return {c: p[c] for c in COLUMNS}


def report(counts: dict, plat, windows: int | None = None) -> dict:
    """What `run --json` shows for a run or a window: events, energy, breakdown and terms."""
    ev = events(counts)
    out = price(ev, plat)
    if windows is not None:
        out["windows"] = windows
    out["events"] = ev
    if "l1_bank_reads" in counts:   # not priced apart: what a cross-check needs to count another model's way
        out["l1_bank_accesses"] = {"reads": list(counts["l1_bank_reads"]), "writes": list(counts["l1_bank_writes"])}
    return out


def joules(x: float) -> str:
    """A human-readable energy: 3 significant digits and an SI prefix."""
    if x == 0:
        return "0 J"
    for unit, f in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12)):
        if abs(x) >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x / 1e-12:.3g} pJ"


def summary(rep: dict) -> str:
    """One line of a report: the total and its parts."""
    parts = ", ".join(f"{c} {joules(rep[f'energy_{c}_J'])}" for c in CATEGORIES)
    return f"{joules(rep['energy_J'])} ({parts})"
