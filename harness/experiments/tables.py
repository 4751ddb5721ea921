"""Result tables of an experiment: per-kernel rows, per-layer rows, and the latency table.

Latency of one point (platform, network, dataset, layer_id, p): every KernelUse of the point
(harness.experiments.plan.kernels_for) adds n x c to its group, with n the count of its schedule
entry in one CL task (harness.schedule.task_schedule) and c the measured cycles of one run of its
kernel(s); f is the platform clock. docs/experiments.md has the full definitions:

    fw_frozen_task_s   frozen layers' forward (+ their activations, frozen ops)      n = new samples
    fw_tail_task_s     trained layers' forward (+ activations, ops)                  n = E T
    wg_task_s, ig_task_s, sgd_task_s   trained layers' wg, ig (n = E T), update (n = E I)
    ops_bw_task_s      backward of activations and ops, the loss gradient            n = E T
    fw_task_s = fw_frozen + fw_tail;  update_task_s = wg + ig + ops_bw + sgd;  total = both
    bw_ms              per sample: c summed over the wg, ig and ops_bw uses, in ms

The weight layers' share is checked against harness.schedule.task_cycles on every row.
"""
from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from rich.table import Table

from harness import ROOT, energy
from harness import platform as platmod
from harness.costmodel import training_cost
from harness.experiments import deployed
from harness.experiments.cache import sha256, write_atomic
from harness.experiments.execute import Outcome
from harness.experiments.plan import GROUPS, Plan, Point
from harness.memmodel import MB, place, training_memory
from harness.schedule import task_cycles, task_schedule

