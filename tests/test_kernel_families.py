"""The per-family table of docs/kernels.md (harness/kernels/families.py) from kernel rows."""
import pandas as pd
import pytest

from harness.kernels import families


def _row(kind, step, macs, cycles, instr, tcdm=0, fetch=0, load_use=0, other_stall=0, dma=0, h=8, w=8, mpc=None):
    return {"platform": "paper", "kind": kind, "step": step, "h": h, "w": w, "macs": macs, "cycles": cycles,
            "mac_per_cycle": mpc if mpc is not None else macs / cycles, "cluster_instructions": instr,
            "cluster_stall_tcdm_conflict": tcdm, "cluster_stall_fetch": fetch, "cluster_stall_load_use": load_use,
            "cluster_stall_branch": other_stall, "cluster_stall_wait": 10 ** 9, "dma_wait_cycles": dma}


def test_shares_are_of_the_cluster_core_cycles_and_idle_is_the_rest():
    # 8 cores x 1000 cycles = 8000 core-cycles: 8000 MACs are 4000 product instructions (50 %), 2000
    # others (25 %), 400 TCDM (5 %), 800 fetch (10 %), 80 load-use (1 %), 40 other stalls; idle the rest
    df = pd.DataFrame([_row("pw", "fw", 8000, 1000, 6000, tcdm=400, fetch=800, load_use=80, other_stall=40, dma=50)])
    (r,) = families.rows(df, 8)
    assert (r["family"], r["n"]) == ("pw fw", 1)
    assert r["products"] == pytest.approx(0.5) and r["other"] == pytest.approx(0.25)
    assert r["cluster_stall_tcdm_conflict"] == pytest.approx(0.05)
    assert r["cluster_stall_fetch"] == pytest.approx(0.10) and r["cluster_stall_load_use"] == pytest.approx(0.01)
    assert r["idle"] == pytest.approx(1 - (6000 + 400 + 800 + 80 + 40) / 8000)   # the wait counter is not read
    assert r["dma"] == pytest.approx(0.05)


def test_families_average_their_kernels_and_batched_linear_layers_only():
    df = pd.DataFrame([_row("pw", "fw", 8000, 1000, 6000, mpc=8.0), _row("pw", "fw", 8000, 2000, 6000, mpc=4.0),
                       _row("linear", "fw", 100, 100, 100, h=1, w=1), _row("linear", "fw", 1600, 100, 1000, h=1, w=16)])
    rs = {r["family"]: r for r in families.rows(df, 8)}
    assert (rs["pw fw"]["lo"], rs["pw fw"]["hi"]) == (4.0, 8.0)
    assert rs["pw fw"]["products"] == pytest.approx((0.5 + 0.25) / 2)
    assert rs["linear, 16 samples, fw"]["n"] == 1
    assert "| pw fw | 4.00 - 8.00 | 38 % |" in families.markdown(list(rs.values()))


def test_a_missing_table_is_one_line(tmp_path, capsys):
    assert families.main([str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "make kernels" in err
