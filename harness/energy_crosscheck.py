"""`pulp-odl crosscheck --energy`: the embedded energy model against GVSoC's own power report, like for like.

Both run the same ELF over the whole run (GVSoC's window: its first cycle to the program's end, see
harness/backends/gvsoc_power.py). A term is compared only where both sides price the same thing:

    l1_access   L1 bank accesses, GVSoC's dynamic energy of /chip/cluster/l1/bankN against the embedded
                model's `l1_bank_access_pJ` applied to the same set of accesses

The same set, because the two count different things by definition. The embedded term prices every
access a bank serves: each core access (a word-crossing one twice) and each bank-width beat of a
cluster-DMA transfer. GVSoC prices a request only if its size has an entry in the bank's power table
(GVSOC_PRICED: no byte reads, no 3-byte piece of a word-crossing access), and its run also writes the
ELF's L1 segments through the banks before the program starts (its loader), which the embedded
simulator loads directly. So the compared embedded figure is the accesses of GVSoC's sizes (the
simulator counts bank accesses by direction and size: `l1_bank_accesses` of the energy report) plus
the loader's writes, computed from the ELF (`loader_l1_writes`); the full term, the part GVSoC leaves
unpriced and the loader's part are columns of their own.

What only one side prices is listed beside it, never in a % difference: GVSoC's L1 banks' leakage
(from its first cycle) and anything else its report gives energy to; the embedded model's cores
(instructions, loads and stores, stalls), its cluster leakage (cores, banks and the cluster's logic,
while the cluster is powered, in one coefficient) and every other term. `cores_gvsoc_J` shows whether
the installation binds its cores' power models at all (gvsoc-pulp 748a706 builds pulp-open's cores
without them: 0).

% difference = (embedded - gvsoc) / gvsoc * 100: GVSoC is the reference.
"""
from __future__ import annotations

import re

from harness.errors import UserError

_BANK = re.compile(r"/chip/cluster/l1/bank\d+")
_CORE = re.compile(r"/chip/cluster/pe\d+|/chip/soc/fc")
# The embedded terms of the cores' own work: what GVSoC's core power models price (per instruction).
CORE_TERMS = ("alu_pJ", "muldiv_pJ", "fp32_pJ", "fp16_pJ", "fp16_simd_pJ", "l1_load_store_pJ", "l2_load_store_pJ",
              "periph_load_store_pJ", "stall_cycle_pJ")
TERMS = ("l1_access",)   # the compared terms (rows: NAME_pct_diff)
# The bank requests GVSoC's pulp-open prices, by size in bytes: gvsoc-core models/memory/memory.cpp charges
# a request of 1, 2 or 4 bytes its size's entry of the bank's table (any other size nothing), and
# gvsoc-pulp chips/pulp_open/power_models/l1/l1.json has read_16, read_32, write_8, write_16, write_32 and
# no read_8. Its cluster DMA reaches the banks in bank-width requests, all priced.
GVSOC_PRICED = {"reads": (2, 4), "writes": (1, 2, 4)}
# GVSoC's loader (gvsoc-core models/utils/loader/loader.cpp) writes each PT_LOAD segment with p_memsz as
# its file bytes and then its zero tail, in requests of at most this many bytes, which the cluster's
# ext2loc converter cuts at bank-width boundaries.
LOADER_CHUNK = 1 << 16

COLUMNS = ["program", "l1_access_embedded_J", "l1_unpriced_embedded_J", "l1_loader_J", "l1_compared_embedded_J",
           "l1_access_gvsoc_J", "l1_access_diff_J", "l1_access_pct_diff",
           "embedded_only_J", "gvsoc_only_J", "cores_embedded_J", "cores_gvsoc_J", "cluster_leakage_embedded_J",
           "l1_leakage_gvsoc_J", "total_embedded_J", "total_gvsoc_J", "seconds_embedded", "seconds_gvsoc",
           "exit_embedded", "exit_gvsoc", "error"]
SUMMARY_COLUMNS = ["comparison", "n", "mean_abs_pct", "max_abs_pct", "worst"]


def pct_diff(ours, ref):
    from harness.commands.crosscheck import pct_diff as pd

    return pd(ours, ref)


