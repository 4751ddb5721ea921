"""NumPy reference of every stage kind, and of a whole training step as the stages in sequence.

Tensors are float64 arrays holding FP16 values, one row per pixel (rows x cols, samples after each
other). Each stage reads its inputs for a chunk, rounds to FP16 where the kernel stores, and returns
for each output the reference and a tolerance:

    |out - ref| <= tol,  tol = 2^-10 |ref| (final rounding) + eta * sum|terms| (accumulation)
                              + 2^-10 L |pre| (a fused op after a rounded value: L its slope bound)
                              + 2^-24

with eta = 2^-18 for FP32 accumulation (matrix products), 9 * 2^-11 / 8 * 2^-11 for the depthwise
FP16 tap sums, as for the single kernels (harness/kernels/runner.py). SGD is bit-exact.
"""
from __future__ import annotations

import numpy as np

from harness.deploy.graph import CHUNKED, WG_KINDS, Stage, Step

F16 = np.float16
ETA_MM = 2.0 ** -18
ETA_DW = {"fw": 9 * 2.0 ** -11, "ig": 9 * 2.0 ** -11, "wg": 8 * 2.0 ** -11}
U = 2.0 ** -10
SLOPE = {"none": 0.0, "relu": 1.0, "relu6": 1.0, "hswish": 1.5, "sigmoid": 0.25}
SLOPE_BW = {"relu": 1.0, "relu6": 1.0, "hswish": 1.5, "sigmoid": 0.25}
EXACT_BW = ("relu", "relu6")     # activations whose backward is a mask: no rounding   # bound on |act'|: how a gradient's error carries


def h(x) -> np.ndarray:
    """Round to FP16 and back."""
    return np.asarray(x, dtype=np.float64).astype(F16).astype(np.float64)


def act_fw(act: str, z: np.ndarray) -> np.ndarray:
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "relu6":
        return np.clip(z, 0.0, 6.0)
    if act == "hswish":
        return h(z.astype(np.float32) * np.clip(z + 3.0, 0.0, 6.0).astype(np.float32) * np.float32(1.0 / 6.0))
    if act == "sigmoid":
        return h(1.0 / (1.0 + np.exp(-z)))
    return z


def act_bw(act: str, st: np.ndarray, g: np.ndarray) -> np.ndarray:
    if act == "relu":
        return np.where(st > 0.0, g, 0.0)
    if act == "relu6":
        return np.where((st > 0.0) & (st < 6.0), g, 0.0)
    if act == "hswish":
        d = np.where(st < -3.0, 0.0, np.where(st > 3.0, 1.0, (2.0 * st + 3.0) / 6.0))
        return h(g * d)
    if act == "sigmoid":
        return h(g * st * (1.0 - st))
    return g


def _tol(ref, mag=0.0, pre=0.0, eta=ETA_MM, slope=0.0) -> np.ndarray:
    return U * np.abs(ref) + eta * mag + U * slope * np.abs(pre) + 2.0 ** -24


class Env:
    """The tensors of a step: name -> (samples * rows, cols) float64 array (FP16 values)."""

    def __init__(self, step: Step, arrays: dict | None = None):
        self.step = step
        self.a = dict(arrays or {})
        self.mag: dict = {}      # weight gradients: sum of |terms| (the scale their errors compare to)

    def _span(self, stage: Stage, name: str, chunk: int) -> slice:
        t = self.step.tensors[name]
        ns = self.step.chunk_samples(stage.repeat) if stage.repeat in CHUNKED else None
        if (t.scope == "batch" or (t.scope == "chunk_f2" and stage.repeat == "chunk_f")) and ns is not None:
            return slice(chunk * ns * t.rows, (chunk + 1) * ns * t.rows)
        return slice(None)

    def get(self, stage: Stage, name: str, chunk: int) -> np.ndarray:
        return self.a[name][self._span(stage, name, chunk)]

    def put(self, stage: Stage, name: str, chunk: int, value: np.ndarray):
        t = self.step.tensors[name]
        if name not in self.a:
            n = t.rows * t.samples(self.step) if t.scope != "none" else t.rows
            self.a[name] = np.zeros((n, t.cols))
        sl = self._span(stage, name, chunk)
        self.a[name][sl, : value.shape[1]] = value


