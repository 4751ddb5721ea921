"""Timelines of simulated runs, in the Chrome trace-event format (what Perfetto and chrome://tracing
open offline).

The simulator records them itself when asked (platforms/pulpsim/timeline.cpp): the spans of its own
events (a core asleep and what it waits for, a function entered and left, each cluster-DMA and uDMA
transfer with its bytes) and every core's counters sampled at a period that doubles as the run
grows. This module turns a recording into tracks:

* one per core (FC, PE0..PE7): sleeps exactly as the event unit saw them (barrier wait, DMA wait,
  waiting for work, wfi, mutex), and between them compute or a stall burst, classified per sample
  period (a stall burst: more stalled than issuing cycles, named by the largest cause);
* one per core with its function calls, nested ("PE0 calls");
* `stages`, when the caller names stage functions: what a deployed training step does when;
* one per DMA: the cluster DMA's and the uDMA's transfers, each with its bytes and direction;
* counters: instructions per cycle (cluster, FC), FPU and TCDM contention (stall cycles per cycle,
  summed over the cluster), HyperRAM, flash and cluster-DMA traffic (bytes per cycle).

Size is bounded for any run: at most `max_samples` samples per core (the period doubles) and
`max_spans` spans (then the shortest are left out, and otherData says from which length on); a
window (`--timeline-window FROM:TO`, in cycles) records only that part of a run, at finer periods.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness import paths
from harness.errors import UserError
from harness.validate import UINT64_MAX

GENERATOR = "pulp-odl timeline"
# A file we may overwrite starts like this (json.dumps keeps the key order of TraceDoc).
HEAD = '{"otherData":{"generator":"' + GENERATOR + '"'

SPAN = np.dtype([("track", "<u4"), ("kind", "<u4"), ("start", "<u8"), ("end", "<u8"), ("a", "<u8"), ("b", "<u8")])
COUNTERS = ("cycle", "instr", "active", "fpu_cont", "tcdm", "depend", "bus", "fetch", "wait", "multi", "control")
T_CLUSTER_DMA, T_UDMA = 1000, 1001
K_FUNCTION = 16
K_DMA_TO_L1, K_DMA_TO_L2 = 32, 33
K_UDMA_READ, K_UDMA_WRITE = 48, 49
SLEEPS = {1: "sleep (wfi)", 2: "barrier wait", 3: "DMA wait", 4: "event wait", 5: "idle (waits for work)",
          6: "mutex wait"}
COMPUTE = 10
STALLS = {"fpu_cont": "stall: FPU contention", "tcdm": "stall: TCDM bank conflicts",
          "depend": "stall: load-use and dependencies", "bus": "stall: L2 and peripheral accesses",
          "fetch": "stall: instruction fetch", "multi": "stall: multi-cycle operations",
          "control": "stall: branches and jumps"}
STATE_NAMES = {**SLEEPS, COMPUTE: "compute", **{11 + i: n for i, n in enumerate(STALLS.values())}}
# Chrome's reserved colour names, so that a state looks the same on every track
COLOURS = {"compute": "good", "barrier wait": "yellow", "DMA wait": "terrible", "idle (waits for work)": "grey",
           "sleep (wfi)": "grey", "event wait": "olive", "mutex wait": "olive"}

PID_SOC, PID_CLUSTER, PID_DMA, PID_STEP = 1, 2, 3, 4
MAX_SAMPLES = 4096
MAX_SPANS = 200_000


@dataclass
class Request:
    """What to record: a window of cycles [start, end), the bounds, and which functions become spans
    (name -> entry address; None: every function of the program). `stages` maps function names to
    the stage labels of a `stages` track."""
    start: int = 0
    end: int | None = None
    max_samples: int = MAX_SAMPLES
    max_spans: int = MAX_SPANS
    functions: dict | None = None
    stages: dict = field(default_factory=dict)


def request(window: tuple | None = None, **kw) -> Request:
    start, end = window if window else (0, None)
    return Request(start=start, end=end, **kw)


# ---------------------------------------------------------------- recording (harness.backends.embedded)

def arm(machine, program, req: Request) -> list[str]:
    """Switch recording on for the next run of `machine` (an ELF loaded, its text range set).
    Returns the function names by index (index 0 unused)."""
    funcs = program.functions if req.functions is None else req.functions
    names, entries, seen = [""], [], set()
    for name, addr in sorted(funcs.items(), key=lambda kv: (kv[1], kv[0])):
        if addr in seen:   # aliases of one entry: the first name
            continue
        seen.add(addr)
        names.append(name)
        entries.append((addr & ~1, len(names) - 1))
    machine.timeline(req.start, UINT64_MAX if req.end is None else req.end, req.max_samples, req.max_spans, entries)
    return names


def collect(machine, names: list[str], req: Request, cores: int) -> dict:
    """The raw recording after a run."""
    d = machine.timeline_data()
    spans = np.frombuffer(d["spans"], SPAN).copy()
    samples = [np.frombuffer(b, "<u8").reshape(-1, d["counters"]).copy() for b in d["samples"]]
    return {"spans": spans, "samples": samples, "period": int(d["period"]), "min_span": int(d["min_span"]),
            "dropped": bool(d["dropped"]), "functions": names, "window": (req.start, req.end),
            "stages": dict(req.stages), "cores": cores}


# ---------------------------------------------------------------- trace events

def _us(cycles, clock_hz: float):
    return np.round(np.asarray(cycles, dtype=np.float64) * (1e6 / clock_hz), 4)


class _Events:
    """Trace events under construction, with the tracks' names and order."""

    def __init__(self, clock_hz: float):
        self.hz = clock_hz
        self.ev: list[dict] = []

    def process(self, pid: int, name: str, order: int):
        self.ev.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self.ev.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": order}})

    def thread(self, pid: int, tid: int, name: str, order: int):
        self.ev.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        self.ev.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": order}})

    def spans(self, pid: int, tid: int, start, end, names, args=None, cat: str = ""):
        ts, te = _us(start, self.hz), _us(end, self.hz)
        for i, (a, b, n) in enumerate(zip(ts.tolist(), te.tolist(), names)):
            e = {"name": n, "ph": "X", "ts": a, "dur": round(b - a, 4), "pid": pid, "tid": tid}
            if cat:
                e["cat"] = cat
            col = COLOURS.get(n)
            if col:
                e["cname"] = col
            if args is not None:
                e["args"] = args[i]
            self.ev.append(e)

    def counter(self, pid: int, name: str, t, series: dict):
        """One counter track; consecutive equal values are written once."""
        ts = _us(t, self.hz).tolist()
        cols = {k: np.round(np.asarray(v, dtype=np.float64), 4).tolist() for k, v in series.items()}
        last = None
        for i, x in enumerate(ts):
            vals = tuple(c[i] for c in cols.values())
            if vals == last:
                continue
            last = vals
            self.ev.append({"name": name, "ph": "C", "ts": x, "pid": pid, "args": dict(zip(cols, vals))})


