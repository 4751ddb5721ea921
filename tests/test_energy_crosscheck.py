"""`pulp-odl crosscheck --energy`: reading GVSoC's power report (a recorded one, tests/data/, from
`gvrun --power` of the calibration kit's cl_core.elf on GVSoC's pulp-open), the like-for-like term
mapping, the README's blocks, and (where GVSoC with its debug build is installed) a real run."""
from __future__ import annotations

import pytest

from harness import ROOT
from harness import energy_crosscheck as ec
from harness.backends import gvsoc, gvsoc_power
from tests.shared_data import CALIB

DATA = ROOT / "tests" / "data"
REPORT = (DATA / "gvsoc_power_report.cl_core.csv").read_text()
TRACE = (DATA / "gvsoc_eoc_trace.cl_core.txt").read_text()
README = ROOT / "README.md"


def test_report_every_component_once_with_its_two_powers():
    rep = gvsoc_power.parse_report(REPORT)
    banks = [p for p in rep if p.startswith("/chip/cluster/l1/bank")]
    assert len(banks) == 16
    assert rep["/"] == rep["/chip"] == rep["/chip/cluster/l1"]
    dyn = sum(rep[b][0] for b in banks)
    leak = sum(rep[b][1] for b in banks)
    assert dyn == pytest.approx(rep["/chip/cluster/l1"][0], rel=1e-9)
    assert leak == pytest.approx(rep["/chip/cluster/l1"][1], rel=1e-9)
    # this GVSoC builds pulp-open's cores without power models: they report nothing at all
    assert all(rep[f"/chip/cluster/pe{i}"] == (0.0, 0.0) for i in range(9))
    assert rep["/chip/soc"] == (0.0, 0.0)


def test_report_without_rows_is_refused():
    with pytest.raises(ValueError):
        gvsoc_power.parse_report("Power report start\n------------------\n")


def test_window_ends_at_the_end_of_computation_write():
    assert gvsoc_power.parse_end_ps(TRACE) == 139_364_055_580
    colour = TRACE.replace("[/chip", "[\x1b[34m/chip").replace("     ] Apb", "     \x1b[0m] Apb")
    assert gvsoc_power.parse_end_ps(colour) == 139_364_055_580
    with pytest.raises(ValueError):
        gvsoc_power.parse_end_ps(TRACE.replace("offset: 0xa0", "offset: 0xa4"))


def test_energy_is_power_times_the_window():
    rep = gvsoc_power.parse_report(REPORT)
    j = gvsoc_power.energies(rep, 0.5)
    assert j["/chip/cluster/l1/bank3"] == {"dynamic_J": rep["/chip/cluster/l1/bank3"][0] * 0.5,
                                           "leakage_J": rep["/chip/cluster/l1/bank3"][1] * 0.5}


def test_every_bank_access_costs_the_same_so_each_bank_holds_a_whole_number_of_them():
    """The window is right: bank energy / the smallest bank's energy is a ratio of whole access counts,
    and the lightest banks (untouched by the program's own data) hold the same count."""
    from harness import platform as platmod

    rep = gvsoc_power.energies(gvsoc_power.parse_report(REPORT), gvsoc_power.parse_end_ps(TRACE) * 1e-12)
    banks = sorted(v["dynamic_J"] for p, v in rep.items() if p.startswith("/chip/cluster/l1/bank"))
    ours = platmod.load("pulp-open").raw["energy"]["l1_bank_access_pJ"] * 1e-12   # GVSoC's, rounded
    per_access = banks[0] / round(banks[0] / ours)
    for e in banks:   # the report prints W with 12 decimals: a count is exact to about 1e-5 of itself
        assert abs(e / per_access - round(e / per_access)) < 0.05


def _emb(terms: dict, total: float, seconds=0.2, exit_code=0, reads=(0, 0, 0, 0), writes=(0, 0, 0, 0), dma_bytes=0):
    full = dict.fromkeys(("alu_pJ", "muldiv_pJ", "fp32_pJ", "fp16_pJ", "fp16_simd_pJ", "l1_load_store_pJ",
                          "l2_load_store_pJ", "periph_load_store_pJ", "stall_cycle_pJ", "cluster_leakage_W",
                          "l1_bank_access_pJ"), 0.0)
    full.update(terms)
    return {"energy": {"terms_J": full, "energy_J": total, "seconds": seconds,
                       "events": {"cluster_dma_bytes": dma_bytes},
                       "l1_bank_accesses": {"reads": list(reads), "writes": list(writes)}}, "exit_code": exit_code}


