"""pulp-odl run: run an ELF on a backend and print its output and a cycle report."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from harness import platform as platmod
from harness.backends import embedded, gvsoc
from harness.errors import UserError

BACKENDS = {"embedded": embedded, "gvsoc": gvsoc}

NAME = "run"
HELP = "run an ELF on the simulated MCU and report cycles"
ORDER = 20
FAULT_EXIT = 3


def _positive_int(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise UserError(f"--max-cycles: '{text}' is not a number (give a positive integer)") from None
    if v <= 0:
        raise UserError(f"--max-cycles: must be positive, got {text}")
    return v


def add_arguments(p):
    p.add_argument("elf", help="program built with 'pulp-odl build'")
    p.add_argument("--platform", default=platmod.DEFAULT_PLATFORM, help="platform name or .toml path (default: pulp-open)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object and nothing else")
    p.add_argument("--max-cycles", default=None, help="stop with an error after this many cycles")
    p.add_argument("--trace", metavar="FILE", help="write one line per executed instruction to FILE")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="embedded",
                   help="embedded (pulp-odl's own simulator, default) or gvsoc (an installed GVSoC, pulp-open only)")


def exit_status(result: dict) -> int:
    if result["status"] != "exit":
        return FAULT_EXIT
    return result["exit_code"] & 0xFF if result["exit_code"] >= 0 else (result["exit_code"] & 0xFF) or 1


def run(args) -> int:
    plat = platmod.load(args.platform)
    max_cycles = _positive_int(args.max_cycles) if args.max_cycles is not None else None
    backend = BACKENDS[getattr(args, "backend", "embedded")]
    extra = {"stats": True} if backend is gvsoc else {}  # whole-run cycles from a second, profiling run
    res = backend.run(args.elf, plat, max_cycles=max_cycles, trace=args.trace, **extra)
    if args.json:
        print(json.dumps(res))
    else:
        sys.stdout.write(res["stdout"])
        sys.stdout.flush()
        _report(res)
    if res["status"] != "exit":
        print(f"pulp-odl: {backend.fault_line(res)}", file=sys.stderr)
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
    if res["status"] == "exit":
        t.add_row("exit code", str(res["exit_code"]))
    if res["mips"] is not None:
        t.add_row("simulated", f"{res['mips']:.1f} M instr/s ({res['host_seconds']:.3f} s)")
    else:
        t.add_row("simulated", f"{res['host_seconds']:.3f} s")
    con.print(t)


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else fmt.format(v)