def _core_states(spans: np.ndarray, samples: np.ndarray, lo: int, hi: int):
    """Per core: contiguous (start, end, state) runs: its sleeps as recorded, the awake time between
    them labelled per sample period by its counters."""
    sleeps = spans[(spans["kind"] >= 1) & (spans["kind"] <= 6)]
    sleeps = sleeps[np.argsort(sleeps["start"], kind="stable")]
    if len(samples) < 1 and not len(sleeps):
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    cyc = samples[:, 0] if len(samples) else np.zeros(0, np.uint64)
    first = int(min(cyc[0] if len(cyc) else UINT64_MAX, sleeps["start"][0] if len(sleeps) else UINT64_MAX))
    last = int(max(cyc[-1] if len(cyc) else 0, sleeps["end"][-1] if len(sleeps) else 0))
    first, last = max(first, lo), min(last, hi)
    if last <= first:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    # the label of each sample period
    if len(samples) >= 2:
        d = np.diff(samples.astype(np.int64), axis=0)
        instr, active = d[:, 1], d[:, 2]
        causes = np.stack([d[:, COUNTERS.index(k)] for k in STALLS], axis=1)
        label = np.where(active - instr > instr, 11 + np.argmax(causes, axis=1), COMPUTE)
    else:
        label = np.zeros(0, np.int64)
    edges = np.concatenate([cyc.astype(np.int64), sleeps["start"].astype(np.int64), sleeps["end"].astype(np.int64),
                            [first, last]])
    edges = np.unique(np.clip(edges, first, last))
    s, e = edges[:-1], edges[1:]
    state = np.full(len(s), -1, np.int64)      # -1: not running (before its first sample, after its last)
    if len(label):
        j = np.searchsorted(cyc.astype(np.int64), s, side="right") - 1
        ok = (j >= 0) & (j < len(label))
        state[ok] = label[j[ok]]
    if len(sleeps):
        k = np.searchsorted(sleeps["start"].astype(np.int64), s, side="right") - 1
        inside = (k >= 0) & (s < sleeps["end"].astype(np.int64)[np.maximum(k, 0)])
        state[inside] = sleeps["kind"].astype(np.int64)[k[inside]]
    # runs of one state
    change = np.concatenate([[True], state[1:] != state[:-1]])
    starts = np.flatnonzero(change)
    ends = np.concatenate([starts[1:], [len(s)]]) - 1
    rs, re_, st = s[starts], e[ends], state[starts]
    keep = st >= 0
    return rs[keep], re_[keep], st[keep]


