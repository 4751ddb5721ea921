"""Compile and link C/assembly for a platform: Debian's clang-19 + lld-19 by default, or a PULP GCC
when PULP_RISCV_GCC_TOOLCHAIN names one. The same sources build with either."""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from harness import ROOT, hosttime, paths, procs, runtime
from harness.errors import UserError
from harness.platform import Platform

INSTALL_HINT = "run 'make setup' (or: apt-get install -y clang-19 lld-19 llvm-19)"
COMMON_CFLAGS = ["-nostdlib", "-ffreestanding", "-fno-math-errno", "-ffunction-sections", "-fdata-sections",
                 "-fno-common", "-Wall"]


@dataclass(frozen=True)
class Toolchain:
    kind: str          # "clang" or "pulp-gcc"
    cc: str
    version: str

    def describe(self) -> str:
        return f"{self.kind} {self.version} ({self.cc})"


def _version(cmd: str) -> str:
    try:
        out = subprocess.run([cmd, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.splitlines()[0].strip() if out else ""


def find_clang() -> Toolchain | None:
    for name in ("clang-19", "clang"):
        path = shutil.which(name)
        if path:
            ver = _version(path)
            if "version 19" in ver or name == "clang-19":
                lld = shutil.which("ld.lld-19") or shutil.which("ld.lld")
                if lld:
                    return Toolchain("clang", path, ver)
    return None


def find_pulp_gcc() -> Toolchain | None:
    root = os.environ.get("PULP_RISCV_GCC_TOOLCHAIN")
    if not root:
        return None
    for name in ("riscv32-unknown-elf-gcc", "riscv64-unknown-elf-gcc"):
        path = Path(root) / "bin" / name
        if path.exists():
            return Toolchain("pulp-gcc", str(path), _version(str(path)))
    return None


_found: dict = {}


def find() -> Toolchain:
    """The compiler to use, asked for its version once per process and environment (PATH and
    PULP_RISCV_GCC_TOOLCHAIN decide what is found)."""
    key = (os.environ.get("PATH", ""), os.environ.get("PULP_RISCV_GCC_TOOLCHAIN", ""))
    if key not in _found:
        tc = find_pulp_gcc() or find_clang()
        if tc is None:
            raise UserError(f"no RISC-V compiler found: clang-19 with ld.lld-19 is needed; {INSTALL_HINT}")
        _found[key] = tc
    return _found[key]


def flags(tc: Toolchain, plat: Platform, opt: str) -> list[str]:
    isa = plat.isa
    if tc.kind == "clang":
        arch = ["--target=riscv32-unknown-elf", f"-march={isa['march']}", f"-mabi={isa['mabi']}", "-mno-relax",
                "-fuse-ld=lld"]
    else:
        # PULP GCC: the PULP extensions are emitted through .insn as well, so plain RV32IMC with
        # integer-register FP matches what the sources expect.
        arch = ["-march=rv32imcxgap9", f"-mabi={isa['mabi']}", "-mno-relax"]
    return arch + [f"-O{opt}"] + COMMON_CFLAGS


ELF_CACHE = ROOT / "build" / "elf"   # PULP_ODL_ELF_CACHE names another directory


def elf_cache_dir() -> Path:
    return Path(os.environ.get("PULP_ODL_ELF_CACHE") or ELF_CACHE)


def build(sources: list, output: Path, plat: Platform, opt: str = "2", defines: list | None = None,
          include_dirs: list | None = None, tc: Toolchain | None = None, libraries: list | None = None,
          cache: bool = False, fixed: list | None = None, pch: Path | None = None, cached_as: dict | None = None,
          share_objects: bool = False) -> Path:
    """Compile and link SOURCES with the runtime into OUTPUT (an ELF). LIBRARIES are sources that, like
    the runtime, are compiled once (per compiler, flags, headers and platform: the ELF cache's objects/) and
    linked in. FIXED are
    libraries placed first in the program's code with every function of theirs kept, so that they lie
    at the same addresses in every program that links them (the same instruction-cache sets). With `cache`,
    an ELF built before from the same sources, headers, libraries, flags, compiler and platform is
    copied instead of built again (build/elf/ or $PULP_ODL_ELF_CACHE, named by all of those): a sweep
    rerun after a change of the simulator alone simulates without compiling. PCH names a header every
    C source includes first: it is parsed once, into a precompiled header kept in the platform's runtime
    directory (the objects are the same; a source it does not suit is compiled without it). With `cache`, CACHED_AS
    (a dict) gets the cached ELF's path under "elf". With `share_objects`, each source's object is kept in
    the ELF cache's objects/ under the source's name and content, the flags and the headers, and a later
    build of the same source links it instead of compiling it again (the same bytes: the object names
    its source by its base name alone)."""
    with hosttime.phase("compile"):
        return _build(sources, output, plat, opt, defines, include_dirs, tc, libraries, cache, fixed, pch, cached_as,
                      share_objects)


def cached_elf(sources: list, plat: Platform, opt: str = "2", defines: list | None = None,
               include_dirs: list | None = None, tc: Toolchain | None = None, libraries: list | None = None,
               fixed: list | None = None, pch: Path | None = None) -> Path | None:
    """The ELF that build(..., cache=True) with these arguments would copy from the cache, or None when
    the cache does not hold it: found without compiling SOURCES (the libraries are compiled if they
    were not yet). `pch` changes no ELF: taken for build()'s signature."""
    srcs = [Path(s) for s in sources]
    _check_sources(srcs)
    cx = _context(plat, opt, defines, include_dirs, tc)
    cached = _cache_path(cx, srcs, _library_objects(cx, libraries, fixed)[1])
    return cached if cached.exists() else None


def _library_objects(cx: _Context, libraries: list | None, fixed: list | None) -> tuple[list[Path], list[Path]]:
    """(the fixed libraries' objects, every object a program links besides its sources')."""
    store = _store(cx, None)
    first = _cached_objects(cx, [Path(x) for x in fixed], store) if fixed else []
    objs = first + _cached_objects(cx, runtime.sources(), store)
    if libraries:
        objs += _cached_objects(cx, [Path(x) for x in libraries], store)
    return first, objs


def _cache_path(cx: _Context, srcs: list[Path], objs: list[Path]) -> Path:
    """Where the cache keeps the ELF of these sources linked with these objects: named by the flags, the
    compiler, the objects, the sources' content, the headers, the linker script and the ISA header."""
    h = hashlib.sha256(("\0".join(cx.common) + cx.tc.version).encode())
    for part in [*(o.name for o in objs), *(_content(p) for p in srcs), *(p.read_bytes() for p in cx.headers),
                 (cx.gen / "link.ld").read_bytes(), (cx.gen / "pulp_isa.h").read_bytes()]:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return elf_cache_dir() / f"{h.hexdigest()[:24]}.elf"


def _build(sources, output, plat, opt, defines, include_dirs, tc, libraries, cache, fixed, pch=None,
           cached_as=None, share_objects=False) -> Path:
    srcs = [Path(s) for s in sources]
    _check_sources(srcs)
    cx = _context(plat, opt, defines, include_dirs, tc)
    gen = cx.gen
    output = Path(output)
    paths.refuse_inputs(output, "-o", srcs)   # the linker would replace the source with the ELF
    with paths.user_path(output.parent, "output directory"):
        output.parent.mkdir(parents=True, exist_ok=True)
    first, objs = _library_objects(cx, libraries, fixed)
    cached = None
    if cache:
        cached = _cache_path(cx, srcs, objs)
        if cached_as is not None:
            cached_as["elf"] = cached
        if cached.exists():
            return copy_cached(cached, output)
    keep = [f"-Wl,--undefined={f}" for o in first for f in _functions(o)]
    link_flags = ["-static", f"-Wl,-T,{gen / 'link.ld'}", "-Wl,--gc-sections"]
    linker = _linker(cx.tc, tuple(cx.common)) if srcs else None
    if linker is None:
        _check(procs.run(cx.common + [str(o) for o in objs] + [str(s) for s in srcs] + keep + link_flags
                         + ["-o", str(output)]))
    else:
        with tempfile.TemporaryDirectory(prefix="pulp-odl-obj-") as tmp:
            compiled = _compile(cx, srcs, pch, Path(tmp), share_objects)
            _check(procs.run(linker.command([*objs, *compiled], keep + link_flags, output)))
    hosttime.count("elf_built")
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cached.parent, suffix=".elf.tmp")
        os.close(fd)
        shutil.copyfile(output, tmp)
        os.replace(tmp, cached)   # concurrent builds of the same program write the same bytes
    return output


def _check_sources(srcs: list) -> None:
    for s in srcs:   # the caller's own mistakes first: they need no compiler to be named
        if not s.exists():
            raise UserError(f"{s}: no such source file")
        if s.suffix not in (".c", ".S", ".s"):
            raise UserError(f"{s}: unsupported source type (give .c, .S or .s files)")


@dataclass(frozen=True)
class _Context:
    """What every compile of one build shares: the compiler, the platform's generated headers, the
    command line before the source, and the headers of the include directories (part of an object's name)."""
    tc: Toolchain
    gen: Path
    common: list
    incs: list
    headers: list


def _context(plat: Platform, opt: str, defines: list | None, include_dirs: list | None, tc: Toolchain | None) -> _Context:
    if opt not in ("0", "1", "2", "3", "s", "z", "fast"):
        raise UserError(f"-O{opt}: unknown optimisation level (use 0, 1, 2, 3, s or z)")
    tc = tc or find()
    gen = runtime.prepare(plat)
    defs = []
    for d in defines or []:
        if not d or d.startswith("=") or " " in d.split("=")[0]:
            raise UserError(f"-D {d!r}: expected NAME or NAME=VALUE")
        defs.append(f"-D{d}")
    incs = [f"-I{inc}" for inc in [gen, runtime.RUNTIME_DIR, runtime.INCLUDE_DIR] + [Path(i) for i in include_dirs or []]]
    # crt0.S takes its constants from the platform header
    common = [tc.cc] + flags(tc, plat, opt) + defs + incs + ["-include", str(gen / "pulp_platform.h")]
    headers = sorted(Path(p) for d in include_dirs or [] for p in Path(d).glob("*.h") if p.name != "pulp_isa.h")
    return _Context(tc, gen, common, incs, headers)


def _compile(cx: _Context, srcs: list, pch, tmp: Path | None, share: bool, store: tuple | None = None) -> list[Path]:
    """Each source's object, compiled side by side (a whole training step is one source per stage; the
    objects, and the link order that lays them out, are those of one at a time). With `share`, each object
    is kept in the ELF cache's objects/ under the source's name and content, the flags and the headers,
    and found there by a later compile of the same source (the object names its source by its base name
    alone); `tmp` (where the others go) is then not used, and `store` may give _store's answer."""
    pre = _pch(cx, pch)
    if share and store is None:
        store = _store(cx, pre)
    kept = [_kept(store, s) if share else None for s in srcs]

    def compile_one(i):
        s = srcs[i]
        if kept[i] is None:
            obj = tmp / f"{i}-{s.stem}.o"
        else:   # compiled beside its place in the store (the object does not name its output) and moved in
            kept[i].parent.mkdir(parents=True, exist_ok=True)
            fd, part = tempfile.mkstemp(dir=kept[i].parent, suffix=".o.tmp")
            os.close(fd)
            obj = Path(part)
        try:
            cmd = cx.common + ["-c", str(s), "-o", str(obj)]
            proc = None
            if pre and s.suffix == ".c":
                proc = procs.run(cmd[:1] + PCH_USE + ["-include-pch", str(pre)] + cmd[1:])
            if proc is None or proc.returncode != 0:   # without it: the source's own diagnostics
                _check(procs.run(cmd))
        except BaseException:
            if kept[i] is not None:
                obj.unlink(missing_ok=True)
            raise
        if kept[i] is not None:
            os.replace(obj, kept[i])   # concurrent builds keep the same bytes
            return kept[i]
        return obj
    out = list(kept)
    todo = [i for i, k in enumerate(kept) if k is None or not k.exists()]
    if len(todo) == 1:   # (a pool costs more than finding a library's objects kept: a build asks for them thrice)
        out[todo[0]] = compile_one(todo[0])
    elif todo:
        with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
            for i, obj in zip(todo, pool.map(compile_one, todo)):
                out[i] = obj
    return out


def _store(cx: _Context, pre: Path | None) -> tuple[Path, str]:
    """The objects' store (the ELF cache's objects/), and the part of their names that the flags, the
    compiler, the precompiled header and every header a source can include make (the runtime's, the
    kernels', the include directories' and the generated ones)."""
    h = hashlib.sha256(("\0".join(cx.common) + cx.tc.version + str(pre)).encode())
    reach = sorted({*runtime.RUNTIME_DIR.glob("*.h"), *runtime.INCLUDE_DIR.glob("*.h"), *cx.headers})
    for part in [*(p.read_bytes() for p in reach if p.name != "pulp_isa.h"), (cx.gen / "pulp_isa.h").read_bytes(),
                 (cx.gen / "pulp_platform.h").read_bytes()]:
        h.update(part + b"\0")
    return elf_cache_dir() / "objects", h.hexdigest()


def _kept(store: tuple[Path, str], src: Path) -> Path:
    key = hashlib.sha256((store[1] + src.name).encode() + b"\0" + src.read_bytes()).hexdigest()[:32]
    return store[0] / f"{key}.o"


def shared_object(source: Path, plat: Platform, opt: str = "2", defines: list | None = None,
                  include_dirs: list | None = None, pch: Path | None = None, tc: Toolchain | None = None) -> Path:
    """Where objects() and build(..., share_objects=True) keep the object of SOURCE (there or not yet)."""
    cx = _context(plat, opt, defines, include_dirs, tc)
    return _kept(_store(cx, _pch(cx, pch)), Path(source))


def _pch(cx: _Context, pch) -> Path | None:
    """The precompiled header of `pch` for this build (clang only), or None."""
    return _precompiled(cx.tc, cx.common, cx.gen, Path(pch), cx.incs) if pch and cx.tc.kind == "clang" else None


def objects(sources: list, plat: Platform, opt: str = "2", defines: list | None = None, include_dirs: list | None = None,
            pch: Path | None = None, tc: Toolchain | None = None) -> list[Path]:
    """The objects `build(..., share_objects=True)` links for SOURCES, compiled where the ELF cache's
    objects/ lacks them and kept there: a later build of the same sources links them without compiling."""
    srcs = [Path(s) for s in sources]
    _check_sources(srcs)
    cx = _context(plat, opt, defines, include_dirs, tc)
    with hosttime.phase("compile"):
        return _compile(cx, srcs, pch, None, True)


def copy_cached(cached: Path, output: Path) -> Path:
    """An ELF of the cache copied to OUTPUT instead of built (counted as such in the host-time split)."""
    shutil.copyfile(cached, output)
    hosttime.count("elf_cached")
    return output


# Headers are checked by content, not only by time, so that a header touched without a change (a
# checkout) does not make clang refuse the precompiled header.
PCH_USE = ["-fpch-validate-input-files-content"]


def _precompiled(tc: Toolchain, common: list, gen: Path, header: Path, incs: list) -> Path | None:
    """`header` precompiled with the program's flags, named by them and by every header it can reach
    (the include directories' and the generated ones); None when it does not compile."""
    h = hashlib.sha256(("\0".join(common) + tc.version + str(header)).encode())
    for d in sorted({Path(i[2:]) for i in incs}):
        for p in sorted(d.glob("*.h")):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    out = gen / "obj" / f"{header.stem}-{h.hexdigest()[:16]}.pch"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".pch.tmp")
        os.close(fd)
        proc = procs.run(common[:1] + PCH_USE + common[1:] + ["-x", "c-header", str(header), "-o", tmp])
        if proc.returncode != 0:
            Path(tmp).unlink(missing_ok=True)   # clang removes its output when it fails
            return None
        os.replace(tmp, out)   # concurrent builds write the same header
    return out


