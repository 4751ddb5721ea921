"""Latency experiments on deployed training steps (harness.deploy): points, their stage programs,
and the rows of latency.csv, layers.csv and kernels.csv.

A point (platform, network, dataset, layer_id, p, placement) becomes its step's memory plan and one
stage job per (stage, variant); a task's latency is the sum over stages of runs per task
(harness.deploy.task.task_counts) x the stage's measured cycles, at the platform clock.
docs/experiments.md defines every column.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness import energy
from harness import platform as platmod
from harness.costmodel import training_cost
from harness.deploy import task as taskmod
from harness.deploy.memplan import MemoryPlan
from harness.deploy.runner import Point as DeployPoint, StageJob, check_fits_in_parallel, stage_jobs
from harness.experiments.spec import Experiment, Sweep
from harness.memmodel import MB, training_memory
from harness.nets import Cut
from harness.schedule import CLParams

LATENCY_COLUMNS = ["platform", "net", "dataset", "layer_id", "block", "p", "deployment", "placement", "M_MB",
                   "S_replay_MB", "bw_ms", "fw_task_s", "update_task_s", "total_task_s", "bw_energy_J", "task_energy_J",
                   *(f"task_energy_{c}_J" for c in energy.CATEGORIES), "fw_frozen_task_s",
                   "latents_task_s", "fw_tail_task_s", "wg_task_s", "ig_task_s", "ops_bw_task_s", "sgd_task_s",
                   "compute_task_s", "dma_wait_task_s", "ext_wait_task_s", "overhead_task_s", "bw_cycles_per_batch",
                   "bw_compute_cycles", "bw_dma_wait_cycles", "bw_ext_wait_cycles", "bw_overhead_cycles",
                   "bw_macs_per_sample", "bw_mac_per_cycle", "step_cycles", "batch", "chunk_frozen", "chunk_frozen_deep", "deep_from", "chunk_tail",
                   "l2_plan_KiB", "ram_KiB", "flash_KiB", "new_per_task", "iterations", "clock_hz", "fits_memory"]


@dataclass(frozen=True)
class DeployedPoint:
    platform: str
    sweep: Sweep
    dataset: str
    layer_id: int
    p: float
    placement: str
    cut: Cut
    params: CLParams
    plan: MemoryPlan
    jobs: tuple[StageJob, ...]

    @property
    def net(self) -> str:
        return self.sweep.label

    includes_ops = True

    def job(self, stage: str, variant: str) -> StageJob:
        return next(j for j in self.jobs if j.stage == stage and j.variant == variant)


def points(exp: Experiment, jobs: int = 1) -> list[DeployedPoint]:
    """The experiment's points, each planned with its stage jobs; the plans' code checks that are not
    remembered are built by `jobs` processes first (runner.check_fits_in_parallel)."""
    todo = [(platform, sw, dataset, layer_id, p, placement,
             DeployPoint(sw.net, dataset, layer_id, p, platform, placement, tuple(sorted(sw.network.items())),
                         tuple(sorted(sw.cl.items())), weights=sw.weights))
            for platform in exp.platforms for sw in exp.sweeps for dataset in sw.datasets
            for layer_id in sw.layer_ids for p in sw.p for placement in exp.placements]
    check_fits_in_parallel([t[-1] for t in todo], jobs)
    out = []
    for platform, sw, dataset, layer_id, p, placement, dp in todo:
        plan, stage_jobs_ = stage_jobs(dp)
        out.append(DeployedPoint(platform, sw, dataset, layer_id, p, placement, plan.step.cut, plan.step.params, plan,
                                 tuple(stage_jobs_)))
    return out


def complete(pt: DeployedPoint, rows: dict) -> bool:
    return all(j.name in rows for j in pt.jobs)


def _measured(rows: list[dict]) -> dict:
    keys = ("cycles", "compute_cycles", "dma_wait_cycles", "ext_wait_cycles", "overhead_cycles")
    return {k: sum(r[k] for r in rows) for k in keys}


def latency_row(pt: DeployedPoint, rows: dict) -> dict:
    step = pt.plan.step
    clock = platmod.load(pt.platform).clock_hz
    from harness.experiments.tables import priced, task_energy
    counts = taskmod.task_counts(step)
    parts = dict.fromkeys(taskmod.GROUPS, 0)
    split = dict.fromkeys(("compute_cycles", "dma_wait_cycles", "ext_wait_cycles", "overhead_cycles"), 0)
    energies = []
    for (name, variant), n in counts.items():
        r = rows[pt.job(name, variant).name]
        energies.append((n, priced(r)))
        parts[taskmod.group(taskmod.stage_of(step, name))] += n * r["cycles"]
        for k in split:
            split[k] += n * r[k]
    bw = dict.fromkeys(("cycles", "compute_cycles", "dma_wait_cycles", "ext_wait_cycles", "overhead_cycles"), 0)
    step_cycles = 0
    bw_energy = []
    for (name, variant), n in taskmod.step_counts(step).items():
        r = rows[pt.job(name, variant).name]
        step_cycles += n * r["cycles"]
        if taskmod.group(step.stage(name)) in taskmod.BACKWARD:
            for k in bw:
                bw[k] += n * r[k]
            bw_energy.append((n, priced(r)))
    cost = training_cost(pt.cut, pt.p)
    mem = training_memory(pt.cut, pt.p, batch=pt.params.batch, replays=pt.params.replays)
    fits = not pt.plan.fits()    # the deployed plan: L2 by construction, external memories checked here
    s = {f"{g}_task_s": v / clock for g, v in parts.items()}
    fw = s["fw_frozen_task_s"] + s["latents_task_s"] + s["fw_tail_task_s"]
    upd = s["wg_task_s"] + s["ig_task_s"] + s["ops_bw_task_s"] + s["sgd_task_s"]
    batch = pt.params.batch
    ext = pt.plan.external_bytes
    row = {"platform": pt.platform, "net": pt.net, "dataset": pt.dataset, "layer_id": pt.layer_id,
           "block": pt.cut.first_block, "p": pt.p, "deployment": "deployed", "placement": pt.placement,
           "M_MB": mem.M_bytes / MB, "S_replay_MB": mem.S_replay_bytes / MB,
           "bw_ms": bw["cycles"] / batch / clock * 1e3, "fw_task_s": fw, "update_task_s": upd,
           "total_task_s": sum(parts.values()) / clock, **task_energy(energies),
           "bw_energy_J": _per_sample(task_energy(bw_energy)["task_energy_J"], batch), **s,
           "compute_task_s": split["compute_cycles"] / clock, "dma_wait_task_s": split["dma_wait_cycles"] / clock,
           "ext_wait_task_s": split["ext_wait_cycles"] / clock, "overhead_task_s": split["overhead_cycles"] / clock,
           "bw_cycles_per_batch": bw["cycles"], "bw_compute_cycles": bw["compute_cycles"],
           "bw_dma_wait_cycles": bw["dma_wait_cycles"], "bw_ext_wait_cycles": bw["ext_wait_cycles"],
           "bw_overhead_cycles": bw["overhead_cycles"], "bw_macs_per_sample": cost.macs_bw,
           "bw_mac_per_cycle": round(batch * cost.macs_bw / bw["cycles"], 4) if bw["cycles"] else 0.0,
           "step_cycles": step_cycles, "batch": batch, "chunk_frozen": step.n_f, "chunk_frozen_deep": step.n_f2,
           "deep_from": step.deep_from, "chunk_tail": step.n_t,
           "l2_plan_KiB": round(pt.plan.arena / 1024, 1), "ram_KiB": round(ext.get("hyperram", 0) / 1024, 1),
           "flash_KiB": round(ext.get("flash", 0) / 1024, 1), "new_per_task": pt.params.new_per_task,
           "iterations": taskmod.iterations(step), "clock_hz": clock, "fits_memory": bool(fits)}
    return {c: row[c] for c in LATENCY_COLUMNS}


def _per_sample(joules, batch: int):
    return None if joules is None else joules / batch


def layer_rows(pt: DeployedPoint, rows: dict) -> list[dict]:
    """One row per (stage, variant) of the point: runs per task, measured cycles and their split."""
    from harness.experiments.tables import priced
    step = pt.plan.step
    clock = platmod.load(pt.platform).clock_hz
    model = {c.layer.name: c for c in training_cost(pt.cut, pt.p).layers}
    out = []
    for (name, variant), count in taskmod.task_counts(step).items():
        st = taskmod.stage_of(step, name)
        job = pt.job(name, variant)
        r = rows[job.name]
        lay = st.layer
        e = priced(r)
        model_macs = None
        if lay is not None and lay.name in model:
            lc = model[lay.name]
            per = {"frozen": lc.fw, "fw": lc.fw}.get(st.phase)
            if st.kind in ("mm_wg", "dw_wg"):
                per = lc.wg
            elif st.kind in ("mm_ig", "dw_ig"):
                per = lc.ig
            elif st.kind in ("sgd", "im2col", "wg_cols", "ig_cols", "ig_wt"):
                per = 0
            ns = {"chunk_f": step.n_f, "chunk_t": step.n_t}.get(st.repeat, 1)
            model_macs = None if per is None else per * ns
        out.append({"platform": pt.platform, "net": pt.net, "dataset": pt.dataset, "layer_id": pt.layer_id,
                    "p": pt.p, "placement": pt.placement, "name": name, "variant": variant,
                    "block": lay.block if lay else "", "layer_kind": lay.kind if lay else "op", "step": st.kind,
                    "group": taskmod.group(st), "kernel": job.name, "count": count, "macs": r["macs"],
                    "model_macs": model_macs, "mac_per_cycle": r["mac_per_cycle"], "cycles": r["cycles"],
                    "compute_cycles": r["compute_cycles"], "dma_wait_cycles": r["dma_wait_cycles"],
                    "ext_wait_cycles": r["ext_wait_cycles"], "overhead_cycles": r["overhead_cycles"],
                    "fused": "; ".join(st.fused), "task_cycles": count * r["cycles"],
                    "task_s": count * r["cycles"] / clock, **e,
                    "task_energy_J": None if e["energy_J"] is None else count * e["energy_J"]})
    return out


def plan_rows(pt: DeployedPoint) -> list[dict]:
    """plans.csv: every tensor of the point's memory plan, its home, bytes and lifetime."""
    key = {"platform": pt.platform, "net": pt.net, "dataset": pt.dataset, "layer_id": pt.layer_id, "p": pt.p,
           "placement": pt.placement}
    return [{**key, **r} for r in pt.plan.rows()]


