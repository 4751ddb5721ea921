"""The GVSoC backend and `pulp-odl crosscheck`, without and (when installed) with a real GVSoC.

Without GVSoC, a fake launcher written by the tests stands in for it: it answers with the exact
output GVSoC printed for the calibration kit's ELFs (../shared/data/gvsoc-calibration/*.gvsoc.txt)
and exits the way GVSoC's launchers do, so run() and crosscheck are exercised end to end while the
embedded side runs for real on the same ELFs. Tests that need the real simulator are skipped when
none is found.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import ROOT
from harness import platform as platmod
from harness.backends import embedded, gvsoc
from harness.cli import main
from harness.commands import crosscheck
from harness.errors import UserError
from tests.conftest import CALIB, needs_calibration, needs_clang

REAL_GVSOC = gvsoc.find()
needs_gvsoc = pytest.mark.skipif(REAL_GVSOC is None, reason="GVSoC not installed (set GVSOC=...)")

ENV_VARS = ("GVSOC",) + gvsoc.SDK_VARS
ORIGINAL_PATH = os.environ.get("PATH", "")
RECORDINGS = sorted(CALIB.glob("*.gvsoc.txt")) if CALIB.exists() else []

# A stand-in for GVSoC's launchers. It reads its behaviour from fake.json next to itself, logs its
# arguments, answers with the kit's recording for the ELF (or, for other ELFs, what the embedded
# simulator prints), writes a --stats report when asked, and exits as gvrun/gapy do: 0, or 1 plus
# "Platform returned an error (exitcode: N)" on stderr.
FAKE = r'''#!{python}
import json, os, pathlib, subprocess, sys, time
here = pathlib.Path(sys.argv[0]).resolve().parent
cfg = json.loads((here / "fake.json").read_text())
args = sys.argv[1:]
with open(here / "calls.log", "a") as log:
    log.write(json.dumps(args) + "\n")
mode = cfg.get("mode", "normal")
if mode == "broken":
    sys.stderr.write("Traceback (most recent call last):\n  File \"gapy\", line 1\nModuleNotFoundError: No module named 'gapylib'\n")
    sys.exit(1)
if mode == "old-gvrun" and "--stats" in args:
    sys.stderr.write("gvrun: error: unrecognized arguments: --stats --stats-flat --stats-raw\n")
    sys.exit(2)
if mode == "sleep":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (here / "child.pid").write_text(str(child.pid))
    child.wait()
    sys.exit(0)
if mode == "hang":   # as GVSoC on a program that never ends: output buffered, flushed when interrupted
    sys.stdout.write("started\n")
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        sys.stdout.flush()
        sys.stderr.write("Input error: Platform returned an error (exitcode: -2)\n")
        sys.exit(1)
for flag, flavour in (("--trace", "debug"), ("--stats", "profile")):
    if mode == "no-" + flavour and any(a.startswith(flag) for a in args):
        sys.stderr.write(f"sh: 1: gvsoc_launcher_{{flavour}}: not found\n"
                         "Input error: Platform returned an error (exitcode: 127)\n")
        sys.exit(1)
elf = work = None
for a in args:
    if a.startswith("--binary="):
        elf = a.split("=", 1)[1]
    elif a.startswith("--parameter=chip/soc/binary="):
        elf = a.split("=", 2)[2]
    elif a.startswith("--work-dir="):
        work = a.split("=", 1)[1]
rec = pathlib.Path(cfg["calib"]) / (pathlib.Path(elf).stem + ".gvsoc.txt")
if rec.exists():
    body, _, last = rec.read_text().rstrip("\n").rpartition("\n")
    out, code, cycles = body + "\n", int(last.split()[1]), None
else:
    r = json.loads(subprocess.run([sys.executable, "-m", "harness", "run", elf, "--json"], capture_output=True,
                                  text=True, cwd=cfg["root"]).stdout)
    out, code, cycles = r["stdout"], r["exit_code"], r["cycles"]
code = cfg.get("exit", code)
if "--stats" in args and work:
    n = cfg.get("cycles", cycles if cycles is not None else 0) + cfg.get("boot", 0)
    ps = n * 13882
    (pathlib.Path(work) / "stats.txt").write_text(
        "========== Simulation Statistics (raw) ==========\n\n"
        f"  Start time:  0 ps\n  Stop time:   {{ps}} ps\n  Duration:    {{ps}} ps\n\n"
        f"  /chip/soc_clock_domain/start_cycle                                0  # Cycle at stats start\n"
        f"  /chip/soc_clock_domain/end_cycle                        {{n:12d}}  # Cycle at stats end\n"
        f"  /chip/soc_clock_domain/duration_cycles                  {{n:12d}}  # Total cycles during stats window\n"
        "\n==========================================\n")
sys.stdout.write(out)
sys.stdout.flush()
if code and mode != "passthrough":
    sys.stderr.write(f"Input error: Platform returned an error (exitcode: {{code}})\n")
    sys.exit(1)
sys.exit(code & 0xFF)
'''


def _write_exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def make_fake(directory: Path, name: str = "gvsoc", **cfg) -> Path:
    """A fake launcher DIR/NAME; cfg: mode, exit, cycles, boot (see FAKE)."""
    cfg = {"calib": str(CALIB), "root": str(ROOT), **cfg}
    (directory / "fake.json").parent.mkdir(parents=True, exist_ok=True)
    (directory / "fake.json").write_text(json.dumps(cfg))
    return _write_exe(directory / name, FAKE.format(python=sys.executable))


def calls(launcher: Path) -> list[list[str]]:
    log = launcher.parent / "calls.log"
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def no_gvsoc(monkeypatch, tmp_path):
    """An environment with no GVSoC anywhere: no GVSOC, no SDK variables, an empty PATH directory."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return tmp_path


