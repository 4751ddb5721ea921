"""Kernel specs: one layer, one training step, one partiality setting, one platform.

Tensor layouts (every tensor FP16, channels last, the channel pitch rounded up to even so that
two channels fill one 32-bit word; the pad element is zero):

    X   [H][W][cp(C_in)]              input activations (fw)
    Xs  [H][W][cp(k_in)]              stored activations: the first k_in input channels (fw writes, wg reads)
    Y   [H'][W'][cp(C_out)]           output (fw)
    dY  [H'][W'][cp(k_out)]           output gradient, first k_out channels (wg, ig)
    dX  [H][W][cp(k_in)]              input gradient, first k_in channels (ig)
    pw/linear weights  W [C_out][cp(C_in)]
    a linear layer's batch of N samples (--hw 1xN) is X [1][N][cp(C_in)]: the samples are its rows
    conv weights       W [C_out][cp(k*k*C_in)], inner index (kh*k + kw)*C_in + ci
    dw weights         W [k][k][cp(C)]
    dW                 the same layout restricted to the kept block (C_in replaced by k_in, C_out by k_out)
    b, db              [cp(C_out)] / [cp(k_out)]

k_in = kept_channels(p_in, C_in), k_out = kept_channels(p_out, C_out) (harness.partial: the rule shared
with the cost model); depthwise layers take one p for both.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from harness.errors import UserError
from harness.partial import kept_channels

WEIGHT_KINDS = ("conv", "pw", "dw", "linear")
# Operators without weights that the trainable part of the networks needs: activations and their
# derivatives, the residual add, squeeze-excite (global average pool, sigmoid gate, channel scale),
# and the cross-entropy gradient from logits. Their "ig" step is the backward pass.
OPS = ("relu6", "hswish", "sigmoid", "add", "gap", "scale", "ce", "relu")
VECTOR_OPS = ("sigmoid", "ce")
KINDS = WEIGHT_KINDS + OPS
STEPS = ("fw", "wg", "ig", "update")


def cp(c: int) -> int:
    """Channel pitch: rounded up to even."""
    return c + (c & 1)


@dataclass(frozen=True)
class KernelSpec:
    kind: str
    cin: int
    cout: int
    h: int
    w: int
    step: str
    k: int = 1
    stride: int = 1
    pad: tuple = (0, 0, 0, 0)   # left, right, top, bottom
    p_in: float = 1.0
    p_out: float = 1.0
    platform: str = "pulp-open"
    bias: bool = True
    lr: float = 1e-3
    seed: int = 1
    # Where the step's tensors start and end (method.md, "data placement"):
    #   "method"  a trainable layer: weights, gradient accumulators and stored activations in external
    #             RAM, moved by the peripheral DMA; the activations flowing between layers in L2
    #   "frozen"  a frozen layer's forward: weights in flash, no stored activations
    #   "l2"      every tensor already in L2 (kernel efficiency on its own)
    placement: str = "method"

    # ---- derived shapes ----
    @property
    def h_out(self) -> int:
        return (self.h + self.pad[2] + self.pad[3] - self.k) // self.stride + 1

    @property
    def w_out(self) -> int:
        return (self.w + self.pad[0] + self.pad[1] - self.k) // self.stride + 1

    @property
    def k_in(self) -> int:
        return kept_channels(self.p_in, self.cin)

    @property
    def k_out(self) -> int:
        if self.kind == "dw" or self.kind in OPS:
            return self.k_in
        return kept_channels(self.p_out, self.cout)

    def location(self, tensor: str) -> str:
        """'l2', 'ram' or 'flash': where tensor `tensor` of this step lives outside the cluster."""
        if self.placement == "l2" or self.kind in OPS:
            return "l2"
        if tensor in ("w", "b"):
            return "flash" if self.placement == "frozen" else "ram"
        if tensor in ("xs", "dw", "db"):
            return "ram"
        return "l2"

    @property
    def name(self) -> str:
        pad = "" if not any(self.pad) else "_pad" + "-".join(map(str, self.pad))
        geo = f"k{self.k}s{self.stride}{pad}" if self.kind in ("conv", "dw") else ""
        part = f"p{self.p_in:g}" if self.kind == "dw" or self.p_in == self.p_out else f"pi{self.p_in:g}po{self.p_out:g}"
        where = "" if self.placement == "method" or self.kind in OPS else f"_{self.placement}"
        return f"{self.kind}_{self.cin}x{self.cout}_{self.h}x{self.w}_{geo}{'_' if geo else ''}{self.step}_{part}{where}_{self.platform}"

    def macs(self) -> int:
        """MACs of this step (the cost model's formulas, harness/costmodel.py); operators have none."""
        if self.kind in OPS:
            return 0
        spatial = self.h_out * self.w_out * self.k * self.k
        if self.kind == "dw":
            full, part = spatial * self.cin, spatial * self.k_in
        else:
            full, part = spatial * self.cin * self.cout, spatial * self.k_in * self.k_out
        if self.step == "fw":
            return full
        if self.step in ("wg", "ig"):
            return part
        return 0  # update: no MACs (one multiply-add per kept weight, reported separately)

    def update_elements(self) -> int:
        if self.kind == "dw":
            return self.k * self.k * self.k_in + (self.k_in if self.bias else 0)
        return self.k * self.k * self.k_in * self.k_out + (self.k_out if self.bias else 0)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["pad"] = list(self.pad)
        d.update(h_out=self.h_out, w_out=self.w_out, k_in=self.k_in, k_out=self.k_out, macs=self.macs())
        return d


def make(kind: str, cin: int, cout: int, h: int, w: int, step: str, k: int | None = None, stride: int = 1,
         pad: int | tuple | None = None, p_in: float = 1.0, p_out: float | None = None,
         platform: str = "pulp-open", **kw) -> KernelSpec:
    """Build and validate a spec; bad values raise a one-line UserError naming the problem."""
    if kind not in KINDS:
        raise UserError(f"unknown kernel kind '{kind}'; choose one of: {', '.join(KINDS)}")
    if step not in STEPS:
        raise UserError(f"unknown step '{step}'; choose one of: {', '.join(STEPS)}, all")
    if kind in OPS:
        if step not in ("fw", "ig"):
            raise UserError(f"'{kind}' has no weights: its steps are fw and ig (the backward pass)")
        if cout != cin:
            raise UserError(f"'{kind}' keeps its channels: give --cout {cin}")
        if kind in VECTOR_OPS and (h, w) != (1, 1):
            raise UserError(f"'{kind}' works on one vector: use --hw 1 (got {h}x{w})")
        if k not in (None, 1) or stride != 1 or pad not in (None, 0, (0, 0, 0, 0)):
            raise UserError(f"'{kind}' takes no kernel size, stride or padding")
        if p_out is not None and p_out != p_in:
            raise UserError(f"'{kind}' takes one partiality: use --p")
        for name, v in (("--cin", cin), ("--hw (height)", h), ("--hw (width)", w)):
            if not isinstance(v, int) or v < 1:
                raise UserError(f"{name} must be a positive integer, got {v!r}")
        if kind == "ce" and cin > 64:
            raise UserError(f"'ce' supports at most 64 classes, got {cin}")
        spec = KernelSpec(kind=kind, cin=cin, cout=cin, h=h, w=w, step=step, k=1, stride=1, pad=(0, 0, 0, 0),
                          p_in=p_in, p_out=p_in, platform=platform, **kw)
        spec.k_in
        return spec
    for name, v in (("--cin", cin), ("--cout", cout), ("--hw (height)", h), ("--hw (width)", w)):
        if not isinstance(v, int) or v < 1:
            raise UserError(f"{name} must be a positive integer, got {v!r}")
    if kind in ("pw", "linear"):
        if k not in (None, 1):
            raise UserError(f"a {kind} layer has a 1x1 kernel; drop --k {k}")
        k = 1
        if stride != 1:
            raise UserError(f"a {kind} layer has stride 1; drop --stride {stride}")
        if pad not in (None, 0, (0, 0, 0, 0)):
            raise UserError(f"a {kind} layer has no padding; drop --pad")
        pad = (0, 0, 0, 0)
        if kind == "linear" and h != 1:
            raise UserError(f"a linear layer works on one vector (--hw 1) or a batch of N samples (--hw 1xN), "
                            f"got {h}x{w}")
    else:
        k = 3 if k is None else k
        if not isinstance(k, int) or k < 1:
            raise UserError(f"--k must be a positive integer, got {k!r}")
        if pad is None:
            pad = (k // 2,) * 4
        elif isinstance(pad, int) and not isinstance(pad, bool):
            pad = (pad,) * 4
        if not (isinstance(pad, (tuple, list)) and len(pad) == 4
                and all(isinstance(p, int) and not isinstance(p, bool) for p in pad)):
            raise UserError(f"--pad must be one integer or four (left, right, top, bottom), got {pad!r}")
        if any(p < 0 or p >= k for p in pad):
            raise UserError(f"--pad {pad} is not smaller than the kernel size {k}")
    if not isinstance(stride, int) or stride < 1:
        raise UserError(f"--stride must be a positive integer, got {stride!r}")
    if kind == "dw" and cin != cout:
        raise UserError(f"a depthwise layer has C_in = C_out (got --cin {cin} --cout {cout})")
    if p_out is None:
        p_out = p_in
    if kind == "dw" and p_out != p_in:
        raise UserError("a depthwise layer takes one partiality: use --p")
    placement = kw.get("placement", "method")
    if placement not in ("method", "frozen", "l2"):
        raise UserError(f"unknown placement '{placement}'; choose method, frozen or l2")
    if placement == "frozen" and step != "fw":
        raise UserError("a frozen layer runs only its forward step (fw)")
    spec = KernelSpec(kind=kind, cin=cin, cout=cout, h=h, w=w, step=step, k=k, stride=stride, pad=tuple(pad),
                      p_in=p_in, p_out=p_out, platform=platform, **kw)
    if k > h + spec.pad[2] + spec.pad[3] or k > w + spec.pad[0] + spec.pad[1]:
        raise UserError(f"kernel {k}x{k} is larger than the padded input {h}x{w}")
    if spec.h_out < 1 or spec.w_out < 1:
        raise UserError(f"no output pixels: input {h}x{w}, kernel {k}, stride {stride}")
    spec.k_in, spec.k_out  # validates p through kept_channels
    return spec
