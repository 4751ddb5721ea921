"""Network builders against shared/docs/networks.md and the independently computed reference CSVs."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.nets import (build_network, cut_at_layer, cut_at_layer_id, cut_points, layer_rows, max_layer_id,
                          resolve_cut)
from harness.nets.phinet import build as build_phinet
from harness.nets.phinet import expansion, keras_pad

from tests.shared_data import SHARED  # noqa: E402
NETDATA = SHARED / "data" / "networks"
CSVS = {"mobilenetv2": "mobilenetv2_a075.csv", "phinet": "phinet_a1.1_b0.75_t05.csv"}


def reference(net: str) -> list[dict]:
    path = NETDATA / CSVS[net]
    if not path.exists():
        pytest.skip(f"reference CSV {path} not found (set PULP_ODL_SHARED to the shared/ directory)")
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("net", ["mobilenetv2", "phinet"])
@pytest.mark.parametrize("resolution", [32, 128])
def test_layers_match_reference_csv(net, resolution):
    ref = [r for r in reference(net) if int(r["resolution"]) == resolution]
    rows = layer_rows(build_network(net, resolution=resolution, num_classes=10))
    assert len(rows) == len(ref)
    for mine, theirs in zip(rows, ref):
        for col, want in theirs.items():
            if col == "note":  # free text
                continue
            assert str(mine[col]) == want, f"{net}@{resolution} {mine['name']} column {col}"


@pytest.mark.parametrize("net,dataset,resolution", [("mobilenetv2", "cifar10", 32), ("phinet", "core50", 128)])
def test_dataset_sets_resolution_and_classes(net, dataset, resolution):
    n = build_network(net, dataset)
    assert (n.resolution, n.num_classes) == (resolution, 10)
    assert n.layers[-1].c_out == 10


# networks.md section 3: (FW MAC M, params M, BN params M, torchinfo MAC M, torchinfo params M)
TOTALS = {
    ("mobilenetv2", 32, 10): (4.253, 1.342, 0.027, 4.280, 1.368),
    ("mobilenetv2", 128, 10): (67.863, 1.342, 0.027, 67.889, 1.368),
    ("mobilenetv2", 224, 10): (207.803, 1.342, 0.027, 207.829, 1.368),
    ("mobilenetv2", 224, 1000): (209.070, 2.610, 0.027, 209.097, 2.636),
    ("phinet", 32, 10): (3.842, 0.460, 0.008, 3.850, 0.468),
    ("phinet", 128, 10): (59.157, 0.460, 0.008, 59.165, 0.468),
    ("phinet", 224, 10): (180.849, 0.460, 0.008, 180.857, 0.468),
    ("phinet", 224, 1000): (181.058, 0.670, 0.008, 181.067, 0.678),
}


@pytest.mark.parametrize("key", list(TOTALS))
def test_totals(key):
    net, res, classes = key
    n = build_network(net, resolution=res, num_classes=classes)
    got = tuple(round(v / 1e6, 3) for v in (n.macs, n.params, n.bn_params, n.torchinfo_macs, n.torchinfo_params))
    assert got == TOTALS[key]


def test_upstream_validation_points():
    # micromind's docstring for the default PhiNet((3, 224, 224)), no top, torchinfo-style
    n = build_phinet(224, 1000, alpha=0.2, beta=1.0, t0=6, include_top=False)
    assert (n.torchinfo_macs, n.torchinfo_params) == (9_817_670, 30_917)
    # torchvision MobileNetV2-1.0 parameter count including BN
    m = build_network("mobilenetv2", resolution=224, num_classes=1000, width=1.0)
    assert m.torchinfo_params == 3_504_872
    assert round(m.macs / 1e6, 1) == 300.8


def test_layer_type_counts():
    kinds = lambda n: [lay.kind for lay in n.layers]  # noqa: E731
    m = kinds(build_network("mobilenetv2", "cifar10"))
    assert (len(m), m.count("conv3x3"), m.count("depthwise"), m.count("pointwise"), m.count("linear")) == \
        (53, 1, 17, 34, 1)
    p = kinds(build_network("phinet", "cifar10"))
    se = p.count("se_reduce") + p.count("se_expand")
    assert (len(p), p.count("depthwise"), p.count("pointwise"), se, p.count("linear")) == (40, 9, 16, 14, 1)


def test_residual_blocks():
    def residual(net):
        return sorted({op.block for op in build_network(net, "core50").ops if op.kind == "add"},
                      key=lambda b: int(b[1:]))
    assert residual("mobilenetv2") == ["B3", "B5", "B6", "B8", "B9", "B10", "B12", "B13", "B15", "B16"]
    assert residual("phinet") == ["B3", "B5", "B7"]
    n = build_network("mobilenetv2", "core50")
    add = n.ops[n.op_index("B15.add")]
    assert add.inputs == ("B15.project", "B14.project")


def test_spatial_sizes_at_32():
    n = build_network("mobilenetv2", "cifar10")
    assert (n.layer("B14.dw").h_in, n.layer("B14.dw").h_out) == (2, 1)
    assert n.layer("B7.dw").h_out == 2 and n.layer("head.conv").h_in == 1
    p = build_network("phinet", "cifar10")
    sizes = {b: p.block_layers(b)[-1].h_out for b in ("stem", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8")}
    assert sizes == {"stem": 16, "B1": 16, "B2": 8, "B3": 8, "B4": 4, "B5": 4, "B6": 2, "B7": 2, "B8": 1}


def test_phinet_expansion_and_pads():
    got = [round(expansion(5, 0.75, b, 7), 3) for b in range(1, 8)]
    assert got == [4.821, 4.643, 4.464, 4.286, 4.107, 3.929, 3.750]
    assert keras_pad(32, 32) == (0, 1, 0, 1) and keras_pad(33, 33) == (1, 1, 1, 1)
    n = build_network("phinet", "core50")
    assert n.layer("stem.dw").pad == (0, 1, 0, 1) and n.layer("stem.dw").h_out == 64
    assert not n.layer("stem.dw").bn_after and n.layer("stem.dw").act_after == "none"


def test_phinet_divisor_8_channels():
    # networks.md section 5.1, last column
    n = build_phinet(128, 10, divisor=8)
    chans = {}
    for b in ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"):
        lays = [lay for lay in n.block_layers(b) if not lay.kind.startswith("se_")]
        chans[b] = tuple([lays[0].c_in] + [lay.c_out for lay in lays if lay.kind != "depthwise"])
    assert n.layer("stem.pw").c_out == 56
    assert chans == {"B1": (56, 24), "B2": (24, 112, 24), "B3": (24, 112, 24), "B4": (24, 104, 56),
                     "B5": (56, 240, 56), "B6": (56, 232, 104), "B7": (104, 408, 104), "B8": (104, 392, 208)}
    assert n.layer("classifier").c_in == 208


def test_se_structure_ops():
    n = build_network("phinet", "cifar10")
    b2 = [(op.name, op.kind) for op in n.ops if op.block == "B2"]
    assert b2 == [("B2.expand", "pointwise"), ("B2.dropout", "dropout"), ("B2.dw", "depthwise"),
                  ("B2.se_pool", "global_avgpool"), ("B2.se_reduce", "se_reduce"), ("B2.se_expand", "se_expand"),
                  ("B2.se_scale", "se_scale"), ("B2.project", "pointwise")]
    scale = n.ops[n.op_index("B2.se_scale")]
    assert scale.inputs == ("B2.dw", "B2.se_expand")
    assert n.layer("B2.se_reduce").c_out == 20 and n.layer("B2.se_reduce").act_after == "hswish"
    assert n.layer("B2.se_expand").act_after == "sigmoid"


def test_other_widths_and_resolutions_by_parameter():
    n = build_network("mobilenetv2", resolution=96, num_classes=5, width=1.0)
    assert n.layer("stem.conv").c_out == 32 and n.layer("classifier").c_out == 5
    assert n.layer("head.conv").h_in == 3
    p = build_network("phinet", "core50", num_layers=8)
    assert p.blocks[-2] == "B9"
    assert round(p.macs / 1e6, 1) == 65.6   # networks.md section 4: L=8 at 128 px, 10 classes
    assert round(p.params / 1e6, 2) == 1.03


def test_bad_names_are_user_errors():
    with pytest.raises(UserError, match="choose one of: mobilenetv2, phinet"):
        build_network("resnet", "cifar10")
    with pytest.raises(UserError, match="choose one of: cifar10, core50"):
        build_network("phinet", "imagenet")
    with pytest.raises(UserError, match="valid: alpha"):
        build_network("phinet", "cifar10", width=2)
    with pytest.raises(UserError, match="positive integer"):
        build_network("phinet", resolution=0, num_classes=10)
    with pytest.raises(UserError, match="positive integer"):
        build_network("phinet", "cifar10", num_classes=-1)


# --- replay cut points -------------------------------------------------------------------------

def test_layer_id_semantics_mobilenetv2():
    n = build_network("mobilenetv2", "core50")
    assert max_layer_id(n) == 20
    assert [lay.name for lay in cut_at_layer_id(n, 1).trainable_layers] == ["classifier"]
    assert [lay.name for lay in cut_at_layer_id(n, 2).trainable_layers] == ["head.conv", "classifier"]
    c5 = cut_at_layer_id(n, 5)
    assert c5.first_block == "B15" and c5.trainable_layers[0].name == "B15.expand"
    assert len(c5.trainable_layers) == 11
    assert cut_points(n)[:3] == [(1, "classifier"), (2, "head"), (3, "B17")]
    whole = cut_at_layer_id(n, 20)
    assert whole.latent_tensors == ("input",) and not whole.frozen_layers


def test_layer_id_semantics_phinet():
    n = build_network("phinet", "cifar10")
    assert max_layer_id(n) == 10
    assert cut_at_layer_id(n, 2).first_block == "B8"
    c9 = cut_at_layer_id(n, 9)
    assert c9.first_block == "B1" and c9.latent_tensors == ("stem.pw",)


# networks.md section 7: block -> (idx of block's first layer, latent elements)
LATENT = {
    ("mobilenetv2", 32): {"classifier": (1, 1280), "head": (2, 240), "B17": (5, 120), "B15": (11, 120),
                          "B14": (14, 288), "B11": (23, 192), "B7": (35, 384), "B4": (44, 1536),
                          "B2": (50, 4096), "B1": (52, 6144), "stem": (53, 3072)},
    ("mobilenetv2", 128): {"classifier": (1, 1280), "head": (2, 3840), "B17": (5, 1920), "B14": (14, 4608),
                           "B8": (32, 3072), "B5": (41, 6144), "B3": (47, 24576), "B1": (52, 98304),
                           "stem": (53, 49152)},
    ("phinet", 32): {"classifier": (1, 211), "B8": (6, 420), "B7": (11, 420), "B6": (16, 832),
                     "B5": (21, 832), "B4": (26, 1664), "B3": (31, 1664), "B2": (36, 6656),
                     "B1": (38, 13312), "stem": (40, 3072)},
    ("phinet", 128): {"classifier": (1, 211), "B8": (6, 6720), "B6": (16, 13312), "B4": (26, 26624),
                      "B2": (36, 106496), "B1": (38, 212992), "stem": (40, 49152)},
}


@pytest.mark.parametrize("key", list(LATENT))
def test_latent_at_block_cuts(key):
    net, res = key
    n = build_network(net, resolution=res, num_classes=10)
    for k, block in cut_points(n):
        if block not in LATENT[key]:
            continue
        idx, elems = LATENT[key][block]
        cut = cut_at_layer_id(n, k)
        assert n.idx_from_classifier(cut.trainable_layers[0]) == idx, block
        assert cut.latent_elems == elems, block
        assert not cut.needs_input_grad(cut.trainable_layers[0])


def test_cut_by_layer_name():
    n = build_network("mobilenetv2", "cifar10")
    by_name = cut_at_layer(n, "B15.expand")
    assert by_name.start == cut_at_layer_id(n, 5).start and by_name.layer_id == 5
    inner = cut_at_layer(n, "B16.dw")   # inside a residual block: the skip source is replayed too
    assert inner.layer_id is None and set(inner.latent_tensors) == {"B16.expand", "B15.add"}
    p = build_network("phinet", "cifar10")
    assert cut_at_layer(p, "B1.dw").layer_id == 9   # the dropout before it goes with it
    se = cut_at_layer(p, "B3.se_reduce")
    assert se.trainable_ops[0].name == "B3.se_pool"
    assert set(se.latent_tensors) == {"B3.dw", "B2.project"}
    assert resolve_cut(p, layer="classifier").layer_id == 1


def test_cut_errors():
    n = build_network("phinet", "cifar10")
    with pytest.raises(UserError, match="from 1 to 10"):
        cut_at_layer_id(n, 11)
    with pytest.raises(UserError, match="from 1 to 10"):
        cut_at_layer_id(n, 0)
    with pytest.raises(UserError, match="valid names: stem.dw"):
        cut_at_layer(n, "B9.dw")
    with pytest.raises(UserError, match="exactly one"):
        resolve_cut(n)
