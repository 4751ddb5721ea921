"""Cycle-count regression: the `regress` experiment's kernels against results/golden/regress.csv.

Cycle counts are deterministic, so the comparison is exact: any difference in any column of
GOLDEN_COLUMNS, any kernel missing from the new run or from the golden file, is a failure.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.table import Table

from harness import ROOT
from harness.errors import UserError

EXPERIMENT = "regress"
GOLDEN = ROOT / "results" / "golden" / "regress.csv"
KEY = "kernel"
GOLDEN_COLUMNS = ["kernel", "platform", "step", "cycles", "compute_cycles", "dma_wait_cycles", "total_cycles",
                  "instructions"]
COUNTS = GOLDEN_COLUMNS[3:]


def golden_frame(kernels: pd.DataFrame) -> pd.DataFrame:
    return kernels[GOLDEN_COLUMNS].sort_values(KEY).reset_index(drop=True)


def read_golden(path: Path) -> pd.DataFrame:
    if not Path(path).is_file():
        raise UserError(f"no golden cycle counts at {path}; write them with 'make golden' (pulp-odl regress --update)")
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a golden CSV ({str(e).splitlines()[0]})") from None
    missing = [c for c in GOLDEN_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(f"{path}: lacks column(s) {', '.join(missing)}; rewrite it with 'make golden'")
    return df


def compare(golden: pd.DataFrame, new: pd.DataFrame) -> list[dict]:
    """Every difference: one dict per (kernel, column), with old/new (None where the kernel is absent)."""
    old = golden.set_index(KEY)
    cur = new.set_index(KEY)
    diffs = []
    for k in sorted(set(old.index) | set(cur.index)):
        if k not in cur.index:
            diffs.append({"kernel": k, "column": "(kernel)", "old": "present", "new": "missing", "pct": None})
            continue
        if k not in old.index:
            diffs.append({"kernel": k, "column": "(kernel)", "old": "missing", "new": "present", "pct": None})
            continue
        for col in COUNTS:
            a, b = int(old.at[k, col]), int(cur.at[k, col])
            if a != b:
                diffs.append({"kernel": k, "column": col, "old": a, "new": b,
                              "pct": 100.0 * (b - a) / a if a else None})
    return diffs


def diff_table(diffs: list[dict], golden: Path) -> Table:
    t = Table(title=f"{len({d['kernel'] for d in diffs})} kernel(s) differ from {golden}")
    for head in ("kernel", "counter", "old", "new", "change"):
        t.add_column(head, justify="left" if head in ("kernel", "counter") else "right")
    for d in diffs:
        fmt = (lambda v: f"{v:,}" if isinstance(v, int) else str(v))
        pct = "" if d["pct"] is None else f"{d['pct']:+.2f}%"
        t.add_row(d["kernel"], d["column"], fmt(d["old"]), fmt(d["new"]), pct)
    return t
