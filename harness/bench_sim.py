"""`make bench-sim`: simulated instructions per host second, on one core and on the 8-core
cluster (all cores counted), for a long loop of integer, FP32 and FP16 work. A benchmark that
prints figures, not a test."""
from __future__ import annotations

import tempfile
from pathlib import Path

from harness import ROOT, platform as platmod, toolchain
from harness.backends import embedded

BENCH = ROOT / "pulp_kernels" / "bench"
CASES = (("single core (FC)", "sim_loop.c", 3_000_000), ("8-core cluster", "sim_loop_cluster.c", 400_000))


def main() -> int:
    plat = platmod.load(platmod.DEFAULT_PLATFORM)
    print(f"platform {plat.name}; best of 3 runs each")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, src, iters in CASES:
            elf = toolchain.build([BENCH / src], Path(tmp) / f"{src}.elf", plat, opt="2", defines=[f"ITERS={iters}"])
            runs = [embedded.run(elf, plat) for _ in range(3)]
            best = max(runs, key=lambda r: r["mips"])
            same = len({r["cycles"] for r in runs}) == 1
            rates[label] = best["mips"]
            print(f"{label:18s} {best['instructions']:>12,} instructions  {best['cycles']:>12,} cycles  "
                  f"{best['host_seconds']:6.3f} s  {best['mips']:7.1f} M instr/s  (cycles identical: {same})")
    one, many = rates[CASES[0][0]], rates[CASES[1][0]]
    print(f"8-core slowdown per simulated instruction: {one / many:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
