"""Depthwise 3x3 (padding 1) micro-kernels, generated as assembly from the ISA table.

Each routine runs one work item: one channel pair (the two FP16 lanes of a word) over a band of rows
of a channels-last tile (`pix` bytes from one pixel to the next). The input tile lies in L1 with a zero
row above and below it, so rows outside the map need no test; the left padding is a zero column of
the window registers and the right padding the missing column of the last output, both fixed at
generation time, since every shape is a constant of the generated program. Rows and outputs run in
hardware loops. FP16 accumulation of the taps in tap order (vfmac.h), as the other depthwise kernels.

  forward (and, with the taps reversed, the stride-1 input gradient): the window slides along the row,
    3 new words an output at stride 1 (14 instructions for 18 MACs), 6 at stride 2 (17 instructions)
  input gradient at stride 2: each output-gradient word reaches a 3x3 block of the input gradient;
    the four parities of (row, column) take 1, 2, 2 and 4 taps: 15 instructions for 18 MACs
  weight gradient: one item a row of taps (so a tile's items are three times its pairs and the cores
    share them evenly), three FP16 partial sums of at most 8 terms folded into six FP32 accumulators
    (vfdotpex with {1, 0} and {0, 1}); the bias gradient rides along the first row of taps
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.isa import asm
from harness.kernels import microkernel
from harness.kernels.mmblock import IMM_MAX, IMM_MIN, SAVED, _add

ONE_LO, ONE_HI = 0x3c00, 0x3c000000


LOCAL = 4 * len(SAVED)   # the frame's offset of a routine's own word (after the saved registers)


def _func(name: str, pro: list, body: list, local: bool = False) -> list:
    frame = LOCAL + (4 if local else 0)
    out = [f"    .section .text.{name}, \"ax\"", f"    .globl {name}", f"    .type {name}, @function",
           "    .balign 4", f"{name}:", "    .option push", "    .option norvc", f"    addi sp, sp, -{frame}"]
    out += [f"    sw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += ["    " + x for x in pro + body]
    out += [f"    lw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += [f"    addi sp, sp, {frame}", "    ret", "    .option pop", f"    .size {name}, . - {name}", ""]
    return out


def _loop(level: int, count_reg: str, body: list) -> list:
    """A hardware loop over `body` (count in a register, at least 1)."""
    return [asm.line("lp_setup", hwl_l=level, hwl_rs1=count_reg, hwl_uimm12=2 * len(body))] + body


def _li(reg: str, v: int) -> list:
    if IMM_MIN <= v <= IMM_MAX:
        return [f"li {reg}, {v}"]
    hi = (v + 0x800) >> 12
    return [f"lui {reg}, {hi & 0xfffff}", f"addi {reg}, {reg}, {v - (hi << 12)}"]


def _vfmac(acc, a, b):
    return asm.line("vfmac_h", rd_acc=acc, rs1=a, rs2=b)


def _ld(rd, ptr, step_reg):
    return asm.line("p_lw_postinc_reg", rd=rd, rs1=ptr, rs2=step_reg)


@dataclass(frozen=True)
class DwFw:
    """Forward rows of a 3x3, padding-1 depthwise layer (flip: the stride-1 input gradient)."""
    wd: int       # input pixels a row
    wo: int       # output pixels a row
    stride: int
    flip: bool = False
    act: str = ""   # "relu", "relu6" or "hswish": applied to each output before it is stored

    @property
    def name(self) -> str:
        return f"odl_dw3f_w{self.wd}o{self.wo}s{self.stride}{'_f' if self.flip else ''}{'_' + self.act if self.act else ''}"

    def asm(self) -> list:
        """name(y, x, w, bias, nrows, pix): y at the band's first output row, x at the input row above it (in
        the tile with its zero rows), w at tap 0; nrows output rows; pix the bytes from one pixel (and
        tap) to the next, an argument so that the tiles of a layer share the routine."""
        s, wd, wo = self.stride, self.wd, self.wo
        W = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"]   # taps
        G = [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6", "a5", "a6"]]   # window columns (rows a, b, c)
        acc, bias, py, xrow, pp, rowb = "a7", "a3", "a0", "a1", "s9", "s10"
        pa, pb, pc = "s11", "ra", "gp"
        cnt = "tp"
        pro = [f"mv {pp}, a5"]   # before a5 holds a window column
        order = list(range(9))[::-1] if self.flip else list(range(9))
        for src in range(9):
            pro += [f"lw {W[order.index(src)]}, 0(a2)"] + ([f"add a2, a2, {pp}"] if src < 8 else [])
        pro += _li(rowb, wd) + [f"mul {rowb}, {rowb}, {pp}"]
        # An activation needs four more registers: the bias moves to the frame (loaded into the
        # accumulator before the window's loads), the loop count to a window register that is loaded only
        # inside the loop, and a2, a3, a4 (nrows, read by the loop's setup only) and tp hold the rest.
        tmp, consts = "a4", {"three": "a3", "six": "a2", "sixth": "tp"}
        if self.act:
            cnt = G[0][0]
            pro += [f"sw {bias}, {LOCAL}(sp)"] + microkernel.act_consts(self.act, consts)

        def out(left, mid, right, loads=()):
            """One output from window columns (each a [row a, row b, row c] register list or None for zero),
            after `loads` (the window's new column)."""
            if self.act:
                seq = [f"lw {acc}, {LOCAL}(sp)", *loads]
            else:
                seq = [*loads, f"mv {acc}, {bias}"]
            for r in range(3):
                for kw, col in enumerate((left, mid, right)):
                    if col is not None:
                        seq.append(_vfmac(acc, col[r], W[3 * r + kw]))
            if self.act:   # as odl_act_pair computes it
                seq += microkernel.act_ops(self.act, [acc], consts, [tmp])
            seq.append(asm.line("p_sw_postinc_reg", rs2=acc, rs1=py, rs3_s=pp))
            return seq

        def load(col):
            return [_ld(col[0], pa, pp), _ld(col[1], pb, pp), _ld(col[2], pc, pp)]

        row = [f"mv {pa}, {xrow}", f"add {pb}, {xrow}, {rowb}", f"add {pc}, {pb}, {rowb}"]
        if s == 1:
            # output ow reads columns ow-1, ow, ow+1 (column wd is the right padding); the first output's
            # left column is the zero padding, then the three window columns rotate through G
            row += load(G[1])
            n_loaded = min(wo, wd - 1)   # outputs whose right column is in the map
            left, mid = None, G[1]
            if n_loaded:
                row += out(None, G[1], G[2], load(G[2]))
                left, mid = G[1], G[2]
            groups, rest = divmod(max(0, n_loaded - 1), 3)
            if groups:
                a, b = left, mid
                c = [g for g in G if g is not a and g is not b][0]
                loop = out(a, b, c, load(c)) + out(b, c, a, load(a)) + out(c, a, b, load(b))
                row += _li(cnt, groups) + _loop(0, cnt, loop)
            for _ in range(rest):
                third = [g for g in G if g is not left and g is not mid][0]
                row += out(left, mid, third, load(third))
                left, mid = mid, third
            if n_loaded < wo:   # the last output: its right column is the padding
                row += out(left, mid, None)
        else:
            # output ow reads columns 2ow-1, 2ow, 2ow+1; the right one is the next output's left one
            full = min(wo, wd // 2)   # outputs whose right column 2ow+1 is in the map
            L, M, R = G
            row += out(None, M, R, load(M) + load(R)) if full else []
            k = 1 if full else 0
            pairs, rest = divmod(full - k, 2)
            left = R
            if pairs:
                loop = out(R, M, L, load(M) + load(L)) + out(L, M, R, load(M) + load(R))
                row += _li(cnt, pairs) + _loop(0, cnt, loop)
            for _ in range(rest):
                nxt = L if left is R else R
                row += out(left, M, nxt, load(M) + load(nxt))
                left = nxt
            if full < wo:   # the last output: column 2ow+1 is past the map
                if full == 0:
                    row += out(None, M, None, load(M))
                else:
                    row += out(left, M, None, load(M))
        row += [f"add {xrow}, {xrow}, {rowb}"] * s
        body = _loop(1, "a4", row)
        return _func(self.name, pro, body, local=bool(self.act))


def _vfmul(rd, a, b):
    return asm.line("vfmul_h", rd=rd, rs1=a, rs2=b)


@dataclass(frozen=True)
class DwIg2:
    """Input gradient of a 3x3, padding-1, stride-2 depthwise layer whose input is twice its output."""
    wo: int       # output-gradient pixels a row (the input gradient has 2 wo)

    @property
    def name(self) -> str:
        return f"odl_dw3g_o{self.wo}"

    def asm(self) -> list:
        """name(dx, dy, w, 0, nrows, pix): dx at input-gradient row 2 j0, dy at the row above output-gradient
        row j0 (in its tile with zero rows), nrows rows of dY (each gives two rows of dX); pix the bytes
        from one pixel (and tap) to the next."""
        wo = self.wo
        W = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"]
        e00, e01, e10, e11 = "a5", "a6", "a7", "t6"
        p0, p1, q0, q1, pp, rowb = "s9", "s10", "s11", "ra", "gp", "tp"
        pro = [f"mv {pp}, a5"]   # before a5 holds a product
        for t in range(9):
            pro += [f"lw {W[t]}, 0(a2)"] + ([f"add a2, a2, {pp}"] if t < 8 else [])
        pro += _li("t0", wo) + [f"mul t0, t0, {pp}"]      # a row of dY
        pro += [f"add {rowb}, t0, t0"]                      # a row of dX
        pro += [f"add {p0}, a1, t0", f"add {p1}, {p0}, t0", f"mv {q0}, a0", f"add {q1}, a0, {rowb}"]

        def st(q, r):
            return asm.line("p_sw_postinc_reg", rs2=r, rs1=q, rs3_s=pp)

        def step(A, B, C, D, last):
            seq = [] if last else [_ld(B, p0, pp), _ld(D, p1, pp)]
            seq += [_vfmul(e00, A, W[4]), _vfmul(e10, A, W[7]), _vfmul(e11, A, W[8]), _vfmul(e01, A, W[5])]
            seq += [_vfmac(e10, C, W[1]), _vfmac(e11, C, W[2])]
            if not last:
                seq += [_vfmac(e01, B, W[3]), _vfmac(e11, B, W[6]), _vfmac(e11, D, W[0])]
            seq += [st(q0, e00), st(q0, e01), st(q1, e10), st(q1, e11)]
            return seq
        A, B, C, D = "t0", "t1", "t2", "t3"
        row = [_ld(A, p0, pp), _ld(C, p1, pp)]
        n = wo - 1   # steps with a right neighbour
        pairs, rest = divmod(n, 2)
        if pairs:
            loop = step(A, B, C, D, False) + step(B, A, D, C, False)
            row += _li("t4", pairs) + _loop(0, "t4", loop)
        if rest:
            row += step(A, B, C, D, False)
            A, B, C, D = B, A, D, C
        row += step(A, B, C, D, True)
        # next dY row: p0 and p1 already there; dX: two rows on
        row += [f"mv {q0}, {q1}", f"add {q1}, {q1}, {rowb}"]
        return _func(self.name, pro, _loop(1, "a4", row))


@dataclass(frozen=True)
class DwWg:
    """Weight (and bias) gradient of a 3x3, padding-1 depthwise layer: one channel pair over the whole
    map, for all three rows of taps (`rows` 3) or for one (`rows` 1: the caller points x and dw at the
    row of taps; a tile's items are then three times its pairs, which the cores share more evenly)."""
    h: int
    wd: int
    ho: int
    wo: int
    stride: int
    bias: bool    # also sum the bias gradient (along the first row of taps)
    rows: int = 3

    @property
    def name(self) -> str:
        return (f"odl_dw3w_h{self.h}w{self.wd}o{self.ho}x{self.wo}s{self.stride}r{self.rows}"
                f"{'_b' if self.bias else ''}")

    def row_instructions(self) -> int:
        """Instructions of one output row of one row of taps (the routine's loop body)."""
        return len(self._row(False)[0])

    def _row(self, with_b: bool) -> tuple[list, int]:
        s, wd, wo = self.stride, self.wd, self.wo
        row = []
        # output ow reads x columns ow*s + kw - 1; the window holds them, kw = 0, 1, 2 (None: padding)
        cols = {}
        n_in = 0   # x columns loaded so far in this row
        for ow in range(wo):
            need = [ow * s + kw - 1 for kw in range(3)]
            row.append(_ld(_DY, _PDY, _PP))
            regs = []
            for c in need:
                if c < 0 or c >= wd:
                    regs.append(None)
                    continue
                if c not in cols:
                    r = _WIN[c % 3]
                    row.append(_ld(r, _PX, _PP))
                    cols[c] = r
                    n_in += 1
                regs.append(cols[c])
            for kw, r in enumerate(regs):
                if r is not None:
                    row.append(_vfmac(_ACC[kw], _DY, r))
            if with_b:
                row.append(asm.line("vfadd_h", rd=_BACC, rs1=_BACC, rs2=_DY))
            if (ow + 1) % 8 == 0 or ow + 1 == wo:
                row += _fold(with_b)
        # the x pointer went through n_in columns of its row: on to the row s rows below
        row.append(f"add {_PX}, {_PX}, {_STEP}")
        return row, n_in

    def asm(self) -> list:
        """name(dw, x, dy, db, pix, nrows): dw at the first tap (of the row of taps) of the pair, x at the map row
        above the first output's window (the zero row, for the first row of taps), dy at row 0; db the
        pair's bias-gradient word (with bias only); pix the bytes from one pixel (and tap) to the next.
        nrows is the output rows, ho but for the warm-up run (dwtiles), which runs one row of each row of
        taps to bring every line of the routine into the instruction cache.
        The pitch is an argument, not a constant, so that the tiles of a layer share one routine and its
        lines in the instruction caches. FP16 partial sums of at most 8 terms, folded into FP32
        (vfdotpex with {1, 0} and {0, 1})."""
        _, n_in = self._row(False)
        pro = [f"mv {_NROWS}, a5"]   # before a5 holds an FP32 half
        pro += _li(_ONE_LO, ONE_LO) + _li(_ONE_HI, ONE_HI)
        pro += _li(_STEP, self.stride * self.wd - n_in) + [f"mul {_STEP}, {_STEP}, {_PP}"]
        if self.rows > 1:   # from one row of taps' first x row to the next's
            pro += _li(_ROWB, self.wd) + [f"mul {_ROWB}, {_ROWB}, {_PP}"]
        def one(with_b: bool, more: bool) -> list:
            """One row of taps; `more`: on to the next one (dw's next tap, x's next row)."""
            seq = [f"li {r}, 0" for r in _ACC + _LO + _HI] + ([f"li {r}, 0" for r in (_BACC, _BLO, _BHI)] if with_b else [])
            seq += [f"mv {_PDY}, a2", f"mv {_PX}, a1"]
            seq += [f"mv {_CNT}, {_NROWS}"] + _loop(0, _CNT, self._row(with_b)[0])
            for kw in range(3):
                seq += [asm.line("vfcpka_h_s", rd=_LO[kw], rs1=_LO[kw], rs2=_HI[kw]), f"sw {_LO[kw]}, 0(a0)"]
                seq += [f"add a0, a0, {_PP}"] if kw < 2 or more else []
            if with_b:
                seq += [asm.line("vfcpka_h_s", rd=_BLO, rs1=_BLO, rs2=_BHI), "sw " + _BLO + ", 0(a3)"]
            return seq + ([f"add a1, a1, {_ROWB}"] if more else [])
        # the rows of taps without the bias run in a hardware loop, not unrolled: the routine's lines are
        # what every core waits for together the first time it runs in a fork (18 cycles a line)
        first = one(True, self.rows > 1) if self.bias else []
        rest = self.rows - (1 if self.bias else 0)
        if rest > 1:
            body = first + _li(_KH, rest) + _loop(1, _KH, one(False, True))
        else:
            body = first + (one(False, False) if rest else [])
        return _func(self.name, pro, body)


# The weight gradient's registers: three FP16 tap sums, their FP32 halves, the x window, the pointers
_ACC = ["t0", "t1", "t2"]
_LO = ["t3", "t4", "t5"]
_HI = ["t6", "a5", "a6"]
_WIN = ["s0", "s1", "s2"]
_DY, _ONE_LO, _ONE_HI, _PP, _STEP, _ROWB = "a7", "s3", "s4", "a4", "s5", "ra"
_PDY, _PX = "s6", "s7"
_BACC, _BLO, _BHI = "s8", "s9", "s10"
_CNT, _NROWS, _KH = "s11", "gp", "tp"


def _fold(with_b: bool) -> list:
    seq = []
    for k in range(3):
        seq += [asm.line("vfdotpex_s_h", rd_acc=_LO[k], rs1=_ACC[k], rs2=_ONE_LO),
                asm.line("vfdotpex_s_h", rd_acc=_HI[k], rs1=_ACC[k], rs2=_ONE_HI), f"li {_ACC[k]}, 0"]
    if with_b:
        seq += [asm.line("vfdotpex_s_h", rd_acc=_BLO, rs1=_BACC, rs2=_ONE_LO),
                asm.line("vfdotpex_s_h", rd_acc=_BHI, rs1=_BACC, rs2=_ONE_HI), f"li {_BACC}, 0"]
    return seq
