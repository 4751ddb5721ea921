"""Platform files (platforms/<name>.toml): the one description of the hardware.

Everything that needs a number about the MCU reads it from here: the simulator, the linker script,
the kernel generator (L1 budget, cores), the cost model and the backends. Files are validated on
load against SCHEMA; a bad or missing field is a one-line error naming the file and the field.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import ROOT
from harness.errors import UserError

PLATFORM_DIR = ROOT / "platforms"
DEFAULT_PLATFORM = "pulp-open"

_INT = "int"
_NUM = "number"
_STR = "str"
_BOOL = "bool"
_WINDOW = "window"

# Who reads a key. SIM: the simulator (Platform.sim_config passes it, and the simulator refuses a key
# it does not read). Any other reader is the module that reads it, which tests/test_platform.py checks.
SIM = "sim"
TOOLCHAIN = "harness/toolchain.py"
RUNTIME = "harness/runtime.py"
TABLES = "harness/experiments/tables.py"
GVSOC = "harness/backends/gvsoc.py"
DOCTOR = "harness/commands/doctor.py"
ENERGY = "harness/energy.py"


def _choice(*values):
    return ("choice", values)


def _timing_schema() -> dict:
    from harness.isa.model import timing_table

    return {k.name: (_choice(*k.choice) if k.choice else ("min", k.min), SIM) for k in timing_table().keys.values()}


# The choices of the simulator's C++ (sim.hpp: ICache::Replacement, Machine::CoreOrder), in their order.
ICACHE_REPLACEMENT = ("lfsr8", "round_robin")
CORE_ORDER = ("last_woken_first", "index")

# section -> field -> (type, reader); every field is required. [timing] has the keys of isa/timing.toml.
SCHEMA: dict[str, dict[str, Any]] = {
    "platform": {"name": (_STR, "harness/platform.py"), "description": (_STR, DOCTOR), "models": (_STR, GVSOC),
                 "clock_hz": (_INT, TABLES)},
    "isa": {"march": (_STR, TOOLCHAIN), "mabi": (_STR, TOOLCHAIN),
            "fp_regfile": (_choice("integer", "separate"), SIM),
            "xpulp": (_BOOL, SIM), "fp16_simd": (_BOOL, SIM)},
    "fc": {"cluster_id": (_INT, SIM), "core_id": (_INT, SIM), "fetch_line": (_INT, SIM), "fetch_latency": (_INT, SIM),
           "icache_size": (_INT, SIM), "icache_ways": (_INT, SIM), "icache_miss_latency": (_INT, SIM),
           "icache_replacement": (_choice(*ICACHE_REPLACEMENT), SIM), "stack_size": (_INT, RUNTIME)},
    "cluster": {"cores": (_INT, SIM), "hartid_cluster": (_INT, SIM), "fpus": (_INT, SIM), "div_units": (_INT, SIM),
                "tcdm_conflicts": (_BOOL, SIM), "space_size": (_INT, SIM), "fetch_line": (_INT, SIM),
                "fetch_latency": (_INT, SIM), "icache_l0_size": (_INT, SIM), "icache_l0_ways": (_INT, SIM),
                "icache_l0_latency": (_INT, SIM), "icache_l1_size": (_INT, SIM), "icache_l1_ways": (_INT, SIM),
                "icache_l1_banks": (_INT, SIM), "icache_miss_latency": (_INT, SIM),
                "icache_replacement": (_choice(*ICACHE_REPLACEMENT), SIM),
                "core_order": (_choice(*CORE_ORDER), SIM), "stack_size": (_INT, RUNTIME)},
    "bus": {k: (_INT, SIM) for k in ("fc_apb", "fc_cluster_periph", "cluster_periph", "cluster_demux", "cluster_apb")},
    "timing": {},
    "peripherals": {},
    "dma": {"bytes_per_cycle": (_INT, SIM), "l1_to_l2_burst": (_INT, SIM), "issue_cycles": (_INT, SIM)},
    "energy": {},
    "differences": {},
}
# Windows the simulator and the runtime use by name; a platform may list more (quiet windows).
PERIPHERALS = ("soc_apb", "udma", "soc_ctrl", "soc_eu", "fc_itc", "fc_icache_ctrl", "fc_timer", "stdout", "cluster_periph",
               "cluster_ctrl", "cluster_timer", "event_unit", "cluster_icache_ctrl", "dma", "eu_demux", "dma_demux")
MEMORY_SCHEMA = {
    "l2": {"name": (_STR, SIM), "kind": (_STR, SIM), "base": (_INT, SIM), "size": (_INT, SIM),
           "fc_alias_size": (_INT, SIM), "fc_latency": (_INT, SIM), "cluster_latency": (_INT, SIM)},
    "l1": {"name": (_STR, SIM), "kind": (_STR, SIM), "base": (_INT, SIM), "size": (_INT, SIM),
           "banks": (_INT, SIM), "bank_width": (_INT, SIM), "tas_offset": (_INT, SIM), "fc_latency": (_INT, SIM),
           "cluster_latency": (_INT, SIM)},
    "external": {"name": (_STR, SIM), "kind": (_STR, SIM), "size": (_INT, SIM),
                 "read_cycles_per_byte": (_NUM, SIM), "write_cycles_per_byte": (_NUM, SIM),
                 "read_setup_cycles": (_INT, SIM), "write_setup_cycles": (_INT, SIM),
                 "write_fast_bytes": (_INT, SIM)},
}
REQUIRED_MEMORIES = ("l2", "l1", "hyperram", "flash")
# Sections a platform file does not take from the one it inherits: what it is, and how the
# simulator departs from what it models.
NOT_INHERITED = ("differences",)


def _energy_schema() -> dict:
    from harness.energy import KEYS

    return {k: (_NUM, ENERGY) for k in KEYS}


def schema() -> dict:
    """SCHEMA with the [timing] keys of isa/timing.toml and the [energy] keys of the energy model
    filled in."""
    out = dict(SCHEMA)
    out["timing"] = _timing_schema()
    out["energy"] = _energy_schema()
    return out
# Fields that divide, size or count something: 0 passes the schema's non-negative check but would
# divide by zero later (in the simulator, the memory model or the latency tables).
POSITIVE = {"platform": ("clock_hz",), "fc": ("icache_size", "icache_ways", "stack_size"),
            "cluster": ("div_units", "icache_l0_size", "icache_l0_ways", "icache_l1_size", "icache_l1_ways", "icache_l1_banks",
                        "stack_size"),
            "dma": ("bytes_per_cycle", "l1_to_l2_burst")}
POSITIVE_MEMORY = ("size", "banks", "bank_width")


@dataclass(frozen=True)
class Memory:
    name: str
    kind: str
    size: int
    base: int | None = None
    fields: dict = field(default_factory=dict)

    def __getattr__(self, item):
        try:
            return self.__dict__["fields"][item]
        except KeyError:
            raise AttributeError(item) from None


class Section(dict):
    """A validated table; fields read as attributes (platform.cluster.cores)."""

    def __getattr__(self, item):
        try:
            return self[item]
        except KeyError:
            raise AttributeError(item) from None


@dataclass(frozen=True)
class Platform:
    name: str
    path: Path
    sha256: str
    raw: dict
    memories: dict
    chain: tuple = ()      # the files it was resolved from, itself first

    def __getattr__(self, item):
        raw = self.__dict__["raw"]
        if item in raw:
            return raw[item]
        raise AttributeError(item)

    @property
    def clock_hz(self) -> int:
        return self.raw["platform"]["clock_hz"]

    @property
    def run_sha256(self) -> str:
        """sha256 of everything but [energy]: what a program and its run depend on. Energy coefficients
        price recorded event counts afterwards, so changing one re-prices cached results."""
        body = {k: v for k, v in self.raw.items() if k != "energy"}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()

    def memory(self, name: str) -> Memory:
        return self.memories[name]

    def peripheral(self, name: str) -> tuple[int, int]:
        w = self.raw["peripherals"][name]
        return w["base"], w["size"]

    def sim_config(self) -> dict:
        """Flat dict of every key the simulator reads ('section.field'); it refuses any other."""
        flat = {}
        for sec, fields in schema().items():
            for k, (kind, reader) in fields.items():
                if reader != SIM:
                    continue
                v = self.raw[sec][k]
                if isinstance(kind, tuple) and kind[0] == "choice":
                    v = kind[1].index(v)
                flat[f"{sec}.{k}"] = float(v) if isinstance(v, float) else int(v)
        # the register file is a choice of two; the simulator asks whether FP registers are separate
        flat["isa.fp_regfile"] = int(self.raw["isa"]["fp_regfile"] == "separate")
        for name, w in self.raw["peripherals"].items():
            flat[f"peripherals.{name}.base"] = w["base"]
            flat[f"peripherals.{name}.size"] = w["size"]
        for m in self.memories.values():
            for k, v in m.fields.items():
                if isinstance(v, (bool, int, float)):
                    flat[f"mem.{m.name}.{k}"] = float(v) if isinstance(v, float) else int(v)
        return flat

    def resolved_toml(self) -> str:
        """The platform as one file, inheritance resolved: the inherited file's text with this file's
        values and comments laid over it."""
        text = _resolved_document(self.chain).as_string()
        if len(self.chain) > 1:
            names = " <- ".join(Path(p).name for p in self.chain)
            text = f"# {names}: resolved; pulp-odl reads exactly this.\n{text}"
        return text


def _check(path: Path, where: str, key: str, value, kind) -> None:
    loc = f"{path}: [{where}] {key}"
    if isinstance(kind, tuple) and kind[0] == "choice":
        if value not in kind[1]:
            raise UserError(f"{loc}: must be one of {', '.join(map(str, kind[1]))}, got {value!r}")
        return
    if isinstance(kind, tuple) and kind[0] == "min":
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= kind[1]):
            raise UserError(f"{loc}: must be an integer of at least {kind[1]}, got {value!r}")
        return
    if kind == _WINDOW:
        if not isinstance(value, dict) or set(value) != {"base", "size"}:
            raise UserError(f"{loc}: must be {{ base = ..., size = ... }}, got {value!r}")
        for k in ("base", "size"):
            _check(path, where, f"{key}.{k}", value[k], _INT)
        if value["size"] == 0 or value["base"] + value["size"] > 1 << 32:
            raise UserError(f"{loc}: the window must be non-empty and inside the 32-bit address space")
        return
    ok = {
        _INT: isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        _NUM: isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
        _STR: isinstance(value, str) and value != "",
        _BOOL: isinstance(value, bool),
    }[kind]
    if not ok:
        wanted = {_INT: "a non-negative integer", _NUM: "a non-negative number", _STR: "a non-empty string",
                  _BOOL: "true or false"}[kind]
        raise UserError(f"{loc}: must be {wanted}, got {value!r}")


def _power_of_two(path: Path, where: str, key: str, value: int) -> None:
    if value < 1 or value & (value - 1):
        raise UserError(f"{path}: [{where}] {key}: must be a power of two, got {value}")


def _validate(path: Path, raw: dict) -> dict:
    out = {}
    sch = schema()
    for sec, fields in sch.items():
        if sec not in raw:
            if sec == "differences":
                out[sec] = Section()
                continue
            raise UserError(f"{path}: missing section [{sec}]")
        table = raw[sec]
        if not isinstance(table, dict):
            raise UserError(f"{path}: [{sec}] must be a table")
        if sec == "differences":
            out[sec] = Section(table)
            continue
        if sec == "peripherals":
            for key, value in table.items():
                _check(path, sec, key, value, _WINDOW)
            missing = [k for k in PERIPHERALS if k not in table]
            if missing:
                raise UserError(f"{path}: [peripherals] missing window '{missing[0]}'")
            out[sec] = Section({k: dict(v) for k, v in table.items()})
            continue
        for key, (kind, _reader) in fields.items():
            if key not in table:
                raise UserError(f"{path}: [{sec}] missing field '{key}'")
            _check(path, sec, key, table[key], kind)
        unknown = set(table) - set(fields) - ({"inherits"} if sec == "platform" else set())
        if unknown:
            raise UserError(f"{path}: [{sec}] unknown field '{sorted(unknown)[0]}' (nothing reads it)")
        out[sec] = Section(table)
    unknown_secs = set(raw) - set(sch) - {"memory"}
    if unknown_secs:
        raise UserError(f"{path}: unknown section [{sorted(unknown_secs)[0]}]")
    for sec, keys in POSITIVE.items():
        for key in keys:
            if out[sec][key] < 1:
                raise UserError(f"{path}: [{sec}] {key}: must be at least 1, got {out[sec][key]!r}")
    _power_of_two(path, "cluster", "icache_l1_banks", out["cluster"]["icache_l1_banks"])  # interleaved by line
    c = out["cluster"]
    if not 1 <= c["cores"] <= 16:
        raise UserError(f"{path}: [cluster] cores: must be between 1 and 16, got {c['cores']}")
    for key in ("fpus", "div_units"):
        if not 1 <= c[key] <= c["cores"]:
            raise UserError(f"{path}: [cluster] {key}: must be between 1 and cores ({c['cores']}), got {c[key]}")
    for sec in ("fc", "cluster"):
        _power_of_two(path, sec, "fetch_line", out[sec]["fetch_line"])
        if out[sec]["fetch_line"] < 4:
            raise UserError(f"{path}: [{sec}] fetch_line: at least one 32-bit instruction (4 bytes)")
    return out


def _memories(path: Path, raw: dict, cluster: dict) -> dict:
    mems = {}
    for i, m in enumerate(raw.get("memory", [])):
        kind = m.get("kind")
        if kind not in MEMORY_SCHEMA:
            raise UserError(f"{path}: [[memory]] #{i + 1} kind: must be one of {', '.join(MEMORY_SCHEMA)}, got {kind!r}")
        where = f"memory {m.get('name', '#' + str(i + 1))}"
        for key, (typ, _reader) in MEMORY_SCHEMA[kind].items():
            if key not in m:
                raise UserError(f"{path}: [{where}] missing field '{key}'")
            _check(path, where, key, m[key], typ)
        unknown = set(m) - set(MEMORY_SCHEMA[kind])
        if unknown:
            raise UserError(f"{path}: [{where}] unknown field '{sorted(unknown)[0]}' (nothing reads it)")
        for key in POSITIVE_MEMORY:
            if key in m and m[key] < 1:
                raise UserError(f"{path}: [{where}] {key}: must be at least 1, got {m[key]!r}")
        fields = {k: v for k, v in m.items()}
        mems[m["name"]] = Memory(name=m["name"], kind=kind, size=m["size"], base=m.get("base"), fields=fields)
    for name in REQUIRED_MEMORIES:
        if name not in mems:
            raise UserError(f"{path}: missing [[memory]] named '{name}'")
    mapped = sorted((m.base, m.base + m.size, m.name) for m in mems.values() if m.base is not None)
    for (b0, e0, n0), (b1, e1, n1) in zip(mapped, mapped[1:]):
        if b1 < e0:
            raise UserError(f"{path}: [memory {n1}] base: overlaps memory {n0}")
    l1, l2 = mems["l1"], mems["l2"]
    _power_of_two(path, "memory l1", "bank_width", l1.bank_width)
    if l1.size % (l1.banks * l1.bank_width):
        raise UserError(f"{path}: [memory l1] banks: size must be a multiple of banks x bank_width")
    if l1.size > l1.tas_offset:
        raise UserError(f"{path}: [memory l1] size: at most tas_offset (0x{l1.tas_offset:x}), where the "
                        "test-and-set alias starts")
    if l1.tas_offset + l1.size > cluster["space_size"]:
        raise UserError(f"{path}: [cluster] space_size: must hold L1 and its test-and-set alias "
                        f"(0x{l1.tas_offset + l1.size:x} bytes)")
    if l2.fc_alias_size > l2.size:
        raise UserError(f"{path}: [memory l2] fc_alias_size: at most the size of L2")
    return mems


def available() -> list[str]:
    return sorted(p.stem for p in PLATFORM_DIR.glob("*.toml"))


def _read_toml(path: Path) -> tuple[bytes, dict]:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read platform file ({e.strerror})") from None
    try:
        return data, tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not valid TOML ({e})") from None


def _parent_path(path: Path, raw: dict) -> Path | None:
    parent = raw.get("platform", {}).get("inherits") if isinstance(raw.get("platform"), dict) else None
    if parent is None:
        return None
    if not isinstance(parent, str) or not parent:
        raise UserError(f"{path}: [platform] inherits: must name a platform, got {parent!r}")
    ppath = path.parent / f"{parent}.toml"
    if not ppath.exists():
        raise UserError(f"{path}: [platform] inherits: no platform '{parent}' next to it ({ppath} not found)")
    return ppath


def _chain(path: Path) -> list[tuple[Path, bytes, dict]]:
    """The file and the ones it inherits from, itself first."""
    out = []
    while path is not None:
        if any(p == path for p, _, _ in out):
            raise UserError(f"{out[0][0]}: [platform] inherits: the chain comes back to {path.name}")
        data, raw = _read_toml(path)
        out.append((path, data, raw))
        path = _parent_path(path, raw)
    return out


def _overlay(base: dict, child: dict, path: Path) -> dict:
    """Child values over inherited ones: tables key by key, [[memory]] entries by name."""
    out = {k: v for k, v in base.items() if k not in NOT_INHERITED}
    for sec, value in child.items():
        if sec == "memory":
            mems = [dict(m) for m in out.get("memory", [])]
            names = [m.get("name") for m in mems]
            for m in value:
                if m.get("name") in names:
                    mems[names.index(m["name"])].update(m)
                else:
                    mems.append(dict(m))
            out["memory"] = mems
        elif isinstance(value, dict) and isinstance(out.get(sec), dict):
            out[sec] = {**out[sec], **value}
        else:
            out[sec] = value
    out.get("platform", {}).pop("inherits", None)
    return out


def load_file(path: Path) -> Platform:
    path = Path(path)
    chain = _chain(path)
    raw = {}
    for p, _, r in reversed(chain):
        raw = _overlay(raw, r, p)
    validated = _validate(path, raw)
    if raw["platform"]["name"] != path.stem and path.parent == PLATFORM_DIR:
        raise UserError(f"{path}: [platform] name: must be the file's name, '{path.stem}'")
    mems = _memories(path, raw, validated["cluster"])
    validated["memory"] = raw.get("memory", [])
    h = hashlib.sha256()
    for p, data, _ in chain:
        h.update(p.name.encode() + b"\0" + data)
    return Platform(name=validated["platform"]["name"], path=path, sha256=h.hexdigest(), raw=validated,
                    memories=mems, chain=tuple(p for p, _, _ in chain))


def _resolved_document(chain: tuple):
    """tomlkit document of the resolved platform: the root file's text, with every inheriting file's
    values (and their comments) laid over it in turn, under the last file's own header comment."""
    import tomlkit
    from tomlkit.items import Comment, Whitespace

    def put(table, key, item):
        comment, ws = item.trivia.comment, item.trivia.comment_ws   # assignment keeps the old comment
        table[key] = item
        table.item(key).trivia.comment = comment
        table.item(key).trivia.comment_ws = ws

    docs = [tomlkit.parse(Path(p).read_text()) for p in reversed(chain)]
    out = docs[0]
    for doc in docs[1:]:
        for sec in NOT_INHERITED:
            if sec in out:
                del out[sec]
        for sec in doc:
            value = doc.item(sec)
            if sec == "memory":
                for m in value:
                    target = next((t for t in out["memory"] if t.get("name") == m.get("name")), None)
                    if target is None:
                        out["memory"].append(m)
                    else:
                        for k in m:
                            put(target, k, m.item(k))
            elif sec in out and isinstance(value, dict):
                for k in value:
                    if k != "inherits":
                        put(out[sec], k, value.item(k))
            else:
                out[sec] = value
    if len(docs) > 1:
        def header(d):
            n = 0
            while n < len(d.body) and d.body[n][0] is None and isinstance(d.body[n][1], (Comment, Whitespace)):
                n += 1
            return n
        n_out, n_last = header(out), header(docs[-1])
        out.body[:n_out] = docs[-1].body[:n_last]
    return out


_cache: dict[str, Platform] = {}


def load(name_or_path: str | None = None) -> Platform:
    """Load a platform by name (platforms/<name>.toml) or by path to a .toml file."""
    key = name_or_path or DEFAULT_PLATFORM
    if key in _cache:
        return _cache[key]
    p = Path(key)
    if p.suffix == ".toml" or "/" in key:
        plat = load_file(p)
    else:
        path = PLATFORM_DIR / f"{key}.toml"
        if not path.exists():
            raise UserError(f"unknown platform '{key}'; choose one of: {', '.join(available())}")
        plat = load_file(path)
    _cache[key] = plat
    return plat
