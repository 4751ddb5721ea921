"""`make bench-sim`: its figures come from paired runs of the two loops, every run with the same cycles."""
from __future__ import annotations

import re

import pytest

from harness import bench_sim
from tests.conftest import needs_clang


def test_pairs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as e:
        bench_sim.main(["--pairs", "0"])
    assert e.value.code == 2
    assert "--pairs must be at least 1" in capsys.readouterr().err


@needs_clang
def test_paired_runs_print_rates_and_the_slowdown(monkeypatch, capsys):
    # the same two programs with short loops: the figures' shape, not their values
    monkeypatch.setattr(bench_sim, "CASES", tuple((label, src, 2000) for label, src, _ in bench_sim.CASES))
    assert bench_sim.main(["--pairs", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "M instr/s" in line]
    assert len(rows) == 2 and all("(cycles identical: True)" in r for r in rows)
    for row in rows:
        lo, hi = map(float, re.search(r"\(([\d.]+) - ([\d.]+)\)", row).groups())
        median = float(re.search(r"CPU\s+([\d.]+) M instr/s", row).group(1))
        assert 0 < lo <= median <= hi
    m = re.search(r"slowdown per simulated instruction: ([\d.]+)x, median of 3 pairs \(([\d.]+) - ([\d.]+);", out)
    assert m and float(m.group(2)) <= float(m.group(1)) <= float(m.group(3))
