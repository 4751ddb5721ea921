"""Result tables of an experiment: per-kernel rows, per-layer rows, and the latency table.

Latency of one point (platform, network, dataset, layer_id, p), from the CL schedule
(harness.schedule.task_schedule: how many times each (layer, step) runs in one task) and the
measured cycles of one run of each kernel (kernels_for). With n(name, step) the schedule's count,
c(name, step) the measured cycles and f the platform clock (docs/experiments.md has the full text):

    fw_frozen_task_s = sum over frozen layers     n(frozen_fw) c(fw at p=1)              / f
    fw_tail_task_s   = sum over trained layers    n(fw) c(fw)                            / f
    wg_task_s, ig_task_s, sgd_task_s  likewise over trained layers, steps wg, ig, update
    fw_task_s        = fw_frozen_task_s + fw_tail_task_s                 every forward kernel of a task
    update_task_s    = wg_task_s + ig_task_s + sgd_task_s (+ op backward) everything training adds
    total_task_s     = fw_task_s + update_task_s = harness.schedule.task_cycles / f
    bw_ms            = sum over trained layers of c(wg) + c(ig) (+ op backward), per sample, in ms
"""
from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from rich.table import Table

from harness import ROOT
from harness import platform as platmod
from harness.costmodel import training_cost
from harness.experiments.cache import sha256, write_atomic
from harness.experiments.execute import Outcome
from harness.experiments.plan import Plan, Point
from harness.memmodel import MB, place, training_memory
from harness.schedule import task_cycles, task_schedule

FORWARD = ("frozen_fw", "fw")
BACKWARD = ("wg", "ig", "bw")
LATENCY_COLUMNS = ["platform", "net", "dataset", "layer_id", "block", "p", "M_MB", "S_replay_MB", "bw_ms",
                   "fw_task_s", "update_task_s", "total_task_s", "fw_frozen_task_s", "fw_tail_task_s", "wg_task_s",
                   "ig_task_s", "ops_bw_task_s", "sgd_task_s", "bw_cycles_per_sample", "bw_macs_per_sample",
                   "bw_mac_per_cycle", "new_per_task", "tail_samples", "iterations", "clock_hz", "fits_memory",
                   "ops_measured"]


def peak_mac_per_cycle(platform) -> float:
    """The cluster's FP16 arithmetic limit: cores x 2 SIMD lanes x (FPUs per core), e.g. 16 on
    `paper` (8 private FPUs), 8 on `pulp-open` (4 FPUs shared by 8 cores)."""
    plat = platmod.load(platform) if isinstance(platform, str) else platform
    cores, fpus = plat.cluster["cores"], plat.cluster["fpus"]
    return cores * 2 * min(1.0, fpus / cores)


def _sum(rows: list[dict], key: str) -> int:
    return sum(r[key] for r in rows)


def point_cycles(point: Point, rows: dict) -> dict:
    """(name, step) -> cycles of one run of that schedule entry (its kernels' cycles added)."""
    return {(u.name, u.step): sum(rows[sp.name]["cycles"] for sp in u.specs) for u in point.uses}


def latency_row(point: Point, rows: dict) -> dict:
    plat = platmod.load(point.platform)
    clock = plat.clock_hz
    sched = task_schedule(point.cut, point.params)
    cycles = point_cycles(point, rows)
    ops = point.includes_ops
    parts = dict.fromkeys(("fw_frozen", "fw_tail", "wg", "ig", "ops_bw", "sgd"), 0)
    for k in sched.counts:
        if k.count == 0 or (not k.weight_layer and not ops):
            continue
        group = {"frozen_fw": "fw_frozen", "fw": "fw_tail", "update": "sgd", "bw": "ops_bw"}.get(k.step, k.step)
        parts[group] += k.count * cycles[(k.name, k.step)]
    total = task_cycles(sched, cycles, include_ops=ops)
    assert total == sum(parts.values()), (total, parts)
    bw_cycles = sum(c for (_, step), c in cycles.items() if step in BACKWARD)
    cost = training_cost(point.cut, point.p)
    mem = training_memory(point.cut, point.p, batch=point.params.batch, replays=point.params.replays)
    fits = place(mem, plat, point.params.new_per_task).fits_all
    s = {f"{g}_task_s": v / clock for g, v in parts.items()}
    fw = s["fw_frozen_task_s"] + s["fw_tail_task_s"]
    upd = s["wg_task_s"] + s["ig_task_s"] + s["ops_bw_task_s"] + s["sgd_task_s"]
    row = {"platform": point.platform, "net": point.net, "dataset": point.dataset, "layer_id": point.layer_id,
           "block": point.cut.first_block, "p": point.p, "M_MB": mem.M_bytes / MB,
           "S_replay_MB": mem.S_replay_bytes / MB, "bw_ms": bw_cycles / clock * 1e3, "fw_task_s": fw,
           "update_task_s": upd, "total_task_s": total / clock, **s, "bw_cycles_per_sample": bw_cycles,
           "bw_macs_per_sample": cost.macs_bw,
           "bw_mac_per_cycle": round(cost.macs_bw / bw_cycles, 4) if bw_cycles else 0.0,
           "new_per_task": point.params.new_per_task, "tail_samples": sched.tail_samples,
           "iterations": sched.iterations, "clock_hz": clock, "fits_memory": fits, "ops_measured": ops}
    return {c: row[c] for c in LATENCY_COLUMNS}


