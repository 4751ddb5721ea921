"""The GVSoC backend: run an ELF on an existing GVSoC installation's pulp-open target.

pulp-odl never builds or ships GVSoC; it drives a launcher that is already installed:

* ``gvrun`` (gvsoc/gvrun, installed into GVSoC's ``install/bin``), the runner the PULP SDK's
  ``make run platform=gvsoc`` uses by default::

      gvrun --target=pulp-open --work-dir=W --parameter=chip/soc/binary=ELF \\
            --stats --stats-flat --stats-raw image flash run

* ``gvsoc`` (gvsoc/gvsoc-engine ``bin/gvsoc``, a wrapper around gapy), the command of GVSoC's README
  and of the SDK's ``USE_GAPY`` flow::

      gvsoc --target=pulp-open --work-dir=W --binary=ELF image flash run

Where it is looked for, in order (``find``): ``GVSOC`` (the launcher, or a directory holding one in
``.``, ``bin/`` or ``install/bin/``); ``gvrun`` or ``gvsoc`` on ``PATH``; the environment a sourced
GVSoC or PULP SDK leaves behind (``GVSOC_WORKDIR`` from GVSoC's sourceme.sh, ``INSTALL_DIR``,
``PULP_SDK_INSTALL``, ``GVSOC_PATH`` and ``PULP_SDK_HOME`` from the SDK's configs). In every place
``gvrun`` wins over ``gvsoc`` because only gvrun's runner has ``--stats``, the one way to learn how
many cycles the whole run took.

``run`` returns the embedded backend's result schema (see ``embedded.run``), with ``backend='gvsoc'``.
What GVSoC cannot give is present but empty:

* ``cycles``: cycles of the SoC clock domain (``/chip/soc_clock_domain/duration_cycles`` in the
  ``--stats`` report, which gvrun writes to ``W/stats.txt``), from time 0 to the end of simulation.
  It therefore includes GVSoC's reset and ELF-loading phase before the FC's first instruction (the
  calibration kit's instruction trace starts at FC cycle 4178, where the embedded model starts at 5),
  so it is a few thousand cycles above the embedded count for the same program; self-timed sections
  (perf counters printed by the program) carry no such offset. ``None`` with the ``gvsoc`` launcher
  (no statistics option) or a gvrun older than the statistics framework (2026-03).
* ``instructions``, ``ipc``, ``mips``: ``None``; pulp-open's ISS v1 cores register no instruction
  statistic (only the iss_v2 cores do; their per-core ``instr`` counters are summed if present).
* ``stalls`` ``{}``, ``cores`` ``[]``, ``dmas`` ``[]``: GVSoC has no per-core stall breakdown at exit.
* ``exit_code``: the EOC status as the process exit status, so modulo 256 (GVSoC exits with
  CORESTATUS & 0x7FFFFFFF, the OS keeps 8 bits). gvrun and gapy turn a non-zero status into exit 1
  and the stderr line "Platform returned an error (exitcode: N)", from which N is read; a non-zero
  launcher status without that line is the launcher's failure (status ``fault``), never the program's.
* ``status``: ``exit``; ``cycle_limit`` when GVSoC did not finish within the host-time budget derived
  from ``max_cycles`` (GVSoC has no cycle limit of its own; see ``timeout_for``); ``fault`` when the
  simulator itself died (a signal, or a wrapper's exit status 128 + signal) or the launcher failed. GVSoC does not stop on an illegal instruction (it traps to mtvec)
  or when every core waits forever, so those end as ``cycle_limit``, never ``deadlock``.
* ``trace``: GVSoC's own instruction trace (``--trace=insn:FILE``: picoseconds, cycle, component
  path, function, pc, instruction, register values), not the embedded trace format; it switches
  GVSoC to its slow debug mode.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harness import elf as elfmod
from harness import procs
from harness.errors import UserError

TARGET = "pulp-open"
MODELS = "gvsoc-pulp-open"  # [platform] models of a platform file that GVSoC's pulp-open can run
LAUNCHERS = ("gvrun", "gvsoc")
SDK_VARS = ("GVSOC_WORKDIR", "INSTALL_DIR", "PULP_SDK_INSTALL", "GVSOC_PATH", "PULP_SDK_HOME")
HOW_TO = ("set GVSOC=/path/to/gvsoc/install/bin/gvrun (or .../gvsoc), put gvrun or gvsoc on PATH, "
          "or source GVSoC's sourceme.sh")

# Host-time budget for a run. Start-up (Python launcher, config generation, image and flash steps)
# took ~0.45 s on the 2-core host of platform-facts §10; 8 busy cores ran at ~3 M cycles/s there,
# and --stats (profile mode) and --trace (debug mode) are slower, so the floors are generous: the
# budget only has to catch a program that never ends.
START_SECONDS = 60.0
CYCLES_PER_SECOND = 1_000_000
TRACE_CYCLES_PER_SECOND = 50_000
DEFAULT_MAX_CYCLES = 2_000_000_000  # the embedded backend's default, so both give up at the same point

_SIGNALS = {int(s) for s in signal.Signals}
# What a shell says when a launcher asks for a build of GVSoC that is not installed (gvrun runs
# 'gvsoc_launcher_debug' for --trace, 'gvsoc_launcher_profile' for --stats, through sh)
_NOT_FOUND = re.compile(r"([^\s:]+): not found\s*$", re.MULTILINE)
FLAVOURS = {"gvsoc_launcher_debug": ("debug", "--trace"), "gvsoc_launcher_profile": ("profile", "--stats, the whole-run cycle count")}
# On a run limit the simulator gets SIGINT first, which GVSoC handles by flushing what the program
# printed and exiting; what is still there after this grace period is killed.
INTERRUPT_GRACE_S = 5.0
_PLATFORM_ERROR = re.compile(r"Platform returned an error \(exitcode: (-?\d+)\)")
# stderr lines that mean the launcher could not run the simulation at all (bad install, bad target)
_BROKEN = re.compile(r"Traceback|Input error|error:|No such file|not found|cannot|unrecognized arguments",
                     re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------
def _executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _launcher_in(directory: Path) -> Path | None:
    for d in (directory, directory / "bin", directory / "install" / "bin"):
        for name in LAUNCHERS:
            if _executable(d / name):
                return d / name
    return None


def _sdk_dirs(env) -> list[tuple[str, Path]]:
    dirs = []
    for var in SDK_VARS:
        val = env.get(var)
        if not val:
            continue
        base = Path(val)
        dirs.append((var, base))
        if var == "GVSOC_PATH":  # pulp-sdk 2020-2022: GVSOC_PATH=$INSTALL_DIR/python, launcher in ../bin
            dirs.append((var, base.parent))
        if var == "PULP_SDK_HOME":  # pulp-sdk configs/common.sh: INSTALL_DIR=$PULP_SDK_HOME/install/workstation
            dirs.append((var, base / "install" / "workstation"))
    return dirs


def find() -> Path | None:
    """Path of the GVSoC launcher to use, or None. An explicit GVSOC is the only candidate when set:
    falling back to another installation would compare against a GVSoC the user did not choose."""
    env = os.environ
    explicit = env.get("GVSOC")
    if explicit:
        p = Path(explicit).expanduser()
        if p.is_dir():
            return _launcher_in(p)
        return p if _executable(p) else None
    for name in LAUNCHERS:
        hit = shutil.which(name)
        if hit:
            return Path(hit)
    for _var, d in _sdk_dirs(env):
        hit = _launcher_in(d)
        if hit:
            return hit
    return None


def missing_message() -> str:
    """One line: every place find() looked, and how to point pulp-odl at an installation."""
    env = os.environ
    if env.get("GVSOC"):
        return (f"GVSoC not found: GVSOC={env['GVSOC']} is not an executable gvrun/gvsoc launcher or a "
                f"directory holding one (in ., bin/ or install/bin/); {HOW_TO}")
    sdk = [f"{v}={env[v]}" for v in SDK_VARS if env.get(v)]
    sdk_txt = ", ".join(sdk) if sdk else "none of " + "/".join(SDK_VARS) + " set"
    return (f"GVSoC not found: GVSOC is not set, no gvrun or gvsoc on PATH, no launcher under the "
            f"PULP SDK/GVSoC environment ({sdk_txt}); {HOW_TO}")


def require() -> Path:
    found = find()
    if found is None:
        raise UserError(missing_message())
    return found


def check_platform(platform) -> None:
    name = getattr(platform, "name", platform)
    raw = getattr(platform, "raw", None)
    models = raw.get("platform", {}).get("models") if isinstance(raw, dict) else None
    if name != TARGET and models != MODELS:
        raise UserError(f"platform '{name}' cannot run on GVSoC: only pulp-open is supported there "
                        f"(use --backend embedded for '{name}')")


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------
def flavour(launcher) -> str:
    """'gvrun' or 'gvsoc': which command-line syntax the launcher speaks (by its name, as installed)."""
    return "gvrun" if Path(launcher).name.startswith("gvrun") else "gvsoc"


def command(elf, platform, trace: str | None = None, *, work_dir=None, launcher=None,
            stats: bool = True) -> list[str]:
    """The command line that runs ELF on GVSoC's pulp-open target.

    Paths are made absolute because the launchers chdir into the work directory.
    """
    check_platform(platform)
    launcher = Path(launcher) if launcher else require()
    elf = Path(elf).resolve()
    cmd = [str(launcher), f"--target={TARGET}"]
    if work_dir is not None:
        cmd.append(f"--work-dir={Path(work_dir).resolve()}")
    if flavour(launcher) == "gvrun":
        cmd.append(f"--parameter=chip/soc/binary={elf}")
        if stats:
            cmd += ["--stats", "--stats-flat", "--stats-raw"]
    else:
        cmd.append(f"--binary={elf}")
    if trace:
        cmd.append(f"--trace=insn:{Path(trace).resolve()}")
    # 'image flash' as in GVSoC's README and the SDK's run rule: the flash model reads the file they
    # produce even when the program is loaded straight from the ELF
    return cmd + ["image", "flash", "run"]


def timeout_for(max_cycles: int | None, trace: bool = False) -> float:
    rate = TRACE_CYCLES_PER_SECOND if trace else CYCLES_PER_SECOND
    return START_SECONDS + (max_cycles if max_cycles is not None else DEFAULT_MAX_CYCLES) / rate


# ---------------------------------------------------------------------------------------------
# output parsing
# ---------------------------------------------------------------------------------------------
def parse_recorded(text: str) -> tuple[str, int]:
    """A calibration-kit recording (GVSoC's stdout, then a line 'exit N') -> (stdout, N)."""
    body, sep, last = text.rstrip("\n").rpartition("\n")
    m = re.fullmatch(r"exit (-?\d+)", last.strip())
    if not m:
        raise ValueError("recording does not end with a line 'exit N'")
    return (body + "\n" if sep else ""), int(m.group(1))


def _first_line(text: str) -> str:
    """The line of a launcher's stderr that says what went wrong."""
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines() if ln.strip()]
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1]  # a Python traceback names the exception last
    hit = next((ln for ln in lines if _BROKEN.search(ln)), None)
    return hit or (lines[-1] if lines else "no message")