def run_stage(env: Env, st: Stage, chunk: int = 0, variant: str = "") -> dict:
    """Apply one stage to `env` (outputs written back); returns {output tensor: (ref, tol)}."""
    fn = {"mm_fw": _mm_fw, "mm_ig": _mm_ig, "mm_wg": _mm_wg, "dw_fw": _dw_fw, "dw_ig": _dw_ig, "dw_wg": _dw_wg,
          "conv_fw": _conv_fw, "gap_bw": _gap_bw, "scale_fw": _scale_fw, "scale_bw": _scale_bw, "sgd": _sgd,
          "latents": _latents, "im2col": _im2col, "wg_cols": _im2col, "ig_cols": _ig_cols, "ig_wt": _ig_wt}[st.kind]
    out = fn(env, st, chunk, variant == "acc")
    if st.attrs.get("act_out"):   # the activation backward of the layer whose output gradient this is
        name = st.outs[st.attrs["act_out_slot"]]
        val, tol = out[name]
        stv = env.get(st, st.ins["stash_out"], chunk)[:, : val.shape[1]]
        act = st.attrs["act_out"]
        g = act_bw(act, stv, val)
        out[name] = (g, SLOPE_BW[act] * tol + (0.0 if act in EXACT_BW else U * np.abs(g)) + 2.0 ** -24)
    for name, (ref, _) in out.items():
        env.put(st, name, chunk, ref)
    return out


def _samples(env: Env, st: Stage) -> int:
    return env.step.chunk_samples(st.repeat)


def _fw_epilogue(env, st, chunk, z, mag, eta, rows_ps) -> dict:
    """Bias-added, rounded pre-activation z (rows x C_out) -> the forward stage's outputs."""
    a = st.attrs
    out = {}
    pre = z
    ztol = _tol(z, mag, eta=eta)
    if "skip" in st.ins:
        s = env.get(st, st.ins["skip"], chunk)
        pre = h(z + s[:, : z.shape[1]])
        ztol = ztol + U * np.abs(pre)
    slope = SLOPE[a["act"]]
    y = act_fw(a["act"], pre)
    ytol = U * np.abs(y) + max(slope, 1.0 if a["act"] == "none" else slope) * ztol + 2.0 ** -24
    if "y" in st.outs:
        out[st.outs["y"]] = (y, ytol)
    k = a["k_out"]
    if "stash" in st.outs:
        src, tol = (pre, ztol) if a["act"] == "hswish" else (y, ytol)
        out[st.outs["stash"]] = (src[:, :k], tol[:, :k])
    if "sx" in st.outs:
        out[st.outs["sx"]] = (y[:, :k], ytol[:, :k])
    if "pool" in st.outs:
        ns = y.shape[0] // rows_ps
        m = y.reshape(ns, rows_ps, -1).mean(axis=1)
        t = ytol.reshape(ns, rows_ps, -1).mean(axis=1)
        out[st.outs["pool"]] = (h(m), U * np.abs(m) + t + 2.0 ** -24)
    if a.get("ce"):
        lab = env.get(st, st.ins["label"], chunk)[:, 0].astype(int)
        zz = pre
        m = zz.max(axis=1, keepdims=True)
        e = np.exp(zz - m)
        ssum = e.sum(axis=1, keepdims=True)
        p = e / ssum
        onehot = np.zeros_like(p)
        onehot[np.arange(len(lab)), lab] = 1.0
        dz = h(p - onehot)
        zt = ztol.max(axis=1, keepdims=True)
        out[st.outs["dz"]] = (dz, U * np.abs(dz) + 2.0 * zt + 2.0 ** -11)
        loss = h(np.log(ssum[:, 0]) + m[:, 0] - zz[np.arange(len(lab)), lab])[:, None]
        out[st.outs["loss"]] = (loss, U * np.abs(loss) + 2.0 * zt + 2.0 ** -9)
    return out


