"""The dashboard: one static, offline HTML page (results/report/index.html) from the result tables.

Every figure is a matplotlib SVG inlined in the page (no scripts or styles from elsewhere). Sections,
each present when its data is:

* Pareto: update latency per task vs training memory M, coloured by p, the non-dominated points
  joined (fig4's latency table, else table2's).
* Accuracy vs latency, when an accuracy CSV is given (columns net, dataset, layer_id, p, accuracy).
* Kernel efficiency: MAC/cycle of every fw/wg/ig kernel against the platform's limit (`kernels`,
  else the latency experiment's kernels).
* Cycle, stall and DMA breakdown per trained layer at the deepest replay layer and p = 1.
* Cost model vs measured: the model's MACs against measured cycles for every layer step.

A small inline script counts the figures the browser laid out and writes the number into the
body's data-plots-rendered attribute, which tests read back from headless Chromium.
"""
from __future__ import annotations

import io
import re
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import pandas as pd

from harness import paths, validate
from harness.errors import UserError
from harness.experiments.cache import write_atomic
from harness.experiments.tables import peak_mac_per_cycle

LATENCY_SOURCES = ("fig4", "table2")
KERNEL_SOURCES = ("kernels", "table2", "fig4")
ACCURACY_COLUMNS = ("net", "dataset", "layer_id", "p", "accuracy")
STEPS = ("fw", "wg", "ig")


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
}
ACCURACY_RULES = {"net": _TEXT, "dataset": _TEXT, "layer_id": _ID, "p": _P, "accuracy": ("number", 0.0, 100.0)}


def _read(path: Path) -> pd.DataFrame | None:
    """A result table, checked when read; None when absent. A header-only table is a valid empty one."""
    if not path.exists():
        return None
    text = paths.read_text(path, "", f"rerun the experiment that writes it ('pulp-odl experiment {path.parent.name}')")
    if text.strip() and len(text.strip().splitlines()) == 1:
        return pd.DataFrame(columns=text.strip().split(","))
    return validate.read_csv(path, "", RESULT_RULES.get(path.stem, {}),
                             f"rerun the experiment that writes it ('pulp-odl experiment {path.parent.name}')")


def _first(results: Path, names, stem: str):
    for name in names:
        df = _read(results / name / f"{stem}.csv")
        if df is not None and len(df):
            return name, df
    return None, None


def read_accuracy(path: Path) -> pd.DataFrame:
    """Accuracy per (net, dataset, layer_id, p): layer_id a positive integer, p in (0, 1], accuracy in
    [0, 100] (a fraction or a percentage)."""
    return validate.read_csv(path, "--accuracy", ACCURACY_RULES,
                             f"give a CSV with columns {', '.join(ACCURACY_COLUMNS)}")


