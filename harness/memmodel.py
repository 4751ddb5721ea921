"""Memory model of method.md and the placement of every tensor in flash / external RAM / L2 / L1.

Training memory (FP16, 2 bytes per element), over the trainable layers i:

    M = sum_i [ params_i + grad_i + N_batch * act_i ] * 2 bytes
    params_i  = k^2 C_in C_out / groups (+ C_out bias)      the RAM copy of the weights
    grad_i    = k^2 c_i c_o (+ c_o bias), depthwise k^2 c    the partial gradient accumulators
    act_i     = H_in W_in c_i                                the partial input kept for WG

with c_i, c_o from harness.partial.kept_channels (classifier always full). Replay storage:

    S_replay = replays * latent_elems * 2 bytes

Placement (method.md): frozen parameters -> flash; the RAM copy of trainable parameters, their
gradient accumulators and the stored activations -> external RAM (the platform's "hyperram"); the
replay buffer -> flash. Two further flash items are listed because the method implies them, and
are marked as such: the pre-trained image of the trainable parameters (where the RAM copy comes
from) and the latents of the current task's new samples (the frozen part runs once per new sample,
so epochs 2..E re-use them). Each layer step (fw, wg, ig, update, frozen fw) has a per-sample
working set that must pass through L2 and L1: L2 must hold it whole; L1 holds it whole or in
tiles (ceil(bytes / (L1 / 2)) tiles with double buffering). Flash and RAM are checked on their sum,
L2 and L1 on the peak working set. Nothing that does not fit is dropped from the report.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.costmodel import LayerCost, TrainingCost, training_cost
from harness.errors import UserError
from harness.nets import Cut, Layer

BYTES_PER_ELEM = 2  # FP16 parameters, activations and gradients
MB = 1_000_000


@dataclass(frozen=True)
class LayerMemory:
    cost: LayerCost
    param_elems: int
    grad_elems: int
    act_elems: int    # stored per batch element

    @property
    def layer(self) -> Layer:
        return self.cost.layer

    def bytes(self, batch: int) -> int:
        return (self.param_elems + self.grad_elems + batch * self.act_elems) * BYTES_PER_ELEM


def grad_elems(cost: LayerCost) -> int:
    lay = cost.layer
    if lay.depthwise:
        weights = lay.kernel ** 2 * cost.kept_in
    else:
        weights = lay.kernel ** 2 * cost.kept_in * cost.kept_out
    return weights + (cost.kept_out if lay.bias else 0)


def stored_act_elems(cost: LayerCost) -> int:
    return cost.kept_in * cost.layer.h_in * cost.layer.w_in


@dataclass(frozen=True)
class TrainingMemory:
    cost: TrainingCost
    batch: int
    replays: int
    layers: tuple[LayerMemory, ...]   # trainable layers, forward order

    @property
    def cut(self) -> Cut:
        return self.cost.cut

    @property
    def weights_bytes(self) -> int:
        return sum(m.param_elems for m in self.layers) * BYTES_PER_ELEM

    @property
    def grads_bytes(self) -> int:
        return sum(m.grad_elems for m in self.layers) * BYTES_PER_ELEM

    @property
    def acts_bytes(self) -> int:
        return self.batch * sum(m.act_elems for m in self.layers) * BYTES_PER_ELEM

    @property
    def M_bytes(self) -> int:
        return self.weights_bytes + self.grads_bytes + self.acts_bytes

    @property
    def latent_bytes(self) -> int:
        return self.cut.latent_elems * BYTES_PER_ELEM

    @property
    def S_replay_bytes(self) -> int:
        return self.replays * self.latent_bytes


def training_memory(cut: Cut, p: float = 1.0, batch: int = 16, replays: int = 0) -> TrainingMemory:
    for what, v, low in (("batch size", batch, 1), ("replay count", replays, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise UserError(f"{what} must be an integer >= {low}, got {v!r}")
    cost = training_cost(cut, p)
    layers = tuple(LayerMemory(c, c.layer.params, grad_elems(c), stored_act_elems(c)) for c in cost.tail)
    return TrainingMemory(cost, batch, replays, layers)


# -- placement ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placed:
    tensor: str
    role: str
    memory: str
    bytes: int
    layer: str | None = None
    step: str | None = None
    note: str = ""
    fits: bool | None = None       # working sets: fits L2
    l1_tiles: int | None = None    # working sets: 1 = fits L1 untiled


@dataclass(frozen=True)
class Capacity:
    memory: str
    capacity: int
    used: int
    rule: str          # "sum" of resident tensors or "peak" working set
    fits: bool
    detail: str = ""


@dataclass(frozen=True)
class PlacementReport:
    platform: str
    entries: tuple[Placed, ...]
    capacity: tuple[Capacity, ...]
    needs_tiling: tuple[str, ...] = field(default=())

    @property
    def not_fitting(self) -> list[str]:
        return [f"{c.memory}: {c.detail}" for c in self.capacity if not c.fits and c.memory != "l1"]

    @property
    def fits_all(self) -> bool:
        return not self.not_fitting


def working_sets(mem: TrainingMemory) -> list[tuple[str, str, int]]:
    """(layer, step, bytes) of every per-sample kernel invocation's operands."""
    out = []
    grads = {m.layer.name: m.grad_elems for m in mem.layers}
    for c in mem.cost.layers:
        lay = c.layer
        dense_fw = lay.act_in_elems + lay.params + lay.act_out_elems
        if not c.trainable:
            out.append((lay.name, "frozen_fw", dense_fw * BYTES_PER_ELEM))
            continue
        in_part = c.kept_in * lay.h_in * lay.w_in
        out_part = c.kept_out * lay.h_out * lay.w_out
        g = grads[lay.name]
        out.append((lay.name, "fw", dense_fw * BYTES_PER_ELEM))
        out.append((lay.name, "wg", (in_part + out_part + g) * BYTES_PER_ELEM))
        if c.ig:
            out.append((lay.name, "ig", (out_part + g + in_part) * BYTES_PER_ELEM))
        out.append((lay.name, "update", 2 * g * BYTES_PER_ELEM))
    return out