def parse_output(stdout: str, stderr: str, returncode: int, launcher=None) -> dict:
    """What a finished launcher said -> status, exit_code, stdout and fault (schema fields).

    Raises UserError when the launcher failed before or around the simulation (bad installation,
    unknown target, unreadable ELF): there is no program result to report then.
    """
    missing = _NOT_FOUND.search(re.sub(r"\x1b\[[0-9;]*m", "", stderr or ""))
    if missing:
        raise UserError(missing_flavour_message(missing.group(1), launcher))
    m = _PLATFORM_ERROR.search(stderr or "")
    if m:
        code = int(m.group(1))
        if code >= 0:
            return {"status": "exit", "exit_code": code, "stdout": stdout, "fault": None}
        return _died(stdout, -code)
    if returncode == 0:
        return {"status": "exit", "exit_code": 0, "stdout": stdout, "fault": None}
    if returncode < 0:
        return _died(stdout, -returncode)
    if returncode > 128 and returncode - 128 in _SIGNALS:   # a shell wrapper's report of a killed child
        return _died(stdout, returncode - 128)
    if stderr and _BROKEN.search(stderr):
        where = f" ({launcher})" if launcher else ""
        raise UserError(f"GVSoC failed{where}, exit {returncode}: {_first_line(stderr)}; fix that installation "
                        f"or point pulp-odl at another one: {HOW_TO}")
    # Both launchers report a program's non-zero status as "Platform returned an error": any other
    # failure is the launcher's own, never the program's exit status.
    last = _first_line(stderr) if stderr and stderr.strip() else "no message"
    return {"status": "fault", "exit_code": None, "stdout": stdout,
            "fault": {"kind": "GVSoC failed", "detail": f"the launcher exited with status {returncode} without a "
                                                        f"program exit status ({last})",
                      "pc": None, "core": None, "insn": None}}


