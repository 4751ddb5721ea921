"""`pulp-odl experiment NAME`: run an experiment of experiments/*.toml and write its result tables."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from rich.console import Console

from harness import validate
from harness.commands.layers import console as stdout_console
from harness.experiments.options import executor_arguments
from harness.experiments import pipeline, spec as specmod, tables

NAME = "experiment"
HELP = "run an experiment (experiments/NAME.toml): its kernels in parallel, cached, then its latency tables"
ORDER = 45


def add_arguments(p) -> None:
    p.add_argument("name", metavar="NAME",
                   help=f"experiment name ({', '.join(specmod.available())}) or path to a .toml file")
    p.add_argument("--jobs", type=validate.jobs_arg(),
                   help=f"parallel kernel runs, at most {validate.JOBS_PER_CORE} per host core (default: one per host core)")
    executor_arguments(p)
    p.add_argument("--platform", action="append", metavar="P",
                   help="run on platform P instead of the experiment's own (repeatable)")
    p.add_argument("--deployment", choices=("deployed", "isolated"),
                   help="latency experiments: whole deployed training steps (default) or every op as an isolated "
                        "kernel program")
    p.add_argument("--no-cache", action="store_true", help="rerun every kernel (the cache is refreshed, not read)")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results directory (default: results/, or $PULP_ODL_RESULTS)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no tables, only the summary lines")
    p.add_argument("--headline", action="store_true",
                   help="latency experiments: three lines (memory, latency per task, backward MAC/cycle) instead of "
                        "the table")


def _isolated_beside(res):
    """The latency table of the same experiment run with --deployment isolated, when there is one."""
    if res.plan.experiment.deployment != "deployed":
        return None
    path = res.outdir.parent / f"{res.outdir.name}-isolated" / "latency.csv"
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return None   # an unreadable neighbour only loses its column here; `pulp-odl report` says why


def run(args) -> int:
    err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 200)
    res = pipeline.run_experiment(args.name, platforms=tuple(args.platform or ()), jobs=args.jobs,
                                  use_cache=not args.no_cache, results=args.results, console=err,
                                  progress=not args.quiet, deployment=args.deployment, executor=args.executor,
                                  scheduler=args.scheduler)
    out = stdout_console()
    if args.headline and "latency" in res.frames:
        for line in tables.headline(res.frames["latency"]):
            out.print(line, highlight=False)
    elif not args.quiet:
        title = f"{res.plan.experiment.name}: {res.plan.experiment.description}"
        if "latency" in res.frames:
            out.print(tables.latency_table(res.frames["latency"], title, isolated=_isolated_beside(res)))
        else:
            out.print(tables.kernel_table(res.frames["kernels"], title))
    out.print(f"wrote {', '.join(sorted(p.name for p in res.outdir.iterdir()))} in {res.outdir}")
    if not res.ok:
        err.print(pipeline.error_table(res.outcome))
        left = pipeline.incomplete(res)
        # Kernels whose tensors do not fit the platform's memories are a property of the point, not a
        # failure of the harness: reported here and in meta.json, with a zero exit status.
        capacity_only = all("does not fit" in msg for msg in res.outcome.errors.values())
        verb = "do not fit the platform" if capacity_only else "failed"
        err.print(f"{res.plan.experiment.name}: {len(res.outcome.errors)} kernel(s) {verb}"
                  + (f"; {len(left)} of {len(res.plan.points)} points left out of the tables (listed in meta.json)"
                     if left else ""))
        return 0 if capacity_only else 1
    return 0
