"""ONNX models as networks: the importer against an independent implementation (onnxruntime) and an
independent count (MACs and parameters read off the ONNX graph), the round trip of the built-in
networks through export-onnx, the example models, and each construct the importer refuses."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from harness import ROOT
from harness.cli import main
from harness.errors import UserError
from harness.nets import build_network, layer_rows, onnx_export, onnx_import
from harness.nets.forward import forward
from harness.nets.weights import random_weights
from tests import onnx_models
from tests.conftest import needs_clang

ort = pytest.importorskip("onnxruntime")
MODELS = ROOT / "examples" / "models"
EXAMPLES = ("ds_cnn.onnx", "resnet8.onnx")


def _ort(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _agreement(path, imp, batch=3, seed=0):
    x = np.random.default_rng(seed).standard_normal((batch,) + imp.network.input_shape).astype(np.float32)
    ref = forward(imp.network, imp.weights, x)          # float64 from the layer table
    got = _ort(path, x)                                  # onnxruntime, FP32
    return ref, got


# ---------------------------------------------------------------- the example models

def test_example_models_are_what_the_script_writes(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_models", MODELS / "make_models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for p in mod.write(tmp_path):
        assert p.read_bytes() == (MODELS / p.name).read_bytes(), f"{p.name}: run examples/models/make_models.py"


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_forward_equals_onnxruntime(name):
    imp = onnx_import.load(MODELS / name)
    ref, got = _agreement(MODELS / name, imp)
    assert got.shape == ref.shape == (3, imp.network.num_classes)
    # FP32 rounding of the runtime against the float64 record: |err| <= 1e-5 of the largest logit
    assert np.max(np.abs(ref - got)) <= 1e-5 * np.max(np.abs(ref)), np.max(np.abs(ref - got))


def _graph_counts(path, chw):
    """(MACs, params) of every Conv and Gemm node, in graph order, read off the ONNX graph alone."""
    m = onnx.load(str(path))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    m = onnx.shape_inference.infer_shapes(m)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(m.graph.value_info) + list(m.graph.output)}
    init = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    out = []
    for node in m.graph.node:
        if node.op_type == "Conv":
            w = init[node.input[1]]
            n, co, ho, wo = shapes[node.output[0]]
            macs = ho * wo * co * w.shape[1] * w.shape[2] * w.shape[3]
            params = w.size + (init[node.input[2]].size if len(node.input) > 2 else 0)
            out.append((macs, params))
        elif node.op_type == "Gemm":
            w = init[node.input[1]]
            out.append((w.size, w.size + (init[node.input[2]].size if len(node.input) > 2 else 0)))
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_macs_and_params_equal_a_count_of_the_graph(name):
    net = onnx_import.load(MODELS / name).network
    assert [(lay.macs, lay.params) for lay in net.layers] == _graph_counts(MODELS / name, net.input_shape)


def test_example_structure():
    kws = onnx_import.load(MODELS / "ds_cnn.onnx").network
    assert kws.input_shape == (1, 49, 10) and kws.num_classes == 12
    assert [lay.kind for lay in kws.layers] == ["conv3x3"] + ["depthwise", "pointwise"] * 4 + ["linear"]
    assert kws.layers[0].pad == (0, 1, 1, 1)               # SAME_UPPER on 49 x 10 at stride 2
    assert all(lay.act_after == "relu" and lay.bn_after and lay.bias for lay in kws.layers[:-1])
    assert len(kws.blocks) == 10 and kws.blocks[-1] == "classifier"
    r8 = onnx_import.load(MODELS / "resnet8.onnx").network
    assert r8.blocks == ("conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "classifier")
    down = r8.layer("layer2.0.downsample.0")
    # the operand made last fuses with the add; ReLU after the sum is its activation
    assert down.stride == 2 and down.kind == "pointwise" and down.residual == "add(layer2.0.conv2)"
    assert down.act_after == "relu" and r8.layer("layer2.0.conv2").act_after == "none"
    assert r8.layer("layer1.0.conv2").residual == "add(block_input)"


# ---------------------------------------------------------------- round trip of the built-ins

@pytest.mark.parametrize("net,dataset", [("mobilenetv2", "cifar10"), ("mobilenetv2", "core50"),
                                         ("phinet", "cifar10"), ("phinet", "core50")])
def test_export_then_import_gives_the_same_layer_table(net, dataset, tmp_path, capsys):
    out = tmp_path / f"{net}.onnx"
    assert main(["export-onnx", "--net", net, "--dataset", dataset, "-o", str(out)]) == 0
    capsys.readouterr()
    built = build_network(net, dataset)
    imp = onnx_import.load(out)
    assert layer_rows(imp.network) == layer_rows(built)
    assert imp.network.blocks == built.blocks
    w = random_weights(built, 0)
    for lay in built.layers:
        np.testing.assert_array_equal(imp.weights[lay.name].w, w[lay.name].w)
        assert (imp.weights[lay.name].b is None) == (w[lay.name].b is None)
    if dataset == "cifar10":
        ref, got = _agreement(out, imp, batch=2)
        assert np.max(np.abs(ref - got)) <= 1e-5 * np.max(np.abs(ref))
        # the layer table's forward of the built-in record and of the imported one are the same function
        x = np.random.default_rng(1).standard_normal((2,) + built.input_shape)
        np.testing.assert_allclose(forward(built, w, x), forward(imp.network, imp.weights, x), rtol=0, atol=1e-12)


def test_export_with_given_weights(tmp_path, capsys):
    net = build_network("phinet", "cifar10")
    w = random_weights(net, 5)
    npz = tmp_path / "w.npz"
    np.savez(npz, **{f"{k}.weight": v.w for k, v in w.items()}, **{f"{k}.bias": v.b for k, v in w.items()
                                                                    if v.b is not None})
    out = tmp_path / "p.onnx"
    assert main(["export-onnx", "--net", "phinet", "--dataset", "cifar10", "-o", str(out), "--weights", str(npz)]) == 0
    imp = onnx_import.load(out)
    for k, v in w.items():
        np.testing.assert_array_equal(imp.weights[k].w, v.w)
    # a re-export of an imported model with its own weights is the same model
    again = tmp_path / "again.onnx"
    assert main(["export-onnx", "--net", str(out), "--dataset", "cifar10", "-o", str(again), "--weights", "model"]) == 0
    assert layer_rows(onnx_import.load(again).network) == layer_rows(imp.network)
    capsys.readouterr()


# ---------------------------------------------------------------- refusals and symbolic inputs

@pytest.mark.parametrize("case", onnx_models.refusals(), ids=lambda c: c[0])
def test_refusals_are_one_line_naming_what_is_supported(case, tmp_path):
    name, model, fragment = case
    onnx.save(model, tmp_path / name)
    with pytest.raises(UserError) as e:
        onnx_import.load(tmp_path / name)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_symbolic_input_with_input_shape(tmp_path):
    p = tmp_path / "sym.onnx"
    onnx.save(onnx_models.tiny(input_dims=("N", 3, "H", "W")), p)
    imp = onnx_import.load(p, (3, 12, 10))
    assert imp.network.input_shape == (3, 12, 10)
    ref, got = _agreement(p, imp)
    assert np.max(np.abs(ref - got)) <= 1e-5 * np.max(np.abs(ref))
    with pytest.raises(UserError, match="disagrees with the model's input"):
        onnx_import.load(MODELS / "ds_cnn.onnx", (1, 48, 10))


def test_tiny_model_structure_and_agreement(tmp_path):
    p = tmp_path / "tiny.onnx"
    onnx.save(onnx_models.tiny(), p)
    imp = onnx_import.load(p)
    net = imp.network
    assert net.blocks == ("stem", "blk.dw", "classifier")
    assert [(lay.kind, lay.act_after, lay.bn_after) for lay in net.layers] == [
        ("conv3x3", "relu", True), ("depthwise", "relu6", False), ("pointwise", "none", False),
        ("linear", "none", False)]
    ref, got = _agreement(p, imp)
    assert np.max(np.abs(ref - got)) <= 1e-5 * np.max(np.abs(ref))


def test_layers_and_memory_commands_read_onnx(capsys, tmp_path):
    assert main(["layers", "--net", str(MODELS / "resnet8.onnx"), "--dataset", "cifar10", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["input_shape"] == [3, 32, 32] and doc["num_classes"] == 10 and len(doc["cut_points"]) == 5
    assert main(["memory", "--net", str(MODELS / "ds_cnn.onnx"), "--dataset", "cifar10", "--layer-id", "3",
                 "--p", "0.7", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trainable_layers"] == ["dw4", "pw4", "fc"] and doc["latent"]["tensors"] == ["pw3"]


def test_experiment_file_names_models_relative_to_itself(tmp_path, monkeypatch):
    from harness.experiments import spec
    (tmp_path / "m").mkdir()
    onnx.save(onnx_models.tiny(), tmp_path / "m" / "tiny.onnx")
    text = ('[experiment]\nkind = "latency"\n[[sweep]]\nnet = "{}"\ndatasets = ["cifar10"]\nlayer_ids = [1]\n'
            'p = [1.0]\n')
    (tmp_path / "m" / "e.toml").write_text(text.format("tiny.onnx"))
    exp = spec.load(str(tmp_path / "m" / "e.toml"))
    assert exp.sweeps[0].net == str((tmp_path / "m" / "tiny.onnx").resolve()) and exp.sweeps[0].label == "tiny.onnx"
    (tmp_path / "e2.toml").write_text(text.format("m/tiny.onnx"))
    monkeypatch.chdir(tmp_path / "m")            # relative to the file first, then to the cwd
    assert spec.load(str(tmp_path / "e2.toml")).sweeps[0].net.endswith("m/tiny.onnx")
    (tmp_path / "e3.toml").write_text(text.format("nope.onnx"))
    with pytest.raises(UserError, match="ONNX model nope.onnx not found"):
        spec.load(str(tmp_path / "e3.toml"))


# ---------------------------------------------------------------- through the deployer

@needs_clang
def test_ds_cnn_training_step_on_the_model_weights():
    """An imported network goes through the deployer's graph, memory plan and stage programs: the whole
    step (frozen conv and depthwise-separable blocks, ReLU forward and masks backward, the pool over a
    25 x 5 map) runs as one program on the model's initializers and agrees with NumPy and with its stages."""
    from harness.commands.deploy import compare
    from harness.deploy import runner
    pt = runner.Point(str(MODELS / "ds_cnn.onnx"), "cifar10", 3, 0.7, "paper", weights="model")
    w = runner.model_tensors(pt)
    assert w["w:pw4"].shape == (64, 64) and w["w:dw4"].shape == (9, 64) and w["b:fc"].shape == (1, 12)
    imp = onnx_import.load(MODELS / "ds_cnn.onnx")
    np.testing.assert_array_equal(w["w:dw4"], imp.weights["dw4"].w[:, 0].reshape(64, 9).T)
    doc = compare(pt, progress=False)
    assert doc["ok"], {n: c for n, c in doc["checks"].items() if not c["ok"]}
    assert abs(doc["difference"]) <= 0.03, doc["phases"]
