"""pulp-odl doctor: what this machine has (toolchains, backends, platforms) and how to get the rest."""
from __future__ import annotations

import shutil

from rich.console import Console
from rich.table import Table

from harness import platform as platmod
from harness import toolchain
from harness.errors import UserError

NAME = "doctor"
HELP = "list toolchains, backends and platforms found, and how to install what is missing"
ORDER = 90


def add_arguments(p):
    pass


def checks() -> list[tuple[str, str, bool, str]]:
    """(kind, name, found, detail or install command)."""
    rows = []
    clang = toolchain.find_clang()
    rows.append(("toolchain", "clang-19 + lld-19", clang is not None,
                 clang.describe() if clang else "apt-get install -y clang-19 lld-19"))
    objdump = shutil.which("llvm-objdump-19")
    rows.append(("toolchain", "llvm-objdump-19", objdump is not None, objdump or "apt-get install -y llvm-19"))
    gcc = toolchain.find_pulp_gcc()
    rows.append(("toolchain", "PULP GCC (optional)", gcc is not None,
                 gcc.describe() if gcc else "set PULP_RISCV_GCC_TOOLCHAIN to a PULP GNU toolchain install"))
    try:
        from harness.backends import embedded

        rows.append(("backend", "embedded", True, embedded.version()))
    except UserError:
        rows.append(("backend", "embedded", False, "make setup"))
    try:
        from harness.backends import gvsoc

        found = gvsoc.find()
        if found is None:
            rows.append(("backend", "gvsoc (optional)", False,
                         "set GVSOC to the gvsoc launcher, put gvsoc on PATH, or source a PULP SDK"))
        else:   # found only once it has run a test program
            rows.append(("backend", "gvsoc (optional)", *gvsoc.prove(found)))
    except ImportError:
        pass
    for name in platmod.available():
        try:
            plat = platmod.load(name)
            rows.append(("platform", name, True, plat.raw["platform"]["description"]))
        except UserError as e:
            rows.append(("platform", name, False, str(e)))
    return rows


def run(args) -> int:
    t = Table(title="pulp-odl doctor")
    for col in ("kind", "name", "status", "details / how to install"):
        t.add_column(col)
    missing_required = False
    for kind, name, ok, detail in checks():
        t.add_row(kind, name, "[green]found[/]" if ok else "[red]missing[/]", detail)
        if not ok and "optional" not in name:
            missing_required = True
    Console().print(t)
    return 1 if missing_required else 0
