"""NumPy reference of every kernel step, on the same FP16 inputs, computed in float64.

Tensors here have their logical shapes (no channel padding): X (H, W, C_in), W (C_out, C_in) for
pw/linear, (C_out, k, k, C_in) for conv, (k, k, C) for dw, b (C_out,). Each function returns the
expected outputs and, for each, the magnitude sum(|terms|) that bounds its rounding error.
"""
from __future__ import annotations

import numpy as np

from harness.kernels.spec import OPS, KernelSpec


def _pad(x, spec: KernelSpec):
    l, r, t, b = spec.pad
    return np.pad(x, ((t, b), (l, r), (0, 0)))


def _windows(spec: KernelSpec):
    """(kh, kw, row slice, col slice) of the padded input seen by each tap."""
    s, ho, wo = spec.stride, spec.h_out, spec.w_out
    for kh in range(spec.k):
        for kw in range(spec.k):
            yield kh, kw, slice(kh, kh + s * (ho - 1) + 1, s), slice(kw, kw + s * (wo - 1) + 1, s)


def conv_forward(x, w, spec: KernelSpec):
    """Full-channel forward (no bias). Returns (out, magnitude)."""
    xp = _pad(x.astype(np.float64), spec)
    ho, wo = spec.h_out, spec.w_out
    if spec.kind == "dw":
        out = np.zeros((ho, wo, x.shape[2]))
        mag = np.zeros_like(out)
        for kh, kw, rs, cs in _windows(spec):
            t = xp[rs, cs, :] * w[kh, kw, :].astype(np.float64)
            out += t
            mag += np.abs(t)
        return out, mag
    w4 = w.astype(np.float64).reshape(w.shape[0], spec.k, spec.k, -1)
    out = np.zeros((ho, wo, w.shape[0]))
    mag = np.zeros_like(out)
    for kh, kw, rs, cs in _windows(spec):
        patch = xp[rs, cs, :]
        out += patch @ w4[:, kh, kw, :].T
        mag += np.abs(patch) @ np.abs(w4[:, kh, kw, :]).T
    return out, mag


def weight_grad(xs, dy, spec: KernelSpec):
    """dW of the kept block from stored activations xs (H, W, k_in) and dY (H', W', k_out)."""
    xp = _pad(xs.astype(np.float64), spec)
    d = dy.astype(np.float64)
    if spec.kind == "dw":
        out = np.zeros((spec.k, spec.k, xs.shape[2]))
        mag = np.zeros_like(out)
        for kh, kw, rs, cs in _windows(spec):
            t = xp[rs, cs, :] * d
            out[kh, kw] = t.sum(axis=(0, 1))
            mag[kh, kw] = np.abs(t).sum(axis=(0, 1))
        return out, mag
    ko, ki = dy.shape[2], xs.shape[2]
    out = np.zeros((ko, spec.k, spec.k, ki))
    mag = np.zeros_like(out)
    d2 = d.reshape(-1, ko)
    for kh, kw, rs, cs in _windows(spec):
        p2 = xp[rs, cs, :].reshape(-1, ki)
        out[:, kh, kw, :] = d2.T @ p2
        mag[:, kh, kw, :] = np.abs(d2).T @ np.abs(p2)
    if spec.kind in ("pw", "linear"):
        return out[:, 0, 0, :], mag[:, 0, 0, :]
    return out, mag


def input_grad(dy, w, spec: KernelSpec):
    """dX of the first k_in channels from dY (H', W', k_out) and the full weights."""
    ki, ko = spec.k_in, spec.k_out
    d = dy.astype(np.float64)
    l, r, t, b = spec.pad
    hp, wp = spec.h + t + b, spec.w + l + r
    if spec.kind == "dw":
        acc = np.zeros((hp, wp, ki))
        mag = np.zeros_like(acc)
        for kh, kw, rs, cs in _windows(spec):
            term = d * w[kh, kw, :ki].astype(np.float64)
            acc[rs, cs, :] += term
            mag[rs, cs, :] += np.abs(term)
    else:
        w4 = w.astype(np.float64).reshape(w.shape[0], spec.k, spec.k, -1)[:ko, :, :, :ki]
        acc = np.zeros((hp, wp, ki))
        mag = np.zeros_like(acc)
        for kh, kw, rs, cs in _windows(spec):
            acc[rs, cs, :] += d @ w4[:, kh, kw, :]
            mag[rs, cs, :] += np.abs(d) @ np.abs(w4[:, kh, kw, :])
    return acc[t:t + spec.h, l:l + spec.w, :], mag[t:t + spec.h, l:l + spec.w, :]