def _plat():
    from harness import platform as platmod

    return platmod.load("pulp-open")


PJ = 2.124 * 1e-12   # pulp-open's l1_bank_access_pJ


def test_like_for_like_only_the_l1_bank_accesses_gvsoc_prices_are_compared():
    """GVSoC prices no byte read and no 3-byte piece; its loader's L1 writes are added to the embedded side."""
    assert _plat().raw["energy"]["l1_bank_access_pJ"] * 1e-12 == pytest.approx(PJ, rel=1e-12)
    rep = gvsoc_power.parse_report(REPORT)
    gv = {"components": gvsoc_power.energies(rep, 0.139364055580), "seconds": 0.139364055580, "exit_code": 0}
    # reads of 1, 2, 3, 4 bytes; writes of 1, 2, 3, 4 bytes; 64 DMA bytes = 16 bank beats
    emb = _emb({"l1_bank_access_pJ": 3.0e-7, "alu_pJ": 6e-6, "l1_load_store_pJ": 1e-6, "cluster_leakage_W": 3e-4},
               total=1.3e-3, reads=(100, 20, 3, 1000), writes=(7, 5, 2, 900), dma_bytes=64)
    row = ec.compare("cl_core", emb, gv, [1, 0, 1, 4096], _plat())
    l1_dyn = sum(v["dynamic_J"] for p, v in gv["components"].items() if p.startswith("/chip/cluster/l1/bank"))
    l1_leak = sum(v["leakage_J"] for p, v in gv["components"].items() if p.startswith("/chip/cluster/l1/bank"))
    assert row["l1_access_embedded_J"] == 3.0e-7                     # the model's own term, as it is
    assert row["l1_unpriced_embedded_J"] == pytest.approx((100 + 3 + 2) * PJ)
    assert row["l1_loader_J"] == pytest.approx((1 + 4096) * PJ)      # the loader's 3-byte write is not priced
    same = 20 + 1000 + 7 + 5 + 900 + 16
    assert row["l1_compared_embedded_J"] == pytest.approx((same + 4097) * PJ)
    assert row["l1_access_gvsoc_J"] == pytest.approx(l1_dyn)
    assert row["l1_access_diff_J"] == pytest.approx((same + 4097) * PJ - l1_dyn)
    assert row["l1_access_pct_diff"] == pytest.approx(((same + 4097) * PJ - l1_dyn) / l1_dyn * 100)
    # what one side alone prices is listed, never compared
    assert row["gvsoc_only_J"] == pytest.approx(l1_leak)        # this GVSoC prices nothing but the banks
    assert row["l1_leakage_gvsoc_J"] == pytest.approx(l1_leak)
    assert row["embedded_only_J"] == pytest.approx(1.3e-3 - 3.0e-7)
    assert row["cores_embedded_J"] == pytest.approx(7e-6)
    assert row["cores_gvsoc_J"] == 0.0
    assert row["cluster_leakage_embedded_J"] == 3e-4
    assert list(row) == ec.COLUMNS


def test_bound_cores_show_up_beside_the_comparison():
    comps = {"/": {"dynamic_J": 5.0, "leakage_J": 1.0}, "/chip/cluster/pe0": {"dynamic_J": 2.0, "leakage_J": 0.5},
             "/chip/cluster/l1/bank0": {"dynamic_J": 6 * PJ, "leakage_J": 0.25}}
    row = ec.compare("p", _emb({"l1_bank_access_pJ": 1.5}, total=10.0, reads=(0, 0, 0, 9)),
                     {"components": comps, "seconds": 1.0, "exit_code": 0}, [0, 0, 0, 0], _plat())
    assert row["l1_access_pct_diff"] == pytest.approx(50.0)
    assert row["cores_gvsoc_J"] == 2.5
    assert row["gvsoc_only_J"] == pytest.approx(6.0 - 6 * PJ)
    s = ec.summarize([row, ec.failed("q", "broken")])
    assert s["cores_bound"] and s["failed"] == 1 and s["l1_access"]["n"] == 1
    assert s["l1_access"]["max_abs_pct"] == pytest.approx(50.0) and s["l1_access"]["worst"] == "p"


