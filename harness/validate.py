"""Checked values: argparse types for the command lines, and range checks for values read from files.

An argparse type must raise argparse.ArgumentTypeError (or ValueError): argparse turns either into
its own one-line error with exit status 2. Anything else raised inside a type escapes parse_args
as a traceback, so every numeric option of every command uses these.

`check_int` and `check_number` do the same for values read from files (experiment TOML, CSVs): they
raise UserError with a message naming where the value came from and the allowed range.
"""
from __future__ import annotations

import argparse
import math
import os

from harness.errors import UserError

UINT64_MAX = 2 ** 64 - 1
JOBS_PER_CORE = 4      # more workers than this per host core only queue for the CPU


def _range_text(lo, hi, lo_open: bool = False, hi_open: bool = False) -> str:
    if hi is None:
        return f"> {lo:g}" if lo_open else f">= {lo:g}" if isinstance(lo, float) else f"at least {lo}"
    if isinstance(lo, int) and isinstance(hi, int) and not lo_open and not hi_open:
        return f"from {lo} to {hi}"
    return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def parse_int(text: str, lo: int | None = 1, hi: int | None = None) -> int:
    """A decimal (or 0x-prefixed) integer within [lo, hi]; ValueError with the reason otherwise."""
    t = str(text).strip()
    try:
        v = int(t, 0) if t.lower().startswith(("0x", "-0x")) else int(t, 10)
    except ValueError:
        raise ValueError(f"'{text}' is not an integer (give a whole number {_range_text(lo, hi)})") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"must be an integer {_range_text(lo, hi)}, got {text}")
    return v