def _mm_fw(env, st, chunk, acc):
    a = st.attrs
    x = env.get(st, st.ins["x"], chunk)[:, : a["c_in"]]
    w = env.a[st.ins["w"]][:, : a["c_in"]]
    zf = x @ w.T
    mag = np.abs(x) @ np.abs(w).T
    if "b" in st.ins:
        b = env.a[st.ins["b"]][0, : a["c_out"]]
        zf = zf + b
        mag = mag + np.abs(b)
    out = _fw_epilogue(env, st, chunk, h(zf), mag, ETA_MM, a["h_out"] * a["w_out"])
    if "xs" in st.outs:
        out[st.outs["xs"]] = (x[:, : a["k_in"]], np.zeros_like(x[:, : a["k_in"]]))
    return out


def _dz(env, st, chunk):
    """The output gradient through the activation's backward (k_out channels), and whether that was
    exact (ReLU6 masks) or rounded."""
    a = st.attrs
    dy = env.get(st, st.ins["dy"], chunk)[:, : a["k_out"]]
    if "stash" in st.ins and a["act"] != "none":
        stv = env.get(st, st.ins["stash"], chunk)[:, : a["k_out"]]
        return act_bw(a["act"], stv, dy), a["act"] in EXACT_BW
    return dy, True


def _mm_ig(env, st, chunk, acc):
    a = st.attrs
    dz, exact = _dz(env, st, chunk)
    if a.get("wt"):      # a convolution's: gathered dZ (k k k_out columns) times the transposed weights
        w = env.a[st.ins["w"]][: a["k_in"], : a["k_out"]].T
    else:
        w = env.a[st.ins["w"]][: a["k_out"], : a["k_in"]]
    dxf = dz @ w
    mag = np.abs(dz) @ np.abs(w)
    eta = ETA_MM if exact else U
    dx = h(dxf)
    tol = _tol(dx, mag, eta=eta)
    if "gskip" in st.ins:
        g = env.get(st, st.ins["gskip"], chunk)[:, : a["k_in"]]
        dx2 = h(dx + g)
        tol = tol + U * np.abs(dx2)
        dx = dx2
    return {st.outs["dx"]: (dx, tol)}


def _add_mag(env: Env, name: str, mag: np.ndarray, acc: bool) -> None:
    """The sum of |terms| of a weight gradient over the chunks it has accumulated so far."""
    old = env.mag.get(name)
    env.mag[name] = mag + old if acc and old is not None and old.shape == mag.shape else mag


def _mm_wg(env, st, chunk, acc):
    a = st.attrs
    dz, exact = _dz(env, st, chunk)
    xs = env.get(st, st.ins["xs"], chunk)[:, : a["k_in"]]
    eta = ETA_MM if exact else U
    dw = h(dz.T @ xs)
    mag = np.abs(dz).T @ np.abs(xs)
    _add_mag(env, st.outs["dw"], mag, acc)
    tol = _tol(dw, mag, eta=eta)
    out = {}
    if acc:
        old = env.a[st.outs["dw"]][: a["k_out"], : a["k_in"]]
        dw = h(old + dw)
        tol = tol + U * np.abs(dw)
    out[st.outs["dw"]] = (dw, tol)
    if "db" in st.outs:
        db = h(dz.sum(axis=0))[None, :]
        dmag = np.abs(dz).sum(axis=0)[None, :]
        _add_mag(env, st.outs["db"], dmag, acc)
        dtol = _tol(db, dmag, eta=eta)
        if acc:
            db = h(env.a[st.outs["db"]][:, : a["k_out"]] + db)
            dtol = dtol + U * np.abs(db)
        out[st.outs["db"]] = (db, dtol)
    return out


def _maps(x, ns, h_, w_):
    return x.reshape(ns, h_, w_, -1)


def _dw_taps(a):
    k, s = a["k"], a["stride"]
    left, _, top, _ = a["pad"]
    for kh in range(k):
        for kw in range(k):
            yield kh, kw, kh - top, kw - left, s


def _shift(xm, a, kh, kw):
    """x[n][oh*s + kh - top][ow*s + kw - left] for every output pixel (zero outside)."""
    ns, hh, ww, c = xm.shape
    ho, wo, s = a["h_out"], a["w_out"], a["stride"]
    left, _, top, _ = a["pad"]
    out = np.zeros((ns, ho, wo, c))
    for oh in range(ho):
        ih = oh * s + kh - top
        if not 0 <= ih < hh:
            continue
        for ow in range(wo):
            iw = ow * s + kw - left
            if 0 <= iw < ww:
                out[:, oh, ow] = xm[:, ih, iw]
    return out


