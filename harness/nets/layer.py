"""Records describing a network: weight layers, the ops around them, and the network itself.

A network is a list of ops in forward (topological) order. Weight ops carry a `Layer` record with
everything the cost/memory models and a kernel generator need; the non-weight ops (dropout,
pooling, SE gating, residual adds) are kept as ops too, so that a cut through the network can be
reasoned about as data flow (which tensors cross the cut, which need gradients).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from harness.errors import UserError

# Weight-layer kinds, named as in shared/data/networks/*.csv; "conv" is a dense k x k convolution with
# k other than 3 (imported models).
WEIGHT_KINDS = ("conv3x3", "conv", "pointwise", "depthwise", "linear", "se_reduce", "se_expand")
# Non-weight op kinds.
OP_KINDS = ("dropout", "global_avgpool", "se_scale", "add")
ACTIVATIONS = ("none", "relu", "relu6", "hswish", "sigmoid")

Shape = tuple[int, int, int]  # C, H, W


@dataclass(frozen=True)
class Layer:
    """One weight layer. BN (if any) and the activation are fused into the record (bn_after,
    act_after) because a kernel generator folds BN into the conv and applies the activation on
    the output; `output` names the post-activation tensor. A layer whose output is the first operand
    of a residual add (`residual` set) applies its activation after the add, as a ResNet block does
    (relu(conv(x) + skip)): `output` is then the pre-activation sum's first operand and the add's
    output is the activated sum. The built-in networks have no activation on such layers."""

    name: str
    kind: str
    block: str
    c_in: int
    c_out: int
    h_in: int
    w_in: int
    h_out: int
    w_out: int
    kernel: int = 1
    stride: int = 1
    groups: int = 1
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # left, right, top, bottom
    bias: bool = False
    bn_after: bool = False
    act_after: str = "none"
    residual: str = ""  # "add(block_input)" when this output is summed with the block input
    note: str = ""
    input: str = ""     # tensor names in Network.tensors
    output: str = ""

    def __post_init__(self):
        if self.kind not in WEIGHT_KINDS:
            raise ValueError(f"{self.name}: unknown layer kind {self.kind!r}")
        if self.act_after not in ACTIVATIONS:
            raise ValueError(f"{self.name}: unknown activation {self.act_after!r}")
        if self.c_in % self.groups or self.c_out % self.groups:
            raise ValueError(f"{self.name}: channels not divisible by groups")

    @property
    def depthwise(self) -> bool:
        return self.kind == "depthwise"

    @property
    def is_classifier(self) -> bool:
        return self.block == "classifier"

    @property
    def weight_elems(self) -> int:
        return self.kernel * self.kernel * (self.c_in // self.groups) * self.c_out

    @property
    def params(self) -> int:
        """Weights plus bias, the CSV's `params` convention (BN counted separately)."""
        return self.weight_elems + (self.c_out if self.bias else 0)

    @property
    def bn_params(self) -> int:
        return 2 * self.c_out if self.bn_after else 0

    @property
    def macs(self) -> int:
        """Forward MACs; padding taps are counted (the kernels run them)."""
        return self.h_out * self.w_out * self.c_out * (self.c_in // self.groups) * self.kernel ** 2

    @property
    def act_in_elems(self) -> int:
        return self.c_in * self.h_in * self.w_in

    @property
    def act_out_elems(self) -> int:
        return self.c_out * self.h_out * self.w_out


@dataclass(frozen=True)
class Op:
    """One step of the forward pass. `layer` is set for weight ops (kind == layer.kind)."""

    name: str
    kind: str
    block: str
    inputs: tuple[str, ...]
    output: str
    layer: Layer | None = None
    attrs: Mapping = field(default_factory=dict, compare=False, hash=False)

    @property
    def has_weights(self) -> bool:
        return self.layer is not None


@dataclass(frozen=True)
class Network:
    name: str              # registry name, e.g. "mobilenetv2"
    title: str             # human description with its hyper-parameters
    resolution: int
    num_classes: int
    config: Mapping
    ops: tuple[Op, ...]
    tensors: Mapping[str, Shape]
    blocks: tuple[str, ...]   # forward order; the replay cut points
    input: str = "input"

    @property
    def input_shape(self) -> Shape:
        """C, H, W of one input sample."""
        return self.tensors[self.input]

    @property
    def layers(self) -> list[Layer]:
        """Weight layers in forward order."""
        return [op.layer for op in self.ops if op.layer is not None]

    def layer(self, name: str) -> Layer:
        for lay in self.layers:
            if lay.name == name:
                return lay
        names = [lay.name for lay in self.layers]
        raise UserError(f"{self.name} has no weight layer '{name}'; valid names: {', '.join(names)}")

    def op_index(self, name: str) -> int:
        for i, op in enumerate(self.ops):
            if op.name == name:
                return i
        raise KeyError(name)

    def idx_from_classifier(self, layer: Layer) -> int:
        """1 = classifier, 2 = the weight layer before it, ... (every weight layer counts)."""
        names = [lay.name for lay in self.layers]
        return len(names) - names.index(layer.name)

    def block_layers(self, block: str) -> list[Layer]:
        return [lay for lay in self.layers if lay.block == block]

    def elems(self, tensor: str) -> int:
        c, h, w = self.tensors[tensor]
        return c * h * w

    @property
    def macs(self) -> int:
        return sum(lay.macs for lay in self.layers)

    @property
    def params(self) -> int:
        return sum(lay.params for lay in self.layers)

    @property
    def bn_params(self) -> int:
        return sum(lay.bn_params for lay in self.layers)

    @property
    def torchinfo_macs(self) -> int:
        """What torchinfo-style counters report: + 2 per BN channel, + the Linear bias adds."""
        extra = sum(lay.bn_params + (lay.c_out if lay.kind == "linear" and lay.bias else 0)
                    for lay in self.layers)
        return self.macs + extra

    @property
    def torchinfo_params(self) -> int:
        return self.params + self.bn_params
