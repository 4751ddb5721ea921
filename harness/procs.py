"""No process outlives pulp-odl: signals, child processes and pool workers.

* SIGTERM is handled like Ctrl-C (`handle_termination`): it raises Terminated, a KeyboardInterrupt,
  so every cleanup that runs on Ctrl-C (killing children, saving the cache's provenance memo) runs.
  The simulator polls for pending signals while it runs (platforms/pulpsim, Machine::poll), so
  either signal stops a long simulation at once.
* Children (clang, GVSoC) start through `run`: in their own process group, killed with the whole
  group on any exception, registered so that a terminating worker can kill them, and, where
  util-linux's setpriv is present, with a parent-death signal so that even a SIGKILL of pulp-odl
  takes them along.
* Pool workers call `worker_init`: the kernel sends them SIGTERM when their parent dies (prctl
  PR_SET_PDEATHSIG), and on SIGTERM they kill their children's groups and exit at once.
  `stop_workers` ends the workers of an interrupted pool and waits for them. The workers of a Dask
  LocalCluster call `cluster_worker_init` (harness.experiments.dask_executor).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import signal
import subprocess
import sys
from functools import lru_cache

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 2.0


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP), raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def handle_termination():
    """Install the SIGTERM/SIGHUP handlers; returns the previous ones for `restore`."""
    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, _raise_terminated)
        except ValueError:   # not the main thread: leave signals alone
            pass
    return old


def restore(old: dict) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


# ---- children ----

_groups: set[int] = set()      # process groups of children still running


@lru_cache(maxsize=1)
def _pdeathsig_prefix() -> tuple[str, ...]:
    setpriv = shutil.which("setpriv")
    if setpriv is None or not sys.platform.startswith("linux"):
        return ()
    try:
        ok = subprocess.run([setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return (setpriv, "--pdeathsig", "KILL", "--") if ok else ()


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_children() -> None:
    for pgid in list(_groups):
        kill_group(pgid)
        _groups.discard(pgid)


def popen(cmd: list, **kw) -> subprocess.Popen:
    """Start a child in its own, registered process group (see `run`); the caller must `release` it."""
    cmd = [str(c) for c in cmd]
    exe = shutil.which(cmd[0])
    if exe is None:   # as Popen would say, rather than setpriv's complaint that it cannot run it
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cmd[0])
    proc = subprocess.Popen([*_pdeathsig_prefix(), exe, *cmd[1:]], process_group=0, **kw)
    _groups.add(proc.pid)
    return proc


def exec_error(proc: subprocess.Popen, stderr) -> OSError | None:
    """The OSError Popen would have raised had the program been started directly: setpriv starts it,
    and reports a failed exec (a missing interpreter, ...) as status 126/127 and a line on stderr."""
    if not _pdeathsig_prefix() or proc.returncode not in (126, 127):
        return None
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else (stderr or "")
    first = text.strip().splitlines()[0] if text.strip() else ""
    prefix = "setpriv: failed to execute "
    if not first.startswith(prefix):
        return None
    name, _, why = first[len(prefix):].rpartition(": ")
    code = errno.ENOENT if proc.returncode == 127 else errno.EACCES
    return OSError(code, why or os.strerror(code), name)


def release(proc: subprocess.Popen, kill: bool = False) -> None:
    if kill:
        kill_group(proc.pid)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _groups.discard(proc.pid)


def interrupt_group(proc: subprocess.Popen, grace: float, finish=None):
    """Stop a child's whole process group the way a simulator wants to be stopped: SIGINT first (GVSoC
    flushes what the program printed and exits), SIGKILL for what is left `grace` seconds later.
    `finish(timeout)` waits for the child and returns what it read (default: proc.wait); returns that."""
    finish = finish or (lambda t: proc.wait(timeout=t))
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        result = finish(grace)
    except subprocess.TimeoutExpired:   # communicate keeps what it read: the next call returns all of it
        kill_group(proc.pid)
        result = finish(None)
    kill_group(proc.pid)   # whatever the child left behind in its group
    return result


def run(cmd: list, *, timeout: float | None = None, cwd=None, text: bool = True) -> subprocess.CompletedProcess:
    """subprocess.run(capture_output=True) for a child that must not outlive pulp-odl."""
    proc = popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd, text=text)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        release(proc, kill=True)
        raise
    release(proc)
    failed = exec_error(proc, err)
    if failed is not None:
        raise failed
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# ---- pool workers ----

def _worker_terminated(signum, frame):
    kill_children()
    os._exit(128 + signum)


def _set_pdeathsig(sig: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def one_blas_thread() -> None:
    """Sweeps run in parallel processes, not threads: NumPy's BLAS keeps to one thread in each (its idle
    threads would spin on the cores the other workers need). NumPy is loaded first: the limit reaches only
    the libraries already loaded, and one loaded later would start its default threads."""
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def worker_init(parent_pid: int) -> None:
    """Initializer of a pool worker: Ctrl-C is the parent's to handle; SIGTERM, or the parent's death,
    ends the worker and its children."""
    one_blas_thread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_terminated)
    _set_pdeathsig(signal.SIGTERM)
    if os.getppid() != parent_pid:   # the parent died before the death signal was armed
        os._exit(1)


def cluster_worker_init() -> None:
    """In a Dask worker process of a LocalCluster pulp-odl started: Ctrl-C is the client's to handle;
    SIGTERM ends the worker and its children. No parent-death signal: the worker was started by a
    short-lived thread of the client, whose end would fire it; Dask's worker exits by itself when the
    pipe from its parent process closes."""
    one_blas_thread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_terminated)


def stop_workers(processes) -> None:
    """SIGTERM every worker (they kill their children), then SIGKILL what is left after a grace period."""
    procs = [p for p in processes if p.is_alive()]
    for p in procs:
        try:
            p.terminate()
        except (OSError, ValueError):
            pass
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            p.kill()
            p.join(STOP_GRACE_S)


def fork_pool(workers: int):
    """A pool of `workers` forked processes that end with this one (worker_init)."""
    import concurrent.futures as cf
    import multiprocessing
    return cf.ProcessPoolExecutor(max_workers=workers, initializer=worker_init, initargs=(os.getpid(),),
                                  mp_context=multiprocessing.get_context("fork"))


def stop_pool(pool, interrupted: bool = False) -> None:
    """Shut a fork_pool down: at once when interrupted, its workers (and their clang children) ended."""
    if not interrupted:
        pool.shutdown()
        return
    workers = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    stop_workers(workers)
    # The pool's manager thread closes its wake-up pipe when it sees the workers gone. Python's exit hook
    # writes to that pipe, and before 3.12 it can do so just after the close and print an EBADF traceback
    # under "pulp-odl: interrupted": let the thread finish first.
    if manager is not None:
        manager.join(STOP_GRACE_S)
