"""From an experiment to the unique kernel runs it needs.

`kernels_for(cut, p, platform)` is the one place that says which kernels a replay cut runs, and how
many times each runs per task (which count of the CL schedule, harness.schedule, applies):

* weight layers: `harness.kernels.layers.layer_spec` for each step the layer runs (frozen layers
  only the forward, with the frozen placement);
* the non-weight work, whenever `harness.kernels.layers` provides it: `op_specs(op, network, step, p,
  platform)` for the activation fused after each weight layer and for residual adds, the SE pool and
  channel scale (step "fw" forward, "ig" backward), and `loss_spec(network, platform)`, the
  cross-entropy gradient, once per trained sample.

Each KernelUse carries the latency group it adds to (see harness.experiments.tables).
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

# Latency groups, in the order of the latency table's breakdown columns.
GROUPS = ("fw_frozen", "fw_tail", "wg", "ig", "ops_bw", "sgd")
_WEIGHT_GROUP = {"frozen_fw": "fw_frozen", "fw": "fw_tail", "wg": "wg", "ig": "ig", "update": "sgd"}


@dataclass(frozen=True)
class KernelUse:
    """Kernels run together for one entry of the task: one weight-layer step, or the non-weight work
    that goes with a schedule entry (an activation, an op, the loss)."""
    name: str                       # weight layer, op, or "<layer>.act" / "loss"
    step: str                       # frozen_fw | fw | wg | ig | update for weight layers; fw | bw for the rest
    specs: tuple[KernelSpec, ...]   # run one after the other; their cycles add up
    group: str                      # latency group (GROUPS)
    count_of: tuple[str, str]       # the schedule entry (name, step) whose count applies
    layer: Layer | None = None      # the weight layer, for weight-layer steps only

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

    Frozen weight layers run the dense forward kernel (frozen placement); trained ones run fw, wg,
    ig (unless they read only the latent) and update at (p_in, p_out) = harness.costmodel.layer_p
    (the classifier at 1). Ops come from op_specs/loss_spec when harness.kernels.layers has them."""
    op_specs = getattr(klayers, "op_specs", None)
    loss_spec = getattr(klayers, "loss_spec", None)
    net = cut.network
    trained = {id(op) for op in cut.trainable_ops}
    uses: list[KernelUse] = []

    def ops(name, sched_step, op, step, pk, group, count_of):
        if op_specs is not None:
            specs = _as_specs(op_specs(op, net, step, pk, platform))
            if specs:
                uses.append(KernelUse(name, sched_step, specs, group, count_of))

    for op in net.ops:
        is_trained = id(op) in trained
        lay = op.layer
        if lay is not None and not is_trained:
            spec = klayers.layer_spec(lay, "fw", 1.0, 1.0, platform, frozen=True)
            uses.append(KernelUse(lay.name, "frozen_fw", (spec,), "fw_frozen", (lay.name, "frozen_fw"), lay))
            ops(f"{lay.name}.act", "fw", op, "fw", 1.0, "fw_frozen", (lay.name, "frozen_fw"))
        elif lay is not None:
            p_in, p_out = layer_p(lay, p)
            for step in klayers.training_steps(True, not cut.needs_input_grad(lay)):
                uses.append(KernelUse(lay.name, step, (klayers.layer_spec(lay, step, p_in, p_out, platform),),
                                      _WEIGHT_GROUP[step], (lay.name, step), lay))
            ops(f"{lay.name}.act", "fw", op, "fw", 1.0, "fw_tail", (lay.name, "fw"))
            # the output gradient passes back through the activation before wg (and ig) can use it
            ops(f"{lay.name}.act", "bw", op, "ig", p_out, "ops_bw", (lay.name, "wg"))
        elif not is_trained:
            ops(op.name, "frozen_fw", op, "fw", 1.0, "fw_frozen", (op.name, "frozen_fw"))
        else:
            ops(op.name, "fw", op, "fw", 1.0, "fw_tail", (op.name, "fw"))
            if cut.op_needs_backward(op):
                ops(op.name, "bw", op, "ig", p, "ops_bw", (op.name, "bw"))
    if loss_spec is not None and op_specs is not None:
        last = net.layers[-1]
        uses.append(KernelUse("loss", "bw", _as_specs(loss_spec(net, platform)), "ops_bw", (last.name, "fw")))
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
                                          p_in=p, platform=platform, **g.extra))
    return out


def expand(exp: Experiment, jobs: int = 1) -> Plan:
    """The experiment's points and the unique runs they need (`jobs`: processes a deployed experiment's
    planning may build its steps' programs with)."""
    if exp.kind == "latency" and exp.deployment == "deployed":
        from harness.experiments import deployed
        pts = deployed.points(exp, jobs)
        return Plan(exp, tuple(pts), unique(j for pt in pts for j in pt.jobs))
    if exp.kind == "latency":
        pts = points(exp)
        return Plan(exp, tuple(pts), unique(sp for pt in pts for u in pt.uses for sp in u.specs))
    return Plan(exp, (), unique(kernel_specs(exp)))
