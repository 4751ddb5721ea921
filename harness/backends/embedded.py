"""The embedded backend: pulp-odl's own cycle-level simulator (platforms/pulpsim, C++)."""
from __future__ import annotations

from harness import elf as elfmod
from harness import energy, hosttime
from harness.errors import UserError
from harness.platform import Platform
from harness.validate import UINT64_MAX

DEFAULT_MAX_CYCLES = 2_000_000_000

# The stall categories of the cycle report, as (report key, simulator event).
STALLS = (
    ("load_use", "load_use"), ("mul", "mul"), ("dependency", "dependency"), ("branch", "branch"),
    ("jump", "jump"), ("fetch", "fetch"), ("div", "div"), ("fpu", "fpu"), ("fpu_div", "fpu_div"), ("hwloop", "hwloop"),
    ("fpu_contention", "fpu_contention"), ("bus", "bus"), ("misaligned", "misaligned"),
    ("tcdm_conflict", "tcdm_conflict"), ("wait", "wait"),
)


def simulator():
    """The compiled extension; PULP_ODL_SIM_DIR may name a directory holding a separately built one."""
    import os
    import sys

    alt = os.environ.get("PULP_ODL_SIM_DIR")
    if alt:
        if alt not in sys.path:
            sys.path.insert(0, alt)
        import _pulpsim  # type: ignore

        return _pulpsim
    try:
        from harness import _pulpsim
    except ImportError as e:  # pragma: no cover - depends on the install
        raise UserError(f"the simulator extension is not built ({e}); run 'make setup'") from None
    return _pulpsim


def version() -> str:
    from harness import __version__
    sim = simulator()
    return f"pulpsim-{__version__}+isa.{sim.ISA_SHA256[:12]}.src.{sim.SOURCE_SHA256[:12]}"


def run(elf_path, platform: Platform, max_cycles: int | None = None, trace: str | None = None,
        read: dict | None = None, preload: list | None = None, timeline=None) -> dict:
    """Run an ELF to completion. Returns the result schema shared by every backend.
    `read` maps names to (address, bytes), or (external memory, offset, bytes), to fetch after the run
    (result["memory"]); `preload` lists (address, data) or (external memory, offset, data) to place
    before the program starts ("hyperram" or "flash": contents the program finds there). With a
    `timeline` (harness.timeline.Request) the simulator records one: result["timeline"]."""
    with hosttime.phase("simulate"):
        r = _run(elf_path, platform, max_cycles, trace, read, preload, timeline)
        if r["status"] == "rerun":   # an icache control write met a refill run ahead of it: run it again
            r = _run(elf_path, platform, max_cycles, trace, read, preload, timeline, ahead_refills=False)
        return r


def _run(elf_path, platform: Platform, max_cycles, trace, read, preload, timeline, ahead_refills=True,
         run_ahead=None) -> dict:
    sim = simulator()
    limit = max_cycles if max_cycles is not None else DEFAULT_MAX_CYCLES
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= UINT64_MAX:
        raise UserError(f"max_cycles must be an integer from 1 to {UINT64_MAX}, got {max_cycles!r}")
    prog = elfmod.load(elf_path, platform)   # checks every segment against the platform's memories
    try:
        m = sim.Machine(platform.sim_config())
    except RuntimeError as e:   # a geometry the simulator cannot build (e.g. an icache smaller than its ways)
        raise UserError(f"{platform.path}: {e}; fix the platform file") from None
    for i, seg in enumerate(prog.segments):
        # A segment's zero tail (.bss, the heap) is already zero in a fresh machine, whose untouched
        # pages cost nothing; it is written only where an earlier segment put something.
        tail = seg.addr + len(seg.data), seg.addr + seg.memsz
        tail_over = any(p.addr < tail[1] and tail[0] < p.addr + p.memsz for p in prog.segments[:i])
        try:
            m.load(seg.addr, seg.data + bytes(seg.memsz - len(seg.data)) if tail_over else seg.data)
        except RuntimeError as e:
            raise UserError(f"{elf_path}: {e} (was it built for platform '{platform.name}'?)") from None
    for item in preload or ():
        if isinstance(item[0], str):
            m.load_external(item[0], item[1], item[2])
        else:
            m.load(item[0], item[1])
    lo, hi = prog.text_range
    if hi > lo:
        m.set_text(lo, hi)
    names = None
    if timeline is not None:
        from harness import timeline as tlmod
        names = tlmod.arm(m, prog, timeline)
    m.ahead_refills = ahead_refills
    if run_ahead is not None:   # 0: one instruction at a time past a turn (what run-ahead must reproduce)
        m.run_ahead = run_ahead
    m.start(prog.entry)
    r = m.run(limit, trace or "")
    cores = r["cores"]
    stalls = {key: sum(c[ev] for c in cores) for key, ev in STALLS}
    out = {
        "backend": "embedded",
        "simulator": version(),
        "platform": platform.name,
        "status": r["status"],
        "exit_code": r["exit_code"] if r["status"] == "exit" else None,
        "cycles": r["cycles"],
        "instructions": r["instructions"],
        "ipc": round(r["instructions"] / r["cycles"], 4) if r["cycles"] else 0.0,
        "stdout": r["stdout"].decode("utf-8", errors="replace"),
        "stalls": stalls,
        "cores": cores,
        "dmas": r["dmas"],
        "host_seconds": r["host_seconds"],
        "mips": round(r["instructions"] / r["host_seconds"] / 1e6, 2) if r["host_seconds"] > 0 else 0.0,
    }
    # Energy of the whole run, and of the windows the program marked (pulp_energy_mark, pmsis.h)
    out["energy"] = energy.report(r["energy_counts"], platform)
    out["energy_window"] = (energy.report(r["energy_window"], platform, windows=r["energy_windows"])
                            if "energy_window" in r else None)
    if "trace_error" in r:
        out["trace_error"] = r["trace_error"]
    if timeline is not None:
        out["timeline"] = tlmod.collect(m, names, timeline, 1 + int(platform.sim_config()["cluster.cores"]))
    if read:
        out["memory"] = {name: (m.read_external(*where) if isinstance(where[0], str) else m.read(*where))
                         for name, where in read.items()}
    if "fault" in r:
        f = dict(r["fault"])
        f["insn"] = _insn_at(m, f["pc"], platform)
        out["fault"] = f
    return out


def _insn_at(m, pc: int, platform: Platform) -> dict:
    sim = simulator()
    try:
        raw = int.from_bytes(m.read(pc, 4), "little")
    except RuntimeError:
        try:
            raw = int.from_bytes(m.read(pc, 2), "little")
        except RuntimeError:
            return {"word": None, "text": "<unmapped>"}
    if raw & 3 != 3:
        raw &= 0xFFFF
    sep = platform.isa["fp_regfile"] == "separate"
    return {"word": raw, "text": sim.disasm(raw, pc, sep)}


def fault_line(result: dict) -> str:
    """The one stderr line that names a fault: kind, detail, pc and the instruction there."""
    f = result["fault"]
    insn = f.get("insn") or {}
    word = insn.get("word")
    wtxt = f"{word:0{8 if word is not None and word > 0xFFFF else 4}x}" if word is not None else "?"
    core = f.get("core", 0)
    who = "fc" if core in (0, -1) else f"cluster core {core - 1}"
    detail = f": {f['detail']}" if f.get("detail") else ""
    return f"{f['kind']}{detail} ({who}, pc 0x{f['pc']:08x}: {wtxt} {insn.get('text', '')})"
