"""The channel-rounding rule of structured sparse updates ("partiality").

Kernels, the cost model and the memory model must keep exactly the same number of channels for a
given p, otherwise measured cycles and modelled MACs/bytes describe different computations. So the
rule lives here, once, and everything imports `kept_channels`.
"""
from __future__ import annotations

import numbers
from decimal import ROUND_HALF_UP, Decimal

from harness.errors import UserError


def kept_channels(p: float, channels: int) -> int:
    """Number of channels a layer keeps for partiality p out of `channels`.

    Rule: k = round_half_up(p * C), then clamped to 1 <= k <= C.

    * The kept channels are the contiguous block [0, k) (the first k channels); "structured" means
      whole adjacent channels, so kernels stay dense.
    * Half-way cases round up: p = 0.5, C = 5 keeps 3.
    * The product is evaluated in decimal on the shortest repr of p, so binary float error cannot
      move a value across a rounding boundary (0.7 * 10 is 7, 0.7 * 5 is 3.5 -> 4).
    * At least one channel is always kept, so no layer silently drops out of the backward pass.

    p must be in (0, 1]; channels must be an integer >= 1. Anything else is a UserError.
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise UserError(f"partiality p must be a number in (0, 1], got {p!r}")
    p = float(p)
    if not 0.0 < p <= 1.0:
        raise UserError(f"partiality p must be in (0, 1], got {p}")
    if isinstance(channels, bool) or not isinstance(channels, numbers.Integral) or channels < 1:
        raise UserError(f"channel count must be an integer >= 1, got {channels!r}")
    channels = int(channels)
    exact = Decimal(repr(p)) * channels
    k = int(exact.to_integral_value(rounding=ROUND_HALF_UP))
    return max(1, min(channels, k))
