"""FP values in separate f registers (a platform option): the same C program, compiled for
RV32IMFC + Zfh with the ilp32f ABI, runs with the right results on a platform that says so."""
import pytest

from harness import ROOT, platform as platmod, toolchain
from harness.backends import embedded
from tests.conftest import needs_clang

pytestmark = needs_clang


@pytest.fixture
def separate_fp_platform(tmp_path):
    text = (platmod.PLATFORM_DIR / "pulp-open.toml").read_text()
    text = text.replace('march = "rv32imc_zfinx_zhinx"', 'march = "rv32imfc_zfh"')
    text = text.replace('mabi = "ilp32"', 'mabi = "ilp32f"')
    text = text.replace('fp_regfile = "integer"', 'fp_regfile = "separate"')
    text = text.replace('name = "pulp-open"', 'name = "pulp-open-fregs"')
    path = tmp_path / "pulp-open-fregs.toml"
    path.write_text(text)
    return platmod.load_file(path)


def test_separate_fp_registers(tmp_path, separate_fp_platform):
    plat = separate_fp_platform
    elf = toolchain.build([ROOT / "examples" / "hello.c"], tmp_path / "h.elf", plat)
    from harness.commands.disasm import lines

    text = "\n".join(t for _, _, _, t in lines(elf, fp_separate=True))
    assert "fa0" in text or "fa5" in text or "ft0" in text  # f registers are really used
    assert "flw" in text or "flh" in text
    r = embedded.run(elf, plat)
    assert r["exit_code"] == 7
    assert "fp32 dot = 16328/1000, sqrt = 4040/1000" in r["stdout"]
    assert "fp16 dot = 14812/1000" in r["stdout"]
