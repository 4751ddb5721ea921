"""MobileNetV2 (torchvision's definition) from its stage table.

Facts (shared/docs/networks.md section 5.2): stem 3x3/s2 conv, 17 inverted-residual blocks from the
(t, c, n, s) table with c scaled by the width and rounded to multiples of 8, a last 1x1 conv kept at
1280 channels for widths <= 1, global average pool, dropout 0.2 and a Linear classifier with bias.
No conv has a bias; every conv is followed by BN. The same strides are used at every resolution
(no CIFAR-specific stem).
"""
from __future__ import annotations

from harness.nets.builder import NetBuilder, make_divisible
from harness.nets.layer import Network

# (expansion t, output channels c at width 1, repeats n, stride of the first repeat s)
STAGES: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
STEM_CHANNELS = 32
LAST_CHANNELS = 1280

DEFAULTS = {"width": 0.75, "round_nearest": 8, "dropout": 0.2}
# Allowed values (harness.nets.registry.check_params): numbers strictly above `low`, except dropout.
PARAMS = {"width": ("number", 0.0, 8.0), "round_nearest": ("int", 1, 64), "dropout": ("fraction",)}


def build(resolution: int, num_classes: int, width: float = 0.75, round_nearest: int = 8,
          dropout: float = 0.2, stages=STAGES) -> Network:
    config = {"width": width, "round_nearest": round_nearest, "dropout": dropout}
    b = NetBuilder("mobilenetv2", f"MobileNetV2 x{width:g}", resolution, num_classes, config)

    b.begin_block("stem")
    b.conv("stem.conv", "conv3x3", make_divisible(STEM_CHANNELS * width, round_nearest),
           kernel=3, stride=2, pad=(1, 1, 1, 1), act="relu6")

    index = 0
    for t, c, n, s in stages:
        c_out = make_divisible(c * width, round_nearest)
        for repeat in range(n):
            index += 1
            _inverted_residual(b, f"B{index}", t, c_out, s if repeat == 0 else 1)

    # torchvision keeps the last conv at 1280 for width <= 1 (it scales by max(1, width)).
    b.begin_block("head")
    b.conv("head.conv", "pointwise", make_divisible(LAST_CHANNELS * max(1.0, width), round_nearest),
           act="relu6", note="last 1x1 conv; then global avgpool")
    # The pool sits in the head block so that a classifier-only cut replays the pooled vector.
    b.global_avgpool("head.pool")

    b.begin_block("classifier")
    b.dropout("classifier.dropout", dropout, "element")
    b.linear("classifier", num_classes, bias=True,
             note=f"after global avg pool (+dropout {dropout:g} in training)")
    return b.build()


def _inverted_residual(b: NetBuilder, name: str, t: int, c_out: int, stride: int) -> None:
    skip = b.begin_block(name)
    c_in = b.shape()[0]
    hidden = int(round(c_in * t))
    if t != 1:
        b.conv(f"{name}.expand", "pointwise", hidden, act="relu6", note=f"expand t={t}")
    b.conv(f"{name}.dw", "depthwise", hidden, kernel=3, stride=stride, pad=(1, 1, 1, 1), groups=hidden,
           act="relu6")
    residual = stride == 1 and c_in == c_out
    b.conv(f"{name}.project", "pointwise", c_out, act="none", residual=residual,
           note="project (linear bottleneck)")
    if residual:
        b.residual_add(f"{name}.add", skip)
