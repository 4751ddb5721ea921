"""Generate pulp_isa.h (harness/runtime.py writes it per platform under build/runtime/): the PULP
instructions as `.insn` for clang.

Clang knows nothing of the PULP extensions, so every PULP instruction is emitted with the
assembler's `.insn` directive, in the R, I, S or B layout that covers its operand fields. For each
instruction the header gives
  PULP_<ID>(operands...)   an assembler string for use inside a kernel's asm block
                            (register operands are tokens such as a0 or %[acc]; immediates are numbers)
  pulp_<id>(...)           a C inline function, for register-to-register value instructions
MATCH_/MASK_ constants for every instruction of the table, the PULP CSR numbers (PULP_CSR_<NAME>,
without a suffix so that asm strings can use them through PULP_STR) and the performance counter
indices (PULP_PERF_<NAME>, PULP_PERF_COUNTERS(X) listing every index).
"""
from __future__ import annotations

from harness.isa.model import Insn, Isa

PULP_EXTS = ("xpulp", "xfvec")
_POS = {"rd": (11, 7), "rs1": (19, 15), "rs2": (24, 20)}


def _position(f):
    """Which standard 5-bit register position a field sits in, or None."""
    bits = f.insn_bits
    for name, (hi, lo) in _POS.items():
        if bits <= set(range(lo, hi + 1)):
            return name
    return None


def _layout(i: Insn):
    names = {f.name for f in i.ops}
    if "imm_s" in names:
        return "s"
    if "imm_b" in names:
        return "b"
    if any(f.insn_bits == set(range(20, 32)) for f in i.ops):
        return "i"
    return "r"


def _is_reg(f) -> bool:
    return f.kind in ("xreg", "freg", "creg", "creg_f")


def _operand(f, name: str) -> str:
    """Assembler text for one operand: registers pass through; immediates in register fields become x<N>."""
    return f'" #{name} "' if _is_reg(f) or f.insn_bits == set(range(20, 32)) else f'"x" #{name} "'


def macro(i: Insn) -> str:
    lay = _layout(i)
    opc = i.match & 0x7F
    f3 = (i.match >> 12) & 7
    f7 = (i.match >> 25) & 0x7F
    params = [f.name for f in i.ops]
    byslot = {}
    for f in i.ops:
        pos = _position(f)
        if pos:
            byslot[pos] = f
    imm12 = next((f for f in i.ops if f.insn_bits == set(range(20, 32))), None)

    def reg(pos):
        f = byslot.get(pos)
        if f is None:
            return "x0"
        return _operand(f, f.name).strip('"').strip()

    def at(pos):
        f = byslot.get(pos)
        if f is None:
            # no operand here: the encoding fixes these bits (e.g. rs2 = 00001 selects vfclass.h)
            return f'"x{(i.match >> _POS[pos][1]) & 31}"'
        if _is_reg(f):
            return f"#{f.name}"
        return f'"x" #{f.name}'

    if lay == "r":
        body = f'".insn r 0x{opc:02x}, {f3}, 0x{f7:02x}, " {at("rd")} ", " {at("rs1")} ", " {at("rs2")}'
    elif lay == "i":
        body = f'".insn i 0x{opc:02x}, {f3}, " {at("rd")} ", " {at("rs1")} ", " #{imm12.name}'
    elif lay == "s":
        body = f'".insn s 0x{opc:02x}, {f3}, " {at("rs2")} ", " #imm_s "(" {at("rs1")} ")"'
        # register-increment stores keep a register in rd's position: not expressible as S
        if "rs3_s" in params:
            body = f'".insn r 0x{opc:02x}, {f3}, 0x{f7:02x}, " {at("rd")} ", " {at("rs1")} ", " {at("rs2")}'
    else:
        body = f'".insn b 0x{opc:02x}, {f3}, " {at("rs1")} ", " {at("rs2")} ", " #imm_b'
    del reg
    return f"#define PULP_{i.id.upper()}({', '.join(params)}) {body}"


def _value_function(i: Insn, isa: Isa) -> str | None:
    """A C function for pure register-to-register instructions (a timing class marked `value`, and no
    immediates)."""
    if not isa.timing.classes[i.timing].value:
        return None
    if any(not _is_reg(f) for f in i.ops):
        return None
    dst = next((f for f in i.ops if f.role in ("dst", "srcdst")), None)
    if dst is None:
        return None
    srcs = [f for f in i.ops if f.role == "src"]
    args = []
    if dst.role == "srcdst":
        args.append("uint32_t acc")
    args += [f"uint32_t {f.name}" for f in srcs]
    ops = ", ".join(f"[{f.name}] \"r\"({f.name})" for f in srcs)
    if dst.role == "srcdst":
        init = "uint32_t r = acc;"
        outs = '[r] "+r"(r)'
    else:
        init = "uint32_t r;"
        outs = '[r] "=r"(r)'
    asm_args = ", ".join(("%[r]" if f is dst else f"%[{f.name}]") for f in i.ops)
    return (f"static inline uint32_t pulp_{i.id}({', '.join(args)}) {{\n"
            f"  {init}\n  __asm__ (PULP_{i.id.upper()}({asm_args}) : {outs} : {ops});\n  return r;\n}}")


def _csrs_and_counters(isa: Isa) -> list[str]:
    out = ["/* Stringify a macro's value, for asm strings: \"csrw \" PULP_STR(PULP_CSR_PCER) \", %0\" */",
           "#define PULP_STR_(x) #x", "#define PULP_STR(x) PULP_STR_(x)", "",
           "/* PULP CSR numbers (isa/csrs.toml [pulp]) */"]
    for name, num in isa.pulp_csrs.items():
        out.append(f"#define PULP_CSR_{name.upper()} 0x{num:03x}")
    out += ["", "/* Performance counter indices (isa/counters.toml): PCER bit n, CSR PULP_CSR_PCCR0 + n */"]
    c = isa.counters
    for prefix, table in (("", c.core), ("CLUSTER_", c.cluster), ("FC_", c.fc)):
        for name, idx in table.items():
            out.append(f"#define PULP_PERF_{prefix}{name.upper()} {idx}")
    out.append("#define PULP_PERF_COUNTERS(X) " + " ".join(f"X({n})" for n in c.indices()))
    return out + [""]


def gen_header(isa: Isa) -> str:
    out = [f"/* Generated from isa/*.toml by harness/isa/gen_cheader.py (table sha256 {isa.sha256}). Do not edit. */",
           "#ifndef PULP_ISA_H", "#define PULP_ISA_H", "#include <stdint.h>", ""]
    out += _csrs_and_counters(isa)
    out.append("/* MATCH_/MASK_: fixed bits of every instruction of the table */")
    for i in isa.insns:
        out.append(f"#define MATCH_{i.id.upper()} 0x{i.match:08x}u")
        out.append(f"#define MASK_{i.id.upper()} 0x{i.mask:08x}u")
    out.append("")
    out.append("/* PULP instructions as assembler strings (operands: register tokens or immediate numbers) */")
    for i in isa.insns:
        if i.ext in PULP_EXTS:
            out.append(f"/* {i.name} {i.asm} */")
            out.append(macro(i))
    out.append("")
    out.append("/* PULP register-to-register instructions as C functions */")
    for i in isa.insns:
        if i.ext in PULP_EXTS:
            fn = _value_function(i, isa)
            if fn:
                out.append(fn)
    out.append("\n#endif /* PULP_ISA_H */")
    return "\n".join(out) + "\n"
