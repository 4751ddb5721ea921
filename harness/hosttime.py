"""Where a kernel run's host time goes: generating its C, compiling it, simulating it, checking it.

A run's phases are timed in the process that runs it (a sweep's worker); `take()` returns what was
spent since the last `take()` and starts over. Generation is what the other three leave of the
run's wall time (the Python that builds the program and its data), so the four add up to it. A
process that hands work to others (a sweep's planning, whose code checks run in forked workers)
waits for them `idle()`, which is not its own time, and `absorb()`s what each of them took.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

PHASES = ("generate", "compile", "simulate", "check")

_spent = {p: 0.0 for p in PHASES[1:]}
_counts = {"elf_cached": 0, "elf_built": 0}
_start = time.perf_counter()
_idle = 0.0        # waiting for other processes since the last take()
_others: dict = {}  # what other processes took, absorbed since the last take()


@contextmanager
def phase(name: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _spent[name] += time.perf_counter() - t0


@contextmanager
def idle():
    """Time spent waiting for other processes, which report their own: not this process's generation."""
    global _idle
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _idle += time.perf_counter() - t0


def absorb(part: dict) -> None:
    """Another process's take(), added to what this process's next take() returns."""
    add(_others, part)


def count(name: str) -> None:
    _counts[name] += 1


def reset() -> None:
    global _start, _idle
    for p in _spent:
        _spent[p] = 0.0
    for c in _counts:
        _counts[c] = 0
    _idle = 0.0
    _others.clear()
    _start = time.perf_counter()


def take() -> dict:
    """Seconds per phase (and ELFs built or taken from the cache) since the last take() or reset()."""
    wall = time.perf_counter() - _start - _idle
    out = dict(_spent)
    out["generate"] = max(0.0, wall - sum(_spent.values()))
    out.update(_counts)
    add(out, _others)
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}
    reset()
    return {k: out[k] for k in (*PHASES, *_counts)}


def add(total: dict, part: dict) -> None:
    """Add one run's take() to a sweep's total."""
    for k, v in part.items():
        total[k] = total.get(k, 0) + v
