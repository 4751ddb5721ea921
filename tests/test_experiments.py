"""Experiments: TOML loading, expansion into unique kernels, the result cache (hits, misses, resume
after a kill, truncated files), the latency arithmetic on a hand-checked case, the cycle-count
regression, and one real end-to-end run on a tiny network.

Orchestration tests replace harness.kernels.runner.run_spec (and provenance) with fakes; forked
pool workers inherit the fakes, so the parallel path is exercised too."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.errors import UserError
from harness.experiments import cache as cachemod
from harness.experiments import execute, pipeline, plan as planmod, regress, spec as specmod, tables
from harness.kernels import layers as klayers
from harness.kernels import runner
from harness.kernels import spec as kspec
from harness.memmodel import training_memory
from harness.nets import build_network, cut_at_layer_id
from tests.conftest import needs_clang, stand_in_compiler

TINY_NET = '{ resolution = 8, num_classes = 4, alpha = 0.25, num_layers = 3 }'
TINY_CL = '{ new_per_task = 25, replays = 8, batch = 4, batch_replay = 1, epochs = 2 }'
STEP_CYCLES = {"fw": 100, "wg": 200, "ig": 300, "update": 50}


def tiny_experiment(tmp_path: Path, layer_ids="[1, 2]", p="[1.0]", platforms='["paper"]', name="tiny",
                    deployment="isolated") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""
[experiment]
description = "tiny PhiNet"
kind = "latency"
platforms = {platforms}
deployment = "{deployment}"

[[sweep]]
net = "phinet"
datasets = ["cifar10"]
layer_ids = {layer_ids}
p = {p}
network = {TINY_NET}
cl = {TINY_CL}
""")
    return path


def fake_row(spec: kspec.KernelSpec, cycles: int | None = None, ok: bool = True) -> dict:
    cycles = STEP_CYCLES[spec.step] if cycles is None else cycles
    return {"kernel": spec.name, "step": spec.step, **spec.as_dict(), "backend": "fake", "simulator": "fake",
            "source_sha256": "0", "platform_sha256": "0", "toolchain": "fake", "l1_bytes": 1024, "tiles": 1,
            "cycles": cycles, "compute_cycles": cycles // 2, "dma_wait_cycles": cycles // 4,
            "overhead_cycles": cycles - cycles // 2 - cycles // 4, "mac_per_cycle": round(spec.macs() / cycles, 4),
            "max_abs_err": 0.0, "err_over_tol": 0.0, "ok": ok, "outputs": {},
            "stalls": {"load_use": 3, "fpu_contention": 5, "wait": 7}, "total_cycles": cycles + 100,
            "instructions": cycles, "dmas": [{"name": "cluster_dma", "busy_cycles": 10, "bytes": 64, "transfers": 1},
                                             {"name": "udma", "busy_cycles": 0, "bytes": 0, "transfers": 0}]}


@pytest.fixture
def fake_kernels(monkeypatch):
    """run_spec and provenance replaced; .runs lists the spec names run in this process (jobs=1)."""
    class Fake:
        runs: list = []
        provenances: list = []
        cycles: dict = {}
        fail: set = set()
        version = "v1"

    def run_spec(spec, workdir=None, keep=False, prepared=None):
        Fake.runs.append(spec.name)
        return fake_row(spec, Fake.cycles.get(spec.name), ok=spec.name not in Fake.fail)

    def provenance(spec, prepared=None):
        Fake.provenances.append(spec.name)
        return {"source_sha256": cachemod.sha256(spec.name + Fake.version), "toolchain": "fake",
                "platform_sha256": "0", "simulator": "fake", "backend": "embedded"}

    monkeypatch.setattr(runner, "run_spec", run_spec)
    monkeypatch.setattr(runner, "provenance", provenance)
    stand_in_compiler(monkeypatch)
    monkeypatch.setattr(runner, "prepare", lambda spec: None)
    monkeypatch.delattr(klayers, "op_specs", raising=False)     # weight layers only, unless a test adds ops
    monkeypatch.delattr(klayers, "loss_spec", raising=False)
    Fake.runs, Fake.provenances, Fake.cycles, Fake.fail = [], [], {}, set()
    return Fake


# ---- loading and expansion ----

def isolated(name: str):
    return specmod.load(name).with_deployment("isolated")


