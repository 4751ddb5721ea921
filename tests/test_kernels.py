"""Every kernel kind x step, numerically checked against the NumPy reference: several partialities
(including one that keeps a single channel), odd channel counts, H/W not multiples of the core count,
stride 2, tiled and untiled runs, and bad specs rejected with one-line errors."""
import pytest

from harness.errors import UserError
from harness.kernels import runner
from harness.kernels import spec as specmod
from tests.conftest import needs_clang

pytestmark = needs_clang

P_VALUES = (1.0, 0.9, 0.7, 0.6)

# (kind, cin, cout, h, w, extra)
LAYERS = {
    "pw": ("pw", 21, 35, 5, 3, {}),
    "conv": ("conv", 3, 10, 9, 11, {"k": 3, "stride": 2}),
    "dw": ("dw", 23, 23, 7, 9, {"stride": 2}),
    "dw_s1": ("dw", 17, 17, 6, 5, {"stride": 1}),
    "dw_k5": ("dw", 10, 10, 7, 6, {"k": 5, "stride": 2}),
    "linear": ("linear", 105, 13, 1, 1, {}),
    "linear_batch": ("linear", 105, 13, 1, 7, {}),   # 7 samples: one matrix product
    "dw_s2_even": ("dw", 19, 19, 8, 6, {"stride": 2}),   # the stride-2 input gradient's register-blocked kernel
    "conv_s1": ("conv", 6, 10, 7, 8, {"k": 3, "stride": 1}),   # even channels: pixels read in place
}


def _run(kind, cin, cout, h, w, step, platform="pulp-open", **kw):
    sp = specmod.make(kind, cin, cout, h, w, step, platform=platform, **kw)
    r = runner.run_spec(sp)
    assert r["ok"], (sp.name, r["outputs"])
    assert r["cycles"] > 0 and r["compute_cycles"] > 0
    return r


@pytest.mark.parametrize("step", specmod.STEPS)
@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("p", P_VALUES)
def test_every_kind_and_step(layer, step, p):
    kind, cin, cout, h, w, extra = LAYERS[layer]
    r = _run(kind, cin, cout, h, w, step, p_in=p, **extra)
    sp = specmod.make(kind, cin, cout, h, w, step, p_in=p, **extra)
    assert r["macs"] == sp.macs()
    if step in ("wg", "ig") and p < 1:
        dense = specmod.make(kind, cin, cout, h, w, step, p_in=1.0, **extra)
        assert r["macs"] < dense.macs()


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("step", ("wg", "ig", "update"))
def test_partiality_keeping_one_channel(layer, step):
    kind, cin, cout, h, w, extra = LAYERS[layer]
    p = 0.5 / max(cin, cout)  # rounds to 0 channels, kept at the minimum of 1
    r = _run(kind, cin, cout, h, w, step, p_in=p, **extra)
    assert r["k_in"] == 1 and (kind == "dw" or r["k_out"] == 1)


@pytest.mark.parametrize("step", ("fw", "wg", "ig"))
def test_separate_p_in_and_p_out(step):
    r = _run("pw", 125, 211, 3, 5, step, p_in=0.6, p_out=0.9, platform="paper")
    assert (r["k_in"], r["k_out"]) == (75, 190)


@pytest.mark.parametrize("kind,cin,cout,h,w,step,extra", [
    ("pw", 96, 100, 8, 8, "fw", {}),
    ("pw", 96, 100, 8, 8, "ig", {}),
    ("pw", 64, 64, 16, 16, "wg", {}),
    ("conv", 3, 24, 40, 40, "fw", {"k": 3, "stride": 2}),
    ("conv", 3, 24, 40, 40, "wg", {"k": 3, "stride": 2}),
    ("dw", 144, 144, 16, 16, "fw", {"stride": 2}),
    ("dw", 64, 64, 16, 16, "wg", {}),
    ("linear", 256, 256, 1, 1, "fw", {}),
    ("linear", 256, 256, 1, 1, "ig", {}),
    ("pw", 96, 576, 4, 4, "update", {"p_in": 0.7}),
])
def test_tiled_layers(kind, cin, cout, h, w, step, extra):
    """Working sets larger than pulp-open's L1: several tiles, double-buffered DMA, same numbers."""
    r = _run(kind, cin, cout, h, w, step, **extra)
    assert r["tiles"] > 1
    from harness import platform as platmod
    from harness.kernels.plan import l1_budget

    assert r["l1_bytes"] <= l1_budget(platmod.load("pulp-open"))


