"""Networks from ONNX files: the same Network record the built-in builders make, and its weights.

    imp = load("examples/models/ds_cnn.onnx")          # or load(path, input_shape=(1, 49, 10))
    imp.network                                         # harness.nets.Network
    imp.weights                                         # layer name -> LayerWeights (BatchNorm folded)

The graph is read with the `onnx` package and its shapes come from `onnx.shape_inference` (the input
made concrete: batch 1, and --input-shape for symbolic C, H or W). Nodes become the ops of a Network:

    Conv (+ BatchNormalization) (+ activation)      a weight layer: pointwise (1x1), depthwise
                                                    (group = channels), conv3x3 / conv (dense k x k);
                                                    the BatchNorm is folded into weights and bias and
                                                    recorded as bn_after, as the built-ins record it
    Gemm, MatMul (+ Add of a constant)              a linear layer on a pooled vector
    Relu, Clip(0, 6), HardSwish, x * HardSigmoid(x), Sigmoid
                                                    the activation of the layer (or residual add) before
    Add of two maps                                 a residual add; an activation after it is applied
                                                    after the sum (Layer docstring)
    Mul of a map by a per-channel gate              the squeeze-excite scale (the 1x1 convs that make
                                                    the gate from the pooled map become se_reduce and
                                                    se_expand)
    GlobalAveragePool, ReduceMean over H and W, AveragePool over the whole map
                                                    a global average pool
    Flatten, Reshape, Squeeze, Unsqueeze of a pooled vector, Dropout, Identity
                                                    nothing (the same values)

Anything else is a one-line UserError naming the node, its op type and what is supported.

Replay cut points (blocks, counted from the classifier back for layer_id) are the places where one
tensor alone crosses from the part before to the part after, as for the built-ins: the classifier is
a block of its own; ops without weights (pools) join the block before them. A model may name its
blocks in the metadata entry `pulp_odl.blocks` ({layer: block}, what `pulp-odl export-onnx` writes);
each named block must then start at such a point.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.errors import UserError
from harness.nets.builder import NetBuilder
from harness.nets.layer import Network
from harness.nets.weights import LayerWeights

BLOCKS_KEY = "pulp_odl.blocks"
OPSET_MIN = 7
SUPPORTED = ("Conv", "BatchNormalization", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "HardSwish",
             "HardSigmoid", "Sigmoid", "GlobalAveragePool", "ReduceMean", "AveragePool", "Flatten", "Reshape",
             "Squeeze", "Unsqueeze", "Dropout", "Identity", "Constant")
SUPPORTED_TEXT = ", ".join(SUPPORTED)


def opset_max() -> int:
    import onnx.defs
    return onnx.defs.onnx_opset_version()


def is_onnx(net: str) -> bool:
    return isinstance(net, str) and net.lower().endswith(".onnx")


@dataclass(frozen=True)
class Imported:
    network: Network
    weights: dict            # layer name -> LayerWeights
    path: Path
    sha256: str
    opset: int
    input_name: str
    output_name: str


def load(path: str | Path, input_shape: tuple | None = None) -> Imported:
    """The network and weights of an ONNX file (cached per file content and input shape)."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError(f"ONNX model {path} not found; give the path of a .onnx file") from None
    except OSError as e:
        raise UserError(f"ONNX model {path}: {e.strerror}; check that path") from None
    if path.is_dir():
        raise UserError(f"ONNX model {path} is a directory; give the path of a .onnx file")
    shape = None if input_shape is None else tuple(int(v) for v in input_shape)
    return _load(str(path.resolve()), st.st_mtime_ns, st.st_size, shape)


@lru_cache(maxsize=16)
def _load(path: str, mtime: int, size: int, input_shape: tuple | None) -> Imported:
    try:
        import onnx
    except ImportError:  # pragma: no cover - a dependency of the package
        raise UserError("reading ONNX models needs the onnx package; run 'make setup'") from None
    p = Path(path)
    data = p.read_bytes()
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # noqa: BLE001 - protobuf raises several types for a file that is not a model
        raise UserError(f"ONNX model {p}: not a readable ONNX file ({type(e).__name__}); export it with "
                        f"torch.onnx.export or onnx.save") from None
    return _Importer(model, p, hashlib.sha256(data).hexdigest(), input_shape).run()


# ------------------------------------------------------------------------------------------ the IR

