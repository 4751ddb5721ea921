"""Kernel runs on a Dask distributed cluster (`--executor dask [--scheduler ADDRESS]`).

The client (this process) keeps the result cache; workers build and simulate and send the rows back,
so no filesystem is shared. Each task is `run_kernel`: execute._work on the worker, which computes a
kernel's provenance when the client's memo has none and runs it unless its row is already cached.
A worker cannot read the client's cache, so it is given the set of row keys the cache holds: a
kernel whose key is among them comes back as a "probe", and the client reads the row itself (a row
found damaged there is run after all). The client writes every row into the cache as it arrives
(atomically, cache.write_atomic), so a killed client loses only the runs in flight and resumes.

Without an address, a LocalCluster sized to the host (one single-threaded worker process per core,
or --jobs) runs on this machine. Its workers ignore Ctrl-C (the client handles it), die when the
client process dies (Dask's own parent-alive pipe) and kill their clang children on SIGTERM; an
interrupted run closes the cluster and kills any worker process still there.

A worker that dies takes its tasks with it; the scheduler gives them to another worker (at most
distributed.scheduler.allowed-failures times, then the kernel is reported as failed, not cached).

Workers must run the same pulp-odl as the client: the cache key of a row is computed on the client's
tree. Every task checks that its worker's tree digest (cache.tree_digest: the source files, Python,
NumPy, toolchain and simulator) equals the client's, and a mismatch stops the run with one line.
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import re
import socket
from functools import lru_cache

from rich.console import Console

from harness import procs, toolchain
from harness.errors import UserError
from harness.experiments import cache as cachemod
from harness.experiments import execute

SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")   # Dask's network protocols (inproc:// is one process only)
DEFAULT_PORT = 8786                          # where `dask scheduler` listens unless told otherwise
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$")
STOP_GRACE_S = 3.0
PROBE_TIMEOUT_S = 10.0


def parse_address(text: str) -> str:
    """A scheduler address, [PROTOCOL://]HOST[:PORT], as PROTOCOL://HOST:PORT; ValueError with the
    reason otherwise (argparse turns it into a one-line error)."""
    t = str(text).strip()
    example = "give HOST:PORT or tcp://HOST:PORT, as 'dask scheduler' prints it"
    if not t:
        raise ValueError(f"empty address ({example})")
    scheme, sep, loc = t.partition("://")
    if not sep:
        scheme, loc = "tcp", t
    scheme = scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"'{text}': unknown protocol '{scheme}' (one of {', '.join(SCHEMES)}; {example})")
    host, port = loc, str(DEFAULT_PORT)
    if loc.startswith("["):                    # [IPv6]:PORT
        close = loc.find("]")
        host, rest = (loc[:close + 1], loc[close + 1:]) if close > 0 else (loc, "")
        if rest:
            port = rest[1:] if rest.startswith(":") else rest
    elif ":" in loc:
        host, port = loc.rsplit(":", 1)
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"'{text}': the port '{port}' is not an integer from 1 to 65535 ({example})")
    if "/" in host or not _HOST.match(host):
        raise ValueError(f"'{text}': '{host}' is not a host name or IP address ({example}; IPv6 in brackets)")
    return f"{scheme}://{host}:{int(port)}"


def scheduler_arg(text: str) -> str:
    """argparse type of --scheduler."""
    import argparse
    try:
        return parse_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None



# ---------------------------------------------------------------------------------------------
# on the workers
# ---------------------------------------------------------------------------------------------

def dask_setup(worker) -> None:
    """Preload of the LocalCluster's workers (Dask calls it when a worker starts, restarts included):
    Ctrl-C is the client's to handle, SIGTERM ends the worker and its clang children."""
    try:
        procs.cluster_worker_init()
    except ValueError:   # not the main thread: the worker keeps Dask's own handling
        pass


@lru_cache(maxsize=1)
def _worker_tree() -> str:
    from harness.backends import embedded
    return cachemod.tree_digest(toolchain.find().describe(), embedded.version())


def _worker_address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "(unknown)"


def run_kernel(spec, provenance: dict | None, read_cache: bool, known: frozenset | None, tree: str):
    """One task: execute._work's result tuple, or ("foreign", None, why, 0.0, None) when this worker
    does not run the client's pulp-odl."""
    try:
        mine = _worker_tree()
    except UserError as e:
        return "foreign", None, f"dask worker {_worker_address()}: {e}", 0.0, None
    if mine != tree:
        return ("foreign", None, f"dask worker {_worker_address()} runs another pulp-odl than this client (its source "
                f"tree, Python, NumPy, toolchain or simulator differ); install this checkout on every worker "
                f"(pip install -e . in a copy of it) and restart the workers", 0.0, None)
    return execute._work(spec, provenance, None, read_cache, known=known)


# ---------------------------------------------------------------------------------------------
# on the client
# ---------------------------------------------------------------------------------------------

def _allowed_failures() -> int:
    import dask
    return int(dask.config.get("distributed.scheduler.allowed-failures"))


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:300]