def _check(proc) -> None:
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "unknown compiler error")
        raise BuildError(proc.stderr, first)


@dataclass(frozen=True)
class Linker:
    """The ld.lld command clang's driver runs to link a program: its own arguments before the inputs
    and after the pass-through options. Calling ld.lld with them directly links the same ELF, byte for
    byte, without starting the driver a second time for every program of a sweep."""
    head: tuple
    tail: tuple

    def command(self, inputs: list, flags: list, output: Path) -> list:
        passed = []
        for f in flags:   # the driver's spelling of what it passes on: -static is in its tail
            if f.startswith("-Wl,"):
                passed += f[4:].split(",")
            elif f != "-static":
                raise ValueError(f"{f}: not a linker flag the direct link knows")
        return [*self.head, *(str(i) for i in inputs), *passed, *self.tail, "-o", str(output)]


_MARK_IN, _MARK_FLAG, _MARK_OUT = "pulp-odl-input.o", "--pulp-odl-flags", "pulp-odl-output.elf"


@functools.lru_cache(maxsize=None)
def _linker(tc: Toolchain, common: tuple) -> Linker | None:
    """What the driver would run to link with these flags, asked once (clang -###); None when the
    answer has not the expected shape (another compiler, another driver): then the driver links."""
    if tc.kind != "clang":
        return None
    with tempfile.TemporaryDirectory(prefix="pulp-odl-link-") as tmp:
        marker = str(Path(tmp) / _MARK_IN)   # the driver wants its inputs to exist
        Path(marker).touch()
        proc = procs.run([*common, "-###", marker, f"-Wl,{_MARK_FLAG}", "-static", "-o", _MARK_OUT])
    jobs = [shlex.split(ln) for ln in proc.stderr.splitlines() if ln.startswith(" \"")]
    if proc.returncode != 0 or len(jobs) != 1:
        return None
    argv = jobs[0]
    if argv.count(marker) != 1 or argv.count(_MARK_FLAG) != 1 or argv[-2:] != ["-o", _MARK_OUT]:
        return None
    i, f = argv.index(marker), argv.index(_MARK_FLAG)
    if f != i + 1 or "lld" not in Path(argv[0]).name:
        return None
    return Linker(tuple(argv[:i]), tuple(argv[f + 1:-2]))


