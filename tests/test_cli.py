"""Bad command-line input gives one line on stderr, a non-zero status and no traceback."""
import subprocess
import sys

import pytest

from harness import ROOT
from tests.conftest import needs_clang


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("args,words", [
    (["run", "/nonexistent/prog.elf"], ["no such file"]),
    (["run", str(ROOT / "README.md")], ["not a readable ELF"]),
    (["run", str(ROOT / "README.md"), "--platform", "nope"], ["unknown platform 'nope'", "pulp-open"]),
    (["run", "x.elf", "--max-cycles", "lots"], ["--max-cycles", "not an integer"]),
    (["run", "x.elf", "--max-cycles", "-5"], ["--max-cycles"]),
    (["build", "/nonexistent.c", "-o", "/tmp/x.elf"], ["no such source file"]),
    (["build", str(ROOT / "README.md"), "-o", "/tmp/x.elf"], ["unsupported source type"]),
    (["build", str(ROOT / "examples" / "hello.c"), "-o", "/tmp/x.elf", "-O", "9"], ["unknown optimisation level"]),
    (["build", str(ROOT / "examples" / "hello.c"), "-o", "/tmp/x.elf", "--platform", "nope"], ["unknown platform"]),
    (["disasm", "/nonexistent.elf"], ["no such file"]),
    (["frobnicate"], ["invalid choice"]),
    (["run"], ["required"]),
])
def test_bad_input_is_one_line(args, words):
    p = _cli(*args)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in lines[0]


@needs_clang
def test_build_error_names_the_problem(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int main(void) { return undefined_name; }\n")
    p = _cli("build", str(src), "-o", str(tmp_path / "bad.elf"))
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "build failed" in lines[0] and "undefined_name" in lines[0]


def test_version_and_help():
    assert _cli("--version").stdout.startswith("pulp-odl ")
    assert "run" in _cli("--help").stdout
