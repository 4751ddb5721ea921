"""How many times each stage runs: in one training step and in one continual-learning task.

This is the one walk of the task the latency tables, the whole-step comparison and the dashboard
read. With I = ceil(new_per_task / batch_new) steps per epoch and E epochs (harness.schedule):

    frozen stages     I x chunks_f   (epoch 1 only: later epochs read the new samples' latents back;
                      the second segment's I x chunks_f2)
    latents           I              (epoch 1: the replayed latents in, the new ones out to flash)
    latents.reuse     (E - 1) x I    (later epochs: the whole batch's latents from flash)
    forward stages    E x I x chunks_t
    backward stages   E x I x chunks_t; a weight gradient's first chunk writes the accumulators
                      ("" variant), the others add to them ("acc")
    update            E x I

The last step of an epoch may hold fewer new samples; it is counted as a full one (at most 1/I of
a task).
"""
from __future__ import annotations

import math

from harness.deploy.graph import Stage, Step

# Latency groups of the tables, by stage kind (phase "frozen" and "latents" first).
GROUPS = ("fw_frozen", "latents", "fw_tail", "wg", "ig", "ops_bw", "sgd")
BACKWARD = ("wg", "ig", "ops_bw")


def group(st: Stage) -> str:
    if st.phase == "frozen":
        return "fw_frozen"
    if st.phase == "latents":
        return "latents"
    if st.phase == "fw":
        return "fw_tail"
    if st.phase == "update":
        return "sgd"
    if st.kind in ("mm_wg", "dw_wg", "wg_cols"):
        return "wg"
    if st.kind in ("mm_ig", "dw_ig", "ig_cols", "ig_wt"):
        return "ig"
    return "ops_bw"


def iterations(step: Step) -> int:
    p = step.params
    return math.ceil(p.new_per_task / p.batch_new)


def step_counts(step: Step) -> dict[tuple[str, str], int]:
    """(stage, variant) -> runs in one epoch-1 step (what the whole-step program runs)."""
    out: dict[tuple[str, str], int] = {}
    for st in step.stages:
        if st.phase == "frozen":
            out[(st.name, "")] = step.chunks_f2 if st.repeat == "chunk_f2" else step.chunks_f
        elif st.phase in ("latents", "update") or st.repeat == "once":
            out[(st.name, "")] = 1
        elif st.kind in ("mm_wg", "dw_wg") and step.chunks_t > 1:
            out[(st.name, "")] = 1
            out[(st.name, "acc")] = step.chunks_t - 1
        else:
            out[(st.name, "")] = step.chunks_t
    return out


def task_counts(step: Step) -> dict[tuple[str, str], int]:
    """(stage, variant) -> runs in one task of E epochs of I steps."""
    i, e = iterations(step), step.params.epochs
    out = {}
    for key, n in step_counts(step).items():
        st = step.stage(key[0])
        if st.phase == "frozen" or st.phase == "latents":
            out[key] = i * n
        else:
            out[key] = e * i * n
    out[("latents.reuse", "")] = (e - 1) * i
    return out


def stage_of(step: Step, name: str) -> Stage:
    if name == "latents.reuse":
        return step.stage("latents")
    return step.stage(name)
