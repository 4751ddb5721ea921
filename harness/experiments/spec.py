"""Experiments as data: experiments/<name>.toml, loaded and validated into an Experiment.

Two kinds (docs/experiments.md has the full schema):

* `latency`: [[sweep]] tables, each one network x datasets x replay layer_ids x p values; every point
  becomes a row of the latency table (memory, backward latency per sample, task latencies).
* `kernels`: [[kernel]] tables, each one layer geometry (kind, cin, cout, hw, k, stride, pad) run at
  every step and p of the experiment (or of the table, which may override both).

Both name their platforms in [experiment] platforms (default: pulp-open); `--platform` overrides.
A bad file is a one-line UserError naming the file and the key.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import ROOT, paths, validate
from harness import platform as platmod
from harness.errors import UserError
from harness.kernels import spec as kspec
from harness.nets import build_network, dataset_spec, net_spec
from harness.nets.onnx_import import is_onnx
from harness.nets.registry import check_params, net_label
from harness.schedule import cl_params
from harness.partial import kept_channels

EXPERIMENT_DIR = ROOT / "experiments"
KINDS = ("latency", "kernels")

_TOP = {"experiment", "sweep", "kernel"}
_EXPERIMENT = {"description", "kind", "platforms", "steps", "p", "placement", "deployment", "placements", "timeline"}
_TIMELINE = {"net", "dataset", "layer_id", "p", "placement"}
DEPLOYMENTS = ("deployed", "isolated")
PLACEMENTS = ("fit", "method")
_SWEEP = {"net", "datasets", "layer_ids", "p", "network", "cl", "weights"}
_KERNEL = {"kind", "cin", "cout", "hw", "k", "stride", "pad", "steps", "p", "placement"}


@dataclass(frozen=True)
class Sweep:
    net: str
    datasets: tuple[str, ...]
    layer_ids: tuple[int, ...]
    p: tuple[float, ...]
    network: dict = field(default_factory=dict, hash=False, compare=False)   # build_network overrides
    cl: dict = field(default_factory=dict, hash=False, compare=False)        # cl_params overrides
    weights: str = "random"     # "model": an ONNX model's initializers in the stage programs

    @property
    def label(self) -> str:
        """The network's name in result rows (an ONNX model by its file name); non-default
        hyper-parameters are spelled out."""
        name = net_label(self.net)
        if not self.network:
            return name
        return f"{name}({','.join(f'{k}={v}' for k, v in sorted(self.network.items()))})"


@dataclass(frozen=True)
class KernelGeometry:
    kind: str
    cin: int
    cout: int
    h: int
    w: int
    k: int | None = None
    stride: int = 1
    pad: int | tuple | None = None
    steps: tuple[str, ...] = ()
    p: tuple[float, ...] = ()
    placement: str | None = None    # KernelSpec.placement; None = the spec's default ("method")

    @property
    def extra(self) -> dict:
        return {} if self.placement is None else {"placement": self.placement}


@dataclass(frozen=True)
class Experiment:
    name: str
    path: Path
    kind: str
    description: str
    platforms: tuple[str, ...]
    sweeps: tuple[Sweep, ...] = ()
    kernels: tuple[KernelGeometry, ...] = ()
    deployment: str = "deployed"       # latency: whole-step deployment, or today's isolated per-op kernels
    placements: tuple[str, ...] = ("fit",)
    # deployed latency: the point whose whole training step also runs as one program with a timeline
    # (results/NAME/timeline.json): net, dataset, layer_id, p, placement
    timeline: dict | None = field(default=None, hash=False, compare=False)

    def with_platforms(self, platforms: tuple[str, ...]) -> "Experiment":
        return replace(self, platforms=platforms)

    def with_deployment(self, deployment: str) -> "Experiment":
        if deployment not in DEPLOYMENTS:
            raise UserError(f"unknown deployment '{deployment}'; choose {' or '.join(DEPLOYMENTS)}")
        if deployment == self.deployment:
            return self
        # Results of the other deployment go beside the experiment's own (results/table2-isolated/), so
        # that the two can be read side by side; a step timeline belongs to deployed steps.
        return replace(self, deployment=deployment, name=f"{self.name}-{deployment}",
                       timeline=self.timeline if deployment == "deployed" else None)


def available() -> list[str]:
    return sorted(p.stem for p in EXPERIMENT_DIR.glob("*.toml"))


def resolve(name_or_path: str) -> Path:
    """experiments/<name>.toml, or a path to a .toml file."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise UserError(f"experiment file {path} not found")
        return path
    path = EXPERIMENT_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise UserError(f"unknown experiment '{name_or_path}'; choose one of: {', '.join(available())} "
                        "(or give a path to a .toml file)")
    return path


