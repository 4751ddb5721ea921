"""Platform files load, validate, and reject bad fields with one-line errors naming file and field."""
from pathlib import Path

import pytest

from harness import platform as platmod
from harness.errors import UserError


@pytest.mark.parametrize("name", platmod.available())
def test_every_platform_loads(name):
    p = platmod.load(name)
    assert p.name == name
    assert p.cluster["cores"] >= 1
    l1, l2 = p.memory("l1"), p.memory("l2")
    assert l1.size % (l1.banks * l1.bank_width) == 0
    assert not (l1.base < l2.base + l2.size and l2.base < l1.base + l1.size)
    cfg = p.sim_config()
    assert cfg["mem.l2.base"] == l2.base and cfg["cluster.cores"] == p.cluster["cores"]


def test_pulp_open_is_what_gvsoc_models():
    p = platmod.load("pulp-open")
    assert p.memory("l1").size == 64 * 1024 and p.memory("l1").banks == 16
    assert p.cluster["fpus"] == 4 and p.cluster["cores"] == 8   # shared: core i uses FPU i mod 4
    assert p.isa["fp_regfile"] == "integer"
    assert p.cluster["tcdm_conflicts"] is False
    assert p.memory("l2").cluster_latency == 14 and p.timing["branch_taken"] == 3


def test_paper_platform_matches_method():
    p = platmod.load("paper")
    assert p.memory("l1").size == 256 * 1024
    assert p.memory("l2").size == 2 * 1024 * 1024
    assert p.memory("hyperram").size == 4 * 1024 * 1024
    assert p.memory("flash").size == 8 * 1024 * 1024
    assert p.cluster["fpus"] == p.cluster["cores"] == 8         # one FPU per core
    assert p.clock_hz == 450_000_000


def test_default_is_pulp_open():
    assert platmod.load().name == "pulp-open"


def _mutated(tmp_path: Path, old: str, new: str) -> Path:
    text = (platmod.PLATFORM_DIR / "pulp-open.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old,new,words", [
    ("cores = 8", "cores = -8", ["[cluster] cores", "non-negative integer"]),
    ("cores = 8", "cores = 0", ["[cluster] cores", "between 1 and 16"]),
    ("fpus = 4", "fpus = 9", ["[cluster] fpus", "between 1 and cores"]),
    ('misaligned = "extra_access"', 'misaligned = "sometimes"', ["[timing] misaligned", "extra_access, extra_cycle"]),
    ("jump = 2", "jump = 0", ["[timing] jump", "at least 1"]),
    ("bank_width = 4", "bank_width = 3", ["bank_width", "power of two"]),
    ("fetch_line = 16", "fetch_line = 24", ["[fc] fetch_line", "power of two"]),
    ("stdout = { base = 0x1A10F000, size = 0x1000 }", "stdout = 0x1A10F000", ["[peripherals] stdout", "base = "]),
    ("issue_cycles = 1", "issue_cycles = 1\nudma_read_cycles_per_byte = 1.0", ["[dma]", "nothing reads it"]),
    ("clock_hz = 50_000_000", "clocks_hz = 50_000_000", ["[platform]"]),
    ('fp_regfile = "integer"', 'fp_regfile = 3', ["[isa] fp_regfile"]),
    ("base = 0x10000000", "base = 0x1C000100", ["overlaps"]),
])
def test_bad_field_is_one_line_error(tmp_path, old, new, words):
    path = _mutated(tmp_path, old, new)
    with pytest.raises(UserError) as e:
        platmod.load_file(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    for w in words:
        assert w in msg


def test_missing_section(tmp_path):
    text = (platmod.PLATFORM_DIR / "pulp-open.toml").read_text()
    start = text.index("[timing]")
    end = text.index("[peripherals]")
    path = tmp_path / "nt.toml"
    path.write_text(text[:start] + text[end:])
    with pytest.raises(UserError, match=r"missing section \[timing\]"):
        platmod.load_file(path)


def test_unknown_platform_lists_choices():
    with pytest.raises(UserError, match="unknown platform 'nope'.*pulp-open"):
        platmod.load("nope")


def test_paper_inherits_pulp_open_and_lists_only_its_differences():
    import tomllib

    own = tomllib.loads((platmod.PLATFORM_DIR / "paper.toml").read_text())
    assert own["platform"]["inherits"] == "pulp-open"
    base, paper = platmod.load("pulp-open"), platmod.load("paper")
    flat = lambda p: {**p.sim_config(), **{f"{s}.{k}": v for s in ("platform", "isa", "fc", "cluster")  # noqa: E731
                                            for k, v in p.raw[s].items()}}
    a, b = flat(base), flat(paper)
    differ = sorted(k for k in a if a[k] != b.get(k))
    assert len(differ) == 9, differ     # name, description, models, clock, fpus, bank conflicts, 3 sizes
    # every value the file states differs from the inherited one: nothing is repeated
    for sec, table in own.items():
        if sec == "memory":
            for m in table:
                for k, v in m.items():
                    if k != "name":
                        assert base.memory(m["name"]).fields[k] != v, (m["name"], k)
        elif sec != "differences":
            for k, v in table.items():
                if k != "inherits":
                    assert base.raw[sec][k] != v, (sec, k)


def test_show_prints_the_resolved_file(tmp_path, capsys):
    from harness.cli import main

    assert main(["platform", "show", "paper"]) == 0
    text = capsys.readouterr().out
    path = tmp_path / "paper.toml"
    path.write_text(text)
    resolved, paper = platmod.load_file(path), platmod.load("paper")
    assert "inherits" not in text and resolved.raw == paper.raw and resolved.sim_config() == paper.sim_config()
    assert "[differences]" not in text       # pulp-open's departures from GVSoC are its own
    assert main(["platform", "list"]) == 0
    assert "paper (inherits pulp-open)" in capsys.readouterr().out


@pytest.mark.parametrize("text,words", [
    ('[platform]\ninherits = "nowhere"\n', ["inherits", "no platform 'nowhere'"]),
    ('[platform]\ninherits = "loop"\n', ["comes back to loop.toml"]),
])
def test_bad_inherits_is_one_line_error(tmp_path, text, words):
    path = tmp_path / "loop.toml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        platmod.load_file(path)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words)


def test_every_key_has_a_reader_that_reads_it():
    """Keys the simulator does not read are read by the module the schema names (its source
    mentions the key); the simulator's own are checked by tests/test_perturbation.py."""
    from harness import ROOT

    for sec, fields in platmod.schema().items():
        for key, (_kind, reader) in fields.items():
            if reader != platmod.SIM:
                src = (ROOT / reader).read_text()
                assert f'"{key}"' in src or f"'{key}'" in src, f"[{sec}] {key}: {reader} does not read it"


def test_simulator_refuses_what_the_loader_would_not_pass():
    from harness.backends import embedded

    for name in platmod.available():
        embedded.simulator().Machine(platmod.load(name).sim_config())   # reads every key it is given
