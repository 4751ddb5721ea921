"""The dashboard: one self-contained HTML page (results/report/index.html) to explore the results,
offline: Plotly figures (plotly.js inlined once) and ITables tables (DataTables inlined), no file or
script from elsewhere.

Per latency experiment under results/ (demo, table2, fig4, or any other), sections present when
their data is:

* the latency table, sortable and filterable;
* where a task's cycles go: per network and cut (a menu), each layer's cycles per task stacked as
  compute / cluster-DMA wait / external memory / overhead, deployed beside isolated when
  results/NAME-isolated/ exists (the isolated bars add the separate operator kernels the deployed
  step fuses away);
* Pareto plots per platform: latency per task against training memory M, one colour per p, the
  non-dominated points joined; energy against memory and latency against energy when latency.csv has
  the energy columns (task_energy_J, bw_energy_J);
* the memory plan of each point (a menu): every L2 tensor as a rectangle, offset against program
  position (its lifetime), and the tensors that live in HyperRAM or flash listed;
* one training step on the simulator (results/NAME/timeline.json): stages, the FC and each PE's
  states, both DMAs, and counters over time;
* the stage programs' table.

Then the kernel benchmark (results/kernels/): MAC/cycle against the platform's limit and the kernel
table; the cost model against measured cycles; accuracy against latency with --accuracy FILE.

A few lines of glue count what the browser drew (Plotly figures, tables) and any script error into
attributes of <body>, which the tests read back from headless Chromium.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from harness import paths, validate
from harness.errors import UserError
from harness.experiments.cache import write_atomic
from harness.experiments.tables import peak_mac_per_cycle

HEADING = "pulp-odl: on-device continual learning, measured"
GENERATOR = "pulp-odl report"   # in the page's first lines: how `pulp-odl report` knows a page it may replace
PREFERRED = ("demo", "table2", "fig4")        # latency experiments first, in this order; then the others
KERNEL_SOURCES = ("kernels",)
ACCURACY_COLUMNS = ("net", "dataset", "layer_id", "p", "accuracy")
ENERGY_COLUMNS = ("task_energy_J", "bw_energy_J")
SPLIT = (("compute_cycles", "compute", "#4c78a8"), ("dma_wait_cycles", "cluster-DMA wait", "#e45756"),
         ("ext_wait_cycles", "external memory", "#b279a2"), ("overhead_cycles", "overhead", "#9d9d9d"))
FUSED = ("fused_cycles", "operator kernels fused away when deployed", "#f2cf5b")
ROLE_COLOURS = {"weight": "#4c78a8", "bias": "#72b7b2", "grad_w": "#f58518", "grad_b": "#ffbf79", "act": "#54a24b",
                "stash": "#88d27a", "grad": "#e45756", "latent": "#b279a2", "input": "#9d755d", "label": "#bab0ac",
                "replay": "#d67195", "scratch": "#c7c7c7", "loss": "#000000"}
STATE_COLOURS = {"compute": "#2ca02c", "barrier wait": "#ffcc33", "DMA wait": "#d62728", "idle (waits for work)":
                 "#dddddd", "sleep (wfi)": "#bbbbbb", "event wait": "#bcbd22", "mutex wait": "#8c564b",
                 "L2 -> L1": "#1f77b4", "L1 -> L2": "#9467bd", "HyperRAM read": "#17becf", "HyperRAM write": "#0b7a85",
                 "flash read": "#ff7f0e", "flash write": "#a05000"}
STALL_COLOURS = {"stall: FPU contention": "#ff9896", "stall: TCDM bank conflicts": "#e377c2",
                 "stall: load-use and dependencies": "#ffbb78", "stall: L2 and peripheral accesses": "#c49c94",
                 "stall: instruction fetch": "#dbdb8d", "stall: multi-cycle operations": "#9edae5",
                 "stall: branches and jumps": "#f7b6d2"}
TIMELINE_BINS = 1500          # per track, in the dashboard's timeline (the JSON file keeps full detail)
TIMELINE_PAGE_BINS = 5000     # per track, in a timeline's own page (pulp-odl timeline)

_TEXT, _COUNT, _ID, _P, _NONNEG = ("str",), ("int", 0, None), ("int", 1, None), ("number", 0.0, 1.0, True), ("number", 0.0)
# The columns the dashboard reads from each result table, and their allowed values.
RESULT_RULES = {
    "latency": {"platform": _TEXT, "net": _TEXT, "dataset": _TEXT, "layer_id": _ID, "p": _P,
                **{c: _NONNEG for c in ("M_MB", "S_replay_MB", "bw_ms", "fw_task_s", "update_task_s",
                                        "total_task_s")}},
    "kernels": {"kernel": _TEXT, "platform": _TEXT, "kind": _TEXT, "step": _TEXT, "macs": _COUNT,
                "mac_per_cycle": _NONNEG, "peak_mac_per_cycle": _NONNEG},
    "layers": {"platform": _TEXT, "net": _TEXT, "dataset": _TEXT, "layer_id": _ID, "p": _P, "name": _TEXT,
               "step": _TEXT, "cycles": _COUNT},
    "plans": {"platform": _TEXT, "net": _TEXT, "dataset": _TEXT, "layer_id": _ID, "p": _P, "tensor": _TEXT,
              "role": _TEXT, "home": _TEXT, "offset": _COUNT, "bytes": _COUNT, "first_index": _COUNT,
              "last_index": _COUNT},
}
ACCURACY_RULES = {"net": _TEXT, "dataset": _TEXT, "layer_id": _ID, "p": _P, "accuracy": ("number", 0.0, 100.0)}
POINT = ["platform", "net", "dataset", "layer_id", "p"]


def _read(path: Path) -> pd.DataFrame | None:
    """A result table, checked when read; None when absent. A header-only table is a valid empty one."""
    if not path.exists():
        return None
    text = paths.read_text(path, "", f"rerun the experiment that writes it ('pulp-odl experiment {path.parent.name}')")
    if text.strip() and len(text.strip().splitlines()) == 1:
        return pd.DataFrame(columns=text.strip().split(","))
    return validate.read_csv(path, "", RESULT_RULES.get(path.stem, {}),
                             f"rerun the experiment that writes it ('pulp-odl experiment {path.parent.name}')")


def read_accuracy(path: Path) -> pd.DataFrame:
    """Accuracy per (net, dataset, layer_id, p): layer_id a positive integer, p in (0, 1], accuracy in
    [0, 100] (a fraction or a percentage)."""
    return validate.read_csv(path, "--accuracy", ACCURACY_RULES,
                             f"give a CSV with columns {', '.join(ACCURACY_COLUMNS)}")


def latency_experiments(results: Path) -> list[str]:
    """Experiments under `results` with a latency table: PREFERRED first, then by name; an
    'X-isolated' one only when there is no X to show it beside."""
    names = sorted(p.parent.name for p in Path(results).glob("*/latency.csv"))
    names = [n for n in names if not (n.endswith("-isolated") and n.removesuffix("-isolated") in names)]
    return sorted(names, key=lambda n: (PREFERRED.index(n) if n in PREFERRED else len(PREFERRED), n))


def pareto_front(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Points no other point beats on both x and y (smaller is better), sorted by x."""
    pts = df.sort_values([x, y])
    keep, best = [], float("inf")
    for idx, v in zip(pts.index, pts[y]):
        if v < best:
            keep.append(idx)
            best = v
    return pts.loc[keep]


