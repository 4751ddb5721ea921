"""pulp-odl crosscheck: run the same ELFs on the embedded simulator and on GVSoC and compare them.

Per program: whole-run cycles on both backends and their % difference, whether the printed outputs
are identical apart from counter lines (lines that differ only in the numbers of a timing or a
performance counter, counted on their own), and exit statuses. Programs that time themselves and print
the result as 'name value' lines (the calibration kit's format, e.g. 'ic.mul_dep_x32.cycles 98') are
also compared number by number; those per-section % differences are the fair comparison, because
GVSoC's whole-run count includes its reset and ELF-loading phase (see harness/backends/gvsoc.py).
A section's own time ('.cycles') is compared minus its instruction-miss cycles; other timings of a
section that prints '.cycles' (such as '.issue', with no miss count of its own) are listed separately
as parts. With --kernels, the kernels of an experiment instead (harness/kernels/crosscheck.py).

% difference = (embedded - gvsoc) / gvsoc * 100: GVSoC is the reference.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from harness import ROOT, paths, validate
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
# A line that differs between the backends only in its numbers is a counter line when it names a
# timing or a performance counter (the kit's quantities, a kernel's 'ODL cycles ...', '... N cycles').
_NUMBER = re.compile(r"-?\b\d+\b")
_COUNTER_WORDS = re.compile(r"cycle|instr|stall|miss|cont|pcc|misal|_rel\b|leave|polls|issue|kick_to_done|total|boot")


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
    p.add_argument("--kernels", metavar="EXPERIMENT",
                   help="instead of ELFs, every pulp-open kernel of a kernels experiment (a name in experiments/ or "
                        "a .toml path, e.g. regress), each built once and run on both backends; writes "
                        "results/crosscheck/EXPERIMENT.csv")
    p.add_argument("--energy", action="store_true",
                   help="compare energy instead of cycles: the embedded model against GVSoC's power report "
                        "(gvrun --power, GVSoC's debug build) on the same ELFs, like for like (docs/energy.md); "
                        "writes the cycle table's path with .energy.csv")
    p.add_argument("--jobs", type=validate.jobs_arg(), default=1, metavar="N",
                   help="with --kernels: kernels run side by side (default 1)")
    p.add_argument("--max-cycles", type=_positive, default=None, metavar="N",
                   help="give up on a program after N cycles (on GVSoC: after the host time N cycles should take)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object and nothing else")
    p.add_argument("--output", metavar="FILE", default=None,
                   help="CSV of the per-program table (default: results/crosscheck.csv); the per-section "
                        "and summary tables go next to it as FILE stem + .sections.csv / .summary.csv "
                        "(--kernels: results/crosscheck/EXPERIMENT.csv and .summary.csv)")


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

    '<s>.cycles' is compared as cycles minus '<s>.imiss' when both outputs print the miss count: how
    GVSoC's icaches replace lines is modelled (its LFSR), but a program may still take other misses on
    the two backends, and the calibration kit prescribes exactly this. Other timings of a section
    (a part of it, with no miss count of their own) are rows of kind 'part', kept out of the
    sections' statistics.
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
        # a timing beside the section's own '.cycles' is a part of that section
        base = name.split("#")[0].rsplit(".", 1)[0]
        kind = "part" if quantity != "cycles" and "." in name and f"{base}.cycles" in ref_d else "section"
        if quantity == "cycles" and "." in name and "#" not in name:
            imk = name[: -len("cycles")] + "imiss"
            if imk in ours and imk in ref_d and emb is not None:
                emb, gv, adjusted = emb - ours[imk], gv - ref_d[imk], True
        rows.append({"section": name, "kind": kind, "embedded": emb, "gvsoc": gv, "minus_imiss": adjusted,
                     "pct_diff": pct_diff(emb, gv)})
    return rows


def stats(values) -> dict:
    vals = [abs(v) for v in values if v is not None]
    return {"n": len(vals), "mean_abs_pct": sum(vals) / len(vals) if vals else None,
            "max_abs_pct": max(vals) if vals else None}


def _status(res: dict):
    return res["exit_code"] if res["status"] == "exit" else res["status"]


def is_counter_line(a: str, b: str) -> bool:
    """Two lines (one per backend) that differ only in the numbers of a timing or counter."""
    return _NUMBER.sub("#", a) == _NUMBER.sub("#", b) and bool(_COUNTER_WORDS.search(_NUMBER.sub("", a)))


def diff_lines(ours: str, ref: str) -> tuple[int, int]:
    """(other lines differing, counter lines differing) between two outputs, line by line."""
    a, b = ours.splitlines(), ref.splitlines()
    other = abs(len(a) - len(b))
    counters = 0
    for x, y in zip(a, b):
        if x != y:
            if is_counter_line(x, y):
                counters += 1
            else:
                other += 1
    return other, counters


def compare(program: str, emb: dict, gv: dict) -> tuple[dict, list[dict]]:
    secs = compare_sections(emb["stdout"], gv["stdout"])
    for s in secs:
        s["program"] = program
    st = stats(s["pct_diff"] for s in secs if s["kind"] == "section")
    differing, counters = diff_lines(emb["stdout"], gv["stdout"])
    row = {
        "program": program,
        "cycles_embedded": emb["cycles"],
        "cycles_gvsoc": gv["cycles"],
        "pct_diff": pct_diff(emb["cycles"], gv["cycles"]),
        "outputs_equal": differing == 0,
        "lines_differing": differing,
        "counter_lines_differing": counters,
        "exit_embedded": _status(emb),
        "exit_gvsoc": _status(gv),
        "sections": st["n"],
        "sections_mean_abs_pct": st["mean_abs_pct"],
        "sections_max_abs_pct": st["max_abs_pct"],
    }
    return row, secs


def summarize(rows: list[dict], sections: list[dict]) -> dict:
    whole = [r["pct_diff"] for r in rows]
    per_sec = [s["pct_diff"] for s in sections if s["kind"] == "section"]
    parts = [s["pct_diff"] for s in sections if s["kind"] == "part"]
    return {
        "programs": len(rows),
        "outputs_equal": sum(1 for r in rows if r["outputs_equal"]),
        "whole_run": stats(whole),
        "sections": stats(per_sec),
        "parts": stats(parts),
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
    cols = ["program", "section", "kind", "embedded", "gvsoc", "minus_imiss", "pct_diff"]
    _write_csv(pd.DataFrame(sections, columns=cols), paths["sections"])
    srows = [{"comparison": k, **summary[k]} for k in ("whole_run", "sections", "parts", "all")]
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
        counters = f", {r['counter_lines_differing']} counter lines differ" if r["counter_lines_differing"] else ""
        eq = ("[green]yes[/]" if r["outputs_equal"] else f"[yellow]no[/] ({r['lines_differing']} lines)") + counters
        t.add_row(r["program"], _fmt_int(r["cycles_embedded"]), _fmt_int(r["cycles_gvsoc"]), _fmt_pct(r["pct_diff"]),
                  eq, f"{r['exit_embedded']}/{r['exit_gvsoc']}", str(r["sections"]),
                  _fmt_abs(r["sections_mean_abs_pct"]), _fmt_abs(r["sections_max_abs_pct"]))
    con.print(t)
    s = Table(title="summary (absolute % difference)")
    for col in ("comparison", "n", "mean", "max"):
        s.add_column(col, justify="left" if col == "comparison" else "right")
    labels = {"whole_run": "whole runs (GVSoC includes its boot phase)", "sections": "self-timed sections",
              "parts": "parts of sections (issue, ...; no miss count of their own)", "all": "whole runs and sections"}
    for k in ("whole_run", "sections", "parts", "all"):
        v = summary[k]
        s.add_row(labels[k], str(v["n"]), _fmt_abs(v["mean_abs_pct"]), _fmt_abs(v["max_abs_pct"]))
    con.print(s)
    con.print(f"outputs equal apart from counter lines: {summary['outputs_equal']} of {summary['programs']} programs")


# ---------------------------------------------------------------------------------------------
def _failed(program: str, err: str) -> dict:
    """The row of a program that could not be run on one of the backends."""
    return {"program": program, "cycles_embedded": None, "cycles_gvsoc": None, "pct_diff": None,
            "outputs_equal": False, "lines_differing": 0, "counter_lines_differing": 0, "exit_embedded": "error",
            "exit_gvsoc": "error",
            "sections": 0, "sections_mean_abs_pct": None, "sections_max_abs_pct": None, "error": err}


def is_crosscheck_csv(path: Path) -> bool:
    return paths.starts_with("program,")(Path(path))


def is_kernel_crosscheck_csv(path: Path) -> bool:
    return paths.starts_with("kernel,kind,step,cycles_embedded,")(Path(path))


# Which files a run may replace, by their first line: each table is recognised by its own header.
OWNED = {"programs": is_crosscheck_csv, "sections": paths.starts_with("program,section,kind,"),
         "kernels": is_kernel_crosscheck_csv, "summary": paths.starts_with("comparison,n,")}


def kernel_output_paths(output) -> dict[str, Path]:
    p = Path(output)
    stem = p.with_suffix("") if p.suffix == ".csv" else p
    return {"kernels": p, "summary": Path(f"{stem}.summary.csv")}


def run_kernels(args) -> int:
    import pandas as pd

    from harness.kernels import crosscheck as kcc

    if args.programs:
        raise UserError("--kernels: compares kernels, --programs ELFs; give one of them")
    if args.max_cycles is not None:
        raise UserError("--max-cycles: applies to --programs; a kernel's runs have their own limits")
    keep, left = kcc.specs(args.kernels)
    gvsoc.require()
    output = args.output or str(ROOT / "results" / "crosscheck" / f"{Path(args.kernels).stem}.csv")
    out_paths = kernel_output_paths(output)
    for key, path in out_paths.items():
        paths.output_file(path, "--output", owned=OWNED[key], kind="a kernel crosscheck table")
    done = [0]

    def progress(row):
        done[0] += 1
        if not args.json:
            what = row["error"] or f"{kcc.fmt(row['pct_diff'], '{:+.2f} %')} cycles, " \
                                   f"{kcc.fmt(row['compute_pct_diff'], '{:+.2f} %')} compute"
            print(f"crosscheck: [{done[0]}/{len(keep)}] {row['kernel']}: {what}", file=sys.stderr)

    rows = kcc.run(keep, jobs=args.jobs, progress=progress)
    summary = kcc.summarize(rows, len(left))
    if args.json:
        print(json.dumps({"kernels": rows, "summary": summary, "files": {k: str(v) for k, v in out_paths.items()}}))
    else:
        _print_kernels(rows, summary)
    with paths.user_path(output, "--output path"):   # the table is printed already: nothing is lost
        _write_csv(pd.DataFrame(rows, columns=kcc.COLUMNS), out_paths["kernels"])
        _write_csv(pd.DataFrame(kcc.summary_rows(summary), columns=kcc.SUMMARY_COLUMNS), out_paths["summary"])
    if not args.json:
        print(f"wrote {out_paths['kernels']} (+ .summary.csv)")
    if summary["failed"] or summary["ok_both"] < summary["kernels"]:
        bad = next(r for r in rows if r["error"] or not (r["ok_embedded"] and r["ok_gvsoc"]))
        why = bad["error"] or "a NumPy check failed"
        print(f"pulp-odl: {summary['kernels'] - summary['ok_both']} of {summary['kernels']} kernel(s) did not pass on "
              f"both backends ({bad['kernel']}: {why}; every row is in {out_paths['kernels']})", file=sys.stderr)
        return 1
    return 0


def _print_kernels(rows, summary) -> None:
    from rich.console import Console
    from rich.table import Table

    from harness.kernels.crosscheck import fmt as _fmt, summary_line

    con = Console(highlight=False, width=None if sys.stdout.isatty() else 180)
    t = Table(title="kernels: embedded simulator vs GVSoC (pulp-open), the same ELF")
    for col in ("kernel", "cycles emb", "cycles gvsoc", "%", "compute emb", "compute gvsoc", "%", "checks emb/gv",
                "same outputs"):
        t.add_column(col, justify="left" if col == "kernel" else "right")
    for r in rows:
        t.add_row(r["kernel"], _fmt(r["cycles_embedded"], "{:,}"), _fmt(r["cycles_gvsoc"], "{:,}"),
                  _fmt(r["pct_diff"], "{:+.2f}"), _fmt(r["compute_embedded"], "{:,}"), _fmt(r["compute_gvsoc"], "{:,}"),
                  _fmt(r["compute_pct_diff"], "{:+.2f}"),
                  f"{'ok' if r['ok_embedded'] else 'FAIL'}/{'ok' if r['ok_gvsoc'] else 'FAIL'}",
                  "yes" if r["outputs_identical"] else "no")
    con.print(t)
    con.print(summary_line(summary))


def run(args) -> int:
    if args.energy:
        from harness import energy_crosscheck

        return energy_crosscheck.run(args)
    if args.kernels:
        return run_kernels(args)
    if args.jobs != 1:
        raise UserError("--jobs: applies to --kernels; programs run one after the other")
    if args.output is None:
        args.output = str(DEFAULT_OUTPUT)
    gvsoc.require()  # before building or simulating anything: without GVSoC there is nothing to compare
    # the output files are checked before any program runs, so that a bad --output loses nothing
    for key, path in output_paths(args.output).items():
        paths.output_file(path, "--output", owned=OWNED[key], kind="a crosscheck table")
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