BACKWARD = ("wg", "ig", "ops_bw")      # the groups a sample's backward pass runs
LATENCY_COLUMNS = ["platform", "net", "dataset", "layer_id", "block", "p", "M_MB", "S_replay_MB", "bw_ms",
                   "fw_task_s", "update_task_s", "total_task_s", "bw_energy_J", "task_energy_J",
                   *(f"task_energy_{c}_J" for c in energy.CATEGORIES), "fw_frozen_task_s", "fw_tail_task_s", "wg_task_s",
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


def priced(r: dict) -> dict:
    """The energy columns of a result row, priced with its platform's coefficients as they are now
    (rows record event counts; harness.energy)."""
    return energy.row_fields(r.get("energy_events"), platmod.load(r["platform"]))


def task_energy(parts: list[tuple[int, dict]]) -> dict:
    """sum of n x the energy columns of a row, over (n, priced row): the task's energy and its
    breakdown, as task_energy_J and task_energy_<part>_J (None if a row has no energy)."""
    out = dict.fromkeys(["task_energy_J", *(f"task_energy_{c}_J" for c in energy.CATEGORIES)], 0.0)
    for n, e in parts:
        if e["energy_J"] is None:
            return dict.fromkeys(out)
        out["task_energy_J"] += n * e["energy_J"]
        for c in energy.CATEGORIES:
            out[f"task_energy_{c}_J"] += n * e[f"energy_{c}_J"]
    return out


def _counts(sched) -> dict:
    return {(k.name, k.step): k.count for k in sched.counts}


def complete(point, rows: dict) -> bool:
    """Every kernel (or stage program) of the point has a good row."""
    if _deployed(point):
        return deployed.complete(point, rows)
    return all(sp.name in rows for u in point.uses for sp in u.specs)


def _deployed(point) -> bool:
    return isinstance(point, deployed.DeployedPoint)


def point_label(point) -> str:
    where = f"/{point.placement}" if _deployed(point) else ""
    return f"{point.platform}/{point.net}/{point.dataset}/layer_id {point.layer_id}/p {point.p:g}{where}"


def latency_row(point: Point, rows: dict) -> dict:
    plat = platmod.load(point.platform)
    clock = plat.clock_hz
    sched = task_schedule(point.cut, point.params)
    counts = _counts(sched)
    parts = dict.fromkeys(GROUPS, 0)
    weight_cycles, weight_total, bw_cycles = {}, 0, 0
    uses_energy, bw_energy = [], 0.0
    for u in point.uses:
        c = sum(rows[sp.name]["cycles"] for sp in u.specs)
        n = counts[u.count_of]
        parts[u.group] += n * c
        for sp in u.specs:
            e = priced(rows[sp.name])
            uses_energy.append((n, e))
            if n and u.group in BACKWARD:
                bw_energy = None if bw_energy is None or e["energy_J"] is None else bw_energy + e["energy_J"]
        if n and u.group in BACKWARD:
            bw_cycles += c
        if u.weight_layer:
            weight_cycles[(u.name, u.step)] = c
            weight_total += n * c
    # The weight layers' part must be what the schedule itself sums (same counts, nothing missed).
    assert weight_total == task_cycles(sched, weight_cycles), (point.net, point.layer_id, point.p)
    cost = training_cost(point.cut, point.p)
    mem = training_memory(point.cut, point.p, batch=point.params.batch, replays=point.params.replays)
    fits = place(mem, plat, point.params.new_per_task).fits_all
    s = {f"{g}_task_s": v / clock for g, v in parts.items()}
    fw = s["fw_frozen_task_s"] + s["fw_tail_task_s"]
    upd = s["wg_task_s"] + s["ig_task_s"] + s["ops_bw_task_s"] + s["sgd_task_s"]
    row = {"platform": point.platform, "net": point.net, "dataset": point.dataset, "layer_id": point.layer_id,
           "block": point.cut.first_block, "p": point.p, "M_MB": mem.M_bytes / MB,
           "S_replay_MB": mem.S_replay_bytes / MB, "bw_ms": bw_cycles / clock * 1e3, "fw_task_s": fw,
           "update_task_s": upd, "total_task_s": sum(parts.values()) / clock, "bw_energy_J": bw_energy,
           **task_energy(uses_energy), **s, "bw_cycles_per_sample": bw_cycles,
           "bw_macs_per_sample": cost.macs_bw,
           "bw_mac_per_cycle": round(cost.macs_bw / bw_cycles, 4) if bw_cycles else 0.0,
           "new_per_task": point.params.new_per_task, "tail_samples": sched.tail_samples,
           "iterations": sched.iterations, "clock_hz": clock, "fits_memory": fits, "ops_measured": point.includes_ops}
    return {c: row[c] for c in LATENCY_COLUMNS}


def _measured(rows: list[dict]) -> dict:
    """Measured fields of one schedule entry (one or more kernel runs, added up)."""
    if not rows:
        return {"cycles": 0}
    out = {"cycles": _sum(rows, "cycles"), "compute_cycles": _sum(rows, "compute_cycles"),
           "dma_wait_cycles": _sum(rows, "dma_wait_cycles"), "overhead_cycles": _sum(rows, "overhead_cycles")}
    out.update({k.replace("task_energy", "energy"): v for k, v in task_energy([(1, priced(r)) for r in rows]).items()})
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
    counts = _counts(task_schedule(point.cut, point.params))
    model = {c.layer.name: c for c in training_cost(point.cut, point.p).layers}
    out = []
    for u in point.uses:
        runs = [rows[sp.name] for sp in u.specs]
        count = counts[u.count_of]
        m = _measured(runs)
        macs = sum(sp.macs() for sp in u.specs)
        model_macs = None
        if u.weight_layer:
            lc = model[u.name]
            model_macs = {"frozen_fw": lc.fw, "fw": lc.fw, "wg": lc.wg, "ig": lc.ig, "update": 0}[u.step]
        out.append({"platform": point.platform, "net": point.net, "dataset": point.dataset,
                    "layer_id": point.layer_id, "p": point.p, "name": u.name,
                    "block": u.layer.block if u.layer else "", "layer_kind": u.layer.kind if u.layer else "op",
                    "step": u.step, "group": u.group, "kernel": "+".join(sp.name for sp in u.specs), "count": count,
                    "macs": macs, "model_macs": model_macs,
                    "mac_per_cycle": round(macs / m["cycles"], 4) if m["cycles"] else 0.0, **m,
                    "task_cycles": count * m["cycles"], "task_s": count * m["cycles"] / clock,
                    "task_energy_J": None if m.get("energy_J") is None else count * m["energy_J"]})
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
                    "total_cycles": r["total_cycles"], "instructions": r["instructions"],
                    "cluster_instructions": r.get("cluster_instructions"),
                    **{f"cluster_stall_{k}": v for k, v in (r.get("cluster_stalls") or {}).items()},
                    "max_abs_err": r["max_abs_err"], "ok": r["ok"],
                    **{k: prov.get(k, r.get(k)) for k in ("source_sha256", "toolchain", "platform_sha256",
                                                           "simulator", "backend", "runtime_sha256")}})
    return out


