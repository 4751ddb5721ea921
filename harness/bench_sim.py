"""`make bench-sim`: simulated instructions per host second, on one core and on the 8-core cluster (all
cores counted), for a long loop of integer, FP32 and FP16 work. A benchmark that prints figures, not a test.

Each run is timed twice: wall time (the simulator's own clock around its run) and the CPU time of the
thread that runs it (the whole backend call, ELF read and machine included: about a millisecond). On a
host shared with other work the wall time counts the time the run waited for a CPU; the CPU time does
not, so rates and the slowdown are taken from CPU time, and the wall figures are printed beside.

A shared host also drifts: the same run can take 15 % longer a minute later. So the two programs run in
pairs, one after the other (in alternating order), and the slowdown is the median of the pairs' ratios;
each rate is the median of its runs, the spread printed beside it."""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from harness import ROOT, platform as platmod, toolchain
from harness.backends import embedded

BENCH = ROOT / "pulp_kernels" / "bench"
CASES = (("single core (FC)", "sim_loop.c", 3_000_000), ("8-core cluster", "sim_loop_cluster.c", 400_000))


def _timed(elf: Path, plat) -> dict:
    t0 = time.thread_time()
    r = embedded.run(elf, plat)
    r["cpu_seconds"] = time.thread_time() - t0
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench_sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=7, help="runs of each program, paired (default 7)")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    plat = platmod.load(platmod.DEFAULT_PLATFORM)
    print(f"platform {plat.name}; {args.pairs} runs of each program in pairs, medians (CPU time of the "
          f"simulating thread; wall time beside)")
    with tempfile.TemporaryDirectory() as tmp:
        elfs = [toolchain.build([BENCH / src], Path(tmp) / f"{src}.elf", plat, opt="2", defines=[f"ITERS={iters}"])
                for _, src, iters in CASES]
        for elf in elfs:   # warm-up: page cache, the extension's first use
            embedded.run(elf, plat)
        runs: list[list[dict]] = [[], []]
        for i in range(args.pairs):
            for j in ((0, 1) if i % 2 == 0 else (1, 0)):
                runs[j].append(_timed(elfs[j], plat))
    rate = [[r["instructions"] / r["cpu_seconds"] / 1e6 for r in rs] for rs in runs]
    for (label, _, _), rs, rt in zip(CASES, runs, rate):
        same = len({r["cycles"] for r in rs}) == 1
        wall = statistics.median(r["mips"] for r in rs)
        print(f"{label:18s} {rs[0]['instructions']:>12,} instructions  {rs[0]['cycles']:>12,} cycles  "
              f"CPU {statistics.median(rt):7.1f} M instr/s ({min(rt):.1f} - {max(rt):.1f})   "
              f"wall {wall:7.1f} M instr/s  (cycles identical: {same})")
    ratios = [a / b for a, b in zip(rate[0], rate[1])]
    walls = [a["mips"] / b["mips"] for a, b in zip(runs[0], runs[1])]
    print(f"8-core slowdown per simulated instruction: {statistics.median(ratios):.2f}x, median of "
          f"{len(ratios)} pairs ({min(ratios):.2f} - {max(ratios):.2f}; wall time {statistics.median(walls):.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
