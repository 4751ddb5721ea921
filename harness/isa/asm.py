"""PULP instructions as assembler text for generated kernels, straight from the ISA table.

`line("vfdotpex_s_h", rd_acc="s2", rs1="a0", rs2="a4")` gives the `.insn` directive that clang
assembles into that instruction (the same layouts as the PULP_* macros of pulp_isa.h).
Register operands are register names; immediates are integers."""
from __future__ import annotations

from functools import lru_cache

from harness.isa import gen_cheader, model


@lru_cache(maxsize=1)
def _isa():
    return model.load()


def imm_range(field: str = "imm_i") -> tuple[int, int]:
    """The values an immediate field holds: by default the 12-bit offset of loads, stores and addi."""
    f = _isa().fields[field]
    return (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.signed else (0, (1 << f.width) - 1)


def line(ident: str, **operands) -> str:
    names, pieces = _template(ident)
    if set(operands) != set(names):
        raise ValueError(f"{ident}: operands are {list(names)}, got {sorted(operands)}")
    return "".join(p if literal else str(operands[p]) for literal, p in pieces)


@lru_cache(maxsize=None)
def _template(ident: str) -> tuple:
    """The operand names of an instruction and its pulp_isa.h macro body as (literal?, text) pieces: the
    "literal" strings, and the #param substitutions by name (a generated kernel asks for thousands of lines)."""
    insn = _isa().by_id(ident)
    text = gen_cheader.macro(insn).split(" ", 2)[2]  # the macro body: C string pieces
    pieces = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            j = text.index('"', i + 1)
            pieces.append((True, text[i + 1:j]))
            i = j + 1
        elif text[i] == "#":
            j = i + 1
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            pieces.append((False, text[i + 1:j]))
            i = j
        else:
            i += 1
    return tuple(f.name for f in insn.ops), tuple(pieces)
