"""From an experiment to the unique kernel runs it needs.

`kernels_for(cut, p, platform)` is the one place that says which kernels a replay cut runs: for every
weight layer the kernel spec of each step it runs (harness.kernels.layers.layer_spec), and for the
non-weight ops (activations, SE gating, residual adds, pools) whatever
`harness.kernels.layers.op_specs(op, step, platform)` returns, once that function exists. Each use is
named by the schedule's (name, step) pair, so `harness.schedule` counts can be multiplied by it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from harness.costmodel import layer_p
from harness.errors import UserError
from harness.experiments.spec import Experiment, Sweep
from harness.kernels import layers as klayers
from harness.kernels import spec as kspec
from harness.kernels.spec import KernelSpec
from harness.nets import Cut, Layer, build_network, cut_at_layer_id
from harness.schedule import CLParams, cl_params


@dataclass(frozen=True)
class KernelUse:
    """The kernels behind one (name, step) entry of the CL schedule."""
    name: str                       # weight layer or op name, as in harness.schedule
    step: str                       # fw | wg | ig | update | frozen_fw (weight layers); fw | bw | frozen_fw (ops)
    specs: tuple[KernelSpec, ...]   # run one after the other; their cycles add up
    layer: Layer | None = None      # None for non-weight ops

    @property
    def weight_layer(self) -> bool:
        return self.layer is not None


def _as_specs(value) -> tuple[KernelSpec, ...]:
    if value is None:
        return ()
    if isinstance(value, KernelSpec):
        return (value,)
    return tuple(value)


def kernels_for(cut: Cut, p: float, platform: str) -> list[KernelUse]:
    """Every kernel one training task at replay cut `cut` and partiality `p` runs, forward order.

    Frozen weight layers run the dense forward kernel (p = 1); trained ones run fw, wg, ig (unless
    they read only the latent) and update at (p_in, p_out) = harness.costmodel.layer_p (the
    classifier at 1)."""
    op_specs = getattr(klayers, "op_specs", None)
    trained = {id(op) for op in cut.trainable_ops}
    uses: list[KernelUse] = []
    for op in cut.network.ops:
        is_trained = id(op) in trained
        if op.has_weights:
            lay = op.layer
            if not is_trained:
                uses.append(KernelUse(lay.name, "frozen_fw", (klayers.layer_spec(lay, "fw", 1.0, 1.0, platform),), lay))
                continue
            p_in, p_out = layer_p(lay, p)
            for step in klayers.training_steps(True, not cut.needs_input_grad(lay)):
                uses.append(KernelUse(lay.name, step, (klayers.layer_spec(lay, step, p_in, p_out, platform),), lay))
        elif op_specs is not None:
            steps = [("frozen_fw", "fw")] if not is_trained else \
                [("fw", "fw")] + ([("bw", "bw")] if cut.op_needs_backward(op) else [])
            for sched_step, step in steps:
                uses.append(KernelUse(op.name, sched_step, _as_specs(op_specs(op, step, platform))))
    return uses


@dataclass(frozen=True)
class Point:
    """One row of a latency table: platform x network x dataset x replay layer x p."""
    platform: str
    sweep: Sweep
    dataset: str
    layer_id: int
    p: float
    cut: Cut
    params: CLParams
    uses: tuple[KernelUse, ...]

    @property
    def net(self) -> str:
        return self.sweep.label

    @property
    def includes_ops(self) -> bool:
        return any(not u.weight_layer for u in self.uses)


@dataclass(frozen=True)
class Plan:
    experiment: Experiment
    points: tuple[Point, ...]                 # latency experiments only
    specs: dict                               # spec name -> KernelSpec, every unique kernel run

    def specs_of(self, use: KernelUse) -> list[KernelSpec]:
        return [self.specs[s.name] for s in use.specs]


def unique(specs: Iterable[KernelSpec]) -> dict:
    """Specs by name, first occurrence first. Two different specs under one name would be merged
    silently by a name-keyed cache, so that is an error."""
    out: dict = {}
    for sp in specs:
        seen = out.setdefault(sp.name, sp)
        if seen != sp:
            raise UserError(f"two different kernel specs share the name {sp.name}: {seen} and {sp}")
    return out


def points(exp: Experiment) -> list[Point]:
    out = []
    for platform in exp.platforms:
        for sw in exp.sweeps:
            for dataset in sw.datasets:
                net = build_network(sw.net, dataset, **sw.network)
                params = cl_params(dataset, **sw.cl)
                for layer_id in sw.layer_ids:
                    cut = cut_at_layer_id(net, layer_id)
                    for p in sw.p:
                        out.append(Point(platform, sw, dataset, layer_id, p, cut, params,
                                         tuple(kernels_for(cut, p, platform))))
    return out


def kernel_specs(exp: Experiment) -> list[KernelSpec]:
    out = []
    for platform in exp.platforms:
        for g in exp.kernels:
            for p in g.p:
                for step in g.steps:
                    out.append(kspec.make(g.kind, g.cin, g.cout, g.h, g.w, step, k=g.k, stride=g.stride, pad=g.pad,
                                          p_in=p, platform=platform))
    return out


def expand(exp: Experiment) -> Plan:
    if exp.kind == "latency":
        pts = points(exp)
        return Plan(exp, tuple(pts), unique(sp for pt in pts for u in pt.uses for sp in u.specs))
    return Plan(exp, (), unique(kernel_specs(exp)))