def _point_label(r) -> str:
    where = f", {r['placement']}" if "placement" in r and isinstance(r["placement"], str) else ""
    return f"{r['net']} {r['dataset']}, layer_id {int(r['layer_id'])}, p {r['p']:g}{where} ({r['platform']})"


def _slug(*parts) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(str(p) for p in parts)).strip("-")


# ---------------------------------------------------------------- figures (plotly)

def _go():
    import plotly.graph_objects as go
    return go


def _menu(fig, labels: list[str], groups: list[list[int]], ntraces: int, layouts: list[dict] | None = None):
    """A drop-down that shows the traces of one group at a time (and applies its layout changes)."""
    buttons = []
    for i, (label, idx) in enumerate(zip(labels, groups)):
        vis = [False] * ntraces
        for k in idx:
            vis[k] = True
        buttons.append({"label": label, "method": "update", "args": [{"visible": vis}, (layouts or [{}] * len(labels))[i]]})
    fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down", "x": 1, "xanchor": "right", "y": 1.02,
                                    "yanchor": "bottom", "showactive": True, "pad": {"b": 4}}])


def _layer_of(name: str) -> str:
    """The layer a deployed stage belongs to: 'B8.expand.fw' -> 'B8.expand', 'latents.reuse' -> 'latents'."""
    return name.split(".")[0] if name.startswith("latents") else name.rsplit(".", 1)[0] if "." in name else name


def _deployed_split(rows: pd.DataFrame) -> pd.DataFrame:
    """Deployed layers.csv rows of one point -> cycles per task per layer and category."""
    df = rows.copy()
    df["layer"] = [_layer_of(n) for n in df.name]
    for col, _, _ in SPLIT:
        df[col] = df[col] * df["count"] if col in df.columns else 0
    per = df.groupby("layer", sort=False)[[c for c, _, _ in SPLIT]].sum()
    per[FUSED[0]] = 0
    return per


def _isolated_split(rows: pd.DataFrame, deployed_layers: list[str]) -> pd.DataFrame:
    """Isolated layers.csv rows of one point -> the same categories; external memory is what a
    kernel's cycles hold beyond its cluster part, and an operator kernel of a layer the deployed step
    has (its activation, pool) counts as fused away into that layer's bar."""
    df = rows.copy()
    n = df["count"]
    ext = (df.cycles - df.compute_cycles - df.dma_wait_cycles - df.overhead_cycles).clip(lower=0)
    owner = [(nm.rsplit(".", 1)[0] if kind == "op" and "." in nm and nm.rsplit(".", 1)[0] in deployed_layers
              else nm) for nm, kind in zip(df.name, df.layer_kind)]
    fused = np.array([o != nm for o, nm in zip(owner, df.name)])
    df["layer"] = owner
    out = pd.DataFrame({"layer": owner,
                        "compute_cycles": np.where(fused, 0, df.compute_cycles * n),
                        "dma_wait_cycles": np.where(fused, 0, df.dma_wait_cycles * n),
                        "ext_wait_cycles": np.where(fused, 0, ext * n),
                        "overhead_cycles": np.where(fused, 0, df.overhead_cycles * n),
                        "fused_cycles": np.where(fused, df.cycles * n, 0)})
    return out.groupby("layer", sort=False).sum()


