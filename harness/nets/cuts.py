"""Replay cut points: which part of a network is frozen, which is trained, what is replayed.

layer_id semantics (the result tables' "Layer ID"): cuts are at block boundaries, counted from the
classifier backwards.

* layer_id 1 trains only the classifier; the replayed latent is the pooled feature vector.
* layer_id k trains the classifier and the k-1 blocks before it. Blocks are the network's
  `blocks` in reverse: for MobileNetV2 the last 1x1 conv ("head") is a block of its own, so
  k = 2 is classifier + head, k = 3 adds B17, ..., k = 19 adds B1, k = 20 adds the stem (all
  trained, the latent is the input image). For PhiNet k = 2 adds B8, ..., k = 9 adds B1,
  k = 10 adds the stem.

A cut can also be placed at any weight layer by name: that layer and everything after it are
trained. Non-weight ops of the same block that precede it (dropout, the SE pool) go with it, so a
cut at a block's first weight layer equals the block cut. Inside a residual block the block input
is replayed too, because the skip connection consumes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from harness.errors import UserError
from harness.nets.layer import Layer, Network, Op


@dataclass(frozen=True)
class Cut:
    network: Network
    start: int                 # index in network.ops of the first trainable op
    layer_id: int | None       # set for block cuts
    label: str                 # "layer_id 5 (B15)" or "layer B15.dw"

    @property
    def trainable_ops(self) -> tuple[Op, ...]:
        return self.network.ops[self.start:]

    @property
    def frozen_ops(self) -> tuple[Op, ...]:
        return self.network.ops[:self.start]

    @property
    def trainable_layers(self) -> list[Layer]:
        return [op.layer for op in self.trainable_ops if op.layer is not None]

    @property
    def frozen_layers(self) -> list[Layer]:
        return [op.layer for op in self.frozen_ops if op.layer is not None]

    @property
    def first_block(self) -> str:
        return self.network.ops[self.start].block

    @cached_property
    def latent_tensors(self) -> tuple[str, ...]:
        """Tensors made by the frozen part (or the network input) and read by the trained part:
        what a replay buffer entry must hold."""
        produced_frozen = {op.output for op in self.frozen_ops} | {self.network.input}
        seen: list[str] = []
        for op in self.trainable_ops:
            for t in op.inputs:
                if t in produced_frozen and t not in seen:
                    seen.append(t)
        return tuple(seen)

    @property
    def latent_elems(self) -> int:
        return sum(self.network.elems(t) for t in self.latent_tensors)

    @cached_property
    def _grad_tensors(self) -> frozenset[str]:
        """Tensors whose gradient is needed: outputs of trained ops that depend on trained weights."""
        needs: set[str] = set()
        for op in self.trainable_ops:
            if op.has_weights or any(t in needs for t in op.inputs):
                needs.add(op.output)
        return frozenset(needs)

    def needs_input_grad(self, layer: Layer) -> bool:
        """False for the layers that read only latents: their input gradient would go nowhere."""
        return layer.input in self._grad_tensors

    def op_needs_backward(self, op: Op) -> bool:
        return op.output in self._grad_tensors and any(o is op for o in self.trainable_ops)

    def is_trainable(self, layer: Layer) -> bool:
        return any(op.layer is layer for op in self.trainable_ops)


def max_layer_id(net: Network) -> int:
    return len(net.blocks)


def cut_points(net: Network) -> list[tuple[int, str]]:
    """(layer_id, block) for every valid layer_id, classifier first."""
    return [(k, block) for k, block in enumerate(reversed(net.blocks), start=1)]


def cut_at_layer_id(net: Network, layer_id: int) -> Cut:
    n = max_layer_id(net)
    if isinstance(layer_id, bool) or not isinstance(layer_id, int) or not 1 <= layer_id <= n:
        raise UserError(f"layer_id must be an integer from 1 to {n} for {net.name} "
                        f"(1 = classifier only, {n} = whole network), got {layer_id!r}")
    block = net.blocks[-layer_id]
    start = next(i for i, op in enumerate(net.ops) if op.block == block)
    return Cut(net, start, layer_id, f"layer_id {layer_id} ({block})")


def cut_at_layer(net: Network, name: str) -> Cut:
    layer = net.layer(name)  # UserError listing valid names if unknown
    start = net.op_index(layer.name)
    while start > 0 and not net.ops[start - 1].has_weights and net.ops[start - 1].block == layer.block \
            and net.ops[start - 1].kind != "add":
        start -= 1
    # A cut at a block's first weight layer is the block cut: report its layer_id too.
    block_start = next(i for i, op in enumerate(net.ops) if op.block == layer.block)
    layer_id = len(net.blocks) - net.blocks.index(layer.block) if start == block_start else None
    return Cut(net, start, layer_id, f"layer {name}")


def resolve_cut(net: Network, layer_id: int | None = None, layer: str | None = None) -> Cut:
    if (layer_id is None) == (layer is None):
        raise UserError("give exactly one of a layer_id or a weight-layer name for the replay cut")
    return cut_at_layer_id(net, layer_id) if layer is None else cut_at_layer(net, layer)