@pytest.fixture
def pulp_open():
    return platmod.load("pulp-open")


def _stub(path: Path) -> Path:
    return _write_exe(path, "#!/bin/sh\nexit 0\n")


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------
def test_nothing_installed_gives_none_and_one_line_error(no_gvsoc):
    assert gvsoc.find() is None
    with pytest.raises(UserError) as e:
        gvsoc.require()
    msg = str(e.value)
    assert "\n" not in msg
    for word in ("GVSOC", "PATH", "PULP SDK", "GVSOC_WORKDIR", "PULP_SDK_HOME", "set GVSOC="):
        assert word in msg


def test_gvsoc_on_path(no_gvsoc, monkeypatch):
    launcher = _stub(no_gvsoc / "bin" / "gvsoc")
    monkeypatch.setenv("PATH", str(launcher.parent))
    assert gvsoc.find() == launcher


def test_gvrun_preferred_over_gvsoc_on_path(no_gvsoc, monkeypatch):
    # gvrun is the runner with --stats, i.e. the one that can report whole-run cycles
    a = _stub(no_gvsoc / "a" / "gvsoc")
    b = _stub(no_gvsoc / "b" / "gvrun")
    monkeypatch.setenv("PATH", f"{a.parent}{os.pathsep}{b.parent}")
    assert gvsoc.find() == b


def test_env_var_beats_path(no_gvsoc, monkeypatch):
    on_path = _stub(no_gvsoc / "bin" / "gvrun")
    chosen = _stub(no_gvsoc / "mine" / "gvsoc")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("GVSOC", str(chosen))
    assert gvsoc.find() == chosen


def test_env_var_directory(no_gvsoc, monkeypatch):
    launcher = _stub(no_gvsoc / "gvsoc-checkout" / "install" / "bin" / "gvrun")
    monkeypatch.setenv("GVSOC", str(no_gvsoc / "gvsoc-checkout"))
    assert gvsoc.find() == launcher


def test_bad_env_var_does_not_fall_back(no_gvsoc, monkeypatch):
    on_path = _stub(no_gvsoc / "bin" / "gvsoc")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("GVSOC", str(no_gvsoc / "nowhere" / "gvsoc"))
    assert gvsoc.find() is None
    with pytest.raises(UserError) as e:
        gvsoc.require()
    assert f"GVSOC={no_gvsoc / 'nowhere' / 'gvsoc'}" in str(e.value) and "\n" not in str(e.value)


def test_non_executable_is_not_a_launcher(no_gvsoc, monkeypatch):
    f = no_gvsoc / "bin" / "gvsoc"
    f.parent.mkdir()
    f.write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(f.parent))
    assert gvsoc.find() is None


@pytest.mark.parametrize("var,value,where", [
    ("GVSOC_WORKDIR", "wd", "wd/install/bin/gvrun"),                        # GVSoC's sourceme.sh
    ("INSTALL_DIR", "sdk/install/workstation", "sdk/install/workstation/bin/gvsoc"),  # pulp-sdk configs
    ("GVSOC_PATH", "old/install/workstation/python", "old/install/workstation/bin/gvsoc"),  # pulp-sdk 2020-22
    ("PULP_SDK_HOME", "sdk", "sdk/install/workstation/bin/gvsoc"),
])
def test_sourced_sdk_environment(no_gvsoc, monkeypatch, var, value, where):
    launcher = _stub(no_gvsoc / where)
    monkeypatch.setenv(var, str(no_gvsoc / value))
    assert gvsoc.find() == launcher