def _l1_tiles(nbytes: int, l1: int) -> int:
    return 1 if nbytes <= l1 else math.ceil(nbytes / (l1 // 2))


def place(mem: TrainingMemory, platform, new_per_task: int | None = None) -> PlacementReport:
    """Where every tensor lives on `platform` (a harness.platform.Platform) and what fits."""
    cut = mem.cut
    sizes = {name: platform.memory(name).size for name in ("flash", "hyperram", "l2", "l1")}
    entries: list[Placed] = []
    for c in mem.cost.head:
        lay = c.layer
        entries.append(Placed(f"{lay.name}.params", "frozen_params", "flash", lay.params * BYTES_PER_ELEM,
                              lay.name))
    for m in mem.layers:
        name = m.layer.name
        entries.append(Placed(f"{name}.params.image", "trainable_params_image", "flash",
                              m.param_elems * BYTES_PER_ELEM, name,
                              note="pre-trained image the RAM copy is loaded from (not in M)"))
        entries.append(Placed(f"{name}.params", "trainable_params", "hyperram", m.param_elems * BYTES_PER_ELEM,
                              name))
        entries.append(Placed(f"{name}.grad", "weight_grads", "hyperram", m.grad_elems * BYTES_PER_ELEM, name))
        entries.append(Placed(f"{name}.stored_input", "stored_acts", "hyperram",
                              mem.batch * m.act_elems * BYTES_PER_ELEM, name,
                              note=f"{mem.batch} x {m.act_elems} elements"))
    latent = "+".join(cut.latent_tensors)
    entries.append(Placed("replay_buffer", "replay_buffer", "flash", mem.S_replay_bytes,
                          note=f"{mem.replays} x latent {latent} ({cut.latent_elems} elements)"))
    if new_per_task:
        entries.append(Placed("new_latents", "new_latents", "flash", new_per_task * mem.latent_bytes,
                              note=f"{new_per_task} new samples' latents, re-used in epochs 2..E (not in S_replay)"))

    tiling = []
    for layer, step, nbytes in working_sets(mem):
        tiles = _l1_tiles(nbytes, sizes["l1"])
        entries.append(Placed(f"{layer}.{step}.working_set", "working_set", "l2", nbytes, layer, step,
                              fits=nbytes <= sizes["l2"], l1_tiles=tiles))
        if tiles > 1:
            tiling.append(f"{layer}.{step} ({nbytes} B, {tiles} L1 tiles)")

    capacity = []
    for memname in ("flash", "hyperram"):
        used = sum(e.bytes for e in entries if e.memory == memname)
        fits = used <= sizes[memname]
        detail = "" if fits else f"needs {used} B, has {sizes[memname]} B ({used / MB:.2f} MB > {sizes[memname] / MB:.2f} MB)"
        capacity.append(Capacity(memname, sizes[memname], used, "sum", fits, detail))
    ws = [e for e in entries if e.role == "working_set"]
    peak = max(ws, key=lambda e: e.bytes)
    too_big = [e for e in ws if not e.fits]
    capacity.append(Capacity("l2", sizes["l2"], peak.bytes, "peak", not too_big,
                             f"peak {peak.layer}.{peak.step}" if not too_big else
                             f"{len(too_big)} working sets exceed L2, largest {peak.layer}.{peak.step} {peak.bytes} B"))
    capacity.append(Capacity("l1", sizes["l1"], peak.bytes, "peak", not tiling,
                             f"peak {peak.layer}.{peak.step}" if not tiling else
                             f"{len(tiling)} working sets need L1 tiling"))
    return PlacementReport(platform.name, tuple(entries), tuple(capacity), tuple(tiling))