async def _handshake(address: str, timeout: float) -> None:
    from distributed.comm import connect

    async def shake():
        comm = await connect(address, timeout=timeout)
        await comm.close()

    await asyncio.wait_for(shake(), timeout)   # connect's own timeout does not cover a silent server


class DaskExecutor:
    """Runs on the Dask scheduler at `scheduler`, or on a LocalCluster of `workers` processes (default:
    one per host core). `client` (tests) uses a client the caller made and closes."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None, client=None):
        if scheduler is not None and workers is not None:
            raise UserError("--jobs applies to the local executor and to a LocalCluster, not to --scheduler: the "
                            "cluster's workers set the parallelism; drop --jobs or --scheduler")
        self.scheduler = scheduler
        self.jobs = workers or execute.default_jobs()
        self.label = f"dask {scheduler}" if scheduler else "dask"
        self._client = client
        self._own_client = client is None
        self._cluster = None
        self._before: set = set()
        self._futures: dict = {}
        self._known = None

    def describe(self) -> str:
        return f"dask, {self.jobs} worker(s)" if not self.scheduler else f"dask, {self.jobs} worker thread(s)"

    # ---- connecting ----
    def _unreachable(self, why: str) -> UserError:
        return UserError(f"--scheduler {self.scheduler}: no Dask scheduler answers there ({why}); start one with "
                         f"'dask scheduler' and workers with 'dask worker {self.scheduler}', or check the address")

    def _connect(self):
        from distributed import Client
        scheme, _, loc = self.scheduler.partition("://")
        if scheme != "ucx":
            # Dask retries a refused connection until its connect timeout (30 s by default): a plain TCP
            # connection says at once that nothing listens there, or that the host is unknown.
            host, _, port = loc.rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
            except OSError as e:
                raise self._unreachable(e.strerror or _one_line(e)) from None
        # Dask's handshake on its own first: a client that fails inside its constructor (a server there
        # that is not a Dask scheduler sends garbage) hangs for a minute when it is collected.
        try:
            asyncio.run(_handshake(self.scheduler, PROBE_TIMEOUT_S))
        except asyncio.TimeoutError:   # connected, but nothing came back
            why = f"no handshake in {PROBE_TIMEOUT_S:g} s"
        except OSError as e:
            raise self._unreachable(_one_line(e)) from None
        except Exception as e:   # noqa: BLE001 - whatever it sent, it is not a scheduler
            why = type(e).__name__
        else:
            why = None
        if why is not None:
            raise UserError(f"--scheduler {self.scheduler}: the server there does not speak Dask's protocol "
                            f"({why}); give the address 'dask scheduler' prints")
        try:
            return Client(self.scheduler, set_as_default=False, timeout=PROBE_TIMEOUT_S)
        except (OSError, TimeoutError) as e:
            raise self._unreachable(_one_line(e)) from None

    def _local_cluster(self):
        from distributed import Client, LocalCluster
        self._before = set(multiprocessing.active_children())
        # Worker warnings (a worker lost and restarted) would tear through the progress bar: the
        # outcome says what failed.
        self._cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                     dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR, preload=[__name__])
        return Client(self._cluster, set_as_default=False)

    def connect(self) -> None:
        """Reach the scheduler at once, so that an unreachable one is an error before any work. A
        LocalCluster starts only when there are runs (`start`)."""
        if self._client is None and self.scheduler:
            self._client = self._connect()
            self.jobs = sum(self._client.nthreads().values())

    def start(self, pending: list, console: Console) -> None:
        if self._client is None:
            self._client = self._connect() if self.scheduler else self._local_cluster()
        client = self._client
        nthreads = client.nthreads()
        self.jobs = sum(nthreads.values())
        where = f"scheduler {self.scheduler}" if self.scheduler else "LocalCluster"
        services = client.scheduler_info().get("services", {})
        dash = f"; dashboard {client.dashboard_link}" if "dashboard" in services else ""
        wait = "; no worker yet, the runs wait for 'dask worker' to join" if not nthreads else ""
        console.print(f"dask: {where}, {len(nthreads)} worker(s), {self.jobs} thread(s){dash}{wait}")

    # ---- running ----
    def results(self, pending: list, cache: cachemod.Cache, use_cache: bool, tree: str):
        """Submits every pending run (largest first: the scheduler runs earlier submissions first) and
        returns an iterator of ((name, spec), result tuple) as rows arrive."""
        from distributed import as_completed
        client = self._client
        known = None
        if use_cache and any(prov is None for _, _, prov in pending):
            keys = frozenset(p.stem for p in cache.rows_dir.glob("*.json")) if cache.rows_dir.is_dir() else frozenset()
            # sent once to the cluster; the tasks refer to it and each worker fetches it once
            known = self._known = client.submit(lambda k: k, keys, pure=False)
        futs = self._futures
        n = len(pending)
        for i, (name, sp, prov) in enumerate(pending):
            f = client.submit(run_kernel, sp, prov, use_cache, known if prov is None else None, tree,
                              pure=False, priority=n - i)
            futs[f] = (name, sp)
        stream = as_completed(list(futs), with_results=True, raise_errors=False, loop=client.loop)
        return self._arrivals(stream, cache, tree)

    def _arrivals(self, stream, cache: cachemod.Cache, tree: str):
        from distributed import KilledWorker
        futs = self._futures
        damaged_of: dict = {}
        for f, result in stream:
            name, sp = futs.pop(f)
            if f.status != "finished":
                problem = f.exception() if f.status == "error" else None
                if isinstance(problem, KilledWorker):
                    yield (name, sp), ("error", None, "every dask worker given it died running it, "
                                       f"{_allowed_failures() + 1} in all (KilledWorker); not cached, a rerun tries "
                                       "again", 0.0, None)
                    continue
                # the scheduler went away, or the task was cancelled under us: nothing to retry here
                what = f"{type(problem).__name__}: {_one_line(problem)}" if problem is not None else f.status
                raise UserError(f"dask: {name} could not be run ({what}); the rows that arrived are cached, rerun "
                                "to resume")
            kind, prov, payload, secs, damaged = result
            if kind == "foreign":
                raise UserError(payload)
            if kind == "probe":
                entry, damaged = cache.lookup(cachemod.row_key(sp, prov))
                if entry is not None:
                    yield (name, sp), ("hit", prov, entry, 0.0, None)
                    continue
                again = self._client.submit(run_kernel, sp, prov, False, None, tree, pure=False, priority=len(futs))
                futs[again] = (name, sp)
                damaged_of[name] = damaged
                stream.add(again)
                continue
            if name in damaged_of:
                damaged = damaged_of.pop(name) or damaged
            yield (name, sp), (kind, prov, payload, secs, damaged)

    def stop(self, interrupted: bool = False) -> None:
        client, self._client = self._client, None
        futs, self._futures = list(self._futures), {}
        self._known = None
        if client is not None and self._own_client:
            try:
                if interrupted and futs:
                    client.cancel(futs)
                client.close(timeout=STOP_GRACE_S)
            except Exception:   # noqa: BLE001 - a cluster already gone: nothing left to close
                pass
        elif client is not None:
            try:
                client.cancel(futs)
            except Exception:   # noqa: BLE001
                pass
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            try:
                cluster.close(timeout=STOP_GRACE_S)
            except Exception:   # noqa: BLE001
                pass
            # what the cluster's own close left behind (a worker busy in a long simulation)
            procs.stop_workers([p for p in multiprocessing.active_children() if p not in self._before])