def _op_inputs(spec: KernelSpec, uni) -> dict:
    hw, c, k = (spec.h, spec.w), spec.cin, spec.k_in
    kind, step = spec.kind, spec.step
    if kind in ("relu6", "hswish", "relu"):
        # a spread that crosses every breakpoint (0, 6 / -3, 3)
        return {"x": uni(hw + (c,), 8.0)} if step == "fw" else {"x": uni(hw + (k,), 8.0), "dy": uni(hw + (k,))}
    if kind == "sigmoid":
        return {"x": uni((1, 1, c), 6.0)} if step == "fw" else {"y": (0.5 + 0.5 * uni((1, 1, k))).astype(np.float16),
                                                                 "dy": uni((1, 1, k))}
    if kind == "add":
        return {"a": uni(hw + (c,)), "b": uni(hw + (c,))} if step == "fw" else {"a": uni(hw + (k,)), "b": uni(hw + (k,))}
    if kind == "gap":
        return {"x": uni(hw + (c,))} if step == "fw" else {"dy": uni((1, 1, k))}
    if kind == "scale":
        if step == "fw":
            return {"x": uni(hw + (c,)), "s": uni((c,))}
        return {"dy": uni(hw + (k,)), "x": uni(hw + (k,)), "s": uni((c,))}
    return {"z": uni((1, 1, c), 4.0), "label": np.array([spec.seed % c])}  # ce


def _op_expected(spec: KernelSpec, ins: dict) -> dict:
    f = {n: np.asarray(v, dtype=np.float64) for n, v in ins.items()}
    kind, step = spec.kind, spec.step
    if kind == "relu6":
        out = np.clip(f["x"], 0, 6) if step == "fw" else f["dy"] * ((f["x"] > 0) & (f["x"] < 6))
        return {"y" if step == "fw" else "dx": (out, np.abs(out))}
    if kind == "relu":
        out = np.maximum(f["x"], 0) if step == "fw" else f["dy"] * (f["x"] > 0)
        return {"y" if step == "fw" else "dx": (out, np.abs(out))}
    if kind == "hswish":
        x = f["x"]
        if step == "fw":
            out = x * np.clip(x + 3, 0, 6) / 6
        else:
            out = f["dy"] * np.where(x < -3, 0.0, np.where(x > 3, 1.0, (2 * x + 3) / 6))
        return {"y" if step == "fw" else "dx": (out, np.abs(out))}
    if kind == "sigmoid":
        out = 1 / (1 + np.exp(-f["x"])) if step == "fw" else f["dy"] * f["y"] * (1 - f["y"])
        return {"y" if step == "fw" else "dx": (out, np.abs(out))}
    if kind == "add":
        out = f["a"] + f["b"]
        return {"y" if step == "fw" else "dx": (out, np.abs(f["a"]) + np.abs(f["b"]))}
    if kind == "gap":
        if step == "fw":
            return {"y": (f["x"].mean(axis=(0, 1), keepdims=True), np.abs(f["x"]).mean(axis=(0, 1), keepdims=True))}
        out = np.broadcast_to(f["dy"] / (spec.h * spec.w), (spec.h, spec.w, spec.k_in)).copy()
        return {"dx": (out, np.abs(out))}
    if kind == "scale":
        if step == "fw":
            out = f["x"] * f["s"]
            return {"y": (out, np.abs(out))}
        s = f["s"][: spec.k_in]
        dx = f["dy"] * s
        ds = (f["dy"] * f["x"]).sum(axis=(0, 1))
        return {"dx": (dx, np.abs(dx)), "ds": (ds, np.abs(f["dy"] * f["x"]).sum(axis=(0, 1)))}
    z = f["z"].reshape(-1)
    e = np.exp(z - z.max())
    out = e / e.sum()
    out[int(ins["label"][0])] -= 1.0
    return {"dz": (out.reshape(1, 1, -1), np.abs(out).reshape(1, 1, -1) + 1.0 / len(z))}