def _bins(lo: int, hi: int, period: int) -> np.ndarray:
    first = lo // period * period
    return np.arange(first, hi + period, period, dtype=np.int64)


def _spread(start, end, amount, edges: np.ndarray) -> np.ndarray:
    """How much of each amount falls within each bin [edges[i], edges[i+1]): every amount spread evenly
    over its [start, end) (a transfer's bytes, a sample period's instructions)."""
    if not len(start) or len(edges) < 2:
        return np.zeros(max(0, len(edges) - 1))
    s, e = np.asarray(start, np.float64), np.asarray(end, np.float64)
    rate = np.asarray(amount, np.float64) / np.maximum(e - s, 1)
    t = np.concatenate([s, np.maximum(e, s + 1)])
    dr = np.concatenate([rate, -rate])
    order = np.argsort(t, kind="stable")
    t, dr = t[order], dr[order]
    r = np.cumsum(dr)                                  # rate after each event
    cum = np.concatenate([[0.0], np.cumsum(r[:-1] * np.diff(t))])   # amount up to each event time
    at = np.interp(edges.astype(np.float64), t, cum, left=0.0, right=cum[-1])
    return np.diff(at)


def _traffic(spans: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bytes moved within each bin by these transfers."""
    return _spread(spans["start"], spans["end"], spans["a"], edges)


def to_trace(rec: dict, clock_hz: float, title: str, platform: str) -> dict:
    """The Chrome trace document of a recording."""
    spans, samples, period = rec["spans"], rec["samples"], rec["period"]
    lo = rec["window"][0]
    ends = [int(spans["end"].max())] if len(spans) else []
    ends += [int(s[-1, 0]) for s in samples if len(s)]
    hi = max(ends, default=lo)
    if rec["window"][1] is not None:
        hi = min(hi, rec["window"][1])
    spans = spans[(spans["end"] > lo) & (spans["start"] < hi)].copy()
    spans["start"] = np.maximum(spans["start"], lo)
    spans["end"] = np.minimum(spans["end"], hi)
    out = _Events(clock_hz)
    n_cl = rec["cores"] - 1
    out.process(PID_STEP, "training step", 0)
    out.process(PID_SOC, "SoC", 1)
    out.process(PID_CLUSTER, "cluster", 2)
    out.process(PID_DMA, "DMA and external memory", 3)
    tracks = []
    for core in range(rec["cores"]):
        name = "FC" if core == 0 else f"PE{core - 1}"
        pid = PID_SOC if core == 0 else PID_CLUSTER
        mine = spans[spans["track"] == core]
        smp = samples[core] if core < len(samples) else np.zeros((0, len(COUNTERS)), np.uint64)
        if len(smp):
            smp = smp[(smp[:, 0] + period >= lo) & (smp[:, 0] < hi + period)]
        s, e, st = _core_states(mine, smp, lo, hi)
        if not len(s) and not (mine["kind"] == K_FUNCTION).any():
            continue
        tid = 2 * core + 1
        out.thread(pid, tid, name, 2 * core)
        tracks.append(name)
        out.spans(pid, tid, s, e, [STATE_NAMES[int(x)] for x in st], cat="state")
        calls = mine[mine["kind"] == K_FUNCTION]
        if len(calls):
            calls = calls[np.lexsort((-calls["end"].astype(np.int64), calls["start"]))]
            out.thread(pid, tid + 1, f"{name} calls", 2 * core + 1)
            out.spans(pid, tid + 1, calls["start"], calls["end"], [rec["functions"][int(i)] for i in calls["a"]],
                      cat="call")
            stages = calls[[rec["functions"][int(i)] in rec["stages"] for i in calls["a"]]]
            if len(stages):
                out.thread(PID_STEP, 1, "stages", 0)
                tracks.append("stages")
                out.spans(PID_STEP, 1, stages["start"], stages["end"],
                          [rec["stages"][rec["functions"][int(i)]] for i in stages["a"]], cat="stage")
    dma = spans[spans["track"] == T_CLUSTER_DMA]
    out.thread(PID_DMA, 1, "cluster DMA", 0)
    tracks.append("cluster DMA")
    out.spans(PID_DMA, 1, dma["start"], dma["end"],
              ["L2 -> L1" if k == K_DMA_TO_L1 else "L1 -> L2" for k in dma["kind"].tolist()],
              [{"bytes": int(a), "core": (f"PE{int(b) & 0xff}" if int(b) & 0xff < n_cl else "FC/shared"),
                "rows": int(b) >> 8} for a, b in zip(dma["a"].tolist(), dma["b"].tolist())], cat="dma")
    ud = spans[spans["track"] == T_UDMA]
    out.thread(PID_DMA, 2, "uDMA", 1)
    tracks.append("uDMA")
    mem = ("HyperRAM", "flash")
    out.spans(PID_DMA, 2, ud["start"], ud["end"],
              [f"{mem[int(b)]} {'read' if k == K_UDMA_READ else 'write'}" for k, b in zip(ud["kind"].tolist(),
                                                                                      ud["b"].tolist())],
              [{"bytes": int(a)} for a in ud["a"].tolist()], cat="udma")
    # counters, per sample period
    edges = _bins(lo, hi, period)
    if len(edges) >= 2:
        nb = len(edges) - 1
        acc = {k: np.zeros(nb) for k in ("fc_instr", "cl_instr", "fpu_cont", "tcdm")}
        for core, smp in enumerate(samples):
            if len(smp) < 2:
                continue
            d = np.diff(smp.astype(np.int64), axis=0)
            s0, s1 = smp[:-1, 0], smp[1:, 0]
            acc["fc_instr" if core == 0 else "cl_instr"] += _spread(s0, s1, d[:, 1], edges)
            if core:
                acc["fpu_cont"] += _spread(s0, s1, d[:, COUNTERS.index("fpu_cont")], edges)
                acc["tcdm"] += _spread(s0, s1, d[:, COUNTERS.index("tcdm")], edges)
        t = edges[:-1]
        out.counter(PID_CLUSTER, "instructions per cycle", t, {"cluster": acc["cl_instr"] / period,
                                                               "FC": acc["fc_instr"] / period})
        out.counter(PID_CLUSTER, "contention (stall cycles per cycle)", t,
                    {"FPU": acc["fpu_cont"] / period, "TCDM": acc["tcdm"] / period})
        for label, sel in (("HyperRAM", 0), ("flash", 1)):
            m = ud[ud["b"] == sel]
            out.counter(PID_DMA, f"{label} traffic (bytes per cycle)", t,
                        {"read": _traffic(m[m["kind"] == K_UDMA_READ], edges) / period,
                         "write": _traffic(m[m["kind"] == K_UDMA_WRITE], edges) / period})
        out.counter(PID_DMA, "cluster DMA traffic (bytes per cycle)", t,
                    {"to L1": _traffic(dma[dma["kind"] == K_DMA_TO_L1], edges) / period,
                     "to L2": _traffic(dma[dma["kind"] == K_DMA_TO_L2], edges) / period})
    tracks.sort(key=lambda t: t != "stages")
    other = {"generator": GENERATOR, "title": title, "platform": platform, "clock_hz": clock_hz,
             "cycles_per_us": clock_hz / 1e6, "window_cycles": [lo, hi], "sample_period_cycles": period,
             "shortest_span_kept_cycles": rec["min_span"], "spans_dropped": rec["dropped"], "tracks": tracks}
    return {"otherData": other, "displayTimeUnit": "ns", "traceEvents": out.ev}


# ---------------------------------------------------------------- files

def is_timeline(path: Path) -> bool:
    """An existing file a timeline may replace: empty, or a timeline pulp-odl wrote."""
    return paths.starts_with(HEAD)(Path(path))


def check_output(path, flag: str, inputs=()) -> Path:
    return paths.output_file(path, flag, inputs=inputs, owned=is_timeline, kind="a pulp-odl timeline")


def check_output_dir(d, flag: str) -> Path:
    """--timeline DIR (one file per program): a new or empty directory, or one holding only timelines."""
    d = Path(d)
    if d.exists() and not d.is_dir():
        raise UserError(f"{flag} {d}: is not a directory; give a directory (or a path that does not exist yet)")
    if d.is_dir():
        for entry in d.iterdir():
            if not (entry.is_file() and entry.suffix == ".json" and is_timeline(entry)):
                raise UserError(f"{flag} {d}: holds {entry.name}, which is not a pulp-odl timeline; give a new or "
                                "empty directory")
    return paths.output_dir(d, flag)


def write(path, doc: dict) -> Path:
    from harness.experiments.cache import write_atomic

    path = Path(path)
    with paths.user_path(path, "--timeline path"):
        write_atomic(path, json.dumps(doc, separators=(",", ":")))
    return path


def load(path) -> dict:
    """A trace document, checked: JSON with traceEvents."""
    text = paths.read_text(path, "timeline", "give a file written by --timeline")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON (line {e.lineno}, column {e.colno}); give a file written by --timeline") \
            from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise UserError(f"{path}: has no traceEvents list; give a file written by --timeline")
    return doc


def track_names(doc: dict) -> list[str]:
    return [e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"]


def summary(doc: dict) -> str:
    """One line: the span, the tracks with events, and the size in events."""
    o = doc.get("otherData", {})
    lo, hi = o.get("window_cycles", [0, 0])
    return (f"{len(doc['traceEvents']):,} events, cycles {lo:,} to {hi:,}, sample period {o.get('sample_period_cycles')} "
            f"cycles; tracks: {', '.join(o.get('tracks', []))}")
