"""Matrix-product steps (pointwise and batched linear layers) on the register-blocked micro-kernels.

Forward and input gradient: C[M][N] = A . B^T with A read in place (rows of the input tile as the DMA
left them, M pixels or samples) and B packed once into panels (the weights; their transpose for the
input gradient). The A tiles stream through L1 double-buffered: the DMA brings tile i + 1 and takes
tile i - 1's results out while the cores compute tile i, so only the first tile's arrival and the last
tile's departure are waited for. When the weights are the larger operand (few pixels), the roles turn:
the weights are read in place, tile by tile, and the few input rows are packed (`trans`: C's rows are
then B's rows).

Weight gradient: dW[co][ci] = sum_p dY[p][co] Xs[p][ci]: both operands have the reduction (pixels) as
their rows, so both are transposed: dY into rows of K-pairs (A, read in place by the micro-kernels),
Xs into panels (B); dW streams out by tiles of output channels.

Convolution forward: an implicit matrix product over the input tile itself (gen_conv_fw).

Tile sizes come from a model of the DMA queue and the cores (_timeline): the sizes that minimise the
estimated end of the program, not the largest that fit.

The stored activations of the forward pass leave L1 by DMA only: from the input tile itself when every
channel is kept, else gathered by a 2-D transfer into a buffer of their own (a pad lane zeroed by the
cores when an odd number of channels is kept).
"""
from __future__ import annotations

from harness.kernels import plan as planmod
from harness.kernels.mmblock import IMM_MAX
from harness.kernels.mmplan import Side, Tile, free_blocks, paired_blocks
from harness.kernels.spec import cp