def test_shipped_experiments_load_and_expand(plans_as_planned):
    assert {"table2", "fig4", "kernels", "regress"} <= set(specmod.available())
    t2 = planmod.expand(specmod.load("table2"))
    assert t2.experiment.platforms == ("paper",) and t2.experiment.deployment == "deployed"
    assert len(t2.points) == 2 * 2 * 2 * 3 * 2          # nets x datasets x layer_ids x p x placements
    # the paper's Table 2 rows: PhiNet classifier only and from the second-to-last layer, MobileNetV2 classifier
    # only and from the 4th layer before the classifier
    assert {(pt.net, pt.layer_id) for pt in t2.points} == {("phinet", 1), ("phinet", 2), ("mobilenetv2", 1),
                                                           ("mobilenetv2", 4)}
    assert {pt.placement for pt in t2.points} == {"fit", "method"}
    assert all(pt.jobs for pt in t2.points) and len(t2.specs) < sum(len(pt.jobs) for pt in t2.points)
    f4 = planmod.expand(isolated("fig4"))
    assert len(f4.points) == (9 + 5) * 2 * 5
    assert sorted({pt.p for pt in f4.points}) == [0.6, 0.7, 0.8, 0.9, 1.0]
    k = planmod.expand(specmod.load("kernels"))
    assert k.experiment.platforms == ("pulp-open", "paper")
    assert len(k.specs) == 11 * 3 * 2 * 2   # 11 shapes (two linear ones also batched) x steps x p x platforms
    assert len(planmod.expand(specmod.load("regress")).specs) <= 120
    # make demo: one network on CIFAR-10, two replay layers, two partialities, deployed on paper, one step recorded
    demo = planmod.expand(specmod.load("demo"))
    assert demo.experiment.platforms == ("paper",) and demo.experiment.deployment == "deployed"
    assert {(pt.net, pt.dataset) for pt in demo.points} == {("phinet", "cifar10")}
    assert len({pt.layer_id for pt in demo.points}) == 2 and len({pt.p for pt in demo.points}) == 2
    from harness.experiments import steptimeline
    assert steptimeline.chosen(demo) in demo.points


def test_expansion_is_deduplicated():
    plan = planmod.expand(isolated("table2"))
    uses = [sp for pt in plan.points for u in pt.uses for sp in u.specs]
    assert len(plan.specs) == len({sp.name for sp in uses}) < len(uses)
    # a frozen layer's forward is one kernel whatever p the trained part uses
    net = build_network("phinet", "cifar10")
    cut = cut_at_layer_id(net, 1)
    frozen = {u.name: u.specs for u in planmod.kernels_for(cut, 1.0, "paper") if u.step == "frozen_fw"}
    assert frozen == {u.name: u.specs for u in planmod.kernels_for(cut, 0.7, "paper") if u.step == "frozen_fw"}
    assert frozen["B8.project"][0].placement == "frozen"


def test_kernels_for_follows_the_schedule():
    net = build_network("phinet", "cifar10")
    uses = [u for u in planmod.kernels_for(cut_at_layer_id(net, 1), 0.7, "paper") if u.weight_layer]
    steps = {(u.name, u.step) for u in uses}
    assert {("classifier", s) for s in ("fw", "wg", "update")} <= steps and ("classifier", "ig") not in steps
    assert all(u.step == "frozen_fw" and u.specs[0].p_in == 1.0 for u in uses if u.name != "classifier")
    uses = planmod.kernels_for(cut_at_layer_id(net, 2), 0.7, "paper")
    by = {(u.name, u.step): u.specs[0] for u in uses if u.weight_layer}
    assert ("classifier", "ig") in by and by[("classifier", "wg")].p_in == 1.0       # classifier always full
    assert by[("B8.project", "wg")].p_in == 0.7 and ("B8.expand", "ig") not in by    # reads the latent only


def test_every_use_has_a_schedule_count():
    from harness.schedule import task_schedule
    for pt in planmod.expand(isolated("table2")).points:
        counts = {(k.name, k.step): k.count for k in task_schedule(pt.cut, pt.params).counts}
        for u in pt.uses:
            assert counts[u.count_of] > 0, (pt.net, pt.layer_id, u.name, u.step)
            assert u.group in planmod.GROUPS and u.specs


def test_kernel_macs_equal_cost_model_macs():
    from harness.costmodel import training_cost
    for pt in planmod.expand(isolated("table2")).points:
        model = {c.layer.name: c for c in training_cost(pt.cut, pt.p).layers}
        for u in pt.uses:
            if not u.weight_layer:
                continue
            want = {"frozen_fw": model[u.name].fw, "fw": model[u.name].fw, "wg": model[u.name].wg,
                    "ig": model[u.name].ig, "update": 0}[u.step]
            assert sum(sp.macs() for sp in u.specs) == want, (pt.net, u.name, u.step)