def test_an_access_becomes_pieces_at_word_boundaries():
    assert ec.pieces(0x10, 4, 4) == [4]
    assert ec.pieces(0x11, 4, 4) == [3, 1]      # GVSoC's LSU and its ext2loc converter cut the same way
    assert ec.pieces(0x12, 4, 4) == [2, 2]
    assert ec.pieces(0x13, 2, 4) == [1, 1]
    assert ec.pieces(0x0e, 11, 4) == [2, 4, 4, 1]
    assert ec.pieces(0x10, 0, 4) == []


def _elf32(path, segments):
    """A minimal RISC-V ELF32 executable with these (paddr, file bytes, memsz) PT_LOAD segments."""
    import struct

    ph_off, n = 52, len(segments)
    data_off = ph_off + 32 * n
    head = struct.pack("<4sBBBBB7xHHIIIIIHHHHHH", b"\x7fELF", 1, 1, 1, 0, 0, 2, 243, 1, segments[0][0], ph_off, 0, 0,
                       52, 32, n, 40, 0, 0)
    phs, blobs, off = b"", b"", data_off
    for paddr, filesz, memsz in segments:
        phs += struct.pack("<IIIIIIII", 1, off, paddr, paddr, filesz, memsz, 7, 4)
        blobs += bytes(filesz)
        off += filesz
    path.write_bytes(head + phs + blobs)
    return path