def fig_breakdown(layers: pd.DataFrame, iso_layers: pd.DataFrame | None, title: str):
    """Per network and cut (menu): each layer's cycles per task, stacked by category, the deployed
    step on the left, the isolated composition beside it when there is one."""
    from plotly.subplots import make_subplots
    go = _go()
    if layers is None or layers.empty:
        return None
    deployed = "ext_wait_cycles" in layers.columns
    if not deployed:     # an isolated experiment on its own
        layers, iso_layers = layers, None
    keys = ["platform", "net", "dataset", "layer_id", "p"] + (["placement"] if "placement" in layers.columns else [])
    cols = ["deployed" if deployed else "isolated"] + (["isolated"] if iso_layers is not None and not iso_layers.empty
                                                         else [])
    fig = make_subplots(rows=1, cols=len(cols), shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=[f"{c}" for c in cols])
    labels, groups, layouts, longest = [], [], [], 1
    for key, g in layers.groupby(keys, sort=True):
        info = dict(zip(keys, key))
        dep = _deployed_split(g) if deployed else _isolated_split(g, [])
        order = list(dep.index)
        parts = {cols[0]: dep}
        if len(cols) > 1:
            ig = iso_layers
            for k in ("platform", "net", "dataset", "layer_id", "p"):
                ig = ig[ig[k] == info[k]]
            if not ig.empty:
                iso = _isolated_split(ig, order)
                order += [n for n in iso.index if n not in order]
                parts["isolated"] = iso
        longest = max(longest, len(order))
        first = len(fig.data)
        for c, dname in enumerate(cols, 1):
            per = parts.get(dname)
            if per is None:
                continue
            per = per.reindex(order).fillna(0)
            total = per.sum(axis=1)
            for col, label, colour in (*SPLIT, FUSED):
                if col == FUSED[0] and not per[col].any():
                    continue
                fig.add_trace(go.Bar(y=order, x=per[col].round().astype(np.int64), orientation="h", name=label,
                                     marker_color=colour, customdata=total.round().astype(np.int64),
                                     hovertemplate=f"%{{y}} ({dname})<br>{label}: %{{x:,}} of %{{customdata:,}} "
                                                   "cycles per task<extra></extra>",
                                     legendgroup=label, showlegend=c == 1 or col == FUSED[0], visible=not labels),
                              row=1, col=c)
        labels.append(_point_label(info))
        groups.append(list(range(first, len(fig.data))))
        layouts.append({"yaxis.categoryarray": list(reversed(order)), "yaxis.range": [-0.5, len(order) - 0.5]})
    _menu(fig, labels, groups, len(fig.data), layouts)
    fig.update_yaxes(categoryorder="array", categoryarray=layouts[0]["yaxis.categoryarray"],
                     tickfont={"size": 9}, row=1, col=1)
    fig.update_xaxes(title_text="cycles per CL task", matches="x")
    fig.update_layout(barmode="stack", title=title, height=17 * longest + 200, legend={"orientation": "h", "y": -0.08,
                                                                                        "yanchor": "top"},
                      margin={"t": 100})
    return fig


def fig_pareto(lat: pd.DataFrame, platform: str, x: str, y: str, xlabel: str, ylabel: str, title: str):
    """Subplots per (net, dataset): y against x, one colour per p, the Pareto front dashed."""
    from plotly.subplots import make_subplots
    go = _go()
    df = lat[lat.platform == platform]
    if df.empty or x not in df.columns or y not in df.columns or df[[x, y]].isna().all().any():
        return None
    groups = list(df.groupby(["net", "dataset"], sort=True))
    cols = min(2, len(groups))
    rows = (len(groups) + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"{n}, {d}" for (n, d), _ in groups],
                        horizontal_spacing=0.1, vertical_spacing=0.16)
    ps = sorted(df.p.unique(), reverse=True)
    import plotly.colors as pc
    colours = pc.sample_colorscale("Viridis", [i / max(1, len(ps) - 1) for i in range(len(ps))])
    for i, ((net, ds), g) in enumerate(groups):
        r, c = i // cols + 1, i % cols + 1
        for j, p in enumerate(ps):
            sub = g[g.p == p]
            if sub.empty:
                continue
            hov = [f"{_point_label(row)}<br>{xlabel}: {row[x]:.4g}<br>{ylabel}: {row[y]:.4g}"
                   + (f"<br>backward: {row['bw_mac_per_cycle']:.2f} MAC/cycle" if "bw_mac_per_cycle" in row else "")
                   for row in sub.to_dict("records")]
            fig.add_trace(go.Scatter(x=sub[x], y=sub[y], mode="markers+text", text=[str(v) for v in sub.layer_id],
                                     textposition="top right", marker={"size": 10, "color": colours[j]},
                                     name=f"p = {p:g}", legendgroup=f"p{p:g}", showlegend=i == 0, hovertext=hov,
                                     hoverinfo="text"), row=r, col=c)
        front = pareto_front(g.dropna(subset=[x, y]), x, y)
        fig.add_trace(go.Scatter(x=front[x], y=front[y], mode="lines", line={"dash": "dash", "color": "#666",
                                                                                "shape": "hv"},
                                 name="Pareto front", legendgroup="front", showlegend=i == 0, hoverinfo="skip"),
                      row=r, col=c)
        fig.update_xaxes(title_text=xlabel, row=r, col=c)
        fig.update_yaxes(title_text=ylabel, row=r, col=c)
    fig.update_layout(title=title, height=360 * rows + 80, legend={"title": "labels: replay layer_id"})
    return fig


