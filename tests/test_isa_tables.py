"""The ISA loader (harness/isa/model.py) rejects a bad table with a message naming the file and
entry: each case copies isa/ into a temporary directory, breaks one thing, and loads it."""
from __future__ import annotations

import shutil

import pytest

from harness.isa import model

GOOD_INSN = '''
[[insn]]
name = "p.test"
enc = "0000000 ----- ----- 000 ----- 1110111"
ops = "rd rs1 rs2"
asm = "{rd}, {rs1}, {rs2}"
timing = "alu"
sem = "WRD(RS1 + RS2);"
'''


@pytest.fixture
def isa_copy(tmp_path):
    d = tmp_path / "isa"
    shutil.copytree(model.ISA_DIR, d)
    return d


def _extra(d, text, ext="xtest"):
    (d / f"{ext}.toml").write_text(f'ext = "{ext}"\n' + text)


def test_the_shipped_tables_load():
    isa = model.load()
    assert len(isa.insns) > 200 and set(isa.timing.classes) >= {"alu", "load", "fpu"}
    assert isa.csr("pcer") == isa.pulp_csrs["pcer"] and isa.csr("mstatus") in isa.csrs
    assert isa.counters.core["cycles"] == 0 and isa.switches() == {"xpulp": "xpulp", "xfvec": "fp16_simd"}


@pytest.mark.parametrize("change,words", [
    (lambda t: t.replace('timing = "alu"', 'timing = "warp"'), ["xtest.toml:p.test", "timing must be one of"]),
    (lambda t: t.replace('sem = "WRD(RS1 + RS2);"\n', ""), ["xtest.toml:p.test", "missing 'sem'"]),
    (lambda t: t.replace('ops = "rd rs1 rs2"', 'ops = "rd rs1 rs2"\ncolour = "red"'), ["unknown key 'colour'"]),
    (lambda t: t.replace("0000000 ----- ----- 000 ----- 1110111", "0000000 ----- ----- 000 ----- 11101"),
     ["enc must be 16 or 32"]),
    (lambda t: t.replace("0000000 ----- ----- 000 ----- 1110111", "0000000 ----- ----- 000 ----- 1110110"),
     ["must end in 11"]),
    (lambda t: t.replace('ops = "rd rs1 rs2"', 'ops = "rd rs1"'), ["not covered by an operand"]),
    (lambda t: t.replace('ops = "rd rs1 rs2"', 'ops = "rd rs1 rs2 nope"'), ["unknown field 'nope'"]),
    (lambda t: t.replace('ops = "rd rs1 rs2"', 'ops = "rd rs1 rs2 rs1"'), ["overlaps another operand"]),
    (lambda t: t.replace('asm = "{rd}, {rs1}, {rs2}"', 'asm = "{rd}, {rs3}"'), ["asm refers to 'rs3'"]),
    (lambda t: t + GOOD_INSN.replace("p.test", "p.twin"), ["same encoding as"]),
    (lambda t: t + GOOD_INSN.replace("0000000 ---", "0000001 ---"), ["duplicate instruction id"]),
    (lambda t: 'enabled_by = "Not A Key"\n' + t, ["enabled_by names a key"]),
])
def test_bad_instruction_entry(isa_copy, change, words):
    _extra(isa_copy, change(GOOD_INSN))
    with pytest.raises(model.IsaError) as e:
        model.load(isa_copy)
    assert all(w in str(e.value) for w in words), str(e.value)


@pytest.mark.parametrize("file,old,new,words", [
    ("timing.toml", 'keys = ["mul", "mul_use"]', 'keys = ["mul", "mul_usage"]',
     ["class.mul", "'mul_usage' is not listed"]),
    ("timing.toml", 'fdiv_claim(t_fdiv_h); fdiv_done(t_fdiv_h);"', 'fdiv_claim(t_fdiv_h); fdiv_done(t_fdiv_s);"',
     ["class.fdiv_h", "cost reads t_fdiv_s"]),
    ("timing.toml", 'issue = "if (t_fpu_claim == TIMING_FPU_CLAIM_ISSUE) fdiv_claim(t_fdiv_h);"',
     'issue = "if (t_fpu_claim == TIMING_FPU_CLAIM_ISSUE) fdiv_claim(t_fdiv_s);"',
     ["class.fdiv_h", "issue reads t_fdiv_s"]),
    ("timing.toml", '[class.hwloop]\nkeys = ["hwloop_overhead"]', '[class.hwloop]',
     ["hwloop_overhead", "belongs to no class"]),
    ("timing.toml", 'private = "own_fpu"', 'private = "sometimes"', ["class.fpu", "private must be"]),
    ("counters.toml", "tcdm_cont = 16", "tcdm_cont = 40", ["cluster.tcdm_cont", "0 to 31"]),
    ("counters.toml", "apu_cont = 14", "apu_cont = 2", ["fc", "index 2 is already"]),
    ("csrs.toml", "pcer = 0xCC0", "pcer = 0x300", ["pulp.pcer", "already named 'mstatus'"]),
    ("csrs.toml", "misa = 0x40000000", "misb = 0x40000000", ["values.misb", "no CSR"]),
    ("fields.toml", None, None, ["fields.toml", "missing from"]),
])
def test_bad_data_file(isa_copy, file, old, new, words):
    path = isa_copy / file
    if old is None:
        path.unlink()
    else:
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    with pytest.raises(model.IsaError) as e:
        model.load(isa_copy)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_a_file_that_is_not_toml(isa_copy):
    (isa_copy / "xtest.toml").write_text("ext = \n")
    with pytest.raises(model.IsaError, match="xtest.toml: not valid TOML"):
        model.load(isa_copy)
