"""GVSoC's own power report (`gvrun --power`) of a whole run, as joules per component.

    gvrun --target=pulp-open --work-dir=W --parameter=chip/soc/binary=ELF --power \\
          --control-script=harness/backends/gvsoc_power_control.py \\
          --trace=soc/apb_soc_ctrl:W/eoc.txt image flash run

--power switches gvrun to GVSoC's debug build (gvsoc_launcher_debug). The power engine writes
W/power_report.csv when a capture window closes; the control script opens it before the first cycle
and closes it after the program's exit (see gvsoc_power_control.py). The report gives each
component's average dynamic and leakage power (W) over the window, so energy = power x window, and the
window's end is the time of the program's end-of-computation write to the SoC controller, which the
trace of that one component records in picoseconds (the window starts at 0). Nothing else is traced.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from harness import elf as elfmod
from harness.backends import gvsoc
from harness.errors import UserError

CONTROL_SCRIPT = Path(__file__).with_name("gvsoc_power_control.py")
REPORT = "power_report.csv"
EOC_TRACE = "eoc.txt"
EOC_COMPONENT = "soc/apb_soc_ctrl"
# pulp-open's SoC controller: CORESTATUS, whose write ends the simulation (gvsoc-pulp chips/pulp/apb_soc_impl.cpp)
EOC_OFFSET = 0xA0
DEBUG_LAUNCHER = "gvsoc_launcher_debug"

_ROW = re.compile(r"\s*(/\S*);\s*([-+0-9.eE]+);\s*([-+0-9.eE]+);\s*([-+0-9.eE]+);\s*([-+0-9.eE]+)\s*$")
_EOC = re.compile(r"^(\d+):\s*(\d+):.*Apb_soc_ctrl access \(offset: 0x([0-9a-fA-F]+), size: 0x[0-9a-fA-F]+, "
                  r"is_write: 1\)")


# The control script writes the program's exit status to the file this variable names once the report
# is written (gvsoc_power_control.DONE_ENV); a launcher still running DONE_GRACE_S later is stopped.
DONE_ENV = "PULP_ODL_POWER_DONE"
DONE_FILE = "power_done.txt"
DONE_GRACE_S = 3.0
POLL_S = 0.1


class PowerUnavailable(UserError):
    """The installation cannot give a power report at all (not one program's failure)."""


def parse_report(text: str) -> dict[str, tuple[float, float]]:
    """GVSoC's power_report.csv -> {component path: (dynamic W, leakage W)}, '/' for the whole chip.

    The report lists every component once as the head of its own block and once more among its
    parent's children, with the same figures; a path is kept once."""
    out: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            path = m.group(1).removesuffix("power_trace").rstrip("/") or "/"
            out.setdefault(path, (float(m.group(2)), float(m.group(3))))
    if not out:
        raise ValueError("no 'path; dynamic; leakage; total; percentage' line")
    return out


def parse_end_ps(trace_text: str) -> int:
    """Time in ps of the program's end-of-computation write, from the SoC controller's trace."""
    end = None
    for line in trace_text.splitlines():
        m = _EOC.match(re.sub(r"\x1b\[[0-9;]*m", "", line))
        if m and int(m.group(3), 16) == EOC_OFFSET:
            end = int(m.group(1))
    if end is None:
        raise ValueError(f"no end-of-computation write (offset {EOC_OFFSET:#x}) in the SoC controller's trace")
    return end


def energies(report: dict[str, tuple[float, float]], seconds: float) -> dict[str, dict[str, float]]:
    """Joules of each component over the window: {path: {'dynamic_J', 'leakage_J'}}."""
    return {p: {"dynamic_J": d * seconds, "leakage_J": lk * seconds} for p, (d, lk) in report.items()}


def command(elf, platform, work_dir, launcher) -> list[str]:
    cmd = gvsoc.command(elf, platform, work_dir=work_dir, launcher=launcher, stats=False)
    extra = ["--power", f"--control-script={CONTROL_SCRIPT}",
             f"--trace={EOC_COMPONENT}:{Path(work_dir).resolve() / EOC_TRACE}"]
    return cmd[:-3] + extra + cmd[-3:]


def _launch(cmd: list[str], timeout: float, wd: Path) -> tuple[str, str, int | None, float, bool]:
    """Run a power run: (stdout, stderr, exit status or None on timeout, host seconds, stopped after its
    report). gvrun sometimes never returns once GVSoC has exited (its proxy reader spins): when the control
    script has reported the program's status and the launcher is still running DONE_GRACE_S later, its
    process group is stopped and that status used. Output goes to files, so a chatty program cannot fill a
    pipe while this waits."""
    import os
    import subprocess
    import time

    from harness import procs

    done = wd / DONE_FILE
    t0 = time.monotonic()
    out_path, err_path = wd / "launcher.stdout", wd / "launcher.stderr"
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        try:
            proc = procs.popen(cmd, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL, cwd=wd,
                               env={**os.environ, DONE_ENV: str(done)})
        except OSError as e:
            raise UserError(f"GVSoC failed to start: {cmd[0]}: {e.strerror or e}; {gvsoc.HOW_TO}") from None
        rc, stopped, done_at = None, False, None
        try:
            while True:
                try:
                    rc = proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if done_at is None and done.exists():
                    done_at = now
                if done_at is not None and now - done_at > DONE_GRACE_S or now - t0 > timeout:
                    procs.interrupt_group(proc, gvsoc.INTERRUPT_GRACE_S)
                    text = done.read_text().strip() if done.exists() else ""
                    rc, stopped = (int(text), True) if text.lstrip("-").isdigit() else (None, False)
                    break
            procs.release(proc)
        except BaseException:
            procs.release(proc, kill=True)
            raise
    return (out_path.read_text(errors="replace"), err_path.read_text(errors="replace"), rc,
            time.monotonic() - t0, stopped)


def require():
    """The launcher to use; gvrun only (GVSoC's gvsoc/gapy wrapper traces with another syntax)."""
    launcher = gvsoc.require()
    if gvsoc.flavour(launcher) != "gvrun":
        raise PowerUnavailable(f"--energy: {launcher} is GVSoC's gvsoc wrapper; GVSoC's power report is read "
                               f"through gvrun (its --power and --control-script options): set GVSOC to "
                               f"GVSoC's install/bin/gvrun")
    return launcher


def run(elf_path, platform, max_cycles: int | None = None) -> dict:
    """Run an ELF with GVSoC's power model on; returns status, exit_code, stdout, seconds (the window)
    and components ({path: {'dynamic_J', 'leakage_J'}}). Raises PowerUnavailable when this GVSoC cannot
    give a report (no debug build, no report written), UserError when the program could not be run."""
    gvsoc.check_platform(platform)
    launcher = require()
    elfmod.load(elf_path, platform)
    timeout = gvsoc.timeout_for(max_cycles, trace=True)
    with tempfile.TemporaryDirectory(prefix="pulp-odl-gvsoc-power-") as wd:
        out, err, rc, secs, stopped = _launch(command(elf_path, platform, wd, launcher), timeout, Path(wd))
        if rc is None:
            raise UserError(f"{Path(elf_path).name}: GVSoC's power run did not finish within {timeout:.0f} s")
        try:
            parsed = (gvsoc.parse_output(out, err, rc, launcher) if not stopped else
                      {"status": "exit", "exit_code": rc, "stdout": out, "fault": None})
        except UserError as e:
            if DEBUG_LAUNCHER in str(e):
                raise PowerUnavailable(f"GVSoC failed ({launcher}): {DEBUG_LAUNCHER}: not found: this GVSoC "
                                       f"installation lacks its debug build, which its power report (--power) "
                                       f"needs; build that flavour of GVSoC") from None
            raise
        report, trace = Path(wd) / REPORT, Path(wd) / EOC_TRACE
        text = report.read_text(errors="replace") if report.exists() else ""
        if parsed["status"] == "exit" and "Power report start" not in text:
            raise PowerUnavailable(f"GVSoC ({launcher}) wrote no power report ({REPORT} "
                                   f"{'is empty' if report.exists() else 'missing'} after a --power run); "
                                   f"it needs a GVSoC whose debug build has power modelling and the proxy "
                                   f"(--control-script)")
        res = {"status": parsed["status"], "exit_code": parsed["exit_code"], "stdout": parsed["stdout"],
               "host_seconds": round(secs, 6), "seconds": None, "components": {},
               "stopped_after_report": stopped}
        if parsed["status"] != "exit":
            res["fault"] = parsed["fault"]
            return res
        try:
            end_ps = parse_end_ps(trace.read_text(errors="replace") if trace.exists() else "")
            rep = parse_report(text)
        except ValueError as e:
            raise PowerUnavailable(f"GVSoC ({launcher}): its power run cannot be read: {e}; it needs GVSoC's "
                                   f"pulp-open with traces in its debug build") from None
    res["seconds"] = end_ps * 1e-12
    res["components"] = energies(rep, res["seconds"])
    return res
