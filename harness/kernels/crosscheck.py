"""The kernels of an experiment on both backends, from the same ELF: `pulp-odl crosscheck --kernels`.

Every kernel of a kernels experiment (experiments/*.toml, kind = "kernels") that GVSoC can run
(pulp-open) is built once and run on the embedded simulator and on GVSoC. Each backend's run is checked
against NumPy on its own; the row says whether both passed, whether the two printed the very same output
tensors, and how far apart their cycle counts are, for the whole kernel (the program's own `ODL cycles`,
self-timed, so GVSoC's boot phase is not in it) and for its compute phase.

% difference = (embedded - gvsoc) / gvsoc * 100: GVSoC is the reference.
"""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

from harness.commands.crosscheck import pct_diff
from harness.errors import UserError
from harness.experiments import plan as planmod
from harness.experiments import spec as expspec

COLUMNS = ["kernel", "kind", "step", "cycles_embedded", "cycles_gvsoc", "pct_diff", "compute_embedded",
           "compute_gvsoc", "compute_pct_diff", "ok_embedded", "ok_gvsoc", "outputs_identical", "error"]
SUMMARY_COLUMNS = ["comparison", "n", "mean_abs_pct", "max_abs_pct", "worst"]


def specs(experiment: str) -> tuple[list, list]:
    """(specs GVSoC can run, specs left out) of a kernels experiment, in the experiment's order."""
    from harness.backends import gvsoc
    from harness import platform as platmod

    exp = expspec.load(experiment)
    if exp.kind != "kernels":
        raise UserError(f"--kernels {experiment}: a {exp.kind} experiment; give a kernels experiment "
                        "(kind = \"kernels\", e.g. regress or kernels)")
    keep, left = [], []
    for sp in planmod.expand(exp).specs.values():
        try:
            gvsoc.check_platform(platmod.load(sp.platform))
            keep.append(sp)
        except UserError:
            left.append(sp)
    if not keep:
        raise UserError(f"--kernels {experiment}: none of its kernels runs on a platform GVSoC models (pulp-open)")
    return keep, left


def outputs_digest(memory: dict, syms) -> str:
    h = hashlib.sha256()
    for sym in syms:
        h.update(sym.encode() + b"\0" + memory[sym])
    return h.hexdigest()


def compare(spec, emb, gv) -> dict:
    """One kernel's row from its two results (a checked row each, or the UserError of a failed run)."""
    row = {"kernel": spec.name, "kind": spec.kind, "step": spec.step}
    errors = [f"{b}: {r}" for b, r in (("embedded", emb), ("gvsoc", gv)) if isinstance(r, Exception)]
    e = None if isinstance(emb, Exception) else emb
    g = None if isinstance(gv, Exception) else gv
    row.update(cycles_embedded=e and e["cycles"], cycles_gvsoc=g and g["cycles"],
               compute_embedded=e and e["compute_cycles"], compute_gvsoc=g and g["compute_cycles"],
               ok_embedded=bool(e and e["ok"]), ok_gvsoc=bool(g and g["ok"]),
               outputs_identical=bool(e and g and e["outputs_sha256"] == g["outputs_sha256"]),
               error="; ".join(errors))
    row["pct_diff"] = pct_diff(row["cycles_embedded"], row["cycles_gvsoc"])
    row["compute_pct_diff"] = pct_diff(row["compute_embedded"], row["compute_gvsoc"])
    return {k: row[k] for k in COLUMNS}


def _stats(rows, key) -> dict:
    vals = [(abs(r[key]), r["kernel"]) for r in rows if r[key] is not None]
    if not vals:
        return {"n": 0, "mean_abs_pct": None, "max_abs_pct": None, "worst": ""}
    worst = max(vals)
    return {"n": len(vals), "mean_abs_pct": sum(v for v, _ in vals) / len(vals), "max_abs_pct": worst[0],
            "worst": worst[1]}


def summarize(rows: list[dict], left_out: int) -> dict:
    ran = [r for r in rows if not r["error"]]
    return {"kernels": len(rows), "failed": len(rows) - len(ran), "left_out": left_out,
            "ok_both": sum(1 for r in ran if r["ok_embedded"] and r["ok_gvsoc"]),
            "outputs_identical": sum(1 for r in ran if r["outputs_identical"]),
            "cycles": _stats(ran, "pct_diff"), "compute": _stats(ran, "compute_pct_diff")}


def summary_rows(summary: dict) -> list[dict]:
    return [{"comparison": k, **summary[k]} for k in ("cycles", "compute")]


def run(kernel_specs: list, jobs: int = 1, progress=None) -> list[dict]:
    """Each kernel on both backends (kernels in parallel on `jobs` threads: the simulators run as
    separate processes or release nothing shared), rows in the order of `kernel_specs`."""
    from harness.kernels import runner

    def one(sp):
        res = runner.run_spec_on(sp, ("embedded", "gvsoc"), errors=True, digest=True)
        row = compare(sp, res["embedded"], res["gvsoc"])
        if progress:
            progress(row)
        return row

    if jobs <= 1:
        return [one(sp) for sp in kernel_specs]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, kernel_specs))


def fmt(v, pattern: str) -> str:
    return "n/a" if v is None else pattern.format(v)