@pytest.mark.parametrize("stride,hw,step", [(1, 4, "fw"), (2, 2, "ig"), (1, 4, "wg"), (2, 4, "wg")])
def test_depthwise_with_taps_beyond_a_load_offset(stride, hw, step):
    """393 channels: one tap's weights lie 788 bytes from the next, so taps 3 and beyond are past a
    load's or store's 12-bit offset from tap 0 and the generated routines move their base along."""
    _run("dw", 393, 393, hw, hw, step, platform="paper", stride=stride, p_in=0.7 if step == "ig" else 1.0)


@pytest.mark.parametrize("args,words", [
    (dict(kind="pw", cin=8, cout=8, h=4, w=4, step="fw", p_in=0.0), "partiality p must be in (0, 1]"),
    (dict(kind="pw", cin=8, cout=8, h=4, w=4, step="fw", p_in=1.2), "partiality p must be in (0, 1]"),
    (dict(kind="pw", cin=0, cout=8, h=4, w=4, step="fw"), "--cin must be a positive integer"),
    (dict(kind="conv", cin=3, cout=8, h=2, w=2, step="fw", k=5, pad=0), "larger than the padded input"),
    (dict(kind="dw", cin=8, cout=9, h=4, w=4, step="fw"), "C_in = C_out"),
    (dict(kind="linear", cin=8, cout=9, h=4, w=4, step="fw"), "one vector (--hw 1) or a batch of N samples"),
    (dict(kind="conv2", cin=8, cout=9, h=4, w=4, step="fw"), "unknown kernel kind"),
    (dict(kind="pw", cin=8, cout=9, h=4, w=4, step="bw"), "unknown step"),
])
def test_bad_specs(args, words):
    with pytest.raises(UserError, match=".*") as e:
        specmod.make(**args)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_layer_that_cannot_be_tiled():
    sp = specmod.make("dw", 8, 8, 200, 200, "ig")  # one channel pair of a 200x200 map is more than L1
    with pytest.raises(UserError, match="does not fit: cannot be tiled"):
        runner.run_spec(sp)


def test_tensors_larger_than_l2_are_reported():
    sp = specmod.make("hswish", 125, 125, 64, 64, "ig", platform="paper")  # 3 x 1 MB of activations, 2 MB of L2
    with pytest.raises(UserError, match="does not fit: its tensors need .* KiB of L2"):
        runner.run_spec(sp)


