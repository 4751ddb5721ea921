"""`pulp-odl layers` and `pulp-odl memory` end to end through harness.cli.main."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from harness.cli import main

from tests.shared_data import SHARED  # noqa: E402
CSVS = {"mobilenetv2": "mobilenetv2_a075.csv", "phinet": "phinet_a1.1_b0.75_t05.csv"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("net", ["mobilenetv2", "phinet"])
@pytest.mark.parametrize("dataset,res", [("cifar10", "32"), ("core50", "128")])
def test_layers_csv_matches_reference(capsys, net, dataset, res):
    path = SHARED / "data" / "networks" / CSVS[net]
    if not path.exists():
        pytest.skip(f"reference CSV {path} not found (set PULP_ODL_SHARED)")
    code, out, _ = run(capsys, "layers", "--net", net, "--dataset", dataset, "--format", "csv")
    assert code == 0
    mine = list(csv.DictReader(io.StringIO(out)))
    ref = [r for r in csv.DictReader(path.open()) if r["resolution"] == res]
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        assert {k: a[k] for k in b if k != "note"} == {k: v for k, v in b.items() if k != "note"}


def test_layers_json_is_one_document(capsys):
    code, out, _ = run(capsys, "layers", "--net", "phinet", "--dataset", "core50", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["resolution"] == 128 and doc["totals"]["weight_layers"] == 40
    assert doc["cut_points"][0] == {"layer_id": 1, "block": "classifier"}
    assert {op["kind"] for op in doc["ops"]} >= {"se_scale", "add", "global_avgpool", "dropout", "depthwise"}


def test_layers_table(capsys):
    code, out, _ = run(capsys, "layers", "--net", "mobilenetv2", "--dataset", "cifar10")
    assert code == 0
    assert "B17.project" in out and "53 weight layers" in out and "4,253,408" in out


@pytest.mark.parametrize("platform", ["paper", "pulp-open"])
def test_memory_json(capsys, platform):
    code, out, _ = run(capsys, "memory", "--net", "mobilenetv2", "--dataset", "core50", "--layer-id", "5",
                       "--p", "0.7", "--platform", platform, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["platform"] == platform
    assert round(doc["M_MB"], 3) == 4.639 and doc["S_replay_MB"] == 19.2
    assert doc["trainable_layers"][0] == "B15.expand" and doc["trainable_layers"][-1] == "classifier"
    assert doc["macs_fw"] == 14_915_840 and doc["macs_bw"] == doc["macs_wg"] + doc["macs_ig"]
    roles = {e["role"] for e in doc["placement"]}
    assert roles >= {"frozen_params", "trainable_params", "weight_grads", "stored_acts", "replay_buffer",
                     "working_set"}
    assert not doc["fits_all"] and any(line.startswith("flash") for line in doc["not_fitting"])
    hyper = next(c for c in doc["capacity"] if c["memory"] == "hyperram")
    assert hyper["fits"] == (platform == "pulp-open")


def test_memory_dense_and_cut_by_name(capsys):
    _, out, _ = run(capsys, "memory", "--net", "mobilenetv2", "--dataset", "core50", "--layer-id", "5",
                    "--format", "json")
    dense = json.loads(out)
    assert round(dense["M_MB"], 3) == 6.337 and dense["macs_bw"] == 28_449_280
    _, out, _ = run(capsys, "memory", "--net", "mobilenetv2", "--dataset", "core50", "--cut", "B15.expand",
                    "--format", "json")
    by_name = json.loads(out)
    assert by_name["M_bytes"] == dense["M_bytes"] and by_name["layer_id"] == 5


def test_memory_table(capsys):
    code, out, _ = run(capsys, "memory", "--net", "phinet", "--dataset", "cifar10", "--layer-id", "3", "--p", "0.8")
    assert code == 0
    assert "M = " in out and "S_replay" in out and "B7.project" in out and "capacity" in out


@pytest.mark.parametrize("argv,needle", [
    (["memory", "--net", "phinet", "--dataset", "cifar10", "--layer-id", "11"], "from 1 to 10"),
    (["memory", "--net", "phinet", "--dataset", "cifar10", "--layer-id", "2", "--p", "0"], "0.9, 0.8"),
    (["memory", "--net", "phinet", "--dataset", "cifar10", "--cut", "nope"], "valid names: stem.dw"),
    (["memory", "--net", "phinet", "--dataset", "cifar10", "--layer-id", "2", "--platform", "x"], "paper, pulp-open"),
])
def test_user_errors_are_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err


@pytest.mark.parametrize("argv,needle", [
    (["layers", "--net", "resnet", "--dataset", "cifar10"], "mobilenetv2"),
    (["layers", "--net", "phinet", "--dataset", "mnist"], "core50"),
    (["layers", "--net", "phinet", "--dataset", "cifar10", "--format", "xml"], "table"),
    (["memory", "--net", "phinet", "--dataset", "cifar10"], "--layer-id"),
])
def test_argument_errors_are_one_line(capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err
