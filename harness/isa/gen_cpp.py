"""Generate the simulator's decoder, executor cases and disassembler from the ISA table.

Outputs (strings; written by harness.isa.gen into the build directory, never committed):
  isa_ops.hpp     - op enum, per-op info, decode function
  isa_exec.inc    - one `case` per op: scoreboard stalls on its sources, then its semantics
  isa_disasm.inc  - one `case` per op building the llvm-objdump-style text
"""
from __future__ import annotations

from harness.isa.model import Insn, Isa

HEADER = "// Generated from isa/*.toml by harness/isa/gen_cpp.py (table sha256 {sha}). Do not edit.\n"


def _c_ident(i: Insn) -> str:
    return "OP_" + i.id


def _extract_expr(f) -> str:
    parts = []
    for hi, lo, vlo in f.pieces:
        width = hi - lo + 1
        parts.append(f"(((w >> {lo}) & 0x{(1 << width) - 1:x}u) << {vlo})")
    expr = " | ".join(parts)
    if f.signed:
        sh = 32 - f.width
        expr = f"(int32_t)((uint32_t)({expr}) << {sh}) >> {sh}"
    elif f.kind in ("creg", "creg_f"):
        expr = f"({expr}) + 8"
    return expr


def gen_ops_hpp(isa: Isa) -> str:
    out = [HEADER.format(sha=isa.sha256), "#pragma once", "#include <cstdint>", "#include \"insn.hpp\"", "",
           "namespace pulpsim {", ""]
    out += _timing(isa) + _counters(isa) + _csrs(isa)
    switches = list(dict.fromkeys(isa.switches().values()))
    out.append("// Platform [isa] switches that enable an extension; OpInfo::ext_switch is 1 + the index here (0: always on).")
    out.append(f"static const int ISA_SWITCHES = {len(switches)};")
    out.append("static const char* const isa_switch_keys[] = {" + ", ".join(f'"isa.{s}"' for s in switches)
               + (", " if switches else "") + "nullptr};\n")
    out.append("enum Op : uint16_t {\n  OP_ILLEGAL = 0,")
    for i in isa.insns:
        out.append(f"  {_c_ident(i)},")
    out.append("  OP_COUNT,\n  OP_UNDECODED = 0xffff\n};\n")
    out.append("struct OpInfo { const char* name; const char* ext; uint8_t size; uint8_t timing; uint8_t ext_switch; };")
    first = next(iter(isa.timing.classes)).upper()
    out.append(f"static const OpInfo op_info[OP_COUNT] = {{\n  {{\"<illegal>\", \"\", 4, TC_{first}, 0}},")
    for i in isa.insns:
        sw = switches.index(i.enabled_by) + 1 if i.enabled_by else 0
        out.append(f"  {{\"{i.name}\", \"{i.ext}\", {i.size}, TC_{i.timing.upper()}, {sw}}},")
    out.append("};\n")
    out.append(f"static const char* const isa_table_sha256 = \"{isa.sha256}\";\n")
    out.append("static inline const char* csr_table_name(uint32_t csr) {\n  switch (csr) {")
    for num, name in sorted(isa.csrs.items()):
        out.append(f"    case 0x{num:03x}: return \"{name}\";")
    out.append("    default: return nullptr;\n  }\n}\n")
    # decoder
    out.append("// Decode one instruction word. Within an opcode bucket entries are tried with the most fixed bits first.")
    out.append("static inline void isa_decode(uint32_t w, Insn& d, bool fp_separate) {")
    out.append("  (void)fp_separate;")
    out.append("  d = Insn{}; d.raw = w;")
    for size in (4, 2):
        group = [i for i in isa.ordered() if i.size == size]
        if size == 4:
            out.append("  if ((w & 3) == 3) {\n    d.size = 4;\n    switch (w & 0x7f) {")
        else:
            out.append("  } else {\n    w &= 0xffff; d.raw = w; d.size = 2;\n    switch (((w >> 13) & 7) << 2 | (w & 3)) {")
        keys = sorted({i.opcode_key for i in group})
        for key in keys:
            out.append(f"    case 0x{key:x}:")
            for i in (x for x in group if x.opcode_key == key):
                cond = f"(w & 0x{i.mask:x}u) == 0x{i.match:x}u"
                if i.only == "fp_separate":
                    cond += " && fp_separate"
                out.append(f"      if ({cond}) {{")
                for f in i.ops:
                    ctype = "int32_t" if f.signed else "uint32_t"
                    out.append(f"        {ctype} {f.name} = {_extract_expr(f)};")
                body = []
                for f in i.ops:
                    if f.slot in ("imm", "imm2"):
                        body.append(f"d.{f.slot} = (int32_t){f.name};")
                    else:
                        body.append(f"d.{f.slot} = (uint8_t){f.name};")
                for slot, v in i.fixed.items():
                    body.append(f"d.{slot} = {int(v)};")
                body.append(f"d.op = {_c_ident(i)}; return;")
                if i.when:
                    out.append(f"        if ({i.when}) {{ {' '.join(body)} }}")
                else:
                    out.append("        " + " ".join(body))
                for f in i.ops:
                    out.append(f"        (void){f.name};")
                out.append("      }")
            out.append("      break;")
        out.append("    default: break;\n    }")
    out.append("  }\n  d.op = OP_ILLEGAL;\n}\n")
    out.append("}  // namespace pulpsim")
    return "\n".join(out) + "\n"