def test_path_comes_before_sdk_environment(no_gvsoc, monkeypatch):
    sdk = _stub(no_gvsoc / "wd" / "install" / "bin" / "gvrun")
    on_path = _stub(no_gvsoc / "bin" / "gvsoc")
    monkeypatch.setenv("GVSOC_WORKDIR", str(no_gvsoc / "wd"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert gvsoc.find() == on_path and sdk.exists()


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------
def test_command_gvsoc_launcher(tmp_path, pulp_open):
    elf = tmp_path / "p.elf"
    cmd = gvsoc.command(elf, pulp_open, work_dir=tmp_path / "w", launcher="/opt/gv/install/bin/gvsoc")
    assert cmd == ["/opt/gv/install/bin/gvsoc", "--target=pulp-open", f"--work-dir={(tmp_path / 'w').resolve()}",
                   f"--binary={elf.resolve()}", "image", "flash", "run"]


def test_command_gvrun_launcher_asks_for_stats(tmp_path, pulp_open):
    elf = tmp_path / "p.elf"
    cmd = gvsoc.command(elf, pulp_open, work_dir=tmp_path, launcher="/x/bin/gvrun")
    assert cmd[:4] == ["/x/bin/gvrun", "--target=pulp-open", f"--work-dir={tmp_path.resolve()}",
                       f"--parameter=chip/soc/binary={elf.resolve()}"]
    assert cmd[4:7] == ["--stats", "--stats-flat", "--stats-raw"] and cmd[-3:] == ["image", "flash", "run"]
    assert "--stats" not in gvsoc.command(elf, pulp_open, launcher="/x/bin/gvrun", stats=False)


def test_command_trace_and_relative_paths(tmp_path, pulp_open, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cmd = gvsoc.command("prog.elf", "pulp-open", trace="t.txt", launcher="gvsoc")
    assert f"--binary={tmp_path / 'prog.elf'}" in cmd          # the launchers chdir into their work dir
    assert f"--trace=insn:{tmp_path / 't.txt'}" in cmd
    assert not any(a.startswith("--work-dir") for a in cmd)


def test_command_finds_launcher(no_gvsoc, monkeypatch, pulp_open):
    launcher = _stub(no_gvsoc / "bin" / "gvsoc")
    monkeypatch.setenv("GVSOC", str(launcher))
    assert gvsoc.command("a.elf", pulp_open)[0] == str(launcher)
    monkeypatch.setenv("GVSOC", str(no_gvsoc / "missing"))
    with pytest.raises(UserError, match="GVSOC="):
        gvsoc.command("a.elf", pulp_open)


def test_only_pulp_open(tmp_path):
    paper = platmod.load("paper")
    with pytest.raises(UserError) as e:
        gvsoc.command(tmp_path / "a.elf", paper, launcher="gvsoc")
    assert "only pulp-open" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UserError, match="only pulp-open"):
        gvsoc.run(tmp_path / "a.elf", paper)


def test_timeout_grows_with_max_cycles():
    assert gvsoc.timeout_for(10) < gvsoc.timeout_for(10_000_000) < gvsoc.timeout_for(None)
    assert gvsoc.timeout_for(1_000_000, trace=True) > gvsoc.timeout_for(1_000_000)
    assert gvsoc.timeout_for(1) >= gvsoc.START_SECONDS


# ---------------------------------------------------------------------------------------------
# parsing GVSoC's output
# ---------------------------------------------------------------------------------------------
@needs_calibration
@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda p: p.name)
def test_parse_recorded_outputs(rec):
    text = rec.read_text()
    out, code = gvsoc.parse_recorded(text)
    assert code == 0 and out.endswith("\n") and not out.endswith("exit 0\n")
    assert out.splitlines() == text.splitlines()[:-1]
    parsed = gvsoc.parse_output(out, "", 0)
    assert parsed == {"status": "exit", "exit_code": 0, "stdout": out, "fault": None}
    assert crosscheck.name_values(out)  # every kit program prints self-timed 'name value' lines


def test_parse_recorded_needs_exit_line():
    assert gvsoc.parse_recorded("a 1\nexit 3\n") == ("a 1\n", 3)
    assert gvsoc.parse_recorded("exit 0\n") == ("", 0)
    with pytest.raises(ValueError):
        gvsoc.parse_recorded("a 1\n")


@pytest.mark.parametrize("stderr,rc,status,code", [
    ("", 0, "exit", 0),
    ("Input error: Platform returned an error (exitcode: 7)\n", 1, "exit", 7),
    ("\x1b[94m[GVRUN]\x1b[0m x\nInput error: Platform returned an error (exitcode: 255)\n", 1, "exit", 255),
    ("Input error: Platform returned an error (exitcode: -11)\n", 1, "fault", None),
    ("", -9, "fault", None),     # the launcher itself was killed
    ("", 139, "fault", None),    # a wrapper script reporting its simulator's SIGSEGV
])
def test_parse_exit_status(stderr, rc, status, code):
    r = gvsoc.parse_output("hello\n", stderr, rc)
    assert (r["status"], r["exit_code"], r["stdout"]) == (status, code, "hello\n")
    if status == "fault":
        assert r["fault"]["kind"] == "simulator crash" and "SIG" in r["fault"]["detail"]


@pytest.mark.parametrize("stderr,rc", [("", 1), ("", 3), ("some launcher message\n", 2)])
def test_launcher_failure_is_not_the_program_status(stderr, rc):
    """Both launchers report a program's status as 'Platform returned an error': a bare non-zero status
    is the launcher failing, so it must not be reported as the program's exit code."""
    r = gvsoc.parse_output("", stderr, rc)
    assert r["status"] == "fault" and r["exit_code"] is None
    assert r["fault"]["kind"] == "GVSoC failed" and f"status {rc}" in r["fault"]["detail"]


@pytest.mark.parametrize("stderr", [
    "Traceback (most recent call last):\n  File \"x\"\nModuleNotFoundError: No module named 'gapylib'\n",
    "Input error: Invalid target: pulp-open\n",
    "gvrun: error: unrecognized arguments: --bogus\n",
])
def test_broken_launcher_is_one_line_error(stderr):
    with pytest.raises(UserError) as e:
        gvsoc.parse_output("", stderr, 1)
    assert str(e.value).startswith("GVSoC failed") and "\n" not in str(e.value)


GROUPED = """========== Simulation Statistics ==========

  Start:     0 ps
  Stop:      98765 ps
  Duration:  98765 ps

--- /chip/soc_clock_domain ---
  start_cycle                             0
  end_cycle                           12345
  duration_cycles                     12345

--- /chip/cluster_clock ---
  duration_cycles                     12000

==========================================
"""
FLAT = """========== Simulation Statistics (raw) ==========

  Start time:  0 ps
  Stop time:   98765 ps
  Duration:    98765 ps

  /chip/soc_clock_domain/start_cycle                            100  # Cycle at stats start
  /chip/soc_clock_domain/end_cycle                            12445  # Cycle at stats end
  /chip/cluster/pe0/instr                                       700  # Instructions executed
  /chip/cluster/pe1/instr                                        42  # Instructions executed

==========================================
"""


def test_parse_stats_reports():
    g = gvsoc.parse_stats(GROUPED)
    assert g["/chip/soc_clock_domain/duration_cycles"] == "12345" and gvsoc.cycles_from_stats(g) == 12345
    assert gvsoc.instructions_from_stats(g) is None
    f = gvsoc.parse_stats(FLAT)
    assert gvsoc.cycles_from_stats(f) == 12345          # end - start when there is no duration line
    assert gvsoc.instructions_from_stats(f) == 742
    assert gvsoc.cycles_from_stats({}) is None


# ---------------------------------------------------------------------------------------------
# comparison logic
# ---------------------------------------------------------------------------------------------
def test_name_values_and_sections():
    text = "x.cycles 10\nx.imiss 2\nsem.v 0x10\nhello world\ncrc 1a2b\nrep 3 4\nx.cycles 11\ntcdm.diff 130\n"
    assert crosscheck.name_values(text) == [("x.cycles", 10), ("x.imiss", 2), ("x.cycles#2", 11),
                                            ("tcdm.diff", 130)]
    rows = crosscheck.compare_sections("a.cycles 12\na.imiss 4\nb 100\n", "a.cycles 9\na.imiss 1\nb 80\nc 5\n")
    by = {r["section"]: r for r in rows}
    assert set(by) == {"a.cycles", "b", "c"}                         # imiss is a companion, not a timing
    assert by["a.cycles"]["minus_imiss"] and by["a.cycles"]["pct_diff"] == 0.0   # 12-4 == 9-1
    assert by["b"]["pct_diff"] == pytest.approx(25.0)
    assert by["c"]["embedded"] is None and by["c"]["pct_diff"] is None
    assert crosscheck.pct_diff(0, 0) == 0.0 and crosscheck.pct_diff(1, 0) is None
    s = crosscheck.stats([-25.0, 5.0, None])
    assert s == {"n": 2, "mean_abs_pct": 15.0, "max_abs_pct": 25.0}


def test_counter_lines_are_set_apart():
    ours = "result 5\nx.cycles 12\nODL cycles 300 compute 200\nmeasured 70 cycles, 9 instructions\n"
    ref = "result 5\nx.cycles 10\nODL cycles 301 compute 199\nmeasured 71 cycles, 9 instructions\n"
    assert crosscheck.diff_lines(ours, ref) == (0, 3)          # equal outputs, three counter lines differ
    assert crosscheck.diff_lines("result 5\n", "result 6\n") == (1, 0)   # a result is not a counter
    assert crosscheck.diff_lines("a\nb\n", "a\n") == (1, 0)
    # a timing beside its section's own cycles is a part of it, kept out of the sections' figures
    rows = {r["section"]: r for r in crosscheck.compare_sections(
        "d.cycles 40\nd.issue 16\nd.imiss 6\nh.kick_to_done 300\n", "d.cycles 38\nd.issue 10\nd.imiss 4\nh.kick_to_done 290\n")}
    assert rows["d.issue"]["kind"] == "part" and rows["d.cycles"]["kind"] == "section"
    assert rows["d.cycles"]["pct_diff"] == 0.0 and rows["h.kick_to_done"]["kind"] == "section"


# Every section of the kit within 1 cycle or 1 %, but hyper's polled transfers (one poll: 14 of 293 cycles)
KIT_LIMITS = [("fc_core", 0.0), ("fc_pulp", 0.0), ("fc_trace", 0.0), ("cl_core", 0.0), ("cl_contention", 1.0),
              ("cl_dma", 1.0), ("hyper", 100 * 14 / 293)]


@needs_calibration
@pytest.mark.parametrize("prog,max_pct", KIT_LIMITS)
def test_sections_of_kit_programs_against_recordings(prog, max_pct, pulp_open):
    """The comparison crosscheck makes, on the embedded run and GVSoC's recorded output."""
    ref, _ = gvsoc.parse_recorded((CALIB / f"{prog}.gvsoc.txt").read_text())
    emb = embedded.run(CALIB / f"{prog}.elf", pulp_open)
    rows = crosscheck.compare_sections(emb["stdout"], ref)
    assert rows and all(r["embedded"] is not None for r in rows)
    raw_e, raw_g = dict(crosscheck.name_values(emb["stdout"])), dict(crosscheck.name_values(ref))

    def close(e, g):
        return abs(e - g) <= 1 or abs(e - g) <= max_pct / 100 * g
    # a section is compared minus its own misses; where a miss of another core held it at a barrier
    # (cl_contention's barrier sections) its raw cycles are what agrees
    bad = [r for r in rows if not close(r["embedded"], r["gvsoc"])
           and not (r["minus_imiss"] and close(raw_e[r["section"]], raw_g[r["section"]]))]
    assert not bad, bad[:3]
    # outputs are the same apart from counter lines (exact where every section is)
    other, _ = crosscheck.diff_lines(emb["stdout"], ref)
    assert other == 0


# ---------------------------------------------------------------------------------------------
# run() against a fake launcher
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def kit_elfs(tmp_path):
    if not CALIB.exists():
        pytest.skip(f"GVSoC calibration kit not found at {CALIB}")
    d = tmp_path / "elfs"
    d.mkdir()
    for name in ("fc_pulp", "fc_trace", "hyper"):
        (d / f"{name}.elf").symlink_to(CALIB / f"{name}.elf")
    return d


def test_run_returns_the_embedded_schema(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvsoc")
    monkeypatch.setenv("GVSOC", str(fake))
    res = gvsoc.run(kit_elfs / "fc_pulp.elf", pulp_open)
    ref, code = gvsoc.parse_recorded((CALIB / "fc_pulp.gvsoc.txt").read_text())
    emb = embedded.run(kit_elfs / "fc_pulp.elf", pulp_open)
    assert set(res) == set(emb)
    assert res["backend"] == "gvsoc" and res["platform"] == "pulp-open" and str(fake) in res["simulator"]
    assert (res["status"], res["exit_code"], res["stdout"]) == ("exit", code, ref)
    # what the gvsoc launcher cannot tell is present and empty
    assert res["cycles"] is None and res["instructions"] is None and res["ipc"] is None and res["mips"] is None
    assert res["stalls"] == {} and res["cores"] == [] and res["dmas"] == [] and res["host_seconds"] > 0
    (args,) = calls(fake)
    assert f"--binary={(kit_elfs / 'fc_pulp.elf').resolve()}" in args and args[-3:] == ["image", "flash", "run"]
    work = next(a.split("=", 1)[1] for a in args if a.startswith("--work-dir="))
    assert not Path(work).exists()  # the work directory is cleaned up


def test_run_with_gvrun_reads_cycles_from_stats(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvrun", cycles=531_000)
    monkeypatch.setenv("GVSOC", str(fake))
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open, stats=True)
    assert res["cycles"] == 531_000 and res["status"] == "exit" and res["exit_code"] == 0
    # output and exit status come from a normal-mode run, the cycles from a second run with --stats
    first, second = calls(fake)
    assert "--stats" not in first and "--stats" in second
    assert any(a.startswith("--parameter=chip/soc/binary=") for a in first)


def test_run_without_stats_launches_once_in_normal_mode(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvrun", cycles=531_000)
    monkeypatch.setenv("GVSOC", str(fake))
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    assert res["status"] == "exit" and res["cycles"] is None
    (args,) = calls(fake)
    assert "--stats" not in args


def test_run_with_old_gvrun_has_unknown_cycles(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvrun", mode="old-gvrun")
    monkeypatch.setenv("GVSOC", str(fake))
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open, stats=True)
    assert res["status"] == "exit" and res["cycles"] is None and "mix.nc.cycles 822" in res["stdout"]
    first, second = calls(fake)
    assert "--stats" not in first and "--stats" in second


@pytest.mark.parametrize("mode,code", [("normal", 7), ("normal", 255)])
def test_run_nonzero_exit_status(no_gvsoc, monkeypatch, kit_elfs, pulp_open, mode, code):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc", mode=mode, exit=code)))
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    assert res["status"] == "exit" and res["exit_code"] == code and "fault" not in res


def test_bare_launcher_status_is_a_launcher_failure(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    """A status without gvrun's/gapy's 'Platform returned an error' line cannot be told from the launcher
    failing, so it is reported as that (exit 3 from `run`), not as the program's status."""
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc", mode="passthrough", exit=7)))
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    assert res["status"] == "fault" and res["exit_code"] is None and res["fault"]["kind"] == "GVSoC failed"


def test_run_broken_launcher(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvsoc", mode="broken")
    monkeypatch.setenv("GVSOC", str(fake))
    with pytest.raises(UserError) as e:
        gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    msg = str(e.value)
    assert "\n" not in msg and "No module named 'gapylib'" in msg and str(fake) in msg and "set GVSOC=" in msg


def test_run_launcher_that_cannot_start(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    bad = _write_exe(no_gvsoc / "bad" / "gvsoc", "#!/nonexistent/interpreter\n")
    monkeypatch.setenv("GVSOC", str(bad))
    with pytest.raises(UserError) as e:
        gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    assert str(e.value).startswith(f"GVSoC failed to start: {bad}") and "\n" not in str(e.value)


def test_run_timeout_kills_the_simulator(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    fake = make_fake(no_gvsoc / "fake", "gvsoc", mode="sleep")
    monkeypatch.setenv("GVSOC", str(fake))
    monkeypatch.setattr(gvsoc, "START_SECONDS", 2.0)
    t0 = time.monotonic()
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open, max_cycles=1000)
    assert time.monotonic() - t0 < 30
    assert res["status"] == "cycle_limit" and res["exit_code"] is None
    assert res["fault"]["kind"] == "cycle limit" and "1,000 cycles" in res["fault"]["detail"]
    assert "cycle limit" in gvsoc.fault_line(res)
    pid = int((fake.parent / "child.pid").read_text())
    for _ in range(50):  # the launcher's own child (the simulator) went with it
        if not _alive(pid):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the simulator process outlived the timeout")


def test_run_limit_keeps_what_the_program_printed(no_gvsoc, monkeypatch, kit_elfs, pulp_open):
    """On a run limit GVSoC is interrupted first, so the output it buffered is not lost, and its
    'exitcode: -2' is not taken for the program's status."""
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc", mode="hang")))
    monkeypatch.setattr(gvsoc, "START_SECONDS", 2.0)
    res = gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open, max_cycles=1000)
    assert res["status"] == "cycle_limit" and res["exit_code"] is None and res["stdout"] == "started\n"


@pytest.mark.parametrize("mode,kwargs,words", [
    ("no-debug", {"trace": "t.txt"}, ["gvsoc_launcher_debug: not found", "lacks its debug build", "--trace"]),
    ("no-profile", {"stats": True}, ["gvsoc_launcher_profile: not found", "lacks its profile build", "--stats"]),
])
def test_missing_flavour_is_one_line_naming_it(no_gvsoc, monkeypatch, kit_elfs, pulp_open, mode, kwargs, words):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvrun", mode=mode)))
    if "trace" in kwargs:
        kwargs = {"trace": str(no_gvsoc / kwargs["trace"])}
    with pytest.raises(UserError) as e:
        gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open, **kwargs)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg
    # the shell's status is not the program's (the fake's path, a pytest temp dir, may hold "127")
    assert "127" not in msg.replace(str(no_gvsoc), "")


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for whoever adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_run_checks_the_elf_first(no_gvsoc, monkeypatch, tmp_path, pulp_open):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc")))
    with pytest.raises(UserError, match="no such file"):
        gvsoc.run(tmp_path / "missing.elf", pulp_open)


def test_run_without_gvsoc(no_gvsoc, kit_elfs, pulp_open):
    with pytest.raises(UserError) as e:
        gvsoc.run(kit_elfs / "fc_trace.elf", pulp_open)
    assert str(e.value) == gvsoc.missing_message()


# ---------------------------------------------------------------------------------------------
# the CLI: run --backend gvsoc, crosscheck
# ---------------------------------------------------------------------------------------------
def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env)


def _env_without_gvsoc(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    empty = tmp_path / "nobin"
    empty.mkdir(exist_ok=True)
    env["PATH"] = str(empty)
    return env


def test_cli_run_backend_gvsoc(no_gvsoc, monkeypatch, kit_elfs, capsys):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc", exit=5)))
    assert main(["run", str(kit_elfs / "fc_trace.elf"), "--backend", "gvsoc"]) == 5
    out, err = capsys.readouterr()
    assert out == gvsoc.parse_recorded((CALIB / "fc_trace.gvsoc.txt").read_text())[0] and err == ""
    assert main(["run", str(kit_elfs / "fc_trace.elf"), "--backend", "gvsoc", "--report"]) == 5
    out, err = capsys.readouterr()
    assert out.startswith("mix.nc.cycles 822\n") and "gvsoc" in err and "n/a" in err
    assert main(["run", str(kit_elfs / "fc_trace.elf"), "--backend", "gvsoc", "--json"]) == 5
    obj = json.loads(capsys.readouterr().out)
    assert obj["backend"] == "gvsoc" and obj["exit_code"] == 5 and obj["cycles"] is None


def test_cli_run_backend_embedded_is_the_default(kit_elfs, capsys):
    assert main(["run", str(kit_elfs / "fc_trace.elf"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "embedded"


@pytest.mark.parametrize("extra,words", [
    ([], ["GVSoC not found", "GVSOC", "PATH"]),
    (["--platform", "paper"], ["only pulp-open"]),
])
def test_cli_run_gvsoc_errors_are_one_line(tmp_path, kit_elfs, extra, words):
    p = _cli("run", str(kit_elfs / "fc_trace.elf"), "--backend", "gvsoc", *extra, env=_env_without_gvsoc(tmp_path))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr
    assert all(w in lines[0] for w in words)


def test_crosscheck_end_to_end(no_gvsoc, monkeypatch, kit_elfs, tmp_path, capsys):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc")))
    out_csv = tmp_path / "out" / "cc.csv"
    assert main(["crosscheck", "--programs", str(kit_elfs), "--output", str(out_csv), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    rows = {r["program"]: r for r in obj["programs"]}
    assert set(rows) == {"fc_pulp", "fc_trace", "hyper"}
    assert rows["fc_trace"]["outputs_equal"] and rows["fc_trace"]["sections"] == 1
    assert rows["fc_trace"]["cycles_embedded"] > 0 and rows["fc_trace"]["cycles_gvsoc"] is None
    assert rows["fc_pulp"]["sections"] >= 70 and rows["fc_pulp"]["sections_max_abs_pct"] == 0.0
    # hyper.elf: HyperRAM transfers, seen by polling (14 cycles a poll): the kit's read after a write ends a
    # few cycles sooner in GVSoC (platforms/pulp-open.toml [differences]), one poll on 293 cycles
    assert 0 < rows["hyper"]["sections_max_abs_pct"] <= 100 * 14 / 293
    assert rows["hyper"]["outputs_equal"] and rows["hyper"]["counter_lines_differing"] > 0
    assert all(r["exit_embedded"] == r["exit_gvsoc"] == 0 for r in rows.values())
    summ = obj["summary"]
    assert summ["programs"] == 3 and summ["whole_run"]["n"] == 0
    assert summ["sections"]["n"] == sum(r["sections"] for r in rows.values())
    assert summ["sections"]["max_abs_pct"] == max(r["sections_max_abs_pct"] for r in rows.values())
    import pandas as pd

    df = pd.read_csv(out_csv)
    assert list(df.columns[:5]) == ["program", "cycles_embedded", "cycles_gvsoc", "pct_diff", "outputs_equal"]
    assert len(df) == 3
    sec = pd.read_csv(tmp_path / "out" / "cc.sections.csv")
    assert len(sec) == summ["sections"]["n"] and set(sec["program"]) == set(rows)
    s = pd.read_csv(tmp_path / "out" / "cc.summary.csv").set_index("comparison")
    assert s.loc["sections", "n"] == summ["sections"]["n"]
    assert sorted(p.name for p in out_csv.parent.iterdir()) == ["cc.csv", "cc.sections.csv", "cc.summary.csv"]
    # a second run replaces the tables it wrote (each is recognised by its own header)
    assert main(["crosscheck", "--programs", str(kit_elfs), "--output", str(out_csv), "--json"]) == 0
    capsys.readouterr()


def test_crosscheck_whole_run_cycles_with_gvrun(no_gvsoc, monkeypatch, kit_elfs, tmp_path, capsys, pulp_open):
    emb = embedded.run(kit_elfs / "hyper.elf", pulp_open)["cycles"]
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvrun", cycles=emb, boot=4173)))
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "hyper.elf").symlink_to(CALIB / "hyper.elf")
    assert main(["crosscheck", "--programs", str(tmp_path / "one"), "--output", str(tmp_path / "c.csv")]) == 0
    out = capsys.readouterr().out
    assert "hyper" in out and f"{emb + 4173:,}" in out and "summary" in out
    import pandas as pd

    row = pd.read_csv(tmp_path / "c.csv").iloc[0]
    assert row["cycles_gvsoc"] == emb + 4173
    assert row["pct_diff"] == pytest.approx(100.0 * -4173 / (emb + 4173))


def test_crosscheck_without_gvsoc_is_one_line(tmp_path, kit_elfs):
    p = _cli("crosscheck", "--programs", str(kit_elfs), "--output", str(tmp_path / "x.csv"),
             env=_env_without_gvsoc(tmp_path))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr
    assert lines[0].startswith("pulp-odl: error: GVSoC not found") and "set GVSOC=" in lines[0]
    assert not (tmp_path / "x.csv").exists()


def test_crosscheck_bad_programs_dir(no_gvsoc, monkeypatch, tmp_path):
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc")))
    with pytest.raises(UserError, match="no .elf files"):
        main_raise(["crosscheck", "--programs", str(tmp_path)])
    with pytest.raises(UserError, match="not a directory"):
        main_raise(["crosscheck", "--programs", str(tmp_path / "nope")])


def main_raise(argv):
    """Run a command so that its UserError reaches the test instead of becoming an exit status."""
    from harness.cli import build_parser

    args = build_parser().parse_args(argv)
    return args._run(args)


@needs_clang
def test_crosscheck_builds_the_test_programs_by_default(no_gvsoc, monkeypatch, tmp_path, capsys):
    # the fake answers with what the embedded simulator prints for ELFs the kit has no recording of
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc")))
    monkeypatch.setenv("PATH", ORIGINAL_PATH)  # clang-19 is needed; GVSOC still wins over any gvsoc on PATH
    assert main(["crosscheck", "--output", str(tmp_path / "d.csv"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["programs"]
    assert {r["program"] for r in rows} == {p.stem for p in crosscheck.TEST_PROGRAMS.glob("*.c")}
    assert all(r["outputs_equal"] and r["exit_embedded"] == r["exit_gvsoc"] for r in rows)


@needs_clang
def test_doctor_lists_the_gvsoc_backend_once_it_ran_a_program(no_gvsoc, monkeypatch):
    from harness.commands import doctor

    def gvsoc_row():
        monkeypatch.setenv("PATH", ORIGINAL_PATH if os.environ.get("GVSOC") else str(no_gvsoc / "emptybin"))
        return next((ok, detail) for kind, name, ok, detail in doctor.checks() if name == "gvsoc (optional)")

    assert gvsoc_row()[0] is False
    fake = make_fake(no_gvsoc / "fake", "gvsoc")
    monkeypatch.setenv("GVSOC", str(fake))
    ok, detail = gvsoc_row()
    assert ok and detail.startswith(f"{fake} (ran a test program in ")
    assert any(a[-3:] == ["image", "flash", "run"] for a in calls(fake))
    # a launcher whose Python lacks a module is found on disk but does not run: not "found"
    broken = make_fake(no_gvsoc / "broken", "gvsoc", mode="broken")
    monkeypatch.setenv("GVSOC", str(broken))
    ok, detail = gvsoc_row()
    assert not ok and "does not run a program" in detail and "No module named 'gapylib'" in detail


# ---------------------------------------------------------------------------------------------
# a real GVSoC
# ---------------------------------------------------------------------------------------------
@needs_gvsoc
@needs_calibration
def test_real_gvsoc_reproduces_the_recording(pulp_open):
    res = gvsoc.run(CALIB / "fc_trace.elf", pulp_open, max_cycles=10_000_000)
    ref, code = gvsoc.parse_recorded((CALIB / "fc_trace.gvsoc.txt").read_text())
    assert res["status"] == "exit" and res["exit_code"] == code
    got, want = dict(crosscheck.name_values(res["stdout"])), dict(crosscheck.name_values(ref))
    assert set(got) == set(want)
    assert "mix.nc.checksum 0xff83f31c" in res["stdout"]
    if res["cycles"] is not None:  # gvrun with --stats: the whole run, boot phase included
        assert res["cycles"] > embedded.run(CALIB / "fc_trace.elf", pulp_open)["cycles"]


@needs_gvsoc
@needs_clang
def test_real_gvsoc_exit_status_and_output(build_c, pulp_open):
    elf = build_c((ROOT / "examples" / "hello.c").read_text())
    res = gvsoc.run(elf, pulp_open, max_cycles=10_000_000)
    emb = embedded.run(elf, pulp_open)
    assert res["status"] == "exit" and res["exit_code"] == 7
    strip = [ln for ln in res["stdout"].splitlines() if not ln.startswith("measured")]
    assert strip == [ln for ln in emb["stdout"].splitlines() if not ln.startswith("measured")]


@needs_gvsoc
@needs_calibration
def test_real_gvsoc_crosscheck(tmp_path, kit_elfs, capsys):
    assert main(["crosscheck", "--programs", str(kit_elfs), "--output", str(tmp_path / "r.csv"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["summary"]["programs"] == 3 and obj["summary"]["sections"]["n"] > 80
    assert obj["summary"]["sections"]["max_abs_pct"] <= 5.0


@needs_clang
def test_crosscheck_kernels_end_to_end(no_gvsoc, monkeypatch, tmp_path, capsys):
    """Every pulp-open kernel of an experiment, one ELF each, on both backends (the fake answers with what
    the embedded simulator prints for the same ELF, so the two agree exactly)."""
    monkeypatch.setenv("GVSOC", str(make_fake(no_gvsoc / "fake", "gvsoc")))
    monkeypatch.setenv("PATH", ORIGINAL_PATH)
    exp = tmp_path / "k.toml"
    exp.write_text('[experiment]\ndescription = "t"\nkind = "kernels"\nplatforms = ["pulp-open", "paper"]\n'
                   'steps = ["fw", "update"]\n\n[[kernel]]\nkind = "pw"\ncin = 4\ncout = 6\nhw = 3\n')
    out = tmp_path / "out" / "k.csv"
    assert main(["crosscheck", "--kernels", str(exp), "--output", str(out), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    rows, summ = obj["kernels"], obj["summary"]
    assert [r["kernel"] for r in rows] == ["pw_4x6_3x3_fw_p1_pulp-open", "pw_4x6_3x3_update_p1_pulp-open"]
    assert all(r["ok_embedded"] and r["ok_gvsoc"] and r["outputs_identical"] and r["pct_diff"] == 0.0 for r in rows)
    assert summ["left_out"] == 2 and summ["ok_both"] == 2 and summ["cycles"]["max_abs_pct"] == 0.0
    import pandas as pd

    from harness.kernels import crosscheck as kcc
    assert list(pd.read_csv(out).columns) == kcc.COLUMNS
    assert kcc.read_table(out) == rows
    assert pd.read_csv(tmp_path / "out" / "k.summary.csv")["comparison"].tolist() == ["cycles", "compute"]
    # the same command again replaces its own tables
    assert main(["crosscheck", "--kernels", str(exp), "--output", str(out)]) == 0
    assert "2 kernels on both backends" in capsys.readouterr().out