def load(name_or_path: str) -> Experiment:
    path = resolve(name_or_path)
    text = paths.read_text(path, "", "save the experiment file as UTF-8 TOML")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}") from None
    where = str(path)
    _keys(where, "the top level", raw, _TOP)
    head = raw.get("experiment")
    if not isinstance(head, dict):
        raise UserError(f"{where}: missing the [experiment] table")
    _keys(where, "[experiment]", head, _EXPERIMENT)
    kind = head.get("kind")
    if kind not in KINDS:
        raise UserError(f"{where}: [experiment] kind must be one of {', '.join(KINDS)}, got {kind!r}")
    platforms = tuple(_list(where, "[experiment] platforms", head.get("platforms", [platmod.DEFAULT_PLATFORM]), str))
    for plat in platforms:
        platmod.load(plat)  # one-line error naming the valid platforms
    common = dict(name=path.stem, path=path, kind=kind, description=str(head.get("description", "")),
                  platforms=platforms)
    if kind == "latency":
        if "kernel" in raw or {"steps", "p", "placement"} & set(head):
            raise UserError(f"{where}: a latency experiment takes [[sweep]] tables (with their own p), "
                            "not [[kernel]] tables or [experiment] steps/p/placement")
        sweeps = raw.get("sweep")
        if not isinstance(sweeps, list) or not sweeps:
            raise UserError(f"{where}: a latency experiment needs at least one [[sweep]] table")
        deployment = head.get("deployment", "deployed")
        if deployment not in DEPLOYMENTS:
            raise UserError(f"{where}: [experiment] deployment must be one of {', '.join(DEPLOYMENTS)}, "
                            f"got {deployment!r}")
        placements = tuple(_list(where, "[experiment] placements", head.get("placements", ["fit"]), str))
        for pl in placements:
            if pl not in PLACEMENTS:
                raise UserError(f"{where}: [experiment] placements holds '{pl}'; choose from {', '.join(PLACEMENTS)}")
        sweeps = tuple(_sweep(where, i, s) for i, s in enumerate(sweeps, 1))
        timeline = _timeline(where, head["timeline"], sweeps, placements) if "timeline" in head else None
        if timeline is not None and deployment != "deployed":
            raise UserError(f"{where}: [experiment] timeline runs a deployed training step; it needs deployment "
                            "= \"deployed\"")
        return Experiment(**common, sweeps=sweeps, deployment=deployment, placements=placements, timeline=timeline)
    if "timeline" in head:
        raise UserError(f"{where}: [experiment] timeline belongs to latency experiments")
    if "sweep" in raw:
        raise UserError(f"{where}: a kernels experiment takes [[kernel]] tables, not [[sweep]]")
    if {"deployment", "placements"} & set(head):
        raise UserError(f"{where}: deployment and placements belong to latency experiments")
    tables = raw.get("kernel")
    if not isinstance(tables, list) or not tables:
        raise UserError(f"{where}: a kernels experiment needs at least one [[kernel]] table")
    steps = _steps(where, "[experiment] steps", head.get("steps", list(kspec.STEPS)))
    ps = _ps(where, "[experiment] p", head.get("p", [1.0]))
    placement = head.get("placement")
    return Experiment(**common, kernels=tuple(_kernel(where, i, t, steps, ps, placement)
                                              for i, t in enumerate(tables, 1)))


def _timeline(where: str, t, sweeps: tuple, placements: tuple) -> dict:
    """[experiment] timeline: one point of the sweeps (placement: the first of the experiment's by
    default)."""
    what = "[experiment] timeline"
    _entry(where, what, t, _TIMELINE, ("net", "dataset", "layer_id", "p"))
    pick = {"net": t["net"], "dataset": t["dataset"], "layer_id": t["layer_id"], "p": t["p"],
            "placement": t.get("placement", placements[0])}
    if isinstance(pick["p"], (int, float)) and not isinstance(pick["p"], bool):
        pick["p"] = float(pick["p"])
    for sw in sweeps:
        if (sw.net == pick["net"] and pick["dataset"] in sw.datasets and pick["layer_id"] in sw.layer_ids
                and pick["p"] in sw.p and pick["placement"] in placements):
            return pick
    points = "; ".join(f"{sw.net} {'/'.join(sw.datasets)} layer_id {'/'.join(map(str, sw.layer_ids))} "
                       f"p {'/'.join(f'{p:g}' for p in sw.p)}" for sw in sweeps)
    raise UserError(f"{where}: {what} names no point of the experiment ({pick['net']}, {pick['dataset']}, "
                    f"layer_id {pick['layer_id']}, p {pick['p']}, placement {pick['placement']}); choose one of: "
                    f"{points}, placement {'/'.join(placements)}")


def _keys(where: str, table: str, d: dict, valid: set) -> None:
    unknown = sorted(set(d) - valid)
    if unknown:
        raise UserError(f"{where}: unknown key '{unknown[0]}' in {table}; valid: {', '.join(sorted(valid))}")


def _list(where: str, what: str, v, typ) -> list:
    if not isinstance(v, list) or not v:
        raise UserError(f"{where}: {what} must be a non-empty list, got {v!r}")
    for x in v:
        ok = isinstance(x, typ) and not isinstance(x, bool)
        if typ is float:
            ok = isinstance(x, (int, float)) and not isinstance(x, bool)
        if not ok:
            raise UserError(f"{where}: {what} holds {x!r}, expected {typ.__name__} values")
    if len(set(v)) != len(v):
        raise UserError(f"{where}: {what} repeats a value: {v!r}")
    return v


