"""Small ONNX models written with onnx.helper for the importer's tests: a valid one and one for each
construct it refuses. `tiny(**change)` builds conv(3x3, 8) + BN + ReLU -> depthwise + ReLU6 -> 1x1
conv + residual add -> global pool -> Gemm(4); keyword arguments change one piece of it."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _t(name, a, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype=dtype), name)


def tiny(*, opset=13, input_dims=("N", 3, 8, 8), group_dw=8, extra_node=None, tail="gemm", blocks=None,
         kernel=(3, 3), seed=0) -> onnx.ModelProto:
    r = np.random.default_rng(seed)
    cin = input_dims[1] if isinstance(input_dims[1], int) else 3
    inits = [_t("w1", r.standard_normal((8, cin) + kernel) * 0.3), _t("g1", r.uniform(0.5, 1.5, 8)),
             _t("b1", r.uniform(-0.1, 0.1, 8)), _t("m1", r.uniform(-0.1, 0.1, 8)), _t("v1", r.uniform(0.5, 1.5, 8)),
             _t("w2", r.standard_normal((8, 8 // group_dw, 3, 3)) * 0.3), _t("c2", r.uniform(-0.1, 0.1, 8)),
             _t("lo", 0.0), _t("hi", 6.0),
             _t("w3", r.standard_normal((8, 8, 1, 1)) * 0.3), _t("c3", r.uniform(-0.1, 0.1, 8)),
             _t("wf", r.standard_normal((4, 8)) * 0.3), _t("bf", r.uniform(-0.1, 0.1, 4))]
    pad = [kernel[0] // 2, kernel[1] // 2] * 2
    nodes = [
        helper.make_node("Conv", ["input", "w1"], ["c1"], name="/stem/Conv", kernel_shape=list(kernel), pads=pad),
        helper.make_node("BatchNormalization", ["c1", "g1", "b1", "m1", "v1"], ["n1"], name="/stem/bn"),
        helper.make_node("Relu", ["n1"], ["r1"], name="/stem/Relu"),
        helper.make_node("Conv", ["r1", "w2", "c2"], ["c2o"], name="/blk/dw/Conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], group=group_dw),
        helper.make_node("Clip", ["c2o", "lo", "hi"], ["r2"], name="/blk/dw/Clip"),
        helper.make_node("Conv", ["r2", "w3", "c3"], ["c3o"], name="/blk/pw/Conv", kernel_shape=[1, 1]),
        helper.make_node("Add", ["c3o", "r1"], ["s"], name="/blk/Add"),
    ]
    x = "s"
    if extra_node is not None:
        nodes.append(extra_node("s", "e"))
        x = "e"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["p"], name="/pool/GlobalAveragePool"))
    out_dims = ["N", 4]
    if tail == "gemm":
        nodes += [helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
                  helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="/fc/Gemm", transB=1)]
    elif tail == "none":                  # no classifier: the pooled map is the output
        nodes.append(helper.make_node("Flatten", ["p"], ["logits"], name="/Flatten", axis=1))
        out_dims = ["N", 8]
    elif tail == "softmax":
        nodes += [helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
                  helper.make_node("Gemm", ["f", "wf", "bf"], ["z"], name="/fc/Gemm", transB=1),
                  helper.make_node("Softmax", ["z"], ["logits"], name="/Softmax", axis=1)]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_dims))],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_dims)], initializer=inits)
    m = helper.make_model(graph, producer_name="tests", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    if blocks is not None:
        helper.set_model_props(m, {"pulp_odl.blocks": json.dumps(blocks)})
    return m


def maxpool(x, y):
    return helper.make_node("MaxPool", [x], [y], name="/pool2/MaxPool", kernel_shape=[2, 2], strides=[2, 2])


# refusals: (file name, model, message fragment)
def refusals() -> list[tuple[str, onnx.ModelProto, str]]:
    return [
        ("symbolic.onnx", tiny(input_dims=("N", 3, "H", "W")), "give --input-shape CxHxW"),
        ("opset.onnx", tiny(opset=99), "opset 99: the importer reads opsets 7 to"),
        ("maxpool.onnx", tiny(extra_node=maxpool), "node '/pool2/MaxPool' (MaxPool): op type MaxPool is not supported"),
        ("grouped.onnx", tiny(group_dw=2), "node '/blk/dw/Conv' (Conv): a grouped convolution (2 groups of 8 channels)"),
        ("noclassifier.onnx", tiny(tail="none"), "not by a classifier"),
        ("softmax.onnx", tiny(tail="softmax"), "op type Softmax is not supported"),
        ("nonsquare.onnx", tiny(kernel=(3, 1)), "a 3x1 kernel; the kernels run square k x k kernels"),
        ("branchcut.onnx", tiny(blocks={"stem": "stem", "blk.dw": "a", "blk.pw": "b", "fc": "classifier"}),
         "block b starts where more than one tensor crosses"),
    ]
