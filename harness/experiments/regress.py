"""Cycle-count regression: the `regress` experiment's kernels against results/golden/regress.csv.

Cycle counts are deterministic, so the comparison is exact: any difference in any column of
GOLDEN_COLUMNS, any kernel missing from the new run or from the golden file, is a failure.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.table import Table

from harness import ROOT
from harness import paths, validate
from harness.errors import UserError

EXPERIMENT = "regress"
GOLDEN = ROOT / "results" / "golden" / "regress.csv"
KEY = "kernel"
GOLDEN_COLUMNS = ["kernel", "platform", "step", "cycles", "compute_cycles", "dma_wait_cycles", "total_cycles",
                  "instructions"]
COUNTS = GOLDEN_COLUMNS[3:]


def golden_frame(kernels: pd.DataFrame) -> pd.DataFrame:
    return kernels[GOLDEN_COLUMNS].sort_values(KEY).reset_index(drop=True)


GOLDEN_FIX = "rewrite it with 'make golden' (pulp-odl regress --update)"
GOLDEN_RULES = {"kernel": ("str",), "platform": ("str",), "step": ("str",),
                **{c: ("int", 0, None) for c in COUNTS}}


def read_golden(path: Path) -> pd.DataFrame:
    """The golden counts, checked when read (before any kernel runs): every count a non-negative
    integer, every kernel once."""
    if not Path(path).exists():
        raise UserError(f"no golden cycle counts at {path}; write them with 'make golden' (pulp-odl regress --update)")
    return validate.read_csv(path, "--golden", GOLDEN_RULES, GOLDEN_FIX, unique=KEY)


def is_golden(path: Path) -> bool:
    """An existing file `regress --update` may replace: empty or a golden CSV (its header)."""
    return paths.starts_with(",".join(GOLDEN_COLUMNS))(Path(path))


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
