"""A small builder that turns a block plan into ops, tracking tensor shapes as it goes.

The network modules (mobilenetv2, phinet) only say *what* the blocks are; shapes, MACs and the op
graph follow from here, so a new width, resolution or class count needs no hand-typed table.
"""
from __future__ import annotations

from harness.nets.layer import Layer, Network, Op


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of `divisor`, never more than 10 % below v.

    This is the rounding both torchvision's MobileNetV2 and micromind's PhiNet apply to channel
    counts; with divisor 1 it is round-half-up.
    """
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def conv_out(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int) -> int:
    return (size + pad_lo + pad_hi - kernel) // stride + 1


class NetBuilder:
    def __init__(self, name: str, title: str, resolution: int, num_classes: int, config: dict,
                 in_channels: int = 3, input_width: int | None = None):
        self.name, self.title = name, title
        self.resolution, self.num_classes, self.config = resolution, num_classes, dict(config)
        width = resolution if input_width is None else input_width
        self.tensors: dict[str, tuple[int, int, int]] = {"input": (in_channels, resolution, width)}
        self.ops: list[Op] = []
        self.blocks: list[str] = []
        self.block = ""
        self.cur = "input"

    # -- structure -------------------------------------------------------------------------
    def begin_block(self, name: str) -> str:
        """Start a block; returns its input tensor (the skip source of a residual)."""
        if name in self.blocks:
            raise ValueError(f"duplicate block {name}")
        self.blocks.append(name)
        self.block = name
        return self.cur

    def shape(self, tensor: str | None = None) -> tuple[int, int, int]:
        return self.tensors[tensor or self.cur]

    def _new_tensor(self, name: str, shape) -> str:
        if name in self.tensors:
            raise ValueError(f"duplicate tensor {name}")
        self.tensors[name] = tuple(shape)
        return name

    # -- weight layers ---------------------------------------------------------------------
    def conv(self, name: str, kind: str, c_out: int, *, kernel: int = 1, stride: int = 1,
             pad=(0, 0, 0, 0), groups: int = 1, bias: bool = False, bn: bool = True,
             act: str = "none", residual: bool | str = False, note: str = "", src: str | None = None) -> str:
        """A weight layer reading `src` (default: the current tensor). `residual`: True for a sum with
        the block input ("add(block_input)"), or the record's text for another skip."""
        src = src or self.cur
        c_in, h, w = self.tensors[src]
        left, right, top, bottom = pad
        h_out = conv_out(h, kernel, stride, top, bottom)
        w_out = conv_out(w, kernel, stride, left, right)
        if h_out < 1 or w_out < 1:
            raise ValueError(f"{name}: input {h}x{w} too small for kernel {kernel} stride {stride}")
        out = self._new_tensor(name, (c_out, h_out, w_out))
        layer = Layer(name=name, kind=kind, block=self.block, c_in=c_in, c_out=c_out, h_in=h, w_in=w,
                      h_out=h_out, w_out=w_out, kernel=kernel, stride=stride, groups=groups,
                      pad=tuple(pad), bias=bias, bn_after=bn, act_after=act,
                      residual=residual if isinstance(residual, str) else ("add(block_input)" if residual else ""),
                      note=note, input=src, output=out)
        self.ops.append(Op(name=name, kind=kind, block=self.block, inputs=(src,), output=out, layer=layer))
        self.cur = out
        return out

    def linear(self, name: str, c_out: int, *, bias: bool = True, note: str = "") -> str:
        c, h, w = self.shape()
        if (h, w) != (1, 1):
            raise ValueError(f"{name}: a linear layer needs a pooled 1x1 input, got {h}x{w}")
        return self.conv(name, "linear", c_out, bias=bias, bn=False, note=note)

    # -- non-weight ops --------------------------------------------------------------------
    def _op(self, name: str, kind: str, inputs: tuple[str, ...], shape, **attrs) -> str:
        out = self._new_tensor(name, shape)
        self.ops.append(Op(name=name, kind=kind, block=self.block, inputs=inputs, output=out, attrs=attrs))
        self.cur = out
        return out

    def dropout(self, name: str, p: float, mode: str) -> str:
        """Identity at inference; a mask in training (mode 'channel' = Dropout2d, 'element')."""
        return self._op(name, "dropout", (self.cur,), self.shape(), p=p, mode=mode)

    def global_avgpool(self, name: str, src: str | None = None) -> str:
        src = src or self.cur
        c, _, _ = self.tensors[src]
        return self._op(name, "global_avgpool", (src,), (c, 1, 1))

    def squeeze_excite(self, prefix: str, reduced: int, act: str) -> str:
        """pool -> 1x1 C->r (act) -> 1x1 r->C (sigmoid) -> channel-wise scale of the input."""
        x = self.cur
        c, h, w = self.shape()
        self.global_avgpool(f"{prefix}.se_pool", src=x)
        self.conv(f"{prefix}.se_reduce", "se_reduce", reduced, bn=False, act=act,
                  note=f"SE: global avgpool({h}x{w}) -> 1x1 conv")
        gate = self.conv(f"{prefix}.se_expand", "se_expand", c, bn=False, act="sigmoid",
                         note=f"SE: sigmoid gate, x * gate (broadcast over {h}x{w})")
        return self._op(f"{prefix}.se_scale", "se_scale", (x, gate), (c, h, w))

    def residual_add(self, name: str, skip: str, main: str | None = None) -> str:
        """main + skip; `main` (default: the current tensor) is the operand the add fuses with."""
        main = main or self.cur
        if self.tensors[skip] != self.tensors[main]:
            raise ValueError(f"{name}: residual shapes differ {self.tensors[skip]} vs {self.tensors[main]}")
        return self._op(name, "add", (main, skip), self.tensors[main])

    def se_scale(self, name: str, x: str, gate: str) -> str:
        """x * gate, the gate one value per channel (a squeeze-excite scale)."""
        return self._op(name, "se_scale", (x, gate), self.tensors[x])

    def build(self) -> Network:
        return Network(name=self.name, title=self.title, resolution=self.resolution,
                       num_classes=self.num_classes, config=self.config, ops=tuple(self.ops),
                       tensors=dict(self.tensors), blocks=tuple(self.blocks))
