"""`make bench-sim`: simulated instructions per host second on a long single-core loop
(integer, FP32 and FP16 work). A benchmark that prints figures, not a test."""
from __future__ import annotations

import tempfile
from pathlib import Path

from harness import ROOT, platform as platmod, toolchain
from harness.backends import embedded

SOURCE = ROOT / "pulp_kernels" / "bench" / "sim_loop.c"


def main() -> int:
    plat = platmod.load(platmod.DEFAULT_PLATFORM)
    with tempfile.TemporaryDirectory() as tmp:
        elf = toolchain.build([SOURCE], Path(tmp) / "sim_loop.elf", plat, opt="2", defines=["ITERS=3000000"])
        runs = [embedded.run(elf, plat) for _ in range(3)]
    cycles = {r["cycles"] for r in runs}
    best = max(runs, key=lambda r: r["mips"])
    print(f"platform            {plat.name}")
    print(f"program             {SOURCE.relative_to(ROOT)} (3,000,000 iterations)")
    print(f"instructions        {best['instructions']:,}")
    print(f"cycles              {best['cycles']:,} (identical in all 3 runs: {len(cycles) == 1})")
    print(f"host seconds        {best['host_seconds']:.3f} (best of 3)")
    print(f"single core         {best['mips']:.1f} M simulated instructions per second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