def _measured(rows: list[dict]) -> dict:
    """Measured fields of one schedule entry (one or more kernel runs, added up)."""
    out = {"cycles": _sum(rows, "cycles"), "compute_cycles": _sum(rows, "compute_cycles"),
           "dma_wait_cycles": _sum(rows, "dma_wait_cycles"), "overhead_cycles": _sum(rows, "overhead_cycles")}
    for r in rows:
        for k, v in r["stalls"].items():
            out[f"stall_{k}"] = out.get(f"stall_{k}", 0) + v
        for d in r["dmas"]:
            out[f"dma_{d['name']}_busy_cycles"] = out.get(f"dma_{d['name']}_busy_cycles", 0) + d["busy_cycles"]
            out[f"dma_{d['name']}_bytes"] = out.get(f"dma_{d['name']}_bytes", 0) + d["bytes"]
    return out


def layer_rows(point: Point, rows: dict) -> list[dict]:
    """One row per schedule entry the point runs: kernel(s), count, measured cycles and their split,
    kernel MACs next to the cost model's MACs, and the entry's share of the task."""
    clock = platmod.load(point.platform).clock_hz
    sched = task_schedule(point.cut, point.params)
    model = {c.layer.name: c for c in training_cost(point.cut, point.p).layers}
    out = []
    for u in point.uses:
        runs = [rows[sp.name] for sp in u.specs]
        count = sched.count(u.name, u.step)
        m = _measured(runs) if runs else {"cycles": 0}
        macs = sum(sp.macs() for sp in u.specs)
        lc = model.get(u.name)
        model_macs = None
        if lc is not None:
            model_macs = {"frozen_fw": lc.fw, "fw": lc.fw, "wg": lc.wg, "ig": lc.ig, "update": 0}[u.step]
        out.append({"platform": point.platform, "net": point.net, "dataset": point.dataset,
                    "layer_id": point.layer_id, "p": point.p, "name": u.name,
                    "block": u.layer.block if u.layer else "", "layer_kind": u.layer.kind if u.layer else "op",
                    "step": u.step, "kernel": "+".join(sp.name for sp in u.specs), "count": count,
                    "macs": macs, "model_macs": model_macs,
                    "mac_per_cycle": round(macs / m["cycles"], 4) if m["cycles"] else 0.0, **m,
                    "task_cycles": count * m["cycles"], "task_s": count * m["cycles"] / clock})
    return out


def kernel_rows(plan: Plan, outcome: Outcome) -> list[dict]:
    """One row per unique kernel run: the measured figures, flattened, and their provenance."""
    out = []
    peaks = {}
    for name, sp in plan.specs.items():
        r = outcome.rows.get(name)
        if r is None:
            continue
        peak = peaks.setdefault(sp.platform, peak_mac_per_cycle(sp.platform))
        prov = outcome.provenance.get(name, {})
        out.append({"kernel": name, "platform": sp.platform, "kind": sp.kind, "step": sp.step, "cin": sp.cin,
                    "cout": sp.cout, "h": sp.h, "w": sp.w, "k": sp.k, "stride": sp.stride, "p_in": sp.p_in,
                    "p_out": sp.p_out, "k_in": r["k_in"], "k_out": r["k_out"], "macs": r["macs"],
                    **_measured([r]), "mac_per_cycle": r["mac_per_cycle"], "peak_mac_per_cycle": peak,
                    "efficiency": round(r["mac_per_cycle"] / peak, 4), "tiles": r["tiles"], "l1_bytes": r["l1_bytes"],
                    "instructions": r["instructions"], "max_abs_err": r["max_abs_err"], "ok": r["ok"],
                    **{k: prov.get(k, r.get(k)) for k in ("source_sha256", "toolchain", "platform_sha256",
                                                           "simulator", "backend", "runtime_sha256")}})
    return out