def _timing(isa: Isa) -> list[str]:
    """Timing classes (isa/timing.toml): the class enum, the platform keys the core holds as t_<key>,
    the values of choice keys, whether a class is private, and each class's TIMING_<CLASS>() cost."""
    tm = isa.timing
    out = ["enum TimingClass : uint8_t { " + ", ".join(f"TC_{c.upper()}" for c in tm.classes) + " };",
           "// The platform's [timing] keys; the core holds each as uint32_t t_<key>.",
           "#define TIMING_KEYS(X) " + " ".join(f"X({k})" for k in tm.keys)]
    for k in tm.keys.values():
        for n, c in enumerate(k.choice or ()):
            out.append(f"static const uint32_t TIMING_{k.name.upper()}_{c.upper()} = {n};")
    out.append("// Whether a class touches nothing another core sees: never, always, or when the core's FPU is its own.")
    out.append("enum TimingPrivate : uint8_t { TP_NEVER, TP_ALWAYS, TP_OWN_FPU };")
    kinds = {False: "TP_NEVER", True: "TP_ALWAYS", "own_fpu": "TP_OWN_FPU"}
    out.append("static const uint8_t timing_private[] = {" + ", ".join(kinds[c.private] for c in tm.classes.values()) + "};")
    for c in tm.classes.values():
        out.append(f"#define TIMING_{c.name.upper()}() {c.cost or '((void)0);'}".rstrip(";"))
        out.append(f"#define ISSUE_{c.name.upper()}() {c.issue or '((void)0);'}".rstrip(";"))
    return out + [""]


def _counters(isa: Isa) -> list[str]:
    """Performance counter indices (isa/counters.toml) as the simulator's event numbers."""
    out = ["// PULP performance counters: PCER bit n <-> counter n (isa/counters.toml)."]
    c = isa.counters
    names = [(f"EV_{k.upper()}", v) for k, v in c.core.items()]
    names += [(f"EV_CLUSTER_{k.upper()}", v) for k, v in c.cluster.items()]
    names += [(f"EV_FC_{k.upper()}", v) for k, v in c.fc.items()]
    out.append("enum PerfCounter : int { " + ", ".join(f"{n} = {v}" for n, v in names) + " };")
    return out + [""]


def _csrs(isa: Isa) -> list[str]:
    """CSR numbers by name (isa/csrs.toml), and the values of fixed-value CSRs."""
    out = ["// CSR numbers (isa/csrs.toml)."]
    named = {name: num for num, name in isa.csrs.items()} | isa.pulp_csrs
    for name, num in sorted(named.items(), key=lambda kv: kv[1]):
        out.append(f"static const uint32_t CSR_{name.upper()} = 0x{num:03x};")
    for name, val in isa.csr_values.items():
        out.append(f"static const uint32_t CSR_VALUE_{name.upper()} = 0x{val:08x}u;")
    return out + [""]


def _stall_line(i: Insn) -> str:
    calls = []
    for slot in i.sources():
        rf = i.regfile(slot)
        if slot == "rd":
            calls.append(f"STALL_{'F' if rf == 'f' else 'X'}(d->rd);")
        else:
            calls.append(f"STALL_{'F' if rf == 'f' else 'X'}(d->{slot});")
    return " ".join(calls)


def gen_exec_inc(isa: Isa) -> str:
    out = [HEADER.format(sha=isa.sha256)]
    for i in isa.insns:
        timing = f"TIMING_{i.timing.upper()}();"
        issue = f"ISSUE_{i.timing.upper()}(); " if isa.timing.classes[i.timing].issue else ""
        out.append(f"case {_c_ident(i)}: {{ {issue}{_stall_line(i)} {i.sem} {timing} }} break;")
    return "\n".join(out) + "\n"


def _fmt_piece(i: Insn, fname: str, fmt: str | None) -> str:
    f = next(x for x in i.ops if x.name == fname)
    slot = f"d.{f.slot}"
    if f.kind in ("xreg", "creg"):
        return f"xreg({slot})"
    if f.kind in ("freg", "creg_f"):
        return f"freg({slot})"
    if f.kind == "csr":
        return f"csr_name({slot})"
    if f.kind == "rm":
        return f"rm_suffix({slot}, {'true' if fmt == 'legacy' else 'false'})"
    if fmt == "hex":
        return f"shex({slot})" if f.signed else f"uhex((uint32_t){slot})"
    if fmt == "target":
        return f"uhex(pc + (uint32_t){slot})"
    if fmt == "lui20":
        return f"uhex((uint32_t){slot} & 0xfffffu)"
    if fmt == "fence":
        return f"fence_set({slot})"
    return f"std::to_string({slot})" if f.signed else f"std::to_string((uint32_t){slot})"


def gen_disasm_inc(isa: Isa) -> str:
    import re

    out = [HEADER.format(sha=isa.sha256)]
    tok = re.compile(r"\{([a-z0-9_]+)(?::([a-z0-9]+))?\}")
    for i in isa.insns:
        parts = []
        pos = 0
        asm = i.asm
        for m in tok.finditer(asm):
            if m.start() > pos:
                parts.append('"' + asm[pos:m.start()].replace('"', '\\"') + '"')
            parts.append(_fmt_piece(i, m.group(1), m.group(2)))
            pos = m.end()
        if pos < len(asm):
            parts.append('"' + asm[pos:].replace('"', '\\"') + '"')
        text = f's = "{i.name}";'
        if parts:
            # rm suffix may be empty: it carries its own ", " separator
            text += ' s += "\\t";' + "".join(f" s += {p};" for p in parts)
        out.append(f"case {_c_ident(i)}: {{ {text} }} break;")
    return "\n".join(out) + "\n"
