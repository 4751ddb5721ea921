"""Every number the simulator reads changes what it does: each numeric key of both platforms
(timing, memories, DMA, cluster, fabric controller, buses, ISA switches, peripheral bases) is
perturbed in turn, and a probe program (tests/probe/probe.c; not in tests/programs/, as it needs
the -D values below) must then run differently: other cycle counts, other output, or a fault. A
key that the simulator ignored, or that some C++ typed again as a constant, fails here.

The probe built for the unperturbed platform runs first; when that run is unchanged and the key
also changes the generated headers or linker script, the probe is rebuilt for the perturbed
platform (core count, memory sizes). A candidate value the platform loader rejects is skipped;
each key must have at least one accepted value that changes the run. A choice of one value
(timing.div) has nothing to change to; test_an_unread_key_is_refused checks the simulator reads it."""
from __future__ import annotations

import pytest
import tomlkit

from harness import ROOT, runtime
from harness import platform as platmod
from harness.backends import embedded
from harness.errors import UserError

pytestmark = pytest.mark.e2e
PROBE = ROOT / "tests" / "probe" / "probe.c"
# Settings under which a key can show: L1 banks only matter where bank conflicts are modelled.
CONTEXT = {"memory.l1.banks": {"cluster.tcdm_conflicts": True},
           "memory.l1.bank_width": {"cluster.tcdm_conflicts": True}}


def _defines(plat) -> list[str]:
    fc, cl = plat.fc, plat.cluster
    quiet = [n for n in plat.peripherals if n not in platmod.PERIPHERALS]
    return [f"FC_SPREAD={fc['icache_size'] // fc['icache_ways']}",
            f"L0_SPREAD={cl['icache_l0_size'] // cl['icache_l0_ways']}",
            f"L1I_SPREAD={cl['icache_l1_size'] // cl['icache_l1_ways']}",
            f"FC_ALIAS_END={plat.memory('l2').fc_alias_size}u", f"TAS_OFFSET={plat.memory('l1').tas_offset}u",
            "QUIET_WINDOWS(X)=" + " ".join(f"X({n.upper()})" for n in quiet)]


def _keys(plat) -> list[str]:
    """Every numeric or switch key the simulator reads, as section.key or memory.<name>.key."""
    out = []
    for sec, fields in platmod.schema().items():
        for k, (kind, reader) in fields.items():
            if reader == platmod.SIM:
                out.append(f"{sec}.{k}")
    for m in plat.memories.values():
        out += [f"memory.{m.name}.{k}" for k, v in m.fields.items() if not isinstance(v, str)]
    out += [f"peripherals.{n}.base" for n in plat.peripherals]
    return out


def _candidates(value):
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, float):
        return [value * 2, value / 2]
    if isinstance(value, str):
        return []
    return [v for v in (value * 2, value // 2, value + 1, value - 1, 1) if v != value and v >= 0]


def _choices(plat, key):
    sec, k = key.split(".")
    kind = platmod.schema()[sec][k][0]
    value = plat.raw[sec][k]
    if isinstance(kind, tuple) and kind[0] == "choice":
        return [c for c in kind[1] if c != value]
    return _candidates(value)


def _set(doc, key, value):
    parts = key.split(".")
    if parts[0] == "memory":
        table = next(m for m in doc["memory"] if m["name"] == parts[1])
        table[parts[2]] = value
    elif parts[0] == "peripherals":
        doc["peripherals"][parts[1]][parts[2]] = value
    else:
        doc[parts[0]][parts[1]] = value


def _get(plat, key):
    parts = key.split(".")
    if parts[0] == "memory":
        return plat.memory(parts[1]).fields[parts[2]]
    if parts[0] == "peripherals":
        return plat.raw["peripherals"][parts[1]][parts[2]]
    return plat.raw[parts[0]][parts[1]]


def _outcome(elf, plat):
    try:
        r = embedded.run(elf, plat, max_cycles=50_000_000)
    except UserError as e:
        return ("load error", str(e))
    f = r.get("fault") or {}
    return (r["status"], r["exit_code"], r["stdout"], r["cycles"], f.get("kind"), f.get("detail"))


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    """Build the probe for a platform (cached by the runtime files it is built against)."""
    from harness import toolchain

    out = tmp_path_factory.mktemp("probe")
    cache = {}

    def build(plat):
        key = (tuple(_defines(plat)), str(runtime.template_values(plat) | {"sha": ""}))
        if key not in cache:
            elf = out / f"probe-{len(cache)}.elf"
            cache[key] = toolchain.build([PROBE], elf, plat, defines=_defines(plat))
        return cache[key]

    return build


def _variant(base_plat, tmp_path, n, settings: dict):
    doc = tomlkit.parse(base_plat.resolved_toml())
    for k, v in settings.items():
        _set(doc, k, v)
    path = tmp_path / f"v{n}" / f"{base_plat.name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(doc))
    return platmod.load_file(path)


@pytest.mark.parametrize("name", platmod.available())
def test_every_simulator_key_changes_the_probe(name, probes, tmp_path):
    base = platmod.load(name)
    base_elf = probes(base)
    ref = _outcome(base_elf, base)
    assert ref[0] == "exit" and ref[1] == 0, ref
    contexts = {}
    silent, n = [], 0
    for key in _keys(base):
        ctx = CONTEXT.get(key, {})
        ctx_key = tuple(sorted(ctx.items()))
        if ctx_key not in contexts:
            plat0 = _variant(base, tmp_path, n := n + 1, ctx) if ctx else base
            elf0 = probes(plat0)
            contexts[ctx_key] = (plat0, elf0, _outcome(elf0, plat0))
        plat0, elf0, ref0 = contexts[ctx_key]
        value = _get(plat0, key)
        cands = [c for c in _choices(plat0, key)] if key.count(".") == 1 else _candidates(value)
        if not cands:
            continue   # a choice of one value
        changed = False
        for cand in cands:
            try:
                plat = _variant(base, tmp_path, n := n + 1, {**ctx, key: cand})
            except UserError:
                continue
            if _outcome(elf0, plat) != ref0:
                changed = True
                break
            if runtime.template_values(plat) | {"sha": ""} != runtime.template_values(plat0) | {"sha": ""} \
                    or _defines(plat) != _defines(plat0):
                if _outcome(probes(plat), plat) != ref0:
                    changed = True
                    break
        if not changed:
            silent.append(f"{key} (tried {cands})")
    assert not silent, f"{name}: no accepted value of these keys changes the probe: {'; '.join(silent)}"


def test_an_unread_key_is_refused():
    """The simulator refuses a key it does not model, naming it."""
    sim = embedded.simulator()
    cfg = platmod.load("pulp-open").sim_config()
    sim.Machine(cfg)
    with pytest.raises(RuntimeError, match="'timing.warp_speed' is not modelled"):
        sim.Machine({**cfg, "timing.warp_speed": 3})
    with pytest.raises(RuntimeError, match="timing.div: unknown divider model"):
        sim.Machine({**cfg, "timing.div": 1})
    cfg.pop("timing.load_use")
    with pytest.raises(RuntimeError, match="missing 'timing.load_use'"):
        sim.Machine(cfg)