def _panel_table(sizes: list, k2: int, skew: int) -> tuple[list, int]:
    """(row0, rows, word offset) per panel, and the panels' bytes."""
    tab, row, off = [], 0, 0
    for s in sizes:
        tab += [row, s, off // 4]
        row += s
        off += 4 * k2 * s + skew
    return tab, off


FORK_CYCLES = 500   # a fork and its barrier, with the wake-up of the cores and the master's DMA commands
WG_FORK = 1000      # the weight gradient's: its tasks are larger, their first run refills more code
WT_FORK = 1500      # the input gradient's with W^T streaming: a transition between its tiles refills about 1,100
                    # cycles of code (the master's commands, the next task and its transposition), by timeline


def _timeline(sizes, cost, in_cycles, out_cycles, xs_cycles, lead=(0, 0)) -> int:
    """End of a tile sequence: the cores run tile after tile; the DMA (one queue, in order) brings each
    tile's rows when the tile before starts, takes the stored activations away when a tile starts and the
    results when it ends. lead = (DMA cycles, then core cycles) of the resident operand, before the first
    tile (its rows queue behind that DMA)."""
    dma = lead[0] + in_cycles(sizes[0])
    ready = dma
    cpu = lead[0] + lead[1]
    for i, r in enumerate(sizes):
        start = max(cpu, ready)
        dma = max(dma, start) + xs_cycles(r)
        if i + 1 < len(sizes):
            dma = max(dma, start) + in_cycles(sizes[i + 1])
            ready = dma
        cpu = start + cost(r)
        dma = max(dma, cpu) + out_cycles(r)
    return max(cpu, dma)


def plan_tiles(total: int, tmax: int, tile_cycles, in_cycles, out_cycles, xs_cycles=lambda r: 0, step: int = 5,
               lead=(0, 0), fork: int = FORK_CYCLES, two: bool = True) -> list:
    """M tiles (row ranges) of at most tmax rows that minimise the estimated time: every tile's slowest
    core (tile_cycles(rows)) plus a fork, the first tile's arrival (in_cycles(rows)) and the last one's
    departure (out_cycles(rows)), which nothing overlaps. Sizes are multiples of 5 where they can be, so
    that every core gets the same number of 5-row blocks."""
    cache = {}

    def cost(rows):
        if rows not in cache:
            cache[rows] = tile_cycles(rows) + fork
        return cache[rows]
    best = None
    edges = sorted({min(total, tmax, step * e) for e in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)} | {min(total, tmax)})
    for first in edges:
        # two: two tiles too, the first and all the rest whatever its size (by measurement, not for the
        # column chunks of a classifier's input gradient in one fork: its estimates do not tell such
        # plans apart, on pulp-open it took 4 chunks instead of 5 and ran 21 % slower)
        for last in sorted(set(edges) | ({total - first} if two and 0 < total - first <= tmax else set())):
            if first + last > total:
                if first != total or last != total:
                    continue
            mid = total - first - (last if first < total else 0)
            n_min = -(-mid // tmax) if mid > 0 else 0
            for n in ([0] if mid == 0 else range(max(1, n_min), n_min + 9)):
                if (mid == 0) != (n == 0):
                    continue
                if n and -(-mid // n) > tmax:
                    continue
                sizes = [first]
                if n:
                    q = mid // step // n * step if mid >= step * n else mid // n
                    rest = mid - q * n
                    mids = [q] * n
                    for i in range(n):   # spread the rest in steps of 5 (then 1)
                        inc = step if rest >= step else rest
                        if inc == 0:
                            break
                        mids[i] += inc
                        rest -= inc
                    mids[-1] += rest
                    if min(mids) <= 0 or max(mids) > tmax:
                        continue
                    sizes += mids
                if first < total:
                    sizes.append(last)
                t = _timeline(sizes, cost, in_cycles, out_cycles, xs_cycles, lead)
                if best is None or t < best[0]:
                    best = (t, sizes)
    if best is None:   # no mix of edge and middle tiles fits: even tiles of at most tmax
        n = -(-total // tmax)
        best = (0, [total * (i + 1) // n - total * i // n for i in range(n)])
    cuts, at = [], 0
    for r in best[1]:
        cuts.append((at, at + r))
        at += r
    return cuts


def gen_mm_fw_ig(g, a_sym, a, b_sym, b, m: int, n: int, kdim: int, out_sym, out, bias_sym, b_mode: str,
                 keep: tuple | None = None) -> bool:
    """C[m][n] = A . B^T (+ bias): A rows of tensor `a` (m rows, K = kdim contiguous); B rows of `b`
    (b_mode 'rows', K contiguous) or its columns (b_mode 'cols': B[r][k] = b[k][r], the first kdim rows
    of b). `keep` = (xs_sym, xs, k_in): the stored activations, the first k_in columns of A's rows.
    Streams the larger operand through L1 by tiles and packs the smaller one once; False when even
    the smallest tiles do not fit L1 (the caller then uses the generic tiled path)."""
    plat = g.plat
    dma_bpc = plat.dma["bytes_per_cycle"]
    budget = _budget(plat)
    cores = plat.cluster["cores"]
    k2 = (kdim + 1) // 2
    npad = cp(n)
    pa_l2 = a.pitch * 2
    pa = _padded(plat, pa_l2)
    skew = 4
    xs_stage = keep is not None and keep[2] < a.cols
    xs_row = cp(keep[2]) * 2 if keep else 0
    bias_bytes = npad * 2 + 4 * npad if bias_sym else 0
    # the weights: rows (K contiguous) for the forward, the first kdim rows of W for the input gradient
    w_rows = b_mode == "rows"
    pw_l2 = b.pitch * 2
    pw = _padded(plat, pw_l2) if w_rows else 0
    # a reduction over few channels (a classifier's input gradient over its classes): the weights' columns
    # arrive in chunks within one fork, the results leave from inside it
    if not w_rows and kdim <= 16 and m >= 8:
        chunks = plan_cols(g, m, pa, k2, kdim, n, (m * pa // dma_bpc, 0), m * pa)
        if chunks:
            araw = g.buf("l1_a", m * pa)
            _trackers(g)
            g.body += _rows_in("dq[0]", f"(uint32_t){a_sym}", araw, m, pa_l2, pa)
            one_fork_cols(g, m, araw, pa, k2, b_sym, b.pitch, kdim, chunks, out_sym, out.pitch)
            return True
    plans = []
    # (1) stream A (M tiles), the weights packed once
    bsizes = paired_blocks(npad)
    btab, bpan_bytes = _panel_table(bsizes, k2, skew)
    braw_bytes = n * pw_l2 if w_rows else kdim * npad * 2

    def mem_m(tm):
        return braw_bytes + bpan_bytes + bias_bytes + 2 * tm * pa + 2 * tm * out.pitch * 2 + (2 * tm * xs_row if xs_stage else 0)
    tmax = _largest(m, lambda t: mem_m(t) <= budget)
    if tmax:
        def tile_m(rows):
            return max(Tile(k2=k2, a=Side(rows=rows, pitch=pa), b=Side(rows=npad, skew=skew), c_pitch=out.pitch * 2,
                            bias=bool(bias_sym), cores=cores).core_cycles())
        pack = (2 if w_rows else 5) * npad * k2 // cores + FORK_CYCLES
        tiles = plan_tiles(m, tmax, tile_m, lambda r: r * (pa + (xs_row if xs_stage else 0)) // dma_bpc,
                           lambda r: r * out.pitch * 2 // dma_bpc, lambda r: r * xs_row // dma_bpc)
        est = (braw_bytes // dma_bpc + pack
               + _timeline([r1 - r0 for r0, r1 in tiles], lambda r: tile_m(r) + FORK_CYCLES,
                           lambda r: r * pa // dma_bpc, lambda r: r * out.pitch * 2 // dma_bpc, lambda r: r * xs_row // dma_bpc))
        plans.append((est, "m", tiles))
    # (2) stream the weights' rows (N tiles) as A, the M rows packed once as B (C's rows are B's: trans)
    if w_rows:
        msizes = free_blocks(m)
        mtab, mpan_bytes = _panel_table(msizes, k2, skew)

        def mem_n(tn):
            return (m * pa_l2 + mpan_bytes + bias_bytes + 2 * (tn + 1) * pw + 2 * m * cp(tn) * 2
                    + (m * xs_row if xs_stage else 0))
        nmax = _largest(n, lambda t: mem_n(t) <= budget, step=4)
        if nmax:
            def tile_n(cols):
                return max(Tile(k2=k2, a=Side(rows=cols, pitch=pw), b=Side(rows=m, skew=skew), c_pitch=cp(cols) * 2,
                                trans=True, bias=bool(bias_sym), cores=cores, odd_a=odd_a(m, plat)).core_cycles())
            ntiles = plan_tiles(n, nmax, tile_n, lambda c: c * pw // dma_bpc, lambda c: m * cp(c) * 2 // dma_bpc,
                                step=4)
            est = ((m * pa_l2 + (m * xs_row if keep else 0)) // dma_bpc + 2 * m * k2 // cores + FORK_CYCLES
                   + _timeline([c1 - c0 for c0, c1 in ntiles], lambda c: tile_n(c) + FORK_CYCLES,
                               lambda c: c * pw // dma_bpc, lambda c: m * cp(c) * 2 // dma_bpc, lambda c: 0))
            plans.append((est, "n", ntiles))
    # (3) stream the columns of W (N tiles) for the input gradient: each tile transposed into panels by
    # the cores at its start, the M rows of dY read in place
    if not w_rows:
        def mem_c(tn):
            return (m * pa + 2 * kdim * cp(tn) * 2 + _panel_table(paired_blocks(cp(tn)), k2, skew)[1]
                    + 2 * m * cp(tn) * 2)
        nmax = _largest(n, lambda t: mem_c(t) <= budget, step=4)
        if nmax:
            def tile_c(cols):
                t = _wt_tile(m, pa, cols, k2, skew, plat)
                nu = len(units_panels(_wt_panels(t), k2, skew)) // 4
                parts = units_split(nu, kdim, cores)
                return max(t.core_cycles()) + -(-parts * nu // cores) * (PAIR_CYCLES * (kdim // 2) // parts + UNIT_CALL)
            ctiles = plan_tiles(n, nmax, tile_c, lambda c: kdim * cp(c) * 2 // dma_bpc, lambda c: m * cp(c) * 2 // dma_bpc,
                                step=4, lead=(m * pa // dma_bpc, 0), fork=WT_FORK)
            # the first fork as the other plans' (they count their transitions at FORK_CYCLES too)
            est = _timeline([c1 - c0 for c0, c1 in ctiles], lambda c: tile_c(c) + FORK_CYCLES,
                            lambda c: kdim * cp(c) * 2 // dma_bpc, lambda c: m * cp(c) * 2 // dma_bpc, lambda c: 0,
                            (m * pa // dma_bpc, 0)) + (len(ctiles) - 1) * (WT_FORK - FORK_CYCLES)
            plans.append((est, "c", ctiles))
    if not plans:
        return False
    est, how, tiles = min(plans, key=lambda p: p[0])
    if how == "c":
        _stream_wt(g, a_sym, a, pa, b_sym, b, m, n, kdim, k2, out_sym, out, tiles, skew)
    elif how == "m":
        _stream_a(g, a_sym, a, pa, b_sym, b, w_rows, braw_bytes, bsizes, btab, bpan_bytes, m, n, kdim, k2, out_sym,
                  out, bias_sym, keep, xs_stage, xs_row, tiles, skew)
    else:
        _stream_w(g, a_sym, a, pa_l2, b_sym, b, pw, msizes, mtab, mpan_bytes, m, n, k2, out_sym, out, bias_sym, keep,
                  xs_stage, xs_row, tiles, skew)
    return True


# In the first tile's fork the cores pack the resident operand while the tile's rows arrive; the master
# then waits for them (without counting it as DMA wait: it is inside the forked compute)
FIRST_WAIT = "\n  if (pi_core_id() == 0) odl_dma_wait_quiet(&dq[0]);\n  pi_cl_team_barrier();\n"


def _trackers(g) -> None:
    decl = "static PI_L1 odl_dma_t dq[2], dc[2], dx[2];   /* in L1: the master updates them at every command */"
    if decl not in g.decls:
        g.decls.insert(0, decl)
        g.body.append("  for (int i = 0; i < 2; i++) dq[i].n = dc[i].n = dx[i].n = 0;")


TABLE_ROOM = 1024   # bytes of L1 the planners leave for run tables and DMA records (tables go to L2 beyond)


def _budget(plat) -> int:
    return planmod.l1_budget(plat) - TABLE_ROOM


def _padded(plat, pitch: int) -> int:
    """L1 pitch of rows read in place: one word longer when the pitch is a multiple of the banks' span,
    so that the rows of every core's block lie in different banks (the DMA reads each row with the
    next row's first word)."""
    l1 = plat.memory("l1")
    span = l1.banks * l1.bank_width if plat.cluster.get("tcdm_conflicts") else 0
    return pitch + 4 if span and pitch % span == 0 else pitch


def units_panels(sizes: list, k2: int, skew: int) -> list:
    """Units of odl_units_t that fill the panels of `sizes` rows: pairs of adjacent columns, the second
    one word after the first in one panel (code 2), or, after a panel of odd rows, its last row and the
    next panel's first of the same height (code 1 + the words from the one to the other); a single
    column (code 1) where no pair is left."""
    tab, row, off, start = [], 0, 0, []
    for h in sizes:
        start.append(off // 4)
        off += 4 * k2 * h + skew
    r, p, i = 0, 0, 0   # column r is row i of panel p
    while p < len(sizes):
        h = sizes[p]
        if i + 1 < h:
            tab += [r, 2, start[p] + i, h]
            r, i = r + 2, i + 2
        elif i + 1 == h and p + 1 < len(sizes) and sizes[p + 1] == h:
            tab += [r, 1 + start[p + 1] - (start[p] + i), start[p] + i, h]
            r, p, i = r + 2, p + 1, 1
        elif i + 1 == h:
            tab += [r, 1, start[p] + i, h]
            r, i = r + 1, i + 1
        if i >= h:
            p, i = p + 1, 0
    return tab


def units_rows(cols: int, row_words: int) -> list:
    """Units of odl_units_t that fill `cols` rows of a transposed matrix, rows `row_words` words apart."""
    tab = []
    for r in range(0, cols, 2):
        tab += [r, min(2, cols - r), r * row_words, 1]
    return tab + [row_words]


def odd_a(b_rows: int, plat) -> bool:
    """Whether trans blocks cut their paired side (A) into 5s and 4s: when B's side cuts only into 4s (16
    pixels), so that the blocks are 5x4 (29 instructions for 40 MACs) rather than 4x4 (24 for 32). Only
    where every core has its own FPU: cores that share FPUs wait for them, not for their loads, and the
    two 5-row routines are more code to fetch (pulp-open: 1.5 - 2.7 % slower)."""
    return 5 not in free_blocks(b_rows) and plat.cluster["fpus"] >= plat.cluster["cores"]


def _largest(total: int, fits, step: int = 1) -> int:
    t = total
    while t > 0 and not fits(t):
        t -= step if t <= 16 * step else max(step, t // 16 // step * step)
    return max(0, t)


def _stream_a(g, a_sym, a, pa, b_sym, b, w_rows, braw_bytes, bsizes, btab, bpan_bytes, m, n, kdim, k2, out_sym, out,
              bias_sym, keep, xs_stage, xs_row, tiles, skew):
    plat = g.plat
    cores = plat.cluster["cores"]
    npad = cp(n)
    pa_l2 = a.pitch * 2
    c_pitch = out.pitch * 2
    tm = max(r1 - r0 for r0, r1 in tiles)
    braw = g.buf("l1_braw", braw_bytes)
    bpan = g.buf("l1_bpan", bpan_bytes)
    araw = [g.buf("l1_a0", tm * pa), g.buf("l1_a1", tm * pa)]
    cbuf = [g.buf("l1_c0", tm * c_pitch), g.buf("l1_c1", tm * c_pitch)]
    xsb = [g.buf("l1_xs0", tm * xs_row), g.buf("l1_xs1", tm * xs_row)] if xs_stage else araw
    b32 = "0"
    if bias_sym:
        b16 = g.buf("l1_bias16", npad * 2)
        b32 = g.buf("l1_bias32", 4 * npad, "float")
    if w_rows:
        g.decls.append(f"static const uint16_t odl_btab[] ODL_TABLE = {{ {', '.join(map(str, btab))} }};")
        pack = f"  odl_panels({bpan}, (const f16 *){braw}, odl_btab, {len(bsizes)}, {n}, {k2}, {b.pitch});"
    else:
        utab = units_panels(bsizes, k2, skew) + [0]
        g.decls.append(f"static const uint16_t odl_btab[] ODL_TABLE = {{ {', '.join(map(str, utab))} }};")
        pack = f"  odl_units_t({bpan}, (const f16 *){braw}, odl_btab, {len(utab) // 4}, {n}, {kdim}, {npad}, 0);"
    if bias_sym:
        pack += f"\n  odl_widen({b32}, (const f16 *){b16}, {npad});"
    fns = {}
    for i, (r0, r1) in enumerate(tiles):
        rows = r1 - r0
        key = (rows, i == 0)
        if key in fns:
            continue
        t = Tile(k2=k2, a=Side(rows=rows, pitch=pa), b=Side(rows=npad, skew=skew), c_pitch=c_pitch,
                 bias=bool(bias_sym), cores=cores)
        name = f"odl_t{rows}"
        if not any(tt is t for tt in g.tiles_mm) and f"{name}_runs" not in "".join(g.decls):
            g.tiles_mm.append(t)
            g.decls.append(t.table(name))
        body = "  " + t.call(name, "T->src", bpan, "T->dst", b32)
        if xs_stage and keep[2] % 2:
            body = f"  odl_zero_lane((f16 *)T->src2, T->rows, {cp(keep[2])}, {keep[2]});\n" + body
        if i == 0:   # the first tile packs the weights while its rows arrive: one fork less
            body = pack + FIRST_WAIT + body
        fns[key] = g.func(body)
    _trackers(g)
    if w_rows:
        g.body.append(f"  odl_dma_1d(&din, (uint32_t){b_sym}, (uint32_t){braw}, {braw_bytes}, PI_CL_DMA_DIR_EXT2LOC);")
    else:
        g.body.append(f"  odl_dma_2d(&din, (uint32_t){b_sym}, (uint32_t){braw}, {npad * 2}, {kdim}, {b.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
    if bias_sym:
        g.body.append(f"  odl_dma_1d(&din, (uint32_t){bias_sym}, (uint32_t){b16}, {npad * 2}, PI_CL_DMA_DIR_EXT2LOC);")

    def fetch(i):
        r0, r1 = tiles[i]
        k = i % 2
        lines = _rows_in(f"dq[{k}]", _addr(a_sym, r0 * a.pitch), araw[k], r1 - r0, pa_l2, pa)
        if xs_stage:
            lines.append(f"  odl_dma_2d(&dq[{k}], {_addr(a_sym, r0 * a.pitch)}, (uint32_t){xsb[k]}, {xs_row}, {r1 - r0}, {pa_l2}, PI_CL_DMA_DIR_EXT2LOC);")
        return lines
    g.body += fetch(0)
    g.body.append("  odl_dma_wait(&din);")
    for i, (r0, r1) in enumerate(tiles):
        k = i % 2
        g.tiles += 1
        if i:
            g.body.append(f"  odl_dma_wait(&dq[{k}]);")
        # Stored activations leave at once, from the tile; the first tile's only after the fork, in which
        # core 0 waits for its arrival: the DMA moves the two directions at once, so a store-out queued
        # behind the tile's fetch would read the buffer before it is filled.
        xs_early = keep and not (xs_stage and keep[2] % 2)
        if xs_early and i:
            xs_sym, xs, _ = keep
            g.body += _rows_out(f"dx[{k}]", _addr(xs_sym, r0 * xs.pitch), xsb[k], r1 - r0, xs_row,
                                xs_row if xs_stage else pa)
        if i + 1 < len(tiles):
            g.body.append(f"  odl_dma_wait(&dx[{1 - k}]);")   # the stored activations taken from those buffers
            g.body += fetch(i + 1)
        g.body.append(f"  odl_dma_wait(&dc[{k}]);")   # this C buffer's previous results have left
        g.fork(fns[(r1 - r0, i == 0)], src=araw[k], dst=cbuf[k], src2=xsb[k], rows=r1 - r0)
        g.body.append(f"  odl_dma_1d(&dc[{k}], {_addr(out_sym, r0 * out.pitch)}, (uint32_t){cbuf[k]}, {(r1 - r0) * c_pitch}, PI_CL_DMA_DIR_LOC2EXT);")
        if xs_early and not i:
            xs_sym, xs, _ = keep
            g.body += _rows_out(f"dx[{k}]", _addr(xs_sym, r0 * xs.pitch), xsb[k], r1 - r0, xs_row,
                                xs_row if xs_stage else pa)
        if keep and xs_stage and keep[2] % 2:   # after the cores zeroed the pad lane
            xs_sym, xs, _ = keep
            g.body.append(f"  odl_dma_1d(&dx[{k}], {_addr(xs_sym, r0 * xs.pitch)}, (uint32_t){xsb[k]}, {(r1 - r0) * xs_row}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body.append("  odl_dma_wait(&dc[0]);\n  odl_dma_wait(&dc[1]);\n  odl_dma_wait(&dx[0]);\n  odl_dma_wait(&dx[1]);")


def _wt_tile(m: int, pa: int, cols: int, k2: int, skew: int, plat, c_arg: bool = False) -> Tile:
    """The product tile of _stream_wt: dY's m rows read in place, W^T's columns in panels. When the m rows
    cut only into 4s (16 pixels), the panels are A (trans: C's rows are dY's) in 5s and 4s, for 5x4
    blocks; else dY's rows are A (5s and 4s) and the panels B (4s)."""
    cores = plat.cluster["cores"]
    if odd_a(m, plat):
        return Tile(k2=k2, a=Side(rows=cp(cols), skew=skew), b=Side(rows=m, pitch=pa), c_pitch=cp(cols) * 2,
                    trans=True, cores=cores, c_arg=c_arg, odd_a=True)
    return Tile(k2=k2, a=Side(rows=m, pitch=pa), b=Side(rows=cp(cols), skew=skew), c_pitch=cp(cols) * 2, cores=cores,
                c_arg=c_arg)


def _stream_wt(g, a_sym, a, pa, w_sym, w, m, n, kdim, k2, out_sym, out, tiles, skew):
    """Input gradient with the weights streaming: tile by tile of input channels, the tile's columns of
    W arrive by 2-D DMA while the cores work on the tile before, are transposed into panels at the
    start of their fork, and give a column slice of dX; dY stays in L1, read in place."""
    plat = g.plat
    cores = plat.cluster["cores"]
    pa_l2 = a.pitch * 2
    tn = max(c1 - c0 for c0, c1 in tiles)
    araw = g.buf("l1_a", m * pa)
    wraw = [g.buf("l1_w0", kdim * cp(tn) * 2), g.buf("l1_w1", kdim * cp(tn) * 2)]
    bpan = g.buf("l1_bpan", max(_panel_table(_wt_panels(_wt_tile(m, pa, c1 - c0, k2, skew, plat)), k2, skew)[1]
                                for c0, c1 in tiles))
    cbuf = [g.buf("l1_c0", m * cp(tn) * 2), g.buf("l1_c1", m * cp(tn) * 2)]
    # C tiles of different widths: one routine for all, the pitch an argument
    c_arg = len({cp(c1 - c0) for c0, c1 in tiles}) > 1
    fns = {}
    for i, (c0, c1) in enumerate(tiles):
        cols = c1 - c0
        key = (cols, i == 0)
        if key in fns:
            continue
        t = _wt_tile(m, pa, cols, k2, skew, plat, c_arg)
        name = f"odl_t{cols}"
        units = units_panels(_wt_panels(t), k2, skew)
        if f"{name}_runs" not in "".join(g.decls):
            g.tiles_mm.append(t)
            g.decls.append(t.table(name))
            g.decls.append(f"static const uint16_t odl_u{cols}[] ODL_TABLE = {{ {', '.join(map(str, units + [0]))} }};")
        nu = len(units) // 4
        ops = (bpan, araw) if t.trans else (araw, bpan)
        body = (units_parts(bpan, "T->src", f"odl_u{cols}", nu, cols, kdim, cp(cols), cores)
                + (FIRST_WAIT if i == 0 else "\n  pi_cl_team_barrier();\n") + "  " + t.call(name, *ops, "T->dst"))
        fns[key] = g.func(body)
    _trackers(g)

    def fetch(i):
        c0, c1 = tiles[i]
        return [f"  odl_dma_2d(&dc[{i % 2}], {_addr(w_sym, c0)}, (uint32_t){wraw[i % 2]}, {cp(c1 - c0) * 2}, {kdim}, {w.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);"]
    g.body += fetch(0)
    g.body += _rows_in("dq[0]", f"(uint32_t){a_sym}", araw, m, pa_l2, pa)
    g.body.append("  odl_dma_wait(&dc[0]);")
    for i, (c0, c1) in enumerate(tiles):
        k = i % 2
        g.tiles += 1
        if i:   # this tile's W columns, and the results that left this C buffer two tiles back
            g.body.append(f"  odl_dma_wait(&dx[{k}]);\n  odl_dma_wait(&dc[{k}]);")
        if i + 1 < len(tiles):
            g.body += [x.replace(f"&dc[{(i + 1) % 2}]", f"&dx[{(i + 1) % 2}]") for x in fetch(i + 1)]
        g.fork(fns[(c1 - c0, i == 0)], src=wraw[k], dst=cbuf[k])
        g.body.append(f"  odl_dma_2d(&dc[{k}], {_addr(out_sym, c0)}, (uint32_t){cbuf[k]}, {cp(c1 - c0) * 2}, {m}, {out.pitch * 2}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body.append("  odl_dma_wait(&dc[0]);\n  odl_dma_wait(&dc[1]);\n  odl_dma_wait(&dx[0]);\n  odl_dma_wait(&dx[1]);")


PAIR_CYCLES = 7  # odl_packc2's loop, a pair of words (odl_packc2l's is 6 from ODL_PACK_LONG pairs; with 6 and
                 # UNIT_CALL 44 the regress set's plans came out the same, so the model keeps one figure)
UNIT_CALL = 40   # cycles of a call of odl_packc2 from odl_units_tk beyond its loop
SPLIT_MIN = 600  # cycles a split of the transposition must save (its code's cold fetch, by measurement)


def units_split(nu: int, kdim: int, cores: int) -> int:
    """In how many parts of K (1 to 4) the `nu` units of a transposition are dealt to the cores, so that
    the busiest core's share (whole units dealt round-robin) is the least: 20 units on 8 cores are 3
    for some cores and 2 for others, 40 halves are 5 for each."""
    unit = PAIR_CYCLES * (kdim // 2) + UNIT_CALL

    def busiest(s):
        return -(-s * nu // cores) * (unit // s + UNIT_CALL)
    best = min((1, 2, 3, 4), key=lambda s: (busiest(s), s))
    # a split's code (one more inlined transposition a part) is fetched cold at the tile's first run
    return best if busiest(1) - busiest(best) > SPLIT_MIN else 1


def units_parts(dst: str, src: str, tab: str, nu: int, valid: int, kdim: int, pitch: int, cores: int) -> str:
    """The C calls that transpose by `units_split` parts of K (src rows `pitch` halves apart), each part's
    units dealt on from the core where the part before ended."""
    parts = units_split(nu, kdim, cores)
    if parts == 1:
        return f"  odl_units_t({dst}, (const f16 *){src}, {tab}, {nu}, {valid}, {kdim}, {pitch}, 0);"
    cuts = [kdim * j // parts // 2 * 2 for j in range(parts)] + [kdim]
    return "\n".join(f"  odl_units_tk({dst}, (const f16 *){src} + {cuts[j] * pitch}, {tab}, {nu}, {valid}, "
                     f"{cuts[j + 1] - cuts[j]}, {pitch}, {j * nu % cores}, {cuts[j] // 2});" for j in range(parts))


def _wt_panels(t: Tile) -> list:
    """The panel heights of a _stream_wt tile (W^T's columns)."""
    return t.blocks_a if t.trans else t.blocks_b


def _stream_w(g, a_sym, a, pa_l2, w_sym, w, pw, msizes, mtab, mpan_bytes, m, n, k2, out_sym, out, bias_sym, keep,
              xs_stage, xs_row, tiles, skew):
    """The weights' rows stream through L1 as the micro-kernels' A (read in place); the m input rows are
    packed once into panels (B); C tiles are column slices of the output."""
    plat = g.plat
    cores = plat.cluster["cores"]
    pw_l2 = w.pitch * 2
    tn = max(c1 - c0 for c0, c1 in tiles)
    xraw = g.buf("l1_x", m * pa_l2)
    mpan = g.buf("l1_mpan", mpan_bytes)
    # a tile of odd width reads one row past its last (the pad lane of C): a zero row, laid by the master
    odd_rows = any((c1 - c0) % 2 for c0, c1 in tiles)
    wraw = [g.buf("l1_w0", (tn + odd_rows) * pw), g.buf("l1_w1", (tn + odd_rows) * pw)]
    cbuf = [g.buf("l1_c0", m * cp(tn) * 2), g.buf("l1_c1", m * cp(tn) * 2)]
    xsb = g.buf("l1_xs", m * xs_row) if xs_stage else xraw
    npad = cp(n)
    b32 = "0"
    if bias_sym:
        b16 = g.buf("l1_bias16", npad * 2)
        b32 = g.buf("l1_bias32", 4 * npad, "float")
    g.decls.append(f"static const uint16_t odl_mtab[] ODL_TABLE = {{ {', '.join(map(str, mtab))} }};")
    pack = f"  odl_panels({mpan}, (const f16 *){xraw}, odl_mtab, {len(msizes)}, {m}, {k2}, {a.pitch});"
    if bias_sym:
        pack += f"\n  odl_widen({b32}, (const f16 *){b16}, {npad});"
    if xs_stage and keep[2] % 2:
        pack += f"\n  odl_zero_lane((f16 *){xsb}, {m}, {cp(keep[2])}, {keep[2]});"
    # C tiles of different widths: one routine for all, the pitch an argument
    c_arg = len({cp(c1 - c0) for c0, c1 in tiles}) > 1
    fns = {}
    for i, (c0, c1) in enumerate(tiles):
        cols = c1 - c0
        key = (cols, i == 0)
        if key in fns:
            continue
        t = Tile(k2=k2, a=Side(rows=cols, pitch=pw), b=Side(rows=m, skew=skew), c_pitch=cp(cols) * 2, trans=True,
                 bias=bool(bias_sym), cores=cores, c_arg=c_arg, odd_a=odd_a(m, plat))
        name = f"odl_t{cols}"
        if f"{name}_runs" not in "".join(g.decls):
            g.tiles_mm.append(t)
            g.decls.append(t.table(name))
        body = "  " + t.call(name, "T->src", mpan, "T->dst", f"{b32} + T->aux" if bias_sym else "0")
        if i == 0:
            body = pack + FIRST_WAIT + body
        fns[key] = g.func(body)
    _trackers(g)
    g.body.append(f"  odl_dma_1d(&din, (uint32_t){a_sym}, (uint32_t){xraw}, {m * pa_l2}, PI_CL_DMA_DIR_EXT2LOC);")
    if xs_stage:
        g.body.append(f"  odl_dma_2d(&din, (uint32_t){a_sym}, (uint32_t){xsb}, {xs_row}, {m}, {pa_l2}, PI_CL_DMA_DIR_EXT2LOC);")
    if bias_sym:
        g.body.append(f"  odl_dma_1d(&din, (uint32_t){bias_sym}, (uint32_t){b16}, {npad * 2}, PI_CL_DMA_DIR_EXT2LOC);")

    def fetch(i):
        c0, c1 = tiles[i]
        return _rows_in(f"dq[{i % 2}]", _addr(w_sym, c0 * w.pitch), wraw[i % 2], c1 - c0, pw_l2, pw)
    g.body += fetch(0)
    g.body.append("  odl_dma_wait(&din);")
    if keep and not (xs_stage and keep[2] % 2):
        xs_sym, xs, _ = keep
        g.body.append(f"  odl_dma_1d(&dout, (uint32_t){xs_sym}, (uint32_t){xsb}, {m * xs_row}, PI_CL_DMA_DIR_LOC2EXT);")
    for i, (c0, c1) in enumerate(tiles):
        k = i % 2
        g.tiles += 1
        if i:
            g.body.append(f"  odl_dma_wait(&dq[{k}]);")
        if i + 1 < len(tiles):
            g.body += fetch(i + 1)
        g.body.append(f"  odl_dma_wait(&dc[{k}]);")
        if (c1 - c0) % 2:
            g.body.append(f"  odl_zero_words((uint32_t *){wraw[k]} + {(c1 - c0) * pw // 4}, {pw // 4}, 1);")
        g.fork(fns[(c1 - c0, i == 0)], src=wraw[k], dst=cbuf[k], aux=c0)
        if i == 0 and keep and xs_stage and keep[2] % 2:
            xs_sym, xs, _ = keep
            g.body.append(f"  odl_dma_1d(&dout, (uint32_t){xs_sym}, (uint32_t){xsb}, {m * xs_row}, PI_CL_DMA_DIR_LOC2EXT);")
        g.body.append(f"  odl_dma_2d(&dc[{k}], {_addr(out_sym, c0)}, (uint32_t){cbuf[k]}, {cp(c1 - c0) * 2}, {m}, {out.pitch * 2}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body.append("  odl_dma_wait(&dc[0]);\n  odl_dma_wait(&dc[1]);\n  odl_dma_wait(&dout);")


def _rows_in(dma: str, ext: str, l1: str, rows: int, row: int, l1_pitch: int) -> list:
    """`rows` rows of `row` bytes into L1 rows `l1_pitch` bytes apart (longer: each row brings the next
    row's first bytes along, the last row comes alone so that nothing past the tensor is read)."""
    if l1_pitch == row:
        return [f"  odl_dma_1d(&{dma}, {ext}, (uint32_t){l1}, {rows * row}, PI_CL_DMA_DIR_EXT2LOC);"]
    out = []
    if rows > 1:
        out.append(f"  odl_dma_2d_long(&{dma}, {ext}, (uint32_t){l1}, {l1_pitch}, {rows - 1}, {row}, PI_CL_DMA_DIR_EXT2LOC);")
    out.append(f"  odl_dma_1d(&{dma}, {ext} + {(rows - 1) * row}, (uint32_t){l1} + {(rows - 1) * l1_pitch}, {row}, PI_CL_DMA_DIR_EXT2LOC);")
    return out


def _rows_out(dma: str, ext: str, l1: str, rows: int, row: int, l1_pitch: int) -> list:
    """`rows` rows of `row` bytes from L1 rows `l1_pitch` bytes apart (longer: each row's extra bytes land
    on the next row's start before that row is written; the last row goes alone)."""
    if l1_pitch == row:
        return [f"  odl_dma_1d(&{dma}, {ext}, (uint32_t){l1}, {rows * row}, PI_CL_DMA_DIR_LOC2EXT);"]
    out = []
    if rows > 1:
        out.append(f"  odl_dma_2d_long(&{dma}, {ext}, (uint32_t){l1}, {l1_pitch}, {rows - 1}, {row}, PI_CL_DMA_DIR_LOC2EXT);")
    out.append(f"  odl_dma_1d(&{dma}, {ext} + {(rows - 1) * row}, (uint32_t){l1} + {(rows - 1) * l1_pitch}, {row}, PI_CL_DMA_DIR_LOC2EXT);")
    return out


def _addr(sym: str, halves: int) -> str:
    return f"(uint32_t)({sym} + {halves})"


def gen_mm_wg(g, dy_sym, dy, xs_sym, xs, npix: int, ko: int, ki: int, dw_sym, dwt, db_sym) -> bool:
    """dW[co][ci] = sum_p dY[p][co] Xs[p][ci] (+ db[co] = sum_p dY[p][co]) over all npix pixels at once:
    Xs^T packed once into panels (B), dY^T by tiles of output channels into rows of pixel pairs (A),
    transposed by the cores at the start of each tile; dW leaves by tiles. False when the pixels do not
    fit L1 whole (the caller then uses the generic path, which splits the reduction)."""
    plat = g.plat
    dma_bpc = plat.dma["bytes_per_cycle"]
    budget = _budget(plat)
    cores = plat.cluster["cores"]
    k2 = (npix + 1) // 2
    skew = 4
    nb = cp(ki)
    bsizes = paired_blocks(nb)
    btab, bpan_bytes = _panel_table(bsizes, k2, skew)
    xraw_bytes = npix * nb * 2
    pa = _padded(plat, 4 * k2)
    c_pitch = dwt.pitch * 2
    db_bytes = cp(ko) * 2 + 4 if db_sym else 0

    # few output channels (a classifier's classes): dY^T made once, Xs's columns in chunks within one fork
    if ko <= 16 and npix >= 8:
        fixed = npix * cp(ko) * 2 + cp(ko) * pa + db_bytes
        chunks = plan_cols(g, ko, pa, k2, npix, ki, (npix * cp(ko) * 2 // dma_bpc, 12 * (npix // 2) + 30 + FORK_CYCLES),
                           fixed)
        if chunks:
            draw = g.buf("l1_dy", npix * cp(ko) * 2)
            arows = g.buf("l1_arows", cp(ko) * pa)
            after = ""
            if db_sym:
                db16 = g.buf("l1_db16", cp(ko) * 2 + 4)
                prep = f"  odl_rows_ts({arows}, (const f16 *){draw}, {cp(ko)}, {npix}, {cp(ko)}, {pa}, (f16 *){db16});"
                after = f"    odl_dma_1d(&dc[0], (uint32_t){db_sym}, (uint32_t){db16}, {cp(ko) * 2}, PI_CL_DMA_DIR_LOC2EXT);"
            else:
                prep = f"  odl_rows_t({arows}, {pa}, (const f16 *){draw}, {cp(ko)}, {npix}, {cp(ko)});"
            prep += "\n  pi_cl_team_barrier();"
            _trackers(g)
            g.body.append(f"  odl_dma_2d(&dq[0], (uint32_t){dy_sym}, (uint32_t){draw}, {cp(ko) * 2}, {npix}, {dy.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
            one_fork_cols(g, ko, arows, pa, k2, xs_sym, xs.pitch, npix, chunks, dw_sym, dwt.pitch, prep, after)
            return True

    # few pixels (a small map): dY^T and its results all fit L1 next to Xs^T: one fork, dY's columns
    # arriving in chunks, each transposed (its bias gradient summed) and multiplied as it arrives, its rows
    # of dW sent from inside the fork (C = dW: trans blocks, Xs^T read in place as rows of K-pairs)
    one = None
    if ko > 16 and npix >= 2 and db_sym:
        one = plan_cols_est(g, nb, pa, k2, npix, ko, (xraw_bytes // dma_bpc, 5 * nb * k2 // cores + FORK_CYCLES),
                            xraw_bytes + nb * pa + db_bytes, c_pitch)

    def one_fork():
        xraw = g.buf("l1_xs", xraw_bytes)
        arows = g.buf("l1_arows", nb * pa)
        db16 = g.buf("l1_db16", cp(ko) * 2 + 4)
        prep = (f"  odl_rows_t({arows}, {pa}, (const f16 *){xraw}, {nb}, {npix}, {nb});\n"
                "  pi_cl_team_barrier();")
        after = f"    odl_dma_1d(&dc[0], (uint32_t){db_sym}, (uint32_t){db16}, {cp(ko) * 2}, PI_CL_DMA_DIR_LOC2EXT);"
        if ko % 2:   # the pad lane: not the sum of dY's pad column
            after = f"    ((f16 *){db16})[{ko}] = 0;\n" + after
        _trackers(g)
        g.body.append(f"  odl_dma_2d(&dq[0], (uint32_t){xs_sym}, (uint32_t){xraw}, {nb * 2}, {npix}, {xs.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
        one_fork_cols(g, nb, arows, pa, k2, dy_sym, dy.pitch, npix, one[0], dw_sym, dwt.pitch, prep, after,
                      trans=True, sums_buf=db16)
        return True

    def mem(tm):
        return xraw_bytes + bpan_bytes + db_bytes + 2 * npix * cp(tm) * 2 + cp(tm) * pa + 2 * tm * c_pitch
    tmax = _largest(ko, lambda t: mem(t) <= budget)
    if not tmax:
        return one_fork() if one else False

    kp = npix // 2

    def tile_cycles(rows):
        t = Tile(k2=k2, a=Side(rows=rows, pitch=pa), b=Side(rows=nb, skew=skew), c_pitch=c_pitch, cores=cores)
        if db_sym and npix >= 2:   # odl_rows_ts: 12 instructions a pair of words, its core's share in one call
            return max(t.core_cycles()) + -(-cp(rows) // 2 // cores) * (12 * kp + 30)
        return max(t.core_cycles()) + 5 * cp(rows) * k2 // 2 // cores
    btab = units_panels(bsizes, k2, skew) + [0]
    nub = len(btab) // 4
    lead = (xraw_bytes // dma_bpc, -(-nub // cores) * (5 * kp + 40) + FORK_CYCLES)
    tiles = plan_tiles(ko, tmax, tile_cycles, lambda r: npix * cp(r) * 2 // dma_bpc, lambda r: r * c_pitch // dma_bpc,
                       lead=lead, fork=WG_FORK)
    # the one fork when it is estimated sooner done than the tiles (the estimates differ by less than
    # 1 % on 64x64 16x16 p 0.7, which runs 0.5 % faster tiled, and 128x128 8x8 p 0.7, 1.6 % faster in
    # one fork: the estimates cannot tell such cases apart)
    if one and one[1] <= _timeline([r1 - r0 for r0, r1 in tiles], lambda r: tile_cycles(r) + WG_FORK,
                                   lambda r: npix * cp(r) * 2 // dma_bpc, lambda r: r * c_pitch // dma_bpc,
                                   lambda r: 0, lead):
        return one_fork()
    tm = max(r1 - r0 for r0, r1 in tiles)
    xraw = g.buf("l1_xs", xraw_bytes)
    bpan = g.buf("l1_bpan", bpan_bytes)
    draw = [g.buf("l1_dy0", npix * cp(tm) * 2), g.buf("l1_dy1", npix * cp(tm) * 2)]
    arows = g.buf("l1_arows", cp(tm) * pa)
    cbuf = [g.buf("l1_c0", tm * c_pitch), g.buf("l1_c1", tm * c_pitch)]
    if db_sym:   # every row of dY^T sees all the pixels in its tile: db leaves each tile in FP16
        db16 = g.buf("l1_db16", cp(ko) * 2 + 4)   # + the sum of a last tile's pad column
    g.decls.append(f"static const uint16_t odl_btab[] ODL_TABLE = {{ {', '.join(map(str, btab))} }};")
    # Xs arrives in two parts of pixels (many pixels: a long transfer): the cores pack the first while
    # the second arrives. The first is about a third: the cores start sooner than after a half, and the
    # second part and dY still arrive before the cores need them (on paper, 64x64 16x16 p 0.7 with the
    # first part 64 / 72 / 84 / 102 / 128 of 256 pixels: 65089 / 65134 / 64611 / 64820 / 65010 cycles)
    h = npix // 6 * 2 if npix >= 32 else npix
    if h < npix:
        pack = (f"  odl_units_tk({bpan}, (const f16 *){xraw}, odl_btab, {nub}, {ki}, {h}, {nb}, 0, 0);\n"
                "  if (pi_core_id() == 0) odl_dma_wait_quiet(&dx[0]);\n  pi_cl_team_barrier();\n"
                f"  odl_units_tk({bpan}, (const f16 *){xraw} + {h * nb}, odl_btab, {nub}, {ki}, {npix - h}, {nb}, 0, {h // 2});")
    else:
        pack = f"  odl_units_t({bpan}, (const f16 *){xraw}, odl_btab, {nub}, {ki}, {npix}, {nb}, 0);"
    if db_sym and ko % 2:
        pack += f"\n  if (pi_core_id() == 0) ((f16 *){db16})[{ko}] = 0;"
    fns = {}
    for i, (r0, r1) in enumerate(tiles):
        rows = r1 - r0
        key = (rows, i == 0)
        if key in fns:
            continue
        t = Tile(k2=k2, a=Side(rows=rows, pitch=pa), b=Side(rows=nb, skew=skew), c_pitch=c_pitch, cores=cores)
        name = f"odl_t{rows}"
        if f"{name}_runs" not in "".join(g.decls):
            g.tiles_mm.append(t)
            g.decls.append(t.table(name))
            atab = units_rows(cp(rows), pa // 4)
            g.decls.append(f"static const uint16_t odl_a{rows}[] ODL_TABLE = {{ {', '.join(map(str, atab))} }};")
        nua = len(units_rows(cp(rows), pa // 4)) // 4
        c0 = nub % cores if i == 0 else 0
        if db_sym and npix >= 2:   # the transposition sums the rows too: db
            body = (f"  odl_rows_ts({arows}, (const f16 *)T->src, {cp(rows)}, {npix}, {cp(rows)}, {pa}, "
                    f"(f16 *){db16} + T->aux);")
        elif db_sym:
            body = (f"  odl_units_ts({arows}, (const f16 *)T->src, odl_a{rows}, {nua}, {cp(rows)}, {npix}, {cp(rows)}, {c0}, "
                    f"(f16 *){db16} + T->aux, {rows});")
        else:
            body = f"  odl_units_t({arows}, (const f16 *)T->src, odl_a{rows}, {nua}, {cp(rows)}, {npix}, {cp(rows)}, {c0});"
        if i == 0:
            body = pack + FIRST_WAIT + body
        body += "\n  pi_cl_team_barrier();"
        body += "\n  " + t.call(name, arows, bpan, "T->dst")
        fns[key] = g.func(body)
    _trackers(g)
    g.body.append(f"  odl_dma_2d(&din, (uint32_t){xs_sym}, (uint32_t){xraw}, {nb * 2}, {h}, {xs.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
    if h < npix:
        g.body.append(f"  odl_dma_2d(&dx[0], {_addr(xs_sym, h * xs.pitch)}, (uint32_t){xraw} + {h * nb * 2}, {nb * 2}, {npix - h}, "
                      f"{xs.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")

    def fetch(i):
        r0, r1 = tiles[i]
        return [f"  odl_dma_2d(&dq[{i % 2}], {_addr(dy_sym, r0)}, (uint32_t){draw[i % 2]}, {cp(r1 - r0) * 2}, {npix}, {dy.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);"]
    g.body += fetch(0)
    g.body.append("  odl_dma_wait(&din);")
    for i, (r0, r1) in enumerate(tiles):
        k = i % 2
        g.tiles += 1
        if i:
            g.body.append(f"  odl_dma_wait(&dq[{k}]);")
        if i + 1 < len(tiles):
            g.body += fetch(i + 1)
        g.body.append(f"  odl_dma_wait(&dc[{k}]);")
        g.fork(fns[(r1 - r0, i == 0)], src=draw[k], dst=cbuf[k], aux=r0)
        g.body.append(f"  odl_dma_1d(&dc[{k}], {_addr(dw_sym, r0 * dwt.pitch)}, (uint32_t){cbuf[k]}, {(r1 - r0) * c_pitch}, PI_CL_DMA_DIR_LOC2EXT);")
    if db_sym:
        g.body.append(f"  odl_dma_1d(&dout, (uint32_t){db_sym}, (uint32_t){db16}, {cp(ko) * 2}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body.append("  odl_dma_wait(&dc[0]);\n  odl_dma_wait(&dc[1]);\n  odl_dma_wait(&dout);")
    return True


def gen_conv_fw(g, x_sym, x, w_sym, w, b_sym, y_sym, y, keep) -> bool:
    """A k x k convolution's forward as an implicit matrix product: the A rows of a block are output
    pixels of one row, read in place from the input tile (the tile between zero rows, every row between
    zero pixels: the padding), the reduction in k segments (one per row of taps: k pixels, then the row
    below); the weights packed once into panels in the same (kh, kw, channel) order. Input tiles of
    output rows (with their halo) stream through L1 double-buffered. An odd number of input channels at
    stride 2 packs the tile's pixels densely (cin halves each, by the cores, from the DMA's rows): a window
    then starts on a word at every output pixel, and the reduction wastes no pad lane per pixel."""
    s = g.spec
    plat = g.plat
    cores = plat.cluster["cores"]
    bpc = plat.dma["bytes_per_cycle"]
    budget = _budget(plat)
    k, st = s.k, s.stride
    pl, pr, pt, pb = s.pad
    P = x.pitch * 2                      # bytes a pixel in L2 (cp(cin) channels)
    dense = s.cin % 2 == 1 and st % 2 == 0
    pix_h = s.cin if dense else x.pitch  # halves a pixel in the L1 tile
    wp = pl + s.w + pr                   # pixels of a padded row
    row_h = wp * pix_h + (wp * pix_h) % 2
    rowb = 2 * row_h
    seg = (k * pix_h + 1) // 2           # words of a segment (a row of taps)
    k2 = k * seg
    skew = 4
    npad = cp(s.cout)
    bsizes = paired_blocks(npad)
    btab, bpan_bytes = _panel_table(bsizes, k2, skew)
    wl_bytes = s.cout * 4 * k2           # the weights in (kh, kw, channel) order, segments padded to words
    c_pitch = y.pitch * 2
    xs_row = cp(keep[2]) * 2 if keep else 0

    def in_rows(nr):    # padded input rows of nr output rows
        return (nr - 1) * st + k

    def mem(nr):
        return (wl_bytes + bpan_bytes + (npad * 2 + 4 * npad if b_sym else 0) + 2 * in_rows(nr) * rowb
                + (2 * in_rows(nr) * s.w * P if dense else 0)
                + 2 * nr * s.w_out * c_pitch + (2 * (nr * st + k) * s.w * xs_row if keep else 0) + s.cout * w.pitch * 2)
    rmax = _largest(s.h_out, lambda r: mem(r) <= budget)
    if not rmax or k2 > IMM_MAX or (st * pix_h * 2) * 4 > IMM_MAX:
        return False
    blocks_row = free_blocks(s.w_out)

    def tile(nr):
        a_list = []
        for r in range(nr):
            ow0 = 0
            for m in blocks_row:
                a_list.append((m, r * st * rowb + ow0 * st * pix_h * 2, r * s.w_out + ow0))
                ow0 += m
        return Tile(k2=k2, a=Side(rows=nr * s.w_out, pitch=st * pix_h * 2), b=Side(rows=npad, skew=skew),
                    c_pitch=c_pitch, bias=bool(b_sym), cores=cores, segs=k, a_jump=rowb - 4 * seg, a_list=a_list)

    def tile_cycles(nr):
        prep = in_rows(nr) * (s.w * s.cin * 3 if dense else (pl + pr) * P // 4) // cores
        return max(tile(nr).core_cycles()) + prep
    lead = (s.cout * w.pitch * 2 // bpc, s.cout * k2 * 3 // cores + FORK_CYCLES)
    tiles = plan_tiles(s.h_out, rmax, tile_cycles, lambda r: in_rows(r) * s.w * P // bpc,
                       lambda r: r * s.w_out * c_pitch // bpc, step=1, lead=lead)
    tm = max(r1 - r0 for r0, r1 in tiles)
    wraw = g.buf("l1_wraw", s.cout * w.pitch * 2)
    wl = g.buf("l1_wl", wl_bytes)
    bpan = g.buf("l1_bpan", bpan_bytes)
    xb = [g.buf("l1_in0", in_rows(tm) * rowb), g.buf("l1_in1", in_rows(tm) * rowb)]
    # dense: the DMA's rows land in a staging buffer, the cores lay them out
    sb = [g.buf("l1_st0", in_rows(tm) * s.w * P), g.buf("l1_st1", in_rows(tm) * s.w * P)] if dense else xb
    cbuf = [g.buf("l1_c0", tm * s.w_out * c_pitch), g.buf("l1_c1", tm * s.w_out * c_pitch)]
    b32 = "0"
    if b_sym:
        b16 = g.buf("l1_bias16", npad * 2)
        b32 = g.buf("l1_bias32", 4 * npad, "float")
    # xs: the input rows each tile owns, gathered by DMA and sent out again
    owned = []
    for i, (o0, o1) in enumerate(tiles):
        r0 = 0 if i == 0 else min(s.h, max(0, o0 * st - pt))
        r1 = s.h if i + 1 == len(tiles) else min(s.h, max(0, tiles[i + 1][0] * st - pt))
        owned.append((r0, r1))
    xsmax = max(r1 - r0 for r0, r1 in owned) if keep else 0
    xsb = [g.buf("l1_xs0", max(4, xsmax * s.w * xs_row)), g.buf("l1_xs1", max(4, xsmax * s.w * xs_row))] if keep else None
    g.decls.append(f"static const uint16_t odl_btab[] ODL_TABLE = {{ {', '.join(map(str, btab))} }};")
    relayout = (f"  odl_conv_weights((f16 *){wl}, (const f16 *){wraw}, {s.cout}, {k}, {s.cin}, {w.pitch}, {pix_h}, {2 * seg}, {cores});\n"
                "  pi_cl_team_barrier();\n"
                f"  odl_panels({bpan}, (const f16 *){wl}, odl_btab, {len(bsizes)}, {s.cout}, {k2}, {2 * k2});")
    if b_sym:
        relayout += f"\n  odl_widen({b32}, (const f16 *){b16}, {npad});"
    fns = {}
    for i, (o0, o1) in enumerate(tiles):
        nr = o1 - o0
        key = (nr, i == 0)
        if key in fns:
            continue
        t = tile(nr)
        name = f"odl_t{nr}"
        if f"{name}_runs" not in "".join(g.decls):
            g.tiles_mm.append(t)
            g.decls.append(t.table(name))
        nin = in_rows(nr)
        if dense:
            prep = (f"  odl_conv_dense((f16 *)T->src, (const f16 *)T->src2, {nin}, {row_h}, {s.w}, {s.cin}, {x.pitch}, {pl}, "
                    f"T->aux, T->aux2, {cores});")
        else:
            prep = f"  odl_conv_pad((uint32_t *)T->src, {nin}, {rowb // 4}, {pl * P // 4}, {pr * P // 4}, T->aux, T->aux2, {cores});"
        if keep and keep[2] % 2:
            prep += f"\n  odl_zero_lane((f16 *)T->dst2, T->rows, {cp(keep[2])}, {keep[2]});"
        if i == 0:
            body = relayout + FIRST_WAIT + prep + "\n  pi_cl_team_barrier();\n"
        else:
            body = prep + "\n  pi_cl_team_barrier();\n"
        body += "  " + t.call(name, "T->src", bpan, "T->dst", b32)
        fns[key] = g.func(body)
    _trackers(g)
    g.body.append(f"  odl_dma_1d(&din, (uint32_t){w_sym}, (uint32_t){wraw}, {s.cout * w.pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
    if b_sym:
        g.body.append(f"  odl_dma_1d(&din, (uint32_t){b_sym}, (uint32_t){b16}, {npad * 2}, PI_CL_DMA_DIR_EXT2LOC);")

    def geom(i):
        o0, o1 = tiles[i]
        top = o0 * st                        # padded rows [top, top + nin)
        nin = in_rows(o1 - o0)
        lo, hi = max(top, pt), min(top + nin, pt + s.h)   # the image rows among them
        return top, nin, lo, hi

    def fetch(i):
        kk = i % 2
        top, nin, lo, hi = geom(i)
        lines = []
        if hi > lo and dense:
            lines.append(f"  odl_dma_1d(&dq[{kk}], {_addr(x_sym, (lo - pt) * s.w * x.pitch)}, (uint32_t){sb[kk]}, {(hi - lo) * s.w * P}, PI_CL_DMA_DIR_EXT2LOC);")
        elif hi > lo:
            # every row with its neighbours' pixels as its padding (zeroed by the cores), from pixel -pl
            ext = f"(uint32_t)({x_sym} + {((lo - pt) * s.w - pl) * x.pitch})"
            lines.append(f"  odl_dma_2d_long(&dq[{kk}], {ext}, (uint32_t){xb[kk]} + {(lo - top) * rowb}, {rowb}, {hi - lo}, {s.w * P}, PI_CL_DMA_DIR_EXT2LOC);")
        if keep:
            r0, r1 = owned[i]
            if r1 > r0:
                lines.append(f"  odl_dma_2d(&dq[{kk}], {_addr(x_sym, r0 * s.w * x.pitch)}, (uint32_t){xsb[kk]}, {xs_row}, {(r1 - r0) * s.w}, {P}, PI_CL_DMA_DIR_EXT2LOC);")
        return lines
    g.body += fetch(0)
    g.body.append("  odl_dma_wait(&din);")
    for i, (o0, o1) in enumerate(tiles):
        kk = i % 2
        g.tiles += 1
        if i:
            g.body.append(f"  odl_dma_wait(&dq[{kk}]);")
        # stored activations leave at once (the first tile's after the fork: see gen_mm_fw_ig)
        if i and keep and not keep[2] % 2 and owned[i][1] > owned[i][0]:
            r0, r1 = owned[i]
            g.body.append(f"  odl_dma_1d(&dx[{kk}], {_addr(keep[0], r0 * s.w * keep[1].pitch)}, (uint32_t){xsb[kk]}, {(r1 - r0) * s.w * xs_row}, PI_CL_DMA_DIR_LOC2EXT);")
        top, nin, lo, hi = geom(i)
        if i + 1 < len(tiles):
            g.body.append(f"  odl_dma_wait(&dx[{1 - kk}]);")
            g.body += fetch(i + 1)
        g.body.append(f"  odl_dma_wait(&dc[{kk}]);")
        nr = o1 - o0
        r0, r1 = owned[i]
        g.fork(fns[(nr, i == 0)], src=xb[kk], src2=sb[kk], dst=cbuf[kk], dst2=xsb[kk] if keep else 0, rows=(r1 - r0) * s.w,
               aux=lo - top, aux2=hi - top)
        g.body.append(f"  odl_dma_1d(&dc[{kk}], {_addr(y_sym, o0 * s.w_out * y.pitch)}, (uint32_t){cbuf[kk]}, {nr * s.w_out * c_pitch}, PI_CL_DMA_DIR_LOC2EXT);")
        if keep and (keep[2] % 2 or not i) and owned[i][1] > owned[i][0]:
            r0, r1 = owned[i]
            g.body.append(f"  odl_dma_1d(&dx[{kk}], {_addr(keep[0], r0 * s.w * keep[1].pitch)}, (uint32_t){xsb[kk]}, {(r1 - r0) * s.w * xs_row}, PI_CL_DMA_DIR_LOC2EXT);")
    g.body.append("  odl_dma_wait(&dc[0]);\n  odl_dma_wait(&dc[1]);\n  odl_dma_wait(&dx[0]);\n  odl_dma_wait(&dx[1]);")
    return True


BARRIER_CYCLES = 150   # a team barrier between the steps of a one-fork program, with the cores' imbalance


def plan_cols(g, m: int, a_pitch: int, k2: int, kdim: int, n: int, a_cycles: tuple, fixed_bytes: int):
    """The chunks of plan_cols_est."""
    plan = plan_cols_est(g, m, a_pitch, k2, kdim, n, a_cycles, fixed_bytes)
    return plan[0] if plan else None


def plan_cols_est(g, m: int, a_pitch: int, k2: int, kdim: int, n: int, a_cycles: tuple, fixed_bytes: int,
                  c_pitch: int = 0):
    """Column chunks of B = S^T (S[kdim][n] K-major in L2) for a product whose A (m rows, a_pitch bytes
    apart in L1) is small and stays: the chunks arrive one after the other, each transposed into rows of
    K-pairs (read in place by the micro-kernels) by the cores and multiplied within one fork, its results
    sent from inside the fork while the next is computed. Every chunk has buffers of its own (nothing is reused, so nothing waits for a
    transfer to leave). Returns (chunks, estimated end), None when they do not all fit L1 next to
    `fixed_bytes`. c_pitch > 0: C is the transpose (rows of C are the chunk's columns, c_pitch bytes
    apart: `trans` blocks)."""
    plat = g.plat
    bpc = plat.dma["bytes_per_cycle"]
    cores = plat.cluster["cores"]
    rb = _padded(plat, 4 * k2)

    def c_bytes(cols):
        return cp(cols) * c_pitch if c_pitch else m * cp(cols) * 2

    def chunk_bytes(cols):
        return kdim * cp(cols) * 2 + cp(cols) * rb + c_bytes(cols)
    if fixed_bytes + chunk_bytes(n) + 4 * 16 * 8 > _budget(plat):   # + a worst case of padding to 4 columns
        return None

    def cost(cols):
        t = _chunk_tile(m, a_pitch, k2, cols, rb, c_pitch, cores)
        return max(t.core_cycles()) + -(-cp(cols) // 2 // cores) * ((12 if c_pitch else 9) * (kdim // 2) + 40)
    # trans: the chunk's columns are the free side of the blocks (5s and 4s): multiples of 20 cut into
    # blocks of 5 only and leave no pad column
    cuts = plan_tiles(n, n, cost, lambda c: kdim * cp(c) * 2 // bpc, lambda c: c_bytes(c) // bpc,
                      step=20 if c_pitch else 4, lead=a_cycles, fork=BARRIER_CYCLES, two=bool(c_pitch))
    return cuts, _timeline([c1 - c0 for c0, c1 in cuts], lambda c: cost(c) + BARRIER_CYCLES,
                           lambda c: kdim * cp(c) * 2 // bpc, lambda c: c_bytes(c) // bpc, lambda c: 0, a_cycles)


def _chunk_tile(m: int, a_pitch: int, k2: int, cols: int, rb: int, c_pitch: int, cores: int) -> Tile:
    if c_pitch:   # C = the transpose, its pitch the same for every chunk: a constant of the routines; the
        # chunk's columns are the blocks' free side, so an odd chunk computes no pad row
        return Tile(k2=k2, a=Side(rows=m, pitch=a_pitch), b=Side(rows=cols, pitch=rb), c_pitch=c_pitch,
                    trans=True, cores=cores)
    return Tile(k2=k2, a=Side(rows=m, pitch=a_pitch), b=Side(rows=cp(cols), pitch=rb), c_pitch=cp(cols) * 2,
                cores=cores, c_arg=True)


def one_fork_cols(g, m: int, a_buf: str, a_pitch: int, k2: int, s_sym: str, s_pitch: int, kdim: int, chunks: list,
                  out_sym: str, out_pitch: int, prep: str = "", after: str = "", trans: bool = False,
                  sums_buf: str = "") -> None:
    """The program of plan_cols: the master queues A's transfer (on dq[0], by the caller) and every chunk's
    (2-D, on a tracker of its own), forks once; in the fork core 0 waits for each chunk and, once the
    product of the chunk before has ended on every core, starts that chunk's results' transfer (on dc[0]);
    one loop over a table of chunks, so that every chunk runs the same code. `prep` runs once A has
    arrived (the C of a step that makes A from what arrived), `after` by core 0 at the end. trans: C is
    the transpose (its rows the chunk's columns, out_pitch halves apart in L2 and in L1), each chunk's
    transposition writing its columns' sums to sums_buf (a bias gradient)."""
    plat = g.plat
    cores = plat.cluster["cores"]
    nch = len(chunks)
    widths = sorted({c1 - c0 for c0, c1 in chunks})
    rb = _padded(plat, 4 * k2)
    c_pitch = out_pitch * 2 if trans else 0
    sums = sums_buf or g.buf("l1_sums", 2 * cp(max(widths)))
    for cols in widths:
        t = _chunk_tile(m, a_pitch, k2, cols, rb, c_pitch, cores)
        g.tiles_mm.append(t)
        g.decls.append(t.table(f"odl_t{cols}"))
    sraw, span, cbuf, rows = [], [], [], []
    for j, (c0, c1) in enumerate(chunks):
        cols = c1 - c0
        sraw.append(g.buf(f"l1_s{j}", kdim * cp(cols) * 2))
        span.append(g.buf(f"l1_p{j}", cp(cols) * rb))
        cbuf.append(g.buf(f"l1_c{j}", cp(cols) * c_pitch if trans else m * cp(cols) * 2))
        ext = _addr(out_sym, c0 * out_pitch if trans else c0)
        rows.append(f"{{ (const f16 *){sraw[j]}, {span[j]}, odl_t{cols}_fn, odl_t{cols}_runs, "
                    f"odl_t{cols}_first, {cbuf[j]}, {ext}, {cp(cols)}, (f16 *){sums} + {c0 if trans else 0}, "
                    f"{cols * c_pitch}, {int(cols % 2 and not trans)} }}")
    fn_t = "odl_mm_fn" if trans else "odl_mm_fnp"
    g.decls.append(f"typedef struct {{ const f16 *src; uint32_t *pan; {fn_t} const *fn; "
                   "const odl_run_t *runs; const uint16_t *first; void *c; uint32_t ext; uint16_t pitch; f16 *sums; "
                   "uint32_t bytes; uint16_t pad; } odl_chunk_t;")
    g.decls.append(f"static const odl_chunk_t odl_ch[] ODL_TABLE = {{\n  " + ",\n  ".join(rows) + "\n};")
    g.decls.append(f"static PI_L1 odl_dma_t odl_in[{nch}];")
    if trans:   # the chunk's rows of C are whole rows of the output: one transfer
        send = "odl_dma_1d(&dc[0], h->ext, (uint32_t)h->c, h->bytes, PI_CL_DMA_DIR_LOC2EXT);"
        mm = f"odl_mm_runs(h->fn, h->runs, h->first, {a_buf}, h->pan, h->c, 0);"
    else:
        send = ("odl_dma_2d(&dc[0], h->ext, (uint32_t)h->c, (uint32_t)h->pitch * 2, {m}, {op}, PI_CL_DMA_DIR_LOC2EXT);"
                .format(m=m, op=out_pitch * 2))
        if any((c1 - c0) % 2 for c0, c1 in chunks):
            # an odd chunk's pad lane of C is the product with S's next column (W's next channel): zero it
            send = (f"if (h->pad) {{ f16 *c = (f16 *)h->c; for (int r = 0; r < {m}; r++) c[r * h->pitch + h->pitch - 1] = 0; }} "
                    + send)
        mm = f"odl_mm_runs_p(h->fn, h->runs, h->first, {a_buf}, h->pan, h->c, 0, (uint32_t)h->pitch * 2);"
    pack = f"odl_rows_ts(h->pan, h->src, h->pitch, {kdim}, h->pitch, {rb}, h->sums);"
    body = f"""  int id = pi_core_id();
  if (id == 0) odl_dma_wait_quiet(&dq[0]);
  pi_cl_team_barrier();
{prep}
  for (int j = 0; j < {nch}; j++) {{
    const odl_chunk_t *h = &odl_ch[j];
    if (id == 0) odl_dma_wait_quiet(&odl_in[j]);
    pi_cl_team_barrier();
    if (id == 0 && j) {{ h--; {send} h++; }}
    {pack}
    pi_cl_team_barrier();
    {mm}
  }}
  pi_cl_team_barrier();
  if (id == 0) {{
    const odl_chunk_t *h = &odl_ch[{nch - 1}];
    {send}
{after}
  }}"""
    fn = g.func(body)
    _trackers(g)
    g.body.append(f"  for (int j = 0; j < {nch}; j++) odl_in[j].n = 0;")
    for j, (c0, c1) in enumerate(chunks):
        g.body.append(f"  odl_dma_2d(&odl_in[{j}], {_addr(s_sym, c0)}, (uint32_t){sraw[j]}, {cp(c1 - c0) * 2}, {kdim}, "
                      f"{s_pitch * 2}, PI_CL_DMA_DIR_EXT2LOC);")
    g.tiles += nch
    g.fork(fn)
    g.body.append("  odl_dma_wait(&dc[0]);")