def missing_flavour_message(program: str, launcher=None) -> str:
    """One line for a launcher that could not start a part of GVSoC (a build flavour that is missing)."""
    where = f" ({launcher})" if launcher else ""
    name = Path(program).name
    if name in FLAVOURS:
        flav, needs = FLAVOURS[name]
        return (f"GVSoC failed{where}: {name}: not found: this GVSoC installation lacks its {flav} build, which "
                f"{needs} needs; build that flavour of GVSoC, or run without it")
    return f"GVSoC failed{where}: {name}: not found; fix that installation or point pulp-odl at another one: {HOW_TO}"


def _died(stdout: str, sig: int) -> dict:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return {"status": "fault", "exit_code": None, "stdout": stdout,
            "fault": {"kind": "simulator crash", "detail": f"GVSoC was killed by {name}", "pc": None,
                      "core": None, "insn": None}}


def parse_stats(text: str) -> dict[str, str]:
    """GVSoC's statistics report (stats.txt) -> {'/component/path/stat': value}.

    Understands the flat layout (one full path per line) and the grouped one ('--- path ---'
    headers, then 'name value' lines); '# description' tails are dropped.
    """
    out: dict[str, str] = {}
    group = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("="):
            continue
        m = re.fullmatch(r"---\s*(\S+)\s*---", line)
        if m:
            group = m.group(1)
            continue
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[0].startswith("/"):
            out[parts[0]] = parts[1]
        elif group is not None and len(parts) == 2:
            out[f"{group}/{parts[0]}"] = parts[1]
    return out


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def cycles_from_stats(stats: dict[str, str]) -> int | None:
    """Whole-run cycles of the SoC clock domain (the FC's), or None if the report has none."""
    for key, val in stats.items():
        if key.endswith("soc_clock_domain/duration_cycles"):
            return _int(val)
    for key, val in stats.items():
        if key.endswith("soc_clock_domain/end_cycle"):
            start = _int(stats.get(key[: -len("end_cycle")] + "start_cycle", 0)) or 0
            end = _int(val)
            return end - start if end is not None else None
    return None


