"""Depthwise 3x3 (padding 1) steps on the register-blocked micro-kernels of dwblock.py.

Channel tiles stream through L1 double-buffered (the DMA gathers the tile's channels of every pixel
while the cores work on the tile before); each input map sits between two zero rows (the padding
above and below, zeroed by the cores at the start of the tile's fork). Work items are (channel pair,
band of rows): cores working in step touch neighbouring words, in different TCDM banks, and maps with
few channels still give every core rows to do."""
from __future__ import annotations

from harness.kernels import plan as planmod
from harness.kernels.dwblock import DwFw, DwIg2, DwWg
from harness.kernels.gemm import _addr, _budget, _timeline
from harness.kernels.spec import cp
from harness.kernels.tensors import info

TILE_CYCLES = 1200   # a channel tile: its DMA commands, the fork, zeroing its padding rows, the barrier


def supported(s) -> bool:
    if s.step in ("fw", "wg"):
        return True
    return s.stride == 1 or (s.h == 2 * s.h_out and s.w == 2 * s.w_out)   # ig


def gen(g, ins) -> bool:
    s = g.spec
    plat = g.plat
    cores = plat.cluster["cores"]
    bpc = plat.dma["bytes_per_cycle"]
    hw, ohw = s.h * s.w, s.h_out * s.w_out
    store = False
    # ins_: (name, symbol, tensor, pixels, padded row width or 0); outs_: (symbol, tensor, pixels)
    w_sym = b_sym = None
    if s.step == "fw":
        x_sym, x = g.tensor_in("x", ins["x"].reshape(hw, s.cin))
        w_sym, w = g.tensor_in("w", ins["w"].reshape(9, s.cin))
        b_sym = g.tensor_in("b", ins["b"])[0] if s.bias else None
        y_sym, y = g.tensor_out("y", (ohw, s.cin))
        store = s.placement != "frozen"
        if store:
            xs_sym, xs = g.tensor_out("xs", (hw, s.k_in))
        ins_ = [("x", x_sym, x, hw, s.w)]
        outs_ = [(y_sym, y, ohw)]
        channels = s.cin
        per_out, out_px = (14 if s.stride == 1 else 17), ohw
    elif s.step == "ig":
        dy_sym, dy = g.tensor_in("dy", ins["dy"].reshape(ohw, s.k_out))
        w_sym, w = g.tensor_in("w", ins["w"].reshape(9, s.cin))
        dx_sym, dx = g.tensor_out("dx", (hw, s.k_in))
        ins_ = [("dy", dy_sym, dy, ohw, s.w_out)]
        outs_ = [(dx_sym, dx, hw)]
        channels = s.k_in
        per_out, out_px = (14 if s.stride == 1 else 4), hw
    else:
        dy_sym, dy = g.tensor_in("dy", ins["dy"].reshape(ohw, s.k_out))
        xs_sym, xs_t = g.tensor_in("xs", ins["xs"].reshape(hw, s.k_in))
        dw_sym, dwt = g.tensor_out("dw", (9, s.k_in))
        db_sym = g.tensor_out("db", (1, s.k_in), ref="db")[0] if s.bias else None
        ins_ = [("dy", dy_sym, dy, ohw, 0), ("xs", xs_sym, xs_t, hw, s.w)]
        outs_ = [(dw_sym, dwt, 9)] + ([(db_sym, info("db", (1, s.k_in)), 1)] if db_sym else [])
        channels = s.k_in
        per_out, out_px = (16 if s.stride == 1 else 19) + (2 if s.bias else 0), ohw
    wrows = (9 if w_sym else 0) + (1 if b_sym else 0)
    in_px = sum(px + (2 * wr if wr else 0) for _, _, _, px, wr in ins_)
    out_rows = sum(px for _, _, px in outs_)

    def mem(tc, sets):
        return sets * (in_px + wrows + out_rows) * cp(tc) * 2
    budget = _budget(plat)
    if mem(2, 2) > budget:
        return False

    def dma(c, rows):
        return rows * max(1, -(-cp(c) * 2 // bpc))

    def compute(c):
        if s.step == "wg":   # items of a pair or of a row of taps, whichever shares the tile better
            c2 = (c + 1) // 2
            return min(-(-c2 // cores) * 3, -(-3 * c2 // cores)) * out_px * per_out // 3 + 300
        return -(-(c // 2) // cores) * out_px * per_out + 300
    # Channel tiles: the stored channels (the first k_in) and the others are tiled apart, so that a tile's
    # stored activations leave straight from its input tile (an odd last stored tile zeroes its pad lane;
    # the next tile starts one channel early, on a word)
    parts = [(0, s.k_in), (s.k_in - s.k_in % 2, channels)] if store and s.k_in < channels else [(0, channels)]
    stored_end = parts[0][1] if store else 0

    def split(t, even, first=0):
        """Tiles of t channels (a multiple of 16: whole rounds of pairs for the cores) and what is left, or
        of at most t channels as even as can be (even sizes but the last), within each part."""
        out = []
        for a, b in parts:
            if first and a == 0 and b - a > first:   # a small first tile: the cores start sooner
                out.append((0, first))
                a = first
            if even:
                nt = -(-(b - a) // t)
                cuts = [a + (b - a) * j // nt // 2 * 2 for j in range(nt)] + [b]
            else:
                cuts = list(range(a, b, t)) + [b]
            out += [(c0, c1 - c0) for c0, c1 in zip(cuts, cuts[1:]) if c1 > c0]
        return out
    best = None
    in_rows = sum(px for _, _, _, px, _ in ins_) + wrows
    for t, even, first in [(t, e, f) for t in list(range(16, channels, 16)) + [channels] for e in (False, True)
                           for f in (0, 16)]:
        tiles = split(t, even, first)
        sets = min(3, len(tiles))
        if mem(max(n for _, n in tiles), sets) > budget:
            continue
        est = _timeline([n for _, n in tiles], lambda c: compute(c) + TILE_CYCLES, lambda c: dma(c, in_rows),
                        lambda c: dma(c, out_rows + (hw if store else 0)), lambda c: 0)
        if best is None or est < best[0]:
            best = (est, t, even, first)
    if best is None:
        return False
    tiles = split(best[1], best[2], best[3])
    tc = max(n for _, n in tiles)
    sets = min(3, len(tiles))
    ib = {name: [g.buf(f"l1_{name}{k}", (px + 2 * wr) * cp(tc) * 2) for k in range(sets)] for name, _, _, px, wr in ins_}
    wb = [g.buf(f"l1_w{k}", 9 * cp(tc) * 2) for k in range(sets)] if w_sym else None
    bb = [g.buf(f"l1_b{k}", cp(tc) * 2) for k in range(sets)] if b_sym else None
    ob = [[g.buf(f"l1_out{j}_{k}", px * cp(tc) * 2) for j, (_, _, px) in enumerate(outs_)] for k in range(sets)]

    def kept(c0, n):
        """Stored channels of the tile at c0: the tiles of the first part only."""
        return n if store and c0 + n <= stored_end else 0

    def interior(name, k, n):
        """Address of the map inside its tile buffer (after the zero row, when it has one)."""
        wr = [wr for nm, _, _, _, wr in ins_ if nm == name][0]
        return f"(uint32_t){ib[name][k]} + {wr * cp(n) * 2}" if wr else f"(uint32_t){ib[name][k]}"
    fns = {}
    warm, set_first = None, {}   # the weight-gradient warm-up fork; each buffer set's first tile (channels)
    for i, (c0, n) in enumerate(tiles):
        k = i % sets
        key = (k, n, kept(c0, n))
        if key in fns:
            continue
        p = cp(n)
        c2 = (n + 1) // 2
        body = []
        for name, _, _, px, wr in ins_:
            if wr:   # the zero rows around the map, in this tile's layout
                row = wr * p // 2
                body += [f"  odl_zero_words((uint32_t *){ib[name][k]}, {row}, {cores});",
                         f"  odl_zero_words((uint32_t *){ib[name][k]} + {(px + wr) * p // 2}, {row}, {cores});"]
        body.append("  pi_cl_team_barrier();")
        if s.step == "fw" or (s.step == "ig" and s.stride == 1):
            flip = s.step == "ig"
            name = ins_[0][0]
            in_h, in_w = (s.h, s.w) if s.step == "fw" else (s.h_out, s.w_out)
            out_h, out_w = (s.h_out, s.w_out) if s.step == "fw" else (s.h, s.w)
            stride = s.stride if s.step == "fw" else 1
            rtn = DwFw(wd=in_w, wo=out_w, stride=stride, flip=flip)
            call = (f"  odl_dw3_items({rtn.name}, (uint32_t *){ob[k][0]}, (const uint32_t *){ib[name][k]}, (const uint32_t *){wb[k]}, "
                    + (f"(const uint32_t *){bb[k]}" if b_sym else "0") + f", {c2}, {out_h}, {out_w}, {in_w}, {stride}, {p // 2}, "
                    f"{_bands(c2, out_h, cores)}, {cores});")
        elif s.step == "ig":
            rtn = DwIg2(wo=s.w_out)
            call = (f"  odl_dw3_items({rtn.name}, (uint32_t *){ob[k][0]}, (const uint32_t *){ib['dy'][k]}, (const uint32_t *){wb[k]}, 0, "
                    f"{c2}, {s.h_out}, {2 * s.w}, {s.w_out}, 1, {p // 2}, {_bands(c2, s.h_out, cores)}, {cores});")
        elif "wg" in fns:   # one task for every tile: its lines stay in the instruction cache from tile to tile
            continue
        else:
            shape = dict(h=s.h, wd=s.w, ho=s.h_out, wo=s.w_out, stride=s.stride)
            full = DwWg(**shape, bias=bool(db_sym), rows=3)
            split = _wg_split([(m + 1) // 2 for _, m in tiles], cores, s.h_out * full.row_instructions())
            rtn = DwWg(**shape, bias=False, rows=1) if split else full
            rtn_b = DwWg(**shape, bias=True, rows=1) if split and db_sym else rtn
            g.asm_more[rtn_b.name] = rtn_b.asm()
            if warm is None and len(tiles) > 1:   # (one tile: nothing to overlap the warm-up's fork with but one DMA)
                for j, (_, m) in enumerate(tiles):
                    set_first.setdefault(j % sets, m)
                zero = [(f"(uint32_t *){ib['xs'][j]}", s.w * cp(m) // 2, (s.h + 1) * s.w * cp(m) // 2) for j, m in set_first.items()]
                warm = _wg_warm(g, rtn.name, rtn_b.name, ob[0][0], ib["xs"][0], ib["dy"][0],
                                ob[0][1] if db_sym else None, p // 2, c2, zero, cores)
            # the tile's buffers and sizes come in the fork's argument (odl_wg_tile below)
            # (the zero rows of a set's first tile are laid in the warm-up fork; a later tile of another
            # size in the same set lays its own, T->cols)
            body = ["  const uint32_t *xs = (const uint32_t *)T->src;",
                    "  if (T->cols) {",
                    f"    odl_zero_words((uint32_t *)xs, T->aux, {cores});",
                    f"    odl_zero_words((uint32_t *)xs + T->aux2, T->aux, {cores});",
                    "    pi_cl_team_barrier();",
                    "  }"]
            call = (f"  odl_dw3_wg_items({rtn.name}, {rtn.name}, {rtn_b.name}, (uint32_t *)T->dst, "
                    f"xs, (const uint32_t *)T->src2, (uint32_t *)T->dst2, T->rows, T->pitch, T->aux, {s.h_out}, {int(split)}, {cores});")
        g.asm_more[rtn.name] = rtn.asm()
        body.append(call)
        if s.step == "ig" and s.stride == 2 and n % 2:   # products with the zero pad give -0: make it +0
            body += ["  pi_cl_team_barrier();", f"  odl_zero_lane((f16 *){ob[k][0]}, {hw}, {p}, {n});"]
        if kept(c0, n) % 2:   # the stored tile's pad lane is the next channel: zero it, after its outputs
            body += ["  pi_cl_team_barrier();", f"  odl_zero_lane((f16 *){ib['x'][k]} + {s.w * p}, {hw}, {p}, {n});"]
        fns["wg" if s.step == "wg" else key] = g.func("\n".join(body))

    def odl_wg_tile(k, n):
        """The weight-gradient task's argument for a tile of n channels in buffer set k."""
        row = s.w * cp(n) // 2   # words of a zero row (and of a map row)
        return dict(src=f"(const void *){ib['xs'][k]}", src2=f"(const void *){ib['dy'][k]}", dst=f"(void *){ob[k][0]}",
                    dst2=f"(void *){ob[k][1]}" if db_sym else "0", rows=(n + 1) // 2, pitch=cp(n) // 2, aux=row,
                    aux2=(s.h + 1) * row)

    def fetch(i):
        c0, n = tiles[i]
        k = i % sets
        q = f"odl_dwq[{k}]"
        lines = [f"  odl_dma_2d(&{q}, {_addr(sym, c0)}, {interior(name, k, n)}, {cp(n) * 2}, {px}, {t.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);"
                 for name, sym, t, px, _ in ins_]
        if w_sym:
            lines.append(f"  odl_dma_2d(&{q}, {_addr(w_sym, c0)}, (uint32_t){wb[k]}, {cp(n) * 2}, 9, {w.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
        if b_sym:
            lines.append(f"  odl_dma_1d(&{q}, {_addr(b_sym, c0)}, (uint32_t){bb[k]}, {cp(n) * 2}, PI_CL_DMA_DIR_EXT2LOC);")
        return lines
    g.decls.append("static PI_L1 odl_dma_t odl_dwq[3], odl_dwo[3];   /* in L1: the master updates them at every command */")
    g.body.append("  for (int i = 0; i < 3; i++) odl_dwq[i].n = odl_dwo[i].n = 0;")
    g.body += fetch(0)
    # with a warm-up fork, every buffer set's first tile is queued at once behind the first (the sets are all
    # free): the master's next forks then find them arrived and issue only the results
    early = min(sets, len(tiles)) if warm else 1
    for i in range(1, early):
        g.body += fetch(i)
    if warm:
        g.fork(warm)
    laid = dict(set_first) if warm else {}   # set -> the channels of the tile whose zero rows it holds
    for i, (c0, n) in enumerate(tiles):
        k = i % sets
        g.tiles += 1
        g.body.append(f"  odl_dma_wait(&odl_dwq[{k}]);")
        if early <= i + 1 < len(tiles):   # the next tile into the next set, once that set's results have left
            g.body.append(f"  odl_dma_wait(&odl_dwo[{(i + 1) % sets}]);")
            g.body += fetch(i + 1)
        if s.step == "wg":
            g.fork(fns["wg"], **odl_wg_tile(k, n), cols=int(laid.get(k) != n))
            laid[k] = n
        else:
            g.fork(fns[(k, n, kept(c0, n))])
        for j, (sym, t, px) in enumerate(outs_):
            g.body.append(f"  odl_dma_2d(&odl_dwo[{k}], {_addr(sym, c0)}, (uint32_t){ob[k][j]}, {cp(n) * 2}, {px}, {t.pitch * 2}, PI_CL_DMA_DIR_LOC2EXT);")
        if kept(c0, n):
            g.body.append(f"  odl_dma_2d(&odl_dwo[{k}], {_addr(xs_sym, c0)}, {interior('x', k, n)}, {cp(n) * 2}, {hw}, {xs.pitch * 2}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body += [f"  odl_dma_wait(&odl_dwo[{k}]);" for k in range(sets)]
    return True


def _wg_warm(g, fn: str, fn_b: str, dw: str, x: str, dy: str, db: str | None, p2: int, c2: int, zero: list,
             cores: int) -> str:
    """A fork while the first tile's DMA runs: it lays the zero rows of every buffer set ((buffer, words, offset
    of the bottom row) in `zero`; the DMA writes only between them) and runs the weight-gradient routines for
    one output row each (half the cores one, half the other), so that their lines reach the shared
    instruction cache before the first tile's fork, whose cores would otherwise wait on every cold line
    together. The routines only read L1 (the first tile's buffers, whatever they hold) and write the first
    tile's output buffers, which its fork then overwrites entirely."""
    typ = "void (*)(uint32_t *, const uint32_t *, const uint32_t *, uint32_t *, uint32_t, uint32_t)"
    db_arg = f"(uint32_t *){db} + c" if db else "0"
    lay = "".join(f"  odl_zero_words({b}, {n}, {cores});\n  odl_zero_words({b} + {off}, {n}, {cores});\n"
                  for b, n, off in zero)
    return g.func(lay + f"  int c = pi_core_id() % {c2};\n"
                  f"  (({typ})(pi_core_id() & 1 ? {fn_b} : {fn}))((uint32_t *){dw} + c, (const uint32_t *){x} + c, "
                  f"(const uint32_t *){dy} + c, {db_arg}, {4 * p2}, 1);")


def _bands(c2: int, rows: int, cores: int) -> int:
    """Bands of rows per channel pair: more than one only when the pairs are fewer than twice the cores."""
    nb = 1
    while c2 * nb < 2 * cores and nb < rows:
        nb += 1
    return nb


WG_ITEM_INSTRUCTIONS = 45   # a weight-gradient routine's call: saving and restoring registers, its setup


def _wg_split(pairs: list, cores: int, pass_instructions: int) -> bool:
    """Whether the weight gradient runs one item a row of taps (more, shorter items: the cores share a tile
    more evenly, each item pays its call) rather than one a channel pair. One choice for all the tiles
    (`pairs` channel pairs each), so that they share one routine in the instruction caches."""
    whole = sum(-(-c2 // cores) * (3 * pass_instructions + WG_ITEM_INSTRUCTIONS) for c2 in pairs)
    split = sum(-(-3 * c2 // cores) * (pass_instructions + WG_ITEM_INSTRUCTIONS) for c2 in pairs)
    return split < whole
