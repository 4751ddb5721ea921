"""The ISA table: load isa/*.toml into typed, validated objects.

isa/fields.toml names every operand field once (bit positions, kind, decoder slot, role); each
isa/<ext>.toml lists instructions by encoding string, operand field names, disassembly format,
timing class and semantics. Everything else (the simulator's decoder, executor cases and
disassembler, the C header for kernels) is generated from the Isa object built here. Only the
standard library is used, so the build can run this before any dependency is installed.
"""
from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ISA_DIR = Path(__file__).resolve().parent.parent.parent / "isa"

FIELD_KINDS = {"xreg", "freg", "creg", "creg_f", "imm", "uimm", "csr", "rm"}
SLOTS = {"rd", "rs1", "rs2", "rs3", "imm", "imm2", "rm"}
ROLES = {"dst", "src", "srcdst", None}
TIMING_CLASSES = ("alu", "branch", "jump", "load", "store", "mul", "mulh", "div", "csr", "fpu", "fdiv_s", "fdiv_h",
                  "fmv", "hwloop", "elw", "system")
ONLY = {None, "fp_separate"}
FORMATS = {None, "hex", "target", "lui20", "fence", "legacy"}
EXT_ORDER = ("i", "zicsr", "m", "c", "f", "zfh", "xpulp", "xfvec")


