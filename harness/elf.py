"""Reading ELF programs (pyelftools): loadable segments, entry point, symbols, the platform built for.

A program is checked when read, before anything is allocated for it: a linked 32-bit RISC-V
executable (not a relocatable object), at least one loadable segment, every segment within the
file and, given the platform, inside its L2 or L1, and the entry point inside an executable
segment. Programs built by `pulp-odl build` carry the name of their platform in the non-loaded
section PLATFORM_SECTION (written by the runtime's crt0.S), so running one on another platform is
refused instead of silently measuring the wrong memory map.
"""
from __future__ import annotations

import functools
import hashlib
import io
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from elftools.elf.enums import ENUM_ST_INFO_TYPE
from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile

from harness import paths
from harness.errors import UserError

PLATFORM_SECTION = ".pulp_odl.platform"
REBUILD = "build it with 'pulp-odl build'"


@dataclass
class Segment:
    addr: int
    data: bytes          # the file's bytes; the rest of memsz is zero (a fresh memory already is)
    memsz: int
    executable: bool


@dataclass
class Program:
    path: Path
    entry: int
    segments: list
    symbols: dict
    platform: str | None = None     # the platform it was built for, when pulp-odl built it
    functions: dict = field(default_factory=dict)   # name -> entry address of every function symbol

    @property
    def text_range(self) -> tuple[int, int]:
        ex = [s for s in self.segments if s.executable]
        if not ex:
            return (0, 0)
        return (min(s.addr for s in ex), max(s.addr + s.memsz for s in ex))


def _memories(platform) -> list[tuple[str, int, int]]:
    return [(m.name, m.base, m.size) for m in platform.memories.values() if m.base is not None]


def _check_segment(path: Path, i: int, seg, file_size: int, platform) -> None:
    addr, filesz, memsz, off = seg["p_paddr"], seg["p_filesz"], seg["p_memsz"], seg["p_offset"]
    where = f"{path}: segment {i} (0x{addr:08x}, {memsz} bytes)"
    if filesz > memsz:
        raise UserError(f"{where}: holds more file bytes ({filesz}) than memory bytes; the file is corrupt, {REBUILD}")
    if off + filesz > file_size:
        raise UserError(f"{where}: runs past the end of the file ({file_size} bytes); the file is truncated, {REBUILD}")
    if addr + memsz > 1 << 32:
        raise UserError(f"{where}: runs past the 32-bit address space; the file is corrupt, {REBUILD}")
    if platform is not None and not any(b <= addr and addr + memsz <= b + s for _, b, s in _memories(platform)):
        mems = ", ".join(f"{n} 0x{b:08x}-0x{b + s:08x}" for n, b, s in _memories(platform))
        raise UserError(f"{where}: lies outside the memories of platform '{platform.name}' ({mems}); "
                        f"was it built for another platform? Rebuild it with 'pulp-odl build --platform {platform.name}'")


_SHDR = struct.Struct("<IIIIIIIIII")   # Elf32_Shdr: name, type, flags, addr, offset, size, link, info, align, entsize
_SHT_NOBITS = 8


class _Section(NamedTuple):
    name: str
    offset: int
    size: int      # bytes in the file (0 for .bss-like sections)
    link: int
    entsize: int


def _sections(elf: ELFFile, raw: bytes) -> list[_Section]:
    """Every section, read straight from the section header table: pyelftools' lookup by name parses every
    header and its name with its struct library, the largest part of reading a program, and a sweep reads
    thousands."""
    off, n, size, names = elf["e_shoff"], elf["e_shnum"], elf["e_shentsize"], elf["e_shstrndx"]
    if not off or not n:
        return []
    if size < _SHDR.size or off + n * size > len(raw) or names >= n:
        raise ValueError("section header table outside the file")
    heads = [_SHDR.unpack_from(raw, off + i * size) for i in range(n)]
    strtab = raw[heads[names][4]:heads[names][4] + heads[names][5]]
    out = []
    for h in heads:
        end = strtab.find(b"\0", h[0])
        name = strtab[h[0]:end if end >= 0 else len(strtab)].decode("utf-8", errors="replace")
        out.append(_Section(name, h[4], h[5] if h[1] != _SHT_NOBITS else 0, h[6], h[9]))
    return out


def _section(sections: list[_Section], name: str) -> _Section | None:
    return next((s for s in sections if s.name == name), None)   # the first, as pyelftools' lookup by name


def _section_data(raw: bytes, sec: _Section) -> bytes:
    if sec.offset + sec.size > len(raw):
        raise ValueError(f"section {sec.name} runs past the end of the file")
    return raw[sec.offset:sec.offset + sec.size]


def _platform_note(sections: list[_Section], raw: bytes) -> str | None:
    sec = _section(sections, PLATFORM_SECTION)
    if sec is None:
        return None
    return _section_data(raw, sec).split(b"\0", 1)[0].decode("utf-8", errors="replace") or None


_SYM = struct.Struct("<IIIBBH")   # Elf32_Sym: st_name, st_value, st_size, st_info, st_other, st_shndx
_STT_FUNC = ENUM_ST_INFO_TYPE["STT_FUNC"]   # the kinds kept: STT_NOTYPE, STT_OBJECT, STT_FUNC (the lowest three)


