"""A network record and its weights as an ONNX model (onnx.helper; no deep-learning framework).

Each weight layer is a Conv node named after the layer (a Gemm after a Flatten for linear layers),
with its note as the node's doc string. A layer with BatchNorm gets a BatchNormalization node of
unit scale, zero mean and unit variance (epsilon 0) whose bias is the folded bias, so that importing
the file folds it back to exactly the same weights and records bn_after again. Activations are Relu,
Clip(0, 6), HardSwish and Sigmoid; residual adds, pools and squeeze-excite scales are Add,
GlobalAveragePool and Mul nodes named after their ops; dropout is left out (inference). The blocks
(replay cut points) are written to the metadata entry `pulp_odl.blocks` ({layer: block}), so that
the importer gives back the same layer_ids.
"""
from __future__ import annotations

import json

import numpy as np

from harness.nets.layer import Network
from harness.nets.onnx_import import BLOCKS_KEY
from harness.nets.weights import check

OPSET = 17
PRODUCER = "pulp-odl"


def to_model(net: Network, weights: dict):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    check(net, weights, f"weights of {net.name}")
    nodes, inits = [], []
    name_of: dict[str, str] = {net.input: "input"}     # network tensor -> ONNX value holding it
    vec: set[str] = set()                              # ONNX values that are (N, C) vectors

    def const(name: str, a) -> str:
        inits.append(numpy_helper.from_array(np.asarray(a, dtype=np.float32), name))
        return name

    def act(kind: str, x: str, out: str, name: str) -> None:
        if kind == "relu":
            nodes.append(helper.make_node("Relu", [x], [out], name=name))
        elif kind == "relu6":
            nodes.append(helper.make_node("Clip", [x, const(f"{name}.min", 0.0), const(f"{name}.max", 6.0)], [out],
                                          name=name))
        elif kind == "hswish":
            nodes.append(helper.make_node("HardSwish", [x], [out], name=name))
        elif kind == "sigmoid":
            nodes.append(helper.make_node("Sigmoid", [x], [out], name=name))
        else:
            nodes.append(helper.make_node("Identity", [x], [out], name=name))

    def as_map(t: str) -> str:
        v = name_of[t]
        if v not in vec:
            return v
        c = net.tensors[t][0]
        out = f"{v}.map"
        nodes.append(helper.make_node("Reshape", [v, _shape_const(inits, f"{v}.shape", [-1, c, 1, 1])], [out],
                                      name=f"{v}.reshape"))
        name_of[t] = out
        vec.discard(out)
        return out

    post_add: dict[str, str] = {}      # add op -> activation of the layer it fuses with
    for op in net.ops:
        if op.kind == "dropout":
            name_of[op.output] = name_of[op.inputs[0]]
            vec.add(name_of[op.output]) if name_of[op.inputs[0]] in vec else None
            continue
        lay = op.layer
        if lay is not None:
            lw = weights[lay.name]
            after_add = bool(lay.residual) and any(o.kind == "add" and o.inputs[0] == lay.output for o in net.ops)
            if lay.kind == "linear":
                x = name_of[lay.input]
                if x not in vec:
                    flat = f"{lay.name}.flatten"
                    nodes.append(helper.make_node("Flatten", [x], [flat], name=flat, axis=1))
                    x = flat
                ins = [x, const(f"{lay.name}.weight", lw.w)] + ([const(f"{lay.name}.bias", lw.b)] if lw.b is not None
                                                               else [])
                z = lay.output if lay.act_after == "none" else f"{lay.name}.gemm"
                nodes.append(helper.make_node("Gemm", ins, [z], name=lay.name, transB=1, doc_string=lay.note))
                if lay.act_after != "none":
                    act(lay.act_after, z, lay.output, f"{lay.name}.act")
                name_of[lay.output] = lay.output
                vec.add(lay.output)
                continue
            x = as_map(lay.input)
            own_bias = lay.bias and lw.b is not None
            ins = [x, const(f"{lay.name}.weight", lw.w)] + ([const(f"{lay.name}.bias", lw.b)] if own_bias else [])
            left, right, top, bottom = lay.pad
            last = lay.output
            z = f"{lay.name}.conv" if (lay.bn_after or (lay.act_after != "none" and not after_add)) else last
            nodes.append(helper.make_node("Conv", ins, [z], name=lay.name, kernel_shape=[lay.kernel, lay.kernel],
                                          strides=[lay.stride, lay.stride], pads=[top, left, bottom, right],
                                          group=lay.groups, doc_string=lay.note))
            if lay.bn_after:
                c = lay.c_out
                bias = lw.b if not own_bias else np.zeros(c, np.float32)
                zb = f"{lay.name}.bn" if (lay.act_after != "none" and not after_add) else last
                nodes.append(helper.make_node(
                    "BatchNormalization",
                    [z, const(f"{lay.name}.bn.scale", np.ones(c)), const(f"{lay.name}.bn.bias", bias),
                     const(f"{lay.name}.bn.mean", np.zeros(c)), const(f"{lay.name}.bn.var", np.ones(c))],
                    [zb], name=f"{lay.name}.bn", epsilon=0.0))
                z = zb
            if lay.act_after != "none" and not after_add:
                act(lay.act_after, z, last, f"{lay.name}.act")
            if after_add:
                post_add[next(o.name for o in net.ops if o.kind == "add" and o.inputs[0] == lay.output)] = lay.act_after
            name_of[lay.output] = last
        elif op.kind == "add":
            a, b = as_map(op.inputs[0]), as_map(op.inputs[1])
            kind = post_add.get(op.name, "none")
            z = op.output if kind == "none" else f"{op.name}.sum"
            nodes.append(helper.make_node("Add", [a, b], [z], name=op.name))
            if kind != "none":
                act(kind, z, op.output, f"{op.name}.act")
            name_of[op.output] = op.output
        elif op.kind == "global_avgpool":
            nodes.append(helper.make_node("GlobalAveragePool", [as_map(op.inputs[0])], [op.output], name=op.name))
            name_of[op.output] = op.output
        elif op.kind == "se_scale":
            nodes.append(helper.make_node("Mul", [as_map(op.inputs[0]), as_map(op.inputs[1])], [op.output],
                                          name=op.name))
            name_of[op.output] = op.output
        else:
            raise ValueError(f"{op.name}: no ONNX form for op kind {op.kind}")
    c, h, w = net.input_shape
    out = net.layers[-1].output
    graph = helper.make_graph(
        nodes, net.name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", c, h, w])],
        [helper.make_tensor_value_info(name_of[out], TensorProto.FLOAT, ["N", net.num_classes])],
        initializer=inits, doc_string=net.title)
    model = helper.make_model(graph, producer_name=PRODUCER, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    helper.set_model_props(model, {BLOCKS_KEY: json.dumps({lay.name: lay.block for lay in net.layers}),
                                   "pulp_odl.network": net.title})
    onnx.checker.check_model(model)
    return model


def _shape_const(inits: list, name: str, values) -> str:
    from onnx import numpy_helper
    inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
    return name


def written_by_us(path) -> bool:
    """An existing file `export-onnx` may replace: an ONNX model whose producer is pulp-odl."""
    import onnx
    try:
        m = onnx.load_model(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - anything that is not a model is not ours
        return False
    return m.producer_name == PRODUCER
