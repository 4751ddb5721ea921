"""Run a set of unique kernel specs in parallel, through the result cache.

Each kernel run (harness.kernels.runner.run_spec: generate, build with clang, simulate, check) is
independent, so they go to a process pool, one per host core by default, largest first so that no
big kernel starts last. A rich progress bar on stderr shows the runs done and an ETA weighted by
each kernel's MACs. Every finished row is written to the cache at once (harness.experiments.cache),
so a killed sweep resumes where it stopped.

Where the runs happen is an executor: LocalPool (this host's processes, the default) or
harness.experiments.dask_executor.DaskExecutor (a Dask cluster). Either yields the same result tuples
(`_work`), so the cache, the progress bar and the rows are the same whichever runs them.

A run that raises, or whose outputs do not match the NumPy reference (ok = False), is an error of
the experiment: it is reported in Outcome.errors and the other runs go on. Failures that follow from
the inputs (ok = False, UserError: build, tiling, a program that does not finish) are cached like
rows, so a rerun reports them again at once; `--no-cache` retries them.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from harness import hosttime, procs, toolchain
from harness.backends import embedded
from harness.errors import UserError
from harness.experiments import cache as cachemod
from harness.kernels import runner
from harness.kernels.spec import KernelSpec

INDEX_SAVE_SECONDS = 15.0   # between saves of the provenance memo during a sweep: each save writes all of it
                            # (5308 entries for fig4), in the process that also feeds the workers


@dataclass
class Outcome:
    rows: dict = field(default_factory=dict)        # spec name -> result row (ok rows only)
    provenance: dict = field(default_factory=dict)  # spec name -> provenance (cache key besides the spec)
    seconds: dict = field(default_factory=dict)     # spec name -> wall seconds of its run (when it ran)
    errors: dict = field(default_factory=dict)      # spec name -> one-line reason
    recomputed: dict = field(default_factory=dict)  # spec name -> why its cached row was not used (damaged)
    host: dict = field(default_factory=dict)        # the runs' host seconds per phase (harness.hosttime)
    planning: dict = field(default_factory=dict)    # the planning's (a deployed sweep's code checks build programs)
    cached: int = 0
    ran: int = 0
    wall: float = 0.0
    jobs: int = 1                                   # parallel runs (local jobs or cluster workers)
    executor: str = "local"                         # where they ran: "local" or "dask ADDRESS"

    def total_host(self) -> dict:
        """Host seconds per phase of the planning and the runs together: what the experiment cost."""
        out: dict = {}
        hosttime.add(out, self.planning)
        hosttime.add(out, self.host)
        return out


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def weight(spec: KernelSpec) -> float:
    """Rough cost of one run in units of the fixed cost (build + simulator start, ~0.6 s here):
    the simulation adds about that much per 5 million MACs."""
    return 1.0 + spec.macs() / 5e6


def mismatch(row: dict) -> str:
    """One line saying which outputs of a failed run were wrong."""
    parts = []
    for name, d in (row.get("outputs") or {}).items():
        bad = [f"{d['mismatches']} values off" if d.get("mismatches") else "",
               f"{d['pad_not_zero']} pad values not zero" if d.get("pad_not_zero") else ""]
        if any(bad):
            parts.append(f"{name}: {', '.join(b for b in bad if b)}")
    return f"numeric mismatch ({'; '.join(parts) or 'see max_abs_err'}), max |err| {row.get('max_abs_err', 0):.3g}"


def _work(spec: KernelSpec, provenance: dict | None, cache_root: str | None, read_cache: bool,
          known: frozenset | None = None):
    """In a worker: provenance if unknown, the cached entry if there is one, else a run.
    Returns (kind, provenance, payload, seconds, damaged): kind "hit" (payload: the cache entry), "ran"
    (the row), "failed" (an error message worth caching) or "error" (a message not to cache); damaged
    says why a cached row that was there could not be used. A worker that cannot read the cache (on
    another machine) is given the row keys the cache holds (`known`) instead: a key among them gives
    kind "probe", and the client reads the entry itself."""
    prov = provenance
    damaged = None
    t0 = time.perf_counter()
    hosttime.reset()
    try:
        prepared = None
        if prov is None:
            # a kernel is generated once: for the cache key, then for the run (stage jobs generate their own)
            if not hasattr(spec, "run"):
                try:
                    prepared = runner.prepare(spec)
                except UserError:
                    pass   # a kernel that does not fit: its provenance records the refusal, the run repeats it
            prov = cachemod.full_provenance(spec, prepared)
            if read_cache and known is not None:
                if cachemod.row_key(spec, prov) in known:
                    return "probe", prov, None, 0.0, None
            elif read_cache:
                entry, damaged = cachemod.Cache(cache_root).lookup(cachemod.row_key(spec, prov))
                if entry is not None:
                    return "hit", prov, entry, 0.0, None
            t0 = time.perf_counter()
        row = spec.run() if hasattr(spec, "run") else runner.run_spec(spec, prepared=prepared)
        row["host"] = hosttime.take()
        return "ran", prov, row, time.perf_counter() - t0, damaged
    except UserError as e:
        kind = "failed" if prov is not None else "error"
        return kind, prov, f"{type(e).__name__}: {e}".splitlines()[0], time.perf_counter() - t0, damaged
    except Exception as e:  # noqa: BLE001 - any failure is this kernel's error, reported with the others
        return "error", prov, f"{type(e).__name__}: {e}".splitlines()[0], 0.0, damaged


def _hit(out: Outcome, name: str, entry: dict) -> None:
    out.cached += 1
    if "error" in entry:
        out.errors[name] = f"{entry['error']} (cached; --no-cache retries)"
    else:
        out.rows[name] = entry["row"]


class LocalPool:
    """Runs in this host's processes: a forked pool of `jobs` workers, or this process when jobs is 1.
    Workers die with their parent (procs.worker_init); an interrupted pool's workers and their clang
    children are terminated."""

    def __init__(self, jobs: int | None = None):
        self.jobs = jobs or default_jobs()
        self.label = "local"
        self._pool = None

    def describe(self) -> str:
        return f"{self.jobs} jobs"

    def connect(self) -> None:
        """Nothing to reach: the pool starts when there are runs (`start`)."""

    def start(self, pending: list, console: Console) -> None:
        if self.jobs == 1:
            procs.one_blas_thread()   # the runs happen here
        if self.jobs > 1:
            self._pool = procs.fork_pool(min(self.jobs, len(pending)))

    def results(self, pending: list, cache: cachemod.Cache, use_cache: bool, digest: str):
        """An iterator of ((name, spec), _work's result) for every pending run, as they finish. The
        runs are submitted here, before the progress bar starts its refresh thread (the pool forks)."""
        if self._pool is None:
            return (((name, sp), _work(sp, prov, str(cache.root), use_cache)) for name, sp, prov in pending)
        futs = {self._pool.submit(_work, sp, prov, str(cache.root), use_cache): (name, sp)
                for name, sp, prov in pending}
        return ((futs[f], f.result()) for f in cf.as_completed(futs))

    def stop(self, interrupted: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:   # interrupted: our workers and their clang children, none left running
            procs.stop_pool(pool, interrupted)


def run_specs(specs: dict, jobs: int | None = None, use_cache: bool = True, cache: cachemod.Cache | None = None,
              console: Console | None = None, progress: bool = True, executor=None) -> Outcome:
    """Run every spec in `specs` (name -> KernelSpec) not already cached. use_cache=False reruns all
    of them (and refreshes the cache with the new rows). `executor` runs them (default: LocalPool(jobs))."""
    t_start = time.perf_counter()
    executor = executor or LocalPool(jobs)
    cache = cache or cachemod.Cache()
    console = console or Console(stderr=True, highlight=False)
    out = Outcome(jobs=executor.jobs, executor=executor.label)
    digest = cachemod.tree_digest(toolchain.find().describe(), embedded.version())
    cachemod.remove_stale_temps(cache.rows_dir)   # rows whose writer was killed mid-write
    index = cache.load_index(digest)
    for platform in sorted({sp.platform for sp in specs.values()}):
        cachemod.runtime_extras(platform)   # once here, inherited by the workers

    pending: list[tuple[str, KernelSpec, dict | None]] = []
    for name, sp in specs.items():
        prov = index.get(cachemod.spec_id(sp))
        if prov is not None:
            out.provenance[name] = prov
            if use_cache:
                entry, damaged = cache.lookup(cachemod.row_key(sp, prov))
                if entry is not None:
                    _hit(out, name, entry)
                    continue
                if damaged:
                    out.recomputed[name] = damaged
        pending.append((name, sp, prov))
    pending.sort(key=lambda t: -weight(t[1]))
    for platform, kind in sorted({(sp.platform, type(sp)) for _, sp, _ in pending}, key=lambda pk: (pk[0], pk[1].__name__)):
        if hasattr(kind, "warm"):
            kind.warm(platform)   # what every run of the kind loads first: once, before the pool forks (not for cached rows)

    changed = False

    def finish(name, sp, result):
        nonlocal changed
        kind, prov, payload, secs, damaged = result
        if damaged:
            out.recomputed[name] = damaged
        if prov is not None:
            out.provenance[name] = prov
            if index.get(cachemod.spec_id(sp)) != prov:
                index[cachemod.spec_id(sp)] = prov
                changed = True
        if kind == "hit":
            _hit(out, name, payload)
            return
        if kind == "error":
            out.errors[name] = payload
            return
        out.ran += 1
        out.seconds[name] = secs
        if isinstance(payload, dict):   # a row carries its run's host time here only: rows stay deterministic
            hosttime.add(out.host, payload.pop("host", {}))
        key = cachemod.row_key(sp, prov)
        if kind == "failed":
            cache.store(key, sp, prov, None, secs, error=payload)
            out.errors[name] = payload
        elif not payload.get("ok"):
            out.errors[name] = mismatch(payload)
            cache.store(key, sp, prov, payload, secs, error=out.errors[name])
        else:
            cache.store(key, sp, prov, payload, secs)
            out.rows[name] = payload

    def save_index():
        nonlocal changed
        if changed:
            cache.store_index(digest, index)
            changed = False

    if pending:
        total_w = sum(weight(sp) for _, sp, _ in pending)
        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                       TextColumn("{task.fields[count]}"), TimeElapsedColumn(), TextColumn("ETA"),
                       TimeRemainingColumn(), console=console, disable=not progress, transient=False)
        done = 0
        saved = time.monotonic()
        try:
            executor.start(pending, console)
            out.jobs = executor.jobs
            results = executor.results(pending, cache, use_cache, digest)
            with bar:
                task = bar.add_task("kernels", total=total_w, count=f"0/{len(pending)}")
                for (name, sp), result in results:
                    finish(name, sp, result)
                    done += 1
                    bar.update(task, advance=weight(sp), count=f"{done}/{len(pending)}")
                    if time.monotonic() - saved >= INDEX_SAVE_SECONDS:
                        save_index()
                        saved = time.monotonic()
        except BaseException:
            executor.stop(interrupted=True)
            raise
        finally:
            save_index()
            executor.stop()
    save_index()
    out.wall = time.perf_counter() - t_start
    return out
