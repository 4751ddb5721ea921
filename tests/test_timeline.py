"""Timelines (--timeline): the Chrome trace events made from a recording (by hand), and on real runs
that a timeline holds the FC, the 8 PEs and both DMAs, agrees with the simulator's own totals,
stays within its window and bounds, and changes no cycle count."""
from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
import pytest

from harness import ROOT
from harness import platform as platmod
from harness import timeline as tl
from harness import validate
from harness.cli import main
from tests.conftest import needs_clang

PES = [f"PE{i}" for i in range(8)]


# ---------------------------------------------------------------- by hand

def test_window_argument():
    parse = validate.window_arg()
    assert parse("0:200000") == (0, 200000)
    assert parse("1_000:") == (1000, None)
    assert parse(":50") == (0, 50)
    for bad in ("9:3", "5:5", "a:b", "100", "1:2:3", "-1:4", f"0:{2 ** 64}"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


def _row(cycle, instr, active, **stalls):
    r = dict.fromkeys(tl.COUNTERS, 0)
    r.update(cycle=cycle, instr=instr, active=active, **stalls)
    return [r[k] for k in tl.COUNTERS]


def _recording():
    """FC asleep in wfi; PE0 computes, waits at a barrier, then stalls on the FPU; PE1 idles; one
    cluster-DMA transfer and one flash read."""
    spans = np.array([
        (0, 1, 40, 400, 0, 0),                     # FC: wfi
        (1, 2, 200, 300, 0, 0),                    # PE0: barrier wait
        (2, 5, 0, 400, 0, 0),                      # PE1: waits for work
        (1, tl.K_FUNCTION, 10, 390, 1, 0),         # PE0: a call
        (tl.T_CLUSTER_DMA, tl.K_DMA_TO_L1, 100, 164, 512, 0 | 1 << 8),
        (tl.T_UDMA, tl.K_UDMA_READ, 0, 100, 1000, 1),
    ], dtype=tl.SPAN)
    fc = np.array([_row(0, 0, 0), _row(40, 30, 40)], dtype=np.uint64)
    pe0 = np.array([_row(0, 0, 0), _row(100, 90, 100), _row(200, 180, 200), _row(300, 180, 200, wait=100),
                    _row(400, 200, 300, fpu_cont=70, depend=10)], dtype=np.uint64)
    pe1 = np.array([_row(0, 0, 0)], dtype=np.uint64)
    return {"spans": spans, "samples": [fc, pe0, pe1], "period": 100, "min_span": 0, "dropped": False,
            "functions": ["", "worker"], "window": (0, None), "stages": {"worker": "fw: one stage"}, "cores": 3}


def _threads(doc):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}


def _by_track(doc):
    names = _threads(doc)
    out = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out[names[(e["pid"], e["tid"])]].append(e)
    return out


def test_trace_events_of_a_recording_by_hand():
    doc = tl.to_trace(_recording(), 100e6, "by hand", "paper")    # 100 MHz: 1 cycle = 0.01 us
    assert json.dumps(doc, separators=(",", ":")).startswith(tl.HEAD)
    tracks = _by_track(doc)
    assert doc["otherData"]["tracks"] == ["stages", "FC", "PE0", "PE1", "cluster DMA", "uDMA"]
    pe0 = [(e["name"], e["ts"], e["dur"]) for e in tracks["PE0"]]
    assert pe0 == [("compute", 0.0, 2.0), ("barrier wait", 2.0, 1.0), ("stall: FPU contention", 3.0, 1.0)]
    assert [(e["name"], e["ts"], e["dur"]) for e in tracks["PE1"]] == [("idle (waits for work)", 0.0, 4.0)]
    assert [e["name"] for e in tracks["FC"]] == ["compute", "sleep (wfi)"]
    assert [(e["name"], e["ts"], e["dur"]) for e in tracks["PE0 calls"]] == [("worker", 0.1, 3.8)]
    assert [e["name"] for e in tracks["stages"]] == ["fw: one stage"]
    (dma,) = tracks["cluster DMA"]
    assert dma["name"] == "L2 -> L1" and dma["args"] == {"bytes": 512, "core": "PE0", "rows": 1}
    (ud,) = tracks["uDMA"]
    assert ud["name"] == "flash read" and ud["args"]["bytes"] == 1000
    # counters per period of 100 cycles: traffic adds up to the bytes moved, IPC to the instructions
    flash = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"].startswith("flash")]
    assert flash[0]["args"]["read"] == 10.0     # 1000 bytes over the first 100 cycles
    ipc = {e["ts"]: e["args"]["cluster"] for e in doc["traceEvents"] if e["name"] == "instructions per cycle"}
    assert ipc[0.0] == 0.9 and ipc[2.0] == 0.0 and ipc[3.0] == 0.2


def test_window_clips_every_span():
    rec = _recording()
    rec["window"] = (150, 350)
    doc = tl.to_trace(rec, 100e6, "window", "paper")
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            assert 1.5 <= e["ts"] and e["ts"] + e["dur"] <= 3.5 + 1e-9, e
    assert doc["otherData"]["window_cycles"] == [150, 350]


def test_timeline_files_are_recognised(tmp_path):
    doc = tl.to_trace(_recording(), 100e6, "t", "paper")
    path = tl.write(tmp_path / "t.json", doc)
    assert tl.is_timeline(path) and tl.load(path)["otherData"]["title"] == "t"
    (tmp_path / "mine.json").write_text('{"traceEvents": []}')
    assert not tl.is_timeline(tmp_path / "mine.json")
    (tmp_path / "empty.json").write_text("")
    assert tl.is_timeline(tmp_path / "empty.json")


# ---------------------------------------------------------------- real runs

