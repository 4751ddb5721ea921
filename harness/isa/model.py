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
from functools import lru_cache
from pathlib import Path

ISA_DIR = Path(__file__).resolve().parent.parent.parent / "isa"
# Files of isa/ that are not instruction tables
DATA_FILES = {"fields.toml", "csrs.toml", "timing.toml", "counters.toml", "energy.toml"}
# Energy classes of instructions (energy.toml); each but `access` is priced per instruction.
ENERGY_CLASSES = ("alu", "muldiv", "fp32", "fp16", "fp16_simd", "access")
PRIVATE = {True, False, "own_fpu"}

FIELD_KINDS = {"xreg", "freg", "creg", "creg_f", "imm", "uimm", "csr", "rm"}
SLOTS = {"rd", "rs1", "rs2", "rs3", "imm", "imm2", "rm"}
ROLES = {"dst", "src", "srcdst", None}
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
    enabled_by: str | None = None   # the platform's [isa] switch that enables the extension (None: always on)

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


@dataclass(frozen=True)
class TimingKey:
    name: str
    doc: str
    choice: tuple | None = None     # the allowed strings of a choice key; None for a cycle count
    min: int = 0                    # the smallest cycle count allowed


@dataclass(frozen=True)
class TimingClass:
    name: str
    keys: tuple
    cost: str
    private: bool | str
    value: bool
    issue: str = ""       # run before the operands are read (a shared unit claimed at issue)


@dataclass(frozen=True)
class Timing:
    keys: dict       # name -> TimingKey, in file order
    classes: dict    # name -> TimingClass, in file order


@dataclass(frozen=True)
class Counters:
    core: dict       # name -> index, on every core
    cluster: dict    # cluster cores only
    fc: dict         # the fabric controller only

    def indices(self) -> list[int]:
        return sorted(set(self.core.values()) | set(self.cluster.values()) | set(self.fc.values()))


@dataclass
class Isa:
    fields: dict
    insns: list
    sha256: str
    csrs: dict                 # number -> name, as llvm-objdump prints it
    pulp_csrs: dict = field(default_factory=dict)    # name -> number, PULP's own CSRs
    csr_values: dict = field(default_factory=dict)   # name -> value of a fixed-value CSR
    timing: Timing | None = None
    counters: Counters | None = None
    energy: dict = field(default_factory=dict)   # (name, ext) -> energy class (energy.toml)

    def switches(self) -> dict:
        """ext -> the platform [isa] key that enables it, for the extensions that have one."""
        return {i.ext: i.enabled_by for i in self.insns if i.enabled_by}

    def csr(self, name: str) -> int:
        """The number of a CSR by name (standard or PULP)."""
        if name in self.pulp_csrs:
            return self.pulp_csrs[name]
        for num, n in self.csrs.items():
            if n == name:
                return num
        raise KeyError(name)

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
    raw = _read(path)
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


