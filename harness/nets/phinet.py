"""PhiNet (micromind's definition) from its hyper-parameters.

Facts (shared/docs/networks.md section 5.1): a separable stem (Keras-style zero pad, 3x3 depthwise
without BN/activation, 1x1 conv + BN + act), block 1 without expansion, then blocks with ids 1..L
whose expansion moves linearly from t0 to beta*t0, channels doubling at the downsampling ids, SE in
every expanded block, residual adds where shapes allow, global average pool and a Linear classifier
with bias. Channel counts are int(c * alpha) rounded by make_divisible(., divisor).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.nets.builder import NetBuilder, make_divisible
from harness.nets.layer import Network

FIRST_CONV_FILTERS = 48
B1_FILTERS = 24
B2_FILTERS = 48
DROPOUT = 0.05  # Dropout2d before every depthwise

DEFAULTS = {"alpha": 1.1, "beta": 0.75, "t0": 5.0, "num_layers": 7, "downsampling_layers": (5, 7),
            "first_conv_stride": 2, "divisor": 1, "squeeze_excite": True, "h_swish": True,
            "residuals": True, "include_top": True}
# Allowed values of each hyper-parameter (harness.nets.registry.check_params): (kind, low, high), numbers
# strictly above `low`, integers from `low`; a width multiplier of 0 or less gives a degenerate network.
PARAMS = {"alpha": ("number", 0.0, 8.0), "beta": ("number", 0.0, 8.0), "t0": ("number", 0.0, 64.0),
          "num_layers": ("int", 1, 64), "downsampling_layers": ("ints", 1, 64), "first_conv_stride": ("int", 1, 4),
          "divisor": ("int", 1, 64), "squeeze_excite": ("bool",), "h_swish": ("bool",), "residuals": ("bool",),
          "include_top": ("bool",)}


@dataclass(frozen=True)
class BlockPlan:
    name: str
    block_id: int | None  # micromind's block_id; None = block 1 (no expansion conv)
    stride: int
    filters: int
    expansion: float
    se: bool


def expansion(t0: float, beta: float, block_id: int, num_layers: int) -> float:
    """t(b) = t0 * [beta * b / L + (L - b) / L], evaluated in micromind's operation order so that
    int(t * C) truncates the same way."""
    return (t0 * beta) * block_id / num_layers + t0 * (num_layers - block_id) / num_layers


def plan(alpha=1.1, beta=0.75, t0=5.0, num_layers=7, downsampling_layers=(5, 7), divisor=1,
         squeeze_excite=True) -> list[BlockPlan]:
    """The block list: names B1.., strides, output channels, expansion factors."""
    def width(c):
        return make_divisible(int(c * alpha), divisor)

    blocks = [BlockPlan("B1", None, 1, width(B1_FILTERS), 1.0, False)]
    # Blocks with ids 1..3 have fixed strides and widths; ids >= 4 follow the downsampling list.
    fixed = ((1, 2, B1_FILTERS), (2, 1, B1_FILTERS), (3, 2, B2_FILTERS))
    for bid, stride, filters in fixed:
        if bid > num_layers:
            break
        blocks.append(BlockPlan(f"B{bid + 1}", bid, stride, width(filters),
                                expansion(t0, beta, bid, num_layers), squeeze_excite))
    filters = B2_FILTERS
    for bid in range(4, num_layers + 1):
        down = bid in downsampling_layers
        if down:
            filters *= 2
        blocks.append(BlockPlan(f"B{bid + 1}", bid, 2 if down else 1, width(filters),
                                expansion(t0, beta, bid, num_layers), squeeze_excite))
    return blocks


def keras_pad(h: int, w: int, kernel: int = 3) -> tuple[int, int, int, int]:
    """Keras' correct_pad: one pixel less on the left/top for even sizes (left, right, top, bottom)."""
    half = kernel // 2
    return (half - (1 - w % 2), half, half - (1 - h % 2), half)


def build(resolution: int, num_classes: int, alpha: float = 1.1, beta: float = 0.75, t0: float = 5.0,
          num_layers: int = 7, downsampling_layers=(5, 7), first_conv_stride: int = 2, divisor: int = 1,
          squeeze_excite: bool = True, h_swish: bool = True, residuals: bool = True,
          include_top: bool = True) -> Network:
    config = {"alpha": alpha, "beta": beta, "t0": t0, "num_layers": num_layers,
              "downsampling_layers": tuple(downsampling_layers), "first_conv_stride": first_conv_stride,
              "divisor": divisor, "squeeze_excite": squeeze_excite, "h_swish": h_swish,
              "residuals": residuals, "include_top": include_top}
    act = "hswish" if h_swish else "relu6"
    title = f"PhiNet alpha={alpha:g} beta={beta:g} t0={t0:g} L={num_layers}"
    b = NetBuilder("phinet", title, resolution, num_classes, config)

    b.begin_block("stem")
    pad = keras_pad(resolution, resolution)
    b.conv("stem.dw", "depthwise", 3, kernel=3, stride=first_conv_stride, pad=pad, groups=3, bn=False,
           note=f"SeparableConv2d dw part, ZeroPad2d{pad}, no BN/act")
    b.conv("stem.pw", "pointwise", make_divisible(int(FIRST_CONV_FILTERS * alpha), divisor), act=act,
           note="SeparableConv2d pw part + BN + act")

    blocks = plan(alpha, beta, t0, num_layers, downsampling_layers, divisor, squeeze_excite)
    for spec in blocks:
        _conv_block(b, spec, act, divisor, residuals)

    if include_top:
        # The pool belongs to the last block so that a classifier-only cut replays the pooled vector.
        b.global_avgpool(f"{blocks[-1].name}.pool")
        b.begin_block("classifier")
        b.linear("classifier", num_classes, bias=True, note="after global avg pool (bias=True)")
    return b.build()


def _conv_block(b: NetBuilder, spec: BlockPlan, act: str, divisor: int, residuals: bool) -> None:
    name = spec.name
    skip = b.begin_block(name)
    c_in = b.shape()[0]
    if spec.block_id is not None:
        hidden = make_divisible(int(spec.expansion * c_in), divisor)
        b.conv(f"{name}.expand", "pointwise", hidden, act=act, note=f"expand {spec.expansion:.4f}")
    else:
        hidden = c_in
    b.dropout(f"{name}.dropout", DROPOUT, "channel")
    # Stride-2 depthwise convs get a symmetric pad of 1 (micromind computes it from a boolean,
    # which yields (1,1,1,1)); stride 1 pads k//2 = 1 as well.
    b.conv(f"{name}.dw", "depthwise", hidden, kernel=3, stride=spec.stride, pad=(1, 1, 1, 1),
           groups=hidden, act=act, note="dropout2d(0.05) before dw in training")
    if spec.se:
        b.squeeze_excite(name, make_divisible(max(1, int(hidden / 6)), divisor), act)
    residual = residuals and spec.stride == 1 and c_in == spec.filters
    b.conv(f"{name}.project", "pointwise", spec.filters, act="none", residual=residual, note="project")
    if residual:
        b.residual_add(f"{name}.add", skip)
