"""pulp-odl run: run an ELF on a backend and print its output and a cycle report."""
from __future__ import annotations

import json
import os
import sys

from harness.terminal import Console
from rich.table import Table

from harness import energy, paths, validate
from harness import platform as platmod
from harness.backends import embedded, gvsoc
from harness.errors import UserError

BACKENDS = {"embedded": embedded, "gvsoc": gvsoc}

NAME = "run"
HELP = "run an ELF on the simulated MCU and report cycles"
ORDER = 20
FAULT_EXIT = 3


def _is_trace(path) -> bool:
    """An existing file --trace may replace: empty, or a trace (lines start with a cycle count)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1)
    except OSError:
        return False
    return head == b"" or head.isdigit()


def add_arguments(p):
    p.add_argument("elf", help="program built with 'pulp-odl build'")
    p.add_argument("--platform", default=platmod.DEFAULT_PLATFORM, help="platform name or .toml path (default: pulp-open)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object and nothing else")
    p.add_argument("--max-cycles", type=validate.cycles_arg(), default=None, metavar="N",
                   help="stop with an error after this many cycles (1 to 2^64-1)")
    p.add_argument("--trace", metavar="FILE", help="write one line per executed instruction to FILE")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="embedded",
                   help="embedded (pulp-odl's own simulator, default) or gvsoc (an installed GVSoC, pulp-open only)")


def exit_status(result: dict) -> int:
    if result["status"] != "exit":
        return FAULT_EXIT
    return result["exit_code"] & 0xFF if result["exit_code"] >= 0 else (result["exit_code"] & 0xFF) or 1


def run(args) -> int:
    plat = platmod.load(args.platform)
    backend = BACKENDS[getattr(args, "backend", "embedded")]
    if args.trace is not None:
        paths.output_file(args.trace, "--trace", inputs=[args.elf] if os.path.exists(args.elf) else [],
                          owned=_is_trace, kind="an instruction trace")
    extra = {"stats": True} if backend is gvsoc else {}  # whole-run cycles from a second, profiling run
    with paths.user_path(args.trace or args.elf, "--trace path"):
        res = backend.run(args.elf, plat, max_cycles=args.max_cycles, trace=args.trace, **extra)
    try:
        if args.json:
            print(json.dumps(res))
        else:
            sys.stdout.write(res["stdout"])
            sys.stdout.flush()
            _report(res)
        sys.stdout.flush()
    except BrokenPipeError:
        paths.detach_stdout()   # the reader stopped early (| head): the program's status still counts
    if res["status"] != "exit":
        print(f"pulp-odl: {backend.fault_line(res)}", file=sys.stderr)
    if res.get("trace_error"):
        print(f"pulp-odl: error: {args.trace}: {res['trace_error']}; the trace is incomplete: free some space or "
              "choose another --trace path", file=sys.stderr)
        return UserError.exit_code
    return exit_status(res)


def _report(res: dict) -> None:
    con = Console(stderr=False, highlight=False)
    t = Table(title=f"cycle report ({res['platform']}, {res['backend']})", show_header=False, box=None)
    t.add_row("cycles", _num(res["cycles"], "{:,}"))
    t.add_row("instructions", _num(res["instructions"], "{:,}"))
    t.add_row("IPC", _num(res["ipc"], "{:.3f}"))
    for k, v in res["stalls"].items():
        if v:
            t.add_row(f"stall: {k}", f"{v:,}")
    if res.get("energy"):
        t.add_row("energy", energy.summary(res["energy"]))
    win = res.get("energy_window")
    if win:
        t.add_row("energy, marked", f"{energy.summary(win)} in {win['windows']} window(s), {win['events']['cycles']:,} cycles")
    if res["status"] == "exit":
        t.add_row("exit code", str(res["exit_code"]))
    if res["mips"] is not None:
        t.add_row("simulated", f"{res['mips']:.1f} M instr/s ({res['host_seconds']:.3f} s)")
    else:
        t.add_row("simulated", f"{res['host_seconds']:.3f} s")
    con.print(t)


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else fmt.format(v)
