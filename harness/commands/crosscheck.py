"""pulp-odl crosscheck: run the same ELFs on the embedded simulator and on GVSoC and compare them.

Per program: whole-run cycles on both backends and their % difference, whether the printed outputs
are identical, and exit statuses. Programs that time themselves and print the result as
'name value' lines (the calibration kit's format, e.g. 'ic.mul_dep_x32.cycles 98') are also
compared number by number; those per-section % differences are the fair comparison, because
GVSoC's whole-run count includes its reset and ELF-loading phase (see harness/backends/gvsoc.py).

% difference = (embedded - gvsoc) / gvsoc * 100: GVSoC is the reference.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from harness import ROOT, paths
from harness import platform as platmod
from harness.backends import embedded, gvsoc
from harness.errors import UserError

NAME = "crosscheck"
HELP = "run ELFs on the embedded simulator and on GVSoC and compare cycles and outputs"
ORDER = 30

DEFAULT_OUTPUT = ROOT / "results" / "crosscheck.csv"
TEST_PROGRAMS = ROOT / "tests" / "programs"

# In the kit's format a timed section prints its T1 - T0 as '<section>.cycles' and, next to it,
# performance-counter readings, start skews and flags. Those companions are not timings of their own
# (a 0-vs-2 imiss is not a 100 % timing error), so they are left out of the per-section statistics;
# they still count in the outputs-equal column. Any other 'name <decimal>' line is taken as a timing.
COMPANIONS = frozenset({
    "pcc", "instr", "ld_stall", "jmp_stall", "imiss", "apu_cont", "misal", "tcdm_cont", "t0_rel",
    "start_rel", "arrive_rel", "leave_rel", "leave_minus_last_arrival", "polls", "ok", "sections",
    "boot_cluster", "value", "rs1_delta", "result",
})
_NAME_VALUE = re.compile(r"([^\s=]*[A-Za-z_][^\s=]*)\s+(-?\d+)")


def _positive(text: str) -> int:
    import argparse

    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number (give a positive integer)") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return v


def add_arguments(p):
    p.add_argument("--programs", metavar="DIR",
                   help="directory of ELFs to run (*.elf); default: build tests/programs/*.c with 'pulp-odl build'")
    p.add_argument("--max-cycles", type=_positive, default=None, metavar="N",
                   help="give up on a program after N cycles (on GVSoC: after the host time N cycles should take)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object and nothing else")
    p.add_argument("--output", metavar="FILE", default=str(DEFAULT_OUTPUT),
                   help="CSV of the per-program table (default: results/crosscheck.csv); the per-section "
                        "and summary tables go next to it as FILE stem + .sections.csv / .summary.csv")


# ---------------------------------------------------------------------------------------------
# comparison (pure functions, used by the tests too)
# ---------------------------------------------------------------------------------------------
def pct_diff(ours, ref) -> float | None:
    if ours is None or ref is None:
        return None
    if ref == 0:
        return 0.0 if ours == 0 else None
    return 100.0 * (ours - ref) / ref


def name_values(text: str) -> list[tuple[str, int]]:
    """Every 'name value' line with a decimal value, in order; a repeated name gets '#2', '#3'..."""
    out, seen = [], {}
    for line in text.splitlines():
        m = _NAME_VALUE.fullmatch(line.strip())
        if not m:
            continue
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name}#{seen[name]}", int(m.group(2))))
    return out


def compare_sections(ours_text: str, ref_text: str) -> list[dict]:
    """Per-section comparison of two outputs, in the reference's order.

    '<s>.cycles' is compared as cycles minus '<s>.imiss' when both outputs print the miss count:
    GVSoC replaces icache lines pseudo-randomly, which the embedded model deliberately does not
    (platforms/pulp-open.toml [differences]), and the calibration kit prescribes exactly this.
    """
    ours, ref = dict(name_values(ours_text)), name_values(ref_text)
    ref_d = dict(ref)
    rows = []
    for name, gv in ref:
        quantity = name.split("#")[0].rsplit(".", 1)[-1]
        if quantity in COMPANIONS:
            continue
        emb = ours.get(name)
        adjusted = False
        if quantity == "cycles" and "." in name and "#" not in name:
            imk = name[: -len("cycles")] + "imiss"
            if imk in ours and imk in ref_d and emb is not None:
                emb, gv, adjusted = emb - ours[imk], gv - ref_d[imk], True
        rows.append({"section": name, "embedded": emb, "gvsoc": gv, "minus_imiss": adjusted,
                     "pct_diff": pct_diff(emb, gv)})
    return rows


def stats(values) -> dict:
    vals = [abs(v) for v in values if v is not None]
    return {"n": len(vals), "mean_abs_pct": sum(vals) / len(vals) if vals else None,
            "max_abs_pct": max(vals) if vals else None}


def _status(res: dict):
    return res["exit_code"] if res["status"] == "exit" else res["status"]


def compare(program: str, emb: dict, gv: dict) -> tuple[dict, list[dict]]:
    secs = compare_sections(emb["stdout"], gv["stdout"])
    for s in secs:
        s["program"] = program
    st = stats(s["pct_diff"] for s in secs)
    e_lines, g_lines = emb["stdout"].splitlines(), gv["stdout"].splitlines()
    differing = sum(a != b for a, b in zip(e_lines, g_lines)) + abs(len(e_lines) - len(g_lines))
    row = {
        "program": program,
        "cycles_embedded": emb["cycles"],
        "cycles_gvsoc": gv["cycles"],
        "pct_diff": pct_diff(emb["cycles"], gv["cycles"]),
        "outputs_equal": emb["stdout"] == gv["stdout"],
        "lines_differing": differing,
        "exit_embedded": _status(emb),
        "exit_gvsoc": _status(gv),
        "sections": st["n"],
        "sections_mean_abs_pct": st["mean_abs_pct"],
        "sections_max_abs_pct": st["max_abs_pct"],
    }
    return row, secs


def summarize(rows: list[dict], sections: list[dict]) -> dict:
    whole = [r["pct_diff"] for r in rows]
    per_sec = [s["pct_diff"] for s in sections]
    return {
        "programs": len(rows),
        "outputs_equal": sum(1 for r in rows if r["outputs_equal"]),
        "whole_run": stats(whole),
        "sections": stats(per_sec),
        "all": stats(whole + per_sec),
    }


# ---------------------------------------------------------------------------------------------
# programs
# ---------------------------------------------------------------------------------------------
def _build_test_programs(plat, out: Path) -> list[Path]:
    from harness import toolchain

    elfs = []
    for src in sorted(TEST_PROGRAMS.glob("*.c")):
        elfs.append(toolchain.build([src], out / f"{src.stem}.elf", plat, include_dirs=[TEST_PROGRAMS]))
    return elfs


def programs(args, plat, scratch: Path) -> list[Path]:
    if args.programs:
        d = Path(args.programs)
        if not d.is_dir():
            raise UserError(f"--programs {d}: not a directory (give a directory of .elf files)")
        elfs = sorted(d.glob("*.elf"))
        if not elfs:
            raise UserError(f"--programs {d}: no .elf files there (build some with 'pulp-odl build')")
        return elfs
    return _build_test_programs(plat, scratch)


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------
def _write_csv(df, path: Path) -> None:
    """Atomically: a reader never sees half a table, and a failed run leaves the old one in place."""
    if path.exists() and not path.is_file():   # a device (/dev/null): written in place, never renamed over
        df.to_csv(path, index=False)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            df.to_csv(f, index=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def output_paths(output) -> dict[str, Path]:
    p = Path(output)
    stem = p.with_suffix("") if p.suffix == ".csv" else p
    return {"programs": p, "sections": Path(f"{stem}.sections.csv"), "summary": Path(f"{stem}.summary.csv")}


def write_tables(rows, sections, summary, output) -> dict[str, Path]:
    import pandas as pd

    paths = output_paths(output)
    _write_csv(pd.DataFrame(rows, columns=list(rows[0].keys()) if rows else None), paths["programs"])
    cols = ["program", "section", "embedded", "gvsoc", "minus_imiss", "pct_diff"]
    _write_csv(pd.DataFrame(sections, columns=cols), paths["sections"])
    srows = [{"comparison": k, **summary[k]} for k in ("whole_run", "sections", "all")]
    _write_csv(pd.DataFrame(srows, columns=["comparison", "n", "mean_abs_pct", "max_abs_pct"]), paths["summary"])
    return paths


def _fmt_pct(v) -> str:
    return "n/a" if v is None else f"{v:+.2f} %"


def _fmt_abs(v) -> str:
    return "n/a" if v is None else f"{v:.2f} %"


def _fmt_int(v) -> str:
    return "n/a" if v is None else f"{v:,}"


def print_tables(rows, summary, paths) -> None:
    from rich.console import Console
    from rich.table import Table

    # piped into a file or CI log, rich would squeeze nine columns into 80
    con = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    t = Table(title="embedded simulator vs GVSoC (pulp-open)")
    for col, just in (("program", "left"), ("cycles embedded", "right"), ("cycles gvsoc", "right"),
                      ("% difference", "right"), ("outputs equal", "center"), ("exit emb/gv", "center"),
                      ("sections", "right"), ("sections mean |%|", "right"), ("sections max |%|", "right")):
        t.add_column(col, justify=just)
    for r in rows:
        eq = "[green]yes[/]" if r["outputs_equal"] else f"[yellow]no[/] ({r['lines_differing']} lines)"
        t.add_row(r["program"], _fmt_int(r["cycles_embedded"]), _fmt_int(r["cycles_gvsoc"]), _fmt_pct(r["pct_diff"]),
                  eq, f"{r['exit_embedded']}/{r['exit_gvsoc']}", str(r["sections"]),
                  _fmt_abs(r["sections_mean_abs_pct"]), _fmt_abs(r["sections_max_abs_pct"]))
    con.print(t)
    s = Table(title="summary (absolute % difference)")
    for col in ("comparison", "n", "mean", "max"):
        s.add_column(col, justify="left" if col == "comparison" else "right")
    labels = {"whole_run": "whole runs (GVSoC includes its boot phase)", "sections": "self-timed sections",
              "all": "all"}
    for k in ("whole_run", "sections", "all"):
        v = summary[k]
        s.add_row(labels[k], str(v["n"]), _fmt_abs(v["mean_abs_pct"]), _fmt_abs(v["max_abs_pct"]))
    con.print(s)
    con.print(f"outputs equal: {summary['outputs_equal']} of {summary['programs']} programs")


# ---------------------------------------------------------------------------------------------
def _failed(program: str, err: str) -> dict:
    """The row of a program that could not be run on one of the backends."""
    return {"program": program, "cycles_embedded": None, "cycles_gvsoc": None, "pct_diff": None,
            "outputs_equal": False, "lines_differing": 0, "exit_embedded": "error", "exit_gvsoc": "error",
            "sections": 0, "sections_mean_abs_pct": None, "sections_max_abs_pct": None, "error": err}


def is_crosscheck_csv(path: Path) -> bool:
    return paths.starts_with("program,")(Path(path))


def run(args) -> int:
    gvsoc.require()  # before building or simulating anything: without GVSoC there is nothing to compare
    # the output files are checked before any program runs, so that a bad --output loses nothing
    for key, path in output_paths(args.output).items():
        paths.output_file(path, "--output", owned=is_crosscheck_csv, kind="a crosscheck table")
    plat = platmod.load("pulp-open")
    rows, sections, failed = [], [], 0
    with tempfile.TemporaryDirectory(prefix="pulp-odl-crosscheck-") as scratch:
        for elf in programs(args, plat, Path(scratch)):
            if not args.json:
                print(f"crosscheck: {Path(elf).name}", file=sys.stderr)
            try:
                emb = embedded.run(elf, plat, max_cycles=args.max_cycles)
                gv = gvsoc.run(elf, plat, max_cycles=args.max_cycles, stats=True)
            except UserError as e:   # one bad program is reported in its row; the others still run
                if not args.json:
                    print(f"crosscheck: {Path(elf).name}: {e}", file=sys.stderr)
                rows.append(_failed(Path(elf).stem, str(e)))
                failed += 1
                continue
            row, secs = compare(Path(elf).stem, emb, gv)
            row["error"] = ""
            rows.append(row)
            sections.extend(secs)
    summary = summarize([r for r in rows if not r["error"]], sections)
    out_paths = output_paths(args.output)
    if args.json:
        print(json.dumps({"programs": rows, "sections": sections, "summary": summary,
                          "files": {k: str(v) for k, v in out_paths.items()}}))
    else:
        print_tables([r for r in rows if not r["error"]], summary, out_paths)
    with paths.user_path(args.output, "--output path"):   # the tables are printed already: nothing is lost
        write_tables(rows, sections, summary, args.output)
    if not args.json:
        print(f"wrote {out_paths['programs']} (+ .sections.csv, .summary.csv)")
    if failed:
        first = next(r for r in rows if r["error"])
        print(f"pulp-odl: {failed} of {len(rows)} program(s) could not be run, the others were compared "
              f"({first['program']}: {first['error']}; every reason is in {out_paths['programs']})", file=sys.stderr)
        return 1
    return 0
