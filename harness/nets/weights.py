"""A network's weights, BatchNorm folded: one (weight, bias) pair per weight layer.

    weights[layer.name] = LayerWeights(w, b)
    w: conv-like layers (C_out, C_in / groups, k, k), linear layers (C_out, C_in); float32
    b: (C_out,) float32, or None for a layer with neither a bias nor a folded BatchNorm

A folded BatchNorm becomes the bias (Layer.bn_after says it was there): the inference semantics the
kernels run. Weights come from an imported model's initializers (harness.nets.onnx_import), from
random_weights (the default of the sweeps), or from an .npz file of `<layer>.weight` / `<layer>.bias`
arrays in these shapes (load_npz).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import UserError
from harness.nets.layer import Layer, Network


@dataclass(frozen=True)
class LayerWeights:
    w: np.ndarray
    b: np.ndarray | None


def weight_shape(lay: Layer) -> tuple[int, ...]:
    if lay.kind == "linear":
        return (lay.c_out, lay.c_in)
    return (lay.c_out, lay.c_in // lay.groups, lay.kernel, lay.kernel)


def has_bias(lay: Layer) -> bool:
    return bool(lay.bias or lay.bn_after)


def random_weights(net: Network, seed: int = 0) -> dict[str, LayerWeights]:
    """He-normal weights (fan-in of each output) and small biases: activations keep their scale
    through the network, so a forward pass neither vanishes nor overflows FP16."""
    rng = np.random.default_rng(seed)
    out = {}
    for lay in net.layers:
        shape = weight_shape(lay)
        fan_in = int(np.prod(shape[1:]))
        gain = 1.0 if lay.act_after in ("none", "sigmoid") else 2.0
        w = (rng.standard_normal(shape) * np.sqrt(gain / fan_in)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, lay.c_out).astype(np.float32) if has_bias(lay) else None
        out[lay.name] = LayerWeights(w, b)
    return out


def check(net: Network, weights: dict, where: str) -> None:
    """Every layer of `net` has weights of its shape (and a bias exactly when it has one)."""
    for lay in net.layers:
        lw = weights.get(lay.name)
        if lw is None:
            raise UserError(f"{where}: no weights for layer {lay.name}; give '{lay.name}.weight' of shape "
                            f"{weight_shape(lay)}")
        if tuple(lw.w.shape) != weight_shape(lay):
            raise UserError(f"{where}: {lay.name}.weight has shape {tuple(lw.w.shape)}, the layer needs "
                            f"{weight_shape(lay)}")
        if has_bias(lay) != (lw.b is not None) or (lw.b is not None and tuple(lw.b.shape) != (lay.c_out,)):
            want = f"a bias of shape ({lay.c_out},)" if has_bias(lay) else "no bias"
            raise UserError(f"{where}: {lay.name} needs {want}")
        for name, a in (("weight", lw.w), ("bias", lw.b)):
            if a is not None and not np.all(np.isfinite(a)):
                raise UserError(f"{where}: {lay.name}.{name} holds values that are not finite numbers")


def load_npz(path: str | Path, net: Network) -> dict[str, LayerWeights]:
    """Weights from an .npz file of `<layer>.weight` and `<layer>.bias` arrays (BatchNorm folded)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k], dtype=np.float32) for k in z.files}
    except FileNotFoundError:
        raise UserError(f"weights file {path} not found; give an .npz of <layer>.weight/<layer>.bias arrays") from None
    except (OSError, ValueError) as e:
        raise UserError(f"weights file {path}: not a readable .npz file ({e}); save it with numpy.savez") from None
    out = {lay.name: LayerWeights(arrays.get(f"{lay.name}.weight"), arrays.get(f"{lay.name}.bias"))
           for lay in net.layers if f"{lay.name}.weight" in arrays}
    known = {f"{lay.name}.{s}" for lay in net.layers for s in ("weight", "bias")}
    extra = sorted(set(arrays) - known)
    if extra:
        raise UserError(f"weights file {path}: array '{extra[0]}' names no layer of {net.name}; arrays are "
                        f"<layer>.weight and <layer>.bias")
    check(net, out, f"weights file {path}")
    return out
