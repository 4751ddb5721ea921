"""Faults end the run cleanly: non-zero exit status and one stderr line naming the fault, the pc and
the disassembled instruction."""
import re

import pytest

from harness.cli import main
from tests.conftest import needs_clang

pytestmark = needs_clang


def _run_cli(elf, capsys, *extra):
    code = main(["run", str(elf), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_illegal_instruction(build_c, capsys):
    elf = build_c('int main(void){ __asm__ volatile(".word 0xffffffff"); return 0; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and len(err) == 1
    assert "illegal instruction" in err[0]
    assert re.search(r"pc 0x1c[0-9a-f]{6}: ffffffff", err[0])


def test_unmapped_load(build_c, capsys):
    elf = build_c('int main(void){ return *(volatile int*)0x30000000; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and len(err) == 1
    assert "0x30000000" in err[0] and "lw" in err[0] and "pc 0x" in err[0]


def test_unmapped_store(build_c, capsys):
    elf = build_c('int main(void){ *(volatile int*)0x50000010 = 1; return 0; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and "0x50000010" in err[0] and "sw" in err[0]


def test_cycle_limit(build_c, capsys):
    elf = build_c('int main(void){ for (;;) __asm__ volatile("nop"); }')
    code, err = _run_cli(elf, capsys, "--max-cycles", "10000")
    assert code != 0 and len(err) == 1 and "cycle limit" in err[0] and "pc 0x" in err[0]


def test_jump_to_unmapped(build_c, capsys):
    elf = build_c('int main(void){ void (*f)(void) = (void (*)(void))0x40000000; f(); return 0; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and "0x40000000" in err[0]


def test_wfi_forever_is_a_deadlock(build_c, capsys):
    elf = build_c('int main(void){ __asm__ volatile("wfi"); return 0; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and len(err) == 1 and "deadlock" in err[0]


def test_unknown_csr(build_c, capsys):
    elf = build_c('int main(void){ unsigned v; __asm__ volatile("csrr %0, 0x7d0" : "=r"(v)); return v; }')
    code, err = _run_cli(elf, capsys)
    assert code != 0 and "illegal instruction" in err[0] and "0x7d0" in err[0]


def test_fault_json_still_one_object(build_c, capsys):
    import json

    elf = build_c('int main(void){ __asm__ volatile(".word 0xffffffff"); return 0; }')
    code = main(["run", str(elf), "--json"])
    cap = capsys.readouterr()
    obj = json.loads(cap.out)
    assert code != 0 and obj["status"] == "fault" and obj["fault"]["kind"] == "illegal instruction"
    assert obj["exit_code"] is None
