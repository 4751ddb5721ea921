"""Platform files (platforms/<name>.toml): the one description of the hardware.

Everything that needs a number about the MCU reads it from here: the simulator, the linker script,
the kernel generator (L1 budget, cores), the cost model and the backends. Files are validated on
load against SCHEMA; a bad or missing field is a one-line error naming the file and the field.
"""
from __future__ import annotations

import hashlib
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


def _choice(*values):
    return ("choice", values)


# section -> field -> (type, required). Sections marked list are arrays of tables.
SCHEMA: dict[str, dict[str, Any]] = {
    "platform": {"name": (_STR, True), "description": (_STR, True), "models": (_STR, True),
                 "clock_hz": (_INT, True)},
    "isa": {"march": (_STR, True), "mabi": (_STR, True),
            "fp_regfile": (_choice("integer", "separate"), True),
            "xpulp": (_BOOL, True), "fp16_simd": (_BOOL, True)},
    "fc": {"cluster_id": (_INT, True), "core_id": (_INT, True), "fetch_latency": (_INT, True),
           "icache_ctrl": (_INT, True), "icache_size": (_INT, True), "icache_ways": (_INT, True),
           "icache_miss_latency": (_INT, True), "stack_size": (_INT, True)},
    "cluster": {"cores": (_INT, True), "hartid_cluster": (_INT, True), "fpus": (_INT, True),
                "fpu_sharing": (_choice("shared", "private"), True), "div_units": (_INT, True),
                "tcdm_conflicts": (_BOOL, True), "fetch_latency": (_INT, True),
                "icache_l0_size": (_INT, True), "icache_l0_ways": (_INT, True),
                "icache_l0_latency": (_INT, True), "icache_l1_size": (_INT, True),
                "icache_l1_ways": (_INT, True), "icache_miss_latency": (_INT, True),
                "stack_size": (_INT, True)},
    "bus": {"fc_apb": (_INT, True), "fc_cluster_periph": (_INT, True), "cluster_periph": (_INT, True),
            "cluster_demux": (_INT, True), "cluster_apb": (_INT, True)},
    "timing": {"branch_taken": (_INT, True), "jump": (_INT, True), "load_use": (_INT, True),
               "mul": (_INT, True), "mulh": (_INT, True), "div": (_choice("clz"), True),
               "fpu": (_INT, True), "fdiv_s": (_INT, True), "fdiv_h": (_INT, True),
               "misaligned": (_choice("extra_access", "extra_cycle"), True),
               "hwloop_overhead": (_INT, True), "elw_overhead": (_INT, True), "eu_wakeup": (_INT, True),
               "eu_lw_extra": (_INT, True)},
    "peripherals": {k: (_INT, True) for k in (
        "stdout", "soc_ctrl", "fc_timer", "udma", "soc_eu", "fc_itc", "cluster_ctrl", "cluster_timer",
        "event_unit", "cluster_icache_ctrl", "dma", "eu_demux", "dma_demux")},
    "dma": {"bytes_per_cycle": (_INT, True), "l1_to_l2_burst": (_INT, True), "issue_cycles": (_INT, True),
            "udma_read_cycles_per_byte": (_NUM, True)},
    "differences": {},
}
MEMORY_SCHEMA = {
    "l2": {"name": (_STR, True), "kind": (_STR, True), "base": (_INT, True), "size": (_INT, True),
           "fc_latency": (_INT, True), "cluster_latency": (_INT, True)},
    "l1": {"name": (_STR, True), "kind": (_STR, True), "base": (_INT, True), "size": (_INT, True),
           "banks": (_INT, True), "bank_width": (_INT, True), "fc_latency": (_INT, True),
           "cluster_latency": (_INT, True)},
    "external": {"name": (_STR, True), "kind": (_STR, True), "size": (_INT, True),
                 "read_cycles_per_byte": (_NUM, True), "write_cycles_per_byte": (_NUM, True),
                 "read_setup_cycles": (_INT, True), "write_setup_cycles": (_INT, True)},
}
REQUIRED_MEMORIES = ("l2", "l1", "hyperram", "flash")
# Fields that divide, size or count something: 0 passes the schema's non-negative check but would
# divide by zero later (in the simulator, the memory model or the latency tables).
POSITIVE = {"platform": ("clock_hz",), "fc": ("icache_size", "icache_ways", "stack_size"),
            "cluster": ("div_units", "icache_l0_size", "icache_l0_ways", "icache_l1_size", "icache_l1_ways",
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

    def __getattr__(self, item):
        raw = self.__dict__["raw"]
        if item in raw:
            return raw[item]
        raise AttributeError(item)

    @property
    def clock_hz(self) -> int:
        return self.raw["platform"]["clock_hz"]

    def memory(self, name: str) -> Memory:
        return self.memories[name]

    def sim_config(self) -> dict:
        """Flat dict of every number the C++ simulator needs (keys are 'section.field')."""
        flat = {}
        for sec, fields in self.raw.items():
            if sec in ("differences", "memory"):
                continue
            for k, v in fields.items():
                if isinstance(v, (bool, int, float)):
                    flat[f"{sec}.{k}"] = float(v) if isinstance(v, float) else int(v)
        flat["isa.fp_separate"] = int(self.raw["isa"]["fp_regfile"] == "separate")
        flat["timing.misaligned_extra_access"] = int(self.raw["timing"]["misaligned"] == "extra_access")
        flat["cluster.fpu_shared"] = int(self.raw["cluster"]["fpu_sharing"] == "shared")
        for m in self.memories.values():
            for k, v in m.fields.items():
                if isinstance(v, (bool, int, float)):
                    flat[f"mem.{m.name}.{k}"] = float(v) if isinstance(v, float) else int(v)
        return flat


def _check(path: Path, where: str, key: str, value, kind) -> None:
    loc = f"{path}: [{where}] {key}"
    if isinstance(kind, tuple) and kind[0] == "choice":
        if value not in kind[1]:
            raise UserError(f"{loc}: must be one of {', '.join(map(str, kind[1]))}, got {value!r}")
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


def _validate(path: Path, raw: dict) -> dict:
    out = {}
    for sec, fields in SCHEMA.items():
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
        for key, (kind, required) in fields.items():
            if key not in table:
                if required:
                    raise UserError(f"{path}: [{sec}] missing field '{key}'")
                continue
            _check(path, sec, key, table[key], kind)
        unknown = set(table) - set(fields)
        if unknown:
            raise UserError(f"{path}: [{sec}] unknown field '{sorted(unknown)[0]}'")
        out[sec] = Section(table)
    unknown_secs = set(raw) - set(SCHEMA) - {"memory"}
    if unknown_secs:
        raise UserError(f"{path}: unknown section [{sorted(unknown_secs)[0]}]")
    for sec, keys in POSITIVE.items():
        for key in keys:
            if out[sec][key] < 1:
                raise UserError(f"{path}: [{sec}] {key}: must be at least 1, got {out[sec][key]!r}")
    c = out["cluster"]
    if not 1 <= c["cores"] <= 16:
        raise UserError(f"{path}: [cluster] cores: must be between 1 and 16, got {c['cores']}")
    if c["fpus"] < 1:
        raise UserError(f"{path}: [cluster] fpus: must be at least 1")
    if c["fpu_sharing"] == "private" and c["fpus"] != c["cores"]:
        raise UserError(f"{path}: [cluster] fpus: a private FPU per core needs fpus = cores ({c['cores']})")
    return out


def _memories(path: Path, raw: dict) -> dict:
    mems = {}
    for i, m in enumerate(raw.get("memory", [])):
        kind = m.get("kind")
        if kind not in MEMORY_SCHEMA:
            raise UserError(f"{path}: [[memory]] #{i + 1} kind: must be one of {', '.join(MEMORY_SCHEMA)}, got {kind!r}")
        where = f"memory {m.get('name', '#' + str(i + 1))}"
        for key, (typ, required) in MEMORY_SCHEMA[kind].items():
            if key not in m:
                raise UserError(f"{path}: [{where}] missing field '{key}'")
            _check(path, where, key, m[key], typ)
        unknown = set(m) - set(MEMORY_SCHEMA[kind])
        if unknown:
            raise UserError(f"{path}: [{where}] unknown field '{sorted(unknown)[0]}'")
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
    l1 = mems["l1"]
    if l1.size % (l1.banks * l1.bank_width):
        raise UserError(f"{path}: [memory l1] banks: size must be a multiple of banks x bank_width")
    if l1.size > 0x100000:
        raise UserError(f"{path}: [memory l1] size: at most 1 MiB (the test-and-set alias starts at +1 MiB)")
    return mems


def available() -> list[str]:
    return sorted(p.stem for p in PLATFORM_DIR.glob("*.toml"))


def load_file(path: Path) -> Platform:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read platform file ({e.strerror})") from None
    try:
        raw = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not valid TOML ({e})") from None
    validated = _validate(path, raw)
    mems = _memories(path, raw)
    validated["memory"] = raw.get("memory", [])
    return Platform(name=validated["platform"]["name"], path=path, sha256=hashlib.sha256(data).hexdigest(),
                    raw=validated, memories=mems)


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
