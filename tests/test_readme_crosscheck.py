"""The README's GVSoC cross-check table is generated, not typed: its block is exactly what `make
readme-crosscheck` renders from results/crosscheck/regress.csv (the table `pulp-odl crosscheck --kernels
regress` wrote), and that table's embedded numbers are today's golden cycle counts, so a change of the
simulator that moves them fails here until the cross-check is run again with GVSoC."""
import pandas as pd
import pytest

from harness import ROOT
from harness.backends import gvsoc
from harness.kernels import crosscheck as kcc

TABLE = ROOT / "results" / "crosscheck" / "regress.csv"
GOLDEN = ROOT / "results" / "golden" / "regress.csv"
README = ROOT / "README.md"


def test_readme_block_is_the_table():
    rows = kcc.read_table(TABLE)
    keep, left = kcc.specs("regress")
    block = kcc.readme_block("regress", rows, len(left))
    assert block in README.read_text(), "the README's crosscheck block is stale: run 'make readme-crosscheck'"


def test_the_table_holds_every_pulp_open_kernel_of_regress():
    keep, left = kcc.specs("regress")
    assert [r["kernel"] for r in kcc.read_table(TABLE)] == [sp.name for sp in keep]
    assert all(sp.platform == "paper" for sp in left)


def test_its_embedded_cycles_are_todays_golden_counts():
    golden = pd.read_csv(GOLDEN).set_index("kernel")
    stale = [r["kernel"] for r in kcc.read_table(TABLE)
             if (r["cycles_embedded"], r["compute_embedded"]) !=
             (golden.loc[r["kernel"], "cycles"], golden.loc[r["kernel"], "compute_cycles"])]
    assert not stale, f"{len(stale)} kernels changed since the cross-check ran ({stale[0]}): run 'make readme-crosscheck'"


def test_every_kernel_passed_on_both_with_the_same_outputs():
    rows = kcc.read_table(TABLE)
    assert all(r["ok_embedded"] and r["ok_gvsoc"] and r["outputs_identical"] and not r["error"] for r in rows)


@pytest.mark.e2e
@pytest.mark.skipif(gvsoc.find() is None, reason="GVSoC not installed (set GVSOC=...)")
def test_gvsoc_still_gives_the_tables_numbers():
    keep, _ = kcc.specs("regress")
    table = {r["kernel"]: r for r in kcc.read_table(TABLE)}
    for row in kcc.run(keep[:2]):
        want = table[row["kernel"]]
        assert (row["cycles_gvsoc"], row["compute_gvsoc"]) == (want["cycles_gvsoc"], want["compute_gvsoc"])