def step_of(kind: str) -> str:
    """The training step a stage kind computes, in the kernels' names: mm_fw -> fw, dw_wg -> wg, the
    operator backwards (gap_bw, scale_bw) -> ig, sgd -> update, latents -> latents."""
    if kind == "sgd":
        return "update"
    tail = kind.rsplit("_", 1)[-1]
    return {"bw": "ig"}.get(tail, tail)


def job_rows(jobs: dict, outcome) -> list[dict]:
    """kernels.csv of a deployed experiment: one row per stage program."""
    from harness.experiments.tables import peak_mac_per_cycle, priced
    out = []
    peaks = {}
    for name, job in jobs.items():
        r = outcome.rows.get(name)
        if r is None:
            continue
        prov = outcome.provenance.get(name, {})
        peak = peaks.setdefault(job.platform, peak_mac_per_cycle(job.platform))
        out.append({"kernel": name, "platform": job.platform, "stage": r["stage"], "variant": r["variant"],
                    "step": step_of(r["kind"]),
                    "peak_mac_per_cycle": peak,
                    "kind": r["kind"], "macs": r["macs"], "cycles": r["cycles"], "compute_cycles": r["compute_cycles"],
                    "dma_wait_cycles": r["dma_wait_cycles"], "ext_wait_cycles": r["ext_wait_cycles"],
                    "overhead_cycles": r["overhead_cycles"], "mac_per_cycle": r["mac_per_cycle"],
                    "l1_bytes": r["l1_bytes"], "l2_bytes": r["l2_bytes"], "total_cycles": r["total_cycles"],
                    "instructions": r["instructions"], **priced(r), "err_over_tol": r["err_over_tol"], "ok": r["ok"],
                    **{f"stall_{k}": v for k, v in r["stalls"].items()},
                    **{k: prov.get(k, r.get(k)) for k in ("source_sha256", "toolchain", "platform_sha256", "simulator",
                                                           "backend", "runtime_sha256")}})
    return out


__all__ = ["DeployedPoint", "points", "complete", "latency_row", "layer_rows", "job_rows", "plan_rows",
           "LATENCY_COLUMNS"]
