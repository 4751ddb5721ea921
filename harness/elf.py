"""Reading ELF programs (pyelftools): loadable segments, entry point, symbols."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.constants import P_FLAGS

from harness.errors import UserError


@dataclass
class Segment:
    addr: int
    data: bytes
    memsz: int
    executable: bool


@dataclass
class Program:
    path: Path
    entry: int
    segments: list
    symbols: dict

    @property
    def text_range(self) -> tuple[int, int]:
        ex = [s for s in self.segments if s.executable]
        if not ex:
            return (0, 0)
        return (min(s.addr for s in ex), max(s.addr + s.memsz for s in ex))


def load(path) -> Program:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            if elf["e_machine"] != "EM_RISCV" or elf.elfclass != 32:
                raise UserError(f"{path}: not a 32-bit RISC-V ELF (build it with 'pulp-odl build')")
            segs = []
            for seg in elf.iter_segments():
                if seg["p_type"] != "PT_LOAD" or seg["p_memsz"] == 0:
                    continue
                data = seg.data()
                # .bss-like tails are zero-filled by the loader, as GVSoC's loader does
                data = data + bytes(seg["p_memsz"] - len(data))
                segs.append(Segment(addr=seg["p_paddr"], data=data, memsz=seg["p_memsz"],
                                    executable=bool(seg["p_flags"] & P_FLAGS.PF_X)))
            syms = {}
            tab = elf.get_section_by_name(".symtab")
            if tab is not None:
                for s in tab.iter_symbols():
                    if s.name and s["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                        syms[s.name] = s["st_value"]
            return Program(path=path, entry=elf["e_entry"], segments=segs, symbols=syms)
    except (ELFError, OSError) as e:
        raise UserError(f"{path}: not a readable ELF file ({e})") from None
