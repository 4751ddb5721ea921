"""The ELF cache (a program built before is copied, not compiled again) and the host-time split of a
sweep's runs (generate, compile, simulate, check)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from harness import hosttime, toolchain
from harness import platform as platmod
from harness.backends import embedded
from harness.experiments import pipeline
from tests.conftest import needs_clang

SRC = "int main(void) { volatile int s = 0; for (int i = 0; i < %d; i++) s += i; return s & 7; }\n"


@pytest.fixture
def elf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / "elf-cache"))
    return tmp_path / "elf-cache"


def _build(tmp_path, name, text, data=None):
    d = tmp_path / name
    d.mkdir()
    (d / "p.c").write_text(text)
    srcs = [d / "p.c"]
    if data is not None:
        (d / "d.bin").write_bytes(data)
        (d / "d.S").write_text(f'    .section .l2_data, "aw"\n    .globl blob\nblob:\n    .incbin "{d / "d.bin"}"\n')
        srcs.append(d / "d.S")
    hosttime.reset()
    out = toolchain.build(srcs, d / "p.elf", platmod.load("pulp-open"), cache=True)
    return out, hosttime.take()


@needs_clang
def test_same_program_elsewhere_comes_from_the_cache(tmp_path, elf_cache):
    a, ta = _build(tmp_path, "a", SRC % 10, b"\1\2\3\4")
    b, tb = _build(tmp_path, "b", SRC % 10, b"\1\2\3\4")     # another directory, same content
    assert (ta["elf_built"], ta["elf_cached"]) == (1, 0)
    assert (tb["elf_built"], tb["elf_cached"]) == (0, 1)
    assert a.read_bytes() == b.read_bytes()
    assert len(list(elf_cache.glob("*.elf"))) == 1
    r = embedded.run(b, platmod.load("pulp-open"))
    assert r["status"] == "exit" and r["exit_code"] == sum(range(10)) & 7


@needs_clang
def test_changed_source_or_data_is_built_again(tmp_path, elf_cache):
    _build(tmp_path, "a", SRC % 10, b"\1\2\3\4")
    _, t_src = _build(tmp_path, "b", SRC % 11, b"\1\2\3\4")
    _, t_data = _build(tmp_path, "c", SRC % 10, b"\1\2\3\5")     # the .incbin'd bytes count, not their path
    assert t_src["elf_built"] == 1 and t_data["elf_built"] == 1
    assert len(list(elf_cache.glob("*.elf"))) == 3


def test_host_time_phases_add_up():
    hosttime.reset()
    with hosttime.phase("compile"):
        sum(range(10000))
    with hosttime.phase("simulate"):
        sum(range(10000))
    t = hosttime.take()
    assert set(t) == {*hosttime.PHASES, "elf_cached", "elf_built"}
    assert all(t[p] >= 0 for p in hosttime.PHASES) and t["compile"] > 0 and t["simulate"] > 0
    assert hosttime.take()["compile"] == 0   # take() starts over
    total = {}
    hosttime.add(total, {"compile": 1.0, "elf_built": 2})
    hosttime.add(total, {"compile": 0.5, "elf_built": 1})
    assert total == {"compile": 1.5, "elf_built": 3}
    line = pipeline.host_split({"generate": 1.0, "compile": 3.0, "simulate": 0.0, "check": 0.0, "elf_built": 4,
                                "elf_cached": 6})
    assert "compile 3.0 s (75 %)" in line and "4 ELFs built, 6 from the ELF cache" in line


def test_host_time_of_other_processes_replaces_the_wait_for_them():
    """A process that waits for others (idle) does not count the wait as its own generation, and what the
    others took (absorb) is in its next take()."""
    import time
    hosttime.reset()
    with hosttime.idle():
        time.sleep(0.2)
    hosttime.absorb({"generate": 5.0, "compile": 2.0, "simulate": 0.0, "check": 0.0, "elf_built": 3, "elf_cached": 1})
    t = hosttime.take()
    assert 5.0 <= t["generate"] < 5.1 and t["compile"] == 2.0 and t["elf_built"] == 3 and t["elf_cached"] == 1
    assert hosttime.take()["elf_built"] == 0   # absorbed once


@needs_clang
def test_sweep_meta_has_the_host_split(tmp_path, elf_cache):
    exp = tmp_path / "tiny.toml"
    exp.write_text('[experiment]\ndescription = "two kernels"\nkind = "kernels"\nplatforms = ["pulp-open"]\n'
                   'steps = ["fw", "wg"]\np = [1.0]\nplacement = "l2"\n\n[[kernel]]\nkind = "pw"\ncin = 8\ncout = 8\nhw = 4\n')
    res = pipeline.run_experiment(str(exp), results=tmp_path / "res", progress=False, jobs=1)
    meta = json.loads((res.outdir / "meta.json").read_text())
    host = meta["host_seconds"]
    assert meta["host_seconds_runs"]["elf_built"] == 2 and meta["host_seconds_planning"]["elf_built"] == 0
    # meta.json rounds to 10 ms, less than two tiny kernels may simulate in: the run's own figures
    assert host["elf_built"] == 2 and host["compile"] > 0 and res.outcome.host["simulate"] > 0
    again = pipeline.run_experiment(str(exp), results=tmp_path / "res", progress=False, jobs=1, use_cache=False)
    assert again.outcome.host["elf_cached"] == 2 and again.outcome.host["elf_built"] == 0


def _fresh(job):
    import pickle
    return pickle.loads(pickle.dumps(job))   # without what the job generated or recalled


@needs_clang
def test_stage_program_built_before_runs_without_being_generated(tmp_path, elf_cache, monkeypatch):
    """A deployed stage job remembers the program it built: run again (a sweep after a change of the
    simulator alone) it runs the cached ELF without generating its C, with the same provenance and row;
    another generator, a damaged memo or a deleted ELF make it generate the program again."""
    from harness.deploy import program as progmod
    from harness.deploy import runner
    _, jobs = runner.stage_jobs(runner.Point("phinet", "cifar10", 1, 0.7, "paper"))
    job = min((j for j in jobs if j.mac_count), key=lambda j: j.mac_count)
    first = _fresh(job)
    prov, row = first.provenance(), first.run()
    assert row["ok"]
    memo = first._memo_path()
    assert memo.exists()

    def generated(*a, **k):
        raise AssertionError("the stage program was generated again")
    with monkeypatch.context() as m:
        m.setattr(progmod, "stage_program", generated)
        again = _fresh(job)
        hosttime.reset()
        assert again.provenance() == prov
        row2 = again.run()
        assert hosttime.take()["elf_cached"] == 1
    assert {k: row2[k] for k in ("cycles", "instructions", "ok", "max_abs_err", "l1_bytes")} == \
        {k: row[k] for k in ("cycles", "instructions", "ok", "max_abs_err", "l1_bytes")}
    with monkeypatch.context() as m:
        m.setattr(runner, "generator_digest", lambda: "another generator")
        assert _fresh(job).recall() is None
    saved = memo.read_text()
    memo.write_text("{not json")
    assert _fresh(job).recall() is None
    memo.write_text(saved)
    assert _fresh(job).recall() is not None
    (elf_cache / json.loads(saved)["elf"]).unlink()
    assert _fresh(job).recall() is None


@needs_clang
def test_a_generated_program_whose_elf_is_cached_is_remembered(tmp_path, elf_cache, monkeypatch):
    """After a change of the harness's Python (another generator digest) a sweep's rows stay cached, but
    each job generates its program for the row's key: finding that program's ELF in the cache, the job
    remembers it under the new generator, so that the next run after a change of the simulator alone
    recalls it; nothing is compiled for it. A program the cache does not hold is not remembered."""
    from harness.deploy import program as progmod
    from harness.deploy import runner
    _, jobs = runner.stage_jobs(runner.Point("phinet", "cifar10", 1, 0.7, "paper"))
    job, other = sorted((j for j in jobs if j.mac_count), key=lambda j: j.mac_count)[:2]
    prov = _fresh(job).provenance()
    assert _fresh(job).run()["ok"]
    monkeypatch.setattr(runner, "generator_digest", lambda: "another generator")
    assert _fresh(job).recall() is None and _fresh(other).recall() is None
    hosttime.reset()
    assert _fresh(job).provenance() == prov and _fresh(other).provenance()
    assert hosttime.take()["elf_built"] == 0
    recalled = _fresh(job).recall()
    assert recalled is not None and recalled.source_sha256 == prov["source_sha256"]
    assert _fresh(other).recall() is None    # never built: nothing to remember

    def generated(*a, **k):
        raise AssertionError("the stage program was generated again")
    monkeypatch.setattr(progmod, "stage_program", generated)
    assert _fresh(job).provenance() == prov


@needs_clang
def test_sources_compiled_side_by_side_link_as_one_at_a_time(tmp_path, monkeypatch):
    """A program of many sources (a whole training step: one per stage) has them compiled in parallel; the
    objects and their link order, hence every address and cycle, are those of compiling one at a time."""
    from harness.deploy import program as progmod
    from harness.deploy import runner
    from harness.deploy.codegen import Gen
    plan = runner.plan_of(runner.Point("phinet", "cifar10", 1, 1.0, "paper"))
    prog = progmod.step_program(Gen(plan, plan.platform), plan.step)
    assert len(prog.files) > 40
    elfs = []
    for cpus in (1, 2):
        monkeypatch.setattr(toolchain.os, "cpu_count", lambda: cpus)
        monkeypatch.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / f"cache{cpus}"))   # built, not found
        work = tmp_path / f"w{cpus}"
        work.mkdir()
        elfs.append(runner.build(prog, plan.platform, work).read_bytes())
    assert elfs[0] == elfs[1]


@needs_clang
def test_shared_objects_link_into_the_same_program(tmp_path, monkeypatch):
    """With share_objects (every deployed program), each source's object is kept and a later build of the
    same sources links them instead of compiling: the ELF is byte for byte the one compiled from scratch,
    and a source that changed is compiled again."""
    from harness import procs
    from harness.deploy import program as progmod
    from harness.deploy import runner
    from harness.deploy.codegen import Gen
    plan = runner.plan_of(runner.Point("phinet", "cifar10", 1, 1.0, "paper"))
    prog = progmod.step_program(Gen(plan, plan.platform), plan.step)
    compiled = []
    real = procs.run
    monkeypatch.setattr(procs, "run", lambda cmd, *a, **k: (compiled.append(cmd[cmd.index("-c") + 1]) if "-c" in cmd
                                                            else None) or real(cmd, *a, **k))
    real_build = toolchain.build
    share = True
    monkeypatch.setattr(toolchain, "build", lambda *a, **k: real_build(*a, **{**k, "share_objects": share}))
    elfs = {}
    for name, share in (("plain", False), ("first", True), ("again", True)):
        monkeypatch.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / ("cache-" + name)) if name != "again"
                           else str(tmp_path / "cache-first"))
        if name == "again":   # the ELF itself gone: only the objects can save the compiles
            for e in (tmp_path / "cache-first").glob("*.elf"):
                e.unlink()
        work = tmp_path / name
        work.mkdir()
        compiled.clear()
        elfs[name] = (runner.build(prog, plan.platform, work).read_bytes(),
                      [c for c in compiled if c.endswith(("st0.c", "st1.c"))])
    assert elfs["plain"][0] == elfs["first"][0] == elfs["again"][0]
    assert elfs["first"][1] and not elfs["again"][1]
    changed = dict(prog.files)
    changed["st1.c"] += "\n/* changed */\n"
    work = tmp_path / "changed"
    work.mkdir()
    compiled.clear()
    runner.build(dataclasses.replace(prog, files=changed), plan.platform, work)
    assert [c for c in compiled if c.endswith("st1.c")] and not [c for c in compiled if c.endswith("st0.c")]


@needs_clang
def test_a_shared_object_is_compiled_into_the_store_whole_or_not_at_all(tmp_path, elf_cache):
    """A shared object is compiled beside its place in the store and moved in: a source that does not compile
    leaves nothing there (no object, no partial file), and one that compiles is there under its name."""
    from harness.toolchain import BuildError
    plat = platmod.load("pulp-open")
    bad, good = tmp_path / "bad" / "st0.c", tmp_path / "good" / "st0.c"
    bad.parent.mkdir()
    good.parent.mkdir()
    bad.write_text("int f(void) { return }\n")
    good.write_text("int f(void) { return 7; }\n")
    with pytest.raises(BuildError):
        toolchain.objects([bad], plat)
    assert not (elf_cache / "objects").exists() or not any((elf_cache / "objects").iterdir())
    (obj,) = toolchain.objects([good], plat)
    assert obj.parent == elf_cache / "objects" and [p.name for p in obj.parent.iterdir()] == [obj.name]
    assert toolchain.objects([good], plat) == [obj]


@needs_clang
def test_a_stage_shared_by_points_is_built_once_and_checked_from_its_object(tmp_path, elf_cache, monkeypatch):
    """Points whose steps share a stage (the same job name: its content) share its remembered program: built
    for one point, the other point's job recalls it, with the object of its source; a plan's code check given
    those objects links the same stand-in as from the sources, without generating the stage programs."""
    from harness.deploy import program as progmod
    from harness.deploy import runner
    pa, pb = (runner.Point("phinet", "cifar10", 1, p, "paper") for p in (0.7, 0.8))
    plan_a, jobs_a = runner.stage_jobs(pa)
    plan_b, jobs_b = runner.stage_jobs(pb)
    shared = [j for j in jobs_b if j.name in {a.name for a in jobs_a}]
    assert shared
    for j in jobs_a:
        _fresh(j).prebuild()
    recalled = {(j.stage, j.variant): _fresh(j).recall() for j in shared}
    assert all(r is not None and r.object is not None and r.object.exists() for r in recalled.values())
    own_src = {(j.stage, j.variant): j.program(plan_b)[3].files["st0.c"] for j in jobs_b}
    want = runner._standin_left(plan_b, own_src)
    runner._OWN_OBJECTS.clear()

    def generated(*a, **k):
        raise AssertionError("a stage program was generated for the check")
    monkeypatch.setattr(progmod, "stage_program", generated)
    assert len(shared) == len(jobs_b)   # here every stage: the check needs no source at all
    assert runner._standin_left(plan_b, {k: r.object for k, r in recalled.items()}) == want


def test_the_objects_store_is_named_by_every_header_a_source_can_include(tmp_path, elf_cache, monkeypatch):
    """The runtime, the libraries and the stage sources share one store of objects; its names cover the
    runtime's and the kernels' headers too, so that an edited header never links a stale object (with or
    without a precompiled header)."""
    import shutil

    from harness import runtime
    plat = platmod.load("pulp-open")
    cx = toolchain._context(plat, "2", None, [runtime.INCLUDE_DIR], None)
    before = toolchain._store(cx, None)
    assert before[0] == elf_cache / "objects"
    for name, d in (("RUNTIME_DIR", runtime.RUNTIME_DIR), ("INCLUDE_DIR", runtime.INCLUDE_DIR)):
        copy = tmp_path / name
        shutil.copytree(d, copy)
        header = next(iter(sorted(copy.glob("*.h"))))
        header.write_text(header.read_text() + "\n/* edited */\n")
        with monkeypatch.context() as m:
            m.setattr(runtime, name, copy)
            assert toolchain._store(cx, None)[1] != before[1], name
    assert toolchain._store(cx, None) == before
