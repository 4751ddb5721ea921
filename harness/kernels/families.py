"""Where a kernel family's cycles go: the per-family table of docs/kernels.md, from a kernels experiment.

    python -m harness.kernels.families [results/kernels/kernels.csv] [--platform paper]

For each family: the MAC/cycle range over its kernels, then shares of the cluster's core-cycles
(cores x the kernel's cycles; the cluster cores' counters, so not what the FC does around the kernel),
averaged over the family: products (one instruction per 2 MACs), other
instructions, TCDM conflict, instruction fetch and load-use stalls, and idle (the rest: cores asleep,
waiting for the master's DMA or at a barrier, and the stalls not listed); DMA wait is the share of the
kernel's cycles in which the master waits for the cluster DMA.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from harness import platform as platmod

# (label, kind, step, which kernels of the kind: "batched" linear layers run 16 samples as one product)
FAMILIES = [
    ("pw fw", "pw", "fw", None), ("pw ig", "pw", "ig", None), ("pw wg", "pw", "wg", None),
    ("dw fw", "dw", "fw", None), ("dw ig", "dw", "ig", None), ("dw wg", "dw", "wg", None),
    ("conv fw", "conv", "fw", None),
    ("linear, 16 samples, fw", "linear", "fw", "batched"), ("linear, 16 samples, ig", "linear", "ig", "batched"),
    ("linear, 16 samples, wg", "linear", "wg", "batched"),
]
STALLS = ("cluster_stall_tcdm_conflict", "cluster_stall_fetch", "cluster_stall_load_use")


def rows(df: pd.DataFrame, cores: int) -> list[dict]:
    out = []
    stall_cols = [c for c in df.columns if c.startswith("cluster_stall_") and c != "cluster_stall_wait"]
    for label, kind, step, which in FAMILIES:
        x = df[(df["kind"] == kind) & (df["step"] == step)]
        if which == "batched":
            x = x[x["h"] * x["w"] > 1]
        if x.empty:
            continue
        core_cycles = cores * x["cycles"]
        products = (x["macs"] / 2) / core_cycles
        other = (x["cluster_instructions"] - x["macs"] / 2) / core_cycles
        busy = (x["cluster_instructions"] + x[stall_cols].sum(axis=1)) / core_cycles
        out.append({"family": label, "n": len(x), "lo": x["mac_per_cycle"].min(), "hi": x["mac_per_cycle"].max(),
                    "products": products.mean(), "other": other.mean(),
                    **{s: (x[s] / core_cycles).mean() for s in STALLS},
                    "idle": (1 - busy).clip(lower=0).mean(), "dma": (x["dma_wait_cycles"] / x["cycles"]).mean()})
    return out


def markdown(rs: list[dict]) -> str:
    def pct(v):
        return f"{100 * v:.1f} %" if v < 0.1 else f"{100 * v:.0f} %"
    lines = ["| family | MAC/cycle | products | other instr. | TCDM | fetch | load-use | idle | DMA wait |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rs:
        lines.append(f"| {r['family']} | {r['lo']:.2f} - {r['hi']:.2f} | {pct(r['products'])} | {pct(r['other'])} | "
                     f"{pct(r['cluster_stall_tcdm_conflict'])} | {pct(r['cluster_stall_fetch'])} | {pct(r['cluster_stall_load_use'])} | "
                     f"{pct(r['idle'])} | {pct(r['dma'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.kernels.families", description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", default="results/kernels/kernels.csv")
    ap.add_argument("--platform", default="paper")
    a = ap.parse_args(argv)
    path = Path(a.csv)
    if not path.is_file():
        print(f"pulp-odl: error: {path}: no such file; run `make kernels` first", file=sys.stderr)
        return 2
    df = pd.read_csv(path)
    df = df[df["platform"] == a.platform]
    print(markdown(rows(df, platmod.load(a.platform).cluster["cores"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