def fig_memory_plan(plans: pd.DataFrame, title: str):
    """Per point (menu): the L2 tensors as rectangles of offset x lifetime, coloured by role."""
    go = _go()
    if plans is None or plans.empty:
        return None, []
    keys = POINT + (["placement"] if "placement" in plans.columns else [])
    fig = go.Figure()
    labels, groups, external = [], [], []
    for key, g in plans.groupby(keys, sort=True):
        info = dict(zip(keys, key))
        first = len(fig.data)
        l2 = g[g.home == "l2"]
        for role, t in l2.groupby("role", sort=True):
            xs, ys, hx, hy, ht = [], [], [], [], []
            for r in t.itertuples():
                lo, hi = int(r.offset), int(r.offset + r.bytes)
                ivs = _intervals(r)
                for a, b in ivs:
                    xs += [a, b + 1, b + 1, a, None]     # a closed shape: the fill joins the last corner
                    ys += [lo, lo, hi, hi, None]
                a, b = ivs[0]
                hx.append((a + b + 1) / 2)               # one hover point per tensor
                hy.append((lo + hi) // 2)
                ht.append(f"{r.tensor} ({role}): {r.bytes:,} B at {r.offset:,}<br>stage runs "
                          f"{';'.join(f'{x}-{y}' for x, y in ivs)}<br>{getattr(r, 'first', '')} .. "
                          f"{getattr(r, 'last', '')}")
            colour = ROLE_COLOURS.get(role, "#888888")
            fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", mode="lines", line={"width": 0.5, "color": "#333"},
                                     fillcolor=colour, opacity=0.75, name=role, hoverinfo="skip",
                                     visible=not labels, legendgroup=role))
            fig.add_trace(go.Scatter(x=hx, y=hy, mode="markers", marker={"size": 6, "color": colour, "opacity": 0},
                                     hovertext=ht, hoverinfo="text", showlegend=False, visible=not labels,
                                     legendgroup=role))
        ext = g[g.home != "l2"]
        external.append((_point_label(info), ext))
        labels.append(_point_label(info) + f": L2 peak {l2.eval('offset + bytes').max() / 1024:,.0f} KiB"
                      if not l2.empty else _point_label(info))
        groups.append(list(range(first, len(fig.data))))
    _menu(fig, labels, groups, len(fig.data))
    fig.update_layout(title=title, xaxis_title="program position (stage run of the training step)",
                      yaxis_title="L2 offset (bytes)", height=560, margin={"t": 110},
                      legend={"title": "role"})
    return fig, external


def _intervals(r) -> list[tuple[int, int]]:
    """When a plans.csv row's tensor holds data: its `intervals` (a-b;c-d), else first..last."""
    text = getattr(r, "intervals", None)
    if isinstance(text, str) and text:
        try:
            return [tuple(int(x) for x in part.split("-")) for part in text.split(";")]
        except ValueError:
            pass
    return [(int(r.first_index), int(r.last_index))]


def _ext_table(external: list) -> str:
    """The tensors outside L2, per point, as a plain table."""
    frames = []
    for label, ext in external:
        if ext.empty:
            continue
        d = ext[[c for c in ("tensor", "role", "home", "offset", "bytes", "first", "last") if c in ext.columns]].copy()
        d.insert(0, "point", label)
        frames.append(d)
    if not frames:
        return "<p>Every tensor of every point lives in L2.</p>"
    return pd.concat(frames).to_html(index=False, border=0, classes="plain")


def _coverage(starts, ends, edges) -> np.ndarray:
    """Cycles of [starts, ends) spans inside each bin [edges[i], edges[i+1])."""
    if not len(starts):
        return np.zeros(len(edges) - 1)
    t = np.concatenate([starts, ends]).astype(np.float64)
    dr = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    o = np.argsort(t, kind="stable")
    t, dr = t[o], dr[o]
    r = np.cumsum(dr)
    cum = np.concatenate([[0.0], np.cumsum(r[:-1] * np.diff(t))])
    return np.diff(np.interp(edges.astype(np.float64), t, cum, left=0.0, right=cum[-1]))


