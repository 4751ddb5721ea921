"""Writes the two example ONNX models of examples/models/ with onnx.helper and NumPy only.

    python examples/models/make_models.py [OUTDIR]      # default: beside this script

ds_cnn.onnx   a depthwise-separable CNN for keyword spotting on 49 x 10 MFCC frames (1 channel), in the
              style of Hello Edge / MLPerf Tiny: a 3x3 stride-2 convolution, four depthwise-separable
              blocks of 64 channels, an average pool over the whole 25 x 5 map, 12 classes. Written as
              TensorFlow converters write it: convolutions with biases, auto_pad SAME_UPPER, then
              BatchNormalization and Relu, and an AveragePool whose window is the whole map. (The
              original's first convolution is 10 x 4; the kernels run square kernels, so it is 3 x 3.)
resnet8.onnx  the ResNet-8 of MLPerf Tiny for CIFAR-10 (32 x 32 x 3): a 3x3 convolution, three residual
              stacks of 16, 32 and 64 channels (the last two start with stride 2 and a 1x1 stride-2
              shortcut convolution), ReLU after each residual add, a global average pool, 10 classes.
              Written as torch.onnx.export writes it: convolutions without biases before their
              BatchNormalization, explicit pads, node names from the module paths, Flatten and Gemm.

The weights are random (seeded) with random BatchNorm statistics, so that folding is exercised. The
files are deterministic: tests regenerate them and compare bytes with the ones in the repository.
Nothing here imports pulp-odl; the models are an independent input of its importer.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Graph:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def const(self, name, a, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(a, dtype=dtype), name))
        return name

    def conv(self, prefix, x, cin, cout, k, stride=1, group=1, bias=False, pads=None, auto_pad=None):
        fan = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan)
        ins = [x, self.const(f"{prefix}.weight", w)]
        if bias:
            ins.append(self.const(f"{prefix}.bias", self.rng.uniform(-0.1, 0.1, cout)))
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], group=group, dilations=[1, 1])
        if auto_pad:
            attrs["auto_pad"] = auto_pad
        else:
            attrs["pads"] = pads if pads is not None else [k // 2] * 4
        out = f"/{prefix.replace('.', '/')}/Conv_output_0"
        self.nodes.append(helper.make_node("Conv", ins, [out], name=f"/{prefix.replace('.', '/')}/Conv", **attrs))
        return out

    def bn(self, prefix, x, c):
        r = self.rng
        ins = [x, self.const(f"{prefix}.weight", r.uniform(0.5, 1.5, c)), self.const(f"{prefix}.bias", r.uniform(-0.2, 0.2, c)),
               self.const(f"{prefix}.running_mean", r.uniform(-0.2, 0.2, c)),
               self.const(f"{prefix}.running_var", r.uniform(0.5, 1.5, c))]
        out = f"/{prefix.replace('.', '/')}/BatchNormalization_output_0"
        self.nodes.append(helper.make_node("BatchNormalization", ins, [out],
                                           name=f"/{prefix.replace('.', '/')}/BatchNormalization", epsilon=1e-5))
        return out

    def op(self, op_type, prefix, ins, **attrs):
        out = f"/{prefix.replace('.', '/')}/{op_type}_output_0"
        self.nodes.append(helper.make_node(op_type, ins, [out], name=f"/{prefix.replace('.', '/')}/{op_type}", **attrs))
        return out

    def gemm(self, prefix, x, cin, cout):
        w = self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / cin)
        b = self.rng.uniform(-0.1, 0.1, cout)
        ins = [x, self.const(f"{prefix}.weight", w), self.const(f"{prefix}.bias", b)]
        self.nodes.append(helper.make_node("Gemm", ins, ["logits"], name=f"/{prefix}/Gemm", alpha=1.0, beta=1.0,
                                           transB=1))
        return "logits"

    def model(self, name, c, h, w, classes, doc):
        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", c, h, w])],
                                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
                                  initializer=self.inits, doc_string=doc)
        m = helper.make_model(graph, producer_name="examples/models/make_models.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 7
        onnx.checker.check_model(m, full_check=True)
        return m


def ds_cnn(seed: int = 11) -> onnx.ModelProto:
    g = Graph(seed)
    x = g.conv("conv1", "input", 1, 64, 3, stride=2, bias=True, auto_pad="SAME_UPPER")
    x = g.op("Relu", "relu1", [g.bn("bn1", x, 64)])
    for i in range(1, 5):
        x = g.conv(f"dw{i}", x, 64, 64, 3, group=64, bias=True, auto_pad="SAME_UPPER")
        x = g.op("Relu", f"dw{i}.relu", [g.bn(f"dw{i}.bn", x, 64)])
        x = g.conv(f"pw{i}", x, 64, 64, 1, bias=True, auto_pad="SAME_UPPER")
        x = g.op("Relu", f"pw{i}.relu", [g.bn(f"pw{i}.bn", x, 64)])
    x = g.op("Dropout", "dropout", [x])
    x = g.op("AveragePool", "avgpool", [x], kernel_shape=[25, 5], strides=[25, 5])
    x = g.op("Flatten", "flatten", [x], axis=1)
    g.gemm("fc", x, 64, 12)
    return g.model("ds_cnn", 1, 49, 10, 12, "DS-CNN keyword spotting, 49x10 MFCC input, 12 classes")


def resnet8(seed: int = 12) -> onnx.ModelProto:
    g = Graph(seed)
    x = g.conv("conv1", "input", 3, 16, 3)
    x = g.op("Relu", "relu", [g.bn("bn1", x, 16)])
    cin = 16
    for i, (c, s) in enumerate(((16, 1), (32, 2), (64, 2)), start=1):
        p = f"layer{i}.0"
        y = g.conv(f"{p}.conv1", x, cin, c, 3, stride=s, pads=[1, 1, 1, 1])
        y = g.op("Relu", f"{p}.relu1", [g.bn(f"{p}.bn1", y, c)])
        y = g.bn(f"{p}.bn2", g.conv(f"{p}.conv2", y, c, c, 3), c)
        skip = x if s == 1 and cin == c else g.conv(f"{p}.downsample.0", x, cin, c, 1, stride=s, bias=True,
                                                    pads=[0, 0, 0, 0])
        x = g.op("Relu", f"{p}.relu2", [g.op("Add", f"{p}.add", [y, skip])])
        cin = c
    x = g.op("GlobalAveragePool", "avgpool", [x])
    x = g.op("Flatten", "flatten", [x], axis=1)
    g.gemm("fc", x, 64, 10)
    return g.model("resnet8", 3, 32, 32, 10, "ResNet-8 (MLPerf Tiny image classification), CIFAR-10")


MODELS = {"ds_cnn.onnx": ds_cnn, "resnet8.onnx": resnet8}


def write(outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, make in MODELS.items():
        path = outdir / name
        path.write_bytes(make().SerializeToString(deterministic=True))
        out.append(path)
    return out


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent):
        print(f"wrote {p} ({p.stat().st_size:,} bytes)")
