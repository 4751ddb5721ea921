"""End to end: build a C program with integer, FP32 and FP16 work, run it, check output, exit code,
the JSON schema, and that cycle counts are deterministic."""
import json
import subprocess
import sys

import pytest

from harness import ROOT
from harness.cli import main
from tests.conftest import needs_clang

pytestmark = needs_clang

HELLO = (ROOT / "examples" / "hello.c").read_text()


def test_example_output_and_exit_code(build_c, run_elf):
    r = run_elf(build_c(HELLO))
    assert r["status"] == "exit" and r["exit_code"] == 7
    out = r["stdout"]
    assert "sum of squares 1..100 = 338350" in out
    # 1.5^2 + 2.25^2 + 3^2 + 0.125^2 = 16.328125 ; sqrt = 4.0408...
    assert "fp32 dot = 16328/1000, sqrt = 4040/1000" in out
    # 0.25 + 1.5625 + 9 + 4 = 14.8125 in fp16 arithmetic
    assert "fp16 dot = 14812/1000" in out
    assert "measured" in out and r["cycles"] > r["instructions"] > 0


def test_same_elf_same_cycles(build_c, run_elf):
    elf = build_c(HELLO)
    runs = [run_elf(elf) for _ in range(3)]
    assert len({(r["cycles"], r["instructions"], json.dumps(r["stalls"], sort_keys=True)) for r in runs}) == 1


def test_same_cycles_in_a_fresh_process(build_c, run_elf):
    elf = build_c(HELLO)
    here = run_elf(elf)["cycles"]
    out = subprocess.run([sys.executable, "-m", "harness", "run", str(elf), "--json"], capture_output=True, text=True,
                         cwd=ROOT)
    assert json.loads(out.stdout)["cycles"] == here


def test_run_json_is_one_object(build_c, capsys):
    elf = build_c(HELLO)
    code = main(["run", str(elf), "--json"])
    out = capsys.readouterr().out
    obj = json.loads(out)  # exactly one JSON document and nothing else
    assert code == 7
    for key in ("cycles", "instructions", "exit_code", "stdout", "stalls", "host_seconds", "mips"):
        assert key in obj
    assert obj["exit_code"] == 7 and "338350" in obj["stdout"]
    assert isinstance(obj["stalls"], dict) and obj["stalls"]["fetch"] > 0


def test_run_stdout_is_exactly_the_program_output(build_c, run_elf, capsys):
    elf = build_c(HELLO)
    program = run_elf(elf)["stdout"]
    assert main(["run", str(elf)]) == 7
    out, err = capsys.readouterr()
    assert out == program and err == ""
    # --report: the cycle report follows on stderr; stdout is unchanged
    assert main(["run", str(elf), "--report"]) == 7
    out, err = capsys.readouterr()
    assert out == program
    assert "cycle report" in err and "cycles" in err and "IPC" in err and "stall" in err


def test_fp_compiles_to_fpu_instructions(build_c):
    from harness.commands.disasm import lines

    text = "\n".join(t for _, _, _, t in lines(build_c(HELLO)))
    assert "fsqrt.s" in text  # __builtin_sqrtf
    assert "fmul.s" in text or "fmadd.s" in text
    assert "fmul.h" in text or "fmadd.h" in text  # _Float16 arithmetic
    assert "fcvt.s.h" in text
    assert "__" not in text  # no soft-float or libm calls in the disassembly text


@pytest.mark.parametrize("ret,status", [(0, 0), (1, 1), (255, 255), (-1, 255)])
def test_exit_code_is_main_return(build_c, run_elf, ret, status):
    from harness.commands.run import exit_status

    r = run_elf(build_c(f"int main(void) {{ return {ret}; }}"))
    assert r["exit_code"] == ret
    assert exit_status(r) == status


def test_printf_formats(build_c, run_elf):
    src = r'''
#include <pmsis.h>
int main(void) {
  printf("[%d][%i][%u][%x][%X][%c][%s][%p][%%]\n", -12, 34, 4000000000u, 0xbeef, 0xbeef, 'q', "hi", (void*)0x1c0);
  printf("[%5d][%-5d][%05d][%08x][%-3s][%3s][%05d]\n", 42, 42, 42, 0xabc, "a", "b", -42);
  return 0;
}'''
    out = run_elf(build_c(src))["stdout"].splitlines()
    assert out[0] == "[-12][34][4000000000][beef][BEEF][q][hi][0x1c0][%]"
    assert out[1] == "[   42][42   ][00042][00000abc][a  ][  b][-0042]"


def test_core_and_cluster_id_on_fc(build_c, run_elf):
    r = run_elf(build_c('#include <pmsis.h>\nint main(void){ printf("%u %u\\n", pi_cluster_id(), pi_core_id()); return 0; }'))
    assert r["stdout"] == "31 0\n"