def write_csv(df: pd.DataFrame, path: Path) -> None:
    write_atomic(path, df.to_csv(index=False, lineterminator="\n"))


def _rounded(host: dict) -> dict:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in host.items()}


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
        "platforms": [{"name": plat.name, "sha256": plat.sha256, "clock_hz": plat.clock_hz,
                       "cores": plat.cluster["cores"], "fpus": plat.cluster["fpus"],
                       "peak_mac_per_cycle": peak_mac_per_cycle(plat)}
                      for plat in map(platmod.load, exp.platforms)],
        "provenance": {k: sorted({str(pv.get(k)) for pv in provs})
                       for k in ("toolchain", "simulator", "backend", "platform_sha256", "runtime_sha256",
                                 "build_flags")},
        "kernels": {"unique": len(plan.specs), "cached": outcome.cached, "ran": outcome.ran,
                    "errors": len(outcome.errors)},
        "jobs": outcome.jobs, "executor": outcome.executor, "wall_seconds": round(outcome.wall, 2),
        "host_seconds": _rounded(outcome.total_host()), "host_seconds_planning": _rounded(outcome.planning),
        "host_seconds_runs": _rounded(outcome.host),
        "slowest_runs_s": {k: round(v, 2) for k, v in slowest}, "files": files,
    }
    if outcome.errors:
        doc["errors"] = dict(sorted(outcome.errors.items()))
    if plan.points:
        doc["incomplete_points"] = [point_label(pt) for pt in plan.points if not complete(pt, outcome.rows)]
        doc["cl_params"] = {f"{pt.net}/{pt.dataset}": dict(pt.params.__dict__) for pt in plan.points}
        doc["deployment"] = exp.deployment
        if exp.deployment == "deployed":
            doc["placements"] = list(exp.placements)
            doc["fusion"] = sorted({note for pt in plan.points for note in pt.plan.step.notes})
        doc["ops_measured"] = any(pt.includes_ops for pt in plan.points)
        models = {sw.label: {"path": sw.net, "sha256": pt.cut.network.config["sha256"], "weights": sw.weights}
                  for pt in plan.points for sw in (pt.sweep,) if "sha256" in pt.cut.network.config}
        if models:
            doc["onnx_models"] = models     # the imported models the rows were measured on
    return doc


def write_results(plan: Plan, outcome: Outcome, outdir: Path) -> dict:
    """latency.csv, layers.csv (latency experiments), kernels.csv and meta.json in outdir.
    Points with a failed kernel are left out of the tables and listed in meta.json.
    Returns the DataFrames by file stem."""
    outdir = Path(outdir)
    if plan.points and _deployed(plan.points[0]):
        frames = {"kernels": pd.DataFrame(deployed.job_rows(plan.specs, outcome))}
        pts = [pt for pt in plan.points if complete(pt, outcome.rows)]
        frames["latency"] = pd.DataFrame([deployed.latency_row(pt, outcome.rows) for pt in pts],
                                         columns=deployed.LATENCY_COLUMNS)
        frames["layers"] = pd.DataFrame([r for pt in pts for r in deployed.layer_rows(pt, outcome.rows)])
        frames["plans"] = pd.DataFrame([r for pt in pts for r in deployed.plan_rows(pt)])
    else:
        frames = {"kernels": pd.DataFrame(kernel_rows(plan, outcome))}
    if plan.points and not _deployed(plan.points[0]):
        pts = [pt for pt in plan.points if complete(pt, outcome.rows)]
        frames["latency"] = pd.DataFrame([latency_row(pt, outcome.rows) for pt in pts], columns=LATENCY_COLUMNS)
        frames["layers"] = pd.DataFrame([r for pt in pts for r in layer_rows(pt, outcome.rows)])
    for stem, df in frames.items():
        write_csv(df, outdir / f"{stem}.csv")
    files = [f"{stem}.csv" for stem in frames] + ["meta.json"]
    write_atomic(outdir / "meta.json", json.dumps(metadata(plan, outcome, files), indent=2) + "\n")
    return frames


# ---- terminal tables ----