def instructions_from_stats(stats: dict[str, str]) -> int | None:
    vals = [_int(v) for k, v in stats.items() if k.endswith("/instr")]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
def _launch(cmd: list[str], timeout: float, cwd=None) -> tuple[str, str, int | None, float]:
    """Run a launcher in its own process group so that a timeout (or our own interruption) also ends
    the simulator it spawned. It runs in its work directory: gvrun imports modules from its cwd."""
    t0 = time.monotonic()
    try:
        proc = procs.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd)
    except OSError as e:
        raise UserError(f"GVSoC failed to start: {cmd[0]}: {e.strerror or e}; {HOW_TO}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
        failed = procs.exec_error(proc, err)
        if failed is not None:
            raise UserError(f"GVSoC failed to start: {cmd[0]}: {failed.strerror}; {HOW_TO}")
    except subprocess.TimeoutExpired:
        # the launcher and the simulator it started, keeping what the program wrote so far
        out, err = procs.interrupt_group(proc, INTERRUPT_GRACE_S, lambda t: proc.communicate(timeout=t))
        rc = None
    except UserError:
        procs.release(proc)
        raise
    except BaseException:
        procs.release(proc, kill=True)
        raise
    procs.release(proc)
    return (out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"), rc,
            time.monotonic() - t0)


def version(launcher=None) -> str:
    launcher = Path(launcher) if launcher else find()
    return f"gvsoc ({flavour(launcher)}: {launcher})" if launcher else "gvsoc (not found)"


def run(elf_path, platform, max_cycles: int | None = None, trace: str | None = None, stats: bool = False) -> dict:
    """Run an ELF on GVSoC's pulp-open. Returns the result schema shared by every backend.

    The program's output and exit status come from a run in GVSoC's normal mode: --stats (and --trace)
    switch GVSoC to its profile/debug builds, whose counters and icache replacement differ slightly.
    With stats=True a second run in profile mode measures the whole run's cycles (which include GVSoC's
    loader, so they are larger than the embedded simulator's by a start-up offset)."""
    check_platform(platform)
    launcher = require()
    elfmod.load(elf_path, platform)  # same one-line errors as the embedded backend for a bad or foreign file
    timeout = timeout_for(max_cycles, trace=bool(trace))
    stat_vals = {}
    with tempfile.TemporaryDirectory(prefix="pulp-odl-gvsoc-") as wd:
        cmd = command(elf_path, platform, trace=trace, work_dir=wd, launcher=launcher, stats=False)
        out, err, rc, secs = _launch(cmd, timeout, cwd=wd)
        if stats and rc == 0 and flavour(launcher) == "gvrun" and not trace:
            with tempfile.TemporaryDirectory(prefix="pulp-odl-gvsoc-stats-") as wd2:
                cmd2 = command(elf_path, platform, work_dir=wd2, launcher=launcher, stats=True)
                _, err2, rc2, _ = _launch(cmd2, timeout, cwd=wd2)
                missing = _NOT_FOUND.search(re.sub(r"\x1b\[[0-9;]*m", "", err2 or ""))
                if missing:
                    raise UserError(missing_flavour_message(missing.group(1), launcher))
                stats_file = Path(wd2) / "stats.txt"
                if rc2 == 0 and stats_file.exists():
                    stat_vals = parse_stats(stats_file.read_text(errors="replace"))
    if rc is None:
        parsed = {"status": "cycle_limit", "exit_code": None, "stdout": out,
                  "fault": {"kind": "cycle limit",
                            "detail": f"GVSoC did not finish within {timeout:.0f} s, the host-time budget for "
                                      f"{max_cycles if max_cycles is not None else DEFAULT_MAX_CYCLES:,} cycles",
                            "pc": None, "core": None, "insn": None}}
    else:
        parsed = parse_output(out, err, rc, launcher)
    result = {
        "backend": "gvsoc",
        "simulator": version(launcher),
        "platform": getattr(platform, "name", str(platform)),
        "status": parsed["status"],
        "exit_code": parsed["exit_code"],
        "cycles": cycles_from_stats(stat_vals),
        "instructions": instructions_from_stats(stat_vals),
        "ipc": None,
        "stdout": parsed["stdout"],
        "stalls": {},
        "cores": [],
        "dmas": [],
        "energy": None,          # GVSoC's own power report is not read
        "energy_window": None,
        "host_seconds": round(secs, 6),
        "mips": None,
    }
    if result["cycles"] and result["instructions"]:
        result["ipc"] = round(result["instructions"] / result["cycles"], 4)
    if parsed["fault"] is not None:
        result["fault"] = parsed["fault"]
    return result


# `doctor` runs this before it calls a launcher found: it must print this line and exit with 0.
PROOF_PROGRAM = '#include <pmsis.h>\nint main(void) { printf("pulp-odl on gvsoc\\n"); return 0; }\n'
PROOF_OUTPUT = "pulp-odl on gvsoc\n"
PROOF_MAX_CYCLES = 10_000_000


def prove(launcher=None) -> tuple[bool, str]:
    """Whether the launcher found really runs a program: a tiny ELF built with clang must print its line
    and exit with 0 on GVSoC. Returns (ok, what was found or why not)."""
    from harness import platform as platmod
    from harness import toolchain

    launcher = Path(launcher) if launcher else find()
    if launcher is None:
        return False, missing_message()
    if toolchain.find_clang() is None:
        return False, f"{launcher}, not proven to run: clang-19 is needed to build a test program"
    plat = platmod.load(TARGET)
    with tempfile.TemporaryDirectory(prefix="pulp-odl-doctor-") as d:
        src = Path(d) / "proof.c"
        src.write_text(PROOF_PROGRAM)
        try:
            elf = toolchain.build([src], Path(d) / "proof.elf", plat)
            res = run(elf, plat, max_cycles=PROOF_MAX_CYCLES)
        except UserError as e:
            return False, f"{launcher} does not run a program: {e}"
    if res["status"] != "exit" or res["exit_code"] != 0 or res["stdout"] != PROOF_OUTPUT:
        why = fault_line(res) if res["status"] != "exit" else \
            f"exit {res['exit_code']}, printed {res['stdout'][:60]!r}"
        return False, f"{launcher} does not run a program correctly: {why}"
    return True, f"{launcher} (ran a test program in {res['host_seconds']:.1f} s)"


def fault_line(result: dict) -> str:
    """The one stderr line for a run that did not end with an exit status."""
    f = result.get("fault") or {}
    detail = f": {f['detail']}" if f.get("detail") else ""
    return f"{f.get('kind', result['status'])}{detail} (on GVSoC)"