def test_ops_and_loss_by_hand(tmp_path, fake_kernels, monkeypatch):
    """With op kernels: an activation kernel after every frozen layer that has one, the loss once per
    trained sample. Tiny PhiNet, layer_id 1: 25 new samples, 68 tail samples (see test_latency_by_hand)."""
    def op_specs(op, network, step, p=1.0, platform="pulp-open"):
        if op.layer is None or op.layer.act_after == "none":
            return []
        return [kspec.make("relu6", 4, 4, 2, 2, step, p_in=p, platform=platform)]

    monkeypatch.setattr(klayers, "op_specs", op_specs, raising=False)
    monkeypatch.setattr(klayers, "loss_spec", lambda net, platform: kspec.make("ce", 4, 4, 1, 1, "fw",
                                                                                 platform=platform), raising=False)
    fake_kernels.cycles = {}
    res = pipeline.run_experiment(str(tiny_experiment(tmp_path, layer_ids="[1]")), jobs=1, results=tmp_path / "r",
                                  progress=False)
    row = res.frames["latency"].iloc[0]
    net = build_network("phinet", "cifar10", resolution=8, num_classes=4, alpha=0.25, num_layers=3)
    acts = sum(1 for lay in net.layers if lay.act_after != "none")
    assert 0 < acts < 20 and net.layers[-1].act_after == "none"
    f = 450e6
    assert row.ops_measured
    assert row.fw_frozen_task_s == pytest.approx(25 * (19 + acts) * 100 / f)
    assert row.ops_bw_task_s == pytest.approx(68 * 100 / f)                  # the loss
    assert row.bw_ms == pytest.approx((200 + 100) / f * 1e3)
    layers = res.frames["layers"]
    assert set(layers[layers.layer_kind == "op"].group) == {"fw_frozen", "ops_bw"}


def test_op_specs_are_picked_up(monkeypatch):
    seen = []

    def op_specs(op, network, step, p=1.0, platform="pulp-open"):
        seen.append((op.kind, step))
        return [kspec.make("add", 8, 8, 2, 2, step, p_in=p, platform=platform)]

    monkeypatch.setattr(klayers, "op_specs", op_specs, raising=False)
    net = build_network("mobilenetv2", "cifar10")
    uses = planmod.kernels_for(cut_at_layer_id(net, 3), 1.0, "paper")
    ops = [u for u in uses if not u.weight_layer]
    assert ops and {s for _, s in seen} == {"fw", "ig"}
    assert {u.group for u in ops} >= {"fw_frozen", "fw_tail", "ops_bw"}


