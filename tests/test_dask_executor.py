"""Experiments on a Dask cluster (harness.experiments.dask_executor): scheduler addresses; the cache
with rows that travel back to the client (hits, rows whose provenance the workers compute, damaged
rows, --no-cache) on an in-process cluster with fake kernels; a worker that runs another pulp-odl;
a server that is not a scheduler. End to end, with real kernels: the regress set on a 2-worker
LocalCluster equals the local run row for row; a worker killed mid-run loses nothing; a killed
client resumes with identical rows; the stage programs of a deployed step give the same tables; an
existing cluster started with `dask scheduler`/`dask worker`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import ROOT
from harness.errors import UserError
from harness.experiments import cache as cachemod
from harness.experiments import dask_executor, execute, pipeline
from tests.conftest import needs_clang
from tests.test_experiments import _specs, fake_kernels  # noqa: F401  (fixture)


# ---- addresses ----

@pytest.mark.parametrize("text,address", [
    ("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"), ("10.0.0.5:8786", "tcp://10.0.0.5:8786"),
    ("sched.lab.example", "tcp://sched.lab.example:8786"), ("TLS://Sched:9000", "tls://Sched:9000"),
    ("[::1]:8786", "tcp://[::1]:8786"), ("tcp://[fe80::1]", "tcp://[fe80::1]:8786")])
def test_scheduler_addresses(text, address):
    assert dask_executor.parse_address(text) == address


@pytest.mark.parametrize("text,why", [
    ("", "empty address"), ("http://h:80", "unknown protocol 'http'"), ("inproc://x", "unknown protocol"),
    ("h:0", "the port '0'"), ("h:65536", "the port '65536'"), ("tcp://h:p", "the port 'p'"), ("h:", "the port ''"),
    ("tcp://-h:1", "'-h' is not a host name"), ("tcp://a b:1", "is not a host name"), ("tcp://h/x:1", "not a host")])
def test_bad_scheduler_addresses(text, why):
    with pytest.raises(ValueError) as e:
        dask_executor.parse_address(text)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_scheduler_needs_the_dask_executor_and_no_jobs():
    with pytest.raises(UserError, match="add --executor dask"):
        pipeline.make_executor("local", "tcp://h:8786", None)
    with pytest.raises(UserError, match="--jobs applies to"):
        pipeline.make_executor("dask", "tcp://h:8786", 2)
    assert isinstance(pipeline.make_executor("local", None, 3), execute.LocalPool)
    ex = pipeline.make_executor("dask", None, 3)
    assert ex.jobs == 3 and ex.describe() == "dask, 3 worker(s)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_one_line_at_once():
    ex = dask_executor.DaskExecutor(scheduler=f"tcp://127.0.0.1:{_free_port()}")
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        ex.connect()
    assert "no Dask scheduler answers there (Connection refused)" in str(e.value) and time.monotonic() - t0 < 5


def test_a_server_that_is_not_a_scheduler_is_one_line():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def answer():   # an HTTP server, say: it answers with text, not with Dask's frames
        while True:
            try:
                conn, _ = srv.accept()
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
            except OSError:
                return

    threading.Thread(target=answer, daemon=True).start()
    ex = dask_executor.DaskExecutor(scheduler=f"tcp://127.0.0.1:{srv.getsockname()[1]}")
    try:
        with pytest.raises(UserError, match="does not speak Dask's protocol"):
            ex.connect()
    finally:
        srv.close()


# ---- the cache through a cluster: threads of this process, so the fakes apply ----

@pytest.fixture
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()


def _dask(client, specs, cache, **kw):
    return execute.run_specs(specs, cache=cache, progress=False,
                             executor=dask_executor.DaskExecutor(client=client), **kw)


def test_rows_come_back_to_the_clients_cache(tmp_path, fake_kernels, client):
    specs = _specs(8)
    cache = cachemod.Cache(tmp_path / "a")
    out = _dask(client, specs, cache)
    serial = execute.run_specs(specs, jobs=1, cache=cachemod.Cache(tmp_path / "b"), progress=False)
    assert (out.ran, out.cached, out.errors) == (8, 0, {}) and out.rows == serial.rows
    assert out.executor == "dask" and out.jobs == 2
    assert len(list(cache.rows_dir.glob("*.json"))) == 8 and not list(cache.rows_dir.glob(".*"))

    fake_kernels.runs.clear()
    again = _dask(client, specs, cache)                        # the memo names every row: no task at all
    assert (again.ran, again.cached, fake_kernels.runs) == (0, 8, []) and again.rows == out.rows

    # without the memo the workers compute provenances; the rows are the client's, read by the client
    for memo in cache.index_dir.glob("*.json"):
        memo.unlink()
    fake_kernels.provenances.clear()
    probed = _dask(client, specs, cache)
    assert (probed.ran, probed.cached, fake_kernels.runs) == (0, 8, []) and probed.rows == out.rows
    assert sorted(fake_kernels.provenances) == sorted(specs)

    # a damaged row found that way is run after all, and reported
    row = sorted(cache.rows_dir.glob("*.json"))[0]
    entry = json.loads(row.read_text())
    entry["row"]["cycles"] += 1
    row.write_text(json.dumps(entry))
    for memo in cache.index_dir.glob("*.json"):
        memo.unlink()
    fixed = _dask(client, specs, cache)
    assert (fixed.ran, fixed.cached) == (1, 7) and list(fixed.recomputed) == fake_kernels.runs
    assert list(fixed.recomputed.values()) == ["fails its checksum (edited or damaged)"]
    assert fixed.rows == out.rows and cache.load(row.stem)["row"] == json.loads(row.read_text())["row"]

    fake_kernels.runs.clear()
    forced = _dask(client, specs, cache, use_cache=False)
    assert forced.ran == 8 and sorted(fake_kernels.runs) == sorted(specs)


def test_failed_kernels_are_cached_like_local_ones(tmp_path, fake_kernels, client):
    specs = _specs(4)
    bad = next(iter(specs))
    fake_kernels.fail = {bad}
    out = _dask(client, specs, cachemod.Cache(tmp_path / "c"))
    assert list(out.errors) == [bad] and "numeric mismatch" in out.errors[bad]
    fake_kernels.runs.clear()
    again = _dask(client, specs, cachemod.Cache(tmp_path / "c"))
    assert fake_kernels.runs == [] and "(cached" in again.errors[bad]


def test_a_worker_with_another_pulp_odl_stops_the_run(tmp_path, fake_kernels, client, monkeypatch):
    monkeypatch.setattr(dask_executor, "_worker_tree", lambda: "another tree")
    with pytest.raises(UserError) as e:
        _dask(client, _specs(4), cachemod.Cache(tmp_path / "c"))
    assert "runs another pulp-odl than this client" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "c" / "rows").exists() or not list((tmp_path / "c" / "rows").iterdir())


@dataclass(frozen=True)
class Job:
    """A stand-in for a stage job (name, platform, as_dict, macs, provenance, run) that worker processes
    can import: `crash` ends the worker process running it."""
    name: str
    crash: bool = False
    platform: str = "pulp-open"

    def as_dict(self) -> dict:
        return {"job": self.name}

    def macs(self) -> int:
        return 0

    def provenance(self) -> dict:
        return {"job": self.name}

    def run(self) -> dict:
        if self.crash:
            time.sleep(0.5)   # as a long run would: what the worker finished before has been reported
            os._exit(3)
        return {"ok": True, "cycles": 1}


@needs_clang
def test_a_kernel_that_kills_every_worker_is_reported_not_cached(tmp_path):
    import dask

    jobs = {j.name: j for j in (Job("fine"), Job("crash", crash=True))}
    # the LocalCluster's scheduler runs in this process and reads the setting when it starts
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        out = execute.run_specs(jobs, cache=cachemod.Cache(tmp_path / "c"), progress=False,
                                executor=dask_executor.DaskExecutor(workers=1))
    assert out.rows == {"fine": {"ok": True, "cycles": 1}}, out.errors
    assert "every dask worker given it died running it, 2 in all (KilledWorker)" in out.errors["crash"]
    assert len(list((tmp_path / "c" / "rows").glob("*.json"))) == 1


# ---- end to end: real kernels, real worker processes ----

SWEEP_TOML = """[experiment]
description = "a short sweep for the dask executor"
kind = "kernels"
platforms = ["pulp-open"]
steps = ["fw", "wg", "ig"]
p = [1.0, 0.9, 0.8, 0.7]

