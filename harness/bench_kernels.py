"""`make bench-kernels`: MAC/cycle of the generated fw/wg/ig kernels on both platforms, at p = 1 and
p = 0.7, next to the reference kernels' figures. A benchmark that prints figures, not a test."""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from rich.console import Console
from rich.table import Table

from harness.kernels import runner
from harness.kernels import spec as specmod

SHAPES = (
    ("pw 64->64 16x16", dict(kind="pw", cin=64, cout=64, h=16, w=16)),
    ("pw 128->128 8x8", dict(kind="pw", cin=128, cout=128, h=8, w=8)),
    ("pw 96->576 4x4", dict(kind="pw", cin=96, cout=576, h=4, w=4)),
    ("pw 96->576 8x8", dict(kind="pw", cin=96, cout=576, h=8, w=8)),
    ("dw 3x3 s1 64ch 16x16", dict(kind="dw", cin=64, cout=64, h=16, w=16, k=3, stride=1)),
    ("dw 3x3 s2 144ch 16x16", dict(kind="dw", cin=144, cout=144, h=16, w=16, k=3, stride=2)),
    ("conv 3x3 s2 3->24 64x64", dict(kind="conv", cin=3, cout=24, h=64, w=64, k=3, stride=2)),
    ("linear 1280->10", dict(kind="linear", cin=1280, cout=10, h=1, w=1)),
    ("linear 256->256", dict(kind="linear", cin=256, cout=256, h=1, w=1)),
)
STEPS = ("fw", "wg", "ig")
PLATFORMS = ("paper", "pulp-open")
PS = (1.0, 0.7)
# PULP-TrainLib FP16 on GVSoC, whole cluster (method.md): pointwise fw/wg/ig, depthwise at best
REFERENCE = {("pw", "fw"): 3.07, ("pw", "wg"): 3.29, ("pw", "ig"): 2.78, ("dw", "fw"): 0.86, ("dw", "wg"): 0.86,
             ("dw", "ig"): 0.86}


def _one(job):
    label, shape, step, plat, p = job
    sp = specmod.make(step=step, platform=plat, p_in=p, placement="l2", **shape)
    r = runner.run_spec(sp)
    return job, (r["mac_per_cycle"], r["compute_mac_per_cycle"]), r["ok"], r["cycles"]


def main() -> int:
    jobs = [(label, shape, step, plat, p) for label, shape in SHAPES for step in STEPS for plat in PLATFORMS for p in PS]
    t0 = time.time()
    results = {}
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=workers) as ex:
        for job, mpc, ok, cycles in ex.map(_one, jobs):
            results[(job[0], job[2], job[3], job[4])] = (mpc, ok)
    t = Table(title="MAC/cycle of the generated kernels (whole cluster): with DMA in/out / compute only; "
                    "limits: paper 16, pulp-open 8")
    t.add_column("kernel")
    t.add_column("step")
    for plat in PLATFORMS:
        for p in PS:
            t.add_column(f"{plat} p={p:g}", justify="right")
    t.add_column("reference", justify="right")
    bad = 0
    for label, shape in SHAPES:
        for step in STEPS:
            cells = []
            for plat in PLATFORMS:
                for p in PS:
                    mpc, ok = results[(label, step, plat, p)]
                    bad += not ok
                    cells.append(f"{mpc[0]:.2f} / {mpc[1]:.2f}" + ("" if ok else " (MISMATCH)"))
            ref = REFERENCE.get((shape["kind"], step))
            t.add_row(label, step, *cells, f"{ref:.2f}" if ref else "")
    Console(width=160).print(t)
    print(f"{len(jobs)} kernel runs in {time.time() - t0:.0f} s on {workers} processes; numeric mismatches: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