def _dw_fw(env, st, chunk, acc):
    a = st.attrs
    ns = _samples(env, st)
    c = a["c_in"]
    x = env.get(st, st.ins["x"], chunk)[:, :c]
    xm = _maps(x, ns, a["h"], a["w"])
    w = env.a[st.ins["w"]][:, :c]
    z = np.zeros((ns, a["h_out"], a["w_out"], c))
    mag = np.zeros_like(z)
    for i, (kh, kw, *_rest) in enumerate(_dw_taps(a)):
        sh = _shift(xm, a, kh, kw)
        z += sh * w[i]
        mag += np.abs(sh * w[i])
    if "b" in st.ins:
        b = env.a[st.ins["b"]][0, :c]
        z += b
        mag += np.abs(b)
    rows = ns * a["h_out"] * a["w_out"]
    out = _fw_epilogue(env, st, chunk, h(z.reshape(rows, c)), mag.reshape(rows, c), ETA_DW["fw"],
                       a["h_out"] * a["w_out"])
    if "xs" in st.outs:
        out[st.outs["xs"]] = (x[:, : a["k_in"]], np.zeros_like(x[:, : a["k_in"]]))
    return out


def _dw_ig(env, st, chunk, acc):
    a = st.attrs
    ns = _samples(env, st)
    k_in = a["k_in"]
    dz, exact = _dz(env, st, chunk)
    gm = dz.reshape(ns, a["h_out"], a["w_out"], k_in)
    w = env.a[st.ins["w"]][:, :k_in]
    dx = np.zeros((ns, a["h"], a["w"], k_in))
    mag = np.zeros_like(dx)
    ho, wo, s = a["h_out"], a["w_out"], a["stride"]
    left, _, top, _ = a["pad"]
    for i, (kh, kw, *_r) in enumerate(_dw_taps(a)):
        for oh in range(ho):
            ih = oh * s + kh - top
            if not 0 <= ih < a["h"]:
                continue
            for ow in range(wo):
                iw = ow * s + kw - left
                if 0 <= iw < a["w"]:
                    dx[:, ih, iw] += gm[:, oh, ow] * w[i]
                    mag[:, ih, iw] += np.abs(gm[:, oh, ow] * w[i])
    rows = ns * a["h"] * a["w"]
    dxr = h(dx.reshape(rows, k_in))
    eta = ETA_DW["ig"] if exact else ETA_DW["ig"] + U
    return {st.outs["dx"]: (dxr, _tol(dxr, mag.reshape(rows, k_in), eta=eta))}


def _dw_wg(env, st, chunk, acc):
    a = st.attrs
    ns = _samples(env, st)
    k_in = a["k_in"]
    dz, exact = _dz(env, st, chunk)
    gm = dz.reshape(ns, a["h_out"], a["w_out"], k_in)
    xs = env.get(st, st.ins["xs"], chunk)[:, :k_in]
    xm = _maps(xs, ns, a["h"], a["w"])
    kk = a["k"] ** 2
    dw = np.zeros((kk, k_in))
    mag = np.zeros_like(dw)
    for i, (kh, kw, *_r) in enumerate(_dw_taps(a)):
        sh = _shift(xm, a, kh, kw)
        dw[i] = (sh * gm).sum(axis=(0, 1, 2))
        mag[i] = np.abs(sh * gm).sum(axis=(0, 1, 2))
    eta = ETA_DW["wg"] if exact else ETA_DW["wg"] + U
    _add_mag(env, st.outs["dw"], mag, acc)
    dwr = h(dw)
    tol = _tol(dwr, mag, eta=eta)
    out = {}
    if acc:
        dwr = h(env.a[st.outs["dw"]][:kk, :k_in] + dwr)
        tol = tol + U * np.abs(dwr)
    out[st.outs["dw"]] = (dwr, tol)
    if "db" in st.outs:
        db = h(gm.sum(axis=(0, 1, 2)))[None, :]
        dmag = np.abs(gm).sum(axis=(0, 1, 2))[None, :]
        _add_mag(env, st.outs["db"], dmag, acc)
        dtol = _tol(db, dmag, eta=eta)
        if acc:
            db = h(env.a[st.outs["db"]][:, :k_in] + db)
            dtol = dtol + U * np.abs(db)
        out[st.outs["db"]] = (db, dtol)
    return out


