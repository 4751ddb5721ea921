"""One experiment end to end: load, expand into unique kernels, run them through the cache, write
the result tables. The `experiment` and `regress` commands are thin layers over `run_experiment`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness import hosttime, paths
from harness import platform as platmod
from harness.experiments import cache as cachemod
from harness.experiments import execute, outdir as outdirmod, plan as planmod, spec as specmod, tables
from harness.experiments.execute import Outcome
from harness.experiments.plan import Plan


@dataclass
class Result:
    plan: Plan
    outcome: Outcome
    outdir: Path
    frames: dict          # stem -> DataFrame (points with a failed kernel left out)

    @property
    def ok(self) -> bool:
        return not self.outcome.errors


def run_experiment(name: str, platforms: tuple[str, ...] | None = None, jobs: int | None = None,
                   use_cache: bool = True, results: Path | None = None, console: Console | None = None,
                   progress: bool = True, deployment: str | None = None, executor: str = "local",
                   scheduler: str | None = None) -> Result:
    runner = make_executor(executor, scheduler, jobs)   # before any work: a bad combination costs nothing
    exp = specmod.load(name)
    if deployment:
        if exp.kind != "latency":
            from harness.errors import UserError
            raise UserError(f"--deployment applies to latency experiments; {exp.name} is a {exp.kind} experiment")
        exp = exp.with_deployment(deployment)
    if platforms:
        for p in platforms:
            platmod.load(p)
        exp = exp.with_platforms(tuple(platforms))
    root = Path(results) if results is not None else cachemod.results_root()
    outdir = outdirmod.prepare(root, exp.name, exp.path)   # before any work: a bad path costs nothing
    try:
        runner.connect()       # an unreachable cluster, too
        hosttime.reset()
        plan = planmod.expand(exp, jobs or execute.default_jobs())   # its steps' code checks: this host's processes
        planning = hosttime.take()
        console = console or Console(stderr=True, highlight=False)
        what = "stage programs" if exp.kind == "latency" and exp.deployment == "deployed" else "kernels"
        console.print(f"{exp.name}: {len(plan.points)} points, {len(plan.specs)} unique {what} on "
                      f"{', '.join(exp.platforms)}")
        outcome = execute.run_specs(plan.specs, use_cache=use_cache, cache=cachemod.Cache(root / "cache"),
                                    console=console, progress=progress, executor=runner)
        outcome.planning = planning
    finally:
        runner.stop()
    console.print(f"{exp.name}: {outcome.cached} cached, {outcome.ran} run, {len(outcome.errors)} failed "
                  f"in {outcome.wall:.1f} s ({runner.describe()})")
    if outcome.host or outcome.planning.get("elf_built"):
        console.print(f"{exp.name}: {host_split(outcome.total_host())}")
        if outcome.planning.get("elf_built"):
            console.print(f"{exp.name}: of which the planning's code checks: {host_split(outcome.planning, short=True)}")
    if outcome.recomputed:
        first, why = sorted(outcome.recomputed.items())[0]
        console.print(f"{exp.name}: {len(outcome.recomputed)} cached row(s) were damaged and recomputed "
                      f"(e.g. {first}: {why})")
    with paths.user_path(outdir, "--results directory"):
        frames = tables.write_results(plan, outcome, outdir)
        if exp.kind == "latency" and exp.deployment == "deployed" and exp.timeline:
            from harness.experiments import steptimeline
            steptimeline.write(plan, outdir, console)
    return Result(plan, outcome, outdir, frames)


def host_split(host: dict, short: bool = False) -> str:
    """Host time by phase (summed over processes), and how many ELFs were built or came from the ELF cache."""
    total = sum(host.get(p, 0.0) for p in hosttime.PHASES) or 1.0
    phases = [p for p in hosttime.PHASES if host.get(p, 0.0) >= 0.05] if short else hosttime.PHASES
    parts = ", ".join(f"{p} {host.get(p, 0.0):.1f} s ({100 * host.get(p, 0.0) / total:.0f} %)" for p in phases)
    return (f"{'' if short else 'host time, planning and runs: '}{parts}; {host.get('elf_built', 0)} ELFs built, "
            f"{host.get('elf_cached', 0)} from the ELF cache")


def make_executor(kind: str, scheduler: str | None, jobs: int | None):
    """The executor of `--executor KIND [--scheduler ADDRESS] [--jobs N]`."""
    if kind == "dask":
        from harness.experiments import dask_executor
        return dask_executor.DaskExecutor(scheduler=scheduler, workers=jobs)
    if scheduler is not None:
        from harness.errors import UserError
        raise UserError(f"--scheduler {scheduler}: a scheduler is used by --executor dask only; add --executor dask")
    return execute.LocalPool(jobs)


def incomplete(res: Result) -> list[str]:
    return [tables.point_label(pt) for pt in res.plan.points if not tables.complete(pt, res.outcome.rows)]


def error_table(outcome: Outcome) -> Table:
    t = Table(title=f"{len(outcome.errors)} kernel(s) failed")
    t.add_column("kernel")
    t.add_column("error")
    for name, msg in sorted(outcome.errors.items()):
        t.add_row(name, msg)
    return t