@functools.lru_cache(maxsize=None)
def _functions(obj: Path) -> tuple[str, ...]:
    """The global functions an object defines (kept by naming them undefined at the link)."""
    with open(obj, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return tuple(sorted(s.name for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"
                            and s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"))


_INCBIN = re.compile(rb'\.incbin\s+"([^"]+)"')


def _content(src: Path) -> bytes:
    """What a source builds from, wherever it lies: its text without its own directory's path, and the
    bytes of the files it includes with .incbin (a kernel's test data, written beside it)."""
    text = src.read_bytes()
    out = [text.replace(str(src.parent).encode(), b"<dir>")]
    for m in _INCBIN.finditer(text):
        out.append(Path(m.group(1).decode()).read_bytes())
    return b"\0".join(out)


def _cached_objects(cx: _Context, sources: list, store: tuple) -> list[Path]:
    """The objects of libraries (the runtime, the fixed libraries, a shared main.c): compiled once, without a
    precompiled header, and kept in the shared store, so that a build compiles only its own sources."""
    return _compile(cx, sources, None, None, True, store)


class BuildError(UserError):
    """A compiler or linker error; the full diagnostics are kept for -v."""

    def __init__(self, diagnostics: str, first: str):
        super().__init__(f"build failed: {first.strip()}")
        self.diagnostics = diagnostics


def source_hash(paths: list, extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="pulp-odl-"))
