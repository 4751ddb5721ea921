"""Shared fixtures: toolchain availability, build-and-run helpers, and the test tiers.

Tests that build programs with clang and run them on the simulator (or run whole pipelines) are
marked e2e; `pytest -m "not e2e"` is the quick unit tier. A test is e2e when it says so, when it
needs clang, llvm or the calibration kit, or when it uses a build fixture."""
from __future__ import annotations

import shutil

import pytest

from tests.shared_data import CALIB, SHARED  # noqa: F401  (re-exported for the test modules)

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None or shutil.which("ld.lld-19") is None,
                                 reason="clang-19/lld-19 not installed (make setup)")
needs_calibration = pytest.mark.skipif(not CALIB.exists(), reason=f"GVSoC calibration kit not found at {CALIB} "
                                       "(set PULP_ODL_SHARED to the shared/ directory)")
def stand_in_compiler(monkeypatch) -> None:
    """Where no compiler is installed, one that is never run: a sweep's provenance names the compiler
    (toolchain.find), and tests whose kernels are fakes need not have one to name."""
    from harness import toolchain
    from harness.errors import UserError

    try:
        toolchain.find()
    except UserError:
        monkeypatch.setattr(toolchain, "find", lambda: toolchain.Toolchain("clang", "clang-19 (stand-in)", "stand-in"))


_E2E_REASONS = ("clang-19", "llvm-objdump", "GVSoC calibration kit")
_E2E_FIXTURES = {"build_c", "run_elf", "pulp_elf_cache"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("e2e"):
            continue
        reasons = [m.kwargs.get("reason", "") for m in item.iter_markers("skipif")]
        if any(r.startswith(_E2E_REASONS) or any(e in r for e in _E2E_REASONS) for r in reasons) \
                or _E2E_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


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


def pytest_terminal_summary(terminalreporter):
    """Say what was skipped and why (no GVSoC, no clang, no calibration kit...), one line per reason."""
    from collections import Counter

    reasons = Counter()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    if reasons:
        terminalreporter.write_sep("-", "skipped")
        for reason, n in reasons.most_common():
            terminalreporter.write_line(f"{n} skipped: {reason}")


@pytest.fixture
def plans_as_planned(monkeypatch):
    """Memory plans without runner.fit_code's check against the whole step's built code (a build of every
    step whose tensors fill L2: the unit tier builds nothing, and the check has tests of its own), kept apart
    from the plans other tests share."""
    from harness.deploy import runner
    monkeypatch.setattr(runner, "fit_code", lambda plan: plan)
    monkeypatch.setattr(runner, "_PLANS", {})