def _symbols(sections: list[_Section], raw: bytes) -> tuple[dict, dict]:
    """Name -> value of the symbols that name code or data, and name -> entry of the functions, read
    straight from .symtab (a sweep loads thousands of programs; pyelftools parses a symbol at a time)."""
    syms, funcs = {}, {}
    tab = _section(sections, ".symtab")
    if tab is None:
        return syms, funcs
    if tab.link >= len(sections):
        raise ValueError(".symtab links to no section")
    strtab = _section_data(raw, sections[tab.link])
    data = _section_data(raw, tab)
    size = tab.entsize or _SYM.size
    for off in range(0, len(data) - _SYM.size + 1, size):
        name_off, value, sym_size, info, _, _ = _SYM.unpack_from(data, off)
        if not name_off:
            continue
        kind = info & 0xF
        if kind > _STT_FUNC:
            continue
        name = strtab[name_off:strtab.index(b"\0", name_off)].decode("utf-8", errors="replace")
        if not name:
            continue
        syms[name] = value
        if kind == _STT_FUNC and sym_size > 0:
            funcs[name] = value & ~1
    return syms, funcs


class _Reader:
    """One file's ELF, parsed from its bytes, and what load() took from it so far, in load()'s order
    (so a corrupt part is reported by the check that meets it first). A sweep runs thousands of
    programs and reads each twice (its runner's symbols, then the backend's segments): the second
    read finds the same bytes and parses nothing again."""

    def __init__(self, raw: bytes):
        self.raw = raw
        self.size = len(raw)
        self.elf = ELFFile(io.BytesIO(raw))

    @functools.cached_property
    def sections(self) -> list:
        return _sections(self.elf, self.raw)

    @functools.cached_property
    def note(self) -> str | None:
        return _platform_note(self.sections, self.raw)

    @functools.cached_property
    def loads(self) -> list:
        return [seg for seg in self.elf.iter_segments() if seg["p_type"] == "PT_LOAD" and seg["p_memsz"] > 0]

    @functools.cached_property
    def data(self) -> list:
        return [seg.data() for seg in self.loads]

    @functools.cached_property
    def symbols(self) -> tuple:
        return _symbols(self.sections, self.raw)


_readers: dict = {}     # digest of a file's bytes -> its _Reader, for the latest files read
_READERS_KEEP = 16
_readers_lock = threading.Lock()   # a reader's file position is shared: one load at a time


def _reader(path: Path) -> _Reader:
    raw = path.read_bytes()
    # keyed by the bytes, not by the file's times: a rewrite within one tick of the file clock keeps those
    key = hashlib.blake2b(raw, digest_size=16).digest()
    r = _readers.get(key)
    if r is None:
        r = _Reader(raw)
        if len(_readers) >= _READERS_KEEP:
            _readers.pop(next(iter(_readers)))
        _readers[key] = r
    return r


def load(path, platform=None) -> Program:
    """Read and check the program at `path`; with `platform`, also that it fits and was built for it."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a directory; give an ELF file")
    if not path.exists():
        raise UserError(f"{path}: no such file")
    with paths.user_path(path, "file", "check the file's permissions"):
        path.open("rb").close()
    with _readers_lock:
        try:
            r = _reader(path)
            file_size = r.size
            elf = r.elf
            if elf["e_machine"] != "EM_RISCV" or elf.elfclass != 32:
                raise UserError(f"{path}: not a 32-bit RISC-V ELF ({REBUILD})")
            etype = elf["e_type"]
            if etype == "ET_REL":
                raise UserError(f"{path}: a relocatable object file, not a linked program; link it with 'pulp-odl build'")
            if etype != "ET_EXEC":
                raise UserError(f"{path}: not an executable ELF (type {etype}); {REBUILD}")
            built_for = r.note
            if platform is not None and built_for is not None and built_for != platform.name:
                raise UserError(f"{path}: built for platform '{built_for}', not '{platform.name}'; run it with "
                                f"--platform {built_for} or rebuild it with 'pulp-odl build --platform {platform.name}'")
            loads = r.loads
            if not loads:
                raise UserError(f"{path}: has no loadable segment; {REBUILD}")
            for i, seg in enumerate(loads):
                _check_segment(path, i, seg, file_size, platform)
            segs = [Segment(addr=seg["p_paddr"], data=data, memsz=seg["p_memsz"],
                            executable=bool(seg["p_flags"] & P_FLAGS.PF_X)) for seg, data in zip(loads, r.data)]
            entry = elf["e_entry"]
            if not any(s.executable and s.addr <= entry < s.addr + s.memsz for s in segs):
                raise UserError(f"{path}: entry point 0x{entry:08x} is not in an executable segment; {REBUILD}")
            syms, funcs = r.symbols
        except UserError:
            raise
        except Exception as e:  # noqa: BLE001 - pyelftools reports a corrupt header or table with many types
            raise UserError(f"{path}: not a readable ELF file ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'corrupt'})"
                            ) from None
    return Program(path=path, entry=entry, segments=segs, symbols=dict(syms), platform=built_for,
                   functions=dict(funcs))
