"""Build, run and check deployed programs.

A stage job measures one stage of a training step on its own: its tensors where the step's memory
plan puts them (L2 tensors packed in a small arena of the stage's own, so that the same stage of
different cuts and partialities is the same program and is cached once), random inputs, outputs
checked against the NumPy reference (harness.deploy.reference). Stage jobs plug into the
experiment executor like kernel specs (name, platform, as_dict, macs, provenance, run).

`run_step` builds and runs one whole training step as one program, checks its loss, every weight
gradient and every updated weight against the reference step, and compares its cycles with the
composition of its stages measured on their own.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness import ROOT, energy, hosttime, runtime, toolchain
from harness import elf as elfmod
from harness import platform as platmod
from harness.backends import embedded
from harness.deploy import codegen
from harness.deploy import program as progmod
from harness.deploy import reference as ref
from harness.deploy import standin
from harness.deploy.codegen import Gen
from harness.deploy.graph import Stage, Step, build_step, deploy_kind
from harness.deploy.memplan import SCRATCH_MARGIN, Home, MemoryPlan, choose_step, plan_step, scratch_bytes
from harness.errors import UserError
from harness.kernels.microkernel import kernels as asm_kernels
from harness.kernels.runner import energy_row
from harness.kernels.tensors import from_image, to_image
from harness.nets import build_network, cut_at_layer_id
from harness.nets.registry import load_weights, net_label
from harness.schedule import cl_params

INCLUDE = ROOT / "pulp_kernels" / "include"
LIBRARY = ROOT / "pulp_kernels" / "deploy" / "odl_deploy.c"
# How every deployed source is compiled, the same for a program's build and a code check's objects (the
# objects are shared by these): every generated source includes odl_deploy.h first
DEFINES: list[str] = []   # the same program on every backend (the FC sleeps in wfi while the cluster trains)
COMPILE = {"opt": "2", "include_dirs": [INCLUDE], "defines": DEFINES, "pch": INCLUDE / "odl_deploy.h"}
SEED = 7
# The latents of the whole step's check against the NumPy frozen forward, normwise: each stage rounds where
# the reference does, so they differ by the FP16 rounding of a few accumulation orders (1e-4 to 2e-4 on the
# test points), while the random frozen weights leave a sample's latents within 0.3 % of another's: a
# chunk of samples left out of the forward (its share of a tensor never written) gave 2.4e-3
LATENT_TOL = 2.0 ** -10
POISON = b"\xff\x7f"   # an FP16 NaN, what the whole step's check fills the L2 arena with before the run


# ---------------------------------------------------------------- the step of a point

@dataclass(frozen=True)
class Point:
    """What identifies a deployed training step."""
    net: str
    dataset: str
    layer_id: int
    p: float
    platform: str
    placement: str = "fit"
    network: tuple = ()          # builder keyword arguments (sorted items)
    cl: tuple = ()               # CL parameter overrides (sorted items)
    chunks: tuple = ()           # (frozen, tail[, frozen second segment, its first stage]) samples per chunk
                                 # instead of the largest that fit
    weights: str = "random"      # "model": an ONNX model's initializers instead of random weights


_PLANS: dict = {}   # (point, n_f, n_t, n_f2, split) -> plan: a sweep's points hold their plans anyway


def plan_of(pt: Point, n_f: int | None = None, n_t: int | None = None, n_f2: int = 0, split: int = 0) -> MemoryPlan:
    """The memory plan of a point's step: with the largest chunks that fit (or the point's own), or
    with n_f, n_t samples per chunk (and n_f2 from the frozen stage `split` on). A stage job asks by its
    chunks for the plan its point chose; the choice is remembered under them too, so that a sweep's
    workers (forked after the planning) find it instead of planning the step again."""
    key = (pt, n_f, n_t, n_f2, split)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(pt, n_f, n_t, n_f2, split)
        if n_f is None:   # the same call plan_step made for the chosen chunks: the same plan
            st = plan.step
            _PLANS.setdefault((pt, st.n_f, st.n_t, st.n_f2, st.split), plan)
    return plan


plan_of.cache_clear = lambda: (_PLANS.clear(), _UNCHECKED.clear())   # as functools' caches have it (a test that patches the planner)


_UNCHECKED: dict = {}   # plan_of's key -> the plan before its code is checked (made by check_fits_in_parallel)


def _plan(pt: Point, n_f: int | None, n_t: int | None, n_f2: int = 0, split: int = 0) -> MemoryPlan:
    plan = _UNCHECKED.pop((pt, n_f, n_t, n_f2, split), None) or _unchecked_plan(pt, n_f, n_t, n_f2, split)
    return fit_code(plan)


def _unchecked_plan(pt: Point, n_f: int | None, n_t: int | None, n_f2: int = 0, split: int = 0) -> MemoryPlan:
    net = build_network(pt.net, pt.dataset, **dict(pt.network))
    cut = cut_at_layer_id(net, pt.layer_id)
    params = cl_params(pt.dataset, **dict(pt.cl))
    plat = platmod.load(pt.platform)
    if n_f is None and pt.chunks:
        n_f, n_t, n_f2, split = (tuple(pt.chunks) + (0, 0))[:4]
        check_chunks(pt, n_f, n_t)
    if n_f is None:
        return _chosen(cut, pt.p, params, plat, pt.placement)
    return plan_step(build_step(cut, pt.p, params, n_f=n_f, n_t=n_t, n_f2=n_f2, split=split), plat, pt.placement)


def _chosen(cut, p: float, params, plat, placement: str) -> MemoryPlan:
    """choose_step's plan, its chunks remembered beside the ELF cache: the search plans each point some ten
    times, and a sweep run again (after a change of the simulator alone, say) plans each once (fig4's 140
    points: 33 s of a cached run's planning). The memo is named by the plan of one sample a chunk, which
    holds everything the choice depends on: the cut's stages and tensors, the platform, the placement, the
    planner's budgets and the generating sources."""
    try:
        probe = plan_step(build_step(cut, p, params, n_f=1, n_t=1), plat, placement)
    except UserError:
        return choose_step(cut, p, params, plat, placement)
    memo = toolchain.elf_cache_dir() / "chunks" / f"{_plan_fingerprint(probe)}.json"
    try:
        n_f, n_t, n_f2, split = (int(x) for x in json.loads(memo.read_text())["chunks"])
        return plan_step(build_step(cut, p, params, n_f=n_f, n_t=n_t, n_f2=n_f2, split=split), plat, placement)
    except (OSError, ValueError, KeyError, TypeError):
        pass   # absent or damaged: chosen again
    plan = choose_step(cut, p, params, plat, placement)
    st = plan.step
    _write_memo(memo, {"chunks": [st.n_f, st.n_t, st.n_f2, st.split]})
    return plan


_TO_BUILD: list = []   # (point, plan) that check_fits_in_parallel's workers check (inherited by fork)


def check_fits_in_parallel(points: list, jobs: int) -> None:
    """Before a sweep plans its points in turn: every point's plan whose code must be checked (fit_code)
    and whose check is not remembered is checked by `jobs` forked workers side by side, the results
    remembered (l2_left). A check generates and compiles the stages' own programs, and where the plan
    stands, builds and remembers them as their runs would (StageJob.prebuild): the sweep then runs them
    without generating or compiling. A check a worker cannot make is left to the planning in turn, which
    says why."""
    todo = []
    for pt in dict.fromkeys(points):
        key = (pt, None, None, 0, 0)
        if key in _PLANS or key in _UNCHECKED:
            continue
        try:
            plan = _UNCHECKED[key] = _unchecked_plan(pt, None, None)
        except UserError:
            continue   # the planning in turn meets it again and reports it
        if plan.budget - plan.arena < SCRATCH_MARGIN and not _fit_memo(plan).exists():
            todo.append((pt, plan))
    if jobs < 2 or len(todo) < 2:
        return
    import concurrent.futures as cf

    from harness import procs
    _TO_BUILD[:] = todo
    pool = procs.fork_pool(min(jobs, len(todo)))
    try:
        with hosttime.idle():   # the workers report their own time
            for fut in cf.as_completed([pool.submit(_check_fit, i) for i in range(len(todo))]):
                hosttime.absorb(fut.result())
    except BaseException:
        procs.stop_pool(pool, interrupted=True)
        raise
    finally:
        _TO_BUILD.clear()
    procs.stop_pool(pool)


def _check_fit(i: int) -> dict:
    """One plan's check, from its stage jobs' programs; where the plan stands, the jobs' programs are built
    and remembered too, so that the sweep runs them without generating them again. Returns the host time
    it took (hosttime.take())."""
    pt, plan = _TO_BUILD[i]
    hosttime.reset()
    try:
        jobs = jobs_of(pt, plan)
        own = {}
        for j in jobs:   # a stage another point's check built (the frozen stages of a layer at every p): its object
            made = j.recall()
            own[(j.stage, j.variant)] = made.object if made is not None and made.object is not None \
                else j.program(plan)[3].files["st0.c"]
        left = l2_left(plan, own)
        if left is None or left >= plan.arena:   # the plan stands (fit_code)
            for j in jobs:
                j.prebuild()
    except UserError:
        pass   # the planning in turn meets it again and reports it
    return hosttime.take()


def check_chunks(pt: Point, frozen: int | None, tail: int | None) -> None:
    """Samples per frozen and per tail chunk as asked for (None: not asked): each must divide the samples it
    splits. Commands check them before planning the point's own chunks, which may build its program."""
    params = cl_params(pt.dataset, **dict(pt.cl))
    for what, n, of in (("frozen", frozen, params.batch_new), ("tail", tail, params.batch)):
        if n is not None and (n < 1 or of % n):
            divs = ", ".join(str(d) for d in range(1, of + 1) if of % d == 0)
            raise UserError(f"--chunk-{what} {n}: must divide the {of} samples it splits; choose one of {divs}")


# The plan reserves an estimate of its whole-step program's code (memplan.l2_budget). On table2's points it
# is 0.6 - 34 KiB over where the stages' tensors lie in L2, and 26 - 28 KiB under where most of them stream
# from external memory, whose stages carry the streaming code (MobileNetV2 CORe50 from layer 1: 263 KiB of
# code against 229 KiB estimated, its stages 4.1 KiB each on their instruction-cache boundaries). A plan
# near the estimate is checked against a stand-in of its program (l2_left).
FIT_ROUNDS = 4
CODE_GROWTH = 1024   # room left for the code a re-plan adds (a tensor more streamed from external memory)


def fit_code(plan: MemoryPlan) -> MemoryPlan:
    """`plan`, or the plan of its step with less L2 for the tensors, so that the whole step's program fits
    L2 beside them. A plan whose tensors leave the estimate's margin (memplan.SCRATCH_MARGIN) stands; any
    other is checked against what its program leaves (l2_left), and where the code leaves less L2 than the
    tensors need, planned again within that."""
    if plan.budget - plan.arena >= SCRATCH_MARGIN:
        return plan
    for _ in range(FIT_ROUNDS):
        left = l2_left(plan)
        if left is None or left >= plan.arena:
            return plan
        plan = plan_step(plan.step, plan.platform, plan.placement, budget=min(plan.budget, left) - CODE_GROWTH)
    raise UserError(f"{plan.step.cut.network.name} {plan.step.cut.label}: its whole-step program leaves {left:,} "
                    f"bytes of L2 and its tensors need {plan.arena:,} after {FIT_ROUNDS} plans; try --placement method "
                    f"or smaller chunks (--chunk-frozen, --chunk-tail)")


def l2_left(plan: MemoryPlan, own: dict | None = None) -> int | None:
    """Bytes of L2 the plan's whole-step program leaves for its tensors, at most: a stand-in of the program
    linked from its stages' own objects says at most 1 KiB less than the program leaves, never more
    (_standin_left; None where the step's check cannot be built: its gradients' copies would not fit
    HyperRAM). Remembered beside the ELF cache under everything the program is generated from: a sweep run
    again plans without generating its steps again (table 2's 28 tight plans took 25 s of a cached run's 36)."""
    memo = _fit_memo(plan)
    try:
        left = json.loads(memo.read_text())["left"]
        if left is None or isinstance(left, int):
            return left
    except (OSError, ValueError, KeyError, TypeError):
        pass   # absent or damaged: checked again
    try:
        left = _standin_left(plan, own or {})
    except UserError:
        left = None
    _write_memo(memo, {"left": left})
    return left


_OWN_OBJECTS: dict = {}   # (ELF cache, a stage program's content()) -> its object (the stages a process's checks met)


def _standin_left(plan: MemoryPlan, own: dict) -> int:
    """What the whole-step program leaves of L2, from a stand-in of its stages (harness.deploy.standin) made
    of their own programs' objects: the objects a sweep's stage programs link (compiled here where they are
    not yet), so that checking a plan compiles only the stages whose code ends near a boundary. `own`: (stage,
    variant) -> the source of its own program where it was generated already, or the object of that source
    where a build of the program kept it (check_fits_in_parallel's)."""
    plat, step = plan.platform, plan.step
    align = progmod.code_alignment(plat)
    objects = functools.partial(toolchain.objects, plat=plat, **COMPILE)
    calls = progmod.step_calls(step)
    main = _shared("main.c", progmod.step_main(plan, step))
    with tempfile.TemporaryDirectory(prefix="odl-fit-") as tmp:
        keys = [json.dumps([str(toolchain.elf_cache_dir()), content(plan, st, v)], sort_keys=True) for st, v in calls]
        todo = {}
        for k, (st, v) in zip(keys, calls):
            if k not in todo and not (k in _OWN_OBJECTS and _OWN_OBJECTS[k].exists()):
                given = own.get((st.name, v))
                if isinstance(given, Path):   # its object, kept by a build of its own program
                    _OWN_OBJECTS[k] = given
                    continue
                text = given or progmod.stage_program(Gen(local_plan(plan, st, v), plat), st, v).files["st0.c"]
                src = Path(tmp) / f"own{len(todo)}" / "st0.c"   # the stage program's file name: part of the object's
                src.parent.mkdir()
                src.write_text(text)
                todo[k] = src
        _OWN_OBJECTS.update(zip(todo, objects(list(todo.values()))))
        stages = [(f"st{i}", _OWN_OBJECTS[k], "st0") for i, k in enumerate(keys)]
        near = [i for i, (_, o, was) in enumerate(stages)
                if i == len(stages) - 1 or standin.near_boundary(standin.code_bytes(o, was), align)]
        gen = Gen(plan, plat)
        for i in near:
            st, v = calls[i]
            (Path(tmp) / f"st{i}.c").write_text(progmod.stage_file(gen.render(st, f"st{i}", v), align))
        for i, o in zip(near, objects([Path(tmp) / f"st{i}.c" for i in near])):
            stages[i] = (f"st{i}", o, f"st{i}")
        asm = Path(tmp) / "stages.S"
        asm.write_text(standin.assembly(stages))
        elf = elfmod.load(toolchain.build([asm], Path(tmp) / "standin.elf", plat, libraries=[main], fixed=_fixed(),
                                          **COMPILE))
    return elf.symbols["__l2_heap_end"] - elf.symbols["__l2_heap_start"]


def _fit_memo(plan: MemoryPlan) -> Path:
    return toolchain.elf_cache_dir() / "fit" / f"{_plan_fingerprint(plan)}.json"


def _plan_fingerprint(plan: MemoryPlan) -> str:
    """A digest of what a plan's whole-step program is generated from: the step's stages and tensors, where
    the plan puts each tensor, the platform and the sources that generate programs."""
    step = plan.step
    ident = {"stages": [[s.name, s.phase, s.kind, sorted(s.ins.items()), sorted(s.outs.items()), repr(sorted(s.attrs.items())),
                         s.repeat] for s in step.stages],
             "tensors": sorted([n, t.role, t.rows, t.cols, t.scope, t.samples(step)] for n, t in step.tensors.items()),
             "homes": sorted([n, h.memory, h.offset, h.nbytes, h.first, h.last] for n, h in plan.homes.items()),
             "plan": [plan.placement, plan.arena, plan.scratch, plan.scratch_size, plan.budget, sorted(plan.external_bytes.items())],
             "step": [repr(step.params), step.n_f, step.n_t, step.n_f2, step.split],
             "platform": plan.platform.sha256, "generator": generator_digest()}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def model_tensors(pt: Point) -> dict:
    """With `weights="model"`: the weight and bias tensors of every layer of the step in the deployer's
    layouts (harness.deploy.graph: pw/linear [C_out][C_in], conv [C_out][k k C_in], dw [k k][C], bias one
    row), from the model's initializers with BatchNorm folded; {} for random weights."""
    if pt.weights == "random":
        return {}
    if pt.weights != "model":
        raise UserError(f"weights must be 'random' or 'model', got {pt.weights!r}")
    lw = load_weights(pt.net, pt.dataset, **dict(pt.network))
    return _deploy_layout(plan_of(pt).step, lw)


def _deploy_layout(step: Step, lw: dict) -> dict:
    out = {}
    for st in step.stages:
        lay = st.layer
        if lay is None or f"w:{lay.name}" in out:
            continue
        w = np.asarray(lw[lay.name].w, dtype=np.float64)
        kind = deploy_kind(lay)
        if kind == "dw":
            out[f"w:{lay.name}"] = w[:, 0].reshape(lay.c_out, -1).T
        elif kind == "conv":
            out[f"w:{lay.name}"] = w.transpose(0, 2, 3, 1).reshape(lay.c_out, -1)
        else:
            out[f"w:{lay.name}"] = w.reshape(lay.c_out, -1)
        if lw[lay.name].b is not None:
            out[f"b:{lay.name}"] = np.asarray(lw[lay.name].b, dtype=np.float64)[None, :]
    return out


def weights_digest(pt: Point) -> str:
    """What a program's data depends on besides the seed: the model file when it gives the weights."""
    if pt.weights == "random":
        return "random"
    return build_network(pt.net, pt.dataset, **dict(pt.network)).config["sha256"]


# ---------------------------------------------------------------- one stage on its own

def stage_tensors(step: Step, st: Stage, variant: str) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of a stage program: what it reads (the accumulators too, when it adds to them)
    and what it writes."""
    ins = list(dict.fromkeys(st.ins.values()))
    outs = list(dict.fromkeys(st.outs.values()))
    if st.kind == "sgd":
        outs = [t for slot, t in st.ins.items() if slot in ("w", "b")]
    if variant == "acc":
        ins += [t for t in outs if t not in ins]
    return ins, outs


def local_plan(plan: MemoryPlan, st: Stage, variant: str) -> MemoryPlan:
    """The stage's tensors with the homes of `plan`, L2 ones packed from offset 0 in the order of the
    stage's slots (what content() describes them by, so that stages of the same content get the same
    addresses whatever their tensors are called), the slabs after them: a program that depends on the
    stage alone."""
    step = plan.step
    ins, outs = stage_tensors(step, st, variant)
    slot = {}
    for side, slots in (("in", st.ins), ("out", st.outs)):
        for k, t in sorted(slots.items()):
            slot.setdefault(t, f"{side}:{k}")
    names = sorted(set(ins) | set(outs), key=lambda n: slot.get(n, n))
    local = MemoryPlan(step, plan.placement, plan.platform, budget=plan.budget)
    off = 0
    ext = {"hyperram": 0, "flash": 0}
    if st.kind == "latents":   # the new latents' flash area first, the (possibly huge) replay buffer last
        lat = step.tensors[st.outs["latent"]]
        nbytes = lat.sample_bytes * step.params.batch_new
        local.homes["<new_latents>"] = Home("<new_latents>", "flash", 0, nbytes, 0, 0)
        ext["flash"] = (nbytes + 15) // 16 * 16
    for n in sorted(names, key=lambda n: (step.tensors[n].role == "replay", slot.get(n, n))):
        h = plan.home(n)
        if h.memory == "l2":
            local.homes[n] = Home(n, "l2", off, h.nbytes, 0, 0)
            off += (h.nbytes + 15) // 16 * 16
        else:
            local.homes[n] = Home(n, h.memory, ext[h.memory], h.nbytes, 0, 0)
            ext[h.memory] += (h.nbytes + 15) // 16 * 16
    if any(h.memory != "l2" for h in local.homes.values()):
        # the scratch, and the larger region the stage may stream through instead (the same bytes from the
        # same start: one or the other serves it), as large as in the step
        local.scratch = off
        local.scratch_size = plan.scratch_size or scratch_bytes(plan.platform)
        wide = max(Gen(plan, plan.platform).wide_slab(st), local.scratch_size)
        local.set_slab(st.name, off, wide)
        off += wide
    local.arena = off
    return local


def content(plan: MemoryPlan, st: Stage, variant: str, weights: str = "random") -> dict:
    """Everything the stage program depends on, without names of the network around it (the weights:
    "random", or the sha256 of the model that gives them, with the layer)."""
    step = plan.step
    ins, outs = stage_tensors(step, st, variant)

    def tdesc(n):
        t = step.tensors[n]
        return [t.role, t.cols, t.rows, t.scope, t.samples(step), plan.home(n).memory]
    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in st.attrs.items()}
    wide = Gen(plan, plan.platform).wide_slab(st)
    return {"kind": st.kind, "attrs": attrs, "repeat": st.repeat, "variant": variant,
            "ins": {k: tdesc(v) for k, v in sorted(st.ins.items())},
            "outs": {k: tdesc(v) for k, v in sorted(st.outs.items())},
            "samples": step.chunk_samples(st.repeat),
            "batch": [step.params.batch, step.params.batch_new, step.params.batch_replay],
            "platform": plan.platform.name, "seed": SEED,
            **({"scratch": plan.scratch_size} if plan.scratch_size > scratch_bytes(plan.platform)
               and any(plan.home(n).memory != "l2" for n in ins + outs) else {}),
            **({"slab": wide} if wide else {}),
            **({} if weights == "random" or not any(step.tensors[n].role in ("weight", "bias") for n in ins)
               else {"weights": [weights, st.layer.name if st.layer else ""]})}


def stage_macs(step: Step, st: Stage) -> int:
    return step.chunk_samples(st.repeat) * st.sample_macs()


@dataclass(eq=False)
class StageJob:
    """One stage program of a point's training step, as the experiment executor runs it."""
    point: Point
    n_f: int
    n_t: int
    stage: str
    variant: str
    key: dict = field(default_factory=dict)   # content(), the job's identity
    name: str = ""
    mac_count: int = 0
    n_f2: int = 0          # the frozen forward's second segment: samples per chunk, its first stage
    split: int = 0

    @property
    def platform(self) -> str:
        return self.point.platform

    def __eq__(self, other):
        return isinstance(other, StageJob) and self.name == other.name

    def __hash__(self):
        return hash(self.name)

    def as_dict(self) -> dict:
        return self.key

    def macs(self) -> int:
        return self.mac_count

    def context(self):
        plan = plan_of(self.point, self.n_f, self.n_t, self.n_f2, self.split)
        st = next(s for s in plan.step.stages + reuse_stages(plan.step) if s.name == self.stage)
        return plan, st

    def program(self, plan: MemoryPlan | None = None):
        """The stage's program, generated once per job object: a worker asks for it for the cache key
        (provenance) and then for the run. `plan`: the point's plan, given where it is being checked."""
        made = self.__dict__.get("_made")
        if made is None:
            if plan is None:
                plan, st = self.context()
            else:
                st = next(s for s in plan.step.stages + reuse_stages(plan.step) if s.name == self.stage)
            local = local_plan(plan, st, self.variant)
            made = self.__dict__["_made"] = (plan, local, st, progmod.stage_program(Gen(local, plan.platform), st,
                                                                                      self.variant))
        return made

    @staticmethod
    def warm(platform: str) -> None:
        """What the first stage job of a process on `platform` loads (templates, micro-kernels, the
        platform's runtime headers, the simulator and its energy classes), loaded before a sweep's
        workers fork, so that each inherits it instead of loading it again."""
        codegen.warm()
        asm_kernels()
        generator_digest()
        runtime.prepare(platmod.load(platform))
        embedded.version()
        energy.op_classes()

    def __getstate__(self):   # a job travels to a worker without what it generated here
        state = dict(self.__dict__)
        state.pop("_made", None)
        state.pop("_recalled", None)
        state.pop("_source", None)
        return state

    def source_sha256(self) -> str:
        """The hash of the program's sources: the recalled program's, or the generated one's (once a job)."""
        made = self.recall()
        if made is not None:
            return made.source_sha256
        if "_source" not in self.__dict__:
            plan, _, _, prog = self.program()
            self.__dict__["_source"] = _source_hash(prog.c)
            # Generated although its ELF may be in the cache: after a change of the harness's Python the
            # rows stay cached, but the memos (named by the generating sources) are gone; remembering the
            # ELF here lets the next run after a change of the simulator alone recall it, not generate it.
            elf = built(prog, plan.platform)
            if elf is not None:
                self._remember(self.__dict__["_source"], prog, plan.platform, {"elf": elf})
        return self.__dict__["_source"]

    def provenance(self) -> dict:
        tc = toolchain.find()
        return {"source_sha256": self.source_sha256(), "toolchain": tc.describe(), "platform_sha256":
                platmod.load(self.platform).run_sha256, "simulator": embedded.version(), "backend": "embedded",
                "defines": DEFINES}

    def run(self) -> dict:
        made = self.recall()
        if made is not None:
            plan, st = self.context()
            return run_stage_program(local_plan(plan, st, self.variant), st, self.variant, made, self.name,
                                     model_tensors(self.point))
        plan, local, st, prog = self.program()
        source = self.source_sha256()
        self.__dict__.pop("_made", None)   # a sweep of one process keeps thousands of jobs: not their programs
        cached_as: dict = {}
        row = run_stage_program(local, st, self.variant, prog, self.name, model_tensors(self.point), cached_as)
        self._remember(source, prog, plan.platform, cached_as)
        return row

    def prebuild(self) -> None:
        """Build the program (generated with program(plan) or from the point's plan) and remember it, so that
        the run recalls it: a sweep's code checks, which generate the stage programs anyway, build them."""
        if self.recall() is not None:
            return
        plan, _, _, prog = self.program()
        # its hash without source_sha256's look into the ELF cache: build() looks there itself
        source = self.__dict__.get("_source") or _source_hash(prog.c)
        self.__dict__.pop("_made", None)
        cached_as: dict = {}
        with tempfile.TemporaryDirectory(prefix="odl-deploy-") as tmp:
            build(prog, plan.platform, Path(tmp), cached_as)
        self._remember(source, prog, plan.platform, cached_as)

    def _remember(self, source: str, prog, plat, cached_as: dict) -> None:
        if cached_as.get("elf") is not None and cached_as["elf"].exists():
            obj = own_object(prog, plat)
            _write_memo(self._memo_path(), {"source_sha256": source, "elf": cached_as["elf"].name,
                                            "l1_bytes": prog.l1_bytes, "object": obj.name if obj else None})
        self.__dict__.pop("_recalled", None)

    # A rerun after a change of the simulator alone finds every program it built before, under the job's name
    # (its content: the same for every point whose step has this stage, as a sweep runs it once) and the sources
    # that generate programs: it runs the ELF without generating the C again, and a plan's code check takes the
    # stage's object for its stand-in.
    def _memo_path(self) -> Path:
        ident = {"name": self.name, "generator": generator_digest()}
        h = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return toolchain.elf_cache_dir() / "programs" / f"{h}.json"

    def recall(self) -> "Recalled | None":
        """The program this job built before (its ELF still in the cache), or None."""
        if "_recalled" not in self.__dict__:
            made = None
            try:
                memo = json.loads(self._memo_path().read_text())
                elf = toolchain.elf_cache_dir() / memo["elf"]
                if elf.exists():
                    obj = toolchain.elf_cache_dir() / "objects" / memo["object"] if memo.get("object") else None
                    made = Recalled(elf, int(memo["l1_bytes"]), str(memo["source_sha256"]),
                                    obj if obj is not None and obj.exists() else None)
            except (OSError, ValueError, KeyError, TypeError):
                made = None   # absent or damaged: generated again
            self.__dict__["_recalled"] = made
        return self.__dict__["_recalled"]


