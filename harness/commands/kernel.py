"""pulp-odl kernel: generate, build, run and check the training kernels of one layer."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from harness import energy, paths, validate
from harness import platform as platmod
from harness.commands.run import add_timeline_arguments, timeline_request
from harness.errors import UserError
from harness.kernels import runner
from harness.kernels import spec as specmod

NAME = "kernel"
HELP = "generate, run and check FP16 training kernels of one layer (fw, wg, ig, update)"
ORDER = 40


def add_arguments(p):
    size = validate.int_arg(1, validate.MAX_EXTENT)
    p.add_argument("--kind", required=True, choices=specmod.KINDS)
    p.add_argument("--cin", required=True, type=size)
    p.add_argument("--cout", required=True, type=size)
    p.add_argument("--hw", required=True, type=validate.hw_arg, help="input height and width: H or HxW")
    p.add_argument("--k", type=size, help="kernel size (conv, dw; default 3)")
    p.add_argument("--stride", type=size, default=1)
    p.add_argument("--pad", type=validate.int_arg(0, validate.MAX_EXTENT),
                   help="padding on every side (default k//2 for conv, dw)")
    p.add_argument("--step", required=True, choices=specmod.STEPS + ("all",))
    p.add_argument("--p", type=validate.fraction_arg(), help="partiality for input and output channels, in (0, 1]")
    p.add_argument("--p-in", type=validate.fraction_arg(), help="partiality of the input channels, in (0, 1]")
    p.add_argument("--p-out", type=validate.fraction_arg(), help="partiality of the output-gradient channels, in (0, 1]")
    p.add_argument("--platform", default=platmod.DEFAULT_PLATFORM)
    p.add_argument("--placement", choices=("method", "frozen", "l2"), default="method",
                   help="where tensors start: method.md's placement (default), a frozen layer's, or all in L2")
    p.add_argument("--json", action="store_true", help="print one JSON list, one object per step")
    p.add_argument("--keep", metavar="DIR", help="keep the generated sources and ELF in DIR (a new or empty "
                   "directory, or one an earlier --keep wrote)")
    p.add_argument("--backend", choices=("embedded", "gvsoc"), default="embedded",
                   help="simulator to run on (gvsoc: see 'Running on GVSoC' in the README)")
    add_timeline_arguments(p, "DIR", "write a timeline of each step's program to DIR/STEP.json (Chrome trace-event "
                                     "JSON, for Perfetto or chrome://tracing)")


def specs_from_args(a) -> list:
    if a.p is not None and (a.p_in is not None or a.p_out is not None):
        raise UserError("give either --p or --p-in/--p-out, not both")
    p_in = a.p if a.p is not None else (a.p_in if a.p_in is not None else 1.0)
    p_out = a.p if a.p is not None else (a.p_out if a.p_out is not None else p_in)
    platmod.load(a.platform)
    steps = specmod.STEPS if a.step == "all" else (a.step,)
    return [specmod.make(a.kind, a.cin, a.cout, a.hw[0], a.hw[1], st, k=a.k, stride=a.stride, pad=a.pad,
                         p_in=p_in, p_out=p_out, platform=a.platform, placement=a.placement) for st in steps]


def run(args) -> int:
    from pathlib import Path

    specs = specs_from_args(args)
    req = timeline_request(args, args.backend)
    if req is not None and args.keep and paths.same_file(args.keep, args.timeline):
        raise UserError(f"--timeline {args.timeline}: is also the --keep directory; give two directories")
    if args.keep:
        runner.check_keep_dir(Path(args.keep), [sp.step for sp in specs])
    if req is not None:
        from harness import timeline
        timeline.check_output_dir(args.timeline, "--timeline")
    rows = []
    for sp in specs:
        work = Path(args.keep) / sp.step if args.keep else None
        try:
            with paths.user_path(work or Path("."), "--keep directory"):
                row = runner.run_spec(sp, workdir=work, keep=bool(args.keep), backend=args.backend, timeline=req)
            if req is not None:
                path = Path(args.timeline) / f"{sp.step}.json"
                doc = timeline.to_trace(row.pop("timeline"), platmod.load(sp.platform).clock_hz,
                                        f"{sp.name} ({sp.step})", sp.platform)
                timeline.write(path, doc)
                row["timeline"] = str(path)
            rows.append(row)
        except (UserError, KeyboardInterrupt):
            if rows and not args.json:   # the steps that finished are shown before the error
                _table(rows)
            raise
    if args.json:
        print(json.dumps(rows))
    else:
        _table(rows)
    bad = [r["step"] for r in rows if not r["ok"]]
    if bad:
        print(f"pulp-odl: numeric mismatch in step(s) {', '.join(bad)} (see max_abs_err)", file=sys.stderr)
        return 1
    return 0


def _table(rows):
    first = rows[0]
    t = Table(title=f"{first['kind']} {first['cin']}->{first['cout']} at {first['h']}x{first['w']}, "
                    f"k_in {first['k_in']} k_out {first['k_out']}, {first['platform']}")
    for col in ("step", "cycles", "MACs", "MAC/cycle", "ext in", "compute", "DMA wait", "overhead", "ext out",
                "tiles", "L1 bytes", "energy", "max |err|", "ok"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(r["step"], f"{r['cycles']:,}", f"{r['macs']:,}", f"{r['mac_per_cycle']:.2f}", f"{r['ext_in_cycles']:,}",
                  f"{r['compute_cycles']:,}", f"{r['dma_wait_cycles']:,}", f"{r['overhead_cycles']:,}", f"{r['ext_out_cycles']:,}",
                  str(r["tiles"]), f"{r['l1_bytes']:,}", _joules(r.get("energy_J")), f"{r['max_abs_err']:.2e}",
                  "yes" if r["ok"] else "NO")
    con = Console(highlight=False, width=max(150, Console().width))
    con.print(t)
    priced = [r for r in rows if r.get("energy_J") is not None]
    if priced:
        parts = Table(title=f"energy of the timed section, priced by platform {first['platform']}")
        parts.add_column("step")
        for c in ("total", *energy.CATEGORIES, "nJ/MAC"):
            parts.add_column(c, justify="right")
        for r in priced:
            per_mac = f"{r['energy_J'] / r['macs'] * 1e9:.3g}" if r["macs"] else ""
            parts.add_row(r["step"], _joules(r["energy_J"]), *[_joules(r[f"energy_{c}_J"]) for c in energy.CATEGORIES],
                          per_mac)
        con.print(parts)
    stalls = Table(title="stall cycles, all cores")
    keys = [k for k in rows[0]["stalls"] if any(r["stalls"][k] for r in rows)]
    stalls.add_column("step")
    for k in keys:
        stalls.add_column(k, justify="right")
    for r in rows:
        stalls.add_row(r["step"], *[f"{r['stalls'][k]:,}" for k in keys])
    con.print(stalls)


def _joules(v) -> str:
    return "n/a" if v is None else energy.joules(v)