@dataclass
class _Op:
    kind: str                 # layer | add | pool | scale
    name: str
    inputs: list              # IR tensor ids: "input" or the producing _Op's index
    onnx_out: str
    shape: tuple              # C, H, W
    node: str                 # the ONNX node it came from, for messages
    onnx_type: str = ""       # the op type of the first ONNX node
    ltype: str = ""           # layer: Conv | Gemm | MatMul
    k: int = 1
    stride: int = 1
    pad: tuple = (0, 0, 0, 0)
    groups: int = 1
    w: np.ndarray | None = None
    b: np.ndarray | None = None
    had_bias: bool = False
    bn: bool = False
    act: str = "none"
    note: str = ""
    parts: list = field(default_factory=list)


def _node_label(node) -> str:
    return f"node '{node.name}' ({node.op_type})" if node.name else f"{node.op_type} node making '{node.output[0]}'"


class _Importer:
    def __init__(self, model, path: Path, digest: str, input_shape):
        self.model, self.path, self.digest, self.input_shape = model, path, digest, input_shape
        self.where = f"ONNX model {path.name}"
        # a model pulp-odl wrote keeps its layer notes as they are, empty ones too
        self.ours = any(p.key == BLOCKS_KEY for p in model.metadata_props)

    def fail(self, node, what: str, fix: str) -> None:
        raise UserError(f"{self.where}: {_node_label(node)}: {what}; {fix}")

    # -- reading -----------------------------------------------------------------------------
    def run(self) -> Imported:
        net = self.network()
        return Imported(net, self._weights, self.path, self.digest, self.opset, self.input_name, self.output_name)

    def network(self) -> Network:
        import onnx
        from onnx import numpy_helper, shape_inference

        m = self.model
        self.opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
        top = opset_max()
        if self.opset is None or not OPSET_MIN <= self.opset <= top:
            raise UserError(f"{self.where}: opset {self.opset}: the importer reads opsets {OPSET_MIN} to {top} "
                            f"of the default domain; re-export with torch.onnx.export(..., opset_version=17)")
        g = m.graph
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                self.fail(node, f"op of domain '{node.domain}'", f"the importer reads the default domain's {SUPPORTED_TEXT}")
        self.consts = {}
        for init in g.initializer:
            try:
                self.consts[init.name] = numpy_helper.to_array(init)
            except Exception as e:  # noqa: BLE001 - external or damaged tensor data
                raise UserError(f"{self.where}: initializer '{init.name}' cannot be read ({e}); save the model "
                                f"with its weights inside the file") from None
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1:
            raise UserError(f"{self.where}: the graph has {len(inputs)} inputs "
                            f"({', '.join(i.name for i in inputs) or 'none'}); the importer reads one image input")
        if len(g.output) != 1:
            raise UserError(f"{self.where}: the graph has {len(g.output)} outputs; the importer reads one output, "
                            f"the classifier's logits")
        inp = inputs[0]
        self.input_name, self.output_name = inp.name, g.output[0].name
        chw = self._input_chw(inp)
        # shape inference on a copy whose input is one concrete sample
        mc = onnx.ModelProto()
        mc.CopyFrom(m)
        ci = next(i for i in mc.graph.input if i.name == inp.name)
        dims = ci.type.tensor_type.shape.dim
        for d, v in zip(dims, (1, *chw)):
            d.Clear()
            d.dim_value = v
        try:
            inferred = shape_inference.infer_shapes(mc, strict_mode=True, data_prop=True)
        except Exception as e:  # noqa: BLE001 - onnx raises InferenceError and others
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(f"{self.where}: shape inference failed: {msg[:300]}; check the model with "
                            f"onnx.checker.check_model") from None
        self.shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        self.consumers: dict[str, list] = {}
        for node in g.node:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        for o in g.output:
            self.consumers.setdefault(o.name, []).append(None)
        self.ops: list[_Op] = []
        self.val: dict[str, tuple] = {inp.name: ("act", "input")}   # onnx name -> ("act"|"vec", id) | ("const",)
        self.chw = chw
        self.hsig: dict[str, tuple] = {}
        for node in g.node:
            self.node(node)
        for name, (x, node) in self.hsig.items():
            self.fail(node, "a HardSigmoid that is not part of x * HardSigmoid(x) (h-swish)",
                      "a hard-sigmoid gate is not supported; use Sigmoid for squeeze-excite gates")
        return self.build()

    def _input_chw(self, inp) -> tuple[int, int, int]:
        t = inp.type.tensor_type
        if not t.HasField("shape") or len(t.shape.dim) != 4:
            rank = len(t.shape.dim) if t.HasField("shape") else "unknown"
            raise UserError(f"{self.where}: input '{inp.name}' has rank {rank}; the importer reads images of "
                            f"N x C x H x W (rank 4)")
        dims = list(t.shape.dim)[1:]
        fixed = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims]
        if self.input_shape is not None:
            for axis, (have, want) in enumerate(zip(fixed, self.input_shape)):
                if have is not None and have != want:
                    raise UserError(f"{self.where}: --input-shape {'x'.join(map(str, self.input_shape))} disagrees "
                                    f"with the model's input '{inp.name}' ({'CHW'[axis]} is {have})")
            return tuple(self.input_shape)
        if None in fixed:
            names = ", ".join(d.dim_param or "?" for d, f in zip(dims, fixed) if f is None)
            raise UserError(f"{self.where}: input '{inp.name}' has symbolic dimensions ({names}) besides the batch; "
                            f"give --input-shape CxHxW (e.g. --input-shape 3x32x32)")
        return tuple(fixed)

    # -- values ------------------------------------------------------------------------------
    def const(self, node, name: str, what: str) -> np.ndarray:
        if name not in self.consts:
            self.fail(node, f"its {what} '{name}' is computed, not a constant", "export the model with constant "
                      "folding (torch.onnx.export(..., do_constant_folding=True))")
        return self.consts[name]

    def act_in(self, node, name: str) -> int | str:
        v = self.val.get(name)
        if v is None or v[0] not in ("act", "vec"):
            self.fail(node, f"its input '{name}' is not a feature map of the network", f"supported: {SUPPORTED_TEXT}")
        return v[1]

    def shape_of(self, tid) -> tuple:
        return self.chw if tid == "input" else self.ops[tid].shape

    def single_use(self, name: str) -> bool:
        return len(self.consumers.get(name, [])) == 1

    def alias(self, node, kind: str | None = None):
        v = self.val[node.input[0]]
        self.val[node.output[0]] = (kind or v[0], v[1])

    def new(self, op: _Op, node, vec: bool = False) -> None:
        op.onnx_type = node.op_type
        self.ops.append(op)
        self.val[node.output[0]] = ("vec" if vec else "act", len(self.ops) - 1)

    def onnx_shape(self, name: str):
        return self.shapes.get(name)

    # -- nodes -------------------------------------------------------------------------------
    def node(self, node) -> None:
        t = node.op_type
        handler = getattr(self, f"op_{t}", None)
        if handler is None or t not in SUPPORTED:
            hint = ""
            if t in ("MaxPool", "AveragePool"):
                hint = " (pools with a window are not supported: only global average pools)"
            elif t in ("Softmax", "LogSoftmax"):
                hint = " (export the logits: training takes the cross-entropy of the classifier's output)"
            self.fail(node, f"op type {t} is not supported{hint}", f"supported: {SUPPORTED_TEXT}")
        handler(node)

    def attrs(self, node) -> dict:
        from onnx import helper
        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def op_Constant(self, node):
        from onnx import numpy_helper
        a = {x.name: x for x in node.attribute}
        if "value" not in a:
            self.fail(node, "a Constant without a tensor value", "export constants as tensors")
        self.consts[node.output[0]] = numpy_helper.to_array(a["value"].t)

    def op_Identity(self, node):
        if node.input[0] in self.consts:
            self.consts[node.output[0]] = self.consts[node.input[0]]
            return
        self.act_in(node, node.input[0])
        self.alias(node)

    def op_Dropout(self, node):
        self.act_in(node, node.input[0])
        if len(node.output) > 1 and node.output[1] and self.consumers.get(node.output[1]):
            self.fail(node, "its mask output is used", "export the model in inference mode (model.eval())")
        self.alias(node)

    def _vector(self, node):
        """Flatten / Reshape / Squeeze / Unsqueeze: only between a pooled C x 1 x 1 map and its vector."""
        tid = self.act_in(node, node.input[0])
        c, h, w = self.shape_of(tid)
        out = self.onnx_shape(node.output[0])
        if (h, w) != (1, 1):
            self.fail(node, f"it reshapes a {c}x{h}x{w} map", "the classifier must read a pooled vector: "
                      "put a GlobalAveragePool before it")
        if out is None or out[0] not in (1, None) or math.prod(d or 1 for d in out[1:]) != c:
            self.fail(node, f"output shape {out}", f"only reshapes of a pooled {c}-vector to (N, {c}) or (N, {c}, 1, 1)")
        self.alias(node, "vec" if len(out) == 2 else "act")

    op_Flatten = op_Reshape = op_Squeeze = op_Unsqueeze = _vector

    def op_Conv(self, node):
        a = self.attrs(node)
        tid = self.act_in(node, node.input[0])
        if self.val[node.input[0]][0] == "vec":
            self.fail(node, "a Conv on a flattened vector", "convolve the C x 1 x 1 map, or use Gemm")
        c, h, w = self.shape_of(tid)
        wt = self.const(node, node.input[1], "weight").astype(np.float32)
        if wt.ndim != 4:
            self.fail(node, f"a {wt.ndim - 2}-d convolution", "the importer reads 2-d convolutions")
        co, cig, kh, kw = wt.shape
        if kh != kw:
            self.fail(node, f"a {kh}x{kw} kernel", "the kernels run square k x k kernels")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            self.fail(node, f"dilations {a['dilations']}", "the kernels run undilated convolutions")
        strides = a.get("strides", [1, 1])
        if strides[0] != strides[1]:
            self.fail(node, f"strides {strides}", "the kernels run equal strides on H and W")
        s = strides[0]
        group = a.get("group", 1)
        if cig * group != c:
            self.fail(node, f"weight of {cig} input channels per group for {c} channels in {group} groups",
                      "check the model")
        depthwise = group == c and group > 1
        if group != 1 and not (depthwise and co == c):
            what = (f"a depthwise convolution with {co // c} outputs per channel" if depthwise
                    else f"a grouped convolution ({group} groups of {c} channels)")
            self.fail(node, what, "the kernels run dense convolutions (group 1) and depthwise ones "
                      "(group = input channels = output channels)")
        pads = self._pads(node, a, h, w, kh, s)
        b = None
        if len(node.input) > 2 and node.input[2]:
            b = self.const(node, node.input[2], "bias").astype(np.float32).reshape(-1)
        ho = (h + pads[2] + pads[3] - kh) // s + 1
        wo = (w + pads[0] + pads[1] - kh) // s + 1
        if ho < 1 or wo < 1:
            self.fail(node, f"its {h}x{w} input is smaller than the {kh}x{kh} kernel", "check --input-shape")
        self.new(_Op("layer", node.name, [tid], node.output[0], (co, ho, wo), _node_label(node), ltype="Conv",
                     k=kh, stride=s, pad=pads, groups=group, w=wt, b=b, had_bias=b is not None,
                     note=node.doc_string, parts=[node.op_type]), node)

    def _pads(self, node, a, h, w, k, s) -> tuple:
        auto = a.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("NOTSET", ""):
            p = a.get("pads", [0, 0, 0, 0])
            top, left, bottom, right = p
            return (left, right, top, bottom)
        if auto == "VALID":
            return (0, 0, 0, 0)
        out = []
        for size in (h, w):
            o = -(-size // s)
            total = max(0, (o - 1) * s + k - size)
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            out.append((lo, total - lo))
        (top, bottom), (left, right) = out
        return (left, right, top, bottom)

    def _pending_layer(self, node, what: str) -> _Op:
        v = self.val.get(node.input[0])
        op = self.ops[v[1]] if v and v[0] in ("act", "vec") and v[1] != "input" else None
        if op is None or op.kind != "layer" or op.onnx_out != node.input[0] or not self.single_use(node.input[0]):
            self.fail(node, f"a {what} that does not directly follow a Conv (read by nothing else)",
                      f"{what} is supported right after a Conv")
        return op

    def op_BatchNormalization(self, node):
        op = self._pending_layer(node, "BatchNormalization")
        if op.bn or op.act != "none" or op.ltype != "Conv":
            self.fail(node, "a BatchNormalization after an activation or another BatchNormalization",
                      "BatchNormalization is supported right after a Conv")
        if len([o for o in node.output if o]) > 1:
            self.fail(node, "a BatchNormalization in training mode", "export the model in inference mode (model.eval())")
        eps = self.attrs(node).get("epsilon", 1e-5)
        gamma, beta, mean, var = (self.const(node, n, what).astype(np.float64).reshape(-1)
                                  for n, what in zip(node.input[1:5], ("scale", "bias", "mean", "variance")))
        scale = gamma / np.sqrt(var + eps)
        op.w = (op.w.astype(np.float64) * scale[:, None, None, None]).astype(np.float32)
        b = op.b.astype(np.float64) if op.b is not None else 0.0
        op.b = ((b - mean) * scale + beta).astype(np.float32)
        op.bn = True
        op.onnx_out = node.output[0]
        op.parts.append("BatchNormalization")
        self.val[node.output[0]] = self.val[node.input[0]]

    def _activate(self, node, act: str, src: str | None = None, shared: bool = False):
        src = src or node.input[0]
        v = self.val.get(src)
        op = self.ops[v[1]] if v and v[0] in ("act", "vec") and v[1] != "input" else None
        ok = op is not None and op.kind in ("layer", "add") and op.onnx_out == src and op.act == "none" \
            and (self.single_use(src) or shared)
        if not ok:
            self.fail(node, f"an activation ({act}) that does not directly follow a Conv, Gemm or residual Add "
                      f"(read by nothing else)", "activations are supported right after a weight layer or a "
                      "residual add")
        op.act = act
        op.onnx_out = node.output[0]
        op.parts.append(node.op_type)
        self.val[node.output[0]] = self.val[src]

    def op_Relu(self, node):
        self._activate(node, "relu")

    def op_Sigmoid(self, node):
        self._activate(node, "sigmoid")

    def op_HardSwish(self, node):
        self._activate(node, "hswish")

    def op_Clip(self, node):
        a = self.attrs(node)
        if self.opset < 11:
            lo, hi = a.get("min", -np.inf), a.get("max", np.inf)
        else:
            lo = float(self.const(node, node.input[1], "min")) if len(node.input) > 1 and node.input[1] else -np.inf
            hi = float(self.const(node, node.input[2], "max")) if len(node.input) > 2 and node.input[2] else np.inf
        if lo == 0 and hi == 6:
            self._activate(node, "relu6")
        elif lo == 0 and hi == np.inf:
            self._activate(node, "relu")
        else:
            self.fail(node, f"Clip({lo:g}, {hi:g})", "Clip is supported as ReLU6 (0, 6) and ReLU (0, none)")

    def op_HardSigmoid(self, node):
        a = self.attrs(node)
        self.act_in(node, node.input[0])
        self.hsig[node.output[0]] = (node.input[0], node, a.get("alpha", 0.2), a.get("beta", 0.5))

    def op_Mul(self, node):
        x, y = node.input[0], node.input[1]
        for gate, other in ((y, x), (x, y)):
            if gate in self.hsig and self.hsig[gate][0] == other:
                src, hnode, alpha, beta = self.hsig.pop(gate)
                if not (abs(alpha - 1 / 6) < 1e-6 and abs(beta - 0.5) < 1e-6):
                    self.fail(hnode, f"HardSigmoid(alpha={alpha:g}, beta={beta:g})", "x * HardSigmoid(x) is "
                              "h-swish only with alpha 1/6 and beta 0.5")
                users = [n for n in self.consumers.get(src, []) if n is not None]
                if sorted(id(n) for n in users) != sorted((id(hnode), id(node))):
                    self.fail(node, "an h-swish whose input is read by other nodes too", "export h-swish as HardSwish")
                self._activate(node, "hswish", src, shared=True)
                return
        if x in self.consts or y in self.consts:
            self.fail(node, "a Mul by a constant", "supported: Mul of a feature map by a per-channel gate "
                      "(squeeze-excite) and x * HardSigmoid(x)")
        a, b = self.act_in(node, x), self.act_in(node, y)
        sa, sb = self.shape_of(a), self.shape_of(b)
        def gate_like(t, other_shape):
            return t != "input" and self.shape_of(t) == (other_shape[0], 1, 1)

        def sigmoid_made(t):
            return t != "input" and self.ops[t].kind == "layer" and self.ops[t].act == "sigmoid"
        ga, gb = gate_like(a, sb), gate_like(b, sa)
        if ga and gb:     # both C x 1 x 1 (a squeeze-excite on a 1x1 map): the gate is the sigmoid's output
            ga, gb = sigmoid_made(a) and not sigmoid_made(b), sigmoid_made(b) and not sigmoid_made(a)
        if gb and not ga:
            xs, gate = a, b
        elif ga and not gb:
            xs, gate = b, a
        else:
            self.fail(node, f"a Mul of a {'x'.join(map(str, sa))} and a {'x'.join(map(str, sb))} map",
                      "supported: a map times a per-channel gate C x 1 x 1 (squeeze-excite)")
        self.new(_Op("scale", node.name, [xs, gate], node.output[0], self.shape_of(xs), _node_label(node)), node)

    def op_Add(self, node):
        x, y = node.input[0], node.input[1]
        if x in self.consts or y in self.consts:
            c, other = (x, y) if x in self.consts else (y, x)
            v = self.val.get(other)
            op = self.ops[v[1]] if v and v[1] != "input" else None
            bias = self.consts[c].astype(np.float32).reshape(-1)
            if op is None or op.kind != "layer" or op.ltype != "MatMul" or op.had_bias or op.onnx_out != other \
                    or bias.size != op.shape[0] or not self.single_use(other):
                self.fail(node, "an Add of a constant", "supported: the bias of a MatMul, and residual adds of two maps")
            op.b, op.had_bias = bias, True
            op.onnx_out = node.output[0]
            op.parts.append("Add")
            self.val[node.output[0]] = self.val[other]
            return
        a, b = self.act_in(node, x), self.act_in(node, y)
        if self.shape_of(a) != self.shape_of(b):
            self.fail(node, f"an Add of maps of different shapes {self.shape_of(a)} and {self.shape_of(b)}",
                      "residual adds need equal shapes (no broadcasting)")
        # the operand made last is the one the add fuses with (its layer's epilogue); the other is the skip
        order = {tid: -1 if tid == "input" else tid for tid in (a, b)}
        main, skip = (a, b) if order[a] > order[b] else (b, a)
        main_name = x if main == a else y
        mop = self.ops[main] if main != "input" else None
        if mop is None or mop.kind != "layer" or mop.onnx_out != main_name or not self.single_use(main_name):
            self.fail(node, "a residual Add whose operands are not made by a weight layer read by nothing else",
                      "one operand of a residual add must come straight from a Conv (its BatchNorm and activation)")
        self.new(_Op("add", node.name, [main, skip], node.output[0], self.shape_of(main), _node_label(node)), node)

    def _pool(self, node, vec: bool = False):
        tid = self.act_in(node, node.input[0])
        c, h, w = self.shape_of(tid)
        self.new(_Op("pool", node.name, [tid], node.output[0], (c, 1, 1), _node_label(node)), node, vec=vec)

    def op_GlobalAveragePool(self, node):
        self._pool(node)

    def op_ReduceMean(self, node):
        a = self.attrs(node)
        axes = a.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = [int(v) for v in self.const(node, node.input[1], "axes").reshape(-1)]
        if axes is None or sorted(ax % 4 for ax in axes) != [2, 3]:
            self.fail(node, f"a ReduceMean over axes {axes}", "ReduceMean is supported over H and W (axes 2, 3)")
        self._pool(node, vec=not a.get("keepdims", 1))

    def op_AveragePool(self, node):
        a = self.attrs(node)
        tid = self.act_in(node, node.input[0])
        c, h, w = self.shape_of(tid)
        if list(a.get("kernel_shape", [])) != [h, w] or any(a.get("pads", [0])) or \
                (a.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID")):
            self.fail(node, f"an AveragePool with window {a.get('kernel_shape')} on a {h}x{w} map",
                      "pools with a window are not supported: only a global average pool (the window covers the map)")
        self._pool(node)

    def _linear(self, node, w: np.ndarray, b):
        tid = self.act_in(node, node.input[0])
        c, h, wd = self.shape_of(tid)
        if (h, wd) != (1, 1):
            self.fail(node, f"a {node.op_type} on a {c}x{h}x{wd} map", "linear layers read a pooled vector: put a "
                      "GlobalAveragePool before the classifier")
        if w.shape[1] != c:
            self.fail(node, f"a weight of {w.shape[1]} inputs for a {c}-vector", "check the model")
        self.new(_Op("layer", node.name, [tid], node.output[0], (w.shape[0], 1, 1), _node_label(node),
                     ltype=node.op_type, w=w.astype(np.float32), b=b, had_bias=b is not None, note=node.doc_string,
                     parts=[node.op_type]), node, vec=True)

    def op_Gemm(self, node):
        a = self.attrs(node)
        if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
            self.fail(node, "a Gemm with transA, alpha or beta", "supported: Gemm(x, W, b) with transB 0 or 1")
        bm = self.const(node, node.input[1], "weight")
        w = bm if a.get("transB", 0) else bm.T
        b = None
        if len(node.input) > 2 and node.input[2]:
            b = self.const(node, node.input[2], "bias").astype(np.float32).reshape(-1)
            if b.size != w.shape[0]:
                self.fail(node, f"a bias of {b.size} values for {w.shape[0]} outputs", "give one bias per output")
        self._linear(node, w, b)

    def op_MatMul(self, node):
        bm = self.const(node, node.input[1], "weight")
        if bm.ndim != 2:
            self.fail(node, f"a MatMul by a {bm.ndim}-d constant", "supported: x (N, C) times W (C, K)")
        self._linear(node, bm.T, None)

    # -- the network ---------------------------------------------------------------------------
    def build(self) -> Network:
        ops = self.ops
        out = self.val.get(self.output_name)
        last = ops[out[1]] if out and out[0] in ("act", "vec") and out[1] != "input" else None
        if last is None or last.kind != "layer" or last.shape[1:] != (1, 1) or last.k != 1 or last.act != "none" \
                or ops[-1] is not last or (last.ltype == "Conv" and self.shape_of(last.inputs[0])[1:] != (1, 1)):
            made = "the input" if out is None or out[1] == "input" else f"{ops[out[1]].node}"
            raise UserError(f"{self.where}: the graph output '{self.output_name}' is made by {made}, not by a "
                            f"classifier; the importer needs a graph ending in logits from a Gemm, MatMul or 1x1 Conv "
                            f"on a pooled vector (no activation or Softmax after it)")
        names = self._names()
        kinds = self._kinds(names)
        blocks = self._blocks(names, kinds)
        return self._emit(names, kinds, blocks)

    def _names(self) -> list[str]:
        used, out = set(), []
        count: dict[str, int] = {}
        for i, op in enumerate(self.ops):
            # "/layer1/layer1.0/conv1/Conv" (torch.onnx.export's module path) -> "layer1.0.conv1"
            parts = [q for q in (op.name or "").split("/") if q]
            if len(parts) > 1 and parts[-1].split("_")[0] == op.onnx_type:
                parts.pop()
            if len(parts) > 1 and parts[0] + "." in parts[1]:
                parts.pop(0)
            base = ".".join(parts)
            if not base:
                tag = {"layer": op.ltype.lower(), "add": "add", "pool": "pool", "scale": "scale"}[op.kind]
                count[tag] = count.get(tag, 0) + 1
                base = f"{tag}{count[tag]}"
            name, n = base, 1
            while name in used or name == "input":
                n += 1
                name = f"{base}#{n}"
            used.add(name)
            out.append(name)
        return out

    def _kinds(self, names) -> list[str]:
        ops = self.ops
        kinds = []
        for i, op in enumerate(ops):
            if op.kind != "layer":
                kinds.append(op.kind)
            elif op.ltype != "Conv" or i == len(ops) - 1:
                kinds.append("linear")
            elif op.groups > 1:
                kinds.append("depthwise")
            elif op.k == 1:
                kinds.append("pointwise")
            else:
                kinds.append("conv3x3" if op.k == 3 else "conv")
        # squeeze-excite: scale(x, se_expand(se_reduce(pool(x))))
        for op in ops:
            if op.kind != "scale":
                continue
            x, gate = op.inputs
            e = ops[gate] if gate != "input" else None
            r = ops[e.inputs[0]] if e is not None and e.kind == "layer" and e.inputs[0] != "input" else None
            p = ops[r.inputs[0]] if r is not None and r.kind == "layer" and r.inputs[0] != "input" else None
            if p is not None and p.kind == "pool" and p.inputs[0] == x and e.k == 1 and r.k == 1 \
                    and e.ltype == r.ltype == "Conv":
                kinds[ops.index(r)], kinds[ops.index(e)] = "se_reduce", "se_expand"
        return kinds

    def _cut_points(self) -> list[int]:
        """Op indices i where one tensor alone goes from ops[:i] (and the input) to ops[i:]."""
        ops = self.ops
        last_use = {}
        for j, op in enumerate(ops):
            for t in op.inputs:
                last_use[t] = j
        points = []
        for i in range(len(ops)):
            live = {t for t, j in last_use.items() if j >= i and (t == "input" or t < i)}
            if len(live) == 1:
                points.append(i)
        return points

    def _blocks(self, names, kinds) -> list[str]:
        ops = self.ops
        n = len(ops)
        points = set(self._cut_points())
        meta = {p.key: p.value for p in self.model.metadata_props}
        if BLOCKS_KEY in meta:
            return self._named_blocks(meta[BLOCKS_KEY], names, points)
        starts = sorted(points)
        segs = [list(range(a, b)) for a, b in zip(starts, starts[1:] + [n])]
        merged: list[list[int]] = []
        for seg in segs:
            has_w = any(ops[i].kind == "layer" for i in seg)
            if merged and not has_w:
                merged[-1] += seg          # pools join the block before them
            elif merged and not any(ops[i].kind == "layer" for i in merged[-1]):
                merged[-1] += seg
            else:
                merged.append(seg)
        if len(merged) > 1 and merged[-1] != [n - 1]:
            # the classifier is a block of its own whenever one tensor alone reaches it
            tail = merged.pop()
            if n - 1 in points:
                merged += [tail[:-1], [n - 1]]
            else:
                merged.append(tail)
        block = [""] * n
        for seg in merged:
            first = next(i for i in seg if ops[i].kind == "layer")
            label = "classifier" if n - 1 in seg else names[first]
            for i in seg:
                block[i] = label
        return block

    def _named_blocks(self, text: str, names, points) -> list[str]:
        where = f"{self.where}: metadata {BLOCKS_KEY}"
        try:
            given = json.loads(text)
        except ValueError:
            raise UserError(f"{where} is not JSON; write {{\"layer\": \"block\", ...}}") from None
        if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
            raise UserError(f"{where} must map layer names to block names")
        ops, n = self.ops, len(self.ops)
        block, cur = [""] * n, None
        for i, op in enumerate(ops):
            if op.kind == "layer":
                if names[i] not in given:
                    raise UserError(f"{where} names no block for layer {names[i]}")
                cur = given[names[i]]
            block[i] = cur
        for i in range(n):                     # ops before the first layer join its block
            if block[i] is None:
                block[i] = next(b for b in block if b is not None)
        seen = []
        for i, b in enumerate(block):
            if i == 0 or b != block[i - 1]:
                if b in seen:
                    raise UserError(f"{where}: block {b} is not contiguous in the graph")
                if i not in points:
                    raise UserError(f"{where}: block {b} starts where more than one tensor crosses (at {names[i]}); "
                                    f"a replay cut replays one tensor")
                seen.append(b)
        if block[-1] != "classifier" or block.count("classifier") != 1:
            raise UserError(f"{where}: the last layer must be alone in a block named 'classifier'")
        return block

    def _emit(self, names, kinds, blocks) -> Network:
        ops = self.ops
        c, h, w = self.chw
        last = ops[-1]
        title = f"ONNX {self.path.name}" + (f" ({self.model.graph.name})" if self.model.graph.name else "")
        config = {"path": str(self.path), "sha256": self.digest, "opset": self.opset}
        b = NetBuilder(self.path.name, title, h, last.shape[0], config, in_channels=c, input_width=w)
        tname = {"input": "input"}
        block_input = {}
        for i, op in enumerate(ops):
            if i == 0 or blocks[i] != blocks[i - 1]:
                block_input[blocks[i]] = b.begin_block(blocks[i])
            ins = [tname[t] for t in op.inputs]
            if op.kind == "layer":
                kind = kinds[i]
                res_add = next((j for j, o in enumerate(ops) if o.kind == "add" and o.inputs[0] == i), None)
                act = op.act
                residual: bool | str = False
                if res_add is not None:
                    skip = tname.get(ops[res_add].inputs[1], f"{names[ops[res_add].inputs[1]]}")
                    residual = "add(block_input)" if skip == block_input[blocks[i]] else f"add({skip})"
                    if ops[res_add].act != "none":
                        if act != "none":
                            raise UserError(f"{self.where}: {op.node}: an activation both before and after the "
                                            f"residual add {ops[res_add].node}; the kernels apply one activation")
                        act = ops[res_add].act
                if kind == "linear":
                    out = b.conv(names[i], "linear", op.shape[0], bias=op.had_bias, bn=False, act=act,
                                 note=self._note(op), src=ins[0])
                else:
                    out = b.conv(names[i], kind, op.shape[0], kernel=op.k, stride=op.stride, pad=op.pad,
                                 groups=op.groups, bias=op.had_bias, bn=op.bn, act=act, residual=residual,
                                 note=self._note(op), src=ins[0])
            elif op.kind == "add":
                out = b.residual_add(names[i], ins[1], main=ins[0])
            elif op.kind == "pool":
                out = b.global_avgpool(names[i], src=ins[0])
            else:
                out = b.se_scale(names[i], ins[0], ins[1])
            tname[i] = out
            want = self.onnx_shape(op.onnx_out)
            got = b.tensors[out]
            if want is not None and None not in want and math.prod(want) != math.prod(got):
                raise UserError(f"{self.where}: {op.node}: shape inference gives {want}, the layer record {got}; "
                                f"the importer does not model this node's geometry")
        net = b.build()
        self._weights = {names[i]: LayerWeights(op.w.reshape(op.w.shape[0], -1) if kinds[i] == "linear" else op.w, op.b)
                         for i, op in enumerate(ops) if op.kind == "layer"}
        return net

    def _note(self, op: _Op) -> str:
        return op.note if (op.note or self.ours) else "ONNX " + " + ".join(op.parts)
