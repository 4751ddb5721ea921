"""How many times each kernel runs in one continual-learning task (latent replay).

Parameters (CLParams, per dataset, every one overridable):

    new_per_task   new samples in one task. CIFAR-10: 10000 (2 classes x 5000 training images).
                   CORe50: 24000, an assumption: 2 categories x 5 objects x 8 training sessions
                   x ~300 frames (CORe50 has ~300 frames per object and session, 8 of 11 sessions
                   are for training). Change it if the paper subsampled frames.
    replays        latents in the replay buffer: 3000 (CIFAR-10), 5000 (CORe50).
    batch          16 elements per training step, of which batch_replay = 4 come from the
                   buffer and batch - batch_replay = 12 are new samples.
    epochs         4 passes over the task's new samples.
    lr             SGD learning rate: 1e-3 (CIFAR-10), 1e-4 (CORe50), method.md.

Derivation of the counts for one task:

    iterations per epoch  I = ceil(new_per_task / 12)      (the last batch may hold fewer new samples;
                                                            it still takes 4 replays)
    samples through the trained tail per epoch  T = new_per_task + 4 * I
    trained layer, per task:  fw = E*T,  wg = E*T,  ig = E*T (0 for layers that read only the
                              latent: their input gradient is not needed),  update = E*I
                              (one SGD step on the partial weight block per batch)
    frozen layer, per task:   frozen_fw = new_per_task (the frozen part runs once per new
                              sample, in the first epoch; later epochs re-use those latents,
                              replayed latents never enter it)
    non-weight ops (activations are fused into the layers; dropout, pools, SE gating, residual
    adds are separate ops): fw like their layer group; bw = E*T where a gradient flows through.

Latency of a task = sum over (kernel, step) of count x cycles / clock (see task_cycles).
After a task the buffer replaces some latents with new ones (buffer_writes); that is a copy,
no MAC, and it re-uses latents the frozen forward has already produced.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from harness.errors import UserError
from harness.nets import Cut
from harness.nets.registry import dataset_spec


@dataclass(frozen=True)
class CLParams:
    dataset: str
    new_per_task: int
    replays: int
    batch: int = 16
    batch_replay: int = 4
    epochs: int = 4
    tasks: int = 5
    lr: float = 1e-3

    @property
    def batch_new(self) -> int:
        return self.batch - self.batch_replay

    def validate(self) -> "CLParams":
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not 0 < self.lr < 1:
            raise UserError(f"CL parameter lr must be a number in (0, 1), got {self.lr!r}")
        for name in ("new_per_task", "replays", "batch", "batch_replay", "epochs", "tasks"):
            v = getattr(self, name)
            low = 0 if name in ("replays", "batch_replay") else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise UserError(f"CL parameter {name} must be an integer >= {low}, got {v!r}")
        if self.batch_new < 1:
            raise UserError(f"batch ({self.batch}) must exceed the replayed part ({self.batch_replay})")
        if self.batch_replay and not self.replays:
            raise UserError("a batch with replayed elements needs a replay buffer (replays > 0)")
        return self


DEFAULTS: dict[str, CLParams] = {
    "cifar10": CLParams("cifar10", new_per_task=10_000, replays=3_000),
    "core50": CLParams("core50", new_per_task=24_000, replays=5_000, lr=1e-4),
}


def cl_params(dataset: str, **overrides) -> CLParams:
    dataset_spec(dataset)  # one-line error listing the valid datasets
    base = DEFAULTS[dataset]
    overrides = {k: v for k, v in overrides.items() if v is not None}
    valid = [f for f in base.__dataclass_fields__ if f != "dataset"]
    unknown = set(overrides) - set(valid)
    if unknown:
        raise UserError(f"unknown CL parameter '{sorted(unknown)[0]}'; valid: {', '.join(valid)}")
    return replace(base, **overrides).validate()


@dataclass(frozen=True)
class KernelCount:
    name: str        # weight layer or op name
    step: str        # fw | wg | ig | update | frozen_fw | bw
    count: int
    weight_layer: bool = True


@dataclass(frozen=True)
class TaskSchedule:
    cut: Cut
    params: CLParams
    iterations_per_epoch: int
    tail_samples_per_epoch: int
    counts: tuple[KernelCount, ...]

    @property
    def iterations(self) -> int:
        return self.params.epochs * self.iterations_per_epoch

    @property
    def tail_samples(self) -> int:
        return self.params.epochs * self.tail_samples_per_epoch

    def count(self, name: str, step: str) -> int:
        for k in self.counts:
            if k.name == name and k.step == step:
                return k.count
        return 0

    def as_table(self) -> list[dict]:
        return [dict(k.__dict__) for k in self.counts]


def task_schedule(cut: Cut, params: CLParams) -> TaskSchedule:
    params.validate()
    e = params.epochs
    iters = math.ceil(params.new_per_task / params.batch_new)
    tail = params.new_per_task + params.batch_replay * iters
    counts: list[KernelCount] = []
    trainable = set(id(op) for op in cut.trainable_ops)
    for op in cut.network.ops:
        if id(op) not in trainable:
            counts.append(KernelCount(op.name, "frozen_fw", params.new_per_task, op.has_weights))
            continue
        if op.has_weights:
            lay = op.layer
            counts.append(KernelCount(lay.name, "fw", e * tail))
            counts.append(KernelCount(lay.name, "wg", e * tail))
            counts.append(KernelCount(lay.name, "ig", e * tail if cut.needs_input_grad(lay) else 0))
            counts.append(KernelCount(lay.name, "update", e * iters))
        else:
            counts.append(KernelCount(op.name, "fw", e * tail, False))
            counts.append(KernelCount(op.name, "bw", e * tail if cut.op_needs_backward(op) else 0, False))
    return TaskSchedule(cut, params, iters, tail, tuple(counts))


def buffer_writes(params: CLParams, task: int) -> int:
    """Latents written into the buffer after task `task` (1-based): the first task fills it, task t
    keeps a 1/t share for the newest task so every task seen stays equally represented."""
    if task < 1:
        raise UserError(f"task index starts at 1, got {task}")
    return params.replays if task == 1 else params.replays // task


def task_cycles(schedule: TaskSchedule, cycles: Mapping[tuple[str, str], int],
                include_ops: bool = False) -> int:
    """Sum of count x cycles over the schedule's weight-layer kernels (and ops if asked).

    `cycles` maps (name, step) to the measured cycles of one run; a missing entry for a kernel
    that runs is an error, not a zero.
    """
    total = 0
    missing = []
    for k in schedule.counts:
        if k.count == 0 or (not k.weight_layer and not include_ops):
            continue
        c = cycles.get((k.name, k.step))
        if c is None:
            missing.append(f"{k.name}/{k.step}")
            continue
        total += k.count * c
    if missing:
        raise UserError(f"no cycle count for {len(missing)} kernels, e.g. {', '.join(missing[:3])}; "
                        "measure them first")
    return total