def test_kernel_cli_json_and_exit_codes(capsys):
    import json

    from harness.cli import main

    assert main(["kernel", "--kind", "dw", "--cin", "6", "--cout", "6", "--hw", "5x4", "--stride", "2",
                 "--step", "all", "--p", "0.7", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["step"] for r in rows] == ["fw", "wg", "ig", "update"]
    for r in rows:
        for key in ("step", "cycles", "macs", "mac_per_cycle", "max_abs_err", "ok"):
            assert key in r
        assert r["ok"]
    assert main(["kernel", "--kind", "pw", "--cin", "4", "--cout", "4", "--hw", "2", "--step", "fw",
                 "--p", "0.5", "--p-in", "0.5"]) == 2
    assert "either --p or" in capsys.readouterr().err


def test_a_wrong_kernel_fails_the_check(monkeypatch):
    """The check is real: perturb the reference and the same run must be reported as a mismatch."""
    from harness.kernels import reference

    orig = reference.expected

    def off(spec, ins):
        out = orig(spec, ins)
        y, mag = out["y"]
        out["y"] = (y + 0.01, mag)
        return out
    monkeypatch.setattr(reference, "expected", off)
    sp = specmod.make("pw", 8, 8, 2, 2, "fw")
    assert runner.run_spec(sp)["ok"] is False


OPS_SHAPES = {"relu6": (13, 5, 3), "hswish": (13, 5, 3), "add": (9, 4, 6), "gap": (11, 5, 5), "scale": (7, 6, 3),
              "sigmoid": (37, 1, 1), "ce": (10, 1, 1)}


@pytest.mark.parametrize("op", sorted(OPS_SHAPES))
@pytest.mark.parametrize("step", ("fw", "ig"))
@pytest.mark.parametrize("p", (1.0, 0.7))
def test_operators(op, step, p):
    if op == "ce" and step == "ig":
        pytest.skip("the cross-entropy gradient is one step (fw) from the logits")
    c, h, w = OPS_SHAPES[op]
    r = _run(op, c, c, h, w, step, p_in=p)
    assert r["macs"] == 0


def test_operators_tiled_over_pixels():
    r = _run("hswish", 64, 64, 40, 40, "ig")
    assert r["tiles"] > 1


def test_operator_specs_are_validated():
    with pytest.raises(UserError, match="steps are fw and ig"):
        specmod.make("relu6", 8, 8, 4, 4, "wg")
    with pytest.raises(UserError, match="one vector"):
        specmod.make("sigmoid", 8, 8, 4, 4, "fw")


@pytest.mark.parametrize("kind,step", [("pw", "wg"), ("dw", "fw"), ("linear", "update"), ("scale", "ig")])
def test_output_dump_mode(kind, step, tmp_path):
    """Every kernel ELF prints its outputs (ODL_DUMP), the ELF GVSoC runs too, where memory cannot be read
    back: parsed from stdout they check exactly as when read from memory, bit for bit the same."""
    from harness import platform as platmod
    from harness.backends import embedded
    from harness.kernels import codegen, reference

    c = 9 if kind != "linear" else 20
    h = 1 if kind == "linear" else 3
    sp = specmod.make(kind, c, c if kind != "pw" else 13, h, h, step, p_in=0.7)
    plat = platmod.load("pulp-open")
    ins = reference.make_inputs(sp)
    prog = codegen.generate(sp, plat, ins)
    elf = runner.build_elf(runner.write_sources(prog, tmp_path), tmp_path, plat)
    assert runner.BUILD_DEFINES == ["ODL_DUMP"]
    res = embedded.run(elf, plat)
    assert "ODLOUT" in res["stdout"]
    res["memory"] = runner.parse_dump(res["stdout"], prog)
    assert runner.check(sp, prog, ins, res, "dump")["ok"]
    rows = runner.run_spec_on(sp, ("embedded",), digest=True)
    from harness.kernels.crosscheck import outputs_digest
    assert rows["embedded"]["outputs_sha256"] == outputs_digest(res["memory"], prog.outputs)


def test_placement_moves_external_tensors_with_the_peripheral_dma():
    """method.md's placement: weights, gradients and stored activations go through HyperRAM (or flash
    for a frozen layer) and the transfers are part of the measured cycles."""
    rows = {}
    for placement in ("method", "frozen", "l2"):
        rows[placement] = _run("pw", 32, 40, 6, 6, "fw", platform="paper", placement=placement)
    m, f, l2 = rows["method"], rows["frozen"], rows["l2"]
    assert m["ext_in_cycles"] > 32 * 40 * 2  # the weights came from RAM at about a byte per cycle
    assert m["ext_out_cycles"] > 6 * 6 * 32 * 2 * 0.9  # the stored activations went back
    assert "xs" not in f["outputs"] and f["ext_out_cycles"] < 100
    assert l2["ext_in_cycles"] < 100 and l2["cycles"] < m["cycles"]
    assert m["cycles"] == m["cluster_cycles"] + m["ext_in_cycles"] + m["ext_out_cycles"]
    up = _run("pw", 32, 40, 6, 6, "update", platform="paper", p_in=0.6)
    assert up["ext_in_cycles"] > 0 and up["ext_out_cycles"] > 0


def test_depthwise_forward_row_tiles():
    """A feature map larger than L1 for even one channel pair (PhiNet's 128x128 stem on pulp-open):
    tiles of output rows with their input halo."""
    r = _run("dw", 3, 3, 128, 128, "fw", stride=2, pad=(0, 1, 0, 1), placement="frozen")
    assert r["tiles"] > 3
    r = _run("dw", 4, 4, 100, 100, "fw", stride=1, placement="frozen")
    assert r["tiles"] > 3


@pytest.mark.parametrize("kind,cin,cout,h,w,step,p,platform", [
    ("linear", 1280, 10, 1, 16, "ig", 0.7, "paper"),      # few classes, 16 samples: column chunks of W
    ("linear", 1280, 10, 1, 16, "wg", 1.0, "paper"),      # ... of X, dY^T and the bias gradient made once
    ("pw", 16, 16, 8, 8, "ig", 0.7, "paper"),             # 11 kept channels: an odd chunk's pad lane
    ("pw", 16, 16, 8, 8, "ig", 0.7, "pulp-open"),
    ("pw", 96, 576, 4, 4, "wg", 0.7, "paper"),            # the weight gradient's one fork (transposed C)
    ("pw", 21, 35, 5, 3, "wg", 1.0, "paper"),             # odd chunks of output channels
])
def test_one_fork_column_chunks(kind, cin, cout, h, w, step, p, platform):
    """The products that run in one fork over column chunks (plan_cols / one_fork_cols in gemm.py) take
    that path and give the reference's numbers, pad lanes zero included."""
    sp = specmod.make(kind, cin, cout, h, w, step, p_in=p, platform=platform)
    assert "odl_chunk_t" in runner.prepare(sp).program.c
    _run(kind, cin, cout, h, w, step, p_in=p, platform=platform)


@pytest.mark.parametrize("cin,cout,step,p", [
    (96, 100, "fw", 1.0),     # the weights streaming, 5-row A blocks at even and odd first lanes
    (21, 35, "fw", 1.0),      # a tile of odd width: its pad lane reads the zero row past it
    (45, 37, "fw", 0.7),
    (96, 100, "ig", 1.0),     # W^T streaming, its panels of 5 rows (pairs across panels)
    (96, 200, "ig", 0.7),     # odd kept channels
    (96, 576, "ig", 0.7),     # the transposition split in parts of K
])
def test_trans_blocks_of_five_on_sixteen_pixels(cin, cout, step, p):
    """16 pixels cut only into 4s: the trans products cut the channels into 5s and 4s instead (5x4
    blocks, the lone lane of a 5-row block stored alone), and give the reference's numbers, pad lanes
    zero included."""
    import re

    sp = specmod.make("pw", cin, cout, 4, 4, step, p_in=p, platform="paper")
    c = runner.prepare(sp).program.c
    assert re.search(r"odl_mm5x4_\w+_t(_b)?\(", c) and re.search(r"odl_mm5x4_\w+_t(_b)?_o\(", c)
    if cout == 576:
        assert "odl_units_tk(" in c
    _run("pw", cin, cout, 4, 4, step, p_in=p, platform="paper")


def test_panel_units_pair_columns_across_odd_panels():
    """W^T's panels of 5 rows: a panel's last column pairs with the next panel's first (the second row
    of the unit that many words on), a lone column only where no next panel of that height follows."""
    from harness.kernels.gemm import units_panels

    k2, skew = 3, 4
    tab = units_panels([5, 5, 4], k2, skew)
    units = [tab[i:i + 4] for i in range(0, len(tab), 4)]
    assert [u[0] for u in units] == [0, 2, 4, 6, 8, 10, 12]      # every column once, in pairs
    p1 = (4 * k2 * 5 + skew) // 4                                  # panel 1's first word
    assert units[2] == [4, 1 + p1 - 4, 4, 5]                       # column 4 (panel 0, row 4) with 5 (panel 1, row 0)
    assert units[3] == [6, 2, p1 + 1, 5]
    assert units_panels([4, 4, 2], k2, skew) == [0, 2, 0, 4, 2, 2, 2, 4, 4, 2, 13, 4, 6, 2, 15, 4, 8, 2, 26, 2]
    assert [u[1] for u in [units_panels([5, 4], k2, skew)[i:i + 4] for i in range(0, 16, 4)]] == [2, 2, 1, 2]


def test_transposition_split_evens_the_cores():
    from harness.kernels.gemm import units_split

    assert units_split(20, 576, 8) == 2       # 3 whole units for some cores; 5 halves for each
    assert units_split(16, 576, 8) == 1       # already even
    assert units_split(6, 128, 8) == 1        # too little to save for the split's code


def test_five_row_blocks_only_where_their_registers_fit():
    """5 rows of A more than 2 KiB apart need a pointer each: the trans tile keeps blocks of 4 there
    (a 1280-input classifier over 16 samples), and every routine of both plans assembles."""
    from harness.kernels.mmblock import block_asm
    from harness.kernels.mmplan import Side, Tile

    near = Tile(k2=48, a=Side(rows=40, pitch=196), b=Side(rows=16, skew=4), c_pitch=80, trans=True, odd_a=True)
    far = Tile(k2=640, a=Side(rows=10, pitch=2564), b=Side(rows=16, skew=4), c_pitch=20, trans=True, odd_a=True)
    assert near.blocks_a == [5] * 8 and far.blocks_a == [4, 4, 2] and not far.odd_a
    for k in near.kernels + far.kernels:
        assert block_asm(k)
    _run("linear", 1280, 10, 1, 16, "fw", p_in=0.7, platform="paper")