def write_csv(df: pd.DataFrame, path: Path) -> None:
    write_atomic(path, df.to_csv(index=False, lineterminator="\n"))


def _git() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def metadata(plan: Plan, outcome: Outcome, files: list[str]) -> dict:
    exp = plan.experiment
    provs = list(outcome.provenance.values())
    slowest = sorted(outcome.seconds.items(), key=lambda kv: -kv[1])[:15]
    doc = {
        "experiment": exp.name, "kind": exp.kind, "description": exp.description,
        "file": _rel(exp.path), "file_sha256": sha256(exp.path.read_text()),
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "git": _git(),
        "platforms": [{"name": p, "sha256": platmod.load(p).sha256, "clock_hz": platmod.load(p).clock_hz,
                       "cores": platmod.load(p).cluster["cores"], "fpus": platmod.load(p).cluster["fpus"],
                       "peak_mac_per_cycle": peak_mac_per_cycle(p)} for p in exp.platforms],
        "provenance": {k: sorted({str(pv.get(k)) for pv in provs})
                       for k in ("toolchain", "simulator", "backend", "platform_sha256", "runtime_sha256",
                                 "build_flags")},
        "kernels": {"unique": len(plan.specs), "cached": outcome.cached, "ran": outcome.ran,
                    "errors": len(outcome.errors)},
        "jobs": outcome.jobs, "wall_seconds": round(outcome.wall, 2),
        "slowest_runs_s": {k: round(v, 2) for k, v in slowest}, "files": files,
    }
    if plan.points:
        doc["cl_params"] = {f"{pt.net}/{pt.dataset}": dict(pt.params.__dict__) for pt in plan.points}
        doc["ops_measured"] = any(pt.includes_ops for pt in plan.points)
    return doc


def write_results(plan: Plan, outcome: Outcome, outdir: Path) -> dict:
    """latency.csv, layers.csv (latency experiments), kernels.csv and meta.json in outdir.
    Returns the DataFrames by file stem."""
    outdir = Path(outdir)
    frames = {"kernels": pd.DataFrame(kernel_rows(plan, outcome))}
    if plan.points:
        frames["latency"] = pd.DataFrame([latency_row(pt, outcome.rows) for pt in plan.points],
                                         columns=LATENCY_COLUMNS)
        frames["layers"] = pd.DataFrame([r for pt in plan.points for r in layer_rows(pt, outcome.rows)])
    for stem, df in frames.items():
        write_csv(df, outdir / f"{stem}.csv")
    files = [f"{stem}.csv" for stem in frames] + ["meta.json"]
    write_atomic(outdir / "meta.json", json.dumps(metadata(plan, outcome, files), indent=2) + "\n")
    return frames


# ---- terminal tables ----

def latency_table(df: pd.DataFrame, title: str) -> Table:
    t = Table(title=title)
    for col, head in (("platform", "platform"), ("net", "net"), ("dataset", "dataset"), ("layer_id", "layer"),
                      ("p", "p"), ("M_MB", "M MB"), ("S_replay_MB", "S_replay MB"), ("bw_ms", "bw ms/sample"),
                      ("fw_task_s", "fw s/task"), ("update_task_s", "update s/task"), ("total_task_s", "total s/task")):
        t.add_column(head, justify="left" if col in ("platform", "net", "dataset") else "right")
    for r in df.itertuples():
        t.add_row(r.platform, r.net, r.dataset, str(r.layer_id), f"{r.p:g}", f"{r.M_MB:.3f}", f"{r.S_replay_MB:.3f}",
                  f"{r.bw_ms:.3f}", f"{r.fw_task_s:.2f}", f"{r.update_task_s:.2f}", f"{r.total_task_s:.2f}")
    return t


def kernel_table(df: pd.DataFrame, title: str) -> Table:
    t = Table(title=title)
    for head in ("kernel", "cycles", "MACs", "MAC/cycle", "of peak", "DMA wait", "overhead", "tiles", "top stall"):
        t.add_column(head, justify="left" if head in ("kernel", "top stall") else "right")
    stall_cols = [c for c in df.columns if c.startswith("stall_") and c != "stall_wait"]  # wait = idle cores
    for r in df.to_dict("records"):
        top = max(stall_cols, key=lambda c: r[c]) if stall_cols else None
        t.add_row(r["kernel"], f"{r['cycles']:,}", f"{r['macs']:,}", f"{r['mac_per_cycle']:.2f}",
                  f"{100 * r['efficiency']:.0f}%", f"{r['dma_wait_cycles']:,}", f"{r['overhead_cycles']:,}",
                  str(r["tiles"]), f"{top[6:]} {r[top]:,}" if top else "")
    return t
