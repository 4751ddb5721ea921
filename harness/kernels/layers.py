"""From network layers to kernel specs: which kernels one layer's training step runs.

Weight layers map onto the four kernel kinds: 1x1 convs -> pw (SE 1x1 convs on the pooled 1x1 map and
the classifier -> linear), depthwise -> dw, full k x k convs -> conv. BatchNorm folds into a bias."""
from __future__ import annotations

from harness.kernels.spec import KernelSpec, make
from harness.nets import Layer

KIND = {"pointwise": "pw", "depthwise": "dw", "conv3x3": "conv", "conv": "conv", "linear": "linear",
        "se_reduce": "linear", "se_expand": "linear"}


def layer_spec(layer: Layer, step: str, p_in: float = 1.0, p_out: float = 1.0,
               platform: str = "pulp-open", frozen: bool = False) -> KernelSpec:
    """The kernel spec of one step of a weight layer. A frozen layer runs only fw, with its weights in
    flash and no stored activations (placement "frozen"); a trainable one follows method.md's placement."""
    kind = KIND[layer.kind]
    bias = bool(layer.bias or layer.bn_after)
    placement = "frozen" if frozen else "method"
    if kind == "linear":
        return make("linear", layer.c_in, layer.c_out, 1, 1, step, p_in=p_in, p_out=p_out, platform=platform, bias=bias,
                    placement=placement)
    if kind == "pw" and layer.stride != 1:
        kind = "conv"       # a strided 1x1 convolution: the convolution kernels with k = 1
    elif kind == "pw":
        return make("pw", layer.c_in, layer.c_out, layer.h_in, layer.w_in, step, p_in=p_in, p_out=p_out,
                    platform=platform, bias=bias, placement=placement)
    p_out = p_in if kind == "dw" else p_out
    return make(kind, layer.c_in, layer.c_out, layer.h_in, layer.w_in, step, k=layer.kernel, stride=layer.stride,
                pad=tuple(layer.pad), p_in=p_in, p_out=p_out, platform=platform, bias=bias, placement=placement)


def training_steps(trainable: bool, first_trained: bool) -> tuple:
    """Steps a layer runs per sample: frozen layers only forward; the first trained layer needs no
    input gradient (nothing before it learns)."""
    if not trainable:
        return ("fw",)
    return ("fw", "wg", "update") if first_trained else ("fw", "wg", "ig", "update")


ACT_OPS = {"relu": "relu", "relu6": "relu6", "hswish": "hswish", "sigmoid": "sigmoid"}


def op_specs(op, network, step: str, p: float = 1.0, platform: str = "pulp-open") -> list:
    """Kernels of the non-weight work of one forward op (step "fw") or of its backward ("ig"):
    the activation fused after a weight layer, residual adds, the squeeze-excite pool and channel
    scale. Dropout is the identity at the cost level (its mask multiply is not modelled)."""
    from harness.kernels.spec import make

    if step not in ("fw", "ig"):
        return []
    pk = p if step == "ig" else 1.0
    specs = []
    if op.layer is not None:
        act = ACT_OPS.get(op.layer.act_after)
        if act:
            lay = op.layer
            if act == "sigmoid":
                specs.append(make("sigmoid", lay.c_out, lay.c_out, 1, 1, step, p_in=pk, platform=platform))
            else:
                specs.append(make(act, lay.c_out, lay.c_out, lay.h_out, lay.w_out, step, p_in=pk, platform=platform))
        return specs
    if op.kind in ("add", "global_avgpool", "se_scale"):
        c, h, w = network.tensors[op.inputs[0]]
        kind = {"add": "add", "global_avgpool": "gap", "se_scale": "scale"}[op.kind]
        specs.append(make(kind, c, c, h, w, step, p_in=pk, platform=platform))
    return specs


def loss_spec(network, platform: str = "pulp-open"):
    """The cross-entropy gradient from the classifier's logits, once per trained sample."""
    from harness.kernels.spec import make

    return make("ce", network.num_classes, network.num_classes, 1, 1, "fw", platform=platform)