def _conv_fw(env, st, chunk, acc):
    a = st.attrs
    ns = _samples(env, st)
    cin, cout, k = a["c_in"], a["c_out"], a["k"]
    x = env.get(st, st.ins["x"], chunk)[:, :cin]
    xm = _maps(x, ns, a["h"], a["w"])
    w = env.a[st.ins["w"]][:, : k * k * cin].reshape(cout, k, k, cin)
    z = np.zeros((ns, a["h_out"], a["w_out"], cout))
    mag = np.zeros_like(z)
    for kh in range(k):
        for kw in range(k):
            sh = _shift(xm, a, kh, kw)
            z += sh @ w[:, kh, kw, :].T
            mag += np.abs(sh) @ np.abs(w[:, kh, kw, :]).T
    if "b" in st.ins:
        b = env.a[st.ins["b"]][0, :cout]
        z += b
        mag += np.abs(b)
    rows = ns * a["h_out"] * a["w_out"]
    return _fw_epilogue(env, st, chunk, h(z.reshape(rows, cout)), mag.reshape(rows, cout), ETA_MM,
                        a["h_out"] * a["w_out"])


def _gap_bw(env, st, chunk, acc):
    a = st.attrs
    c, hw = a["c"], a["hw"]
    g = env.get(st, st.ins["g"], chunk)[:, :c]
    v = h(np.repeat(g, hw, axis=0).astype(np.float32) * np.float32(1.0 / hw))
    if "acc" in st.ins:
        v = h(env.get(st, st.ins["acc"], chunk)[:, :c] + v)
    return {st.outs["dy"]: (v, U * np.abs(v) + 2.0 ** -24)}


def _scale_fw(env, st, chunk, acc):
    a = st.attrs
    c, hw = a["c"], a["hw"]
    x = env.get(st, st.ins["x"], chunk)[:, :c]
    s = env.get(st, st.ins["s"], chunk)[:, :c]
    y = h(x * np.repeat(s, hw, axis=0))
    return {st.outs["y"]: (y, U * np.abs(y) + 2.0 ** -24)}


def _scale_bw(env, st, chunk, acc):
    a = st.attrs
    c, hw = a["c"], a["hw"]
    dy = env.get(st, st.ins["dy"], chunk)[:, :c]
    s = env.get(st, st.ins["s"], chunk)[:, :c]
    x = env.get(st, st.ins["x"], chunk)[:, :c]
    dx = h(dy * np.repeat(s, hw, axis=0))
    ns = dy.shape[0] // hw
    prod = (dy * x).reshape(ns, hw, c)
    ds = h(prod.sum(axis=1))
    return {st.outs["dx"]: (dx, U * np.abs(dx) + 2.0 ** -24),
            st.outs["ds"]: (ds, _tol(ds, np.abs(prod).sum(axis=1), eta=2.0 ** -20))}


def sgd_value(w: np.ndarray, g: np.ndarray, lr: float) -> np.ndarray:
    """w + g * (-lr) with one FP16 rounding (the fused vfmac.h)."""
    return h(w + g * float(np.float16(-lr)))


def sgd_blocks(a: dict) -> list:
    """(weight block, gradient block) index pairs an update touches: the kept block, or for a dense
    convolution the kept input channels of every tap (W [C_out][k k C_in], dW [k_out][k k k_in])."""
    if a["kind"] == "conv":
        k_in, c_in = a["k_in"], a["c_in"]
        return [((slice(0, a["k_out"]), slice(t * c_in, t * c_in + k_in)),
                 (slice(0, a["k_out"]), slice(t * k_in, (t + 1) * k_in))) for t in range(a["k"] ** 2)]
    rows = a["k"] ** 2 if a["kind"] == "dw" else a["k_out"]
    blk = (slice(0, rows), slice(0, a["k_in"]))
    return [(blk, blk)]