@dataclass(frozen=True)
class Recalled:
    """A stage program built before: its ELF in the cache, what its checks need of the program, the hash of
    its sources (the results cache's key) and its stage's object (None: not kept)."""
    elf: Path
    l1_bytes: int
    source_sha256: str
    object: Path | None = None


@lru_cache(maxsize=None)
def generator_digest() -> str:
    """What generates and builds a stage program besides the job's identity: the source tree (Python,
    templates, kernels, runtime, platforms and ISA tables; not the simulator's sources), the compiler
    and the defines."""
    from harness.experiments import cache as cachemod
    return hashlib.sha256(json.dumps({"files": cachemod.sources_digest(),
                                      "toolchain": toolchain.find().describe(), "defines": DEFINES}).encode()).hexdigest()


def _write_memo(path: Path, memo: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json.tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(memo, f)
    os.replace(tmp, path)   # concurrent runs of the same job write the same memo


def stage_jobs(pt: Point) -> tuple[MemoryPlan, list[StageJob]]:
    """The plan of a point and a job for every (stage, variant) its step and task run."""
    plan = plan_of(pt)
    return plan, jobs_of(pt, plan)


def jobs_of(pt: Point, plan: MemoryPlan) -> list[StageJob]:
    """A job for every (stage, variant) the step of `plan` (the point's) and its task run."""
    step = plan.step
    jobs = []
    for st in step.stages + reuse_stages(step):
        digest = weights_digest(pt)
        for v in progmod.variants(step, st):
            key = content(plan, st, v, digest)
            digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
            label = f"{net_label(pt.net)}.{st.name}{'.' + v if v else ''}"
            jobs.append(StageJob(pt, step.n_f, step.n_t, st.name, v, key, f"deploy_{label}_{digest}_{pt.platform}",
                                 stage_macs(step, st), step.n_f2, step.split))
    return jobs


def reuse_stages(step: Step) -> list[Stage]:
    """Stages the later epochs run instead of the frozen forward: the new samples' latents read back
    with the replayed ones (nothing written)."""
    lat = step.stage("latents")
    p = step.params
    return [Stage("latents.reuse", "latents", "latents", lat.ins, lat.outs,
                  {**lat.attrs, "first": 0, "count": p.batch, "write": 0}, "once")]


# ---------------------------------------------------------------- data

def random_env(step: Step, names: list[str], rng: np.random.Generator, given: dict | None = None) -> ref.Env:
    """Inputs for a program: weights scaled by 1/sqrt(fan-in), activations in [-1, 1], stashes in the
    range their activation produces (ReLU6 with exact 0 and 6, h-swish around its kinks). Tensors in
    `given` (a model's weights, model_tensors) take those values instead, rounded to FP16."""
    env = ref.Env(step)
    kinds = {f"w:{s.layer.name}": deploy_kind(s.layer) for s in step.stages if s.layer is not None}
    for n in names:
        t = step.tensors[n]
        rows = t.rows * (t.samples(step) if t.scope != "none" else 1)
        shape = (rows, t.cols)
        role = t.role
        if role == "weight":
            fan = t.rows if kinds.get(n) == "dw" else t.cols
            v = rng.standard_normal(shape) / np.sqrt(max(1, fan))
        elif role == "bias":
            v = rng.uniform(-0.1, 0.1, shape)
        elif role == "label":
            nc = next((x.cols for x in step.tensors.values() if x.name == "grad:logits"), 10)
            v = rng.integers(0, nc, shape).astype(np.float64)
        elif role == "stash":
            v = _stash_values(step, n, shape, rng)
        elif role in ("grad_w", "grad_b"):
            v = rng.uniform(-0.01, 0.01, shape)
        elif role == "grad":
            v = rng.uniform(-0.1, 0.1, shape)
        elif role == "replay":
            lat = next(x for x in step.tensors.values() if x.role == "latent")
            v = rng.uniform(-1, 1, (lat.rows * step.params.batch, t.cols))
        else:
            v = rng.uniform(-1, 1, shape)
        if given and n in given:
            v = given[n]
            if v.shape != shape:
                raise UserError(f"{n}: the model gives shape {v.shape}, the step needs {shape}")
        env.a[n] = ref.h(v) if role != "label" else v
    return env


def _stash_values(step: Step, name: str, shape, rng) -> np.ndarray:
    lay = name.split(":", 1)[1]
    act = next((s.attrs["act"] for s in step.stages if s.layer is not None and s.layer.name == lay and "act" in s.attrs),
               "none")
    if name.startswith("sx:"):
        return ref.act_fw("hswish", ref.h(rng.uniform(-4, 4, shape)))
    if act == "hswish":
        return rng.uniform(-4, 4, shape)
    if act == "relu":
        return np.maximum(rng.uniform(-1.0, 6.0, shape), 0.0)
    if act == "relu6":
        return np.clip(rng.uniform(-0.5, 6.5, shape), 0.0, 6.0)
    if act == "sigmoid":
        return rng.uniform(0.02, 0.98, shape)
    return rng.uniform(-1, 1, shape)


def image(step: Step, name: str, a: np.ndarray) -> bytes:
    t = step.tensors[name]
    if t.role == "label":
        return np.asarray(a[:, 0], dtype="<i4").tobytes()
    return to_image(a).astype("<u2").tobytes()


def _source_hash(c: str) -> str:
    h = hashlib.sha256(c.encode() + asm_kernels().encode() + LIBRARY.read_bytes())
    for p in sorted(INCLUDE.glob("*.h")):
        if p.name != "pulp_isa.h":
            h.update(p.read_bytes())
    return h.hexdigest()


SHARED_SOURCES = ROOT / "build" / "deploy"


def _shared(name: str, text: str) -> Path:
    """A source many programs share (the micro-kernels, a stage program's main.c), under a name made
    of its content: the toolchain compiles it once and links the object into each program."""
    stem, ext = name.rsplit(".", 1)
    path = SHARED_SOURCES / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.{ext}"
    if not path.exists():
        SHARED_SOURCES.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=SHARED_SOURCES, suffix=f".{ext}.tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)   # concurrent builds write the same bytes
    return path


def build(prog: progmod.Program, plat, workdir: Path, cached_as: dict | None = None) -> Path:
    """The program's ELF, from the cache where it was built before; its sources' objects are kept (toolchain
    share_objects), so that a stage compiled for a plan's code check is linked, not compiled, by its run."""
    return toolchain.build(_written(prog, workdir), workdir / "program.elf", plat, fixed=_fixed(), cache=True,
                           cached_as=cached_as, share_objects=True, **_linked(prog), **COMPILE)


def built(prog: progmod.Program, plat) -> Path | None:
    """The ELF the cache holds for the program (what build() would copy), or None: nothing compiled."""
    with tempfile.TemporaryDirectory(prefix="odl-deploy-") as tmp:
        return toolchain.cached_elf(_written(prog, Path(tmp)), plat, fixed=_fixed(), **_linked(prog), **COMPILE)


def own_object(prog: progmod.Program, plat) -> Path | None:
    """The shared object of a stage program's own source (st0.c) where the ELF cache keeps it, or None."""
    with tempfile.TemporaryDirectory(prefix="odl-deploy-") as tmp:
        src = Path(tmp) / "st0.c"
        src.write_text(prog.files["st0.c"])
        obj = toolchain.shared_object(src, plat, **COMPILE)
    return obj if obj.exists() else None


def _written(prog: progmod.Program, workdir: Path) -> list[Path]:
    """The program's files written into workdir (kept beside the ELF for reading); the sources of its own."""
    for name, text in prog.files.items():
        (workdir / name).write_text(text)
    return [workdir / name for name in prog.files if name != "main.c"]


def _linked(prog: progmod.Program) -> dict:
    return {"libraries": [_shared("main.c", prog.files["main.c"])]}


def _fixed() -> list[Path]:
    """The library and the micro-kernels, first and whole: at the same addresses in every deployed program."""
    return [LIBRARY, _shared("kernels.S", asm_kernels())]


def _where(elf: elfmod.Program, plan: MemoryPlan, name: str):
    h = plan.home(name)
    if h.memory == "l2":
        return elf.symbols["__l2_heap_start"] + h.offset
    return h.memory, h.offset


def _check_space(elf: elfmod.Program, plan: MemoryPlan, prog: progmod.Program, what: str):
    l2 = elf.symbols["__l2_heap_end"] - elf.symbols["__l2_heap_start"]
    l1 = elf.symbols["__l1_heap_end"] - elf.symbols["__l1_heap_start"]
    if plan.arena > l2:
        raise UserError(f"{what}: does not fit: its L2 tensors need {plan.arena} bytes and the program leaves {l2}")
    if prog.l1_bytes > l1:
        raise UserError(f"{what}: does not fit: its tiles need {prog.l1_bytes} bytes of L1 and the program leaves {l1}")


def _check_external(plan: MemoryPlan, nbytes: dict, what: str) -> None:
    """The tensors a program reads or writes in HyperRAM or flash lie within those memories: a stage
    whose own tensors exceed them cannot run on the platform (batch-wide stored activations of a
    large map can), which is a property of the point, reported as such."""
    for n, size in nbytes.items():
        h = plan.home(n)
        if h.memory == "l2":
            continue
        cap = plan.platform.memory(h.memory).size
        if h.offset + size > cap:
            raise UserError(f"{what}: does not fit: its tensors need {h.offset + size:,} bytes of {h.memory} "
                            f"({n} ends there) and platform {plan.platform.name} has {cap:,}")


def execute(prog: progmod.Program | Recalled, plan: MemoryPlan, env: ref.Env, inputs: list[str], outputs: list[str],
            what: str, timeline=None, kept: dict | None = None, poison: bool = False,
            cached_as: dict | None = None) -> tuple[dict, dict]:
    """Build and run `prog` with `inputs` preloaded from env; returns (result, {output: bytes}). With a
    `timeline` request the run is recorded (result["timeline"]). `kept` (program.kept_tensors): the
    program copies those outputs as their updates end, and they are read from the copies. With `poison`,
    the plan's L2 arena starts filled with FP16 NaNs, so that a stage reading bytes no stage wrote (a
    chunk's share of a tensor left unwritten) spoils the results instead of finding zeros."""
    step = plan.step
    plat = plan.platform
    images = {n: image(step, n, env.a[n]) for n in inputs}
    sizes = {n: step.tensors[n].nbytes(step) if step.tensors[n].scope != "none"
             else step.tensors[n].rows * step.tensors[n].pitch * 2 for n in outputs}
    _check_external(plan, {**sizes, **{n: len(b) for n, b in images.items()}}, what)
    with tempfile.TemporaryDirectory(prefix="odl-deploy-") as tmp:
        if isinstance(prog, Recalled):
            with hosttime.phase("compile"):
                elf_path = toolchain.copy_cached(prog.elf, Path(tmp) / "program.elf")
        else:
            elf_path = build(prog, plat, Path(tmp), cached_as)
        elf = elfmod.load(elf_path)
        _check_space(elf, plan, prog, what)
        pre = [(elf.symbols["__l2_heap_start"], POISON * (plan.arena // 2))] if poison else []
        for n in inputs:
            w = _where(elf, plan, n)
            data = images[n]
            pre.append((w[0], w[1], data) if isinstance(w, tuple) else (w, data))
        reads = {}
        for n in outputs:
            nbytes = sizes[n]
            w = ("hyperram", kept[n][1]) if kept and n in kept else _where(elf, plan, n)
            reads[n] = (w[0], w[1], nbytes) if isinstance(w, tuple) else (w, nbytes)
        if kept:
            pre.append((elf.symbols["odl_keep_on"], (1).to_bytes(4, "little")))
        res = embedded.run(elf_path, plat, read=reads, preload=pre, timeline=timeline)
    if res["status"] != "exit" or res["exit_code"] != 0:
        f = res.get("fault") or {}
        raise UserError(f"{what}: the program did not finish ({res['status']}: {f.get('kind', '')} {f.get('detail', '')})")
    return res, res.get("memory", {})


def compare(step: Step, name: str, raw: bytes, want, tol) -> dict:
    t = step.tensors[name]
    rows = want.shape[0]
    got, pad = from_image(raw, (rows, t.cols))
    got = got.astype(np.float64)
    err = np.abs(got - want)
    bad = ~(err <= tol)
    ratio = np.divide(err, tol, out=np.where(err > 0, np.inf, 0.0), where=tol > 0)
    d = {"max_abs_err": float(np.nanmax(err)) if err.size else 0.0, "mismatches": int(bad.sum()),
         "err_over_tol": float(np.nanmax(ratio)) if err.size else 0.0}
    if (pad != 0).any():
        d["pad_not_zero"] = int((pad != 0).sum())
    return d


def run_stage_program(plan: MemoryPlan, st: Stage, variant: str, prog: progmod.Program | Recalled, name: str,
                      given: dict | None = None, cached_as: dict | None = None) -> dict:
    step = plan.step
    ins, outs = stage_tensors(step, st, variant)
    rng = np.random.default_rng(SEED)
    env = random_env(step, ins, rng, given)
    chunk = 1 if variant == "acc" else 0
    before = {n: env.a[n].copy() for n in ins}
    res, mem = execute(prog, plan, env, ins, outs, st.name, cached_as=cached_as)
    with hosttime.phase("check"):
        return _checked_row(plan, st, variant, prog, name, env, before, chunk, res, mem)


def _checked_row(plan, st, variant, prog, name, env, before, chunk, res, mem) -> dict:
    step = plan.step
    env.a.update({n: v.copy() for n, v in before.items()})
    expected = ref.run_stage(env, st, chunk, variant)
    total, stats = progmod.parse(res["stdout"])
    if not stats:
        raise UserError(f"{st.name}: the program printed no stage line")
    s = stats[0]
    outputs, ok, worst = {}, True, 0.0
    for n, (want, tol) in expected.items():
        if n not in mem:
            continue
        t = step.tensors[n]
        sl = env._span(st, n, chunk)
        full_rows = env.a[n].shape[0]
        got_raw = mem[n]
        want_full = env.a[n].copy()
        tol_full = np.full_like(want_full, np.inf) if t.scope == "batch" else np.zeros_like(want_full)
        tol_full[sl, : tol.shape[1]] = tol
        d = compare(step, n, got_raw[: full_rows * t.pitch * 2], want_full, tol_full)
        outputs[n] = d
        ok = ok and d["mismatches"] == 0 and "pad_not_zero" not in d
        worst = max(worst, d["err_over_tol"] if np.isfinite(d["err_over_tol"]) else 0.0)
    macs = stage_macs(step, st)
    row = {"kernel": name, "stage": st.name, "variant": variant, "kind": st.kind, "platform": plan.platform.name,
           "cycles": s["cycles"], "compute_cycles": s["compute"], "dma_wait_cycles": s["dma_wait"],
           "ext_wait_cycles": s["ext_wait"], "overhead_cycles": s["cycles"] - s["compute"] - s["dma_wait"] - s["ext_wait"],
           "total_cycles": res["cycles"], "instructions": res["instructions"], "macs": macs,
           "mac_per_cycle": round(macs / s["cycles"], 4) if s["cycles"] else 0.0, "l1_bytes": prog.l1_bytes,
           "l2_bytes": plan.arena, "ok": bool(ok), "err_over_tol": worst, "outputs": outputs,
           "stalls": res["stalls"], "dmas": res["dmas"], "tiles": 0, "k_in": st.attrs.get("k_in", 0),
           "k_out": st.attrs.get("k_out", 0), "max_abs_err": max((d["max_abs_err"] for d in outputs.values()), default=0.0),
           "backend": res["backend"], "simulator": res["simulator"]}
    row.update(energy_row(res, s["cycles"], plan.platform, st.name))
    return row


# ---------------------------------------------------------------- a whole step

def run_step(pt: Point, tol_rel: float = 2.0 ** -5, timeline=None) -> dict:
    """One epoch-1 training step as one program, checked end to end: the loss and every weight
    gradient against the NumPy step (normwise, relative to the sum of |terms| where the terms of a
    gradient cancel; the tolerance is about wiring, see docs/deploy.md), every updated weight bit for
    bit against the SGD of the program's own gradient.
    Returns the measured stage cycles and the checks; with a `timeline` request (harness.timeline)
    also the run's recording, its stage functions named after their stages."""
    plan = plan_of(pt)
    step = plan.step
    gen = Gen(plan, plan.platform)
    prog = progmod.step_program(gen, step)
    if timeline is not None:
        timeline.stages = {sc.fn: stage_label(sc.stage, sc.variant) for sc in prog.codes}
    rng = np.random.default_rng(SEED)
    inputs = [n for n, t in step.tensors.items()
              if n in plan.homes and t.role in ("weight", "bias", "input", "label", "replay")]
    # the frozen input is one chunk's images; every chunk of the step reads the same buffer, so the
    # reference uses the same images for every chunk
    given = model_tensors(pt)
    env = random_env(step, inputs, rng, given)
    finals = [n for n, t in step.tensors.items() if t.role in ("grad_w", "grad_b", "loss") or
              (t.role in ("weight", "bias") and t.layer in {lay.name for lay in step.cut.trainable_layers})]
    # the frozen forward's result, checked on its own: the gradients barely depend on it where random frozen
    # weights make every sample's latents alike
    latents = [n for n, t in step.tensors.items() if t.role == "latent"] if step.frozen_stages else []
    # a gradient in L2 lives to its update only, the latents to the tail's forward (later stages reuse their
    # bytes): the program copies them then
    res, mem = execute(prog, plan, env, inputs, finals + latents, f"{pt.net} {step.cut.label} training step",
                       timeline, kept=progmod.kept_tensors(plan), poison=True)
    ref.run_step(env)
    checks = {}
    ok = True
    got = {}
    for n in finals:
        t = step.tensors[n]
        g, pad = from_image(mem[n][: env.a[n].shape[0] * t.pitch * 2], env.a[n].shape)
        got[n] = (g.astype(np.float64), pad)
    for n in latents:
        t = step.tensors[n]
        g, pad = from_image(mem[n][: env.a[n].shape[0] * t.pitch * 2], env.a[n].shape)
        want = env.a[n]
        rel = ref.rel_error(g.astype(np.float64), want)
        checks[n] = {"rel_err": rel, "max_abs_err": float(np.max(np.abs(g - want))),
                     "max_abs_ref": float(np.max(np.abs(want))), "ok": bool(rel <= LATENT_TOL and not (pad != 0).any())}
        ok = ok and checks[n]["ok"]
    init = random_env(step, inputs, np.random.default_rng(SEED), given).a
    for n in finals:
        t = step.tensors[n]
        g, pad = got[n]
        want = env.a[n]
        if t.role in ("weight", "bias"):
            # the SGD of the program's own gradient, bit for bit (the gradient is checked on its own)
            upd = next(s_ for s_ in step.stages if s_.kind == "sgd" and n in s_.ins.values())
            a = upd.attrs
            grad = got[upd.ins["dw" if t.role == "weight" else "db"]][0]
            exp = init[n].copy()
            if t.role == "weight":
                for wb, gb in ref.sgd_blocks(a):
                    exp[wb] = ref.sgd_value(exp[wb], grad[gb], a["lr"])
            else:
                exp[:, : a["k_out"]] = ref.sgd_value(exp[:, : a["k_out"]], grad[:, : a["k_out"]], a["lr"])
            diff = int(np.sum(g != exp))
            checks[n] = {"mismatches": diff, "ok": diff == 0 and not (pad != 0).any()}
        else:
            scale = env.mag.get(n)
            # a gradient accumulated over chunks: the terms of all of them make the scale
            rel = ref.rel_error(g, want, scale if scale is not None and scale.shape == want.shape else None)
            checks[n] = {"rel_err": rel, "max_abs_err": float(np.max(np.abs(g - want))) if want.size else 0.0,
                         "max_abs_ref": float(np.max(np.abs(want))) if want.size else 0.0,
                         "ok": bool(rel <= tol_rel and not (pad != 0).any())}
        ok = ok and checks[n]["ok"]
    total, stats = progmod.parse(res["stdout"])
    stages = []
    for sc, s in zip(prog.codes, stats):
        stages.append({"stage": sc.stage.name, "variant": sc.variant, "phase": sc.stage.phase, **s})
    cluster_cycles = sum(s["cycles"] for s in stats)
    return {"point": pt, "plan": plan, "cycles": total, "cluster_cycles": cluster_cycles,
            "stages": stages, "checks": checks, "ok": ok, "instructions": res["instructions"],
            "host_seconds": res["host_seconds"], "timeline": res.get("timeline"),
            **energy_row(res, cluster_cycles, plan.platform, "training step")}


def stage_label(st: Stage, variant: str = "") -> str:
    """A stage as a timeline names it: its phase and name (e.g. 'bw: blocks.8.pw.wg')."""
    return f"{st.phase}: {st.name}{' (' + variant + ')' if variant else ''}"
