"""Cost model: the rounding rule, hand-computed small cases, and p = 1 against the dense model."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import harness.costmodel as costmodel
import harness.memmodel as memmodel
from harness.errors import UserError
from harness.nets import build_network, cut_at_layer, cut_at_layer_id, cut_points
from harness.nets.builder import NetBuilder
from harness.partial import kept_channels

SWEEP = (1.0, 0.9, 0.8, 0.7, 0.6)


# --- the rounding rule ---------------------------------------------------------------------------

@pytest.mark.parametrize("p,c,k", [
    (0.7, 10, 7),     # 0.7 * 10 is 7.000000000000001 in binary floats
    (0.5, 5, 3),      # half up
    (0.7, 5, 4),      # 3.5 -> 4
    (0.7, 105, 74),   # 73.5 -> 4
    (0.6, 3, 2),
    (0.1, 3, 1),      # 0.3 rounds to 0: at least one channel is kept
    (1.0, 7, 7),
    (0.9, 24, 22),
    (0.6, 125, 75),
    (np.float64(0.7), 10, 7),
    (1, 1, 1),
])
def test_kept_channels_cases(p, c, k):
    assert kept_channels(p, c) == k


def test_kept_channels_matches_exact_decimal_rounding():
    for p in SWEEP + (0.55, 0.65, 0.75, 0.85, 0.95, 0.25):
        exact_p = Fraction(str(p))
        for c in range(1, 1500):
            want = max(1, min(c, math.floor(exact_p * c + Fraction(1, 2))))
            assert kept_channels(p, c) == want, (p, c)


@pytest.mark.parametrize("p", [0, -0.1, 1.5, float("nan"), float("inf"), True, "0.5", None])
def test_kept_channels_rejects_bad_p(p):
    with pytest.raises(UserError, match=r"\(0, 1\]"):
        kept_channels(p, 8)


@pytest.mark.parametrize("c", [0, -3, 2.5, True, "8"])
def test_kept_channels_rejects_bad_channels(c):
    with pytest.raises(UserError, match="channel count"):
        kept_channels(0.5, c)


def test_one_rounding_function_is_shared():
    # The kernel generator imports harness.partial.kept_channels too; the models must not have their own.
    assert costmodel.kept_channels is kept_channels
    assert not hasattr(memmodel, "kept_channels") or memmodel.kept_channels is kept_channels


# --- a hand-computed small network ------------------------------------------------------------

def tiny_net():
    """input 4x4x4 -> pw 4->8 -> dw 3x3 (8) -> pw 8->6 -> pool -> linear 6->3 (bias)."""
    b = NetBuilder("tiny", "tiny", 4, 3, {}, in_channels=4)
    b.begin_block("stem")
    b.conv("stem.pw", "pointwise", 8, act="relu6")
    b.begin_block("b1")
    b.conv("b1.dw", "depthwise", 8, kernel=3, pad=(1, 1, 1, 1), groups=8, act="relu6")
    b.conv("b1.project", "pointwise", 6)
    b.global_avgpool("b1.pool")
    b.begin_block("classifier")
    b.linear("classifier", 3, bias=True)
    return b.build()


def test_hand_computed_small_case():
    net = tiny_net()
    assert [lay.macs for lay in net.layers] == [16 * 4 * 8, 16 * 9 * 8, 16 * 8 * 6, 6 * 3]
    cost = costmodel.training_cost(cut_at_layer_id(net, 3), 0.5)
    by = {c.layer.name: c for c in cost.layers}
    # stem.pw: kept 2 of 4 in, 4 of 8 out; it reads the latent (the image), so no input gradient
    assert (by["stem.pw"].kept_in, by["stem.pw"].kept_out, by["stem.pw"].wg, by["stem.pw"].ig) == (2, 4, 128, 0)
    # depthwise: one p, 4 of 8 channels: 16 * 9 * 4
    assert (by["b1.dw"].kept_in, by["b1.dw"].wg, by["b1.dw"].ig) == (4, 576, 576)
    assert (by["b1.project"].wg, by["b1.project"].ig) == (16 * 4 * 3, 16 * 4 * 3)
    # classifier: always dense
    assert (by["classifier"].p_in, by["classifier"].wg, by["classifier"].ig) == (1.0, 18, 18)
    assert cost.macs_fw_tail == 512 + 1152 + 768 + 18
    assert (cost.macs_wg, cost.macs_ig, cost.macs_bw) == (914, 786, 1700)
    assert cost.macs_fw_head == 0

    head_frozen = costmodel.training_cost(cut_at_layer_id(net, 2), 0.5)
    assert head_frozen.macs_fw_head == 512 and [c.layer.name for c in head_frozen.tail][0] == "b1.dw"
    assert head_frozen.macs_ig == 192 + 18   # b1.dw now reads the latent


def test_p_validated_once():
    with pytest.raises(UserError):
        costmodel.training_cost(cut_at_layer_id(tiny_net(), 1), 0)


# --- p = 1 is the dense model; reference totals ------------------------------------------------

@pytest.mark.parametrize("net", ["mobilenetv2", "phinet"])
@pytest.mark.parametrize("dataset", ["cifar10", "core50"])
def test_p1_reproduces_dense(net, dataset):
    n = build_network(net, dataset)
    for k, _ in cut_points(n):
        cut = cut_at_layer_id(n, k)
        cost = costmodel.training_cost(cut, 1.0)
        first = cut.trainable_layers[0]
        for c in cost.tail:
            assert c.wg == c.fw and c.ig == (0 if c.layer is first else c.fw)
        # the dense convention of the reference CSV's cum_bw_MACs_if_first_trained
        tail_fw = [c.fw for c in cost.tail]
        assert cost.macs_bw == 2 * sum(tail_fw) - tail_fw[0]
        assert cost.macs_fw_tail + cost.macs_fw_head == n.macs


# networks.md section 7: block -> (cum FW MAC M, cum BW MAC M, trainable params k)
SECTION7 = {
    ("mobilenetv2", "cifar10"): {"head": (0.320, 0.333, 320.0), "B15": (0.944, 1.802, 944.2),
                                 "B8": (2.165, 4.274, 1291.1), "stem": (4.253, 8.341, 1341.6)},
    ("mobilenetv2", "core50"): {"classifier": (0.013, 0.013, 12.8), "B17": (9.179, 16.975, 585.7),
                                "B15": (14.916, 28.449, 944.2), "B1": (65.208, 129.532, 1340.9)},
    ("phinet", "cifar10"): {"B8": (0.305, 0.444, 180.9), "B5": (1.429, 2.673, 419.0), "B1": (3.796, 7.471, 460.0)},
    ("phinet", "core50"): {"B8": (4.078, 5.514, 180.9), "B7": (9.908, 17.048, 327.2),
                           "B2": (50.953, 88.593, 458.2), "stem": (59.157, 118.203, 460.2)},
}


@pytest.mark.parametrize("key", list(SECTION7))
def test_tail_costs_match_networks_md(key):
    n = build_network(*key)
    for k, block in cut_points(n):
        if block in SECTION7[key]:
            cost = costmodel.training_cost(cut_at_layer_id(n, k), 1.0)
            params = sum(c.layer.params for c in cost.tail)
            got = (round(cost.macs_fw_tail / 1e6, 3), round(cost.macs_bw / 1e6, 3), round(params / 1e3, 1))
            assert got == SECTION7[key][block], block


def test_partial_scaling_and_depthwise_single_p():
    n = build_network("mobilenetv2", "core50")
    cost = costmodel.training_cost(cut_at_layer_id(n, 5), 0.7)
    by = {c.layer.name: c for c in cost.layers}
    pw = by["B16.expand"]            # 120 -> 720 at 4x4
    assert (pw.kept_in, pw.kept_out) == (84, 504) and pw.wg == 16 * 84 * 504 and pw.fw == 16 * 120 * 720
    dw = by["B16.dw"]
    assert dw.kept_in == dw.kept_out == 504 and dw.wg == 16 * 9 * 504
    assert by["classifier"].wg == by["classifier"].fw
    assert by["B14.project"].trainable is False and by["B14.project"].wg == 0
    dense = costmodel.training_cost(cut_at_layer_id(n, 5), 1.0)
    assert cost.macs_fw_tail == dense.macs_fw_tail
    assert cost.macs_bw < 0.55 * dense.macs_bw   # about p^2 for pointwise layers


def test_se_convs_take_p_and_classifier_stays_dense():
    n = build_network("phinet", "cifar10")
    cost = costmodel.training_cost(cut_at_layer_id(n, 2), 0.6)
    by = {c.layer.name: c for c in cost.layers}
    assert (by["B8.se_reduce"].kept_in, by["B8.se_reduce"].kept_out) == (kept_channels(0.6, 393), kept_channels(0.6, 65))
    assert (by["classifier"].kept_in, by["classifier"].kept_out) == (211, 10)


def test_cut_inside_a_block_keeps_needed_input_gradients():
    n = build_network("phinet", "cifar10")
    cost = costmodel.training_cost(cut_at_layer(n, "B3.se_reduce"), 1.0)
    by = {c.layer.name: c for c in cost.tail}
    # the SE convs read (via the pool) the replayed dw output: no gradient towards it is needed
    assert by["B3.se_reduce"].ig == 0
    assert by["B3.se_expand"].ig > 0 and by["B3.project"].ig > 0