[[kernel]]
kind = "pw"
cin = 16
cout = 16
hw = 8
"""


def _cli(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT, **kw)


def _run(*args, timeout=600) -> tuple[int, str]:
    p = _cli(*args)
    _, err = p.communicate(timeout=timeout)
    return p.returncode, err


def _tree(pid: int) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, name) of every live process of session `pid`."""
    from tests.test_bad_input import session_processes
    out = {}
    for q, name in session_processes(pid):
        try:
            stat = Path(f"/proc/{q}/stat").read_text()
        except OSError:
            continue
        out[q] = (int(stat[stat.rindex(")") + 2:].split()[1]), name)
    return out


def _wait(cond, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _rows(res: Path) -> list[Path]:
    d = res / "cache" / "rows"
    return [f for f in d.iterdir() if f.suffix == ".json"] if d.is_dir() else []


@pytest.fixture(scope="module")
def sweep_local(tmp_path_factory):
    """The sweep run by the local executor: the reference."""
    d = tmp_path_factory.mktemp("dask-sweep")
    exp = d / "sweep.toml"
    exp.write_text(SWEEP_TOML)
    code, err = _run("experiment", exp, "--jobs", "2", "--results", d / "local", "--quiet")
    assert code == 0, err
    return exp, (d / "local" / "sweep" / "kernels.csv").read_text()


@needs_clang
def test_regress_set_on_a_local_cluster_equals_the_local_run(tmp_path):
    code, err = _run("regress", "--jobs", "2", "--results", tmp_path / "local", "--quiet")
    assert code == 0, err
    code, err = _run("regress", "--executor", "dask", "--jobs", "2", "--results", tmp_path / "dask", "--quiet")
    assert code == 0, err
    assert "dask: LocalCluster, 2 worker(s), 2 thread(s); dashboard http://" in err
    assert "0 cached, 106 run, 0 failed" in err and "(dask, 2 worker(s))" in err
    local = (tmp_path / "local" / "regress" / "kernels.csv").read_text().splitlines()
    dask = (tmp_path / "dask" / "regress" / "kernels.csv").read_text().splitlines()
    assert len(dask) == 107 and dask == local          # every row, every column, in the same order
    meta = json.loads((tmp_path / "dask" / "regress" / "meta.json").read_text())
    assert meta["executor"] == "dask" and meta["jobs"] == 2


@needs_clang
def test_deployed_stage_programs_on_a_local_cluster_equal_the_local_run(tmp_path):
    from tests.test_experiments import tiny_experiment

    exp = tiny_experiment(tmp_path, layer_ids="[1]", p="[0.7]", name="tiny", deployment="deployed")
    for executor in ("local", "dask"):
        code, err = _run("experiment", exp, "--executor", executor, "--jobs", "2", "--results", tmp_path / executor,
                         "--quiet")
        assert code == 0 and " 0 failed" in err, err
    for table in ("latency.csv", "layers.csv", "kernels.csv", "plans.csv"):
        assert (tmp_path / "dask" / "tiny" / table).read_text() == (tmp_path / "local" / "tiny" / table).read_text()


@needs_clang
def test_a_worker_killed_mid_run_loses_nothing(tmp_path, sweep_local):
    exp, reference = sweep_local
    res = tmp_path / "res"
    # an ELF cache of its own: the kernels compile (a cached ELF would leave no clang to catch a worker in)
    p = _cli("experiment", exp, "--executor", "dask", "--jobs", "2", "--results", res, "--quiet",
             env={**os.environ, "PULP_ODL_ELF_CACHE": str(tmp_path / "elf-cache")})

    def busy_worker():   # once a row is in: a worker process (a python child of the client) running clang
        if not _rows(res):
            return None
        procs = _tree(p.pid)
        workers = {q for q, (parent, name) in procs.items() if parent == p.pid and name.startswith("python")}
        return next((parent for parent, name in procs.values() if name.startswith("clang") and parent in workers),
                    None)

    victim = _wait(busy_worker, 120, "a worker building a kernel after a first row")
    os.kill(victim, signal.SIGKILL)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert not Path(f"/proc/{victim}").exists()
    assert "0 cached, 12 run, 0 failed" in err, err
    assert (res / "sweep" / "kernels.csv").read_text() == reference


@needs_clang
def test_a_killed_client_resumes_with_identical_rows(tmp_path, sweep_local):
    from tests.test_bad_input import session_processes
    exp, reference = sweep_local
    res = tmp_path / "res"
    p = _cli("experiment", exp, "--executor", "dask", "--jobs", "2", "--results", res, "--quiet")
    _wait(lambda: len(_rows(res)) >= 2, 120, "two rows in the cache")
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    _wait(lambda: not session_processes(p.pid), 10, "the cluster's workers to end with their client")
    done = len(_rows(res))
    assert 2 <= done < 12
    # a worker killed between writing a row's temporary file and renaming it leaves the file: the resume
    # removes it, as the temporary files of every writer that is gone
    code, err = _run("experiment", exp, "--executor", "dask", "--jobs", "2", "--results", res, "--quiet")
    assert code == 0, err
    assert f"{done} cached, {12 - done} run, 0 failed" in err
    assert (res / "sweep" / "kernels.csv").read_text() == reference
    assert not list((res / "cache" / "rows").glob(".*"))


@pytest.fixture
def cluster(tmp_path):
    """An existing cluster: `dask scheduler` and one `dask worker`, as the README starts them."""
    info = tmp_path / "scheduler.json"
    started = []

    def start(*args):
        q = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, cwd=tmp_path)
        started.append(q)

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
              "--scheduler-file", str(info))
        _wait(lambda: info.is_file() and info.stat().st_size > 0, 60, "the scheduler")
        address = json.loads(info.read_text())["address"]
        start("worker", address, "--nworkers", "1", "--nthreads", "1")
        from distributed import Client
        with Client(address, set_as_default=False) as c:
            c.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for q in reversed(started):
            os.killpg(q.pid, signal.SIGTERM)
        for q in reversed(started):
            try:
                q.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(q.pid, signal.SIGKILL)
                q.wait()


@needs_clang
def test_an_existing_cluster(tmp_path, sweep_local, cluster):
    exp, reference = sweep_local
    res = tmp_path / "res"
    code, err = _run("experiment", exp, "--executor", "dask", "--scheduler", cluster, "--results", res, "--quiet")
    assert code == 0, err
    assert f"dask: scheduler {cluster}, 1 worker(s), 1 thread(s); dashboard http://" in err
    assert "0 cached, 12 run, 0 failed" in err and (res / "sweep" / "kernels.csv").read_text() == reference
    for memo in (res / "cache" / "provenance").glob("*.json"):   # a new tree state: the workers probe the cache
        memo.unlink()
    code, err = _run("experiment", exp, "--executor", "dask", "--scheduler", cluster, "--results", res, "--quiet")
    assert code == 0 and "12 cached, 0 run, 0 failed" in err, err