def _nested(events) -> bool:
    """Complete events of one track either nest or follow one another (what trace viewers need)."""
    stack = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        s, t = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1] <= s + 1e-6:
            stack.pop()
        if stack and t > stack[-1] + 1e-6:
            return False
        stack.append(t)
    return True


def check_trace(doc, expect=("FC", *PES, "cluster DMA", "uDMA")):
    """A trace as Perfetto and chrome://tracing load it: numbers where they belong, one name per
    thread, nested events per thread, and the expected tracks with events."""
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] in ("ms", "ns")
    names = _threads(doc)
    assert len(set(names.values())) == len(names)
    per = defaultdict(list)
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "C", "M") and isinstance(e["pid"], int)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            per[names[(e["pid"], e["tid"])]].append(e)
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    for track, evs in per.items():
        assert _nested(evs), track
    for track in expect:
        assert per.get(track), f"no events on {track}"
    return per


@pytest.fixture(scope="module")
def tiles_elf(tmp_path_factory):
    from harness import toolchain
    d = tmp_path_factory.mktemp("tl")
    return toolchain.build([ROOT / "examples" / "cluster_tiles.c"], d / "tiles.elf", platmod.load("paper"))


def _run(elf, **kw):
    from harness.backends import embedded
    return embedded.run(elf, platmod.load("paper"), **kw)


@needs_clang
def test_a_timeline_changes_no_cycle_count_and_matches_the_totals(tiles_elf):
    plain = _run(tiles_elf)
    rec = _run(tiles_elf, timeline=tl.request())
    for key in ("cycles", "instructions", "stdout", "stalls", "cores", "dmas", "exit_code"):
        assert rec[key] == plain[key], key
    r = rec["timeline"]
    sp = r["spans"]
    for i, name in ((0, "cluster_dma"), (1, "udma")):
        track = (tl.T_CLUSTER_DMA, tl.T_UDMA)[i]
        mine = sp[sp["track"] == track]
        dma = plain["dmas"][i]
        assert dma["name"] == name and len(mine) == dma["transfers"] > 0
        assert int(mine["a"].sum()) == dma["bytes"] and int((mine["end"] - mine["start"]).sum()) == dma["busy_cycles"]
    # every wake-up of a core is one span: their cycles are its event-wait count (a core still asleep at
    # the end has one more span, which no wake-up counted)
    for c in plain["cores"]:
        idx = 0 if c["core"] == "fc" else 1 + int(c["core"])
        sleeps = sp[(sp["track"] == idx) & (sp["kind"] >= 1) & (sp["kind"] <= 6)]
        woke = sleeps[sleeps["end"] < plain["cycles"]]
        assert int((woke["end"] - woke["start"]).sum()) == c["event_wait"], c["core"]
    doc = tl.to_trace(r, 450e6, "tiles", "paper")
    check_trace(doc)


@needs_clang
def test_window_and_bounds_of_a_real_run(tiles_elf):
    full = _run(tiles_elf)["cycles"]
    lo, hi = full // 4, full // 2
    r = _run(tiles_elf, timeline=tl.request((lo, hi)))["timeline"]
    assert ((r["spans"]["end"] > lo) & (r["spans"]["start"] < hi)).all()
    doc = tl.to_trace(r, 450e6, "w", "paper")
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            assert lo / 450 - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= hi / 450 + 1e-3
    small = _run(tiles_elf, timeline=tl.Request(max_samples=32, max_spans=40))["timeline"]
    assert small["dropped"] and len(small["spans"]) <= 40 and small["min_span"] > 0
    assert (small["spans"]["end"] - small["spans"]["start"] >= small["min_span"]).all()
    assert all(len(s) <= 33 for s in small["samples"]) and small["period"] > 16


@needs_clang
def test_run_timeline_command(tiles_elf, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", str(tiles_elf), "--platform", "paper", "--timeline", str(out)]) == 0
    assert "trace events" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    per = check_trace(doc)
    assert "main" in {e["name"] for e in per["FC calls"]}
    assert {"compute", "barrier wait"} <= {e["name"] for e in per["PE3"]}
    assert main(["run", str(tiles_elf), "--platform", "paper", "--timeline", str(out), "--json"]) == 0   # its own file
    assert json.loads(capsys.readouterr().out)["timeline"]["path"] == str(out)
    # its own page, drawn offline
    assert main(["timeline", str(out)]) == 0
    assert "timeline page" in capsys.readouterr().out
    from tests.test_experiments import render
    got = render(out.with_suffix(".html"), tmp_path)
    assert got["plots"] == got["figures"] == 1 and got["errors"] == 0


@needs_clang
def test_kernel_timeline_shows_the_cores_and_both_dmas(tmp_path, capsys):
    d = tmp_path / "tl"
    assert main(["kernel", "--kind", "pw", "--cin", "32", "--cout", "64", "--hw", "16", "--step", "all",
                 "--platform", "paper", "--timeline", str(d), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in d.iterdir()) == ["fw.json", "ig.json", "update.json", "wg.json"]
    for r in rows:
        doc = json.loads((d / f"{r['step']}.json").read_text())
        per = check_trace(doc)
        assert sum(e["args"]["bytes"] for e in per["uDMA"]) > 0
        assert {"HyperRAM read", "HyperRAM write"} <= {e["name"] for e in per["uDMA"]}
        assert r["timeline"] == str(d / f"{r['step']}.json")
    # again into the same directory: it holds only timelines, which may be replaced
    assert main(["kernel", "--kind", "pw", "--cin", "32", "--cout", "64", "--hw", "16", "--step", "fw",
                 "--platform", "paper", "--timeline", str(d)]) == 0