def test_gvsoc_loader_writes_every_l1_byte_of_the_elf_in_bank_pieces(tmp_path):
    """The loader writes a segment's file bytes, then its zero tail, each in 64 KiB requests cut at bank
    words; only bytes inside L1 count (an L2 segment costs the banks nothing)."""
    l1 = _plat().memory("l1")
    elf = _elf32(tmp_path / "p.elf", [(0x1C008000, 64, 64),                # L2: not a bank write
                                      (l1.base, 0, 16384),                  # a zero-filled stack area
                                      (l1.base + 0x4002, 5, 11)])           # file 2+3 bytes, tail 1+4+1
    assert ec.loader_l1_writes(elf, l1.base, l1.size, l1.bank_width) == [2, 1, 1, 4096 + 1]
    # 3 x 64 KiB + 2 bytes of zero tail from an odd start: each request is cut anew
    big = _elf32(tmp_path / "q.elf", [(l1.base + 1, 0, 3 * (1 << 16) + 2)])
    got = ec.loader_l1_writes(big, l1.base, 1 << 20, 4)
    assert got == [3, 1, 3, 3 * ((1 << 16) // 4 - 1)]   # per request 3 + words + 1 bytes; the last: 2 bytes


def test_calibration_kit_loader_writes_are_its_l1_segment_words():
    if not CALIB.exists():
        pytest.skip(f"GVSoC calibration kit not found at {CALIB}")
    l1 = _plat().memory("l1")
    # cl_core.elf: one NOLOAD L1 segment of 18944 bytes (8 stacks of 2 KiB and its .l1 data): 4736 words
    assert ec.loader_l1_writes(CALIB / "cl_core.elf", l1.base, l1.size, l1.bank_width) == [0, 0, 0, 4736]
    assert ec.loader_l1_writes(CALIB / "fc_trace.elf", l1.base, l1.size, l1.bank_width) == [0, 0, 0, 4096]


def test_a_report_without_the_whole_chip_is_an_error():
    from harness.errors import UserError

    with pytest.raises(UserError, match="whole-chip"):
        ec.compare("p", _emb({}, 1.0), {"components": {}, "seconds": 1.0, "exit_code": 0}, [0, 0, 0, 0], _plat())


def test_output_paths():
    assert ec.output_path("results/crosscheck/regress.csv") == "results/crosscheck/regress.energy.csv"
    assert ec.output_path("out/x") == "out/x.energy.csv"
    assert ec.summary_path("out/x.energy.csv") == "out/x.energy.summary.csv"


def test_the_power_run_opens_the_window_before_the_first_cycle_and_traces_only_the_soc_controller(tmp_path):
    from harness import platform as platmod

    launcher = tmp_path / "gvrun"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    cmd = gvsoc_power.command(CALIB / "cl_core.elf" if CALIB.exists() else __file__, platmod.load("pulp-open"),
                              tmp_path, launcher)
    assert "--power" in cmd and f"--control-script={gvsoc_power.CONTROL_SCRIPT}" in cmd
    assert f"--trace=soc/apb_soc_ctrl:{tmp_path.resolve() / 'eoc.txt'}" in cmd
    assert cmd[-3:] == ["image", "flash", "run"] and "--stats" not in cmd


@pytest.mark.parametrize("name", sorted(ec.README_COMMANDS))
def test_readme_blocks_are_the_tables(name):
    table = ROOT / "results" / "crosscheck" / f"{name}.energy.csv"
    block = ec.readme_block(name, ec.read_table(table), ec.README_COMMANDS[name])
    assert block in README.read_text(), "the README's energy crosscheck block is stale: run 'make readme-crosscheck'"


def _power_gvsoc():
    """Skip unless GVSoC is installed with what its power report needs (gvrun and the debug build)."""
    if gvsoc.find() is None:
        pytest.skip("GVSoC not installed (set GVSOC=...)")
    try:
        gvsoc_power.require()
    except gvsoc_power.PowerUnavailable as e:
        pytest.skip(f"GVSoC installed without its power report: {e}")


@pytest.mark.e2e
@pytest.mark.skipif(not CALIB.exists(), reason=f"GVSoC calibration kit not found at {CALIB}")
def test_gvsoc_still_gives_the_calibration_tables_numbers():
    from harness import platform as platmod

    _power_gvsoc()
    plat = platmod.load("pulp-open")
    want = {r["program"]: r for r in ec.read_table(ROOT / "results" / "crosscheck" / "calibration.energy.csv")}
    try:
        row, _ = ec._run_one("cl_dma", CALIB / "cl_dma.elf", plat, None)
    except gvsoc_power.PowerUnavailable as e:
        pytest.skip(f"GVSoC installed without its power report: {e}")
    assert not row["error"]
    for k in ("l1_access_embedded_J", "l1_compared_embedded_J", "l1_loader_J", "l1_access_gvsoc_J", "gvsoc_only_J",
              "seconds_gvsoc"):
        assert row[k] == pytest.approx(want["cl_dma"][k], rel=1e-9), k


def _fake_launcher(tmp_path, body: str):
    exe = tmp_path / "gvrun"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return exe


def test_a_launcher_that_hangs_after_its_report_is_stopped_and_its_status_kept(tmp_path, monkeypatch):
    """gvrun sometimes never returns once GVSoC has exited: the control script's report of the status
    ends the wait DONE_GRACE_S later, with that status, and nothing of the launcher is left running."""
    import os
    import time

    monkeypatch.setattr(gvsoc_power, "DONE_GRACE_S", 0.3)
    pid_file = tmp_path / "pid"
    exe = _fake_launcher(tmp_path, f'echo "hello"\necho $$ > {pid_file}\necho 0 > "${gvsoc_power.DONE_ENV}"\n'
                                   f'exec sleep 600\n')
    wd = tmp_path / "wd"
    wd.mkdir()
    t0 = time.monotonic()
    out, err, rc, secs, stopped = gvsoc_power._launch([str(exe)], 60, wd)
    assert time.monotonic() - t0 < 10
    assert (rc, stopped, out) == (0, True, "hello\n")
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_launcher_that_returns_is_not_stopped_and_one_that_never_reports_times_out(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    exe = _fake_launcher(tmp_path, f'echo 3 > "${gvsoc_power.DONE_ENV}"\nexit 3\n')
    assert gvsoc_power._launch([str(exe)], 60, wd)[2:5:2] == (3, False)
    (wd / gvsoc_power.DONE_FILE).unlink()
    exe = _fake_launcher(tmp_path, "exec sleep 600\n")
    assert gvsoc_power._launch([str(exe)], 0.5, wd)[2] is None


def test_the_control_script_names_the_same_done_variable():
    text = gvsoc_power.CONTROL_SCRIPT.read_text()
    assert f'DONE_ENV = "{gvsoc_power.DONE_ENV}"' in text
