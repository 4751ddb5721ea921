"""A stand-in for a whole-step program's stages, laid out as the linker lays out the real ones.

Each stage of a whole training step is one source compiled to one object, and a sweep compiles the same
stage on its own anyway (its stage program: the same code with its tensors at other addresses). The
stand-in gives each stage function's name to sections of the sizes and alignments of that object's, and
keeps what the object calls, so that linking it with the step's main.c and libraries lays out L2 as the
whole program does: what it leaves for the tensors is known without compiling the stages again.

Each stage's code starts on an instruction-cache boundary (program.code_alignment), so only the boundary
after its end counts. The same stage compiled at its whole-step addresses was 30 bytes smaller to 36 bytes
larger than in its own program (its constants take other instruction forms; 378 stages of seven table-2 and
figure-4 points). A stage whose own code ends less than NEAR_BELOW bytes past a boundary or NEAR_ABOVE bytes
before one, and the last one, whose end counts to the byte, are taken from their whole-step sources
instead: the window before a boundary keeps the stand-in from saying more L2 is left than there is, the one
past it from saying a kilobyte less.
"""
from __future__ import annotations

import functools
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

NEAR_BELOW, NEAR_ABOVE = 32, 64


@functools.lru_cache(maxsize=None)
def _layout(obj: Path, fn: str) -> tuple:
    """(the index of the section holding `fn`, `fn`'s offset in it, the symbols the object uses, and each
    allocated section's index, name, flags, type, size and alignment). Objects are named by their content."""
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab")
        entry = next((s for s in sym.iter_symbols() if s.name == fn and s["st_shndx"] != "SHN_UNDEF"), None)
        if entry is None:
            raise ValueError(f"{obj}: defines no {fn}")
        used = tuple(sorted({s.name for s in sym.iter_symbols() if s["st_shndx"] == "SHN_UNDEF" and s.name}))
        secs = tuple((i, sec.name, sec["sh_flags"], sec["sh_type"], sec["sh_size"], sec["sh_addralign"])
                     for i, sec in enumerate(elf.iter_sections()) if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_size"])
        return entry["st_shndx"], entry["st_value"], used, secs


def code_bytes(obj: Path, fn: str) -> int:
    """The bytes of the section that holds function `fn` in object `obj` (a stage's code)."""
    at, _, _, secs = _layout(obj, fn)
    return next(size for i, _, _, _, size, _ in secs if i == at)


def near_boundary(nbytes: int, align: int) -> bool:
    """Whether code of `nbytes` from a boundary of `align` bytes ends near the next one or just past one."""
    return nbytes % align < NEAR_BELOW or nbytes % align > align - NEAR_ABOVE


def assembly(stages: list[tuple[str, Path, str]]) -> str:
    """Assembly defining, for each (function name, object, the function's name in that object), sections
    of the object's sizes and alignments under names of that function's, the function at its place, and a
    reference from it to each symbol the object uses and to each of its other sections (the linker drops
    what nothing refers to)."""
    out = []
    for fn, obj, was in stages:
        at, offset, used, secs = _layout(obj, was)
        refs = list(used) + [f".Lodl_{fn}_{i}" for i, *_ in secs if i != at]
        for i, name, flags, kind, size, align in secs:
            attrs = "a" + ("x" if flags & SH_FLAGS.SHF_EXECINSTR else "") + ("w" if flags & SH_FLAGS.SHF_WRITE else "")
            out.append(f'.section {_renamed(name, was, fn)},"{attrs}",{"@nobits" if kind == "SHT_NOBITS" else "@progbits"}')
            out.append(f".balign {max(1, align)}")
            if i == at:
                out += [f".skip {offset}", f".globl {fn}", f"{fn}:"]
                out += [f".reloc ., R_RISCV_NONE, {r}" for r in refs]
                size -= offset
            else:
                out.append(f".Lodl_{fn}_{i}:")
            out.append(f".skip {size}")
    return "\n".join(out) + "\n"


def _renamed(section: str, was: str, fn: str) -> str:
    """The section's name in the stand-in: the stage function's own in place of the object's, or the
    name with the function's added (so that stages' sections of one name stay apart, as in separate
    objects, and still match the linker script's patterns)."""
    parts = section.split(".")
    if was in parts:
        return ".".join(fn if p == was else p for p in parts)
    return f"{section}.{fn}"
