"""`make bench-sim`: simulated instructions per host second, on one core and on the 8-core
cluster (all cores counted), for a long loop of integer, FP32 and FP16 work. A benchmark that
prints figures, not a test.

Each run is timed twice: wall time (the simulator's own clock around its run) and the CPU time of
the thread that runs it (the whole backend call, ELF read and machine included: about a millisecond).
On a host shared with other work the wall time counts the time the run waited for a CPU; the CPU
time does not, so the slowdown is taken from CPU time, and the wall figures are printed beside."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import ROOT, platform as platmod, toolchain
from harness.backends import embedded

BENCH = ROOT / "pulp_kernels" / "bench"
CASES = (("single core (FC)", "sim_loop.c", 3_000_000), ("8-core cluster", "sim_loop_cluster.c", 400_000))


def main() -> int:
    plat = platmod.load(platmod.DEFAULT_PLATFORM)
    print(f"platform {plat.name}; best of 3 runs each (by CPU time, and by wall time)")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, src, iters in CASES:
            elf = toolchain.build([BENCH / src], Path(tmp) / f"{src}.elf", plat, opt="2", defines=[f"ITERS={iters}"])
            runs = []
            for _ in range(3):
                t0 = time.thread_time()
                r = embedded.run(elf, plat)
                r["cpu_seconds"] = time.thread_time() - t0
                runs.append(r)
            best = min(runs, key=lambda r: r["cpu_seconds"])
            wall = max(runs, key=lambda r: r["mips"])
            same = len({r["cycles"] for r in runs}) == 1
            rates[label] = (best["instructions"] / best["cpu_seconds"] / 1e6, wall["mips"])
            print(f"{label:18s} {best['instructions']:>12,} instructions  {best['cycles']:>12,} cycles  "
                  f"CPU {best['cpu_seconds']:6.3f} s  {rates[label][0]:7.1f} M instr/s   "
                  f"wall {wall['host_seconds']:6.3f} s  {wall['mips']:7.1f} M instr/s  (cycles identical: {same})")
    one, many = rates[CASES[0][0]], rates[CASES[1][0]]
    print(f"8-core slowdown per simulated instruction: {one[0] / many[0]:.2f}x (CPU time; wall time {one[1] / many[1]:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