def make_inputs(spec: KernelSpec) -> dict:
    """Deterministic FP16 inputs of the step (seeded by the spec), scaled so outputs stay O(1)."""
    rng = np.random.default_rng([spec.seed, spec.cin, spec.cout, spec.h, spec.w, spec.k, spec.stride,
                                 KIND_IDS[spec.kind], STEP_IDS[spec.step]])
    fan_in = spec.k * spec.k * (1 if spec.kind == "dw" else spec.cin)
    h16 = np.float16

    def uni(shape, scale=1.0):
        return (rng.uniform(-1, 1, size=shape) * scale).astype(h16)

    if spec.kind in OPS:
        return _op_inputs(spec, uni)
    if spec.kind == "dw":
        wshape = (spec.k, spec.k, spec.cin)
    elif spec.kind == "conv":
        wshape = (spec.cout, spec.k, spec.k, spec.cin)
    else:
        wshape = (spec.cout, spec.cin)
    ins = {}
    if spec.step == "fw":
        ins["x"] = uni((spec.h, spec.w, spec.cin))
        ins["w"] = uni(wshape, 1.0 / np.sqrt(fan_in))
        ins["b"] = uni((spec.cout,), 0.5)
    elif spec.step == "wg":
        ins["xs"] = uni((spec.h, spec.w, spec.k_in))
        ins["dy"] = uni((spec.h_out, spec.w_out, spec.k_out), 1.0 / np.sqrt(spec.h_out * spec.w_out))
    elif spec.step == "ig":
        ins["dy"] = uni((spec.h_out, spec.w_out, spec.k_out))
        ins["w"] = uni(wshape, 1.0 / np.sqrt(spec.k * spec.k * (1 if spec.kind == "dw" else spec.k_out)))
    else:
        ins["w"] = uni(wshape, 0.5)
        ins["b"] = uni((spec.cout,), 0.5)
        dwshape = (spec.k, spec.k, spec.k_in) if spec.kind == "dw" else (
            (spec.k_out, spec.k, spec.k, spec.k_in) if spec.kind == "conv" else (spec.k_out, spec.k_in))
        ins["dw"] = uni(dwshape, 4.0)
        ins["db"] = uni((spec.k_out,), 4.0)
    return ins


def min_l2_bytes(spec: KernelSpec) -> int:
    """FP16 bytes of the step's logical tensors (inputs and outputs, no padding): a lower bound of what
    the generated program keeps in L2, computed without allocating anything, so that an absurd shape
    is refused before make_inputs would allocate its test data."""
    x, y = spec.h * spec.w, spec.h_out * spec.w_out
    if spec.kind in OPS:
        return 2 * (3 * x * spec.cin + spec.cin)
    kk = spec.k * spec.k
    if spec.kind == "dw":
        w, dw = kk * spec.cin, kk * spec.k_in
    else:
        w, dw = kk * spec.cin * spec.cout, kk * spec.k_in * spec.k_out
    elems = {"fw": x * spec.cin + w + y * spec.cout,
             "wg": x * spec.k_in + y * spec.k_out + dw,
             "ig": y * spec.k_out + w + x * spec.k_in,
             "update": w + dw}[spec.step]
    return 2 * elems


KIND_IDS = {"conv": 1, "pw": 2, "dw": 3, "linear": 4, "relu6": 5, "hswish": 6, "sigmoid": 7, "add": 8, "gap": 9,
            "scale": 10, "ce": 11, "relu": 12}
STEP_IDS = {"fw": 1, "wg": 2, "ig": 3, "update": 4}


def expected(spec: KernelSpec, ins: dict) -> dict:
    """{output name: (value float64 array, magnitude array)} in logical shapes."""
    if spec.kind in OPS:
        return _op_expected(spec, ins)
    if spec.step == "fw":
        y, mag = conv_forward(ins["x"], ins["w"], spec)
        if spec.bias:
            y = y + ins["b"].astype(np.float64)
            mag = mag + np.abs(ins["b"].astype(np.float64))
        out = {"y": (y, mag)}
        if spec.placement != "frozen":
            xs = ins["x"][:, :, :spec.k_in].astype(np.float64)
            out["xs"] = (xs, np.abs(xs))
        return out
    if spec.step == "wg":
        dw, mag = weight_grad(ins["xs"], ins["dy"], spec)
        out = {"dw": (dw, mag)}
        if spec.bias:
            d = ins["dy"].astype(np.float64)
            out["db"] = (d.sum(axis=(0, 1)), np.abs(d).sum(axis=(0, 1)))
        return out
    if spec.step == "ig":
        dx, mag = input_grad(ins["dy"], ins["w"], spec)
        return {"dx": (dx, mag)}
    # update: SGD on the kept block only; everything else must come back unchanged
    lr = np.float64(np.float16(spec.lr))
    w = ins["w"].astype(np.float64).copy()
    g = ins["dw"].astype(np.float64)
    if spec.kind == "dw":
        w[:, :, :spec.k_in] -= lr * g
    elif spec.kind == "conv":
        w[:spec.k_out, :, :, :spec.k_in] -= lr * g
    else:
        w[:spec.k_out, :spec.k_in] -= lr * g
    out = {"w": (w, np.abs(w))}
    if spec.bias:
        b = ins["b"].astype(np.float64).copy()
        b[:spec.k_out] -= lr * ins["db"].astype(np.float64)
        out["b"] = (b, np.abs(b))
    return out
