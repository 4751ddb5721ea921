"""The memory plan of a training step: a home and a lifetime for every tensor.

Lifetimes are intervals over the step's program (harness.deploy.graph.Step.sequence(): every stage of
every chunk in execution order). Weights and biases live for the whole step (they persist from step
to step); gradient accumulators from the first weight-gradient stage to the SGD update; everything
else from the stage that first touches it to the one that last does.

Homes. Two placements:

    fit     what a deployment does: every tensor stays in L2 when it fits, in this order of benefit:
            the per-chunk activations and gradients, the stored activations and stashes, the trained
            weights, the gradient accumulators, the new samples' input, the frozen weights (kept in L2
            for the whole task). What does not fit goes to external RAM (frozen weights: flash).
    method  method.md's placement: trained weights, gradient accumulators, stored activations and
            stashes in external RAM, frozen weights in flash; the activations flowing between layers
            in L2.

The replay buffer is always in flash. L2 tensors share one arena: offsets come from a best-fit
allocator over lifetimes (tensors are placed in order of benefit, largest first within a class, each
in the smallest gap that holds it among the tensors alive at the same time; alignment 16 bytes), so
two tensors share bytes only when their lifetimes do not overlap (a per-chunk tensor
is alive once per chunk, so tensors of one chunk reuse the bytes of another's). When even one-sample chunks do
not fit L2, the largest per-chunk activations move to external RAM and their stages stream them.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from harness.deploy.graph import CHUNKED, Stage, Step, Tensor, build_step
from harness.errors import UserError
from harness.nets import Cut
from harness.platform import Platform
from harness.schedule import CLParams

ALIGN = 16
PLACEMENTS = ("fit", "method")
# Slabs the stages use to move external tensors through L2 (reserved whenever a tensor is external):
# an eighth of L2 (256 KiB on `paper`), at least 128 KiB.


def scratch_bytes(plat: Platform) -> int:
    return max(128 * 1024, plat.memory("l2").size // 8) // 16 * 16

# L2 left unused when the slabs take what the tensors leave (the program's code is an estimate)
SCRATCH_MARGIN = 32 * 1024

# L2 the whole-step program needs besides its tensors: runtime, library, FC stack and data (MobileNetV2
# CIFAR-10's layer-4 step at p 1, whose slabs take all the rest, leaves 608 bytes with this; the library's
# functions are 22.5 KiB on `paper`, tests/test_deploy.py builds that program), and about this much code per
# stage function (measured: 2.2-2.8 KiB for the generated stages)
PROGRAM_BASE_BYTES = 26 * 1024
STAGE_CODE_BYTES = 3 * 1024
# and a forward product's register blocks besides (codegen._mm_blocks: two routines of about 500 bytes, in the
# stage's own code so that it meets the same cache sets alone as in the step)
MM_BLOCKS_CODE_BYTES = 1024

# Priority classes for placement "fit" (lower first).
_CLASS = {"act": 0, "grad": 0, "latent": 0, "label": 0, "loss": 0, "stored": 1, "stash": 1, "weight": 2,
          "bias": 2, "grad_w": 3, "grad_b": 3, "input": 4}


@dataclass(frozen=True)
class Home:
    tensor: str
    memory: str           # l2 | hyperram | flash
    offset: int           # in the L2 arena, or the byte address in the external memory
    nbytes: int
    first: int            # lifetime: indices into Step.sequence()
    last: int


@dataclass
class MemoryPlan:
    step: Step
    placement: str
    platform: Platform
    homes: dict = field(default_factory=dict)     # tensor -> Home
    arena: int = 0                                # bytes of the L2 arena (scratch included)
    scratch: int = 0                              # offset of the stages' L2 slabs (if any)
    scratch_size: int = 0                         # their bytes: at least scratch_bytes(), and the L2 left
    budget: int = 0
    external_bytes: dict = field(default_factory=dict)   # memory -> bytes used
    _slabs: dict = field(default_factory=dict, repr=False)   # stage -> its slab region (slab_of)

    def slab_of(self, stage: str) -> tuple[int, int]:
        """(offset, bytes) of the L2 a stage streams its external tensors through: the scratch, or a larger
        contiguous part of the arena that no tensor alive during any run of the stage holds (the tensors'
        lifetimes are what placed them: their bytes serve other tensors at other times, and so they can
        serve a stage's slabs). A stage the step does not run (the later epochs' latents) gets the scratch."""
        if stage not in self._slabs:
            self._slabs[stage] = self._largest_free(stage)
        return self._slabs[stage]

    def set_slab(self, stage: str, offset: int, nbytes: int) -> None:
        """A stage's slab region given outright (a stage program's plan, laid out like the step's)."""
        self._slabs[stage] = (offset, nbytes)

    def _largest_free(self, stage: str) -> tuple[int, int]:
        best = (self.scratch, self.scratch_size)
        if "<scratch>" not in self.homes:
            return best
        step = self.step
        if "<runs>" not in self._slabs:   # each stage's runs as a set of positions, once a plan (content() asks per stage)
            every: dict = {}
            for i, (st, _) in enumerate(step.sequence()):
                every[st.name] = every.get(st.name, 0) | 1 << i
            self._slabs["<runs>"] = every
        runs = self._slabs["<runs>"].get(stage, 0)
        if not runs:
            return best
        if "<masks>" not in self._slabs:
            life = lifetimes(step)
            self._slabs["<masks>"] = [(h.offset, h.offset + _align(h.nbytes), _mask(life[n])) for n, h in self.homes.items()
                                      if h.memory == "l2" and n != "<scratch>" and n in life]
        held = sorted((lo, hi) for lo, hi, m in self._slabs["<masks>"] if m & runs)
        at = self.scratch            # free from the scratch's start (the scratch is every stage's)
        for lo, hi in held + [(self.arena, self.arena)]:
            if lo - at > best[1]:
                best = (at, (lo - at) // ALIGN * ALIGN)
            at = max(at, hi)
        return best

    def fits(self) -> list[str]:
        """What does not fit the platform's external memories (empty when everything does)."""
        out = []
        for mem, used in self.external_bytes.items():
            cap = self.platform.memory(mem).size
            if used > cap:
                out.append(f"{mem}: needs {used} bytes, has {cap}")
        return out

    @property
    def external(self) -> list[Home]:
        return [h for h in self.homes.values() if h.memory != "l2"]

    def home(self, tensor: str) -> Home:
        return self.homes[tensor]

    def peak_l2(self) -> int:
        return self.arena

    def rows(self) -> list[dict]:
        seq = self.step.sequence()
        life = lifetimes(self.step)
        out = []
        for name, h in sorted(self.homes.items(), key=lambda kv: (kv[1].memory, kv[1].offset)):
            t = self.step.tensors.get(name)
            # when it holds data: a per-chunk tensor once per chunk (first..last is their hull)
            iv = life.get(name, [(h.first, h.last)])
            out.append({"tensor": name, "role": t.role if t else "scratch", "home": h.memory, "offset": h.offset,
                        "bytes": h.nbytes, "first": seq[h.first][0].name if 0 <= h.first < len(seq) else "",
                        "last": seq[h.last][0].name if 0 <= h.last < len(seq) else "",
                        "first_index": h.first, "last_index": h.last, "scope": t.scope if t else "",
                        "intervals": ";".join(f"{a}-{b}" for a, b in iv)})
        return out


def lifetimes(step: Step) -> dict[str, list[tuple[int, int]]]:
    """Intervals of Step.sequence() during which each tensor holds data. A per-chunk tensor is reborn in
    every chunk of its loop, so it has one interval per chunk (the same buffer serves each)."""
    seq = step.sequence()
    n = len(seq)
    # Walked a stage at a time, not a position at a time (planning a sweep walks thousands of
    # sequences): a tensor a stage keeps across chunks spans the stage's first to last position; one
    # reborn every chunk, each chunk's position. Spans are kept in the order the positional walk meets
    # them (first position, then the stage's tensor order).
    where: dict[int, list[tuple[int, int]]] = {}
    stages: dict[int, Stage] = {}
    for i, (st, chunk) in enumerate(seq):
        where.setdefault(id(st), []).append((i, chunk))
        stages[id(st)] = st
    spans: dict[tuple[str, int], list[int]] = {}
    rank: dict[tuple[str, int], int] = {}
    k = step.n_f2 // step.n_f if step.split else 1
    for key_st, pos in where.items():
        st = stages[key_st]
        for r, t in enumerate(st.tensors):
            scope = step.tensors[t].scope
            if scope == st.repeat and st.repeat in CHUNKED:
                parts = [((t, c), i, i) for i, c in pos]
            elif scope == "chunk_f2" and st.repeat == "chunk_f":   # a first-segment stage fills its share
                parts = [((t, c // k), i, i) for i, c in pos]
            else:
                parts = [((t, -1), pos[0][0], pos[-1][0])]
            for key, lo, hi in parts:
                iv = spans.get(key)
                if iv is None:
                    spans[key] = [lo, hi]
                    rank[key] = r
                else:
                    if lo < iv[0]:
                        iv[0], rank[key] = lo, r
                    if hi > iv[1]:
                        iv[1] = hi
    life: dict[str, list[tuple[int, int]]] = {}
    for (t, _), (lo, hi) in sorted(spans.items(), key=lambda kv: (kv[1][0], rank[kv[0]])):
        life.setdefault(t, []).append((lo, hi))
    return role_lifetimes(step, life, n)


def role_lifetimes(step: Step, life: dict[str, list[tuple[int, int]]], n: int) -> dict[str, list[tuple[int, int]]]:
    """`life` (the intervals the stages' uses give, over n positions) with what the tensors' roles keep
    longer: parameters and replay data the whole step, inputs from its start, the loss to its end."""
    for name, t in step.tensors.items():
        if t.role in ("weight", "bias", "replay"):
            life[name] = [(0, n - 1)]
        elif t.role in ("input", "label") and name in life:
            life[name] = [(0, max(hi for _, hi in life[name]))]
        elif t.role == "loss" and name in life:      # a result of the step: kept to its end
            life[name] = [(life[name][0][0], n - 1)]
    return life


def overlaps(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(not (h1 < l2 or l1 > h2) for l1, h1 in a for l2, h2 in b)


def _mask(life: list[tuple[int, int]]) -> int:
    """The positions of Step.sequence() in the intervals, as the bits of an integer: two lifetimes
    overlap (`overlaps`) when their masks share a bit, one AND instead of comparing every pair of
    intervals (a per-chunk tensor has one per chunk; planning a sweep asks this millions of times)."""
    m = 0
    for lo, hi in life:
        m |= (1 << (hi + 1)) - (1 << lo)
    return m


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan_step(step: Step, plat: Platform, placement: str = "fit", budget: int | None = None) -> MemoryPlan:
    """Homes and L2 offsets for every tensor of `step` on `plat`. Tensors are placed one at a time, in
    order of benefit (see the module text) and largest first within a class, each into the smallest
    gap of the arena built so far; one that would push the arena past the L2 budget goes to external
    memory instead. When anything is external, the stages' L2 slabs are reserved first."""
    if placement not in PLACEMENTS:
        raise UserError(f"unknown placement '{placement}'; choose {' or '.join(PLACEMENTS)}")
    budget = l2_budget(step, plat) if budget is None else budget
    life = lifetimes(step)
    n_seq = len(step.sequence())
    trained = {lay.name for lay in step.cut.trainable_layers}
    fixed: dict[str, str] = {}
    for name, t in step.tensors.items():
        if name not in life:
            continue
        frozen_param = t.role in ("weight", "bias") and t.layer not in trained
        if t.role == "replay":
            fixed[name] = "flash"
        elif frozen_param and placement == "method":
            fixed[name] = "flash"
        elif placement == "method" and t.role in ("weight", "bias", "grad_w", "grad_b", "stored", "stash"):
            fixed[name] = "hyperram"
    order = sorted((n for n in life if n not in fixed),
                   key=lambda n: (_class(step, n, trained), -step.tensors[n].nbytes(step), n))
    for scratch in ((False, True) if not fixed else (True,)):
        arena = _Arena(budget)
        if scratch:
            arena.place("<scratch>", scratch_bytes(plat), [(0, n_seq - 1)])
        ext = dict(fixed)
        for name in order:
            t = step.tensors[name]
            if arena.place(name, t.nbytes(step), life[name]) is None:
                ext[name] = "flash" if t.role in ("weight", "bias") and t.layer not in trained else "hyperram"
        if not ext or scratch:
            break
    # The slabs sit below every other L2 tensor (placed first, alive throughout): the L2 the tensors
    # leave (less a margin for the estimate of the program's code) widens them, so that a stage can
    # bring larger external tensors into L2 whole (harness.deploy.codegen.Gen.streams).
    extra = max(0, budget - arena.size - SCRATCH_MARGIN) // ALIGN * ALIGN if "<scratch>" in arena.offsets else 0
    plan = MemoryPlan(step, placement, plat, budget=budget, arena=arena.size + extra)
    for name, off in arena.offsets.items():
        if name == "<scratch>":
            plan.scratch = off
            plan.scratch_size = scratch_bytes(plat) + extra
            plan.homes[name] = Home(name, "l2", off, plan.scratch_size, 0, n_seq - 1)
            continue
        iv = life[name]
        plan.homes[name] = Home(name, "l2", off + extra, step.tensors[name].nbytes(step), iv[0][0], iv[-1][1])
    addr = {"hyperram": 0, "flash": 0}
    # epoch 1 keeps the new samples' latents in flash for the later epochs (the batch's share is written
    # per step); the replay buffer goes last: a stage reads its first latents, which stay within the flash's size
    for name in sorted(ext, key=lambda n: (ext[n], step.tensors[n].role == "replay", n)):
        mem = ext[name]
        t = step.tensors[name]
        nbytes = t.nbytes(step) if t.role != "replay" else t.sample_bytes * step.params.replays
        iv = life[name]
        if t.role == "replay":
            lat = next(x for x in step.tensors.values() if x.role == "latent")
            nl = _align(lat.sample_bytes * step.params.batch_new)
            plan.homes["<new_latents>"] = Home("<new_latents>", "flash", addr["flash"], nl, 0, n_seq - 1)
            addr["flash"] += nl
        plan.homes[name] = Home(name, mem, addr[mem], nbytes, iv[0][0], iv[-1][1])
        addr[mem] += _align(nbytes)
    plan.external_bytes = addr
    return plan


def l2_budget(step: Step, plat: Platform) -> int:
    """L2 left for the tensors of `step`'s whole program (its code is in L2 too)."""
    funcs = len(step.stages) + (sum(1 for s in step.stages if s.kind in ("mm_wg", "dw_wg")) if step.chunks_t > 1 else 0)
    blocks = sum(1 for s in step.stages if s.kind == "mm_fw")
    return (plat.memory("l2").size - plat.fc["stack_size"] - PROGRAM_BASE_BYTES - STAGE_CODE_BYTES * funcs
            - MM_BLOCKS_CODE_BYTES * blocks) // 16 * 16


class _Arena:
    """Incremental best fit: each tensor goes to the smallest gap, among the tensors already placed
    whose lifetimes overlap its own, that holds it; None when the arena would exceed the budget."""

    def __init__(self, budget: int):
        self.budget = budget
        self.items: list[tuple[int, int, int]] = []   # offset, end, lifetime as a set of positions (_mask); sorted
        self.offsets: dict[str, int] = {}
        self.size = 0

    def place(self, name: str, nbytes: int, life: list[tuple[int, int]]) -> int | None:
        size = _align(nbytes)
        live = _mask(life)
        best, best_gap, cur = None, None, 0
        for o, e, lf in self.items:     # by offset: the tensors alive with this one, bottom up
            if lf & live:
                if o - cur >= size and (best_gap is None or o - cur < best_gap):
                    best, best_gap = cur, o - cur
                if e > cur:
                    cur = e
        if best is None:
            best = cur
        if best + size > self.budget:
            return None
        bisect.insort(self.items, (best, best + size, live))
        self.offsets[name] = best
        self.size = max(self.size, best + size)
        return best


def _class(step: Step, name: str, trained: set) -> int:
    t = step.tensors[name]
    if t.role in ("weight", "bias") and t.layer not in trained:
        return 5
    return _CLASS.get(t.role, 0)


def choose_step(cut: Cut, p: float, params: CLParams, plat: Platform, placement: str = "fit") -> MemoryPlan:
    """The plan with the largest chunks whose per-chunk activations fit in L2 (tail chunks first,
    then frozen chunks), so that each weight tile serves as many samples as memory allows; with
    placement fit, the largest frozen chunk that also leaves the frozen weights in L2 when one does."""
    def divisors(n):
        return [d for d in range(n, 0, -1) if n % d == 0]

    tried: dict = {}

    def fits(n_f, n_t, n_f2=0, split=0):
        key = (n_f, n_t, n_f2, split)
        if key in tried:      # the tail search's (1, best_t) comes again as the frozen search's last
            return tried[key]
        step = build_step(cut, p, params, n_f=n_f, n_t=n_t, n_f2=n_f2, split=split)
        try:
            plan = plan_step(step, plat, placement)
        except UserError:
            plan = None
        spilled = plan is not None and [h for h in plan.external if h.tensor in step.tensors
                                        and step.tensors[h.tensor].role in ("act", "grad", "latent")]
        tried[key] = None if spilled else plan
        return tried[key]

    # Every frozen chunk reads all frozen weights: from flash when the larger chunks' activations
    # leave them no room in L2. The largest chunk that keeps them in L2 reads them 8x faster, which
    # outweighs running each frozen stage a few more times (PhiNet CIFAR-10 from layer 2 on paper:
    # 14.15M frozen cycles a step in one chunk of 12 with 304 KB of weights in flash, 13.69M in two
    # chunks of 6 with none).
    def frozen_in_flash(plan):
        return any(h.memory == "flash" and h.tensor in plan.step.tensors
                   and plan.step.tensors[h.tensor].role in ("weight", "bias") for h in plan.external)

    best_t = next((n for n in divisors(params.batch) if fits(1, n)), None)
    if best_t is None:
        best_t = 1
    largest = None     # the largest frozen chunk that fits; smaller ones are planned only while it is wanted
    for n_f in divisors(params.batch_new):
        plan = fits(n_f, best_t)
        if plan is None:
            continue
        if placement != "fit" or not frozen_in_flash(plan):
            return _second_segment(plan, fits, frozen_in_flash, placement)
        largest = largest or plan
    if largest is not None:
        return _second_segment(largest, fits, frozen_in_flash, placement)
    # Even one sample at a time spills activations: keep the spill (streamed from external RAM).
    return plan_step(build_step(cut, p, params, n_f=1, n_t=best_t), plat, placement)


_SECOND: dict = {}   # a frozen forward (its stages, chunks, platform, placement) -> the second segment it took


def _second_segment(base: MemoryPlan, fits, frozen_in_flash, placement: str) -> MemoryPlan:
    """`base`, or the plan whose frozen forward runs its deeper stages in larger chunks where that fits: the
    first layers' large maps keep the frozen chunk small, the deep layers' small maps leave room for more
    samples, which then share each weight tile (its transfer from flash or L2, its blocks' start and end).
    The candidates: a larger chunk (a multiple of base's that divides the batch's new samples) from a stage
    where only one tensor crosses from the first segment (a block's output: what the larger chunk holds
    besides its own), scored by the multiply-accumulates they run in the larger chunks, each weighted by the
    share of the chunks it saves (1 - n_f / n_f2); the best-scored that fits without spilling activations or
    moving frozen weights base keeps in L2 to flash. Fitting is not monotone in the stage (a later start
    can leave a worse packing), so the candidates are tried in the order of their scores; the winner is
    remembered for the same frozen forward (another partiality of the same cut tries it first)."""
    step = base.step
    frozen = step.frozen_stages
    n_f, n_t, new = step.n_f, step.n_t, step.params.batch_new
    if len(frozen) < 2 or n_f == new:
        return base
    keep_l2 = placement == "fit" and not frozen_in_flash(base)
    # The scratch slabs lie in the L2 the step's tensors leave at its peak: larger chunks for the frozen forward
    # may take some of it, but not what a later stage needs to bring the tensors it streams whole (MobileNetV2
    # CORe50 from layer 4 on, placement method: its slabs went from 587 KB to 275 KB and the task took 7 %
    # longer; from layer 1 a classifier's 26 KB of weights lose nothing)
    need = max((sum(step.tensors[t].nbytes(step) if step.tensors[t].scope != "none" else
                    step.tensors[t].rows * step.tensors[t].pitch * 2
                    for t in st.tensors if t in base.homes and base.home(t).memory != "l2")
                for st in step.stages if st.phase not in ("frozen", "latents")), default=0)
    floor = min(base.scratch_size, need)

    def ok(n_f2, split):
        plan = fits(n_f, n_t, n_f2, split)
        if plan is None or (keep_l2 and frozen_in_flash(plan)) or plan.scratch_size < floor:
            return None
        return plan
    key = (repr([(st.name, st.kind, sorted(st.attrs.items())) for st in frozen]), n_f, n_t, new,
           base.platform.name, placement, keep_l2, floor)
    known = _SECOND.get(key)
    if known is not None:
        plan = ok(*known) if known[0] else None
        if plan is not None or not known[0]:
            return plan or base
    macs = [st.sample_macs() for st in frozen]
    made: set = set()
    clean = []
    for i, st in enumerate(frozen):
        if i:
            crossing = {t for s_ in frozen[i:] for t in s_.ins.values()
                        if t in made and step.tensors[t].scope == "chunk_f"}
            if len(crossing) == 1:
                clean.append(i)
        made.update(st.outs.values())
    cands = sorted(((sum(macs[i:]) * (1 - n_f / n_f2), n_f2, i) for n_f2 in range(n_f + 1, new + 1)
                    if new % n_f2 == 0 and n_f2 % n_f == 0 for i in clean), reverse=True)
    for score, n_f2, i in cands:
        if score <= 0:
            break
        plan = ok(n_f2, i)
        if plan is not None:
            _SECOND[key] = (n_f2, i)
            return plan
    _SECOND[key] = (0, 0)
    return base
