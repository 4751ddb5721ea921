"""Generate, build, run and check one kernel step: the result row of `pulp-odl kernel`."""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import ROOT, energy, hosttime, paths, toolchain
from harness import elf as elfmod
from harness import platform as platmod
from harness.backends import embedded
from harness.errors import UserError
from harness.kernels import codegen, reference
from harness.kernels.spec import KernelSpec
from harness.kernels.tensors import from_image, logical_to_storage

KERNEL_INCLUDE = ROOT / "pulp_kernels" / "include"

# Rounding-error bounds per step: |out - ref| <= 2^-10 |ref| + ETA * sum|terms| + 2^-24 (the final FP16
# rounding, the accumulation, and FP16 subnormal spacing). FP32-accumulating products (vfdotpex) keep
# ETA tiny; depthwise forward/input-gradient accumulate their k*k terms in FP16 and the depthwise
# weight gradient folds FP16 partial sums of 8 terms into FP32.
ETA = {"fw": 2.0 ** -18, "wg": 2.0 ** -18, "ig": 2.0 ** -18, "update": 0.0}
ETA_DW = {"fw": 9 * 2.0 ** -11, "ig": 9 * 2.0 ** -11, "wg": 8 * 2.0 ** -11, "update": 0.0}


# Operators round once to FP16 after FP32 arithmetic (or once in FP16 SIMD): 2^-10 of the magnitude more.
ETA_OP = 2.0 ** -10


def tolerance(spec: KernelSpec, ref: np.ndarray, mag: np.ndarray) -> np.ndarray:
    from harness.kernels.spec import OPS

    eta = ETA_OP if spec.kind in OPS else (ETA_DW if spec.kind == "dw" else ETA)[spec.step]
    return 2.0 ** -10 * np.abs(ref) + eta * mag + 2.0 ** -24


