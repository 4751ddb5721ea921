"""Shared fixtures: the shared data directory, toolchain availability, and build-and-run helpers."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness import ROOT

SHARED = Path(os.environ.get("PULP_ODL_SHARED", ROOT.parent / "shared"))
CALIB = SHARED / "data" / "gvsoc-calibration"

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None or shutil.which("ld.lld-19") is None,
                                 reason="clang-19/lld-19 not installed (make setup)")
needs_calibration = pytest.mark.skipif(not CALIB.exists(), reason=f"GVSoC calibration kit not found at {CALIB}")


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("elf")


@pytest.fixture(scope="session")
def build_c(build_dir):
    """Build C source text into an ELF (cached per text, platform and options) and return its path."""
    import hashlib

    from harness import platform as platmod, toolchain

    cache = {}

    def _build(text: str, platform: str = "pulp-open", opt: str = "2", defines=()):
        key = hashlib.sha256(f"{platform}|{opt}|{defines}|{text}".encode()).hexdigest()[:16]
        if key not in cache:
            src = build_dir / f"{key}.c"
            src.write_text(text)
            cache[key] = toolchain.build([src], build_dir / f"{key}.elf", platmod.load(platform), opt=opt,
                                         defines=list(defines))
        return cache[key]

    return _build


@pytest.fixture(scope="session")
def run_elf():
    from harness import platform as platmod
    from harness.backends import embedded

    def _run(elf, platform: str = "pulp-open", **kw):
        return embedded.run(elf, platmod.load(platform), **kw)

    return _run