def fig_timeline(doc: dict, title: str, bins: int = TIMELINE_BINS):
    """A recorded run: its tracks (stages, FC, PEs, DMAs) as coloured segments over time, the state
    that fills most of each of TIMELINE_BINS bins per track, and the counters beneath."""
    from plotly.subplots import make_subplots
    go = _go()
    other = doc.get("otherData", {})
    hz = float(other.get("clock_hz", 1e6))
    lo, hi = other.get("window_cycles", [0, 0])
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    order = other.get("tracks") or list(dict.fromkeys(names.values()))
    spans: dict = {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") == "call":
            continue
        track = names.get((e["pid"], e.get("tid")))
        if track is None:
            continue
        s = e["ts"] * hz / 1e6
        spans.setdefault(track, []).append((s, s + e["dur"] * hz / 1e6, e["name"]))
    tracks = sorted((t for t in order if t in spans), key=lambda t: (t != "stages", order.index(t)))
    if not tracks or hi <= lo:
        return None
    edges = np.linspace(lo, hi, bins + 1)
    segs = {}   # state -> (xs, ys, hover)
    stage_track = "stages"
    for track in tracks:
        ss = spans[track]
        if track == stage_track:   # stages are few and named: drawn as they are
            for s, e, n in ss:
                xs, ys, hv = segs.setdefault(("stage", n.split(":")[0]), ([], [], []))
                xs += [s / hz * 1e3, e / hz * 1e3, None]
                ys += [track, track, None]
                hv += [f"{n}<br>{e - s:,.0f} cycles from {s:,.0f}"] * 2 + [None]
            continue
        states = sorted({n for _, _, n in ss})
        cov = np.stack([_coverage(np.array([s for s, _, n in ss if n == st]), np.array([e for _, e, n in ss if n == st]),
                                  edges) for st in states])
        busy = cov.sum(axis=0) > 0
        win = np.argmax(cov, axis=0)
        lab = np.where(busy, win, -1)
        change = np.concatenate([[True], lab[1:] != lab[:-1]])
        starts = np.flatnonzero(change)
        stops = np.concatenate([starts[1:], [len(lab)]])
        for a, b in zip(starts, stops):
            if lab[a] < 0:
                continue
            st = states[lab[a]]
            share = cov[lab[a], a:b].sum() / max(1.0, edges[b] - edges[a])
            xs, ys, hv = segs.setdefault(("state", st), ([], [], []))
            xs += [edges[a] / hz * 1e3, edges[b] / hz * 1e3, None]
            ys += [track, track, None]
            txt = f"{track}: {st}<br>{edges[a]:,.0f} to {edges[b]:,.0f} cycles ({100 * share:.0f} % of it)"
            hv += [txt, txt, None]
    counters = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "C":
            counters.setdefault(e["name"], []).append((e["ts"] / 1e3, e["args"]))
    rows = [c for c in ("instructions per cycle", "contention (stall cycles per cycle)") if c in counters]
    traffic = [c for c in counters if c.endswith("traffic (bytes per cycle)")]
    nrows = 1 + len(rows) + (1 if traffic else 0)
    heights = [0.58] + [0.42 / (nrows - 1)] * (nrows - 1) if nrows > 1 else [1.0]
    fig = make_subplots(rows=nrows, cols=1, shared_xaxes=True, row_heights=heights, vertical_spacing=0.03)
    palette = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d"]
    phase_colours = {}
    for (kind, st), (xs, ys, hv) in sorted(segs.items()):
        if kind == "stage":
            colour = phase_colours.setdefault(st, palette[len(phase_colours) % len(palette)])
            name = f"stage: {st}"
        else:
            colour = STALL_COLOURS.get(st) or STATE_COLOURS.get(st, "#7f7f7f")
            name = st
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"width": 14, "color": colour}, name=name,
                                 hovertext=hv, hoverinfo="text", connectgaps=False), row=1, col=1)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(tracks)), row=1, col=1)
    r = 2
    for cname in rows + (["traffic"] if traffic else []):
        series = {}
        srcs = traffic if cname == "traffic" else [cname]
        for src in srcs:
            for t, args in counters[src]:
                for k, v in args.items():
                    label = f"{src.replace(' traffic (bytes per cycle)', '')} {k}" if cname == "traffic" else k
                    series.setdefault(label, ([], []))
                    series[label][0].append(t)
                    series[label][1].append(v)
        for label, (ts, vs) in series.items():
            if not any(vs):
                continue
            fig.add_trace(go.Scatter(x=ts, y=vs, mode="lines", line={"width": 1, "shape": "hv"},
                                     name=f"{cname if cname != 'traffic' else 'bytes per cycle'}: {label}",
                                     legendgroup=cname), row=r, col=1)
        fig.update_yaxes(title_text={"instructions per cycle": "IPC", "traffic": "B/cycle"}.get(cname, "stalls/cycle"),
                         row=r, col=1)
        r += 1
    fig.update_xaxes(title_text="time (ms)", row=nrows, col=1)
    fig.update_layout(title=title, height=30 * len(tracks) + 170 * (nrows - 1) + 220, margin={"t": 60},
                      legend={"orientation": "v", "font": {"size": 10}}, hovermode="closest")
    return fig


def fig_kernel_efficiency(kern: pd.DataFrame, platform: str):
    go = _go()
    df = kern[(kern.platform == platform) & (kern.macs > 0)].sort_values(["kind", "kernel"])
    if df.empty or "peak_mac_per_cycle" not in df.columns or "stage" in df.columns:
        return None
    peak = float(df.peak_mac_per_cycle.iloc[0])
    colours = {"fw": "#4c78a8", "wg": "#f58518", "ig": "#54a24b"}
    fig = go.Figure()
    for step, g in df.groupby("step", sort=False):
        fig.add_trace(go.Bar(y=[k.removesuffix(f"_{platform}") for k in g.kernel], x=g.mac_per_cycle, orientation="h",
                             name=step, marker_color=colours.get(step, "#888"),
                             hovertext=[f"{k}<br>{v:.2f} MAC/cycle ({100 * v / peak:.0f} % of {peak:g})"
                                        for k, v in zip(g.kernel, g.mac_per_cycle)], hoverinfo="text"))
    fig.add_vline(x=peak, line_dash="dash", line_color="red", annotation_text=f"limit {peak:g}")
    fig.update_layout(title=f"Kernel efficiency on {platform}: limit = cores x 2 lanes x FPUs/core = {peak:g} MAC/cycle",
                      xaxis_title="MAC/cycle (whole cluster)", height=18 * len(df) + 160,
                      yaxis={"autorange": "reversed", "tickfont": {"size": 9}}, xaxis_range=[0, peak * 1.1])
    return fig


def fig_model_vs_measured(layers: pd.DataFrame, platform: str, peak: float):
    go = _go()
    df = layers[(layers.platform == platform) & (layers.model_macs.fillna(0) > 0)]
    df = df.drop_duplicates("kernel")
    if df.empty:
        return None
    fig = go.Figure()
    for kind, g in df.groupby("layer_kind"):
        fig.add_trace(go.Scatter(x=g.model_macs, y=g.cycles, mode="markers", name=kind,
                                 hovertext=[f"{k}<br>{m:,.0f} MACs, {c:,} cycles" for k, m, c in
                                            zip(g.kernel, g.model_macs, g.cycles)], hoverinfo="text"))
    lo, hi = float(df.model_macs.min()), float(df.model_macs.max())
    for eff, dash in ((1.0, "solid"), (0.25, "dash"), (0.05, "dot")):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo / (peak * eff), hi / (peak * eff)], mode="lines",
                                 line={"color": "black", "dash": dash, "width": 1}, name=f"{eff * peak:g} MAC/cycle",
                                 hoverinfo="skip"))
    fig.update_layout(title=f"Cost model vs measured on {platform}: one point per kernel", height=480,
                      xaxis={"type": "log", "title": "cost-model MACs of the step (harness.costmodel)"},
                      yaxis={"type": "log", "title": "measured cycles"})
    return fig