def parse_number(text: str, lo: float, hi: float | None = None, lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite number within the given interval; ValueError with the reason otherwise."""
    try:
        v = float(str(text).strip())
    except ValueError:
        raise ValueError(f"'{text}' is not a number (give a value {_range_text(lo, hi, lo_open, hi_open)})") from None
    if not math.isfinite(v) or v < lo or (lo_open and v == lo) or (hi is not None and (v > hi or (hi_open and v == hi))):
        raise ValueError(f"must be a number {_range_text(lo, hi, lo_open, hi_open)}, got {text}")
    return v


def _argtype(fn, name: str):
    def conv(text):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    conv.__name__ = name
    return conv


def int_arg(lo: int | None = 1, hi: int | None = None):
    """argparse type: an integer in [lo, hi]."""
    return _argtype(lambda t: parse_int(t, lo, hi), "integer")


def number_arg(lo: float, hi: float | None = None, lo_open: bool = False, hi_open: bool = False):
    """argparse type: a finite number in the interval."""
    return _argtype(lambda t: parse_number(t, lo, hi, lo_open, hi_open), "number")


def fraction_arg():
    """argparse type: a partiality p in (0, 1]."""
    return number_arg(0.0, 1.0, lo_open=True)


def _hw(text: str) -> tuple[int, int]:
    parts = str(text).strip().lower().split("x")
    if len(parts) not in (1, 2):
        raise ValueError(f"'{text}' is not H or HxW (e.g. 16 or 16x8)")
    try:
        vals = [parse_int(p, 1, MAX_EXTENT) for p in parts]
    except ValueError:
        raise ValueError(f"'{text}' is not H or HxW with whole numbers from 1 to {MAX_EXTENT} (e.g. 16 or 16x8)") from None
    return (vals[0], vals[-1])


# Tensor extents beyond this cannot fit any platform's memories; refusing them here keeps absurd values
# (1e20 channels) out of the arithmetic that sizes the test data.
MAX_EXTENT = 1 << 20
MAX_COUNT = 10 ** 12   # sample counts (buffer sizes, samples per task): far beyond any MCU's memory

hw_arg = _argtype(_hw, "hw")


def _shape(text: str) -> tuple[int, int, int]:
    parts = str(text).strip().lower().split("x")
    try:
        if len(parts) != 3:
            raise ValueError
        return tuple(parse_int(p, 1, MAX_EXTENT) for p in parts)
    except ValueError:
        raise ValueError(f"'{text}' is not CxHxW with whole numbers from 1 to {MAX_EXTENT} (e.g. 1x49x10)") from None


shape_arg = _argtype(_shape, "shape")


def max_jobs() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return JOBS_PER_CORE * max(1, cores)


def jobs_arg():
    """argparse type: parallel workers, from 1 to JOBS_PER_CORE per host core."""
    return _argtype(lambda t: parse_int(t, 1, max_jobs()), "jobs")


def _window(text: str) -> tuple[int, int | None]:
    parts = str(text).split(":")
    if len(parts) != 2:
        raise ValueError(f"'{text}' is not FROM:TO (cycles, e.g. 0:200000, or 100000: for the rest of the run)")
    start = parse_int(parts[0], 0, UINT64_MAX) if parts[0].strip() else 0
    end = parse_int(parts[1], 1, UINT64_MAX) if parts[1].strip() else None
    if end is not None and end <= start:
        raise ValueError(f"the window {text} is empty: FROM must be below TO")
    return start, end


def window_arg():
    """argparse type of --timeline-window: FROM:TO in cycles, either end may be left out."""
    return _argtype(_window, "window")


def cycles_arg():
    """argparse type: a cycle limit the simulator's 64-bit counter can hold."""
    return int_arg(1, UINT64_MAX)


# ---- values read from files ----

def check_int(where: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """`value` from a file must be an integer in [lo, hi]; `where` names file and key."""
    if isinstance(value, bool) or not isinstance(value, int) or (lo is not None and value < lo) \
            or (hi is not None and value > hi):
        raise UserError(f"{where}: must be an integer {_range_text(lo if lo is not None else 0, hi)}, got {value!r}")
    return value


def check_number(where: str, value, lo: float, hi: float | None = None, lo_open: bool = False,
                 hi_open: bool = False) -> float:
    """`value` from a file must be a finite number in the interval; `where` names file and key."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= lo \
        and not (lo_open and value == lo) and (hi is None or (value <= hi and not (hi_open and value == hi)))
    if not ok:
        raise UserError(f"{where}: must be a number {_range_text(lo, hi, lo_open, hi_open)}, got {value!r}")
    return float(value)


def check_bool(where: str, value) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{where}: must be true or false, got {value!r}")
    return value


# ---- CSV files (golden counts, result tables, accuracy files) ----

def _bad_cell(rule: tuple, value) -> str | None:
    """Why `value` breaks `rule` (None when it is fine). Rules: ("str",), ("int", lo, hi),
    ("number", lo, hi, lo_open, hi_open)."""
    kind = rule[0]
    if kind == "str":
        return None if isinstance(value, str) and value.strip() else "must be a non-empty text"
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if kind == "int":
        lo, hi = rule[1], rule[2]
        if not math.isfinite(v) or not v.is_integer() or v < lo or (hi is not None and v > hi):
            return f"must be an integer {_range_text(lo, hi)}"
        return None
    lo, hi, lo_open, hi_open = (list(rule[1:]) + [None, False, False])[:4]
    if not math.isfinite(v) or v < lo or (lo_open and v == lo) or (hi is not None and (v > hi or (hi_open and v == hi))):
        return f"must be a number {_range_text(lo, hi, lo_open, hi_open)}"
    return None


def read_csv(path, label: str, columns: dict, fix: str, unique: str | None = None):
    """Read a CSV whose columns must satisfy `columns` (name -> rule, see _bad_cell); any problem is one
    line naming the file, the row, the column and the allowed values, then `fix`. Integer columns come
    back as int64. `unique` names a column whose values must not repeat."""
    import io

    import pandas as pd

    from harness import paths

    text = paths.read_text(path, label, fix)
    where = f"{label} {path}" if label else str(path)
    if not text.strip():
        raise UserError(f"{where}: empty file; {fix}")
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise UserError(f"{where}: not a CSV table ({str(e).splitlines()[0]}); {fix}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UserError(f"{where}: lacks column(s) {', '.join(missing)}; {fix}")
    for col, rule in columns.items():
        for i, value in enumerate(df[col]):
            why = _bad_cell(rule, value)
            if why:
                raise UserError(f"{where}: line {i + 2}, column {col}: {why}, got {value!r}; {fix}")
    if unique is not None:
        dup = df[unique][df[unique].duplicated()]
        if len(dup):
            i = int(dup.index[0])
            raise UserError(f"{where}: line {i + 2} repeats {unique} {dup.iloc[0]!r}; {fix}")
    out = pd.read_csv(io.StringIO(text))
    for col, rule in columns.items():
        if rule[0] == "int":
            out[col] = pd.to_numeric(out[col]).astype("int64")
        elif rule[0] == "number":
            out[col] = pd.to_numeric(out[col]).astype(float)
        else:
            out[col] = df[col]
    return out