class IsaError(Exception):
    """A problem in the ISA table; the message starts with file:entry."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    slot: str
    role: str | None
    pieces: tuple  # ((insn_hi, insn_lo, val_lo), ...): insn bits hi..lo land at value bits val_lo upwards

    @property
    def insn_bits(self) -> set[int]:
        bits = set()
        for hi, lo, _ in self.pieces:
            bits.update(range(lo, hi + 1))
        return bits

    @property
    def width(self) -> int:
        return max(vlo + (hi - lo) for hi, lo, vlo in self.pieces) + 1

    @property
    def signed(self) -> bool:
        return self.kind == "imm"

    def extract(self, word: int) -> int:
        v = 0
        for hi, lo, vlo in self.pieces:
            v |= ((word >> lo) & ((1 << (hi - lo + 1)) - 1)) << vlo
        if self.signed and v >> (self.width - 1) & 1:
            v -= 1 << self.width
        if self.kind in ("creg", "creg_f"):
            v += 8
        return v

    def insert(self, value: int) -> int:
        """Encode a field value back into instruction bits (inverse of extract)."""
        if self.kind in ("creg", "creg_f"):
            value -= 8
        value &= (1 << self.width) - 1
        w = 0
        for hi, lo, vlo in self.pieces:
            w |= ((value >> vlo) & ((1 << (hi - lo + 1)) - 1)) << lo
        return w


@dataclass(frozen=True)
class Insn:
    name: str
    id: str
    ext: str
    size: int            # bytes: 2 or 4
    mask: int
    match: int
    ops: tuple           # Field objects, in the order given
    asm: str
    timing: str
    sem: str
    fixed: dict = field(default_factory=dict)
    when: str | None = None
    only: str | None = None
    source: str = ""

    @property
    def opcode_key(self) -> int:
        """Bucket for the decoder: opcode for 32-bit, quadrant + funct3 for 16-bit."""
        if self.size == 4:
            return self.match & 0x7F
        return ((self.match >> 13) & 7) << 2 | (self.match & 3)

    def field(self, slot: str):
        for f in self.ops:
            if f.slot == slot:
                return f
        return None

    def sources(self) -> list[str]:
        """Decoder slots whose registers the instruction reads (for the scoreboard)."""
        out = [f.slot for f in self.ops if f.role in ("src", "srcdst") and f.kind != "csr"]
        for slot in self.fixed:
            if slot.startswith("rs") and slot not in out:
                out.append(slot)
        return out

    def regfile(self, slot: str) -> str | None:
        f = self.field(slot)
        if f is not None:
            return "f" if f.kind in ("freg", "creg_f") else "x" if f.kind in ("xreg", "creg") else None
        return "x" if slot in self.fixed else None


@dataclass
class Isa:
    fields: dict
    insns: list
    sha256: str
    csrs: dict

    def by_id(self, ident: str) -> Insn:
        for i in self.insns:
            if i.id == ident:
                return i
        raise KeyError(ident)

    def decode(self, word: int, fp_separate: bool = False):
        """Reference decoder in Python (same priority rules as the generated C++ one)."""
        size = 4 if (word & 3) == 3 else 2
        if size == 2:
            word &= 0xFFFF
        for insn in self.ordered():
            if insn.size != size or (word & insn.mask) != insn.match:
                continue
            if insn.only == "fp_separate" and not fp_separate:
                continue
            vals = {f.name: f.extract(word) for f in insn.ops}
            if insn.when and not eval_when(insn.when, vals):
                continue
            return insn, vals
        return None, {}

    def ordered(self) -> list:
        """Decode priority: more fixed bits first, then table order."""
        return sorted(self.insns, key=lambda i: (-bin(i.mask).count("1"), self.insns.index(i)))


def eval_when(expr: str, vals: dict) -> bool:
    py = expr.replace("&&", " and ").replace("||", " or ")
    return bool(eval(py, {"__builtins__": {}}, dict(vals)))  # noqa: S307 - our own table, names only


_PIECE = re.compile(r"^(\d+)(?::(\d+))?(?:>(\d+)(?::(\d+))?)?$")


def _parse_bits(where: str, spec: str) -> tuple:
    pieces = []
    next_lo = 0
    parts = spec.split()
    # Without '>' the slices are concatenated from bit 0 upwards in reverse listed order (last = lowest).
    if all(">" not in p for p in parts):
        for p in reversed(parts):
            m = _PIECE.match(p)
            if not m:
                raise IsaError(f"{where}: bad bit slice '{p}'")
            hi, lo = int(m.group(1)), int(m.group(2) or m.group(1))
            pieces.append((hi, lo, next_lo))
            next_lo += hi - lo + 1
        return tuple(pieces)
    for p in parts:
        m = _PIECE.match(p)
        if not m or m.group(3) is None:
            raise IsaError(f"{where}: bad bit slice '{p}' (use insn_hi:insn_lo>val_hi:val_lo)")
        hi, lo = int(m.group(1)), int(m.group(2) or m.group(1))
        vhi, vlo = int(m.group(3)), int(m.group(4) or m.group(3))
        if hi < lo or vhi < vlo or hi - lo != vhi - vlo:
            raise IsaError(f"{where}: slice '{p}' has mismatched widths")
        pieces.append((hi, lo, vlo))
    vbits = [b for hi, lo, vlo in pieces for b in range(vlo, vlo + hi - lo + 1)]
    if len(vbits) != len(set(vbits)):
        raise IsaError(f"{where}: value bits set twice")
    return tuple(pieces)


def _load_fields(path: Path) -> dict:
    raw = tomllib.loads(path.read_text())
    out = {}
    for name, spec in raw.items():
        where = f"{path.name}:{name}"
        kind = spec.get("kind")
        if kind not in FIELD_KINDS:
            raise IsaError(f"{where}: kind must be one of {sorted(FIELD_KINDS)}")
        slot = spec.get("slot")
        if slot not in SLOTS:
            raise IsaError(f"{where}: slot must be one of {sorted(SLOTS)}")
        role = spec.get("role")
        if role not in ROLES:
            raise IsaError(f"{where}: role must be dst, src or srcdst")
        if kind in ("xreg", "freg", "creg", "creg_f") and role is None:
            raise IsaError(f"{where}: register fields need a role")
        out[name] = Field(name=name, kind=kind, slot=slot, role=role, pieces=_parse_bits(where, str(spec["bits"])))
    return out


def _ident(name: str, form: str | None) -> str:
    base = name.replace(".", "_")
    return f"{base}_{form}" if form else base


def _load_insns(path: Path, fields: dict) -> list:
    raw = tomllib.loads(path.read_text())
    ext = raw.get("ext")
    if not ext:
        raise IsaError(f"{path.name}: missing top-level ext")
    out = []
    for n, e in enumerate(raw.get("insn", []), 1):
        where = f"{path.name}:{e.get('name', '#' + str(n))}"
        unknown = set(e) - {"name", "enc", "ops", "asm", "timing", "sem", "fixed", "when", "only", "form"}
        if unknown:
            raise IsaError(f"{where}: unknown key '{sorted(unknown)[0]}'")
        for key in ("name", "enc", "ops", "asm", "timing", "sem"):
            if key not in e:
                raise IsaError(f"{where}: missing '{key}'")
        enc = e["enc"].replace(" ", "")
        if len(enc) not in (16, 32) or set(enc) - set("01-"):
            raise IsaError(f"{where}: enc must be 16 or 32 characters of 0, 1 and -")
        size = len(enc) // 8
        if size == 4 and not enc.endswith("11"):
            raise IsaError(f"{where}: a 32-bit encoding must end in 11")
        if size == 2 and enc.endswith("11"):
            raise IsaError(f"{where}: a 16-bit encoding must not end in 11")
        nbits = len(enc)
        mask = match = 0
        free = set()
        for i, ch in enumerate(enc):
            bit = nbits - 1 - i
            if ch == "-":
                free.add(bit)
            else:
                mask |= 1 << bit
                match |= int(ch) << bit
        ops = []
        covered = set()
        for fname in e["ops"].split():
            if fname not in fields:
                raise IsaError(f"{where}: unknown field '{fname}' (see fields.toml)")
            f = fields[fname]
            bits = f.insn_bits
            if bits & covered:
                raise IsaError(f"{where}: field '{fname}' overlaps another operand")
            if not bits <= free:
                raise IsaError(f"{where}: field '{fname}' covers fixed encoding bits")
            covered |= bits
            ops.append(f)
        if covered != free:
            raise IsaError(f"{where}: encoding bits {sorted(free - covered)} are not covered by an operand")
        slots = [f.slot for f in ops]
        if len(slots) != len(set(slots)):
            raise IsaError(f"{where}: two operands share a decoder slot")
        fixed = dict(e.get("fixed", {}))
        for k in fixed:
            if k not in ("rd", "rs1", "rs2") or k in slots:
                raise IsaError(f"{where}: fixed slot '{k}' is not free")
        if e["timing"] not in TIMING_CLASSES:
            raise IsaError(f"{where}: timing must be one of {', '.join(TIMING_CLASSES)}")
        only = e.get("only")
        if only not in ONLY:
            raise IsaError(f"{where}: only must be fp_separate")
        for m in re.finditer(r"\{([a-z0-9_]+)(?::([a-z0-9]+))?\}", e["asm"]):
            if m.group(1) not in e["ops"].split():
                raise IsaError(f"{where}: asm refers to '{m.group(1)}', which is not an operand")
            if m.group(2) not in FORMATS:
                raise IsaError(f"{where}: unknown asm format ':{m.group(2)}'")
        if e.get("when"):
            names = set(re.findall(r"[a-z_][a-z0-9_]*", e["when"]))
            if not names <= set(e["ops"].split()):
                raise IsaError(f"{where}: when refers to a name that is not an operand")
        out.append(Insn(name=e["name"], id=_ident(e["name"], e.get("form")), ext=ext, size=size, mask=mask,
                        match=match, ops=tuple(ops), asm=e["asm"], timing=e["timing"], sem=e["sem"], fixed=fixed,
                        when=e.get("when"), only=only, source=where))
    return out


def load(isa_dir: Path = ISA_DIR) -> Isa:
    isa_dir = Path(isa_dir)
    h = hashlib.sha256()
    paths = sorted(isa_dir.glob("*.toml"))
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    fields = _load_fields(isa_dir / "fields.toml")
    csrs = {}
    insns = []
    files = {}
    for p in paths:
        if p.name == "fields.toml":
            continue
        if p.name == "csrs.toml":
            raw = tomllib.loads(p.read_text())
            csrs = {int(k, 0): v for k, v in raw.get("names", {}).items()}
            continue
        loaded = _load_insns(p, fields)
        if loaded:
            files[loaded[0].ext] = loaded
    for ext in EXT_ORDER:
        insns.extend(files.pop(ext, []))
    for rest in files.values():
        insns.extend(rest)
    ids = [i.id for i in insns]
    dup = {x for x in ids if ids.count(x) > 1}
    if dup:
        raise IsaError(f"duplicate instruction id(s): {', '.join(sorted(dup))} (add a 'form')")
    # Two entries with the same mask and match are ambiguous unless a `when` or `only` separates them.
    seen = {}
    for i in insns:
        key = (i.size, i.mask, i.match)
        if key in seen and not (i.when or seen[key].when or i.only or seen[key].only):
            raise IsaError(f"{i.source}: same encoding as {seen[key].source}")
        seen.setdefault(key, i)
    return Isa(fields=fields, insns=insns, sha256=h.hexdigest(), csrs=csrs)
