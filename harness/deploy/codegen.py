"""Stages -> C. Each stage kind has a tile planner (what fits L1, what the external slabs allow,
what an estimate of its cycles prefers) that fills the context of its template in
pulp_kernels/deploy/ (Jinja2): matrix products (forward and input gradient), their weight
gradient, depthwise steps, the full convolution of a frozen stem, and the stages without a matrix
product. A stage addresses every tensor through the memory plan: an offset in the L2 arena or an
address in an external memory, plus the chunk's first sample for tensors that hold the whole batch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import jinja2
import numpy as np

from harness import ROOT
from harness.deploy.graph import Stage, Step
from harness.deploy.memplan import MemoryPlan, scratch_bytes
from harness.errors import UserError
from harness.kernels import plan as kplan
from harness.kernels import microkernel
from harness.kernels.dwblock import DwFw
from harness.kernels.mmblock import ACT_OPS, Block, block_asm, block_fits
from harness.kernels.mmplan import Side, Tile, free_blocks, kernels_asm, prototypes
from harness.kernels.spec import cp
from harness.platform import Platform

TEMPLATES = ROOT / "pulp_kernels" / "deploy"
HOME = {"l2": "ODL_L2", "hyperram": "ODL_RAM", "flash": "ODL_FLASH"}
ACT = {"none": 0, "relu": "ODL_ACT_RELU", "relu6": "ODL_ACT_RELU6", "hswish": "ODL_ACT_HSWISH", "sigmoid": "ODL_ACT_SIGMOID"}
FUSED_ACTS = microkernel.ACTS   # the activations the product routines apply before their stores
WG_PACK_CYCLES = 2           # a weight gradient's panel packing, per element and core, for comparing tile plans
FORK_CYCLES = 120           # a fork and its barrier, for comparing tile plans
# The product's tile search skips a choice whose compute and forks alone do not beat the best so far: the
# same choice as estimating every one (tests/test_deploy_search.py searches both ways).
SEARCH_BOUNDS = True
SGD_TILE_CYCLES = 500       # an update's tile: its fork, barrier and the master's transfer commands
# A weight gradient split over pixel tiles runs its 4x4 blocks from and back to FP32 accumulators in L1
# (odl_mm4x4_run_acc), about this many cycles a block more than an unsplit one (MobileNetV2 CORe50 layer 4's
# B17.project.wg at p 1, 240 x 720 over 256 pixels in tiles of 36 x 720 x 30: 466 cycles a block of 15 K-pairs,
# of which 390 are the products and a block's own work and 29 the packing)
WG_SPLIT_BLOCK_CYCLES = 45
WG1X_CHUNKS = 4             # X's row chunks of the external one-tile weight gradient
WG1X_PARTS = 8              # and at most this many parts of its product, each written when done
DW3_MIN_ROWS = 3            # interior rows a 3x3 depthwise map needs for its generated routine (fewer: the C rows)
MM_ROW_PARTS = 64           # a product's row tiles include its even cuts into up to this many (4096 x 125 x 26 in
                            # 16 tiles of 256 rows: the halving sizes 252 and 508 leave a short 17th or 9th tile)
MM_COL_PARTS = 16           # and its column tiles its even cuts into up to this many (1280 columns: 80, 160, ... besides
                            # the halving sizes 1276, 636, 316, 156, 76, 36, 16)
DW_MAP_PIXELS = 16          # output pixels of a depthwise map small enough to run straight through its taps
DW_MAP_INSNS = 800          # a larger forward map's listed code (dw_map_insns): 8x8 with relu6 (740) ran 0.64-0.92
                            # of the generated rows' cycles, with h-swish (932) 1.19-1.35, and without it (612,
                            # then a pass of h-swish) 0.80-0.96
DW_MAP_IG_PIXELS = 64       # and input pixels, for an input gradient (a stride-2 layer's 8x8 -> 4x4)


@lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                              trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=True)


def warm() -> None:
    """Compile every stage template (a sweep calls this before its workers fork: they inherit them)."""
    for tpl in sorted(TEMPLATES.glob("*.j2")):
        _env().get_template(tpl.name)


def r4(n: int) -> int:
    return (n + 3) // 4 * 4


def a16(n: int) -> int:
    return (max(4, n) + 15) // 16 * 16


def _naked_bodies(asm: str, names) -> dict[str, list[str]]:
    """Generated assembly routines as the bodies of naked C functions (name -> quoted lines): functions
    of the stage's own translation unit, so they follow its code in its section (the same cache sets
    alone and in the step) instead of preceding it as file-scope assembly would."""
    out, name = {}, None
    for line in asm.splitlines():
        t = line.strip()
        if t.endswith(":") and t[:-1] in names:
            name = t[:-1]
            out[name] = []
        elif name and not t.startswith((".size", ".section", ".globl", ".type", ".balign")) and t:
            out[name].append(line.replace("\\", "\\\\").replace('"', '\\"'))
    return out


class _NS(dict):
    """A dict whose keys read as attributes in templates (s.buf.araw0)."""
    __getattr__ = dict.get


class L1:
    def __init__(self):
        self.off = 0
        self.bufs = _NS()

    def add(self, name: str, nbytes: int) -> int:
        self.bufs[name] = self.off
        self.off += a16(nbytes)
        return self.bufs[name]


@dataclass
class StageCode:
    stage: Stage
    fn: str
    c: str
    l1_bytes: int
    variant: str = ""            # "" or "acc" (weight gradients of the chunks after the first)
    tiles: dict = field(default_factory=dict)


# A streamed product is chosen over one whose external operands come whole when its estimate is this
# fraction of the other's or less (the estimates are within a few per cent of the runs)
STREAM_GAIN = 0.95


class Gen:
    """Renders the stages of one program over one memory plan."""

    def __init__(self, plan: MemoryPlan, plat: Platform):
        self.plan, self.plat, self.step = plan, plat, plan.step
        self.budget = kplan.l1_budget(plat)
        self.cores = plat.cluster["cores"]
        self.l2_bw = plat.dma["bytes_per_cycle"]       # cluster DMA, L2 <-> L1

    # -- addressing --------------------------------------------------------------------------
    def samples(self, stage: Stage) -> int:
        return self.step.chunk_samples(stage.repeat)

    def stream(self, stage: Stage, tensor: str, slab_at: int, slab_bytes: int, whole: int = 0) -> _NS:
        t = self.step.tensors[tensor]
        h = self.plan.home(tensor)
        addr = f"((uint32_t)odl_arena + {h.offset}u)" if h.memory == "l2" else f"{h.offset}u"
        # a batch's tensor holds every chunk; one of the frozen second segment's, every first-segment chunk it takes
        chunk = t.sample_bytes * self.samples(stage) if (t.scope == "batch" and stage.repeat != "once") or \
            (t.scope == "chunk_f2" and stage.repeat == "chunk_f") else 0
        if h.memory != "l2":
            sl = f"(uint32_t)odl_arena + {slab_at}u, (uint32_t)odl_arena + {slab_at + slab_bytes}u, {slab_bytes}u, {whole}u"
        else:
            sl = "0, 0, 0, 0u"
        bw = self.l2_bw if h.memory == "l2" else 1 / self.plat.memory(h.memory).fields["read_cycles_per_byte"]
        return _NS(home=HOME[h.memory], addr=addr, pitch=t.pitch, chunk_bytes=chunk, slabs=sl, ext=h.memory != "l2", bw_ext=bw,
                   bw=self.l2_bw if whole else bw, res=bool(whole) and h.memory != "l2",
                   xt=h.memory != "l2" and not whole,   # xt: read from external memory tile by tile
                   whole=whole)

    def _tensor_bytes(self, stage: Stage, tensor: str) -> int:
        t = self.step.tensors[tensor]
        return (t.rows * t.pitch * 2 * (t.samples(self.step) if t.scope not in ("none", "batch") else 1) + 15) // 16 * 16

    def _shares(self, stage: Stage, names: dict, rest: list, weight: dict, room: int, idle) -> dict:
        """Slab bytes of the streams `rest` within `room` (each has two slabs): in proportion to their
        weights, but none larger than its tensor (the rest goes to the others); an idle stream (one the
        stage does not use in this variant) gets a token 16 bytes."""
        out = {j: 16 for j in rest if j in idle}
        room -= 16 * len(out)
        todo = [j for j in rest if j not in idle]
        while todo:
            unit = max(0, room) // max(1, sum(weight[j] for j in todo)) // 16 * 16
            capped = [j for j in todo if self._tensor_bytes(stage, names[j]) <= weight[j] * unit]
            if not capped:
                out.update({j: weight[j] * unit for j in todo})
                break
            for j in capped:
                out[j] = self._tensor_bytes(stage, names[j])
                room -= out[j]
                todo.remove(j)
        return out

    @staticmethod
    def waited_bytes(v: _NS, rows: int) -> int:
        """Bytes of a read of `rows` rows from external stream `v` that the cores wait for: odl_get moves all
        but the last slab-full of a read one after the other, each waited for, so only the last overlaps
        the cores (a tile a little larger than its slab: almost all of it waited for)."""
        if not v.xt or rows <= 0:
            return 0
        stride = v.pitch * 2
        per = max(1, v.sb // stride)
        return per * ((rows - 1) // per) * stride

    @classmethod
    def waited_cycles(cls, v: _NS, rows: int, gets: int = 1) -> float:
        """Cycles the cores wait for `gets` reads of `rows` rows each from external stream `v`."""
        return gets * cls.waited_bytes(v, rows) / v.bw_ext if v.xt else 0.0

    def whole_cycles(self, t: _NS) -> float:
        """Cycles of the transfers that bring the streams `t` into L2 whole (waited for before the first tile)."""
        return sum(v.whole / v.bw_ext for v in t.values() if v.res)

    def whole_bytes(self, stage: Stage, tensor: str) -> int:
        """Bytes of `tensor` a run of `stage` reads when it reads all of it (0: not a tensor read whole)."""
        t = self.step.tensors[tensor]
        if t.scope == "batch" or tensor in stage.outs.values() or stage.kind == "sgd":   # SGD writes its weights in place
            return 0
        if t.role == "input" and stage.kind in ("conv_fw", "dw_fw"):
            # a stem reads the new samples once, tile by tile (a halo row again): whole, the first tile would
            # wait for the whole image (MobileNetV2 CORe50's convolution: 131 K cycles of 600 K waited, against
            # the first tile's 35 K streamed; PhiNet CORe50's depthwise stem 227 K -> 186 K cycles streamed)
            return 0
        if stage.kind == "mm_fw" and "xs" not in stage.outs:
            # a frozen layer's forward reads its weights once a chunk: streamed, the first tile starts
            # sooner than after the whole transfer (table2's frozen forwards: up to 10 % faster, one 0.5 % slower)
            return 0
        return t.rows * t.pitch * 2 * (t.samples(self.step) if t.scope != "none" else 1)

    def wide_slab(self, stage: Stage) -> int:
        """Bytes of the larger slab region the stage may stream through instead of the scratch (0: none):
        MemoryPlan.slab_of's, when an external tensor the stage reads whole is too large for the scratch
        and fits there. Otherwise the stage has nothing to gain from it, and neither its program nor its
        job's identity depends on it (the same stage of other points stays one program)."""
        size = self.plan.slab_of(stage.name)[1]
        if size <= self.plan.scratch_size:
            return 0
        for n in dict.fromkeys(stage.ins.values()):
            if self.plan.home(n).memory != "l2" and self.plan.scratch_size < a16(self.whole_bytes(stage, n)) <= size:
                return size
        return 0

    PUTS = {"Y", "Xs", "Stash", "Sx", "Dz", "Loss", "Pool", "Dx", "Dw", "Db", "Ds", "Wt", "Col", "Tw"}

    def streams(self, stage: Stage, names: dict, need: dict | None = None,
                resident: bool = True, idle=(), wide: bool = False) -> tuple[_NS, int] | None:
        """Stream contexts for `names` (C name -> tensor). The stage's external streams share the scratch
        slabs: a stream that stores gets three shares (its tiles must fit a slab), one that only loads
        one (loads larger than a slab move in pieces). With `need` (store name -> bytes its smallest tile
        puts), the stores get exactly that and the loads share the rest; None when that does not fit.
        Returns (contexts, bytes of the smallest storing stream's slab); each context's `sb` is its own."""
        ext = [k for k, t in names.items() if self.plan.home(t).memory != "l2"]
        slab_at, slab_size = self.plan.slab_of(stage.name) if wide else (self.plan.scratch, self.plan.scratch_size)
        weight = {k: 3 if k in self.PUTS and not (k == "Stash" and stage.kind.endswith(("_wg", "_ig"))) else 1
                  for k in ext}
        half = scratch_bytes(self.plat) // 2
        if need is None:
            sizes = self._shares(stage, names, ext, weight, half, idle)
        else:
            sizes = {k: (need[k] + 15) // 16 * 16 for k in ext if k in need}
            loads = [k for k in ext if k not in need]
            rest = half - sum(sizes.values())
            if rest < 16 * len(loads):
                return None
            sizes.update({k: rest // max(1, len(loads)) // 16 * 16 for k in loads})
        # An external tensor the stage only reads comes into L2 whole when its bytes fit the scratch left
        # by the other streams' slabs (their shares recomputed without it, each still holding a few rows):
        # tiles over its columns, or its rows again, then read it in L2 rather than whole rows from
        # external memory each time (a 1x1 input gradient's column tiles of W read all of W; a weight
        # gradient's row tiles read all of X). Largest first: the most re-read bytes saved.
        whole: dict[str, int] = {}
        if resident and need is None:
            cands = sorted(((self.whole_bytes(stage, names[k]), k) for k in ext), reverse=True)
            for nb, k in cands:
                if not nb:
                    continue
                nb = (nb + 15) // 16 * 16
                rest = [j for j in ext if j != k and j not in whole]
                left = max(slab_size, scratch_bytes(self.plat)) - nb - sum(whole.values())
                share = self._shares(stage, names, rest, weight, left // 2, idle)
                rows = {j: min(self.step.tensors[names[j]].pitch * 2 * (8 if weight[j] == 3 else 1),
                               self._tensor_bytes(stage, names[j])) for j in rest if j not in idle}
                if left >= 0 and all(share[j] >= rows[j] for j in rows):
                    whole[k] = nb
                    sizes.update(share)
        out, at = _NS(), slab_at
        for k, t in names.items():
            if k in whole:
                out[k] = self.stream(stage, t, at, whole[k] // 2, whole[k])
                out[k]["sb"] = whole[k] // 2
                at += whole[k]
                continue
            size = sizes.get(k, 0)
            out[k] = self.stream(stage, t, at, size)
            out[k]["sb"] = size
            at += 2 * size
        # (a slab that holds its whole tensor, or an idle stream's, bounds no tile)
        stores = [k for k in ext if weight[k] == 3 and k not in whole and k not in idle]
        part = [sizes[k] for k in stores if sizes[k] < self._tensor_bytes(stage, names[k])]
        if part or not stores:
            return out, min(part) if part else min((v for k, v in sizes.items() if k not in idle), default=0)
        return out, max(sizes[k] for k in stores)

    def fail(self, stage: Stage, what: str):
        raise UserError(f"{stage.name}: does not fit: {what} within the {self.budget} bytes of L1 left on "
                        f"{self.plat.name}")

    # -- rendering ---------------------------------------------------------------------------
    def render(self, stage: Stage, fn: str, variant: str = "") -> StageCode:
        kind = stage.kind
        if kind in ("mm_fw", "mm_ig"):
            ctx = self.mm(stage, fn)
            tpl = "mm.c.j2"
        elif kind == "mm_wg":
            ctx = self.wg(stage, fn, variant == "acc")
            tpl = "wg.c.j2"
        elif kind in ("dw_fw", "dw_ig", "dw_wg"):
            ctx = self.dw(stage, fn, variant == "acc")
            tpl = "dw.c.j2"
        elif kind == "conv_fw":
            ctx = self.conv(stage, fn)
            tpl = "conv.c.j2"
        elif kind in ("im2col", "wg_cols", "ig_cols", "ig_wt"):
            ctx = self.gather(stage, fn)
            tpl = "gather.c.j2"
        else:
            ctx = self.ops(stage, fn)
            tpl = "ops.c.j2"
        c = _env().get_template(tpl).render(s=ctx)
        return StageCode(stage, fn, c, ctx["l1"], variant, {k: ctx.get(k) for k in ("tm", "tn", "tk", "tc", "ts", "tr")
                                                            if ctx.get(k) is not None})

    # -- matrix products: forward and input gradient -------------------------------------------
    def mm(self, st: Stage, fn: str) -> _NS:
        """The product's context: with the external tensors it only reads brought into L2 whole where that
        fits (the cores wait for the whole transfer before the first tile, then every tile reads L2), or
        streamed tile by tile where the estimate says that is sooner done, the first tile's transfer counted
        as waited for, by a clear margin (STREAM_GAIN): MobileNetV2 CIFAR-10 at layer 4, p 1, with 173 KB of
        weights in HyperRAM, B17.expand.fw 343 K -> 258 K cycles and B17.expand.ig 364 K -> 257 K (its
        reduction in slices of W's rows, each read while the one before is multiplied). A classifier's
        weights, estimated within 1 % either way, stay whole (streamed, PhiNet's forward took 26.0 K
        cycles instead of 23.1 K)."""
        best = self._wider(lambda wide: self._mm(st, fn, wide))
        if any(v.res for v in best.t.values()):
            streamed = self._mm(st, fn, False, whole=False)
            if self._reads_w_once(streamed) and streamed.est + self._first_wait(streamed) < STREAM_GAIN * best.est:
                return streamed
        return best

    @staticmethod
    def _reads_w_once(c: _NS) -> bool:
        """Whether a streamed product reads W once: with one tile of rows, or a forward whose W tiles each
        serve every row tile. Where the row tiles read W again, each pass's first tile is waited for and
        the estimates undercount it (CORe50's layer-4 steps: B16.expand.fw 2.91 M cycles whole, 3.33 M
        streamed in 8 row tiles, estimated 2.32 M and 2.15 M)."""
        return -(-c.m // c.tm) == 1 or (c.mode == "fw" and not c.ksplit and (c.order == "nm" or c.tn >= c.n))

    @staticmethod
    def _first_wait(c: _NS) -> float:
        """Cycles the cores wait for a streamed product's first read of W, which its estimate leaves out:
        a forward's first tile of W's rows (what exceeds a slab is in the estimate already), an input
        gradient's W rows for its first tile (all of them, or its first slice of the reduction)."""
        w = c.t.w
        if not w.xt:
            return 0.0
        stride = w.pitch * 2
        if c.mode == "fw":
            return min(c.tn * stride, w.sb) / w.bw_ext
        return (c.tk if c.ksplit else c.acols) * stride / w.bw_ext

    def dw(self, st: Stage, fn: str, accumulate: bool) -> _NS:
        return self._wider(lambda wide: self._dw(st, fn, accumulate, wide))

    def _wider(self, render) -> _NS:
        """A stage's context with its slabs in the scratch, or in the larger part of L2 no tensor holds while
        the stage runs (MemoryPlan.slab_of) when that brings more of the external tensors it only reads into
        L2 whole and the estimate says it is sooner done: whole, every tile reads L2, but the first waits for
        the whole transfer, so a tensor whose transfer is as long as the cores' work is better streamed
        (MobileNetV2 CIFAR-10's B17.project.fw took 641 K cycles with its 346 KB of weights whole, 446 K
        streamed; PhiNet CORe50's B8.dw.wg 1.72 M with its input whole, 1.08 M streamed)."""
        narrow = render(False)
        if not self.wide_slab(self.step.stage(narrow.stage_name)):
            return narrow
        wide = render(True)
        if {k for k, v in wide.t.items() if v.res} == {k for k, v in narrow.t.items() if v.res}:
            return narrow
        return wide if wide.est < narrow.est else narrow

    def _mm(self, st: Stage, fn: str, wide: bool, whole: bool = True) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        fw = st.kind == "mm_fw"
        wt = bool(a.get("wt"))    # a convolution's input gradient: B is the transposed weights, row by row
        rows_b = fw or wt         # B's rows are C's columns (forward orientation)
        rows_ps = a["h_out"] * a["w_out"]
        m = ns * rows_ps
        if fw:
            acols, n, wpitch = a["c_in"], a["c_out"], cp(a["c_in"])
        elif wt:
            acols, n, wpitch = a["k_out"], a["k_in"], cp(a["k_out"])
        else:
            acols, n, wpitch = a["k_out"], a["k_in"], cp(a["c_in"])
        ap, k2 = cp(acols), cp(acols) // 2
        names = {"A": st.ins["x"] if fw else st.ins["dy"], "W": st.ins["w"]}
        slots = {"Bias": "b", "Label": "label", "Skip": "skip", "Stash": "stash", "Sx": "sx", "Y": "y", "Xs": "xs",
                 "Dz": "dz", "Loss": "loss", "Pool": "pool"}
        extra = {}
        for cname, slot in slots.items():
            if slot in st.outs:
                extra[cname] = st.outs[slot]
            elif slot in st.ins and (fw or slot == "stash"):
                extra[cname] = st.ins[slot]
        if not fw:
            if "dx" in st.outs:
                extra["Y"] = st.outs["dx"]
            if "gskip" in st.ins:
                extra["Skip"] = st.ins["gskip"]
            if "stash_out" in st.ins:
                extra["Sto"] = st.ins["stash_out"]
            extra.pop("Bias", None)
        names.update(extra)
        t, slab = self.streams(st, names, wide=wide, resident=whole)
        t["a"], t["w"] = t.pop("A"), t.pop("W")
        act_bw = (not fw) and "stash" in st.ins and a["act"] != "none"
        stash_how = "pre" if a["act"] == "hswish" else "post"
        stash = fw and "stash" in st.outs
        sx = fw and "sx" in st.outs
        k_stash = a["k_out"] if (stash or sx) else 0
        keep = a["k_in"] if fw and "xs" in st.outs else 0
        keep_compact = bool(keep) and keep != acols
        bias = fw and a["bias"]
        pool = fw and "pool" in st.outs
        ce = fw and a.get("ce", False)
        dy_cols = self.step.tensors[names["A"]].cols
        zero_lane = (not fw) and acols % 2 == 1 and dy_cols > acols
        # the product's routine applies the activation before its stores when nothing needs the values
        # before it (no stash of them, no residual added first)
        act_fusable = fw and a["act"] in FUSED_ACTS and not stash and not sx and "Skip" not in t
        ext = {k for k, v in t.items() if v.ext}

        def mem(tm, tn):
            resident = tn >= n
            b = 0
            b += 2 * tm * ap * 2 + (2 * tm * ap * 2 if act_bw else 0) + r4(tm) * k2 * 4
            braw = tn * wpitch * 2 if rows_b else acols * cp(tn) * 2
            b += braw * (1 if resident else 2) + r4(tn) * k2 * 4 + 2 * r4(tm) * cp(tn) * 2
            if bias:
                b += cp(n) * 2 + 4 * r4(n) + 32
            if "Skip" in t:
                b += 2 * tm * cp(tn) * 2
            if "Sto" in t:
                b += 2 * tm * cp(tn) * 2
            if stash:
                b += 2 * tm * cp(min(tn, k_stash)) * 2
            if sx:
                b += 2 * tm * cp(min(tn, k_stash)) * 2
            if keep_compact:
                b += tm * cp(keep) * 2
            if pool:
                ps = -(-tm // rows_ps)
                b += 4 * ps * n + ps * cp(n) * 2
            if ce:
                b += 4 * ns + tm * cp(n) * 2 + tm * 4
            return b + 16 * 16

        puts = ("Y", "Xs", "Dz", "Loss") + (("Stash", "Sx") if fw else ())

        def slab_ok(tm, tn):
            # loads take as many slab-fulls as they need; a store's rows must fit one slab, unless the
            # store writes whole rows (one column tile), which then leave a slab-full at a time
            whole = {"Y", "Stash", "Sx", "Dz"} if tn >= n else set()
            return all(tm * t[k].pitch * 2 <= slab or (k in whole and t[k].pitch * 2 <= slab)
                       for k in puts if k in ext) and \
                ("Pool" not in ext or ns * t.Pool.pitch * 2 <= slab)

        def epi(m_tiles, n_tiles, tm, tn):
            """Cycles of moving the residual and the stash each output tile reads (an external one: whole rows
            for every column tile), and what the cores wait for of them."""
            c = 0.0
            for k in ("Skip", "Sto"):
                if k in t:
                    v = t[k]
                    c += m_tiles * n_tiles * tm * (v.pitch if v.xt else tn) * 2 / v.bw \
                        + self.waited_cycles(v, tm, m_tiles * n_tiles)
            return c

        def compute(tm, tn):
            """Cycles of the cores' blocks (4x4), in either order."""
            return -(-m // tm) * -(-n // tn) * (-(-(-(-tm // 4) * -(-tn // 4)) // self.cores)) * (30 + 24 * k2)

        def forks_mn(tm, tn):
            n_tiles = -(-n // tn)
            return -(-m // tm) * (1 + n_tiles * (1 if n_tiles == 1 else 2)) * FORK_CYCLES

        def forks_nm(tm, tn):
            return -(-n // tn) * (1 + 2 * -(-m // tm)) * FORK_CYCLES

        def cost(tm, tn):
            m_tiles, n_tiles = -(-m // tm), -(-n // tn)
            # an external tensor moves whole rows: the input gradient's column tiles of W re-read its rows
            wbytes = n * wpitch * 2 if rows_b else (acols * (wpitch if t.w.xt else cp(n)) * 2 * (1 if t.w.xt else 1))
            wreads = 1 if n_tiles == 1 else m_tiles * (n_tiles if (t.w.xt and not rows_b) else 1)
            traffic = wbytes * wreads / t.w.bw + m * t.a.pitch * 2 / t.a.bw * (1 if t.a.xt else ap / t.a.pitch) \
                + epi(m_tiles, n_tiles, tm, tn)
            waited = (self.waited_cycles(t.w, tn, wreads) if rows_b else 0) + self.waited_cycles(t.a, tm, m_tiles)
            return max(compute(tm, tn), traffic) + forks_mn(tm, tn) + waited

        def cost_nm(tm, tn):
            """Weight-stationary order: B once, A once per column tile."""
            m_tiles, n_tiles = -(-m // tm), -(-n // tn)
            wbytes = n * wpitch * 2 if rows_b else n_tiles * acols * (wpitch if t.w.xt else cp(tn)) * 2
            traffic = wbytes / t.w.bw + n_tiles * m * t.a.pitch * 2 / t.a.bw + epi(m_tiles, n_tiles, tm, tn)
            waited = (self.waited_cycles(t.w, tn, n_tiles) if rows_b else 0) + self.waited_cycles(t.a, tm, n_tiles * m_tiles)
            return max(compute(tm, tn), traffic) + forks_nm(tm, tn) + waited

        # the weight-stationary order leaves each output tile at once: not with a pool or external outputs
        nm_ok = not pool and not any(k in ext for k in puts)
        best = None
        col_cands = _balanced(n, 4, MM_COL_PARTS)
        if rows_b and t.w.xt:   # W's tiles that fit its slab whole (all of a tile's read overlaps the cores)
            per = t.w.sb // (t.w.pitch * 2) // 4 * 4
            if 4 <= per < n:
                k = -(-n // per)
                even = r4(-(-n // k)) if r4(-(-n // k)) <= per else r4(-(-n // (k + 1)))   # the fewest even tiles
                col_cands += [c for c in sorted({per, even}) if c not in col_cands]
        # A choice's compute and forks bound its estimate from below (the other terms are not negative), so a
        # choice whose bound does not beat the best so far is not estimated, nor its L1 asked for: the same
        # choice as estimating every one, at a fraction of the time (a sweep plans thousands of products).
        def may_beat(low):
            return best is None or not SEARCH_BOUNDS or low < best[0]

        row_cands = [tm for tm in _row_cands(m, rows_ps if pool else 0)
                     if not (pool and tm < m and tm % rows_ps and rows_ps % tm)]   # a pool's tile: whole samples
        for tn in col_cands:
            if ce and tn != n:
                continue
            for tm in row_cands:
                low = compute(tm, tn)
                low_nm = low + forks_nm(tm, tn) if nm_ok and tn < n else None   # None: no weight-stationary order
                may_mn = may_beat(low + forks_mn(tm, tn))
                if not (may_mn or (low_nm is not None and may_beat(low_nm))):
                    continue
                lm = mem(tm, tn)
                if lm > self.budget or not slab_ok(tm, tn):
                    continue
                if may_mn:
                    c = cost(tm, tn)
                    if best is None or c < best[0]:
                        best = (c, tm, tn, "mn")
                if low_nm is not None and lm + tn * wpitch * 2 <= self.budget + (tn * wpitch * 2 if rows_b else 0) \
                        and may_beat(low_nm):   # (against the best the mn order may just have set)
                    c = cost_nm(tm, tn)
                    if c < best[0]:
                        best = (c, tm, tn, "nm")
        tk = acols
        def klayout(tm, tn, tk):
            # two buffers of each slice's operands: the next slice arrives while this one is computed
            lay = L1()
            lay.add("araw0", tm * cp(tk) * 2)
            lay.add("araw1", tm * cp(tk) * 2)
            if act_bw:
                lay.add("stin0", tm * cp(tk) * 2)
                lay.add("stin1", tm * cp(tk) * 2)
            lay.add("apan", r4(tm) * cp(tk) // 2 * 4)
            lay.add("braw0", (tn * cp(tk) if rows_b else tk * cp(tn)) * 2)
            lay.add("braw1", (tn * cp(tk) if rows_b else tk * cp(tn)) * 2)
            lay.add("bpan", r4(tn) * cp(tk) // 2 * 4)
            lay.add("acc", 4 * r4(tm) * r4(tn))     # whole 4x4 blocks (odl_lib_matmul_acc)
            for nm in ("out0", "out1"):
                lay.add(nm, tm * cp(tn) * 2)
            self._mm_epilogue_bufs(lay, tm, tn, n, -(-tm // rows_ps) if pool else ns, bias, "Skip" in t, stash, sx,
                                   k_stash, keep and keep < acols, keep, pool, ce, keep_tile=cp(tk), ce_samples=ns,
                                   sto="Sto" in t)
            return lay

        split = self._mm_ksplit(m, n, acols, rows_b, pool, ce, t, ext, slab, puts, rows_ps,
                                lambda tm, tn, tk: klayout(tm, tn, tk).off + 256, epi)
        if best is None and split is None:
            self.fail(st, f"no tile of the {m} x {n} product (K {acols})")
        if split is not None and (best is None or split[0] < best[0]):
            _, tm, tn, tk = split
            lay = klayout(tm, tn, tk)
            streams = [k for k in t if k not in ("a", "w")]
            return _NS(title=f"{st.name}: {'forward' if fw else 'input gradient'}, {m} x {n} x {acols} in slices of {tk}, "
                             f"tiles {tm} x {tn}", est=split[0] + self.whole_cycles(t), stage_name=st.name,
                       fn=fn, buf=lay.bufs, l1=lay.off, mode="fw" if rows_b else "ig", m=m, n=n,
                       tm=tm, tn=tn, tk=tk, ksplit=True, accp=r4(tn), accw=r4(tm) * r4(tn), acols=acols, ap=ap, k2=k2, wpitch=wpitch, t=t, streams=streams,
                       act=ACT[a["act"]] if fw else 0, act_bw=ACT[a["act"]] if act_bw else 0, stin_pitch=ap,
                       stash=stash_how if stash else "", sx=sx, stash_cols=k_stash, keep=keep, keep_compact=False,
                       keep_pitch=cp(keep), bias=bias, pool=pool, pool_pitch=cp(n), samples=ns, rows_ps=rows_ps, ce=ce,
                       dz_pitch=cp(n), skip="Skip" in t, y="Y" in t, zero_lane=zero_lane,
                       pool_samples=-(-tm // rows_ps), act_out=ACT[a.get("act_out") or "none"])
        _, tm, tn, order = best
        # a forward reads its operands in place (rows of X and of W) through register blocks of 5x4 planned
        # here for each shape of tile, rather than packing both into 4-row panels for the 4x4 routine
        rt = self._mm_blocks(fn, m, n, tm, tn, k2, ap * 2, wpitch * 2, bias, a["act"] if act_fusable else "") \
            if rows_b and not wt else None
        lay = L1()
        for nm, nb in (("araw0", tm * ap * 2), ("araw1", tm * ap * 2), ("apan", 4 if rt else r4(tm) * k2 * 4)):
            lay.add(nm, nb)
        if act_bw:
            lay.add("stin0", tm * ap * 2)
            lay.add("stin1", tm * ap * 2)
        braw = (cp(tn) if rt else tn) * wpitch * 2 if rows_b else acols * cp(tn) * 2   # (a zero row after an odd count)
        lay.add("braw0", braw)
        lay.add("braw1", braw if tn < n else 4)
        lay.add("bpan", 4 if rt else r4(tn) * k2 * 4)
        # whole 4-row blocks: the product writes rows up to a multiple of 4 (odl_lib_matmul's m_pad)
        lay.add("out0", r4(tm) * cp(tn) * 2)
        lay.add("out1", r4(tm) * cp(tn) * 2)
        # (the row micro-kernel reads whole groups of 4 biases)
        self._mm_epilogue_bufs(lay, tm, tn, n, -(-tm // rows_ps) if pool else ns, bias, "Skip" in t, stash, sx,
                               k_stash, keep_compact, keep, pool, ce, ce_samples=ns, sto="Sto" in t)
        streams = [k for k in t if k not in ("a", "w")]
        return _NS(title=f"{st.name}: {'forward' if fw else 'input gradient'}, {m} x {n} x {acols}, tiles {tm} x {tn}"
                         + (", weight-stationary" if order == "nm" else ""), est=best[0] + self.whole_cycles(t), stage_name=st.name,
                   fn=fn, buf=lay.bufs, l1=lay.off, mode="fw" if rows_b else "ig", m=m, n=n, tm=tm, tn=tn, acols=acols,
                   ap=ap, k2=k2, wpitch=wpitch, t=t, streams=streams, act=ACT[a["act"]] if fw else 0,
                   act_bw=ACT[a["act"]] if act_bw else 0, stin_pitch=ap, stash=stash_how if stash else "",
                   sx=sx, stash_cols=k_stash, keep=keep, keep_compact=keep_compact, keep_pitch=cp(keep),
                   bias=bias, pool=pool, pool_pitch=cp(n), samples=ns, rows_ps=rows_ps, ce=ce,
                   dz_pitch=cp(n), skip="Skip" in t, y="Y" in t, zero_lane=zero_lane, ksplit=False, tk=tk, order=order,
                   act_out=ACT[a.get("act_out") or "none"], act_mm=ACT[a["act"]] if act_fusable else 0, rt=rt,
                   pool_samples=-(-tm // rows_ps))

    def _mm_blocks(self, fn: str, m: int, n: int, tm: int, tn: int, k2: int, a_pitch: int, b_pitch: int,
                   bias: bool, act: str) -> _NS:
        """The register blocks of a forward's product tiles (harness/kernels/mmblock.py): X's rows in blocks of
        5 (4s and at most two smaller ones to end, mmplan.free_blocks; 4s only when five rows lie too far
        apart for the registers), W's rows in blocks of 4 and a last one of 2, both read where the DMA left
        them. The cores split each tile's blocks at run time (the stage's `_mm` in mm.c.j2): no tables in L2
        or L1, which a whole step of forty products could not spare. An odd column count reads one more row of W and one
        more bias, both zero: the pad lane, as before."""
        fits5 = block_fits(5, 4, a_pitch, b_pitch)
        shapes, heights = [], set()
        for r in dict.fromkeys((min(tm, m), m % tm or min(tm, m))):
            hs = free_blocks(r) if fits5 else [4] * (r // 4) + ([r % 4] if r % 4 else [])
            n5, n4 = hs.count(5), hs.count(4)
            tail = [h for h in hs if h < 4]
            assert hs == [5] * n5 + [4] * n4 + tail and len(set(tail)) <= 1, hs
            t = tail[0] if tail else 1
            heights.update(h for h in hs)
            for c in dict.fromkeys((min(tn, n), n % tn or min(tn, n))):
                shapes.append(_NS(rows=r, cols=c, n5=n5, n4=n4, nt=len(tail), t=t, nb4=(c + c % 2) // 4,
                                  two=(c + c % 2) % 4 == 2, cp=cp(c)))
        c_arg = len({sh.cp for sh in shapes}) > 1   # tiles of two widths share their routines: C's pitch an argument
        widths = {4 for sh in shapes if sh.nb4} | {2 for sh in shapes if sh.two}
        blocks = {(h, w): Block(m=h, n=w, k2=k2, a_pitch=a_pitch, b_pitch=b_pitch, b_step=w * b_pitch,
                                c_pitch=0 if c_arg else shapes[0].cp * 2, bias=bias, act=act)
                  for h in sorted(heights) for w in sorted(widths)}
        own = {b_.name: f"{fn}_{b_.name}" for b_ in blocks.values()}
        asm = "\n".join(line for b_ in blocks.values() for line in block_asm(b_))
        asm = re.sub(r"\b(" + "|".join(map(re.escape, own)) + r")\b", lambda mt: own[mt.group(1)], asm)
        fn_of = {k: own[b_.name] for k, b_ in blocks.items()}
        extra = ", uint32_t" if c_arg else ""
        return _NS(shapes=shapes, fn_of=fn_of, c_arg=c_arg, ap=a_pitch, bp=b_pitch,
                   protos="\n".join(f"void {v}(const void *, const void *, void *, uint32_t, const void *{extra});"
                                    for v in own.values()),
                   naked=_naked_bodies(asm, set(own.values())))

    @staticmethod
    def _mm_epilogue_bufs(lay, tm, tn, n, ns, bias, skip, stash, sx, k_stash, compact, keep, pool, ce, keep_tile=0,
                          ce_samples=0, sto=False):
        if bias:
            lay.add("bias16", cp(n) * 2)
            lay.add("bias32", 4 * r4(n))
        if skip:   # two of each: the next tile's arrives while this one is computed
            lay.add("skip0", tm * cp(tn) * 2)
            lay.add("skip1", tm * cp(tn) * 2)
        if sto:
            lay.add("sto0", tm * cp(tn) * 2)
            lay.add("sto1", tm * cp(tn) * 2)
        for nm, on in (("st", stash), ("sx", sx)):
            if on:
                lay.add(f"{nm}0", tm * cp(min(tn, k_stash)) * 2)
                lay.add(f"{nm}1", tm * cp(min(tn, k_stash)) * 2)
        if compact:
            lay.add("keep", tm * (keep_tile or cp(keep)) * 2)
        if pool:
            lay.add("pool", 4 * ns * n)
            lay.add("poolh", ns * cp(n) * 2)
        if ce:
            lay.add("label", 4 * ce_samples)
            lay.add("dz", tm * cp(n) * 2)
            lay.add("loss", tm * 4)

    def _mm_ksplit(self, m, n, kdim, fw, pool, ce, t, ext, slab, puts, rows_ps, mem, epi):
        """Tiles (tm, tn, tk) for a product whose reduction is sliced (accumulated in FP32): the cheapest
        that fits, or None. `mem(tm, tn, tk)` is the L1 of a choice; `epi(mt, nt, tm, tn)` the cycles of the
        output tiles' other reads."""
        best = None
        tms = [tm for tm in _row_cands(m, rows_ps if pool else 0)
               if not (pool and tm < m and tm % rows_ps and rows_ps % tm)]
        wa = {tm: self.waited_bytes(t.a, tm) for tm in tms}
        for tk in _cands(kdim, 16):
            kt = -(-kdim // tk)
            for tn in _cands(n, 4):
                if ce and tn != n:
                    continue
                ww = self.waited_bytes(t.w, tn) if fw else 0
                nt, bn = -(-n // tn), -(-tn // 4)
                for tm in tms:
                    mt = -(-m // tm)
                    # a block of a slice: 12 cycles a reduction pair, plus the call and the FP32
                    # accumulation of its 16 sums (about 90 cycles), paid again in every slice
                    # (the last slice holds what is left of the reduction, not a whole tk)
                    blocks = -(-(-(-tm // 4) * bn) // self.cores)
                    compute = mt * nt * blocks * (90 * kt + 12 * (kdim + kt))
                    if best is not None and compute + mt * nt * kt * 3 * FORK_CYCLES >= best[0]:
                        continue   # its compute and forks alone do not beat the best (the rest is not negative)
                    # every slice of A and of W moves per (m, n, k) tile; external tensors move whole rows
                    a_b = mt * nt * tm * (kt * t.a.pitch if t.a.xt else kdim + kt) * 2
                    if fw:
                        w_b = mt * nt * tn * (kt * t.w.pitch if t.w.xt else kdim + kt) * 2
                    else:
                        w_b = mt * nt * kdim * (t.w.pitch if t.w.xt else cp(tn)) * 2
                    traffic = a_b / t.a.bw + w_b / t.w.bw + epi(mt, nt, tm, tn)
                    cost = max(compute, traffic) + mt * nt * kt * 3 * FORK_CYCLES
                    if best is not None and cost >= best[0]:
                        continue   # cannot win (the waits add): whether it fits (an L1 layout) need not be asked
                    cost += (mt * nt * kt * wa[tm] / t.a.bw_ext if t.a.xt else 0.0) \
                        + (mt * nt * kt * ww / t.w.bw_ext if fw and t.w.xt else 0)
                    if best is not None and cost >= best[0]:
                        continue
                    if mem(tm, tn, tk) > self.budget:
                        continue
                    if not all(tm * t[k].pitch * 2 <= slab for k in puts if k in ext):
                        continue
                    best = (cost, tm, tn, tk)
        return best

    # -- weight gradient of a matrix-product layer ---------------------------------------------
    @staticmethod
    def wg_names(st: Stage, accumulate: bool) -> dict:
        """The weight gradient's tensors by C name, in the order their streams are laid out: Stash when
        the activation is differentiated here, Db (and DbOld to accumulate into) with a bias."""
        names = {"A": st.ins["dy"], "Xs": st.ins["xs"], "Dw": st.outs["dw"]}
        if "stash" in st.ins and st.attrs["act"] != "none":
            names["Stash"] = st.ins["stash"]
        if "db" in st.outs:
            names["Db"] = st.outs["db"]
            if accumulate:
                names["DbOld"] = st.outs["db"]
        names["OldT"] = st.outs["dw"]
        return names

    def wg_streams(self, st: Stage, names: dict, accumulate: bool, resident: bool,
                   wide: bool = False) -> tuple[_NS, int, set]:
        """The weight gradient's streams (the operands as a, xs, dw and old), their slab, the external ones."""
        t, slab = self.streams(st, names, resident=resident, idle=() if accumulate else ("OldT",), wide=wide)
        t["a"], t["xs"], t["dw"], t["old"] = t.pop("A"), t.pop("Xs"), t.pop("Dw"), t.pop("OldT")
        return t, slab, {k for k, v in t.items() if v.ext}

    def wg(self, st: Stage, fn: str, accumulate: bool) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        m, n = a["k_out"], a["k_in"]
        p = ns * a["h_out"] * a["w_out"]
        names = self.wg_names(st, accumulate)
        act_bw, bias = "Stash" in names, "Db" in names
        def search(resident, wide=False):
            t, slab, ext = self.wg_streams(st, names, accumulate, resident, wide)

            # L1 bytes and estimated cycles of a tile choice (tm x tn over tk pixels), the cheapest that
            # fits winning; what does not change in an inner loop is computed outside it (a search tries
            # thousands of choices), the same integers and the same floating-point expression as ever
            slab_ok = "Db" not in ext or t.Db.pitch * 2 <= t.Db.sb     # with the row check below
            tms = [(tm, cp(tm), r4(tm), -(-m // tm), -(-tm // 4)) for tm in _balanced(m, 4)
                   if slab_ok and ("dw" not in ext or tm * t.dw.pitch * 2 <= t.dw.sb)]
            tns = [(tn, cp(tn), r4(tn), -(-n // tn), -(-tn // 4)) for tn in _cands(n, 4)]
            fixed = 12 * 16 + (4 * m + cp(m) * 2 if bias else 0)
            a_in = 2 if act_bw else 1
            ta, txs, tst, tdw = t.a, t.xs, t.Stash, t.dw
            dw_cyc = 2 * m * tdw.pitch * 2 / tdw.bw if tdw.xt else 0
            cores, l2_bw, budget = self.cores, self.l2_bw, self.budget
            best = None
            for tk in _cands(p, 2):
                k2 = (tk + 1) // 2
                kt = -(-p // tk)
                per_block = 30 + 24 * k2 + (WG_SPLIT_BLOCK_CYCLES if kt > 1 else 0)
                forks_k = kt * 2 + (2 if kt > 1 else 0)
                for tn, cpn, r4n, nt, bn in tns:
                    mem_n = tk * cpn * 2 + r4n * k2 * 4 + fixed
                    for tm, cpm, r4m, mt, bm in tms:
                        b = tk * cpm * 2 * a_in + r4m * k2 * 4 + mem_n + r4m * cpn * 2
                        if accumulate:
                            b += tm * cpn * 2
                        if tk < p:
                            b += 4 * r4m * r4n
                        if b > budget:
                            continue
                        compute = mt * nt * kt * (-(-(bm * bn) // cores)) * per_block
                        forks = mt * nt * forks_k * FORK_CYCLES
                        if best is not None and compute + forks >= best[0]:
                            continue   # the other terms are not negative: it cannot be cheaper
                        a_loads = mt * kt if kt == 1 else mt * nt * kt            # the loop skips reloads it can
                        b_loads = (nt * kt * (mt if nt > 1 else 1)) if kt == 1 else mt * nt * kt
                        l2 = (a_loads * tk * cpm + b_loads * tk * cpn) * 2 / l2_bw
                        # an external tensor moves whole rows whatever columns a tile wants
                        ext_cyc = (a_loads * tk * ta.pitch * 2 / ta.bw if ta.xt else 0) \
                            + (b_loads * tk * txs.pitch * 2 / txs.bw if txs.xt else 0)
                        ext_cyc += a_loads * tk * tst.pitch * 2 / tst.bw if tst and tst.xt else 0
                        ext_cyc += dw_cyc + self.waited_cycles(ta, tk, a_loads) + self.waited_cycles(txs, tk, b_loads) \
                            + (self.waited_cycles(tst, tk, a_loads) if tst else 0)
                        # the cores pack each loaded tile's A and B into panels (about two cycles an element)
                        pack = (a_loads * tk * cpm + b_loads * tk * cpn) * WG_PACK_CYCLES / cores
                        # forks: pack A and the product (B packed in it) per k tile, and zero / narrow when k is split
                        c = compute + l2 + pack + ext_cyc + forks
                        if best is None or c < best[0]:
                            best = (c, tm, tn, tk)
            if best is not None:
                # a tensor brought in whole waits for its transfer once
                best = (best[0] + self.whole_cycles(t), *best[1:])
            return best, t, slab, ext

        found = [search(r) for r in (True, False)]
        best, t, slab, ext = min((f for f in found if f[0] is not None), key=lambda f: f[0][0], default=found[0])
        if best is not None and self.wide_slab(st):   # as _wider decides
            w = search(True, wide=True)
            if w[0] is not None and w[0][0] < best[0] and \
                    {k for k, v in w[1].items() if v.res} != {k for k, v in t.items() if v.res}:
                best, t, slab, ext = w
        if best is None:
            self.fail(st, f"no tile of the {m} x {n} weight gradient over {p} pixels")
        _, tm, tn, tk = best
        k_tiles = -(-p // tk)
        k2 = (tk + 1) // 2
        lay = L1()
        lay.add("araw", tk * cp(tm) * 2)
        if act_bw:
            lay.add("stin", tk * cp(tm) * 2)
        lay.add("apan", r4(tm) * k2 * 4)
        lay.add("braw", tk * cp(tn) * 2)
        lay.add("bpan", r4(tn) * k2 * 4)
        lay.add("out", r4(tm) * cp(tn) * 2)   # whole 4-row blocks (odl_lib_matmul's m_pad)
        if accumulate:
            lay.add("old", tm * cp(tn) * 2)
        if k_tiles > 1:
            lay.add("acc", 4 * r4(tm) * r4(tn))     # whole 4x4 blocks (odl_lib_matmul_acc)
        if bias:
            lay.add("db32", 4 * m)
            lay.add("db16", cp(m) * 2)
        streams = [k for k in t if k not in ("a", "xs", "dw", "old")]
        # one tile of L2 tensors written whole (a classifier's gradient over a chunk): one fork, no streams
        # (whole 4-column blocks within the rows' pitch, sample pairs)
        single = (not ext and k_tiles == 1 and tm == m and tn == n and not accumulate and not act_bw
                  and p % 2 == 0 and r4(n) <= cp(n))
        mm = _NS()
        # the same with X and the results in HyperRAM (whole rows through L2 slabs, X in chunks of sample
        # pairs, the first rows of the result leaving while the rest are computed)
        homes = {k: self.plan.home(v).memory for k, v in names.items()}
        x_rows = p * cp(n) * 2
        single_x = (ext and homes["A"] == "l2" and all(homes.get(k, "l2") in ("l2", "hyperram") for k in ("Xs", "Dw", "Db"))
                    and k_tiles == 1 and tm == m and tn == n and not accumulate and not act_bw
                    and p % (2 * WG1X_CHUNKS) == 0 and r4(n) <= cp(n) and t.xs.pitch == cp(n) == t.dw.pitch
                    and x_rows + m * cp(n) * 2 + 64 <= scratch_bytes(self.plat))
        if single_x:
            # blocks of 2 dY columns (4 past 16 columns), at most WG1X_PARTS parts of whole blocks: the writes
            # (slower than the product) start after a small part and follow each other
            h = 2 if m <= 16 else 4
            na = -(-m // h)
            g = -(-na // WG1X_PARTS)
            blocks = [Block(m=hh, n=4, k2=p // 2, a_pitch=0, b_pitch=0, b_step=16 * (p // 2), c_pitch=cp(n) * 2)
                      for hh in dict.fromkeys((h, m % h or h))]
            kern = {b.m: f"{fn}_{b.name}" for b in blocks}
            parts = -(-na // g)
            nbk = cp(n) // 4
            last = (na - (parts - 1) * g) * nbk            # blocks of the last part; the first on all cores,
            shares = [divmod(g * nbk, self.cores), divmod(g * nbk, self.cores - 1),   # the others without core 0
                      divmod(last, self.cores - 1 if parts > 1 else self.cores)]
            own = {b.name: f"{fn}_{b.name}" for b in blocks}
            asm = "\n".join(line for b in blocks for line in block_asm(b))
            for old_name, new_name in own.items():
                asm = re.sub(rf"\b{old_name}\b", new_name, asm)
            slab = self.plan.scratch
            l2 = {k: (f"((uint32_t)odl_arena + {at}u)" if homes.get(k) == "hyperram" else t[k.lower() if k != "Db" else k].addr)
                  for k, at in (("Xs", slab), ("Dw", slab + x_rows), ("Db", slab + x_rows + m * cp(n) * 2)) if k in homes}
            mm = _NS(h=h, g=g, parts=parts, kh=kern[h], kr=kern[m % h or h], shares=shares,
                     protos="\n".join(f"void {k}(const void *, const void *, void *, uint32_t, const void *);"
                                      for k in own.values()),
                     naked=_naked_bodies(asm, set(own.values())), chunks=WG1X_CHUNKS,
                     x_l2=l2["Xs"], dw_l2=l2["Dw"], db_l2=l2.get("Db", "0"),
                     x_ram=t.xs.addr if homes["Xs"] == "hyperram" else "~0u",
                     dw_ram=t.dw.addr if homes["Dw"] == "hyperram" else "~0u",
                     db_ram=(t.Db.addr if homes.get("Db") == "hyperram" else "~0u") if bias else "~0u")
        if single:
            # register blocks of 5 (or 4) dY columns by 4 X columns (harness/kernels/mmplan.py)
            tile = Tile(k2=p // 2, a=Side(rows=m), b=Side(rows=cp(n)), c_pitch=cp(n) * 2, cores=self.cores)
            ctab, off = [], 0     # each dY column: the word offset of its first panel word, its panel's columns
            for h in tile.blocks_a:
                for i in range(h):
                    ctab += [off + i, h]
                off += h * (p // 2)
            # the micro-kernels named after the stage: a whole step's stages may share a shape
            own = {k.name: f"{fn}_{k.name}" for k in tile.kernels}

            def mine(text: str) -> str:
                return re.sub(r"\b(" + "|".join(map(re.escape, own)) + r")\b", lambda mt: own[mt.group(1)], text)
            # the run table and the column table: constants in L2, brought to L1 with dY
            tabs = (4 * len(tile.kernels) + 20 * len(tile.runs) + 2 * len(tile.first) + 4 * m + 3) // 4 * 4
            if lay.off + a16(tabs) > self.budget:
                single = False
            else:
                lay.add("tabs", tabs)
                runs = ", ".join("{%d, %d, %d, %d, %d, %d}" % r for r in tile.runs)
                mm = _NS(fns=", ".join(own[k.name] for k in tile.kernels), nfn=len(tile.kernels), runs=runs,
                         nruns=len(tile.runs), first=", ".join(map(str, tile.first)), nfirst=len(tile.first),
                         ctab=", ".join(map(str, ctab)), nctab=len(ctab), protos=mine(prototypes([tile])),
                         naked=_naked_bodies(mine(kernels_asm([tile])), set(own.values())))
        return _NS(title=f"{st.name}: weight gradient, {m} x {n} over {p} pixels, tiles {tm} x {tn} x {tk}"
                         + (" (adds to the accumulators)" if accumulate else ""),
                   fn=fn, buf=lay.bufs, l1=lay.off, m=m, n=n, p=p, tm=tm, tn=tn, tk=tk, k_tiles=k_tiles, t=t,
                   accp=r4(tn), accw=r4(tm) * r4(tn),
                   streams=streams, act_bw=ACT[a["act"]] if act_bw else 0, bias=bias, accumulate=accumulate,
                   single=single, single_x=single_x, mm=mm, cores=self.cores)

    # -- depthwise ---------------------------------------------------------------------------
    def _dw(self, st: Stage, fn: str, accumulate: bool, wide: bool) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        step = st.kind[3:]
        h, w, ho, wo, k = a["h"], a["w"], a["h_out"], a["w_out"], a["k"]
        hwi, hwo, kk = h * w, ho * wo, k * k
        if step == "fw":
            c, in_rows = a["c_in"], hwi
            names = {"In": st.ins["x"], "W": st.ins["w"]}
            for cname, slot in (("Bias", "b"),):
                if slot in st.ins:
                    names[cname] = st.ins[slot]
            for cname, slot in (("Y", "y"), ("Stash", "stash"), ("Sx", "sx"), ("Xs", "xs"), ("Pool", "pool")):
                if slot in st.outs:
                    names[cname] = st.outs[slot]
        else:
            c, in_rows = a["k_in"], hwo
            names = {"In": st.ins["dy"], "W": st.ins.get("w", st.ins["dy"])}
            if "stash" in st.ins:
                names["Stash"] = st.ins["stash"]
            if step == "ig":
                names["Dx"] = st.outs["dx"]
                if "stash_out" in st.ins:
                    names["Sto"] = st.ins["stash_out"]
            else:
                names["Xs"] = st.ins["xs"]
                names["Dw"] = st.outs["dw"]
                names["Old"] = st.outs["dw"]
                if "db" in st.outs:
                    names["Db"] = st.outs["db"]
                    names["DbOld"] = st.outs["db"]
        t, slab = self.streams(st, names, wide=wide)
        t["in"], t["w"] = t.pop("In"), t.pop("W")
        act = ACT[a["act"]] if step == "fw" else 0
        act_bw = ACT[a["act"]] if step != "fw" and "stash" in st.ins and a["act"] != "none" else 0
        stash = "stash" in st.outs
        sx = "sx" in st.outs
        k_stash = a["k_out"] if (stash or sx) else 0
        keep = a["k_in"] if step == "fw" and "xs" in st.outs else 0
        pool = "pool" in st.outs
        bias = a["bias"] and (step == "fw" or "db" in st.outs)
        ext = {kk_ for kk_, v in t.items() if v.ext}

        cpc = cp(c)
        st_ = a["stride"]
        band_rows = h if step == "ig" else ho          # bands cut the input gradient's rows, else the output's

        def rows_of(ts, tr):
            """(rows of the In tile, of the output tile, of the Xs tile) for ts samples or a band of tr rows."""
            full = tr == band_rows
            if step == "fw":
                return ((ts * hwi if full else min(h, (tr - 1) * st_ + k) * w), (ts * hwo if full else tr * wo), 0)
            if step == "ig":
                return ((ts * hwo if full else min(ho, (tr + k - 2) // st_ + 2) * wo), (ts * hwi if full else tr * w), 0)
            return ((ts * hwo if full else tr * wo), 0, (ts * hwi if full else min(h, (tr - 1) * st_ + k) * w))

        def mem(tc, ts, tr):
            pc = cp(tc)
            rin, rout, rx = rows_of(ts, tr)
            b = 2 * rin * pc * 2
            if act_bw:
                b += 2 * rin * pc * 2
            if step == "fw":
                b += 2 * rout * pc * 2 + 2 * kk * pc * 2 + (2 * pc * 2 if bias else 0)
                b += (2 if stash else 0) * rout * pc * 2 + (2 if sx else 0) * rout * pc * 2
                if keep and keep < c:
                    b += rin * pc * 2
                if pool:
                    b += 4 * ns * c + ns * cpc * 2 + 8 * self.cores * self.cores
            elif step == "ig":
                b += 2 * rout * pc * 2 * (2 if "Sto" in t else 1) + 2 * kk * pc * 2
            else:
                b += 2 * rx * pc * 2 + 4 * (kk + 1) * cpc + (kk + 1) * cpc * 2
            return b + 16 * 16

        def store_rows(tc, ts, tr):
            rin, rout, rx = rows_of(ts, tr)
            xs_rows = (ts * hwi if tr == band_rows else (tr * st_ + max(0, h - ho * st_)) * w)
            rows = {"Y": rout, "Sx": rout, "Stash": rout if step == "fw" else 0, "Xs": xs_rows if step == "fw" else 0,
                    "Dx": rout if step == "ig" else 0, "Dw": kk, "Db": 1, "Pool": ns}
            return {k_: r for k_, r in rows.items() if k_ in ext and r}

        def slab_ok(tc, ts, tr):
            # with one channel block a store writes whole rows, which leave a slab-full at a time
            whole = {"Y", "Sx", "Stash", "Xs", "Dx"} if tc >= c else set()
            return all(r * t[k_].pitch * 2 <= t[k_].sb or (k_ in whole and t[k_].pitch * 2 <= t[k_].sb)
                       for k_, r in store_rows(tc, ts, tr).items())

        def cost(tc, ts, tr):
            blocks = -(-c // tc)
            tiles = blocks * -(-ns // ts) * -(-band_rows // tr)
            rin, _, rx = rows_of(ts, tr)
            # an external input moves whole rows for each channel block; halo rows move once per band
            ext_cycles = tiles * (rin * (t["in"].pitch * 2 / t["in"].bw if t["in"].xt else 0)
                                  + (rin * t.Stash.pitch * 2 / t.Stash.bw if t.Stash and t.Stash.xt and step != "fw" else 0)
                                  + (rx * t.Xs.pitch * 2 / t.Xs.bw if t.Xs and t.Xs.xt and step == "wg" else 0))
            ext_cycles += self.waited_cycles(t["in"], rin, tiles) \
                + (self.waited_cycles(t.Stash, rin, tiles) if t.Stash and step != "fw" else 0) \
                + (self.waited_cycles(t.Xs, rx, tiles) if t.Xs and step == "wg" else 0)
            l2_bytes = tiles * (rin + rx) * cp(tc) * 2
            return tiles * FORK_CYCLES * (2 if step == "fw" else 1) + ext_cycles + l2_bytes / self.l2_bw

        def search():
            best = None
            for tc in _cands(c, 2):
                opts = [(ts, band_rows) for ts in range(ns, 0, -1)] + [(1, tr) for tr in range(band_rows - 1, 0, -1)]
                for ts, tr in opts:
                    if mem(tc, ts, tr) <= self.budget and slab_ok(tc, ts, tr):
                        cst = cost(tc, ts, tr)
                        if best is None or cst < best[0]:
                            best = (cst, tc, ts, tr)
            return best

        best = search()
        if best is None and ext:
            # wide maps with several external stores: slabs sized to what the smallest tile (a channel
            # pair, one sample, one row) puts, the loads sharing what is left
            need = {k_: r * t[k_].pitch * 2 for k_, r in store_rows(2, 1, 1).items()}
            sized = self.streams(st, names, need)
            if sized is not None:
                t, slab = sized
                t["in"], t["w"] = t.pop("In"), t.pop("W")
                best = search()
        if best is None:
            self.fail(st, f"no channel pair of a row of the {h}x{w} map")
        _, tc, ts, tr = best
        pc = cp(tc)
        rin, rout, rx = rows_of(ts, tr)
        lay = L1()
        lay.add("in0", rin * pc * 2)
        lay.add("in1", rin * pc * 2)
        if act_bw:
            lay.add("stin0", rin * pc * 2)
            lay.add("stin1", rin * pc * 2)
        if step == "fw":
            lay.add("out0", rout * pc * 2)
            lay.add("out1", rout * pc * 2)
            lay.add("w0", kk * pc * 2)
            lay.add("w1", kk * pc * 2)
            if bias:
                lay.add("b0", pc * 2)
                lay.add("b1", pc * 2)
            for nm, on in (("st", stash), ("sx", sx)):
                if on:
                    lay.add(f"{nm}0", rout * pc * 2)
                    lay.add(f"{nm}1", rout * pc * 2)
            if keep and keep < c:
                lay.add("keep", rin * pc * 2)
            if pool:
                lay.add("pool", 4 * ns * c)
                lay.add("poolh", ns * cpc * 2)
                lay.add("poolpart", 8 * self.cores * self.cores)   # the pool's partial sums when the rows split too
        elif step == "ig":
            lay.add("out0", rout * pc * 2)
            lay.add("out1", rout * pc * 2)
            lay.add("w0", kk * pc * 2)
            lay.add("w1", kk * pc * 2)
            if "Sto" in t:
                lay.add("sto0", rout * pc * 2)
                lay.add("sto1", rout * pc * 2)
        else:
            lay.add("x0", rx * pc * 2)
            lay.add("x1", rx * pc * 2)
            lay.add("acc", 4 * (kk + 1) * cpc)
            lay.add("dwt", kk * cpc * 2)
            lay.add("dbt", cpc * 2)
        streams = [kk_ for kk_ in t if kk_ not in ("in", "w")]
        if step == "wg" and not accumulate:
            streams = [s_ for s_ in streams if s_ not in ("Old", "DbOld")]
            for s_ in ("Old", "DbOld"):
                t.pop(s_, None)
        pad = a["pad"]
        # small maps, whole in each tile (the networks' last blocks: 4x4, 2x2, 1x1): almost every pixel is an
        # edge pixel, which the C rows clamp and mask tap by tap; instead each output pixel's taps inside the
        # map are listed, and a channel pair's maps run straight through them. Up to 8x8 maps too where the
        # listed code stays small enough for the instruction caches (taps, loads, stores, activation), if
        # need be without the activation, then applied in a pass
        fused_here = a["act"] in FUSED_ACTS and not stash and not sx
        fw_map = step == "fw" and tr == band_rows and h * w <= DW_MAP_IG_PIXELS
        if fw_map and ho * wo > DW_MAP_PIXELS:
            if fused_here and dw_map_insns(h, w, ho, wo, k, st_, pad, a["act"]) > DW_MAP_INSNS:
                fused_here = False
            fw_map = dw_map_insns(h, w, ho, wo, k, st_, pad, a["act"] if fused_here else "") <= DW_MAP_INSNS
        # 3x3 with padding 1: the interior rows run a generated routine (the window slides in registers)
        # where a map has enough of them to pay for the routine's calls (DW3_MIN_ROWS); the routine applies
        # the activation when no copy of the output before or after it is kept
        dw3, act_fused = {}, False
        if (step == "fw" and not fw_map and k == 3 and st_ in (1, 2) and tuple(pad) == (1, 1, 1, 1) and w >= 3
                and (h - 2) // st_ >= DW3_MIN_ROWS):
            act_fused = fused_here
            rtn = DwFw(wd=w, wo=wo, stride=st_, act=a["act"] if act_fused else "")
            name = f"{fn}_{rtn.name}"
            dw3 = {name: _naked_bodies(re.sub(rf"\b{rtn.name}\b", name, "\n".join(rtn.asm())), {name})[name]}
        dwmap = None
        if fw_map:
            act_fused = fused_here
            dwmap = dw_map(h, w, ho, wo, k, st_, pad, a["act"] if act_fused else "", c, tc)
        elif step == "ig" and ho * wo <= DW_MAP_PIXELS and h * w <= DW_MAP_IG_PIXELS and tr == band_rows:
            dwmap = dw_map(h, w, ho, wo, k, st_, pad, "", c, tc, ig=True)
        elif step == "wg" and ho * wo <= DW_MAP_PIXELS and h * w <= DW_MAP_IG_PIXELS and tr == band_rows:
            dwmap = dw_wg_map(h, w, ho, wo, k, st_, pad, bias, c, tc)
        return _NS(title=f"{st.name}: depthwise {step}, {c} channels {h}x{w} -> {ho}x{wo}, blocks of {tc} channels x "
                         f"{ts} samples" + (f", bands of {tr} rows" if tr < band_rows else "")
                         + (" (adds to the accumulators)" if accumulate else ""), est=best[0] + self.whole_cycles(t),
                   stage_name=st.name,
                   fn=fn, buf=lay.bufs, l1=lay.off, step=step, c=c, tc=tc, ts=ts, samples=ns, h=h, w=w, ho=ho, wo=wo,
                   k=k, stride=a["stride"], pt=pad[2], pl=pad[0], in_rows=in_rows, t=t, streams=streams, act=act, cp=cpc,
                   tr=tr, bands=-(-band_rows // tr), band_rows=band_rows, groups=-(-ns // ts), cblocks=-(-c // tc),
                   act_out=ACT[a.get("act_out") or "none"],
                   act_bw=act_bw, stash="pre" if stash and a["act"] == "hswish" else ("post" if stash else ""), sx=sx,
                   stash_cols=k_stash, keep=keep, keep_compact=bool(keep) and keep < c, pool=pool, pool_pitch=cp(c),
                   bias=bias, y="Y" in t, accumulate=accumulate, dw3=dw3, act_fused=act_fused, dwmap=dwmap)

    # -- full convolution forward (frozen stems) -------------------------------------------------
    def conv(self, st: Stage, fn: str) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        names = {"x": st.ins["x"], "w": st.ins["w"], "y": st.outs["y"]}
        if "b" in st.ins:
            names["bias"] = st.ins["b"]
        t, slab = self.streams(st, names)
        h, w, ho, wo, k, s = a["h"], a["w"], a["h_out"], a["w_out"], a["k"], a["stride"]
        n, cin = a["c_out"], a["c_in"]
        kdim = k * k * cin
        k2 = cp(kdim) // 2
        wpitch = cp(kdim)
        xpitch = t.x.pitch

        def in_rows(tr):
            return min(h, (tr - 1) * s + k)

        def mem(tr):
            px = tr * wo
            return (2 * in_rows(tr) * w * xpitch * 2 + r4(px) * k2 * 4 + n * wpitch * 2 + r4(n) * k2 * 4
                    + 2 * r4(px) * cp(n) * 2 + cp(n) * 2 + 4 * r4(n) + 10 * 16)

        tr = next((r for r in range(ho, 0, -1) if mem(r) <= self.budget
                   and (not t.y.ext or r * wo * t.y.pitch * 2 <= slab)
                   and (not t.x.xt or in_rows(r) * w * xpitch * 2 <= t.x.sb)), None)   # each tile's read overlaps
        if tr is None:
            self.fail(st, "no output row of the convolution")
        lay = L1()
        lay.add("in0", in_rows(tr) * w * xpitch * 2)
        lay.add("in1", in_rows(tr) * w * xpitch * 2)
        lay.add("apan", r4(tr * wo) * k2 * 4)
        lay.add("w", n * wpitch * 2)
        lay.add("bpan", r4(n) * k2 * 4)
        lay.add("out0", r4(tr * wo) * cp(n) * 2)   # whole 4-row blocks (odl_lib_matmul's m_pad)
        lay.add("out1", r4(tr * wo) * cp(n) * 2)
        lay.add("bias16", cp(n) * 2)
        lay.add("bias32", 4 * r4(n))
        pad = a["pad"]
        return _NS(title=f"{st.name}: convolution {k}x{k}/{s} forward, {cin} -> {n}, {h}x{w} -> {ho}x{wo}, {tr} rows a tile",
                   fn=fn, buf=lay.bufs, l1=lay.off, samples=ns, h=h, w=w, ho=ho, wo=wo, k=k, stride=s, pt=pad[2],
                   pl=pad[0], n=n, cin=cin, k2=k2, wpitch=wpitch, xpitch=xpitch, ypitch=cp(n), tr=tr, t=t,
                   bias="bias" in t, act=ACT[a["act"]], act_mm=ACT[a["act"]] if a["act"] in FUSED_ACTS else 0)

    # -- stages without a matrix product ---------------------------------------------------------
    def ops(self, st: Stage, fn: str) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        kind = st.kind
        if kind == "latents":
            return self.latents(st, fn)
        if kind == "sgd":
            return self.sgd(st, fn)
        c, hw = a["c"], a["hw"]
        rows = ns * hw
        if kind == "gap_bw":
            names = {"G": st.ins["g"], "Y": st.outs["dy"]}
            if "acc" in st.ins:
                names["Acc"] = st.ins["acc"]
            if "stash_out" in st.ins:
                names["Sto"] = st.ins["stash_out"]
        elif kind == "scale_fw":
            names = {"S": st.ins["s"], "X": st.ins["x"], "Y": st.outs["y"]}
        else:
            names = {"S": st.ins["s"], "X": st.ins["x"], "Dy": st.ins["dy"], "Dx": st.outs["dx"], "Ds": st.outs["ds"]}
            if "stash_out" in st.ins:
                names["Sto"] = st.ins["stash_out"]
        t, slab = self.streams(st, names)
        per_row = cp(c) * 2 * (2 if kind == "scale_bw" or (kind == "gap_bw" and "Sto" in t) else 1)

        def fixed(ts):
            """L1 of the per-sample vectors of a group of ts samples (the gate, its gradient and stash)."""
            b = ts * cp(c) * 2 + (4 * ts * c + ts * cp(c) * 2 if kind == "scale_bw" else 0) + 8 * 16
            return b + (ts * cp(c) * 2 if kind == "scale_bw" and "Sto" in t else 0)
        ext_pitch = max([v.pitch for k, v in t.items() if v.ext and k in ("Y", "Dx")] + [0]) * 2
        ds_pitch = t.Ds.pitch * 2 if t.Ds and t.Ds.ext else 0
        # the largest group of samples whose vectors leave room for a tile of rows (wide gates of many
        # samples do not fit a small L1 at once); within a group, the largest tile of rows
        ts = tr = None
        for g in range(ns, 0, -1):
            if g * ds_pitch > slab:
                continue
            tr = next((r for r in _cands(g * hw, 1) if fixed(g) + r * per_row <= self.budget
                       and r * ext_pitch <= slab), None)
            if tr is not None:
                ts = g
                break
        if tr is None:
            self.fail(st, f"one row of {c} channels")
        lay = L1()
        if kind == "gap_bw":
            lay.add("g", ts * cp(c) * 2)
            lay.add("y", tr * cp(c) * 2)
            if "Sto" in t:
                lay.add("sto", tr * cp(c) * 2)
        elif kind == "scale_fw":
            lay.add("s", ts * cp(c) * 2)
            lay.add("x", tr * cp(c) * 2)
        else:
            lay.add("s", ts * cp(c) * 2)
            lay.add("dy", tr * cp(c) * 2)
            lay.add("x", tr * cp(c) * 2)
            lay.add("acc", 4 * ts * c)
            lay.add("ds", ts * cp(c) * 2)
            if "Sto" in t:
                lay.add("sto", ts * cp(c) * 2)
        return _NS(title=f"{st.name}: {kind}, {ns} samples x {hw} pixels x {c} channels"
                         + (f", groups of {ts} samples" if ts < ns else ""), fn=fn, buf=lay.bufs,
                   l1=lay.off, kind=kind, c=c, cp=cp(c), hw=hw, rows=rows, tr=tr, ts=ts, samples=ns, t=t,
                   streams=list(t), acc="Acc" in t, act_out=ACT[st.attrs.get("act_out") or "none"])

    # -- gathers of a convolution: im2col columns, the output gradient per input pixel, W transposed ---
    def gather(self, st: Stage, fn: str) -> _NS:
        a = st.attrs
        ns = self.samples(st)
        if st.kind == "ig_wt":
            return self.transpose(st, fn)
        fw = st.kind in ("im2col", "wg_cols")
        c, k, s = a["c"], a["k"], a["stride"]
        h, w, ho, wo = a["h"], a["w"], a["h_out"], a["w_out"]
        left, _, top, _ = a["pad"]
        kkc = k * k * c
        keep = a.get("keep", 0)
        names = {"X": st.ins["x" if fw else "dy"], "Col": st.outs["col"]}
        if keep:
            names["Xs"] = st.outs["xs"]
        t, slab = self.streams(st, names)
        out_rows_total = ho if fw else h

        def bands(tr):
            """(first output row, rows, source rows [lo, hi), stored input rows [plo, phi)) of each band."""
            out = []
            for r0 in range(0, out_rows_total, tr):
                r1 = min(out_rows_total, r0 + tr)
                if fw:
                    lo, hi = max(0, r0 * s - top), min(h, (r1 - 1) * s - top + k)
                    plo = 0 if r0 == 0 else min(h, max(0, r0 * s - top))
                    phi = h if r1 == ho else min(h, max(0, r1 * s - top))
                    if keep:
                        lo, hi = min(lo, plo), max(hi, phi)
                else:
                    lo = max(0, -(-(r0 + top - (k - 1)) // s))
                    hi = min(ho, (r1 - 1 + top) // s + 1)
                    plo = phi = 0
                out.append((r0, r1 - r0, lo, max(lo, hi), plo, phi))
            return out

        src_w, out_w = (w, wo) if fw else (wo, w)

        def mem(tr):
            bs = bands(tr)
            rin = max(b[3] - b[2] for b in bs)
            b = 2 * rin * src_w * cp(c) * 2 + 2 * tr * out_w * cp(kkc) * 2
            if keep and keep < c:
                b += max(b_[5] - b_[4] for b_ in bs) * w * cp(keep) * 2
            return b + 8 * 16

        def slab_ok(tr):
            bs = bands(tr)
            ok = not t.Col.ext or tr * out_w * t.Col.pitch * 2 <= slab
            if keep and t.Xs.ext:
                ok = ok and max(b[5] - b[4] for b in bs) * w * t.Xs.pitch * 2 <= slab
            return ok

        tr = next((r for r in range(out_rows_total, 0, -1) if mem(r) <= self.budget and slab_ok(r)), None)
        if tr is None:
            self.fail(st, f"one row of the {'im2col' if fw else 'gathered gradient'} columns ({kkc} values a pixel)")
        bs = bands(tr)
        rin = max(b[3] - b[2] for b in bs)
        lay = L1()
        lay.add("in0", rin * src_w * cp(c) * 2)
        lay.add("in1", rin * src_w * cp(c) * 2)
        lay.add("out0", tr * out_w * cp(kkc) * 2)
        lay.add("out1", tr * out_w * cp(kkc) * 2)
        compact = bool(keep) and keep < c
        if compact:
            lay.add("keep", max(b[5] - b[4] for b in bs) * w * cp(keep) * 2)
        what = {"im2col": "im2col columns", "wg_cols": "im2col columns of the stored input",
                "ig_cols": "the output gradient gathered per input pixel"}[st.kind]
        return _NS(title=f"{st.name}: {what}, {ns} samples, {c} channels, {k}x{k}/{s}, bands of {tr} rows",
                   fn=fn, buf=lay.bufs, l1=lay.off, kind=st.kind, fw=fw, c=c, cpc=cp(c), kkc=kkc, cpk=cp(kkc),
                   k=k, stride=s, pt=top, pl=left, h=h, w=w, ho=ho, wo=wo, src_rows=ho * wo if not fw else h * w,
                   out_rows=h * w if not fw else ho * wo, src_w=src_w, out_w=out_w, samples=ns, bands=bs, t=t,
                   streams=list(t), keep=keep, compact=compact, cpkeep=cp(keep) if keep else 0)

    def transpose(self, st: Stage, fn: str) -> _NS:
        """wt[ci][(tap, co)] = W[co][tap C_in + ci] for ci < k_in, co < k_out: blocks of input channels."""
        a = st.attrs
        c_in, k_in, k_out, kk = a["c_in"], a["k_in"], a["k_out"], a["kk"]
        t, slab = self.streams(st, {"W": st.ins["w"], "Tw": st.outs["wt"]})
        cols = kk * k_out

        def mem(tc):
            return k_out * cp(tc + 1) * 2 + tc * cp(cols) * 2 + 4 * 16

        tc = next((r for r in _cands(k_in, 2) if mem(r) <= self.budget and
                   (not t.Tw.ext or r * t.Tw.pitch * 2 <= slab)), None)
        if tc is None:
            self.fail(st, f"one input channel of the {k_out} x {cols} transposed weights")
        lay = L1()
        lay.add("wb", k_out * cp(tc + 1) * 2)
        lay.add("tb", tc * cp(cols) * 2)
        return _NS(title=f"{st.name}: the kept block of W transposed per tap ({k_in} x {cols}), blocks of {tc} channels",
                   fn=fn, buf=lay.bufs, l1=lay.off, kind="ig_wt", c_in=c_in, k_in=k_in, k_out=k_out, kk=kk, cols=cols,
                   cpcols=cp(cols), tc=tc, t=t, streams=list(t))

    def sgd(self, st: Stage, fn: str) -> _NS:
        a = st.attrs
        dw = a["kind"] == "dw"
        names = {"Wt": st.ins["w"], "G": st.ins["dw"]}
        if "b" in st.ins:
            names.update(Bt=st.ins["b"], Gb=st.ins["db"])
        t, slab = self.streams(st, names)
        rows = a["k"] * a["k"] if dw else a["k_out"]
        wp, gp = t.Wt.pitch, t.G.pitch
        cols = a["k_in"]
        conv = a["kind"] == "conv"      # W [C_out][k k C_in], dW [k_out][k k k_in]: the kept channels of each tap
        lr = a["lr"]
        lr16 = int(np.float16(-lr).view(np.uint16))
        neg2 = lr16 | (lr16 << 16)
        fixed = (cp(a["c_out"]) * 2 + cp(a["k_out"]) * 2) + 8 * 16
        # Two buffers of row tiles where the estimate says so, so that the transfers overlap the update: the
        # longer of the two runs through, the shorter is exposed for one tile, and each tile costs a fork and
        # the DMA commands (each tile's reads and writes within a slab; the even cuts into 2 to 64 tiles);
        # otherwise one buffer of the largest tile, the transfers and the update one after the other. In L2
        # too since the update takes four words a turn (odl_lib_sgd_block): PhiNet CIFAR-10's
        # B8.project.update 105.8 K -> 72.0 K cycles (with a word a turn two buffers had made it slower,
        # 128.5 K -> 136.4 K).
        moved = rows * (2 * wp * 2 / t.Wt.bw + gp * 2 / t.G.bw)   # W in and out, the gradient in
        update = rows * cp(cols) // 2 * 5 / self.cores     # four pairs: eight loads, four FMAs, four stores, the loop

        def fits(r, bufs):
            return fixed + bufs * r * (wp + gp) * 2 <= self.budget and not (t.Wt.ext and r * wp * 2 > slab) \
                and not (t.G.xt and r * gp * 2 > t.G.sb)

        serial = next((r for r in _cands(rows, 1) if fits(r, 1)), None)
        best = None if serial is None else (moved + update + -(-rows // serial) * SGD_TILE_CYCLES, serial, False)
        for cut in range(2, min(rows, 64) + 1):
            r = -(-rows // cut)
            if r < self.cores and not (t.Wt.ext or t.G.xt):
                break   # from L2, tiles that leave cores without a row lose (a classifier's 10 rows: 22.4 K -> 24.6 K)
            if fits(r, 2):
                tiles = -(-rows // r)
                cost = max(moved, update) + min(moved, update) / tiles + tiles * SGD_TILE_CYCLES
                if best is None or cost < best[0]:
                    best = (cost, r, True)
        if best is None:
            self.fail(st, "one weight row")
        _, tr, pipe = best
        lay = L1()
        for k in (0, 1) if pipe else (0,):
            lay.add(f"w{k}", tr * wp * 2)
            lay.add(f"g{k}", tr * gp * 2)
        bias = "b" in st.ins
        if bias:
            lay.add("b", cp(a["c_out"]) * 2)
            lay.add("db", cp(a["k_out"]) * 2)
        return _NS(title=f"{st.name}: SGD on the {rows} x {cols} kept block" + (" of each tap" if conv else "")
                   + f" (lr {lr:g})", fn=fn, buf=lay.bufs, conv=conv, taps=a["k"] ** 2, c_in=a["c_in"], neg_lr=lr16,
                   l1=lay.off, kind="sgd", rows=rows, cols=cols, wp=wp, gp=gp, tr=tr, neg_lr2=neg2, bias=bias, pipe=pipe,
                   bp=cp(a["c_out"]), bcols=a["k_out"], t=t, streams=list(t))

    def latents(self, st: Stage, fn: str) -> _NS:
        lat = self.step.tensors[st.outs["latent"]]
        lh, rh = self.plan.home(st.outs["latent"]), self.plan.home(st.ins["replay"])
        ext = lh.memory != "l2"
        if ext and lh.memory != "hyperram":
            raise UserError(f"{st.name}: the batch's latents must be in L2 or HyperRAM")
        p = self.step.params
        count = st.attrs.get("count", p.batch_replay)
        first = st.attrs.get("first", p.batch_new)
        write = st.attrs.get("write", p.batch_new)
        store = self.plan.homes.get("<new_latents>")
        return _NS(title=f"{st.name}: {count} latents from the replay buffer" + (f", {write} written" if write else ""),
                   fn=fn, buf=_NS(), l1=0, kind="latents", t=_NS(), streams=[],
                   replay_addr=f"{rh.offset}u",
                   latent_addr=f"{lh.offset}u" if ext else f"((uint32_t)odl_arena + {lh.offset}u)", latent_ext=ext,
                   slab=scratch_bytes(self.plat), slab_addr=f"(uint32_t)odl_arena + {self.plan.scratch}u",
                   sample_bytes=lat.sample_bytes, count=count, first=first, write=write,
                   store_addr=f"{store.offset if store else rh.offset + rh.nbytes}u")


def _tile_pitches(c: int, tc: int) -> dict:
    """The word pitches of c channels in tiles of tc: p2 of a whole tile, p2_last of a narrower last one (0 when
    every tile has p2), so that generated code can take both as constants."""
    last = c - (-(-c // tc) - 1) * tc
    return {"p2": cp(tc) // 2, "p2_last": cp(last) // 2 if cp(last) != cp(tc) else 0}


def dw_map_insns(h: int, w: int, ho: int, wo: int, k: int, s: int, pad, act: str) -> int:
    """Instructions of a forward map routine's loop over one sample (dw_map): its taps, loads, stores and
    the activation's FP16 operations."""
    m = dw_map(h, w, ho, wo, k, s, pad, act, 2, 2)
    return m.taps + len(m.pixels) + len(m.outs) * (1 + ACT_OPS.get(act, 0))


def dw_map(h: int, w: int, ho: int, wo: int, k: int, s: int, pad, act: str, c: int, tc: int, ig: bool = False) -> _NS:
    """What a small map's depthwise forward (or input gradient) runs straight through: for each output pixel
    (row-major) the expression of its taps inside the map, in the C paths' tap order from the bias or zero
    (the forward's rows add the taps outside as exact zeros; the input gradient's lists go by kh, then kw),
    with the activation when it is fused; the pixels read and the weights used; a sample's pixels on the
    read side and on the written side (the steps from one sample to the next); the word pitches of the
    channel tiles (all but maybe the last have `tc` channels), so that every offset is a constant."""
    pl, pt = pad[0], pad[2]
    outs, pixels, weights, taps = [], set(), set(), []

    def tap(expr, q, t):
        pixels.add(q)
        weights.add(t)
        taps.append(q)
        return f"pulp_vfmac_h({expr}, x{q}, w{t})"

    if ig:   # dx[ih][iw] = sum of dy[oh][ow] w[kh][kw] over ih = oh * s + kh - pt, iw = ow * s + kw - pl
        for ih in range(h):
            for iw in range(w):
                expr = "bias"
                for kh in range((ih + pt) % s, k, s):
                    oh = (ih + pt - kh) // s
                    for kw in range((iw + pl) % s, k, s):
                        ow = (iw + pl - kw) // s
                        if 0 <= oh < ho and 0 <= ow < wo:
                            expr = tap(expr, oh * wo + ow, kh * k + kw)
                outs.append((ih * w + iw, expr))
    else:
        for oh in range(ho):
            for ow in range(wo):
                expr = "bias"
                for kh in range(k):
                    for kw in range(k):
                        ih, iw = oh * s + kh - pt, ow * s + kw - pl
                        if 0 <= ih < h and 0 <= iw < w:
                            expr = tap(expr, ih * w + iw, kh * k + kw)
                outs.append((oh * wo + ow, f"odl_act_pair({expr}, {ACT[act]})" if act else expr))
    return _NS(outs=outs, pixels=sorted(pixels), weights=sorted(weights), taps=len(taps), hw=ho * wo if ig else h * w,
               howo=h * w if ig else ho * wo, **_tile_pitches(c, tc))


def dw_wg_map(h: int, w: int, ho: int, wo: int, k: int, s: int, pad, bias: bool, c: int, tc: int) -> _NS:
    """What a small map's depthwise weight gradient runs straight through: for each tap (and the bias) the
    terms of a sample in odl_dw_wg_batch's order (output rows, then columns), as (output pixel, input pixel
    or None for the bias); FP16 partial sums of at most 8 terms folded into FP32 (every 8 terms of a sample
    and at its end: the C path's groups run on across samples, these do not, with the same bound)."""
    pl, pt = pad[0], pad[2]
    taps = []
    for kh in range(k):
        for kw in range(k):
            taps.append([(oh * wo + ow, (oh * s + kh - pt) * w + ow * s + kw - pl) for oh in range(ho) for ow in range(wo)
                         if 0 <= oh * s + kh - pt < h and 0 <= ow * s + kw - pl < w])
    if bias:
        taps.append([(o, None) for o in range(ho * wo)])
    return _NS(taps=taps, hw=h * w, howo=ho * wo, bias=bias, **_tile_pitches(c, tc))


def _cands(total: int, step: int) -> list[int]:
    """Tile sizes to try: the whole extent, then multiples of `step` below it (halving when large)."""
    out = [total]
    t = (total - 1) // step * step
    while t >= step:
        if t not in out:
            out.append(t)
        t = t // 2 // step * step if t > 8 * step else t - step
    return out


def _balanced(total: int, step: int, parts: int = 8) -> list[int]:
    """_cands, and the sizes that cut `total` into 2 to `parts` tiles of (nearly) equal size: a tile size
    bounded by a slab or by L1 need not leave a small last tile."""
    out = _cands(total, step)
    for k in range(2, parts + 1):
        t = -(-(-(-total // k)) // step) * step
        if step <= t < total and t not in out:
            out.append(t)
    return out


def _row_cands(m: int, whole: int) -> list[int]:
    """Row-tile sizes of a product: the even cuts into up to MM_ROW_PARTS tiles besides the halving
    sizes (which leave a small last tile, counted whole by the estimate), and when a tile must hold whole samples of `whole`
    rows (a fused pool), every whole number of samples too (maps of an odd pixel count, e.g. 25 x 5,
    are rarely a multiple of 4)."""
    out = _balanced(m, 4, MM_ROW_PARTS)
    if whole:
        out += [n * whole for n in range(m // whole, 0, -1) if n * whole not in out]
    return out