def fig_accuracy(lat: pd.DataFrame, acc: pd.DataFrame, platform: str):
    go = _go()
    df = lat[lat.platform == platform].merge(acc[list(ACCURACY_COLUMNS)], on=["net", "dataset", "layer_id", "p"])
    if df.empty:
        return None
    fig = go.Figure()
    for (net, ds), g in df.groupby(["net", "dataset"], sort=True):
        fig.add_trace(go.Scatter(x=g.total_task_s, y=g.accuracy, mode="markers+text", name=f"{net}, {ds}",
                                 text=[str(v) for v in g.layer_id], textposition="top right",
                                 hovertext=[f"{_point_label(r)}<br>accuracy {r['accuracy']:g}, "
                                            f"{r['total_task_s']:.3g} s per task" for r in g.to_dict("records")],
                                 hoverinfo="text"))
    fig.update_layout(title=f"Accuracy vs latency on {platform} (labels: replay layer_id)",
                      xaxis_title="latency per task (s)", yaxis_title="accuracy", height=420)
    return fig


# ---------------------------------------------------------------- tables (itables)

def _table(df: pd.DataFrame, table_id: str, caption: str | None = None) -> str:
    from itables import to_html_datatable
    df = df.copy()
    for c in df.columns:
        if df[c].dtype.kind == "f":
            df[c] = df[c].round(4)
        if df[c].isna().all() or df[c].dtype.kind == "O" or str(df[c].dtype) in ("str", "string"):
            df[c] = df[c].astype(object).where(df[c].notna(), "")
    return to_html_datatable(df, caption=caption, table_id=table_id, connected=False, maxBytes=0, maxRows=0,
                             maxColumns=0, column_filters="footer", classes="display nowrap compact",
                             layout={"topStart": "pageLength", "topEnd": "search", "bottomStart": "info",
                                     "bottomEnd": "paging"}, lengthMenu=[10, 25, 100, -1], pageLength=25,
                             showIndex=False, scrollX=True, display_logo_when_loading=False)


def _table_init() -> str:
    from itables.javascript import generate_init_offline_itables_html
    from itables import options
    return generate_init_offline_itables_html(options.dt_bundle)


LATENCY_VIEW = ["platform", "net", "dataset", "layer_id", "p", "deployment", "placement", "M_MB", "S_replay_MB",
                "bw_ms", "bw_mac_per_cycle", "fw_task_s", "update_task_s", "total_task_s", "compute_task_s",
                "dma_wait_task_s", "ext_wait_task_s", "overhead_task_s", *ENERGY_COLUMNS, "l2_plan_KiB", "ram_KiB",
                "flash_KiB", "fits_memory"]
KERNEL_VIEW = ["kernel", "platform", "stage", "variant", "kind", "step", "cin", "cout", "h", "w", "k", "stride",
               "p_in", "p_out", "macs", "cycles", "mac_per_cycle", "efficiency", "compute_cycles", "dma_wait_cycles",
               "ext_wait_cycles", "overhead_cycles", "tiles", "l1_bytes", "l2_bytes", "instructions", "ok"]


# ---------------------------------------------------------------- the page

