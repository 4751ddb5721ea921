"""`pulp-odl regress`: rerun the golden kernel set and compare its cycle counts exactly."""
from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from harness import paths, validate
from harness.commands.layers import console as stdout_console
from harness.experiments.options import executor_arguments
from harness.experiments import pipeline, regress, tables

NAME = "regress"
HELP = "rerun experiments/regress.toml and fail on any cycle count that differs from results/golden/regress.csv"
ORDER = 46


def add_arguments(p) -> None:
    p.add_argument("--update", action="store_true", help="rewrite the golden file with the new counts")
    p.add_argument("--golden", type=Path, default=regress.GOLDEN, metavar="FILE",
                   help="golden CSV (default: results/golden/regress.csv)")
    p.add_argument("--jobs", type=validate.jobs_arg(),
                   help=f"parallel kernel runs, at most {validate.JOBS_PER_CORE} per host core (default: one per host core)")
    executor_arguments(p)
    p.add_argument("--no-cache", action="store_true", help="rerun every kernel instead of reading cached rows")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results directory for the run and its cache (default: results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 200)
    if args.update:   # the file is checked before any kernel runs, so that the new counts can be written
        paths.output_file(args.golden, "--golden", owned=regress.is_golden, kind="a golden CSV")
    golden = None if args.update else regress.read_golden(args.golden)  # a bad file fails before any run
    res = pipeline.run_experiment(regress.EXPERIMENT, jobs=args.jobs, use_cache=not args.no_cache,
                                  results=args.results, console=err, progress=not args.quiet, executor=args.executor,
                                  scheduler=args.scheduler)
    if not res.ok:
        err.print(pipeline.error_table(res.outcome))
        return 1
    new = regress.golden_frame(res.frames["kernels"])
    out = stdout_console()
    if args.update:
        with paths.user_path(args.golden, "--golden path"):
            tables.write_csv(new, args.golden)
        out.print(f"wrote {len(new)} golden cycle counts to {args.golden}")
        return 0
    diffs = regress.compare(golden, new)
    if diffs:
        out.print(regress.diff_table(diffs, args.golden))
        out.print(f"regress: FAILED, {len(diffs)} difference(s); if intended, rewrite the goldens with 'make golden'")
        return 1
    out.print(f"regress: {len(new)} kernels, every cycle count equals {args.golden}")
    return 0

