"""Tiling: choose tile sizes so that a step's working set fits the platform's L1.

A plan names, for each loop of the generated kernel, its tile size; the generated code then runs
the tiles with double-buffered cluster-DMA transfers. When no tiling fits, a UserError says which
tensor is too large for L1."""
from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UserError
from harness.kernels.spec import KernelSpec, cp
from harness.platform import Platform

L1_RESERVE = 1024  # bytes of L1 kept for the runtime's own variables


L2_RESERVE = 96 * 1024  # code, runtime data and the FC stack


def l2_budget(plat: Platform) -> int:
    return plat.memory("l2").size - L2_RESERVE


def l1_budget(plat: Platform) -> int:
    return plat.memory("l1").size - plat.cluster["cores"] * plat.cluster["stack_size"] - L1_RESERVE


def r4(n: int) -> int:
    return (n + 3) // 4 * 4


def panel_bytes(rows: int, kdim: int) -> int:
    return r4(rows) * ((kdim + 1) // 2) * 4


@dataclass(frozen=True)
class MatmulPlan:
    m: int          # rows of C
    n: int          # columns of C
    kdim: int       # reduction length
    tm: int         # tile sizes
    tn: int
    tk: int
    l1_bytes: int

    @property
    def m_tiles(self):
        return [(m0, min(self.m, m0 + self.tm)) for m0 in range(0, self.m, self.tm)]

    @property
    def n_tiles(self):
        return [(n0, min(self.n, n0 + self.tn)) for n0 in range(0, self.n, self.tn)]

    @property
    def k_tiles(self):
        return [(k0, min(self.kdim, k0 + self.tk)) for k0 in range(0, self.kdim, self.tk)]


def _candidates(total: int, step: int):
    """Tile sizes to try, largest first: the whole extent, then multiples of `step` below it."""
    seen = []
    if total not in seen:
        seen.append(total)
    t = (total - 1) // step * step
    while t >= step:
        if t not in seen:
            seen.append(t)
        t = t // 2 // step * step if t > 8 * step else t - step
    return seen


def plan_matmul(spec: KernelSpec, plat: Platform, m: int, n: int, kdim: int, mem, m_step: int = 4,
                n_step: int = 4, k_step: int = 2, split_k: bool = False) -> MatmulPlan:
    """Find (tm, tn, tk) with mem(tm, tn, tk) <= budget, preferring few tiles (large tiles).
    `mem` returns the L1 bytes of a tile choice."""
    budget = l1_budget(plat)
    best = None
    for tn in _candidates(n, n_step):
        for tk in (_candidates(kdim, k_step) if split_k else [kdim]):
            for tm in _candidates(m, m_step):
                need = mem(tm, tn, tk)
                if need <= budget:
                    tiles = -(-m // tm) * -(-n // tn) * -(-kdim // tk)
                    key = (tiles, -tm * tn * tk)
                    if best is None or key < best[0]:
                        best = (key, MatmulPlan(m, n, kdim, tm, tn, tk, need))
                    break
    if best is None:
        raise UserError(f"{spec.name}: does not fit: cannot be tiled into the {budget} bytes of L1 left on {plat.name} "
                        f"(even the smallest tile needs {mem(min(m, m_step), min(n, n_step), min(kdim, k_step))} bytes)")
    return best[1]


def plan_rows(spec: KernelSpec, plat: Platform, total: int, mem, step: int = 1) -> int:
    """Largest count of rows (pixels, channels, ...) per tile with mem(rows) within the budget."""
    budget = l1_budget(plat)
    for t in _candidates(total, step):
        if mem(t) <= budget:
            return t
    raise UserError(f"{spec.name}: does not fit: cannot be tiled into the {budget} bytes of L1 left on {plat.name} "
                    f"(one tile of {step} needs {mem(step)} bytes)")


__all__ = ["MatmulPlan", "plan_matmul", "plan_rows", "l1_budget", "panel_bytes", "r4", "cp"]