@pytest.mark.parametrize("text,msg", [
    ('[experiment]\nkind = "latency"\n[[sweep]]\nnet = "phinet"\ndatasets = ["cifar10"]\nlayer_ids = [1]\np = [1.0]\nbogus = 1\n',
     "unknown key 'bogus'"),
    ('[experiment]\nkind = "latency"\n[[sweep]]\nnet = "resnet"\ndatasets = ["cifar10"]\nlayer_ids = [1]\np = [1.0]\n',
     "unknown network 'resnet'"),
    ('[experiment]\nkind = "latency"\n[[sweep]]\nnet = "phinet"\ndatasets = ["cifar10"]\nlayer_ids = [1]\np = [1.5]\n',
     "p must be in (0, 1]"),
    ('[experiment]\nkind = "kernels"\nplatforms = ["nope"]\n[[kernel]]\nkind = "pw"\ncin = 4\ncout = 4\nhw = 2\n',
     "nope"),
    ('[experiment]\nkind = "kernels"\n[[kernel]]\nkind = "pw"\ncin = 4\ncout = 4\nhw = 2\nstride = 2\n',
     "stride 1"),
    ('[experiment]\nkind = "sweep"\n', "kind must be one of"),
])
def test_bad_experiment_files(tmp_path, text, msg):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        specmod.load(str(path))
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_unknown_experiment_lists_choices(capsys):
    assert main(["experiment", "tabel2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose one of: demo, fig4, kernels, regress, table2" in err


@pytest.mark.parametrize("argv,msg", [
    (["experiment", "table2", "--platform", "nope"], "unknown platform 'nope'; choose one of: paper, pulp-open"),
    (["experiment", "table2", "--jobs", "0"], "--jobs: must be an integer from 1 to"),
    (["regress", "--jobs", "two"], "'two' is not an integer"),
])
def test_bad_arguments_are_one_line(capsys, argv, msg):
    try:
        code = main(argv)
    except SystemExit as e:          # argparse's own errors exit from the parser
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_unknown_layer_id_is_one_line(tmp_path, capsys):
    path = tiny_experiment(tmp_path, layer_ids="[1, 40]")
    assert main(["experiment", str(path), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "layer_id must be an integer from 1 to" in err and err.count("\n") == 1


# ---- cache ----

def _specs(n=6):
    return planmod.unique(kspec.make("pw", 4 + i, 6, 3, 3, step, platform="paper")
                          for i in range(n // 2) for step in ("fw", "wg"))


def test_cache_hit_miss_and_no_cache(tmp_path, fake_kernels):
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert (out.ran, out.cached, sorted(fake_kernels.runs)) == (6, 0, sorted(specs))
    assert len(list(cache.rows_dir.glob("*.json"))) == 6
    fake_kernels.runs.clear()
    fake_kernels.provenances.clear()
    again = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert (again.ran, again.cached, fake_kernels.runs) == (0, 6, [])
    assert fake_kernels.provenances == []          # the provenance memo answered
    assert again.rows == out.rows
    forced = execute.run_specs(specs, jobs=1, cache=cache, use_cache=False, progress=False)
    assert forced.ran == 6 and len(fake_kernels.runs) == 6


def test_changed_provenance_is_a_miss(tmp_path, fake_kernels, monkeypatch):
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    fake_kernels.runs.clear()
    fake_kernels.version = "v2"                                   # e.g. the generated source changed
    monkeypatch.setattr(cachemod, "tree_digest", lambda *a: "another-tree")
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert out.ran == 6 and out.cached == 0


def test_same_tree_new_provenance_file_reuses_rows(tmp_path, fake_kernels, monkeypatch):
    """An edit elsewhere in the tree starts a new memo, but unchanged provenances still hit."""
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    fake_kernels.runs.clear()
    monkeypatch.setattr(cachemod, "tree_digest", lambda *a: "edited-tree")
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert (out.ran, out.cached, fake_kernels.runs) == (0, 6, [])
    assert (cache.index_dir / "edited-tree.json").is_file()


def test_truncated_or_foreign_cache_files_are_recomputed(tmp_path, fake_kernels):
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    files = sorted(cache.rows_dir.glob("*.json"))
    files[0].write_text(files[0].read_text()[:100])                      # killed mid-write (without os.replace)
    files[1].write_text(json.dumps({**json.loads(files[1].read_text()), "key": "0" * 64}))   # not its key
    files[2].write_text("")
    (cache.index_dir / next(cache.index_dir.glob("*.json")).name).write_text("{")   # a broken memo too
    fake_kernels.runs.clear()
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert out.ran == 3 and out.cached == 3 and len(fake_kernels.runs) == 3
    assert all(cache.load(f.stem) is not None for f in files)


def test_killed_run_resumes(tmp_path, fake_kernels, monkeypatch):
    specs, cache = _specs(8), cachemod.Cache(tmp_path / "cache")
    real = runner.run_spec

    def dies_on_fourth(spec, **kw):
        if len(fake_kernels.runs) == 3:
            raise KeyboardInterrupt
        return real(spec, **kw)

    monkeypatch.setattr(runner, "run_spec", dies_on_fourth)
    with pytest.raises(KeyboardInterrupt):
        execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert len(list(cache.rows_dir.glob("*.json"))) == 3
    assert not list(cache.rows_dir.glob(".*"))                 # no temporary files left behind
    monkeypatch.setattr(runner, "run_spec", real)
    fake_kernels.runs.clear()
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert (out.cached, out.ran) == (3, 5)


def test_a_writer_killed_mid_write_leaves_a_temporary_file_the_next_run_removes(tmp_path, fake_kernels):
    """SIGKILL between write_atomic's temporary file and its rename leaves the file: the next run removes
    the files of writers that are gone, and keeps a live writer's."""
    import os
    import subprocess
    import sys
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = cache.rows_dir / f".{'a' * 64}.json.{dead}.x1y2z3.tmp"
    live = cache.rows_dir / f".{'b' * 64}.json.{os.getpid()}.x1y2z3.tmp"
    orphan.write_text("{")
    live.write_text("{")
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert out.cached == len(specs)
    assert not orphan.exists() and live.exists()


def test_failed_kernels_are_errors_cached_until_no_cache(tmp_path, fake_kernels):
    specs, cache = _specs(), cachemod.Cache(tmp_path / "cache")
    bad = next(iter(specs))
    fake_kernels.fail = {bad}
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert list(out.errors) == [bad] and "numeric mismatch" in out.errors[bad] and bad not in out.rows
    fake_kernels.runs.clear()
    again = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert fake_kernels.runs == [] and "(cached" in again.errors[bad] and again.cached == 6
    fake_kernels.fail = set()                                      # e.g. a flaky host: --no-cache retries
    forced = execute.run_specs(specs, jobs=1, cache=cache, use_cache=False, progress=False)
    assert not forced.errors and bad in forced.rows


def test_only_input_determined_exceptions_are_cached(tmp_path, fake_kernels, monkeypatch):
    specs, cache = _specs(4), cachemod.Cache(tmp_path / "cache")
    names = list(specs)
    real = runner.run_spec

    def flaky(spec, **kw):
        fake_kernels.runs.append(spec.name)
        if spec.name == names[0]:
            raise UserError("build failed: ld.lld: error: section overflow")
        if spec.name == names[1]:
            raise OSError("No space left on device")
        return real(spec, **kw)

    monkeypatch.setattr(runner, "run_spec", flaky)
    out = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert set(out.errors) == set(names[:2]) and "section overflow" in out.errors[names[0]]
    fake_kernels.runs.clear()
    again = execute.run_specs(specs, jobs=1, cache=cache, progress=False)
    assert fake_kernels.runs == [names[1]]                           # the OSError is retried, the build error not


def test_parallel_workers(tmp_path, fake_kernels):
    """The process pool (forked workers inherit the fakes) gives the same rows as a serial run."""
    specs = _specs(8)
    par = execute.run_specs(specs, jobs=2, cache=cachemod.Cache(tmp_path / "a"), progress=False)
    ser = execute.run_specs(specs, jobs=1, cache=cachemod.Cache(tmp_path / "b"), progress=False)
    assert par.ran == 8 and par.rows == ser.rows
    again = execute.run_specs(specs, jobs=2, cache=cachemod.Cache(tmp_path / "a"), progress=False)
    assert again.cached == 8


# ---- latency arithmetic ----

def test_latency_by_hand(tmp_path, fake_kernels):
    """Tiny PhiNet, 20 weight layers; schedule: I = ceil(25/3) = 9, T = 25 + 9 = 34, E = 2, so every
    trained layer runs fw/wg/ig 68 times and update 18 times, every frozen layer 25 forwards.
    Every kernel takes fw 100, wg 200, ig 300, update 50 cycles; paper runs at 450 MHz."""
    res = pipeline.run_experiment(str(tiny_experiment(tmp_path)), jobs=1, results=tmp_path / "r", progress=False)
    lat = res.frames["latency"].set_index("layer_id")
    f = 450e6
    # layer_id 1: 19 frozen layers, the classifier trained (reads the latent: no ig)
    one = lat.loc[1]
    assert one.fw_frozen_task_s == pytest.approx(25 * 19 * 100 / f)
    assert one.fw_tail_task_s == pytest.approx(68 * 100 / f)
    assert one.wg_task_s == pytest.approx(68 * 200 / f) and one.ig_task_s == 0
    assert one.sgd_task_s == pytest.approx(18 * 50 / f)
    assert one.fw_task_s == pytest.approx((25 * 19 * 100 + 68 * 100) / f)
    assert one.update_task_s == pytest.approx((68 * 200 + 18 * 50) / f)
    assert one.total_task_s == pytest.approx(one.fw_task_s + one.update_task_s)
    assert one.bw_ms == pytest.approx(200 / f * 1e3)
    assert one.S_replay_MB == pytest.approx(8 * 12 * 2 / 1e6)      # 8 latents of the pooled 12-vector, FP16
    # layer_id 2: B4 (expand, dw, se_reduce, se_expand, project) + classifier trained; B4.expand has no ig
    two = lat.loc[2]
    assert two.fw_frozen_task_s == pytest.approx(25 * 14 * 100 / f)
    assert two.fw_tail_task_s == pytest.approx(68 * 6 * 100 / f)
    assert two.wg_task_s == pytest.approx(68 * 6 * 200 / f)
    assert two.ig_task_s == pytest.approx(68 * 5 * 300 / f)
    assert two.sgd_task_s == pytest.approx(18 * 6 * 50 / f)
    assert two.bw_ms == pytest.approx((6 * 200 + 5 * 300) / f * 1e3)
    net = build_network("phinet", "cifar10", resolution=8, num_classes=4, alpha=0.25, num_layers=3)
    mem = training_memory(cut_at_layer_id(net, 2), 1.0, batch=4, replays=8)
    assert two.M_MB == pytest.approx(mem.M_bytes / 1e6) and two.S_replay_MB == pytest.approx(mem.S_replay_bytes / 1e6)
    layers = res.frames["layers"]
    assert (layers.model_macs == layers.macs).all()
    assert layers[(layers.layer_id == 2)].task_cycles.sum() == pytest.approx(two.total_task_s * f)
    meta = json.loads((res.outdir / "meta.json").read_text())
    assert meta["kernels"]["unique"] == len(res.plan.specs) and meta["platforms"][0]["peak_mac_per_cycle"] == 16


def test_peak_mac_per_cycle():
    assert tables.peak_mac_per_cycle("paper") == 16
    assert tables.peak_mac_per_cycle("pulp-open") == 8


# ---- regression ----

def test_regress_detects_a_changed_cycle_count(tmp_path, fake_kernels, capsys):
    golden = tmp_path / "golden.csv"
    common = ["--golden", str(golden), "--results", str(tmp_path / "r"), "--quiet"]
    assert main(["regress", *common]) == 2                       # no golden yet: one-line error
    assert "make golden" in capsys.readouterr().err
    assert main(["regress", "--update", *common]) == 0
    df = pd.read_csv(golden)
    assert list(df.columns) == regress.GOLDEN_COLUMNS and len(df) == len(planmod.expand(specmod.load("regress")).specs)
    assert main(["regress", *common]) == 0
    capsys.readouterr()
    victim = df.kernel.iloc[3]
    df.loc[3, "cycles"] = df.loc[3, "cycles"] + 7
    df.to_csv(golden, index=False)
    assert main(["regress", *common]) == 1
    out = capsys.readouterr().out
    assert victim in out and "FAILED" in out and "%" in out


def test_regress_compare_reports_every_kind_of_difference():
    a = pd.DataFrame([{"kernel": k, "platform": "paper", "step": "fw", **{c: 100 for c in regress.COUNTS}}
                      for k in ("k1", "k2", "k3")])
    b = a.copy()
    b.loc[0, "cycles"] = 110
    b = b[b.kernel != "k3"]
    b = pd.concat([b, a[a.kernel == "k1"].assign(kernel="k4")])
    diffs = regress.compare(a, b)
    assert {(d["kernel"], d["column"]) for d in diffs} == {("k1", "cycles"), ("k3", "(kernel)"), ("k4", "(kernel)")}
    assert next(d for d in diffs if d["column"] == "cycles")["pct"] == pytest.approx(10.0)


def test_golden_file_matches_the_regress_set():
    df = regress.read_golden(regress.GOLDEN)
    assert set(df.kernel) == set(planmod.expand(specmod.load("regress")).specs)


# ---- end to end, real kernels ----

@needs_clang
def test_real_kernels_end_to_end(tmp_path, capsys):
    path = tiny_experiment(tmp_path, layer_ids="[1]", p="[1.0]")
    results = tmp_path / "r"
    assert main(["experiment", str(path), "--results", str(results), "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "tiny" in out and "latency.csv" in out
    kern = pd.read_csv(results / "tiny" / "kernels.csv")
    assert kern.ok.all() and (kern.cycles > 0).all() and (kern.simulator.str.startswith("pulpsim")).all()
    lat = pd.read_csv(results / "tiny" / "latency.csv")
    assert lat.total_task_s.iloc[0] == pytest.approx(lat.fw_task_s.iloc[0] + lat.update_task_s.iloc[0])
    layers = pd.read_csv(results / "tiny" / "layers.csv")
    cls = layers[(layers.name == "classifier") & (layers.step == "wg")].iloc[0]
    assert cls.cycles == kern.set_index("kernel").loc[cls.kernel, "cycles"]
    before = (results / "tiny" / "latency.csv").read_text()
    res = pipeline.run_experiment(str(path), results=results, progress=False)
    assert res.outcome.ran == 0 and res.outcome.cached == len(kern)
    assert (results / "tiny" / "latency.csv").read_text() == before


@needs_clang
def test_real_deployed_steps_end_to_end(tmp_path, capsys):
    path = tiny_experiment(tmp_path, layer_ids="[1, 2]", p="[0.7]", name="table2", deployment="deployed")
    path.write_text(path.read_text().replace(
        'deployment = "deployed"\n', 'deployment = "deployed"\ntimeline = { net = "phinet", dataset = "cifar10", '
        'layer_id = 2, p = 0.7 }\n'))
    results = tmp_path / "r"
    assert main(["experiment", str(path), "--results", str(results), "--jobs", "2", "--headline"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in out[:4]] == ["memory", "latency per task", "backward MAC/cycle",
                                                    "energy per task"]
    lat = pd.read_csv(results / "table2" / "latency.csv")
    assert list(lat.deployment) == ["deployed", "deployed"] and list(lat.placement) == ["fit", "fit"]
    for r in lat.itertuples():
        assert r.total_task_s == pytest.approx(r.fw_task_s + r.update_task_s)
        assert r.fw_task_s == pytest.approx(r.fw_frozen_task_s + r.latents_task_s + r.fw_tail_task_s)
        parts = r.compute_task_s + r.dma_wait_task_s + r.ext_wait_task_s + r.overhead_task_s
        assert parts == pytest.approx(r.total_task_s)
        assert r.bw_mac_per_cycle == pytest.approx(r.batch * r.bw_macs_per_sample / r.bw_cycles_per_batch, abs=1e-4)
    assert f"{lat.bw_mac_per_cycle.min():.2f}" in out[2] and f"{lat.total_task_s.max():.2f} s" in out[1]
    kern = pd.read_csv(results / "table2" / "kernels.csv")
    assert kern.ok.all() and kern.stage.str.len().gt(0).all()
    layers = pd.read_csv(results / "table2" / "layers.csv")
    row = layers[(layers.layer_id == 2) & (layers.name == "classifier.wg")].iloc[0]
    assert row.cycles == kern.set_index("kernel").loc[row.kernel, "cycles"]
    assert (layers.groupby("layer_id").task_s.sum() / lat.set_index("layer_id").total_task_s).round(6).eq(1).all()
    meta = json.loads((results / "table2" / "meta.json").read_text())
    assert meta["deployment"] == "deployed" and meta["placements"] == ["fit"]
    plans = pd.read_csv(results / "table2" / "plans.csv")
    assert sorted(plans.layer_id.unique()) == [1, 2] and set(plans.home) <= {"l2", "hyperram", "flash"}
    assert (plans.first_index <= plans.last_index).all() and plans.bytes.gt(0).all()
    assert {"w:classifier", "dw:classifier", "xs:classifier"} <= set(plans[plans.layer_id == 2].tensor)
    assert "plans.csv" in meta["files"]
    # the recorded whole step: every stage once per run, in the stages track, and the cores and DMAs
    from tests.test_timeline import check_trace
    doc = json.loads((results / "table2" / "timeline.json").read_text())
    per = check_trace(doc, expect=("stages", "FC", "PE0", "PE7", "cluster DMA"))
    o = doc["otherData"]
    assert o["numpy_check"].endswith("tensors agree") and o["point"]["layer_id"] == 2
    runs = sum(s["runs"] for s in o["stages"])
    assert len(per["stages"]) == runs and {e["name"].split(":")[0] for e in per["stages"]} >= {"fw", "bw", "update"}
    stamp = (results / "table2" / "timeline.json").stat().st_mtime_ns
    res = pipeline.run_experiment(str(path), results=results, progress=False)
    assert res.outcome.ran == 0
    assert (results / "table2" / "timeline.json").stat().st_mtime_ns == stamp     # same key: not simulated again
    from harness.experiments import report
    page, n = report.build(results, tmp_path / "out")
    html = page.read_text()
    for fig_id in ("fig-breakdown-table2", "fig-pareto-table2-paper", "fig-plan-table2", "fig-timeline-table2",
                   "fig-model-table2-paper", "fig-energy-memory-table2-paper", "fig-latency-energy-table2-paper"):
        assert f'id="{fig_id}"' in html
    assert n == 7 and "xs:classifier" in html and "no energy figures" not in html
    rendered = render(page, tmp_path)
    assert rendered["plots"] == n and rendered["tables"] == 2 and rendered["errors"] == 0


# ---- report ----

def _report_inputs(tmp_path, fake_kernels):
    results = tmp_path / "r"
    pipeline.run_experiment(str(tiny_experiment(tmp_path, layer_ids="[1, 2, 3]", p="[1.0, 0.7]", name="fig4")),
                            jobs=1, results=results, progress=False)
    kpath = tmp_path / "kernels.toml"
    kpath.write_text('[experiment]\nkind = "kernels"\nplatforms = ["paper", "pulp-open"]\nsteps = ["fw", "wg"]\n'
                     '[[kernel]]\nkind = "pw"\ncin = 8\ncout = 8\nhw = 4\n')
    pipeline.run_experiment(str(kpath), jobs=1, results=results, progress=False)
    return results


@pytest.mark.e2e
def test_report_figures(tmp_path, fake_kernels):
    results = _report_inputs(tmp_path, fake_kernels)
    acc = tmp_path / "acc.csv"
    pd.DataFrame([{"net": "phinet(alpha=0.25,num_classes=4,num_layers=3,resolution=8)", "dataset": "cifar10",
                   "layer_id": lid, "p": p, "accuracy": 0.5 + 0.1 * lid} for lid in (1, 2, 3) for p in (1.0, 0.7)]
                 ).to_csv(acc, index=False)
    from harness.experiments import report
    path, n = report.build(results, tmp_path / "out", acc)
    html = path.read_text()
    for fig_id in ("fig-pareto-fig4-paper", "fig-accuracy-paper", "fig-kernels-paper", "fig-kernels-pulp-open",
                   "fig-breakdown-fig4", "fig-model-fig4-paper"):
        assert f'id="{fig_id}"' in html
    assert html.count('<figure class="plot"') == n == 6
    assert offline(html)
    assert "no energy figures" in html and "fig-energy" not in html   # the fake kernels record no energy
    without, n2 = report.build(results, tmp_path / "out2")
    assert n2 == 5 and "No accuracy CSV" in without.read_text()
    # energy columns (written by experiments that measure energy): two more plots per platform
    lat = pd.read_csv(results / "fig4" / "latency.csv")
    lat["task_energy_J"] = lat.total_task_s * 0.01
    lat["bw_energy_J"] = lat.bw_ms * 1e-5
    lat.to_csv(results / "fig4" / "latency.csv", index=False)
    energy, n3 = report.build(results, tmp_path / "out3")
    text = energy.read_text()
    assert n3 == 7 and 'id="fig-energy-memory-fig4-paper"' in text and 'id="fig-latency-energy-fig4-paper"' in text


def offline(html: str) -> bool:
    """Nothing the page loads comes from elsewhere: no script or style by URL, no link, no frame."""
    import re
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html)
    return not any(re.search(r"\b(src|href)\s*=", t) for t in tags)


def test_report_errors(tmp_path, capsys):
    assert main(["report", "--results", str(tmp_path)]) == 2
    assert "no results" in capsys.readouterr().err
    bad = tmp_path / "acc.csv"
    bad.write_text("net,p\nphinet,1\n")
    (tmp_path / "kernels").mkdir()
    pd.DataFrame([{"platform": "paper"}]).to_csv(tmp_path / "kernels" / "kernels.csv", index=False)
    assert main(["report", "--results", str(tmp_path), "--accuracy", str(bad)]) == 2
    assert "lacks column(s) dataset, layer_id, accuracy" in capsys.readouterr().err


def _chromium():
    import shutil
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def render(page: Path, tmp_path: Path) -> dict:
    """Open the page in headless Chromium with no network: what its glue counted (figures drawn,
    tables built, script errors) and the console's errors."""
    import re
    import subprocess
    if _chromium() is None:
        pytest.skip("chromium not installed (make toolchain installs Debian's chromium)")
    proc = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
                           "--virtual-time-budget=15000", "--enable-logging=stderr", "--v=0", "--dump-dom",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = {k: re.search(rf'data-{k}-rendered="(\d+)"' if k != "errors" else r'data-errors="(\d+)"', proc.stdout)
           for k in ("plots", "tables", "errors")}
    assert all(got.values()), "the page's glue did not run"
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln and re.search(r"error|uncaught|failed", ln, re.I)]
    assert not console, console
    out = {k: int(m.group(1)) for k, m in got.items()}
    out["figures"] = len(re.findall(r'<figure class="plot" id="fig-', proc.stdout))
    out["main_svgs"] = len(re.findall(r'<svg class="main-svg"', proc.stdout))
    return out


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (make toolchain installs Debian's chromium)")
@pytest.mark.e2e
def test_report_renders_in_headless_chromium(tmp_path, fake_kernels):
    from harness.experiments import report
    results = _report_inputs(tmp_path, fake_kernels)
    path, n = report.build(results, tmp_path / "out")
    got = render(path, tmp_path)
    assert got["plots"] == got["figures"] == n >= 5
    assert got["main_svgs"] >= n and got["errors"] == 0
    assert got["tables"] == 3      # fig4's latency and kernel tables, the kernel benchmark's table


@pytest.mark.e2e
@needs_clang
def test_an_uncached_kernel_is_generated_once(tmp_path, monkeypatch):
    from harness.kernels import codegen

    calls = []
    real = codegen.generate
    monkeypatch.setattr(codegen, "generate", lambda *a, **k: calls.append(1) or real(*a, **k))
    sp = kspec.make("pw", 4, 4, 2, 2, "fw", platform="pulp-open")
    out = execute.run_specs({sp.name: sp}, jobs=1, cache=cachemod.Cache(tmp_path), progress=False)
    assert out.ran == 1 and not out.errors and len(calls) == 1


@needs_clang
def test_toolchain_is_asked_for_its_version_once(monkeypatch):
    import subprocess

    from harness import toolchain

    asked = []
    real = subprocess.run
    monkeypatch.setattr(toolchain, "_found", {})
    monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **k: asked.append(cmd) or real(cmd, *a, **k))
    first = toolchain.find()
    assert all(toolchain.find() is first for _ in range(3))
    assert len([c for c in asked if "--version" in c]) <= 1


def test_other_deployment_writes_beside_the_experiments_own():
    exp = specmod.load("table2")
    assert exp.deployment == "deployed" and exp.with_deployment("deployed") is exp
    iso = exp.with_deployment("isolated")
    assert iso.name == "table2-isolated" and iso.deployment == "isolated"


def test_printed_latency_table_puts_the_isolated_total_beside_the_deployed():
    from rich.console import Console

    key = {"platform": "paper", "net": "phinet", "dataset": "cifar10", "layer_id": 2, "p": 0.7}
    dep = pd.DataFrame([{**key, "placement": pl, "M_MB": 1.0, "S_replay_MB": 0.5, "bw_ms": 2.0,
                         "bw_mac_per_cycle": mpc, "fw_task_s": 3.0, "update_task_s": 4.0, "total_task_s": 7.0}
                        for pl, mpc in (("fit", 3.71), ("method", 2.44))])
    iso = pd.DataFrame([{**key, "M_MB": 1.0, "S_replay_MB": 0.5, "bw_ms": 9.0, "fw_task_s": 30.0,
                         "update_task_s": 40.0, "total_task_s": 70.25}])
    con = Console(width=300, record=True)
    con.print(tables.latency_table(dep, "t", isolated=iso))
    text = con.export_text()
    assert "isolated s/task" in text and "bw MAC/cycle" in text
    assert text.count("70.25") == 2 and "3.71" in text and "2.44" in text
    con = Console(width=300, record=True)
    con.print(tables.latency_table(dep, "t"))
    assert "isolated" not in con.export_text()