# ---- figures ----

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _svg(fig, fig_id: str) -> str:
    plt = _plt()
    buf = io.StringIO()
    # A salt per figure keeps the ids matplotlib gives clip paths unique across the page.
    with plt.rc_context({"svg.hashsalt": fig_id, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight",
                    metadata={"Creator": None, "Date": None, "Format": None, "Type": None})  # no dates, no URIs
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _grid(n: int, width=5.0, height=3.6, ncols=2):
    plt = _plt()
    ncols = min(ncols, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained")
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def pareto_front(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Points no other point beats on both x and y (smaller is better), sorted by x."""
    pts = df.sort_values([x, y])
    keep, best = [], float("inf")
    for idx, v in zip(pts.index, pts[y]):
        if v < best:
            keep.append(idx)
            best = v
    return pts.loc[keep]


def fig_pareto(lat: pd.DataFrame, platform: str):
    df = lat[lat.platform == platform]
    groups = list(df.groupby(["net", "dataset"], sort=True))
    fig, axes = _grid(len(groups))
    cmap = _plt().get_cmap("viridis")
    ps = sorted(df.p.unique(), reverse=True)
    for ax, ((net, ds), g) in zip(axes, groups):
        for i, p in enumerate(ps):
            sub = g[g.p == p]
            ax.scatter(sub.M_MB, sub.update_task_s, color=cmap(i / max(1, len(ps) - 1)), label=f"p = {p:g}", s=28,
                       zorder=3)
            for r in sub.itertuples():
                ax.annotate(str(r.layer_id), (r.M_MB, r.update_task_s), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
        front = pareto_front(g, "M_MB", "update_task_s")
        ax.step(front.M_MB, front.update_task_s, where="post", color="0.4", lw=1, ls="--", label="Pareto front")
        ax.set_title(f"{net}, {ds}")
        ax.set_xlabel("training memory M (MB)")
        ax.set_ylabel("update latency per task (s)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Update latency vs memory on {platform} (labels: replay layer_id)")
    return fig


def fig_accuracy(lat: pd.DataFrame, acc: pd.DataFrame, platform: str):
    df = lat[lat.platform == platform].merge(acc[list(ACCURACY_COLUMNS)], on=["net", "dataset", "layer_id", "p"])
    if df.empty:
        return None
    groups = list(df.groupby(["net", "dataset"], sort=True))
    fig, axes = _grid(len(groups))
    for ax, ((net, ds), g) in zip(axes, groups):
        sc = ax.scatter(g.total_task_s, g.accuracy, c=g.p, cmap="viridis", s=28)
        for r in g.itertuples():
            ax.annotate(f"{r.layer_id}", (r.total_task_s, r.accuracy), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        ax.set_title(f"{net}, {ds}")
        ax.set_xlabel("latency per task (s)")
        ax.set_ylabel("accuracy")
        ax.grid(alpha=0.3)
        fig.colorbar(sc, ax=ax, label="p")
    fig.suptitle(f"Accuracy vs latency on {platform} (labels: replay layer_id)")
    return fig


def fig_kernel_efficiency(kern: pd.DataFrame, platform: str):
    df = kern[(kern.platform == platform) & (kern.macs > 0)].sort_values(["kind", "kernel"])
    if df.empty or "peak_mac_per_cycle" not in df.columns or "stage" in df.columns:
        return None   # stage programs of deployed steps are shown per layer (fig_breakdown_deployed)
    plt = _plt()
    peak = float(df.peak_mac_per_cycle.iloc[0])
    from matplotlib.patches import Patch
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(df) + 1.5), layout="constrained")
    colors = {"fw": "tab:blue", "wg": "tab:orange", "ig": "tab:green"}
    y = range(len(df))
    ax.barh(list(y), df.mac_per_cycle, color=[colors.get(s, "0.5") for s in df.step])
    ax.axvline(peak, color="red", ls="--", lw=1.2)
    ax.text(peak, 1.0, f"limit {peak:g} ", color="red", ha="right", va="bottom", fontsize=8,
            transform=ax.get_xaxis_transform())
    ax.set_yticks(list(y), [k.removesuffix(f"_{platform}") for k in df.kernel], fontsize=6)
    ax.set_xlabel("MAC/cycle (whole cluster)")
    ax.set_xlim(0, peak * 1.1)
    ax.invert_yaxis()
    ax.legend(handles=[Patch(color=c, label=step) for step, c in colors.items()], fontsize=7, loc="lower right")
    ax.set_title(f"Kernel efficiency on {platform}: limit = cores x 2 lanes x FPUs/core = {peak:g} MAC/cycle")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _deepest_dense(layers: pd.DataFrame) -> pd.DataFrame:
    """Per (platform, net, dataset): the rows of the deepest replay layer at the largest p."""
    keep = []
    for _, g in layers.groupby(["platform", "net", "dataset"], sort=True):
        g = g[g.layer_id == g.layer_id.max()]
        keep.append(g[g.p == g.p.max()])
    return pd.concat(keep) if keep else layers.iloc[:0]


def fig_breakdown(rows: pd.DataFrame, title: str):
    """Per trained layer, per sample (fw + wg + ig): cycle split, stall categories, DMA busy cycles."""
    plt = _plt()
    trained = rows[rows.step.isin(STEPS) & (rows.layer_kind != "op")]
    if trained.empty:
        return None
    order = list(dict.fromkeys(trained.name))
    per = trained.groupby("name", sort=False).sum(numeric_only=True).loc[order]
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(max(7.0, 0.32 * len(order) + 2), 9), sharex=True,
                                     layout="constrained")
    x = range(len(order))
    bottom = [0] * len(order)
    for col, label, c in (("compute_cycles", "compute", "tab:blue"), ("dma_wait_cycles", "DMA wait", "tab:red"),
                          ("overhead_cycles", "overhead", "tab:gray")):
        a1.bar(list(x), per[col], bottom=bottom, label=label, color=c)
        bottom = [b + v for b, v in zip(bottom, per[col])]
    a1.set_ylabel("cycles per sample")
    a1.legend(fontsize=7)
    stalls = [c for c in per.columns if c.startswith("stall_") and c != "stall_wait" and per[c].sum() > 0]
    bottom = [0] * len(order)
    cmap = plt.get_cmap("tab20")
    for i, col in enumerate(stalls):
        a2.bar(list(x), per[col], bottom=bottom, label=col[6:], color=cmap(i % 20))
        bottom = [b + v for b, v in zip(bottom, per[col])]
    a2.set_ylabel("stall cycles, all cores")
    a2.legend(fontsize=6, ncol=4)
    dmas = [c for c in per.columns if c.startswith("dma_") and c.endswith("_busy_cycles")]
    width = 0.8 / max(1, len(dmas))
    for i, col in enumerate(dmas):
        a3.bar([v + i * width for v in x], per[col], width=width, label=col[4:-12])
    a3.set_ylabel("DMA busy cycles")
    a3.legend(fontsize=7)
    a3.set_xticks(list(x), order, rotation=70, fontsize=7)
    for ax in (a1, a2, a3):
        ax.grid(axis="y", alpha=0.3)
    a1.set_title(title)
    return fig


def fig_breakdown_deployed(rows: pd.DataFrame, title: str):
    """Deployed steps: where a task's time goes, per trained layer (its forward, backward and update
    stages, fused work included): compute, cluster-DMA wait, external-memory wait, overhead."""
    plt = _plt()
    trained = rows[rows.group.isin(("fw_tail", "wg", "ig", "ops_bw", "sgd"))].copy()
    if trained.empty:
        return None
    trained["layer"] = [n if n.count(".") == 0 else n.rsplit(".", 1)[0] for n in trained.name]
    order = list(dict.fromkeys(trained.layer))
    clock = (trained.task_cycles / trained.task_s.where(trained.task_s > 0)).dropna()
    hz = float(clock.iloc[0]) if len(clock) else 1.0
    fig, ax = plt.subplots(figsize=(max(7.0, 0.35 * len(order) + 2), 4.5), layout="constrained")
    x = range(len(order))
    bottom = [0.0] * len(order)
    for col, label, c in (("compute_cycles", "compute", "tab:blue"), ("dma_wait_cycles", "cluster-DMA wait", "tab:red"),
                          ("ext_wait_cycles", "external memory", "tab:purple"), ("overhead_cycles", "overhead",
                                                                                   "tab:gray")):
        per = (trained[col] * trained["count"]).groupby(trained.layer, sort=False).sum().reindex(order) / hz
        ax.bar(list(x), per, bottom=bottom, label=label, color=c)
        bottom = [b + v for b, v in zip(bottom, per)]
    ax.set_ylabel("seconds per task")
    ax.set_xticks(list(x), order, rotation=70, fontsize=7)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title)
    return fig


def fig_model_vs_measured(layers: pd.DataFrame, platform: str, peak: float):
    df = layers[(layers.platform == platform) & (layers.model_macs.fillna(0) > 0)]
    df = df.drop_duplicates("kernel")
    if df.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    for kind, g in df.groupby("layer_kind"):
        ax.scatter(g.model_macs, g.cycles, s=14, label=kind, alpha=0.8)
    lo, hi = df.model_macs.min(), df.model_macs.max()
    for eff, ls in ((1.0, "-"), (0.25, "--"), (0.05, ":")):
        ax.plot([lo, hi], [lo / (peak * eff), hi / (peak * eff)], color="black", ls=ls, lw=1,
                label=f"{eff * peak:g} MAC/cycle")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("cost-model MACs of the step (harness.costmodel)")
    ax.set_ylabel("measured cycles")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    ax.set_title(f"Cost model vs measured on {platform}: one point per kernel")
    return fig


# ---- the page ----

PAGE = jinja2.Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pulp-odl report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 1300px; color: #222; }
figure.plot { margin: 1.5em 0; } figure.plot svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
table { border-collapse: collapse; font-size: 0.85em; } td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.note { color: #777; }
</style></head>
<body data-plots="{{ figures|length }}">
<h1>pulp-odl: on-device continual learning, measured</h1>
<p>Generated {{ date }} from {{ results }}. Sources: {% for k, v in sources.items() %}{{ k }} = {{ v or "none" }}{% if not loop.last %}, {% endif %}{% endfor %}.</p>
{% for note in notes %}<p class="note">{{ note }}</p>{% endfor %}
{% for sec in sections %}
<h2 id="{{ sec.id }}">{{ sec.title }}</h2>
{% if sec.text %}<p>{{ sec.text }}</p>{% endif %}
{% if sec.table %}{{ sec.table }}{% endif %}
{% for f in sec.figures %}<figure class="plot" id="{{ f.id }}">{{ f.svg }}<figcaption>{{ f.caption }}</figcaption></figure>
{% endfor %}{% endfor %}
<script>
document.addEventListener("DOMContentLoaded", function () {
  var n = 0;
  document.querySelectorAll("figure.plot > svg").forEach(function (s) {
    var r = s.getBoundingClientRect(); if (r.width > 0 && r.height > 0) { n += 1; }
  });
  document.body.setAttribute("data-plots-rendered", String(n));
});
</script>
</body></html>
""", autoescape=False)


def _fig(sections_figs: list, fig, fig_id: str, caption: str) -> None:
    fig_id = re.sub(r"[^A-Za-z0-9_-]+", "-", fig_id).strip("-")
    if fig is not None:
        sections_figs.append({"id": fig_id, "svg": _svg(fig, fig_id), "caption": caption})


def build(results: Path, outdir: Path, accuracy: Path | None = None) -> tuple[Path, int]:
    """Write outdir/index.html from the tables under `results`. Returns (path, number of figures)."""
    results, outdir = Path(results), Path(outdir)
    acc = read_accuracy(accuracy) if accuracy is not None else None
    lat_src, lat = _first(results, LATENCY_SOURCES, "latency")
    _, layers = (lat_src, _read(results / lat_src / "layers.csv")) if lat_src else (None, None)
    kern_src, kern = _first(results, KERNEL_SOURCES, "kernels")
    table2 = _read(results / "table2" / "latency.csv")
    sections, notes = [], []
    if lat is None and kern is None:
        raise UserError(f"no results under {results} to report on; run 'make table2', 'make fig4' or 'make kernels' first")

    if table2 is not None:
        cols = ["platform", "net", "dataset", "layer_id", "p", "deployment", "placement", "M_MB", "S_replay_MB",
                "bw_ms", "bw_mac_per_cycle", "fw_task_s", "update_task_s", "total_task_s"]
        html = table2[[c for c in cols if c in table2.columns]].to_html(index=False, float_format=lambda v: f"{v:.3f}",
                                                                       border=0)
        sections.append({"id": "table2", "title": "Table 2: memory and latency", "table": html, "figures": [],
                         "text": "M and S_replay in MB (10^6 bytes); bw per sample in ms; fw, update and total per "
                                 "CL task in s at the platform clock (docs/experiments.md defines each column)."})
    if lat is not None:
        figs = []
        for plat in sorted(lat.platform.unique()):
            _fig(figs, fig_pareto(lat, plat), f"fig-pareto-{plat}",
                 f"{lat_src}: update latency per task against training memory M, one colour per p.")
        sections.append({"id": "pareto", "title": "Pareto: update latency vs memory", "figures": figs})
        if acc is not None:
            figs = []
            for plat in sorted(lat.platform.unique()):
                _fig(figs, fig_accuracy(lat, acc, plat), f"fig-accuracy-{plat}",
                     f"accuracy from {accuracy} against the measured latency per task ({lat_src}).")
            if not figs:
                notes.append(f"{accuracy}: no row matches a (net, dataset, layer_id, p) of {lat_src}")
            sections.append({"id": "accuracy", "title": "Accuracy vs latency", "figures": figs})
        else:
            notes.append("No accuracy CSV given (pulp-odl report --accuracy FILE, columns "
                         f"{', '.join(ACCURACY_COLUMNS)}): the accuracy plot is left out.")
    if kern is not None:
        figs = []
        for plat in sorted(kern.platform.unique()):
            _fig(figs, fig_kernel_efficiency(kern, plat), f"fig-kernels-{plat}",
                 f"{kern_src}: MAC/cycle of each kernel; the dashed line is the platform's arithmetic limit.")
        sections.append({"id": "kernels", "title": "Kernel efficiency", "figures": figs})
    if layers is not None:
        figs = []
        deployed = "group" in layers.columns and "ext_wait_cycles" in layers.columns
        if deployed and "placement" in layers.columns:
            layers = layers[layers.placement == layers.placement.iloc[0]]
        for (plat, net, ds), g in _deepest_dense(layers).groupby(["platform", "net", "dataset"], sort=True):
            lid, p = g.layer_id.iloc[0], g.p.iloc[0]
            if deployed:
                _fig(figs, fig_breakdown_deployed(g, f"{net}, {ds} on {plat}: layer_id {lid}, p = {p:g}, per task"),
                     f"fig-breakdown-{plat}-{net}-{ds}",
                     "Per trained layer, the seconds of one CL task its stages take (forward with its fused work, "
                     "weight and input gradients, its share of the backward ops, the update), split into compute, "
                     "cluster-DMA wait, external-memory wait and overhead.")
                continue
            _fig(figs, fig_breakdown(g, f"{net}, {ds} on {plat}: layer_id {lid}, p = {p:g}, per sample"),
                 f"fig-breakdown-{plat}-{net}-{ds}",
                 "Per trained layer, one sample's fw + wg + ig: cycles split into compute, DMA wait and overhead; "
                 "stall cycles by cause (summed over cores, idle waiting left out); DMA busy cycles.")
        sections.append({"id": "breakdown", "title": "Cycles, stalls and DMA per layer", "figures": figs})
        figs = []
        for plat in sorted(layers.platform.unique()):
            peak = float(kern[kern.platform == plat].peak_mac_per_cycle.iloc[0]) \
                if kern is not None and "peak_mac_per_cycle" in kern.columns and (kern.platform == plat).any() \
                else peak_mac_per_cycle(plat)
            _fig(figs, fig_model_vs_measured(layers, plat, peak), f"fig-model-{plat}",
                 "The cost model's MACs of each layer step against the cycles measured for its kernel; "
                 "black lines: constant MAC/cycle (the solid one is the platform's limit).")
        sections.append({"id": "model", "title": "Cost model vs measured", "figures": figs})
    figures = [f for s in sections for f in s["figures"]]
    html = PAGE.render(figures=figures, sections=sections, notes=notes, results=str(results),
                       sources={"latency": lat_src, "kernels": kern_src},
                       date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    path = outdir / "index.html"
    write_atomic(path, html)
    return path, len(figures)
