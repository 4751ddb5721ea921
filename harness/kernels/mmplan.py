"""Matrix products as register blocks: which micro-kernel computes which block, and which core runs it.

A product tile C[M][N] = A . B^T is cut into blocks along A (rows of A) and along B (rows of B); the
side whose pairs make C's FP16 words (C's columns) takes blocks of 4 (and one of 2 when its length is
2 mod 4), the other side blocks of 5 and 4 (fewer, larger blocks; 5x4 is the largest block the
registers hold). Every shape is a constant of the generated program, so the plan is made here: the
blocks in row-major order (A block by A block) are split into eight contiguous shares of equal
estimated cycles, each share into runs (one A block, consecutive B blocks of one shape: one call of
a micro-kernel), and the C gets one table of runs and where each core's runs start.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.kernels.mmblock import Block, block_asm, block_fits

_SMALL = {1: [1], 2: [2], 3: [3], 6: [3, 3], 7: [4, 3], 11: [4, 4, 3]}
RUN_CYCLES = 45   # a call of a micro-kernel: saving and restoring registers, the table entry


def free_blocks(d: int) -> list[int]:
    """Block sizes along a side that is not paired into C words: 5s and 4s, as few blocks as can be."""
    if d in _SMALL:
        return list(_SMALL[d])
    for a4 in range(5):
        if d - 4 * a4 >= 0 and (d - 4 * a4) % 5 == 0:
            return [5] * ((d - 4 * a4) // 5) + [4] * a4
    raise AssertionError(d)


def paired_blocks(d: int) -> list[int]:
    """Block sizes along the side paired into C words (d even): 4s and one 2 when d is 2 mod 4."""
    assert d % 2 == 0, d
    return [4] * (d // 4) + ([2] if d % 4 else [])


def _split(cells: list, cores: int) -> list:
    """The cells (row-major, (A block, B block, cycles)) cut into `cores` contiguous shares whose largest
    estimated cycles (a run's call for every A block a share enters) is the least possible: a binary
    search on that bound, each candidate filled greedily from the last cell back, so that a short share
    falls to core 0 (the master, which also drives the DMA between forks). Returns (bound, shares)."""
    def fill(limit):
        out, t, row = [[]], 0, None
        for cell in reversed(cells):
            c = cell[2] + (RUN_CYCLES if cell[0] != row else 0)
            if out[-1] and t + c > limit:
                out.append([])
                t, c = 0, cell[2] + RUN_CYCLES
            out[-1].append(cell)
            t += c
            row = cell[0]
        return out
    lo, hi = max(c for _, _, c in cells) + RUN_CYCLES, sum(c for _, _, c in cells) + RUN_CYCLES * len(cells)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(fill(mid)) <= cores:
            hi = mid
        else:
            lo = mid + 1
    parts = [list(reversed(p)) for p in fill(lo)]
    parts.reverse()
    return lo, [[] for _ in range(cores - len(parts))] + parts


@dataclass(frozen=True)
class Side:
    """One operand of a tile: its rows (the side of C it makes) and how its words lie in L1."""
    rows: int            # rows used (C's rows for A when not trans, ...)
    pitch: int = 0       # bytes between rows, when read in place; 0: packed into panels by block
    skew: int = 0        # bytes added after every panel (panels only): spreads panels over the TCDM banks


@dataclass
class Tile:
    """One product tile and its plan."""
    k2: int
    a: Side
    b: Side
    c_pitch: int          # bytes between C rows
    trans: bool = False   # C rows are B's rows
    bias: bool = False
    cores: int = 8
    segs: int = 1         # the reduction in segments (a convolution's rows of taps), A jumping a_jump bytes
    a_jump: int = 0
    a_list: list = None   # A blocks given outright: (rows, byte offset, first C row) each
    c_arg: bool = False   # the C pitch an argument of the micro-kernels (tiles of different widths share them)
    act: str = ""         # relu, relu6 or hswish applied before the stores (mmblock.Block.act)
    odd_a: bool = False   # trans: A (the side paired into C words) in blocks of 5 and 4 too, a lone lane of a
                          # 5-row block stored as a halfword (when B cuts only into 4s: 5x4 blocks, not 4x4)
    blocks_a: list = field(default_factory=list)
    blocks_b: list = field(default_factory=list)
    kernels: list = field(default_factory=list)   # Block, in order of first use
    runs: list = field(default_factory=list)      # (kernel index, nblocks, a_off, b_off, c_off, bias_off)
    first: list = field(default_factory=list)     # runs[first[c]:first[c+1]] are core c's

    def __post_init__(self):
        pair_a = self.trans
        self.blocks_b = free_blocks(self.b.rows) if pair_a else paired_blocks(self.b.rows + self.b.rows % 2)
        if self.a_list is not None:
            self.blocks_a = [r for r, _, _ in self.a_list]
        else:
            even_a = self.a.rows + self.a.rows % 2
            if pair_a and self.odd_a and not block_fits(5, max(self.blocks_b), self.a.pitch, self.b.pitch):
                self.odd_a = False   # 5 rows of A far apart: a pointer each, more than the registers hold
            if pair_a and self.odd_a:
                self.blocks_a = free_blocks(even_a)
            else:
                self.blocks_a = paired_blocks(even_a) if pair_a else free_blocks(self.a.rows)
        self._plan()

    # ---- layout of the operands and of C
    def panel_bytes(self, side: Side, sizes: list) -> int:
        return sum(4 * self.k2 * s + side.skew for s in sizes)

    def _offsets(self, side: Side, sizes: list) -> list:
        offs, at, row = [], 0, 0
        for s in sizes:
            offs.append((row * side.pitch) if side.pitch else at)
            at += 4 * self.k2 * s + side.skew
            row += s
        return offs

    def block(self, ma: int, nb: int, arow: int = 0) -> Block:
        b_step = nb * self.b.pitch if self.b.pitch else 4 * self.k2 * nb + self.b.skew
        return Block(m=ma, n=nb, k2=self.k2, a_pitch=self.a.pitch, b_pitch=self.b.pitch, b_step=b_step,
                     c_pitch=0 if self.c_arg else self.c_pitch, trans=self.trans, bias=self.bias, segs=self.segs,
                     a_jump=self.a_jump, c_odd=self.trans and ma % 2 == 1 and arow % 2 == 1, act=self.act)

    def _variant(self, ia: int) -> tuple:
        arow = sum(self.blocks_a[:ia]) if self.a_list is None else self.a_list[ia][2]
        return (self.blocks_a[ia], arow % 2) if self.odd_a else ()

    def _plan(self):
        ao, bo = self._offsets(self.a, self.blocks_a), self._offsets(self.b, self.blocks_b)
        arow = [sum(self.blocks_a[:i]) for i in range(len(self.blocks_a))]
        if self.a_list is not None:
            ao = [o for _, o, _ in self.a_list]
            arow = [r for _, _, r in self.a_list]
        brow = [sum(self.blocks_b[:i]) for i in range(len(self.blocks_b))]
        cells = []   # row-major: (ia, ib, cost)
        for ia, ma in enumerate(self.blocks_a):
            for ib, nb in enumerate(self.blocks_b):
                cells.append((ia, ib, self.block(ma, nb).cycles()))
        # the larger blocks first when that makes the largest share smaller: the few smaller ones (a last B
        # block of 2 rows, A blocks of 4) then fill the shares at the end instead of tipping every share
        # that holds one over the others
        bound, shares = _split(cells, self.cores)
        by_size = sorted(cells, key=lambda cell: -cell[2])
        bound_s, shares_s = _split(by_size, self.cores)
        if bound_s < bound:
            shares = shares_s
        # Within each A block row of its share, core c starts at B block c * nb / cores and wraps around:
        # cores that run in step then read different B panels (in different banks) instead of one word
        nbb = len(self.blocks_b)
        for c, share in enumerate(shares):
            start = c * nbb // self.cores
            by_row = {}
            for cell in share:
                by_row.setdefault(cell[0], []).append(cell)
            out = []
            # A blocks of one routine together (5-row A blocks at even and odd first lanes are two
            # routines): a core then refills its instruction cache once per routine, not at every run
            for ia in sorted(by_row, key=lambda ia: (self._variant(ia), ia)):
                row = sorted(by_row[ia], key=lambda cell: (cell[1] - start) % nbb)
                out += row
            shares[c] = out
        kidx = {}
        self.runs, self.first = [], []
        for share in shares:
            self.first.append(len(self.runs))
            i = 0
            while i < len(share):
                ia, ib, _ = share[i]
                j = i + 1
                while (j < len(share) and share[j][0] == ia and share[j][1] == share[j - 1][1] + 1
                       and self.blocks_b[share[j][1]] == self.blocks_b[ib]):
                    j += 1
                blk = self.block(self.blocks_a[ia], self.blocks_b[ib], arow[ia])
                if blk not in kidx:
                    kidx[blk] = len(self.kernels)
                    self.kernels.append(blk)
                if self.trans:
                    c_off = brow[ib] * self.c_pitch + 2 * arow[ia]
                    bias_off = 4 * arow[ia]
                else:
                    c_off = arow[ia] * self.c_pitch + 2 * brow[ib]
                    bias_off = 4 * brow[ib]
                self.runs.append((kidx[blk], j - i, ao[ia], bo[ib], c_off, bias_off))
                i = j
        self.first.append(len(self.runs))

    def core_cycles(self) -> list:
        """Estimated cycles of each core's share."""
        out = []
        for c in range(self.cores):
            t = 0
            for k, nb, *_ in self.runs[self.first[c]:self.first[c + 1]]:
                t += RUN_CYCLES + nb * self.kernels[k].cycles()
            out.append(t)
        return out

    # ---- C text
    def table(self, name: str) -> str:
        """The tile's run table: `name`_runs, `name`_first, `name`_fn."""
        fns = ", ".join(k.name for k in self.kernels)
        runs = ",\n  ".join("{%d, %d, %d, %d, %d, %d}" % r for r in self.runs)
        first = ", ".join(str(f) for f in self.first)
        fn_t = "odl_mm_fnp" if self.c_arg else "odl_mm_fn"
        return (f"static {fn_t} const {name}_fn[] ODL_TABLE = {{ {fns} }};\n"
                f"static const odl_run_t {name}_runs[] ODL_TABLE = {{\n  {runs}\n}};\n"
                f"static const uint16_t {name}_first[] ODL_TABLE = {{ {first} }};\n")

    def call(self, name: str, a: str, b: str, c: str, bias: str = "0") -> str:
        if self.c_arg:
            return f"odl_mm_runs_p({name}_fn, {name}_runs, {name}_first, {a}, {b}, {c}, {bias}, {self.c_pitch});"
        return f"odl_mm_runs({name}_fn, {name}_runs, {name}_first, {a}, {b}, {c}, {bias});"


def kernels_asm(tiles: list) -> str:
    seen, out = set(), []
    for t in tiles:
        for k in t.kernels:
            if k.name not in seen:
                seen.add(k.name)
                out += block_asm(k)
    return "\n".join(out)


def prototypes(tiles: list) -> str:
    seen, out = set(), []
    for t in tiles:
        for k in t.kernels:
            if k.name not in seen:
                seen.add(k.name)
                extra = "" if k.c_pitch else ", uint32_t"
                out.append(f"void {k.name}(const void *, const void *, void *, uint32_t, const void *{extra});")
    return "\n".join(out)