def write_sources(prog: codegen.Program, outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    c = outdir / "kernel.c"
    c.write_text(prog.c)
    lines = [prog.asm]
    for sym, img in prog.inputs.items():
        binf = outdir / f"{sym}.bin"
        binf.write_bytes(img.astype("<u2").tobytes())
        lines += ["    .section .l2_data, \"aw\"", "    .balign 16", f"    .globl {sym}", f"{sym}:", f"    .incbin \"{binf}\"", ""]
    s = outdir / "data.S"
    s.write_text("\n".join(lines))
    return [c, s]


def _source_hash(prog: codegen.Program) -> str:
    h = hashlib.sha256(prog.c.encode() + prog.asm.encode())
    for sym in sorted(prog.inputs):
        h.update(sym.encode())
        h.update(prog.inputs[sym].astype("<u2").tobytes())
    for path in sorted(KERNEL_INCLUDE.glob("*.h")):
        h.update(path.read_bytes())
    return h.hexdigest()


# Preprocessor defines of the kernel ELF, the same for every backend (part of the provenance, since they
# change the ELF): the program prints its outputs (ODL_DUMP) after the measured part, because GVSoC's
# memory cannot be read back; the embedded backend reads them from memory and checks the printed copy.
BUILD_DEFINES = ["ODL_DUMP"]


@dataclass(frozen=True)
class Prepared:
    """A kernel generated once: its inputs and program, shared by its provenance and its run."""
    spec: KernelSpec
    inputs: dict
    program: codegen.Program


def prepare(spec: KernelSpec) -> Prepared:
    plat = platmod.load(spec.platform)
    codegen.check_l2(spec, plat)
    ins = reference.make_inputs(spec)
    return Prepared(spec, ins, codegen.generate(spec, plat, ins))


def _generator_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def provenance(spec: KernelSpec, prepared: Prepared | None = None) -> dict:
    """Everything a kernel result depends on, without building or running it: the key of cached rows."""
    plat = platmod.load(spec.platform)
    tc = toolchain.find()
    try:
        prog = (prepared or prepare(spec)).program
    except UserError:
        # No program can be generated (it does not fit the platform): the refusal follows from the spec,
        # the generator and the platform file alone, so it is cached under those and not retried.
        return {"refused_by_generator_sha256": _generator_hash(), "toolchain": tc.describe(),
                "platform_sha256": plat.run_sha256, "simulator": embedded.version(), "backend": "embedded"}
    return {"source_sha256": _source_hash(prog), "toolchain": tc.describe(), "platform_sha256": plat.run_sha256,
            "simulator": embedded.version(), "backend": "embedded", "defines": BUILD_DEFINES}


def parse_dump(stdout: str, prog: codegen.Program) -> dict:
    """Output tensors printed by a program built with -DODL_DUMP: `ODLOUT tensor word w0 .. w7`."""
    syms = list(prog.outputs)
    words = {sym: np.zeros(prog.outputs[sym][0].halves // 2, dtype="<u4") for sym in syms}
    for line in stdout.splitlines():
        if line.startswith("ODLOUT "):
            parts = line.split()
            t, i = int(parts[1]), int(parts[2])
            vals = [int(x, 16) for x in parts[3:]]
            words[syms[t]][i:i + len(vals)] = vals
    return {sym: w.tobytes() for sym, w in words.items()}


GENERATED = ("kernel.c", "data.S", "kernel.elf")   # and one <input>.bin per input tensor


def check_keep_dir(keep: Path, steps: list[str]) -> None:
    """--keep DIR: a new or empty directory, or one an earlier --keep wrote (step directories holding
    only generated files), so that no file of the user's is overwritten; proven writable."""
    if keep.is_dir():
        for entry in keep.iterdir():
            ok = entry.is_dir() and entry.name in ("fw", "wg", "ig", "update") and all(
                f.name in GENERATED or f.suffix == ".bin" for f in entry.iterdir())
            if not ok:
                raise UserError(f"--keep {keep}: holds {entry.name}, which 'pulp-odl kernel --keep' did not write; "
                                "give a new or empty directory")
    paths.output_dir(keep, "--keep")


def run_spec(spec: KernelSpec, workdir: Path | None = None, keep: bool = False, backend: str = "embedded",
             prepared: Prepared | None = None, timeline=None) -> dict:
    """The checked result row of one kernel; with a `timeline` request (harness.timeline), the
    simulator's recording of the run under row["timeline"]."""
    return run_spec_on(spec, (backend,), workdir, keep, prepared, timeline)[backend]


def run_spec_on(spec: KernelSpec, backends=("embedded",), workdir: Path | None = None, keep: bool = False,
                prepared: Prepared | None = None, timeline=None, errors: bool = False, digest: bool = False) -> dict:
    """The checked rows of one kernel on each of `backends`, all from one ELF: the embedded simulator
    runs exactly what GVSoC runs. With errors=True a backend whose run fails gets its UserError in
    place of a row, and the other backends still run; with digest=True each row has the sha256 of its
    output tensors (outputs_sha256), to tell whether two backends computed the very same bits."""
    plat = platmod.load(spec.platform)
    for b in backends:
        if b not in ("embedded", "gvsoc"):
            raise UserError(f"unknown backend '{b}'; choose embedded or gvsoc")
    if "gvsoc" in backends:
        from harness.backends import gvsoc

        gvsoc.require()
        gvsoc.check_platform(plat)
    prepared = prepared or prepare(spec)
    ins, prog = prepared.inputs, prepared.program
    src_hash = _source_hash(prog)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="odl-kernel-")
        workdir = Path(tmp.name)
    out = {}
    try:
        elf = build_elf(write_sources(prog, workdir), workdir, plat)
        for b in backends:
            try:
                res = _run_elf(spec, prog, elf, plat, b, timeline if b == "embedded" else None)
                with hosttime.phase("check"):
                    row = check(spec, prog, ins, res, src_hash)
                if timeline is not None and b == "embedded":
                    row["timeline"] = res["timeline"]
                if digest:
                    from harness.kernels.crosscheck import outputs_digest
                    row["outputs_sha256"] = outputs_digest(res["memory"], prog.outputs)
                out[b] = row
            except UserError as e:
                if not errors:
                    raise
                out[b] = e
    finally:
        if tmp is not None and not keep:
            tmp.cleanup()
    return out


def _run_elf(spec: KernelSpec, prog, elf: Path, plat, backend: str, timeline) -> dict:
    """A kernel ELF's run on one backend, with its output tensors under res["memory"]."""
    if backend == "gvsoc":
        from harness.backends import gvsoc

        res = gvsoc.run(elf, plat)
        res["memory"] = parse_dump(res.get("stdout", ""), prog)
        return res
    program = elfmod.load(elf, plat)
    reads = {}
    for sym, (t, _) in prog.outputs.items():
        if sym not in program.symbols:
            raise UserError(f"generated program lacks output symbol {sym}")
        reads[sym] = (program.symbols[sym], t.nbytes)
    if spec.step == "update":
        for sym in prog.inputs:
            reads[sym] = (program.symbols[sym], prog.inputs[sym].size * 2)
    res = embedded.run(elf, plat, read=reads, timeline=timeline)
    if res["status"] == "exit" and res["exit_code"] == 0:
        # the printed copy is what a GVSoC run is checked on: it must be what memory holds
        printed = parse_dump(res["stdout"], prog)
        bad = [sym for sym in prog.outputs if printed[sym] != res["memory"][sym]]
        if bad:
            raise UserError(f"{spec.name}: the outputs the program printed differ from memory ({', '.join(bad)})")
    return res


def build_elf(srcs, workdir: Path, plat) -> Path:
    """The kernel program's ELF, the same bytes whichever backend runs it (cached by its sources)."""
    return toolchain.build(srcs, workdir / "kernel.elf", plat, opt="2", include_dirs=[KERNEL_INCLUDE],
                           defines=BUILD_DEFINES, cache=True)


def check(spec: KernelSpec, prog, ins: dict, res: dict, src_hash: str) -> dict:
    plat = platmod.load(spec.platform)
    row = {"kernel": spec.name, "step": spec.step, **spec.as_dict(), "backend": res["backend"],
           "simulator": res["simulator"], "source_sha256": src_hash, "platform_sha256": plat.run_sha256,
           "toolchain": toolchain.find().describe(), "l1_bytes": prog.l1_bytes, "tiles": prog.tiles}
    if res["status"] != "exit" or res["exit_code"] != 0:
        f = res.get("fault") or {}
        raise UserError(f"{spec.name}: the kernel program did not finish ({res['status']}: {f.get('kind', '')} {f.get('detail', '')})")
    line = next((ln for ln in res["stdout"].splitlines() if ln.startswith("ODL ")), "")
    parts = line.split()[1:]
    vals = dict(zip(parts[::2], map(int, parts[1::2])))
    if "cycles" not in vals:
        raise UserError(f"{spec.name}: the kernel program printed no cycle line")
    exp = reference.expected(spec, ins)
    worst, ok, max_err = 0.0, True, 0.0
    details = {}
    mem = res["memory"]
    for sym, (t, ref_name) in prog.outputs.items():
        got, pad = from_image(mem[sym], t.shape)
        ref, mag = exp[ref_name]
        ref = logical_to_storage(spec, ref_name, ref).reshape(t.shape)
        mag = logical_to_storage(spec, ref_name, mag).reshape(t.shape)
        err = np.abs(got.astype(np.float64) - ref)
        tol = tolerance(spec, ref, mag)
        bad = ~(err <= tol)
        details[ref_name] = {"max_abs_err": float(np.nanmax(err)) if err.size else 0.0, "mismatches": int(bad.sum())}
        max_err = max(max_err, details[ref_name]["max_abs_err"])
        if bad.any() or (pad != 0).any():
            ok = False
            if (pad != 0).any():
                details[ref_name]["pad_not_zero"] = int((pad != 0).sum())
        worst = max(worst, float(np.nanmax(err / tol)) if err.size else 0.0)
    if spec.step == "update":
        for name in ("w", "b"):
            sym = f"g_{name}"
            if name not in exp:
                continue
            shape = logical_to_storage(spec, name, ins[name]).shape
            got, pad = from_image(mem[sym], shape)
            ref = logical_to_storage(spec, name, exp[name][0])
            err = np.abs(got.astype(np.float64) - ref.astype(np.float16).astype(np.float64))
            details[name] = {"max_abs_err": float(err.max()), "mismatches": int((err > 0).sum())}
            max_err = max(max_err, float(err.max()))
            ok = ok and not (err > 0).any()
    cycles = vals["cycles"]
    macs = spec.macs()
    cluster = vals.get("cluster", cycles)
    row.update(cycles=cycles, cluster_cycles=cluster, ext_in_cycles=vals.get("ext_in", 0),
               ext_out_cycles=vals.get("ext_out", 0), compute_cycles=vals.get("compute", 0),
               dma_wait_cycles=vals.get("dma_wait", 0),
               overhead_cycles=cluster - vals.get("compute", 0) - vals.get("dma_wait", 0),
               macs=macs, mac_per_cycle=round(macs / cycles, 4) if cycles else 0.0,
               compute_mac_per_cycle=round(macs / vals["compute"], 4) if vals.get("compute") else 0.0,
               max_abs_err=max_err, err_over_tol=worst, ok=bool(ok), outputs=details,
               stalls=res["stalls"], total_cycles=res["cycles"], instructions=res["instructions"],
               dmas=res["dmas"], **cluster_counts(res))
    row.update(energy_row(res, cycles, plat, spec.name))
    return row


def cluster_counts(res: dict) -> dict:
    """Instructions and stalls of the cluster cores alone: the kernel's work, without what the FC does
    around it (booting, printing the outputs)."""
    cores = [c for c in res.get("cores", []) if c.get("core") != "fc"]
    keys = res["stalls"].keys()
    return {"cluster_instructions": sum(c["instructions"] for c in cores),
            "cluster_stalls": {k: sum(c.get(k, 0) for c in cores) for k in keys}}


def energy_row(res: dict, cycles: int, plat, what: str) -> dict:
    """The energy of a program's timed section: the events of its marked window (None on a backend
    that counts none), priced with the platform's coefficients."""
    win = res.get("energy_window")
    if win is None:
        return {"energy_events": None, **energy.row_fields(None, plat)}
    if win["events"]["cycles"] != cycles:
        raise UserError(f"{what}: the energy window covers {win['events']['cycles']:,} cycles and the timed "
                        f"section {cycles:,}; the program must mark exactly its timed section")
    return {"energy_events": win["events"], **energy.row_fields(win["events"], plat)}