def _sum(components: dict, pattern, quantity: str) -> float:
    return sum(v[quantity] for p, v in components.items() if pattern.fullmatch(p))


def pieces(addr: int, size: int, width: int) -> list[int]:
    """Sizes of the bank requests `size` bytes at `addr` become when cut at `width`-byte boundaries."""
    out = []
    while size > 0:
        n = min(size, width - addr % width)
        out.append(n)
        addr, size = addr + n, size - n
    return out


def loader_l1_writes(elf_path, base: int, size: int, width: int) -> list[int]:
    """GVSoC's loader's writes into L1 [base, base + size) for this ELF: counts of 1..width-byte writes."""
    from elftools.elf.elffile import ELFFile

    counts = [0] * width
    with open(elf_path, "rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] != "PT_LOAD" or not seg["p_memsz"]:
                continue
            addr, filesz, memsz = seg["p_paddr"], seg["p_filesz"], seg["p_memsz"]
            for start, n in ((addr, filesz), (addr + filesz, memsz - filesz)):   # file bytes, then the zero tail
                for c in range(0, n, LOADER_CHUNK):
                    a = start + c
                    for piece in pieces(a, min(LOADER_CHUNK, n - c), width):
                        if base <= a < base + size:
                            counts[piece - 1] += 1
                        a += piece
    return counts


def priced(counts: list[int], sizes) -> int:
    return sum(counts[s - 1] for s in sizes)


def compare(program: str, emb: dict, gv: dict, loader_writes: list[int], plat) -> dict:
    """One program's row from the embedded run (energy report), GVSoC's power run and the L1 writes
    GVSoC's loader makes for this ELF (`loader_l1_writes`)."""
    terms = emb["energy"]["terms_J"]
    comps = gv["components"]
    whole = comps.get("/")
    if whole is None:
        raise UserError(f"{program}: GVSoC's power report has no whole-chip line ('/power_trace')")
    per_access = plat.raw["energy"]["l1_bank_access_pJ"] * 1e-12
    bank = emb["energy"]["l1_bank_accesses"]
    dma_beats = emb["energy"]["events"]["cluster_dma_bytes"] / plat.memory("l1").bank_width
    same = priced(bank["reads"], GVSOC_PRICED["reads"]) + priced(bank["writes"], GVSOC_PRICED["writes"]) + dma_beats
    unpriced = sum(bank["reads"]) + sum(bank["writes"]) - priced(bank["reads"], GVSOC_PRICED["reads"]) \
        - priced(bank["writes"], GVSOC_PRICED["writes"])
    loader = priced(loader_writes, GVSOC_PRICED["writes"])
    e, g = (same + loader) * per_access, _sum(comps, _BANK, "dynamic_J")
    row = {"program": program, "l1_access_embedded_J": terms["l1_bank_access_pJ"],
           "l1_unpriced_embedded_J": unpriced * per_access, "l1_loader_J": loader * per_access,
           "l1_compared_embedded_J": e, "l1_access_gvsoc_J": g, "l1_access_diff_J": e - g,
           "l1_access_pct_diff": pct_diff(e, g)}
    total_gv = whole["dynamic_J"] + whole["leakage_J"]
    row.update(embedded_only_J=emb["energy"]["energy_J"] - terms["l1_bank_access_pJ"], gvsoc_only_J=total_gv - g,
               cores_embedded_J=sum(terms[k] for k in CORE_TERMS),
               cores_gvsoc_J=_sum(comps, _CORE, "dynamic_J") + _sum(comps, _CORE, "leakage_J"),
               cluster_leakage_embedded_J=terms["cluster_leakage_W"],
               l1_leakage_gvsoc_J=_sum(comps, _BANK, "leakage_J"),
               total_embedded_J=emb["energy"]["energy_J"], total_gvsoc_J=total_gv,
               seconds_embedded=emb["energy"]["seconds"], seconds_gvsoc=gv["seconds"],
               exit_embedded=emb["exit_code"], exit_gvsoc=gv["exit_code"], error="")
    return {k: row[k] for k in COLUMNS}


def failed(program: str, err: str) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(program=program, error=err)
    return row


def summarize(rows: list[dict]) -> dict:
    ran = [r for r in rows if not r["error"]]
    out = {"programs": len(rows), "failed": len(rows) - len(ran)}
    for name in TERMS:
        vals = [(abs(r[f"{name}_pct_diff"]), r["program"]) for r in ran if r[f"{name}_pct_diff"] is not None]
        out[name] = ({"n": len(vals), "mean_abs_pct": sum(v for v, _ in vals) / len(vals),
                      "max_abs_pct": max(vals)[0], "worst": max(vals)[1]} if vals else
                     {"n": 0, "mean_abs_pct": None, "max_abs_pct": None, "worst": ""})
    out["cores_bound"] = any((r["cores_gvsoc_J"] or 0) > 0 for r in ran)
    return out


def summary_rows(summary: dict) -> list[dict]:
    return [{"comparison": name, **summary[name]} for name in TERMS]


def output_path(output) -> str:
    """Beside a cycle table: FILE stem + .energy.csv."""
    from pathlib import Path

    p = Path(output)
    stem = p.with_suffix("") if p.suffix == ".csv" else p
    return f"{stem}.energy.csv"


def summary_path(energy_csv) -> str:
    from pathlib import Path

    return str(Path(energy_csv).with_suffix("")) + ".summary.csv"


# ---- text ----
def _fmt(v, pattern: str) -> str:
    return "n/a" if v is None else pattern.format(v)


def joules(v) -> str:
    from harness.energy import joules as j

    return "n/a" if v is None else j(v)


def summary_line(summary: dict) -> str:
    s = summary["l1_access"]
    worst = f" ({s['worst']})" if s["worst"] else ""
    text = (f"{summary['programs'] - summary['failed']} programs: L1 bank access energy of the accesses both "
            f"price |difference| mean "
            f"{_fmt(s['mean_abs_pct'], '{:.3f} %')}, max {_fmt(s['max_abs_pct'], '{:.3f} %')}{worst}; "
            f"GVSoC's cores {'have' if summary['cores_bound'] else 'have no'} power model in this installation")
    if summary["failed"]:
        text += f"; {summary['failed']} could not be run"
    return text + "."


def markdown(rows: list[dict], summary: dict) -> str:
    out = ["| program | L1 accesses embedded | of it GVSoC prices at 0 | + GVSoC's loader | compared embedded "
           "| GVSoC | difference | GVSoC only (L1 leakage) | embedded only |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if r["error"]:
            out.append(f"| {r['program']} | could not be run: {r['error']} |||||||| ")
            continue
        out.append(f"| {r['program']} | {joules(r['l1_access_embedded_J'])} | {joules(r['l1_unpriced_embedded_J'])} "
                   f"| {joules(r['l1_loader_J'])} | {joules(r['l1_compared_embedded_J'])} "
                   f"| {joules(r['l1_access_gvsoc_J'])} | {joules(r['l1_access_diff_J'])}, "
                   f"{_fmt(r['l1_access_pct_diff'], '{:+.3f} %')} | {joules(r['gvsoc_only_J'])} "
                   f"| {joules(r['embedded_only_J'])} |")
    out += ["", summary_line(summary)]
    return "\n".join(out) + "\n"


def print_table(rows: list[dict], summary: dict) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    t = Table(title="energy: embedded model vs GVSoC's power report (pulp-open), the same ELF, whole run")
    for col in ("program", "L1 emb (all)", "GVSoC prices 0", "+ loader", "L1 emb compared", "L1 gvsoc", "diff",
                "%", "gvsoc only", "emb only", "cores emb", "cores gvsoc", "time emb", "time gvsoc"):
        t.add_column(col, justify="left" if col == "program" else "right")
    for r in rows:
        if r["error"]:
            t.add_row(r["program"], f"[red]{r['error']}[/]", *[""] * 12)
            continue
        t.add_row(r["program"], joules(r["l1_access_embedded_J"]), joules(r["l1_unpriced_embedded_J"]),
                  joules(r["l1_loader_J"]), joules(r["l1_compared_embedded_J"]), joules(r["l1_access_gvsoc_J"]),
                  joules(r["l1_access_diff_J"]), _fmt(r["l1_access_pct_diff"], "{:+.3f}"), joules(r["gvsoc_only_J"]),
                  joules(r["embedded_only_J"]), joules(r["cores_embedded_J"]), joules(r["cores_gvsoc_J"]),
                  _fmt(r["seconds_embedded"] * 1e3, "{:.3f} ms"), _fmt(r["seconds_gvsoc"] * 1e3, "{:.3f} ms"))
    con.print(t)
    con.print(summary_line(summary))


# ---- the README's blocks, rendered from a table `crosscheck --energy` wrote ----
README_BEGIN = ("<!-- crosscheck energy {name}: written by `make readme-crosscheck` from "
                "results/crosscheck/{name}.energy.csv; do not edit -->")
README_END = "<!-- end crosscheck energy {name} -->"


def read_table(path) -> list[dict]:
    import pandas as pd

    df = pd.read_csv(path, keep_default_na=False)
    if list(df.columns) != COLUMNS:
        raise UserError(f"{path}: not an energy crosscheck table (its columns are not {', '.join(COLUMNS)})")
    rows = []
    for r in df.to_dict("records"):
        for k in COLUMNS:
            if k not in ("program", "error") and r[k] != "":
                r[k] = float(r[k])
            elif r[k] == "":
                r[k] = None if k != "error" else ""
        rows.append(r)
    return rows


def readme_block(name: str, rows: list[dict], command: str) -> str:
    top = README_TOP.get(name)
    if top is None or len(rows) <= top:
        head, shown = f"`{command}`:", rows
    else:   # the rows farthest apart (and every one that could not be run), in the table's order
        key = {id(r): -1 if r["error"] else abs(r["l1_access_pct_diff"] or 0) for r in rows}
        keep = {id(r) for r in sorted(rows, key=lambda r: key[id(r)], reverse=True)[:top]}
        keep |= {id(r) for r in rows if r["error"]}
        head, shown = f"The {top} programs farthest apart, of `{command}`:", [r for r in rows if id(r) in keep]
    summary = summarize(rows)
    return "\n".join([README_BEGIN.format(name=name), "", head, "",
                      markdown(shown, summary).rstrip("\n"), "", README_END.format(name=name)])


def update_readme(readme, name: str, table, command: str) -> bool:
    from harness.kernels.crosscheck import replace_block

    return replace_block(readme, README_BEGIN.format(name=name), README_END.format(name=name),
                         lambda: readme_block(name, read_table(table), command), f"energy '{name}'")


README_COMMANDS = {"calibration": "pulp-odl crosscheck --energy --programs $PULP_ODL_SHARED/data/gvsoc-calibration "
                                  "--output results/crosscheck/calibration.csv",
                   "regress": "pulp-odl crosscheck --energy --kernels regress"}
README_TOP = {"regress": 5}   # a block shows at most this many rows


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m harness.energy_crosscheck",
                                 description="rewrite the README's energy crosscheck block from a table "
                                             "`pulp-odl crosscheck --energy` wrote")
    ap.add_argument("--readme", required=True)
    ap.add_argument("--name", required=True, choices=sorted(README_COMMANDS))
    ap.add_argument("table")
    args = ap.parse_args(argv)
    changed = update_readme(args.readme, args.name, args.table, README_COMMANDS[args.name])
    print(f"{args.readme}: energy crosscheck block '{args.name}' {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---- running ----
def _programs(args, plat, scratch):
    """(name, ELF) pairs: the ELFs of --programs (or the built test programs), or one built ELF per
    pulp-open kernel of --kernels."""
    from pathlib import Path

    from harness.commands import crosscheck as cc

    if not args.kernels:
        for elf in cc.programs(args, plat, Path(scratch)):
            yield Path(elf).stem, Path(elf)
        return
    from harness.kernels import crosscheck as kcc
    from harness.kernels import runner

    keep, _ = kcc.specs(args.kernels)
    for sp in keep:
        d = Path(scratch) / sp.name
        d.mkdir(parents=True, exist_ok=True)
        prog = runner.prepare(sp).program
        yield sp.name, runner.build_elf(runner.write_sources(prog, d), d, plat)


def _run_one(name, elf, plat, max_cycles) -> tuple[dict, str]:
    """(the program's row, a note for its progress line: '' or that GVSoC's launcher was stopped after
    writing its report)."""
    from harness.backends import embedded, gvsoc_power

    try:
        emb = embedded.run(elf, plat, max_cycles=max_cycles)
        # GVSoC's power run can hang after the program's exit (its proxy never answers the window's
        # closing write): bound it by what the program needed on the embedded simulator, four times over
        gv_limit = max_cycles if max_cycles is not None else max(4 * int(emb.get("cycles") or 0), 1_000_000)
        gv = gvsoc_power.run(elf, plat, max_cycles=gv_limit)
    except gvsoc_power.PowerUnavailable:
        raise
    except UserError as e:   # one bad program is reported in its row; the others still run
        return failed(name, str(e)), ""
    note = (f"GVSoC's launcher did not return after its report and was stopped {gvsoc_power.DONE_GRACE_S:g} s later"
            if gv.get("stopped_after_report") else "")
    bad = [f"{b}: {r.get('status')} {r.get('exit_code')}" for b, r in (("embedded", emb), ("gvsoc", gv))
           if r["status"] != "exit" or r["exit_code"] != 0]
    if bad:
        return failed(name, "the program did not exit with 0 (" + ", ".join(bad) + ")"), note
    l1 = plat.memory("l1")
    return compare(name, emb, gv, loader_l1_writes(elf, l1.base, l1.size, l1.bank_width), plat), note


def run(args) -> int:
    """The --energy mode of `pulp-odl crosscheck`."""
    import json
    import sys
    import tempfile
    from pathlib import Path

    import pandas as pd

    from harness import ROOT, paths
    from harness import platform as platmod
    from harness.backends import gvsoc_power
    from harness.commands import crosscheck as cc

    if args.kernels and args.programs:
        raise UserError("--kernels: compares kernels, --programs ELFs; give one of them")
    if args.jobs != 1:
        raise UserError("--jobs: --energy runs one program at a time (GVSoC's debug build, one process)")
    gvsoc_power.require()
    if args.kernels:
        from harness.kernels import crosscheck as kcc

        kcc.specs(args.kernels)   # a bad experiment is reported before anything runs
        base = args.output or str(ROOT / "results" / "crosscheck" / f"{Path(args.kernels).stem}.csv")
    else:
        base = args.output or str(cc.DEFAULT_OUTPUT)
    out = Path(output_path(base))
    owned = paths.starts_with(COLUMNS[0] + "," + COLUMNS[1] + ",")
    paths.output_file(out, "--output", owned=owned, kind="an energy crosscheck table")
    paths.output_file(summary_path(out), "--output", owned=paths.starts_with("comparison,n,"),
                      kind="an energy crosscheck summary")
    plat = platmod.load("pulp-open")
    rows = []
    with tempfile.TemporaryDirectory(prefix="pulp-odl-crosscheck-energy-") as scratch:
        for name, elf in _programs(args, plat, scratch):
            row, note = _run_one(name, elf, plat, args.max_cycles)
            rows.append(row)
            if not args.json:
                what = row["error"] or f"L1 access {_fmt(row['l1_access_pct_diff'], '{:+.3f} %')}"
                print(f"crosscheck --energy: {name}: {what}{f' ({note})' if note else ''}", file=sys.stderr)
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"programs": rows, "summary": summary, "files": {"energy": str(out)}}))
    else:
        print_table(rows, summary)
    with paths.user_path(out, "--output path"):   # the table is printed already: nothing is lost
        cc._write_csv(pd.DataFrame(rows, columns=COLUMNS), out)
        cc._write_csv(pd.DataFrame(summary_rows(summary), columns=SUMMARY_COLUMNS), Path(summary_path(out)))
    if not args.json:
        print(f"wrote {out} (+ .summary.csv)")
    if summary["failed"]:
        first = next(r for r in rows if r["error"])
        print(f"pulp-odl: {summary['failed']} of {len(rows)} program(s) could not be compared, the others were "
              f"({first['program']}: {first['error']}; every reason is in {out})", file=sys.stderr)
        return 1
    return 0