def _load_insns(path: Path, fields: dict, timing: Timing) -> list:
    raw = _read(path)
    _unknown(path.name, raw, ("ext", "enabled_by", "insn"))
    ext = raw.get("ext")
    if not ext:
        raise IsaError(f"{path.name}: missing top-level ext")
    switch = raw.get("enabled_by")
    if switch is not None and (not isinstance(switch, str) or not re.fullmatch(r"[a-z0-9_]+", switch)):
        raise IsaError(f"{path.name}: enabled_by names a key of the platforms' [isa] section")
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
        if e["timing"] not in timing.classes:
            raise IsaError(f"{where}: timing must be one of {', '.join(timing.classes)} (timing.toml)")
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
                        when=e.get("when"), only=only, source=where, enabled_by=switch))
    return out


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except OSError as e:
        raise IsaError(f"{path.name}: cannot read ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise IsaError(f"{path.name}: not valid TOML ({e})") from None


def _unknown(where: str, table: dict, known) -> None:
    extra = set(table) - set(known)
    if extra:
        raise IsaError(f"{where}: unknown key '{sorted(extra)[0]}'")


def load_timing(path: Path) -> Timing:
    """timing.toml: the [timing] keys of a platform file and the classes that read them."""
    raw = _read(path)
    name = path.name
    _unknown(name, raw, ("keys", "class"))
    keys = {}
    for k, spec in raw.get("keys", {}).items():
        where = f"{name}:keys.{k}"
        if not isinstance(spec, dict) or not isinstance(spec.get("doc"), str):
            raise IsaError(f"{where}: give {{ doc = \"...\" }} (and choice = [...] for a named value)")
        _unknown(where, spec, ("doc", "choice", "min"))
        low = spec.get("min", 0)
        if not isinstance(low, int) or isinstance(low, bool) or low < 0:
            raise IsaError(f"{where}: min must be a non-negative integer")
        choice = spec.get("choice")
        if choice is not None and (not isinstance(choice, list) or not choice
                                   or not all(isinstance(c, str) for c in choice)):
            raise IsaError(f"{where}: choice must be a non-empty list of strings")
        keys[k] = TimingKey(k, spec["doc"], tuple(choice) if choice else None, low)
    classes = {}
    used = set()
    for c, spec in raw.get("class", {}).items():
        where = f"{name}:class.{c}"
        if not isinstance(spec, dict):
            raise IsaError(f"{where}: must be a table")
        _unknown(where, spec, ("keys", "issue", "cost", "private", "value"))
        ks = spec.get("keys", [])
        for k in ks:
            if k not in keys:
                raise IsaError(f"{where}: key '{k}' is not listed under [keys]")
        private = spec.get("private", False)
        if private not in PRIVATE or isinstance(private, int) and not isinstance(private, bool):
            raise IsaError(f"{where}: private must be true, false or \"own_fpu\"")
        cost, issue = spec.get("cost", ""), spec.get("issue", "")
        for attr, stmt in (("cost", cost), ("issue", issue)):
            if not isinstance(stmt, str):
                raise IsaError(f"{where}: {attr} must be a string")
            for member in re.findall(r"\bt_([a-z0-9_]+)", stmt):
                if member not in ks:
                    raise IsaError(f"{where}: {attr} reads t_{member}, but '{member}' is not among its keys")
        used.update(ks)
        classes[c] = TimingClass(c, tuple(ks), cost, private, bool(spec.get("value", False)), issue)
    if not classes:
        raise IsaError(f"{name}: no [class.*] tables")
    orphans = [k for k in keys if k not in used]
    if orphans:
        raise IsaError(f"{name}: key '{orphans[0]}' belongs to no class (a key nothing reads)")
    return Timing(keys, classes)


def load_counters(path: Path) -> Counters:
    raw = _read(path)
    _unknown(path.name, raw, ("core", "cluster", "fc"))
    out = {}
    for kind in ("core", "cluster", "fc"):
        table = raw.get(kind, {})
        for k, v in table.items():
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 32:
                raise IsaError(f"{path.name}:{kind}.{k}: a counter index is an integer from 0 to 31")
        out[kind] = dict(table)
    for kind in ("cluster", "fc"):
        clash = {v for v in out[kind].values()} & set(out["core"].values())
        if clash:
            raise IsaError(f"{path.name}:{kind}: index {min(clash)} is already a counter of every core")
    return Counters(**out)


def load_energy(path: Path, insns: list, timing: Timing) -> dict:
    """energy.toml: the energy class of every instruction, as (name, ext) -> class."""
    raw = _read(path)
    name = path.name
    _unknown(name, raw, ("timing", "insn"))
    by_timing = raw.get("timing", {})
    for c in by_timing:
        if c not in timing.classes:
            raise IsaError(f"{name}:timing.{c}: no such timing class (timing.toml)")
    overrides = dict(raw.get("insn", {}))
    names = {i.name for i in insns}
    for k, v in overrides.items():
        if k not in names:
            raise IsaError(f"{name}:insn.{k}: no instruction of that name")
        if v not in ENERGY_CLASSES:
            raise IsaError(f"{name}:insn.{k}: must be one of {', '.join(ENERGY_CLASSES)}")
    out = {}
    for i in insns:
        if i.name in overrides:
            cls = overrides[i.name]
        else:
            spec = by_timing.get(i.timing)
            if spec is None:
                raise IsaError(f"{name}: timing class '{i.timing}' has no energy class ({i.source})")
            cls = spec.get(i.ext) if isinstance(spec, dict) else spec
            if cls is None:
                raise IsaError(f"{name}:timing.{i.timing}: no class for extension '{i.ext}' ({i.source})")
        if cls not in ENERGY_CLASSES:
            raise IsaError(f"{name}: class of {i.name} must be one of {', '.join(ENERGY_CLASSES)}, got {cls!r}")
        if out.get((i.name, i.ext), cls) != cls:
            raise IsaError(f"{name}: the forms of {i.name} would get different classes")
        out[(i.name, i.ext)] = cls
    return out


def _load_csrs(path: Path) -> tuple[dict, dict, dict]:
    raw = _read(path)
    _unknown(path.name, raw, ("names", "pulp", "values"))
    names = {int(k, 0): v for k, v in raw.get("names", {}).items()}
    pulp = dict(raw.get("pulp", {}))
    for k, v in pulp.items():
        if not isinstance(v, int) or not 0 <= v < 4096:
            raise IsaError(f"{path.name}:pulp.{k}: a CSR number is an integer below 0x1000")
        if v in names:
            raise IsaError(f"{path.name}:pulp.{k}: 0x{v:03x} is already named '{names[v]}' in [names]")
    values = dict(raw.get("values", {}))
    known = set(names.values()) | set(pulp)
    for k in values:
        if k not in known:
            raise IsaError(f"{path.name}:values.{k}: no CSR of that name")
    return names, pulp, values


def load(isa_dir: Path = ISA_DIR) -> Isa:
    isa_dir = Path(isa_dir)
    h = hashlib.sha256()
    paths = sorted(isa_dir.glob("*.toml"))
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    for needed in sorted(DATA_FILES):
        if not (isa_dir / needed).exists():
            raise IsaError(f"{needed}: missing from {isa_dir}")
    fields = _load_fields(isa_dir / "fields.toml")
    timing = load_timing(isa_dir / "timing.toml")
    counters = load_counters(isa_dir / "counters.toml")
    csrs, pulp_csrs, csr_values = _load_csrs(isa_dir / "csrs.toml")
    insns = []
    files = {}
    for p in paths:
        if p.name in DATA_FILES:
            continue
        loaded = _load_insns(p, fields, timing)
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
    energy = load_energy(isa_dir / "energy.toml", insns, timing)
    return Isa(fields=fields, insns=insns, sha256=h.hexdigest(), csrs=csrs, pulp_csrs=pulp_csrs,
               csr_values=csr_values, timing=timing, counters=counters, energy=energy)


@lru_cache(maxsize=None)
def timing_table(isa_dir: Path = ISA_DIR) -> Timing:
    """timing.toml alone (the platform loader needs its keys, not the whole table)."""
    return load_timing(Path(isa_dir) / "timing.toml")