def markdown(rows: list[dict], summary: dict) -> str:
    """The table and summary as Markdown (the README's block is exactly this, rendered from the CSV)."""
    out = ["| kernel | cycles embedded | cycles GVSoC | difference | compute embedded | compute GVSoC | difference "
           "| checks (embedded / GVSoC) | same outputs |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: | :---: |"]
    for r in rows:
        ok = f"{'ok' if r['ok_embedded'] else 'FAIL'} / {'ok' if r['ok_gvsoc'] else 'FAIL'}"
        out.append(f"| {r['kernel']} | {fmt(r['cycles_embedded'], '{:,}')} | {fmt(r['cycles_gvsoc'], '{:,}')} "
                   f"| {fmt(r['pct_diff'], '{:+.2f} %')} | {fmt(r['compute_embedded'], '{:,}')} "
                   f"| {fmt(r['compute_gvsoc'], '{:,}')} | {fmt(r['compute_pct_diff'], '{:+.2f} %')} | {ok} "
                   f"| {'yes' if r['outputs_identical'] else 'no'} |")
    out.append("")
    out.append(summary_line(summary))
    return "\n".join(out) + "\n"


def summary_line(summary: dict) -> str:
    c, k = summary["cycles"], summary["compute"]
    worst = f" ({c['worst']})" if c["worst"] else ""
    text = (f"{summary['kernels'] - summary['failed']} kernels on both backends: cycles |difference| mean "
            f"{fmt(c['mean_abs_pct'], '{:.2f} %')}, max {fmt(c['max_abs_pct'], '{:.2f} %')}{worst}; "
            f"compute mean {fmt(k['mean_abs_pct'], '{:.2f} %')}, max {fmt(k['max_abs_pct'], '{:.2f} %')}; "
            f"NumPy checks pass on both for {summary['ok_both']}, identical outputs for {summary['outputs_identical']}")
    if summary["failed"]:
        text += f"; {summary['failed']} could not be run"
    if summary["left_out"]:
        text += f"; {summary['left_out']} left out (platforms GVSoC does not model)"
    return text + "."


# ---- the README's block, rendered from a table `crosscheck --kernels` wrote ----
README_BEGIN = "<!-- crosscheck {name}: written by `make readme-crosscheck` from results/crosscheck/{name}.csv; do not edit -->"
README_END = "<!-- end crosscheck {name} -->"
README_ROWS = 6   # the kernels farthest apart


def read_table(path) -> list[dict]:
    """The rows of a table `crosscheck --kernels` wrote, as it wrote them."""
    import pandas as pd

    df = pd.read_csv(path, keep_default_na=False)
    if list(df.columns) != COLUMNS:
        raise UserError(f"{path}: not a kernel crosscheck table (its columns are not {', '.join(COLUMNS)})")
    rows = []
    for r in df.to_dict("records"):
        for k in ("cycles_embedded", "cycles_gvsoc", "compute_embedded", "compute_gvsoc"):
            r[k] = None if r[k] == "" else int(r[k])
        for k in ("pct_diff", "compute_pct_diff"):
            r[k] = None if r[k] == "" else float(r[k])
        for k in ("ok_embedded", "ok_gvsoc", "outputs_identical"):
            r[k] = r[k] in (True, "True")
        rows.append(r)
    return rows


def readme_block(name: str, rows: list[dict], left_out: int) -> str:
    summary = summarize(rows, left_out)
    ran = [r for r in rows if not r["error"] and r["pct_diff"] is not None]
    far = sorted(ran, key=lambda r: -abs(r["pct_diff"]))[:README_ROWS]
    far = [r for r in rows if r in far]   # in the experiment's order
    return "\n".join([README_BEGIN.format(name=name), "",
                      f"The {len(far)} kernels farthest apart, of `pulp-odl crosscheck --kernels {name}`:", "",
                      markdown(far, summary).rstrip("\n"), "", README_END.format(name=name)])


def replace_block(readme, begin: str, end: str, block, what: str) -> bool:
    """Replace the README's text from line `begin` to line `end` by `block()` (both lines included in
    what it returns); True if the text changed. `what` names the block in the error."""
    from pathlib import Path

    readme, text = Path(readme), Path(readme).read_text()
    if begin not in text or end not in text:
        raise UserError(f"{readme}: has no block for {what} (the lines {begin!r} ... {end!r})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = head + block() + tail
    if new != text:
        readme.write_text(new)
    return new != text


def update_readme(readme, name: str, table) -> bool:
    """Rewrite the README's block for `name` from `table`; True if the text changed."""
    return replace_block(readme, README_BEGIN.format(name=name), README_END.format(name=name),
                         lambda: readme_block(name, read_table(table), len(specs(name)[1])), f"'{name}'")


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m harness.kernels.crosscheck",
                                 description="rewrite the README's crosscheck block from a table "
                                             "`pulp-odl crosscheck --kernels` wrote")
    ap.add_argument("--readme", required=True)
    ap.add_argument("--experiment", default="regress")
    ap.add_argument("table")
    args = ap.parse_args(argv)
    changed = update_readme(args.readme, args.experiment, args.table)
    print(f"{args.readme}: crosscheck block {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
