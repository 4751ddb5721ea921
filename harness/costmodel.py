"""Analytical cost model of method.md: forward, weight-gradient and input-gradient MACs per layer.

Per weight layer with kernel k, output H' x W', kept channels c_i = kept_channels(p_in, C_in) and
c_o = kept_channels(p_out, C_out) (harness.partial, the same rule as the kernels):

    FW = H' W' k^2 C_in C_out            (always dense: the forward pass is unchanged)
    WG = H' W' k^2 c_i c_o               (only that block of the weight gradient is computed)
    IG = H' W' k^2 c_i c_o               (0 when the layer's input is a replayed latent)

Depthwise layers have one channel set: WG = IG = H' W' k^2 c with c = kept_channels(p, C).
The classifier is always trained fully (p_in = p_out = 1). Every other trainable layer, SE 1x1
convs included, uses p_in = p_out = p. Frozen layers cost FW only. All figures are per sample.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.nets import Cut, Layer
from harness.partial import kept_channels


@dataclass(frozen=True)
class LayerCost:
    layer: Layer
    trainable: bool
    p_in: float
    p_out: float
    kept_in: int
    kept_out: int
    fw: int
    wg: int
    ig: int

    @property
    def bw(self) -> int:
        return self.wg + self.ig


def layer_p(layer: Layer, p: float) -> tuple[float, float]:
    """(p_in, p_out) for a trainable layer under the experiments' single-p convention."""
    return (1.0, 1.0) if layer.is_classifier else (p, p)


def backward_macs(layer: Layer, p_in: float, p_out: float) -> tuple[int, int, int]:
    """(kept_in, kept_out, MACs of one backward term) for the layer at the given partialities."""
    spatial = layer.h_out * layer.w_out * layer.kernel ** 2
    if layer.depthwise:
        # C_in = C_out: one p selects the channels of both the input and the output gradient.
        c = kept_channels(p_in, layer.c_in)
        return c, c, spatial * c
    if layer.groups != 1:
        raise ValueError(f"{layer.name}: grouped convs other than depthwise are not modelled")
    ci, co = kept_channels(p_in, layer.c_in), kept_channels(p_out, layer.c_out)
    return ci, co, spatial * ci * co


def layer_cost(layer: Layer, trainable: bool, p: float = 1.0, needs_input_grad: bool = True) -> LayerCost:
    if not trainable:
        return LayerCost(layer, False, 1.0, 1.0, layer.c_in, layer.c_out, layer.macs, 0, 0)
    p_in, p_out = layer_p(layer, p)
    ci, co, term = backward_macs(layer, p_in, p_out)
    return LayerCost(layer, True, p_in, p_out, ci, co, layer.macs, term, term if needs_input_grad else 0)


@dataclass(frozen=True)
class TrainingCost:
    cut: Cut
    p: float
    layers: tuple[LayerCost, ...]   # forward order, frozen and trainable

    @property
    def tail(self) -> list[LayerCost]:
        return [c for c in self.layers if c.trainable]

    @property
    def head(self) -> list[LayerCost]:
        return [c for c in self.layers if not c.trainable]

    @property
    def macs_fw_tail(self) -> int:
        return sum(c.fw for c in self.tail)

    @property
    def macs_wg(self) -> int:
        return sum(c.wg for c in self.tail)

    @property
    def macs_ig(self) -> int:
        return sum(c.ig for c in self.tail)

    @property
    def macs_bw(self) -> int:
        return self.macs_wg + self.macs_ig

    @property
    def macs_fw_head(self) -> int:
        return sum(c.fw for c in self.head)

    @property
    def macs_train_per_sample(self) -> int:
        """Per replayed or re-used sample (epochs after the first): tail forward + backward."""
        return self.macs_fw_tail + self.macs_bw


def training_cost(cut: Cut, p: float = 1.0) -> TrainingCost:
    kept_channels(p, 1)  # validates p once, with the same message as everywhere else
    costs = []
    for lay in cut.network.layers:
        trainable = cut.is_trainable(lay)
        costs.append(layer_cost(lay, trainable, p, trainable and cut.needs_input_grad(lay)))
    return TrainingCost(cut, p, tuple(costs))