def latency_table(df: pd.DataFrame, title: str, isolated: pd.DataFrame | None = None) -> Table:
    """The latency table as printed: deployed rows add their placement and the backward step's MAC/cycle,
    and the isolated composition's total per task beside their own when `isolated` holds it."""
    cols = [("platform", "platform"), ("net", "net"), ("dataset", "dataset"), ("layer_id", "layer"), ("p", "p")]
    if "placement" in df.columns:
        cols.append(("placement", "placement"))
    cols += [("M_MB", "M MB"), ("S_replay_MB", "S_replay MB"), ("bw_ms", "bw ms/sample")]
    if "bw_mac_per_cycle" in df.columns:
        cols.append(("bw_mac_per_cycle", "bw MAC/cycle"))
    cols += [("fw_task_s", "fw s/task"), ("update_task_s", "update s/task"), ("total_task_s", "total s/task")]
    if "task_energy_J" in df.columns:
        cols += [("bw_energy_mJ", "bw mJ/sample"), ("task_energy_J", "J/task")]
        df = df.assign(bw_energy_mJ=df["bw_energy_J"] * 1e3)
    key = ["platform", "net", "dataset", "layer_id", "p"]
    if isolated is not None and not isolated.empty and "placement" in df.columns:
        iso = isolated[key + ["total_task_s"]].rename(columns={"total_task_s": "isolated_task_s"})
        df = df.merge(iso.drop_duplicates(key), on=key, how="left")
        cols.append(("isolated_task_s", "isolated s/task"))
    text = {"platform", "net", "dataset", "placement"}
    fmt = {"layer_id": "{:d}", "p": "{:g}", "M_MB": "{:.3f}", "S_replay_MB": "{:.3f}", "bw_ms": "{:.3f}",
           "bw_mac_per_cycle": "{:.2f}", "bw_energy_mJ": "{:.3f}", "task_energy_J": "{:.3f}"}
    t = Table(title=title)
    for col, head in cols:
        t.add_column(head, justify="left" if col in text else "right")
    for r in df.to_dict("records"):
        cells = []
        for col, _ in cols:
            v = r[col]
            if col in text:
                cells.append(str(v))
            elif pd.isna(v):
                cells.append("-")
            else:
                cells.append(fmt.get(col, "{:.2f}").format(int(v) if col == "layer_id" else v))
        t.add_row(*cells)
    return t


def headline(df: pd.DataFrame) -> list[str]:
    """Lines on a latency table: training memory, latency per task, the backward step's MAC/cycle and,
    where measured, energy per task, each from its smallest to its largest point."""
    if df.empty:
        return ["memory: no point complete", "latency per task: no point complete", "backward MAC/cycle: -"]
    vary = [c for c in ("platform", "net", "dataset", "placement") if c in df.columns and df[c].nunique() > 1]

    def who(r) -> str:
        return ", ".join([str(r[c]) for c in vary] + [f"layer_id {int(r['layer_id'])}", f"p {r['p']:g}"])

    def span(col: str, fmt: str) -> str:
        lo, hi = df.loc[df[col].idxmin()], df.loc[df[col].idxmax()]
        if lo[col] == hi[col]:
            return f"{fmt.format(lo[col])} (every point)"
        return f"{fmt.format(lo[col])} ({who(lo)}) to {fmt.format(hi[col])} ({who(hi)})"

    clocks = sorted({int(c) for c in df.clock_hz}) if "clock_hz" in df.columns else []
    at = f" at {', '.join(f'{c / 1e6:g} MHz' for c in clocks)}" if clocks else ""
    lines = [f"memory: training memory M {span('M_MB', '{:.3f} MB')}; replay buffer "
             f"{df.S_replay_MB.min():.2f} to {df.S_replay_MB.max():.2f} MB",
             f"latency per task: {span('total_task_s', '{:.2f} s')}{at} (forward {df.fw_task_s.min():.2f} to "
             f"{df.fw_task_s.max():.2f} s, update {df.update_task_s.min():.2f} to {df.update_task_s.max():.2f} s)"]
    if "bw_mac_per_cycle" in df.columns:
        peaks = sorted({peak_mac_per_cycle(p) for p in df.platform})
        lines.append(f"backward MAC/cycle: {span('bw_mac_per_cycle', '{:.2f}')}, of at most "
                     f"{'/'.join(f'{p:g}' for p in peaks)}")
    else:
        lines.append("backward MAC/cycle: not in this table")
    if "task_energy_J" in df.columns and df.task_energy_J.notna().all():
        lines.append(f"energy per task: {span('task_energy_J', '{:.2f} J')} (model of docs/energy.md)")
    return lines


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