def _ps(where: str, what: str, v) -> tuple[float, ...]:
    ps = tuple(float(x) for x in _list(where, what, v, float))
    for p in ps:
        try:
            kept_channels(p, 1)
        except UserError:
            raise UserError(f"{where}: {what} holds {p:g}; p must be in (0, 1]") from None
    return ps


def _steps(where: str, what: str, v) -> tuple[str, ...]:
    steps = tuple(_list(where, what, v, str))
    for st in steps:
        if st not in kspec.STEPS:
            raise UserError(f"{where}: {what} holds '{st}'; choose from {', '.join(kspec.STEPS)}")
    return steps


def _entry(where: str, table: str, t, allowed, required) -> None:
    """An [[array]] entry must be a table with known keys and every required one."""
    if not isinstance(t, dict):
        raise UserError(f"{where}: {table} is not a table")
    _keys(where, table, t, allowed)
    for key in required:
        if key not in t:
            raise UserError(f"{where}: {table} lacks '{key}'")


def _sweep(where: str, i: int, s) -> Sweep:
    table = f"[[sweep]] #{i}"
    _entry(where, table, s, _SWEEP, ("net", "datasets", "layer_ids", "p"))
    net = s["net"]
    if not isinstance(net, str):
        raise UserError(f"{where}: {table} net must be a string, got {net!r}")
    if is_onnx(net):
        net = _model_path(where, table, net)
    else:
        net_spec(net)
    datasets = tuple(_list(where, f"{table} datasets", s["datasets"], str))
    for d in datasets:
        dataset_spec(d)
    layer_ids = tuple(_list(where, f"{table} layer_ids", s["layer_ids"], int))
    for what in ("network", "cl"):
        if not isinstance(s.get(what, {}), dict):
            raise UserError(f"{where}: {table} {what} must be a table of overrides")
    # hyper-parameters and CL parameters are checked here, where the file and key can be named
    try:
        overrides = dict(s.get("network", {}))
        if is_onnx(net):
            build_network(net, datasets[0], **overrides)   # reads the model: its errors name the file and node
        else:
            for key in ("resolution", "num_classes"):   # build_network's own arguments
                if key in overrides:
                    validate.check_int(key, overrides.pop(key), 1, validate.MAX_EXTENT)
            check_params(net, overrides)
    except UserError as e:
        raise UserError(f"{where}: {table} network: {e}") from None
    weights = s.get("weights", "random")
    if weights not in ("random", "model") or (weights == "model" and not is_onnx(net)):
        raise UserError(f"{where}: {table} weights must be \"random\" or, for an ONNX model, \"model\"; "
                        f"got {weights!r}")
    for d in datasets:
        try:
            cl_params(d, **s.get("cl", {}))
        except UserError as e:
            raise UserError(f"{where}: {table} cl: {e}") from None
    network = {k: (tuple(v) if isinstance(v, list) else v) for k, v in s.get("network", {}).items()}
    return Sweep(net, datasets, layer_ids, _ps(where, f"{table} p", s["p"]), network, dict(s.get("cl", {})), weights)


def _model_path(where: str, table: str, net: str) -> str:
    """An ONNX model named in an experiment file: relative to the file's directory, else to the
    current directory; absolute in the Sweep."""
    given = Path(net)
    tries = [given] if given.is_absolute() else [Path(where).parent / given, Path.cwd() / given]
    for p in tries:
        if p.is_file():
            return str(p.resolve())
    raise UserError(f"{where}: {table} net: ONNX model {net} not found (looked in "
                    f"{' and '.join(str(t.parent.resolve()) for t in tries)}); paths are relative to the experiment "
                    f"file or the current directory")


def _kernel(where: str, i: int, t, steps, ps, placement) -> KernelGeometry:
    table = f"[[kernel]] #{i}"
    _entry(where, table, t, _KERNEL, ("kind", "cin", "cout", "hw"))
    hw = t["hw"]
    hw = [hw, hw] if isinstance(hw, int) else hw
    if not (isinstance(hw, list) and len(hw) == 2 and all(isinstance(x, int) for x in hw)):
        raise UserError(f"{where}: {table} hw must be H or [H, W], got {t['hw']!r}")
    pad = t.get("pad")
    g = KernelGeometry(t["kind"], t["cin"], t["cout"], hw[0], hw[1], t.get("k"), t.get("stride", 1),
                       tuple(pad) if isinstance(pad, list) else pad,
                       _steps(where, f"{table} steps", t["steps"]) if "steps" in t else steps,
                       _ps(where, f"{table} p", t["p"]) if "p" in t else ps, t.get("placement", placement))
    try:  # validate the geometry once, with kernels' own one-line messages
        for step in g.steps:
            kspec.make(g.kind, g.cin, g.cout, g.h, g.w, step, k=g.k, stride=g.stride, pad=g.pad, p_in=g.p[0],
                       **g.extra)
    except UserError as e:
        raise UserError(f"{where}: {table}: {e}") from None
    return g
