"""pulp-odl run: run an ELF on a backend. stdout holds exactly what the program printed, so that two
backends' outputs compare as they are; --report adds a cycle report on stderr, --json one JSON object."""
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
HELP = "run an ELF on the simulated MCU (its output on stdout; --report: cycles on stderr)"
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
    p.add_argument("--report", action="store_true",
                   help="after the program's output, print a cycle report (cycles, instructions, stalls) on stderr")
    p.add_argument("--max-cycles", type=validate.cycles_arg(), default=None, metavar="N",
                   help="stop with an error after this many cycles (1 to 2^64-1)")
    p.add_argument("--trace", metavar="FILE", help="write one line per executed instruction to FILE")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="embedded",
                   help="embedded (pulp-odl's own simulator, default) or gvsoc (an installed GVSoC, pulp-open only)")
    add_timeline_arguments(p, "FILE", "write a timeline of the run to FILE (Chrome trace-event JSON, for Perfetto "
                                      "or chrome://tracing): per-core states and calls, both DMAs, counters")


def add_timeline_arguments(p, metavar: str, text: str) -> None:
    p.add_argument("--timeline", metavar=metavar, help=text)
    p.add_argument("--timeline-window", type=validate.window_arg(), metavar="FROM:TO",
                   help="record the timeline only from cycle FROM to cycle TO (either may be left out), "
                        "at a finer sample period")


def timeline_request(args, backend: str = "embedded"):
    """The timeline a command line asks for (harness.timeline.Request), or None; refuses what no
    backend can record."""
    if getattr(args, "timeline_window", None) is not None and args.timeline is None:
        raise UserError("--timeline-window: needs --timeline; name the file (or directory) to write")
    if args.timeline is None:
        return None
    if backend != "embedded":
        raise UserError(f"--timeline: the {backend} backend records no timeline; use the embedded backend")
    from harness import timeline
    return timeline.request(args.timeline_window)


def exit_status(result: dict) -> int:
    if result["status"] != "exit":
        return FAULT_EXIT
    return result["exit_code"] & 0xFF if result["exit_code"] >= 0 else (result["exit_code"] & 0xFF) or 1


def run(args) -> int:
    if getattr(args, "report", False) and args.json:
        raise UserError("--report: the JSON object of --json already holds the cycle report; give one of them")
    plat = platmod.load(args.platform)
    backend = BACKENDS[getattr(args, "backend", "embedded")]
    if args.trace is not None:
        paths.output_file(args.trace, "--trace", inputs=[args.elf] if os.path.exists(args.elf) else [],
                          owned=_is_trace, kind="an instruction trace")
    req = timeline_request(args, getattr(args, "backend", "embedded"))
    if req is not None:
        from harness import timeline
        timeline.check_output(args.timeline, "--timeline",
                              inputs=[p for p in (args.elf, args.trace) if p and os.path.exists(p)])
        if args.trace is not None and paths.same_file(args.trace, args.timeline):
            raise UserError(f"--timeline {args.timeline}: is also the --trace file; give two paths")
    # whole-run cycles (a second, profiling run) only when something shows them
    extra = {"stats": True} if backend is gvsoc and (args.json or getattr(args, "report", False)) else {}
    if req is not None:
        extra["timeline"] = req
    with paths.user_path(args.trace or args.elf, "--trace path"):
        res = backend.run(args.elf, plat, max_cycles=args.max_cycles, trace=args.trace, **extra)
    if req is not None:
        doc = timeline.to_trace(res.pop("timeline"), plat.clock_hz, os.path.basename(args.elf), plat.name)
        timeline.write(args.timeline, doc)
        res["timeline"] = {"path": str(args.timeline), "events": len(doc["traceEvents"])}
    try:
        if args.json:
            print(json.dumps(res))
        else:
            sys.stdout.write(res["stdout"])
            sys.stdout.flush()
            if getattr(args, "report", False):
                _report(res)   # on stderr: stdout holds exactly what the program printed
            elif res.get("timeline"):
                print(f"timeline: {res['timeline']['path']} ({res['timeline']['events']:,} trace events)", file=sys.stderr)
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
    con = Console(stderr=True, highlight=False)
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
    if res.get("timeline"):
        t.add_row("timeline", f"{res['timeline']['path']} ({res['timeline']['events']:,} trace events)")
    if res["mips"] is not None:
        t.add_row("simulated", f"{res['mips']:.1f} M instr/s ({res['host_seconds']:.3f} s)")
    else:
        t.add_row("simulated", f"{res['host_seconds']:.3f} s")
    con.print(t)


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else fmt.format(v)
