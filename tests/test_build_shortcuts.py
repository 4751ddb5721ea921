"""Two shortcuts of the build, which must not change a byte of the ELF: programs are compiled with
clang -c and linked by calling ld.lld with the arguments clang's driver would give it
(toolchain.Linker), and the header every stage program includes first is parsed once into a
precompiled header. Each ELF is compared with the one the driver builds in one call from the sources."""
from __future__ import annotations

import pytest

from harness import hosttime, toolchain
from harness import platform as platmod
from harness.deploy import runner
from tests.conftest import needs_clang


def _both(monkeypatch, tmp_path, build):
    """The ELF bytes built with the direct link, then with the driver linking (as before), each built
    (an ELF cache of its own)."""
    out = []
    for tag in ("direct", "driver"):
        with monkeypatch.context() as m:
            m.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / f"cache-{tag}"))
            if tag == "driver":
                m.setattr(toolchain, "_linker", lambda tc, common: None)
            hosttime.reset()
            out.append(build(tag).read_bytes())
            assert hosttime.take()["elf_built"] == 1
    return out


@needs_clang
def test_the_linker_command_is_the_drivers():
    plat = platmod.load("paper")
    tc = toolchain.find()
    linker = toolchain._linker(tc, tuple([tc.cc] + toolchain.flags(tc, plat, "2")))
    assert linker is not None and "lld" in linker.head[0]
    assert "-Bstatic" in linker.tail   # what -static becomes
    cmd = linker.command(["a.o", "b.o"], ["-static", "-Wl,-T,x.ld", "-Wl,--gc-sections"], "p.elf")
    assert cmd[len(linker.head):len(linker.head) + 5] == ["a.o", "b.o", "-T", "x.ld", "--gc-sections"]
    assert cmd[-2:] == ["-o", "p.elf"]
    with pytest.raises(ValueError):
        linker.command(["a.o"], ["-lm"], "p.elf")


@needs_clang
def test_direct_link_gives_the_drivers_elf(tmp_path, monkeypatch):
    plat = platmod.load("pulp-open")
    (tmp_path / "p.c").write_text("int v[4] = {1, 2, 3, 4};\nint main(void) { return v[2]; }\n")
    (tmp_path / "d.S").write_text('    .section .l2_data, "aw"\n    .globl blob\nblob:\n    .word 7\n')

    def build(tag):
        return toolchain.build([tmp_path / "p.c", tmp_path / "d.S"], tmp_path / f"{tag}.elf", plat)
    direct, driver = _both(monkeypatch, tmp_path, build)
    assert direct == driver


@needs_clang
def test_direct_link_gives_the_drivers_elf_for_a_stage_program(tmp_path, monkeypatch):
    _, jobs = runner.stage_jobs(runner.Point("phinet", "cifar10", 2, 0.7, "paper"))
    plat = platmod.load("paper")
    for job in (jobs[0], jobs[-1]):
        prog = job.program()[3]

        def build(tag):
            d = tmp_path / f"{job.name}-{tag}"
            d.mkdir()
            return runner.build(prog, plat, d)
        direct, driver = _both(monkeypatch, tmp_path, build)
        assert direct == driver


@needs_clang
def test_precompiled_header_is_made_once_and_changes_nothing(tmp_path, monkeypatch):
    _, jobs = runner.stage_jobs(runner.Point("phinet", "cifar10", 2, 0.7, "paper"))
    plat = platmod.load("paper")
    prog = jobs[1].program()[3]
    made = []
    real = toolchain._precompiled

    def spy(*a):
        out = real(*a)
        made.append(out)
        return out
    monkeypatch.setattr(toolchain, "_precompiled", spy)
    elfs = []
    for tag in ("a", "b"):
        d = tmp_path / tag
        d.mkdir()
        monkeypatch.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / f"cache-{tag}"))
        elfs.append(runner.build(prog, plat, d).read_bytes())
    assert len(made) == 2 and made[0] == made[1] and made[0].exists()
    assert made[0].suffix == ".pch"
    monkeypatch.setattr(toolchain, "_precompiled", lambda *a: None)   # no header: compiled as it is
    monkeypatch.setenv("PULP_ODL_ELF_CACHE", str(tmp_path / "cache-c"))
    d = tmp_path / "c"
    d.mkdir()
    assert runner.build(prog, plat, d).read_bytes() == elfs[0] == elfs[1]


@needs_clang
def test_a_header_that_does_not_suit_is_not_used(tmp_path):
    """A source the precompiled header cannot serve (here: it does not compile as a header) still
    builds, as without it."""
    plat = platmod.load("pulp-open")
    (tmp_path / "bad.h").write_text("#error not a header for this program\n")
    (tmp_path / "p.c").write_text("int main(void) { return 3; }\n")
    a = toolchain.build([tmp_path / "p.c"], tmp_path / "a.elf", plat, pch=tmp_path / "bad.h")
    b = toolchain.build([tmp_path / "p.c"], tmp_path / "b.elf", plat)
    assert a.read_bytes() == b.read_bytes()
