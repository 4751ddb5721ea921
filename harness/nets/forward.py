"""The forward pass of a network record in NumPy: what the layer table says the network computes.

It reads nothing but the Network (ops, layers, their geometry and activations) and its weights
(harness.nets.weights), so comparing it with another implementation of the same model (onnxruntime
on an imported file) checks the record itself: shapes, padding, strides, groups, folded BatchNorm,
activations, residual adds, squeeze-excite and pools.

    y = forward(net, weights, x)         # x: (N, C, H, W); y: (N, num_classes) logits
"""
from __future__ import annotations

import numpy as np

from harness.nets.layer import Layer, Network


def activation(act: str, z: np.ndarray) -> np.ndarray:
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "relu6":
        return np.clip(z, 0.0, 6.0)
    if act == "hswish":
        return z * np.clip(z + 3.0, 0.0, 6.0) / 6.0
    if act == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    return z


def conv2d(x: np.ndarray, w: np.ndarray, b, stride: int, pad: tuple, groups: int) -> np.ndarray:
    """x (N, C, H, W), w (C_out, C / groups, k, k), pad (left, right, top, bottom)."""
    left, right, top, bottom = pad
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c = xp.shape[:2]
    co, cig, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    ho, wo = win.shape[2:4]
    g = groups
    win = win.reshape(n, g, c // g, ho, wo, kh, kw)
    wg = w.reshape(g, co // g, cig, kh, kw)
    y = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True).reshape(n, co, ho, wo)
    if b is not None:
        y = y + b.reshape(1, co, 1, 1)
    return y


def _layer(lay: Layer, x: np.ndarray, lw, dtype) -> np.ndarray:
    w = lw.w.astype(dtype)
    b = None if lw.b is None else lw.b.astype(dtype)
    if lay.kind == "linear":
        y = x.reshape(x.shape[0], -1) @ w.T
        if b is not None:
            y = y + b
        return y.reshape(x.shape[0], lay.c_out, 1, 1)
    return conv2d(x, w, b, lay.stride, lay.pad, lay.groups)


def forward(net: Network, weights: dict, x: np.ndarray, dtype=np.float64, keep: bool = False):
    """Logits (N, num_classes) of `net` on x; with keep=True also every tensor by name."""
    t = {net.input: np.asarray(x, dtype=dtype)}
    fused_act = {}     # add op -> the activation its first operand's layer applies after the sum
    for op in net.ops:
        if op.layer is not None:
            lay = op.layer
            y = _layer(lay, t[lay.input], weights[lay.name], dtype)
            if lay.residual:
                adds = [o for o in net.ops if o.kind == "add" and o.inputs[0] == lay.output]
                if adds:
                    fused_act[adds[0].name] = lay.act_after
                    t[op.output] = y
                    continue
            t[op.output] = activation(lay.act_after, y)
        elif op.kind == "add":
            t[op.output] = activation(fused_act.get(op.name, "none"), t[op.inputs[0]] + t[op.inputs[1]])
        elif op.kind == "global_avgpool":
            t[op.output] = t[op.inputs[0]].mean(axis=(2, 3), keepdims=True)
        elif op.kind == "se_scale":
            t[op.output] = t[op.inputs[0]] * t[op.inputs[1]]
        elif op.kind == "dropout":
            t[op.output] = t[op.inputs[0]]
        else:
            raise ValueError(f"{op.name}: no forward for op kind {op.kind}")
    out = t[net.ops[-1].output].reshape(x.shape[0], -1)
    return (out, t) if keep else out