def _gather_rows(a, c, src, ns, forward: bool) -> np.ndarray:
    """im2col (forward: one row per output pixel, columns (kh, kw, ci)) or the output gradient gathered
    per input pixel (columns (kh, kw, co): dz at the output pixel the tap maps that input pixel to)."""
    k, s = a["k"], a["stride"]
    left, _, top, _ = a["pad"]
    h, w, ho, wo = a["h"], a["w"], a["h_out"], a["w_out"]
    if forward:
        xm = src.reshape(ns, h, w, -1)[..., :c]
        cols = [_shift(xm, a, kh, kw) for kh in range(k) for kw in range(k)]
        return np.concatenate(cols, axis=3).reshape(ns * ho * wo, k * k * c)
    gm = src.reshape(ns, ho, wo, -1)[..., :c]
    out = np.zeros((ns, h, w, k * k, c))
    for kh in range(k):
        for kw in range(k):
            for ih in range(h):
                th = ih + top - kh
                if th < 0 or th % s or th // s >= ho:
                    continue
                for iw in range(w):
                    tw = iw + left - kw
                    if tw < 0 or tw % s or tw // s >= wo:
                        continue
                    out[:, ih, iw, kh * k + kw] = gm[:, th // s, tw // s]
    return out.reshape(ns * h * w, k * k * c)


def _im2col(env, st, chunk, acc):
    a = st.attrs
    ns = _samples(env, st)
    x = env.get(st, st.ins["x"], chunk)
    col = _gather_rows(a, a["c"], x, ns, True)
    out = {st.outs["col"]: (col, np.zeros_like(col))}
    if a.get("keep"):
        xs = x[:, : a["keep"]]
        out[st.outs["xs"]] = (xs, np.zeros_like(xs))
    return out


def _ig_cols(env, st, chunk, acc):
    a = st.attrs
    dy = env.get(st, st.ins["dy"], chunk)
    col = _gather_rows(a, a["c"], dy, _samples(env, st), False)
    return {st.outs["col"]: (col, np.zeros_like(col))}


def _ig_wt(env, st, chunk, acc):
    """wt[ci][(tap, co)] = W[co][tap C_in + ci] for the kept channels."""
    a = st.attrs
    w = env.a[st.ins["w"]]
    wt = np.concatenate([w[: a["k_out"], t * a["c_in"]: t * a["c_in"] + a["k_in"]].T for t in range(a["kk"])], axis=1)
    return {st.outs["wt"]: (wt, np.zeros_like(wt))}


def _sgd(env, st, chunk, acc):
    a = st.attrs
    out = {}
    w = env.a[st.ins["w"]].copy()
    g = env.a[st.ins["dw"]]
    for (wr, wc), (gr, gc) in sgd_blocks(a):
        w[wr, wc] = sgd_value(w[wr, wc], g[gr, gc], a["lr"])
    out[st.ins["w"]] = (w, np.zeros_like(w))
    if "b" in st.ins:
        b = env.a[st.ins["b"]].copy()
        b[:, : a["k_out"]] = sgd_value(b[:, : a["k_out"]], env.a[st.ins["db"]][:, : a["k_out"]], a["lr"])
        out[st.ins["b"]] = (b, np.zeros_like(b))
    return out


def _latents(env, st, chunk, acc):
    p = env.step.params
    name = st.outs["latent"]
    t = env.step.tensors[name]
    lat = env.a.get(name)
    if lat is None:
        lat = np.zeros((t.rows * p.batch, t.cols))
    lat = lat.copy()
    first = st.attrs.get("first", p.batch_new)
    count = st.attrs.get("count", p.batch_replay)
    rep = env.a[st.ins["replay"]]
    lat[first * t.rows:(first + count) * t.rows] = rep[: count * t.rows]
    return {name: (lat, np.zeros_like(lat))}


def run_step(env: Env) -> Env:
    """The reference of a whole epoch-1 step: every stage of Step.sequence() in order."""
    step = env.step
    for st, chunk in step.sequence():
        acc = st.kind in WG_KINDS and chunk > 0
        run_stage(env, st, step.call_chunk(st, chunk), "acc" if acc else "")
    return env


def rel_error(got: np.ndarray, ref: np.ndarray, scale: np.ndarray | None = None) -> float:
    """||got - ref|| relative to ||ref|| (or to ||scale||, e.g. the sum of |terms| of a gradient whose
    terms cancel)."""
    n = float(np.linalg.norm(ref if scale is None else scale))
    return float(np.linalg.norm(got - ref)) / n if n > 0 else float(np.linalg.norm(got))