PAGE = jinja2.Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{{ generator }}">
<title>pulp-odl report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 1400px; color: #222; }
figure.plot { margin: 1.2em 0; } figcaption { font-size: 0.9em; color: #555; }
table.plain { border-collapse: collapse; font-size: 0.85em; }
table.plain td, table.plain th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.note { color: #777; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
nav a { margin-right: 1em; }
</style>
<script type="text/javascript">{{ plotlyjs }}</script>
<script>
window.odlErrors = [];
window.addEventListener("error", function (e) { window.odlErrors.push(String(e.message)); });
</script>
{{ table_init }}
</head>
<body data-plots="{{ figures|length }}" data-tables="{{ tables }}">
<h1>{{ heading }}</h1>
<p>Generated {{ date }} from {{ results }}.</p>
{% if sections|length > 1 %}<nav>{% for sec in sections %}<a href="#{{ sec.id }}">{{ sec.title }}</a>{% endfor %}</nav>{% endif %}
{% for note in notes %}<p class="note">{{ note }}</p>{% endfor %}
{% for sec in sections %}
<h2 id="{{ sec.id }}">{{ sec.title }}</h2>
{% for b in sec.blocks %}
{% if b.text %}<p>{{ b.text }}</p>{% endif %}
{% if b.html %}{{ b.html }}{% endif %}
{% if b.figure %}<figure class="plot" id="{{ b.id }}">{{ b.figure }}<figcaption>{{ b.caption }}</figcaption></figure>{% endif %}
{% endfor %}{% endfor %}
<script>
/* glue: what the browser drew, for the tests (and a reader's console) */
window.addEventListener("load", function () {
  setTimeout(function () {
    var n = 0;
    document.querySelectorAll("figure.plot .js-plotly-plot").forEach(function (d) {
      var r = d.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && d.querySelector(".main-svg")) { n += 1; }
    });
    document.body.setAttribute("data-plots-rendered", String(n));
    document.body.setAttribute("data-tables-rendered", String(document.querySelectorAll(".dt-container").length));
    document.body.setAttribute("data-errors", String(window.odlErrors.length));
    document.body.setAttribute("data-error-text", window.odlErrors.join(" | "));
  }, 500);
});
</script>
</body></html>
""", autoescape=False)


class _Page:
    def __init__(self):
        self.sections: list[dict] = []
        self.figures: list[str] = []
        self.tables = 0

    def section(self, sid: str, title: str) -> list:
        blocks: list = []
        self.sections.append({"id": sid, "title": title, "blocks": blocks})
        return blocks

    def figure(self, blocks: list, fig, fig_id: str, caption: str) -> None:
        if fig is None:
            return
        fig_id = _slug(fig_id)
        fig.update_layout(template="plotly_white")
        html = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"{fig_id}-plot",
                           config={"displaylogo": False, "responsive": True})
        self.figures.append(fig_id)
        blocks.append({"id": fig_id, "figure": html, "caption": caption})

    def table(self, blocks: list, df: pd.DataFrame, table_id: str, text: str | None = None) -> None:
        if df is None or df.empty:
            return
        self.tables += 1
        blocks.append({"text": text, "html": _table(df, _slug("tbl", table_id))})


def _latency_sections(page: _Page, results: Path, name: str, notes: list) -> pd.DataFrame | None:
    d = results / name
    lat = _read(d / "latency.csv")
    if lat is None:
        return None
    layers = _read(d / "layers.csv")
    plans = _read(d / "plans.csv")
    iso_dir = results / f"{name}-isolated"
    iso_lat = _read(iso_dir / "latency.csv") if not name.endswith("-isolated") else None
    iso_layers = _read(iso_dir / "layers.csv") if iso_lat is not None else None
    meta = {}
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (OSError, ValueError):
        pass
    title = f"{name}: {meta.get('description', '')}".rstrip(": ")
    blocks = page.section(_slug("exp", name), name)
    from harness.experiments.tables import headline
    lines = "".join(f"<li>{ln}</li>" for ln in headline(lat)) if "clock_hz" in lat.columns else ""
    blocks.append({"text": f"{title}. {len(lat)} points. M and S_replay in MB (10^6 bytes); bw per sample in ms; "
                           "task latencies in s at the platform clock (docs/experiments.md defines each column).",
                   "html": f"<ul class=\"headline\">{lines}</ul>" if lines else ""})
    view = lat[[c for c in LATENCY_VIEW if c in lat.columns]]
    if iso_lat is not None and not iso_lat.empty:
        iso = iso_lat[POINT + ["total_task_s"]].rename(columns={"total_task_s": "isolated_task_s"})
        view = view.merge(iso.drop_duplicates(POINT), on=POINT, how="left")
    page.table(blocks, view, f"latency-{name}")
    if layers is not None and not layers.empty:
        if "ext_wait_cycles" not in layers.columns:
            beside = "Each op is an isolated kernel program whose tensors start and end in external memory. "
        elif iso_layers is not None:
            beside = (f"Beside each deployed bar, the isolated composition (results/{name}-isolated/): every op a "
                      "kernel program of its own, its activation and pool kernels shown as fused away. ")
        else:
            beside = "Run the experiment with --deployment isolated to see the isolated composition beside it. "
        page.figure(blocks, fig_breakdown(layers, iso_layers, f"{name}: where a task's cycles go, layer by layer"),
                    f"fig-breakdown-{name}",
                    "Each layer's cycles in one CL task (runs per task x cycles of its programs: forward with its "
                    "fused work, weight and input gradients, its share of the backward operators, the update), "
                    "split into compute, cluster-DMA wait, external-memory wait and overhead. " + beside
                    + "Pick the network and cut in the menu.")
    # runs of kernels that record no energy events leave the columns empty
    has_energy = all(c in lat.columns and lat[c].notna().any() for c in ENERGY_COLUMNS)
    for plat in sorted(lat.platform.unique()):
        page.figure(blocks, fig_pareto(lat, plat, "M_MB", "total_task_s", "training memory M (MB)",
                                       "latency per task (s)", f"{name} on {plat}: latency per task vs memory"),
                    f"fig-pareto-{name}-{plat}",
                    "Each point a (replay layer, p); hover for its figures. The dashed line joins the points no "
                    "other beats on both memory and latency.")
        if has_energy:
            page.figure(blocks, fig_pareto(lat, plat, "M_MB", "task_energy_J", "training memory M (MB)",
                                           "energy per task (J)", f"{name} on {plat}: energy per task vs memory"),
                        f"fig-energy-memory-{name}-{plat}", "Energy of one CL task against training memory.")
            page.figure(blocks, fig_pareto(lat, plat, "task_energy_J", "total_task_s", "energy per task (J)",
                                           "latency per task (s)", f"{name} on {plat}: latency vs energy per task"),
                        f"fig-latency-energy-{name}-{plat}", "Latency of one CL task against its energy.")
    if not has_energy:
        notes.append(f"{name}: latency.csv has no energy figures ({', '.join(ENERGY_COLUMNS)}): the energy plots "
                     "are left out.")
    if plans is not None and not plans.empty:
        fig, external = fig_memory_plan(plans, f"{name}: memory plan, L2 tensors over the training step")
        page.figure(blocks, fig, f"fig-plan-{name}",
                    "Every tensor the plan keeps in L2 as a rectangle: its bytes at its offset, over the stage runs "
                    "during which it holds data (a per-chunk tensor once per chunk; hover for names). Pick the "
                    "point in the menu. Below: the tensors that live in HyperRAM or flash.")
        blocks.append({"html": _ext_table(external)})
    tl = d / "timeline.json"
    if tl.is_file():
        from harness import timeline as tlmod
        doc = tlmod.load(tl)
        o = doc.get("otherData", {})
        page.figure(blocks, fig_timeline(doc, o.get("title", "one training step")), f"fig-timeline-{name}",
                    f"One whole training step run as one program ({o.get('numpy_check', '')}; "
                    f"{o.get('step_cycles', 0):,} cycles): the stages in order, then what the FC and each cluster core "
                    "do (compute, stall bursts, barrier, DMA and work waits), both DMAs, and the counters. Each "
                    f"segment is the state that fills most of its 1/{TIMELINE_BINS} of the step; {tl} holds every "
                    "event (open it in Perfetto or chrome://tracing).")
    kern = _read(d / "kernels.csv")
    if kern is not None and not kern.empty:
        page.table(blocks, kern[[c for c in KERNEL_VIEW if c in kern.columns]], f"kernels-{name}",
                   text=f"{name}: every {'stage program' if 'stage' in kern.columns else 'kernel'} it ran "
                        "(sort by a column, filter by the boxes beneath it).")
    if layers is not None and "model_macs" in layers.columns:
        for plat in sorted(layers.platform.unique()):
            page.figure(blocks, fig_model_vs_measured(layers, plat, peak_mac_per_cycle(plat)), f"fig-model-{name}-{plat}",
                        "The cost model's MACs of each layer step against the cycles measured for its program; "
                        "black lines: constant MAC/cycle (the solid one is the platform's limit).")
    return lat


def timeline_page(doc: dict, source: Path, path: Path) -> Path:
    """One timeline file drawn as a page of its own (the dashboard's view of it), offline."""
    import plotly.offline

    page = _Page()
    o = doc.get("otherData", {})
    blocks = page.section("timeline", o.get("title", str(source)))
    lo, hi = o.get("window_cycles", [0, 0])
    blocks.append({"text": f"{source}: {len(doc['traceEvents']):,} trace events, cycles {lo:,} to {hi:,} on "
                           f"{o.get('platform', '?')}; counters every {o.get('sample_period_cycles', '?')} cycles"
                           + ("; spans shorter than " + f"{o.get('shortest_span_kept_cycles')} cycles left out"
                              if o.get("spans_dropped") else "") + "."})
    page.figure(blocks, fig_timeline(doc, o.get("title", "timeline"), TIMELINE_PAGE_BINS), "fig-timeline",
                f"Each segment is the state that fills most of its 1/{TIMELINE_PAGE_BINS} of the run (hover for it); "
                "the file holds every event (Perfetto and chrome://tracing open it too).")
    if not page.figures:
        raise UserError(f"{source}: holds no span to draw; record a run with --timeline")
    html = PAGE.render(heading="pulp-odl timeline", generator=GENERATOR, figures=page.figures, tables=0,
                       sections=page.sections, notes=[],
                       results=str(source), plotlyjs=plotly.offline.get_plotlyjs(), table_init="",
                       date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    write_atomic(path, html)
    return path


def build(results: Path, outdir: Path, accuracy: Path | None = None) -> tuple[Path, int]:
    """Write outdir/index.html from the tables under `results`. Returns (path, number of figures)."""
    import plotly.offline

    results, outdir = Path(results), Path(outdir)
    acc = read_accuracy(accuracy) if accuracy is not None else None
    names = latency_experiments(results)
    kern = _read(results / "kernels" / "kernels.csv")
    if not names and kern is None:
        raise UserError(f"no results under {results} to report on; run 'make demo', 'make table2' or 'make kernels' "
                        "first")
    page, notes = _Page(), []
    first_lat = None
    for name in names:
        lat = _latency_sections(page, results, name, notes)
        first_lat = first_lat if first_lat is not None else (name, lat)
    if acc is not None and first_lat is not None:
        name, lat = first_lat
        blocks = page.section("accuracy", "Accuracy vs latency")
        n0 = len(page.figures)
        for plat in sorted(lat.platform.unique()):
            page.figure(blocks, fig_accuracy(lat, acc, plat), f"fig-accuracy-{plat}",
                        f"accuracy from {accuracy} against the measured latency per task ({name}).")
        if len(page.figures) == n0:
            notes.append(f"{accuracy}: no row matches a (net, dataset, layer_id, p) of {name}")
    elif acc is None:
        notes.append("No accuracy CSV given (pulp-odl report --accuracy FILE, columns "
                     f"{', '.join(ACCURACY_COLUMNS)}): the accuracy plot is left out.")
    if kern is not None and not kern.empty:
        blocks = page.section("kernels", "Kernel benchmark")
        for plat in sorted(kern.platform.unique()):
            page.figure(blocks, fig_kernel_efficiency(kern, plat), f"fig-kernels-{plat}",
                        "kernels: MAC/cycle of each kernel; the dashed line is the platform's arithmetic limit.")
        page.table(blocks, kern[[c for c in KERNEL_VIEW if c in kern.columns]], "kernels",
                   text="Every kernel of the benchmark (sort by a column, filter by the boxes beneath it).")
    html = PAGE.render(heading=HEADING, generator=GENERATOR, figures=page.figures, tables=page.tables,
                       sections=page.sections, notes=notes,
                       results=str(results), plotlyjs=plotly.offline.get_plotlyjs(),
                       table_init=_table_init() if page.tables else "",
                       date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    path = outdir / "index.html"
    write_atomic(path, html)
    return path, len(page.figures)
