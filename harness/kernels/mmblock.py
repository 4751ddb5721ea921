"""Register-blocked FP16 matrix micro-kernels, generated as assembly from the ISA table.

A kernel computes runs of blocks of C = A . B^T with FP32 accumulation (vfdotpex.s.h, 2 MACs an
instruction): an m x n block holds m*n accumulators, and every word of the reduction loads m words
of A and n of B. A 5x4 block (20 accumulators, 2 rotating A registers, 4 B registers and the
pointers fill the 30 registers a core has besides sp) issues 29 instructions for 40 MACs, where
4x4 issues 24 for 32: the loads are what limits a core, so the larger block is 3.4 % faster.

Operands are read where they lie, each in one of two layouts:
  rows   rows of the operand `pitch` bytes apart, the reduction contiguous in each (a tensor tile
         as the DMA left it in L1: no packing at all); loaded with one post-incrementing pointer per
         group of rows whose offsets fit a 12-bit immediate
  panel  the block's rows interleaved word by word (word kk of row i at (kk*rows + i)*4), one
         post-incrementing pointer; what a transposing pack produces
A run keeps one A block and walks `nblocks` B blocks (B's next block is the next panel, or the next
rows); C follows B: the next columns (`trans` False: C rows are A rows) or the next rows (`trans`
True: C rows are B rows, each C word pairs two A rows). Both loops are hardware loops (the blocks
loop 1, the reduction loop 0), so a block costs its reduction plus the accumulators' start (zeros
or the biases), their conversion to FP16 pairs and the stores: about 2.2 instructions per output.

The reduction loop is scheduled so that no load is used by the next instruction: the B words and
A row 0 first, then every A row's load right after the first product of the row before it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from harness.isa import asm
from harness.kernels import microkernel

# every register but zero and sp; ra, gp and tp are saved and restored like the s registers
POOL = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "t0", "t1", "t2", "t3", "t4", "t5", "t6",
        "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "ra", "gp", "tp"]
SAVED = ["ra", "gp", "tp"] + [f"s{i}" for i in range(12)]
IMM_MIN, IMM_MAX = asm.imm_range()   # a load's, a store's and addi's offset
ACT_OPS = {"relu": 1, "relu6": 2, "hswish": 5}   # FP16 operations a word of a fused activation takes (and 2 or 6
                                                 # instructions a block for its constants)


@dataclass(frozen=True)
class Block:
    m: int              # rows of the A block (1..5)
    n: int              # rows of the B block (1..5)
    k2: int             # words of the reduction
    a_pitch: int        # bytes between A rows; 0: A is a panel of m rows
    b_pitch: int        # bytes between B rows; 0: B is a panel of n rows
    b_step: int         # bytes from one B block to the next
    c_pitch: int        # bytes between C rows; 0: an argument of the routine (a5), so that tiles of
                        # different widths share one routine in the instruction caches
    trans: bool = False  # C rows follow B (pairs of A rows in a word) instead of A
    bias: bool = False   # accumulators start at FP32 biases: one per C column (per A row when trans)
    segs: int = 1        # the reduction in segments of k2 / segs words, A's rows jumping `a_jump` bytes
    a_jump: int = 0      # between them (a convolution: one segment per row of taps)
    c_odd: bool = False  # trans with m odd: the block's first C column is an odd FP16 lane (its C pointer
                         # 2 bytes into a word), so the lone lane is the first, not the last
    act: str = ""        # relu, relu6 or hswish applied to the FP16 words before the stores (microkernel.ACTS)

    def c_words(self) -> list:
        """The FP16 words of one C row of the block (trans: one per B row): (first accumulator row,
        accumulator rows, byte offset from the block's C); an odd m leaves one lane stored alone."""
        rows = self.m if self.trans else self.n
        if rows % 2 == 0:
            return [(2 * h, 2, 4 * h) for h in range(rows // 2)]
        if not self.c_odd:
            return [(2 * h, 2, 4 * h) for h in range(rows // 2)] + [(rows - 1, 1, 2 * (rows - 1))]
        return [(0, 1, 0)] + [(1 + 2 * h, 2, 2 + 4 * h) for h in range(rows // 2)]

    @property
    def name(self) -> str:
        a = f"r{self.a_pitch}" if self.a_pitch else "p"
        b = f"r{self.b_pitch}" if self.b_pitch else "p"
        c = self.c_pitch if self.c_pitch else "r"
        return (f"odl_mm{self.m}x{self.n}_k{self.k2}_a{a}_b{b}_s{self.b_step}_c{c}"
                f"{'_t' if self.trans else ''}{'_b' if self.bias else ''}{'_o' if self.c_odd else ''}"
                f"{f'_g{self.segs}j{self.a_jump}' if self.segs > 1 else ''}{f'_{self.act}' if self.act else ''}")

    def cycles(self) -> int:
        """Cycles of one block, from the schedule: the reduction and the per-block work."""
        rows_c = self.n if self.trans else self.m
        act = len(self.c_words()) * rows_c * ACT_OPS.get(self.act, 0)
        return (act + self.k2 * (self.m + self.n + self.m * self.n) + self.m * self.n + 2 * rows_c * len(self.c_words())
                + 6 + 4 * (self.segs - 1) + (0 if self.c_pitch else rows_c + 1))

    def c_step(self) -> int:
        """Bytes from one block's C to the next block's (trans with a pitch argument: set at the stores)."""
        return self.n * self.c_pitch if self.trans else 2 * self.n


def _groups(rows: int, pitch: int) -> list[list[int]]:
    """Rows sharing one pointer: the first row post-increments it by 4, the others are reached at
    r * pitch - 4 from it, which must fit a 12-bit immediate."""
    if rows * pitch == 0:
        return [list(range(rows))]
    per = max(1, (IMM_MAX + 4) // pitch + 1) if pitch else rows
    return [list(range(r, min(rows, r + per))) for r in range(0, rows, per)]


def block_fits(m: int, n: int, a_pitch: int, b_pitch: int) -> bool:
    """Whether an m x n block's loop registers (accumulators, operands, one pointer a group of rows) fit
    the pool besides the B pointer's first group (the other persistent values can wait on the stack)."""
    ga = len(_groups(m, a_pitch)) if a_pitch else 1
    gb = len(_groups(n, b_pitch)) if b_pitch else 1
    return m * n + (2 if m > 1 else 1) + n + ga + gb <= len(POOL)


def _add(dst: str, src: str, imm: int, tmp: str) -> list[str]:
    """dst = src + imm in single-instruction lines (tmp holds a large immediate)."""
    if IMM_MIN <= imm <= IMM_MAX:
        return [f"addi {dst}, {src}, {imm}"] if imm or dst != src else []
    hi = (imm + 0x800) >> 12
    return [f"lui {tmp}, {hi & 0xfffff}", f"addi {tmp}, {tmp}, {imm - (hi << 12)}", f"add {dst}, {src}, {tmp}"]


def block_asm(b: Block) -> list[str]:
    """The run routine of block shape `b`: name(a, bp, c, nblocks, bias[, c_pitch]) in a0..a4 (a5).
    (Made once per shape in a process: a sweep's worker generates the same shapes for many programs.)"""
    return list(_block_asm(b))


@functools.lru_cache(maxsize=4096)
def _block_asm(b: Block) -> tuple:
    if not (1 <= b.m <= 5 and 1 <= b.n <= 5 and b.m * b.n <= 20):
        raise ValueError(f"no {b.m}x{b.n} block: at most 5 rows each and 20 accumulators")
    if not b.trans and b.n % 2:
        raise ValueError("C words pair two accumulators: the paired side of a block must be even")
    if b.c_odd and not (b.trans and b.m % 2):
        raise ValueError("an odd first C lane only for trans blocks with an odd number of A rows")
    ga = _groups(b.m, b.a_pitch) if b.a_pitch else [list(range(b.m))]
    gb = _groups(b.n, b.b_pitch) if b.b_pitch else [list(range(b.n))]
    nacc = b.m * b.n
    # registers live in the reduction loop
    free = list(POOL)
    # the persistent ones arrive in a0..a4: B pointer (a1), C (a2), A base (a0), bias (a4)
    bp = "a1"
    live = nacc + (2 if b.m > 1 else 1) + b.n + len(ga) + len(gb)
    spare = len(POOL) - live
    keep = []  # persistent values that fit in registers, most used first
    for r in ("a2", "a0", "a4"):
        if r == "a4" and not b.bias:
            continue
        keep.append(r)
    if b.segs > 1:   # a0 counts the segments: the A base goes to the stack
        keep.remove("a0")
        spare -= 1
    in_reg = keep[:max(0, spare)]
    spilled = keep[len(in_reg):]
    if b.segs > 1:
        spilled = ["a0"] + spilled
        free.remove("a0")
    for r in [bp] + in_reg:
        free.remove(r)
    for r in spilled:
        if r in free:
            free.remove(r)   # reused as loop registers below; their values live on the stack
    free = free + [r for r in spilled if r != "a0" or b.segs == 1]
    pa = [free.pop(0) for _ in ga]
    pb = [bp] + [free.pop(0) for _ in gb[1:]]
    ar = [free.pop(0) for _ in range(2 if b.m > 1 else 1)]
    br = [free.pop(0) for _ in range(b.n)]
    acc = [[free.pop(0) for _ in range(b.n)] for _ in range(b.m)]
    assert len(free) >= 0
    slot = {r: 4 * (len(SAVED) + k) for k, r in enumerate(spilled)}
    if not b.c_pitch:   # the pitch argument waits on the stack: a5 may be a loop register
        slot["a5"] = 4 * (len(SAVED) + len(spilled))
    frame = 4 * (len(SAVED) + len(slot))
    frame = (frame + 15) // 16 * 16

    def val(r):   # where a persistent argument is read per block
        return r

    out = [f"    .section .text.{b.name}, \"ax\"", f"    .globl {b.name}", f"    .type {b.name}, @function",
           "    .balign 4", f"{b.name}:", "    .option push", "    .option norvc", f"    addi sp, sp, -{frame}"]
    out += [f"    sw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += [f"    sw {r}, {slot[r]}(sp)" for r in spilled + (["a5"] if not b.c_pitch else [])]
    # the outer (blocks) loop: its body is `body`; lp.setup counts it in halfwords from itself
    body = []

    def ld(dst, reg, off):
        body.append(f"lw {dst}, {off}({reg})")

    # per block: A pointers at the block's first word
    if "a0" in spilled:
        body.append(f"lw {pa[0]}, {slot['a0']}(sp)")
    else:
        body.append(f"mv {pa[0]}, a0")
    for g in range(1, len(ga)):
        off = ga[g][0] * b.a_pitch
        body += _add(pa[g], pa[0], off, pa[g])
    # accumulators start at zero or at the biases
    if b.bias:
        breg = "a4"
        if "a4" in spilled:
            body.append(f"lw {br[0]}, {slot['a4']}(sp)")
            breg = br[0]
        if b.trans:   # one bias per A row
            for i in range(b.m):
                ld(acc[i][0], breg, 4 * i)
            body += [f"mv {acc[i][j]}, {acc[i][0]}" for i in range(b.m) for j in range(1, b.n)]
        else:         # one bias per C column, stepping with the blocks
            for j in range(b.n):
                ld(acc[0][j], breg, 4 * j)
            body += [f"mv {acc[i][j]}, {acc[0][j]}" for i in range(1, b.m) for j in range(b.n)]
            if "a4" in spilled:
                body += [f"addi {br[0]}, {br[0]}, {4 * b.n}", f"sw {br[0]}, {slot['a4']}(sp)"]
            else:
                body.append(f"addi a4, a4, {4 * b.n}")
    else:
        body += [f"li {acc[i][j]}, 0" for i in range(b.m) for j in range(b.n)]
    # the reduction loop
    inner = []

    def a_load(i, dst):
        if not b.a_pitch:
            inner.append(asm.line("p_lw_postinc_imm", rd=dst, rs1=pa[0], imm_i=4))
            return
        for g, rows in enumerate(ga):
            if i in rows:
                if i == rows[0]:
                    inner.append(asm.line("p_lw_postinc_imm", rd=dst, rs1=pa[g], imm_i=4))
                else:
                    inner.append(f"lw {dst}, {(i - rows[0]) * b.a_pitch - 4}({pa[g]})")

    def b_load(j):
        if not b.b_pitch:
            inner.append(asm.line("p_lw_postinc_imm", rd=br[j], rs1=pb[0], imm_i=4))
            return
        for g, rows in enumerate(gb):
            if j in rows:
                if j == rows[0]:
                    inner.append(asm.line("p_lw_postinc_imm", rd=br[j], rs1=pb[g], imm_i=4))
                else:
                    inner.append(f"lw {br[j]}, {(j - rows[0]) * b.b_pitch - 4}({pb[g]})")

    a_load(0, ar[0])
    for j in range(b.n):
        b_load(j)
    for i in range(b.m):
        for j in range(b.n):
            inner.append(asm.line("vfdotpex_s_h", rd_acc=acc[i][j], rs1=ar[i % len(ar)], rs2=br[j]))
            if j == 0 and i + 1 < b.m:
                a_load(i + 1, ar[(i + 1) % len(ar)])
    if b.k2 % b.segs:
        raise ValueError("the segments must split the reduction evenly")
    if b.segs > 1:   # a software loop over the segments around one copy of the reduction loop
        body.append(f"li a0, {b.segs}")
        body.append("9:")
    body.append(f"li {br[0]}, {b.k2 // b.segs}")
    body.append(asm.line("lp_setup", hwl_l=0, hwl_rs1=br[0], hwl_uimm12=2 * len(inner)))
    body += inner
    if b.segs > 1:   # A's rows jump to the next segment (B's panel runs on)
        body += [x for g in range(len(ga)) for x in _add(pa[g], pa[g], b.a_jump, br[0])]
        body += ["addi a0, a0, -1", "bnez a0, 9b"]
    # B pointers: from the end of this block's reduction to the next block
    if b.b_pitch:
        adv = b.b_step - 4 * b.k2
        for g in range(len(gb)):
            body += _add(pb[g], pb[g], adv, br[0])
    else:
        body += _add(pb[0], pb[0], b.b_step - 4 * b.k2 * b.n, br[0])
    # FP16 pairs, then the stores
    words = []  # (C row, byte offset in the row, register, store: sw, or sh for a lone lane)
    if b.trans:
        for j in range(b.n):
            for i0, cnt, off in b.c_words():
                r = acc[i0][j]
                body.append(asm.line("vfcpka_h_s", rd=r, rs1=acc[i0][j], rs2=acc[i0 + cnt - 1][j]))
                words.append((j, off, r, "sw" if cnt == 2 else "sh"))
    else:
        for i in range(b.m):
            for h in range(b.n // 2):
                r = acc[i][2 * h]
                body.append(asm.line("vfcpka_h_s", rd=r, rs1=acc[i][2 * h], rs2=acc[i][2 * h + 1]))
                words.append((i, 4 * h, r, "sw"))
    if b.act:   # the accumulators that were paired into words and the operand registers are free again
        regs = [r for _, _, r, _ in words]
        dead = [a for row in acc for a in row if a not in regs]
        body += microkernel.act_words(b.act, regs, (ar + br)[:3], dead)
    creg = "a2"
    if "a2" in spilled:
        creg = ar[0]
        body.append(f"lw {creg}, {slot['a2']}(sp)")
    rows_c = max(w[0] for w in words) + 1
    last_off = (rows_c - 1) * b.c_pitch + max(w[1] for w in words)
    if not b.c_pitch:   # the pitch from the stack, a moving pointer through the rows
        mp, pt = [r for r in ar + br if r != creg][:2]
        body += [f"lw {pt}, {slot['a5']}(sp)", f"mv {mp}, {creg}"]
        row_at = 0
        for row, off, r, st in words:
            while row_at < row:
                body.append(f"add {mp}, {mp}, {pt}")
                row_at += 1
            body.append(f"{st} {r}, {off}({mp})")
        if b.trans:   # the next block's C rows follow this block's last one
            body.append(f"add {creg}, {mp}, {pt}")
        else:
            body += _add(creg, creg, b.c_step(), pt)
    elif last_off <= IMM_MAX:
        body += [f"{st} {r}, {row * b.c_pitch + off}({creg})" for row, off, r, st in words]
    elif last_off - IMM_MAX <= -IMM_MIN:   # every store reached from one pointer moved into the rows
        mp = ar[-1] if creg != ar[-1] else br[-1]
        mid = last_off - IMM_MAX
        body += _add(mp, creg, mid, br[0] if mp != br[0] else br[1])
        body += [f"{st} {r}, {row * b.c_pitch + off - mid}({mp})" for row, off, r, st in words]
    else:   # a moving pointer through the rows
        mp = ar[-1] if creg != ar[-1] else br[-1]
        tmp = br[0] if mp != br[0] else br[1]
        body.append(f"mv {mp}, {creg}")
        row_at = 0
        for row, off, r, st in words:
            while row_at < row:
                body += _add(mp, mp, b.c_pitch, tmp)
                row_at += 1
            body.append(f"{st} {r}, {off}({mp})")
    if b.c_pitch:
        body += _add(creg, creg, b.c_step(), br[-1] if br[-1] != creg else br[0])
    if "a2" in spilled:
        body.append(f"sw {creg}, {slot['a2']}(sp)")
    # the other B groups' pointers start once; they move with the first one
    for g in range(1, len(gb)):
        out += ["    " + x for x in _add(pb[g], pb[0], gb[g][0] * b.b_pitch, pb[g])]
    # every line of `body` is one 4-byte instruction (norvc, no pseudo-instruction that expands), or a label
    out.append("    " + asm.line("lp_setup", hwl_l=1, hwl_rs1="a3", hwl_uimm12=2 * len([x for x in body if not x.endswith(":")])))
    out += [("" if x.endswith(":") else "    ") + x for x in body]
    out += [f"    lw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += [f"    addi sp, sp, {frame}", "    ret", "    .option pop", f"    .size {b.name}, . - {b.name}", ""]
    return tuple(out)


def _routine(name: str, prologue: list, body: list, epilogue: list | None = None) -> list[str]:
    """A leaf routine: `prologue`, then `body` as a hardware loop counted by a2 (a2 >= 1)."""
    return ([f"    .section .text.{name}, \"ax\"", f"    .globl {name}", f"    .type {name}, @function",
             "    .balign 4", f"{name}:", "    .option push", "    .option norvc"]
            + ["    " + x for x in prologue]
            + ["    " + asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=2 * len(body))]
            + ["    " + x for x in body] + ["    " + x for x in (epilogue or [])]
            + ["    ret", "    .option pop", f"    .size {name}, . - {name}", ""])


def pack_rows(s: int) -> list[str]:
    """odl_packr<s>(dst, src, k2, pitch_bytes): `s` rows of k2 words (pitch_bytes apart) into one
    panel of s rows, 2 instructions a word."""
    regs = ["t0", "t1", "t2", "t3", "t4"][:s]
    ptr = ["a1", "a4", "a5", "a6", "a7"][:s]
    pro = [f"add {ptr[i]}, {ptr[i - 1]}, a3" for i in range(1, s)]
    body = [asm.line("p_lw_postinc_imm", rd=regs[i], rs1=ptr[i], imm_i=4) for i in range(s)]
    body += [asm.line("p_sw_postinc_imm", rs2=regs[i], rs1="a0", imm_s=4) for i in range(s)]
    return _routine(f"odl_packr{s}", pro, body)


_HIGH_HALVES = microkernel.high_halves("t3")   # the packers' selector register


def pack_cols2() -> list[str]:
    """odl_packc2(d0, src, k2, pitch_bytes, d1, dstep): two adjacent columns of a K-major FP16 matrix
    (rows of K `pitch_bytes` apart) into two rows of K-pairs: word kk of the first column (rows 2kk and
    2kk + 1) goes to d0, of the second to d1, each pointer then stepping by dstep bytes (4: rows of a
    transposed matrix; 4 * panel rows: two rows of a panel, d1 = d0 + 4). 7 instructions a pair."""
    # The words are stored whole and their wrong halves overwritten by halfword stores: d0's word is
    # row 2kk's with row 2kk + 1's low half on top, d1's row 2kk + 1's with row 2kk's high half under it.
    pro = ["add a6, a1, a3", "slli a3, a3, 1", "addi a7, a0, 2"]
    body = [asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
            asm.line("p_lw_postinc_reg", rd="t1", rs1="a6", rs2="a3"),
            asm.line("p_sw_postinc_reg", rs2="t0", rs1="a0", rs3_s="a5"),
            "srli t2, t0, 16",
            asm.line("p_sh_postinc_reg", rs2="t1", rs1="a7", rs3_s="a5"),
            "sw t1, 0(a4)",
            asm.line("p_sh_postinc_reg", rs2="t2", rs1="a4", rs3_s="a5")]
    return _routine("odl_packc2", pro, body)


def pack_cols2_long() -> list[str]:
    """odl_packc2l(d0, src, k2, pitch_bytes, d1, dstep): odl_packc2 for k2 >= 2, its pairs made in registers
    (pv.pack.h, pv.shuffle2.h): 6 instructions a pair, 8 cycles more a call. The loop stores the pair
    before its own (the first is made before the loop, the last stored after it), so that no instruction
    uses a word the one before it loaded."""
    pro = ["add a6, a1, a3", "slli a3, a3, 1"] + _HIGH_HALVES + [
           asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
           asm.line("p_lw_postinc_reg", rd="t1", rs1="a6", rs2="a3"),
           "addi a2, a2, -1"] + microkernel.pair_words("t2", "t0", "t1", "t3")
    body = [asm.line("p_lw_postinc_reg", rd="t1", rs1="a6", rs2="a3"),
            asm.line("p_sw_postinc_reg", rs2="t0", rs1="a4", rs3_s="a5"),
            asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
            asm.line("p_sw_postinc_reg", rs2="t2", rs1="a0", rs3_s="a5")] + microkernel.pair_words("t2", "t0", "t1", "t3")
    return _routine("odl_packc2l", pro, body, ["sw t2, 0(a0)", "sw t0, 0(a4)"])


def pack_cols2s() -> list[str]:
    """odl_packc2s(d0, src, k2, pitch_bytes, d1, dstep): odl_packc2 that also sums each column in FP32
    (vfdotpex with ones, in the order of its K-pairs), returned as the two words of a uint64_t (first
    column low): a bias gradient for 2 instructions a pair more."""
    # The first column's sum takes the pair before (zero before the first: +0 + +0 is +0), so that no
    # instruction uses a word the one before it loaded; the last pair's is added after the loop.
    pro = ["add a6, a1, a3", "slli a3, a3, 1", "lui t4, 0x3c004", "addi t4, t4, -1024", "li t5, 0", "li t6, 0",
           "li t2, 0"] + _HIGH_HALVES
    body = [asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
            asm.line("p_lw_postinc_reg", rd="t1", rs1="a6", rs2="a3"),
            asm.line("vfdotpex_s_h", rd_acc="t5", rs1="t2", rs2="t4")] + microkernel.pair_words("t2", "t0", "t1", "t3") + [
            asm.line("p_sw_postinc_reg", rs2="t2", rs1="a0", rs3_s="a5"),
            asm.line("p_sw_postinc_reg", rs2="t0", rs1="a4", rs3_s="a5"),
            asm.line("vfdotpex_s_h", rd_acc="t6", rs1="t0", rs2="t4")]
    return _routine("odl_packc2s", pro, body, [asm.line("vfdotpex_s_h", rd_acc="t5", rs1="t2", rs2="t4"),
                                               "mv a0, t5", "mv a1, t6"])


def trans_sum(odd: bool) -> list[str]:
    """odl_tcs<odd>(dst, src, kp, pitch_bytes, npairs, gap_bytes, sums): `npairs` pairs of adjacent
    columns of a K-major FP16 matrix (K = 2 kp + odd rows `pitch_bytes` apart) into rows of K-pairs
    `gap_bytes` apart (a transposed matrix), each row's FP32 sum (vfdotpex with ones, in the order of
    its K-pairs) stored in FP16 to sums[]. One call for a core's share of the columns: both loops in
    hardware loops, 8 instructions a pair of words (the sums included) and 19 a pair of columns."""
    name = f"odl_tcs{int(odd)}"
    # the first column's sum takes the pair before, as in odl_packc2s
    inner = [asm.line("p_lw_postinc_reg", rd="t0", rs1="s0", rs2="a7"),
             asm.line("p_lw_postinc_reg", rd="t1", rs1="s1", rs2="a7"),
             asm.line("vfdotpex_s_h", rd_acc="t5", rs1="t2", rs2="t4")] + microkernel.pair_words("t2", "t0", "t1", "t3") + [
             asm.line("p_sw_postinc_imm", rs2="t2", rs1="s2", imm_s=4),
             asm.line("p_sw_postinc_imm", rs2="t0", rs1="s3", imm_s=4),
             asm.line("vfdotpex_s_h", rd_acc="t6", rs1="t0", rs2="t4")]
    tail = [asm.line("vfdotpex_s_h", rd_acc="t5", rs1="t2", rs2="t4")]
    if odd:   # the last row of K pairs with zero
        tail += ["lw t0, 0(s0)", asm.line("p_exthz", rd="t2", rs1="t0"), "srli t0, t0, 16", "sw t2, 0(s2)", "sw t0, 0(s3)",
                 asm.line("vfdotpex_s_h", rd_acc="t5", rs1="t2", rs2="t4"),
                 asm.line("vfdotpex_s_h", rd_acc="t6", rs1="t0", rs2="t4")]
    outer = (["mv s0, a1", "add s1, a1, a3", "mv s2, a0", "add s3, a0, a5", "li t5, 0", "li t6, 0", "li t2, 0",
              asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=2 * len(inner))] + inner + tail
             + [asm.line("vfcpka_h_s", rd="t5", rs1="t5", rs2="t6"),
                asm.line("p_sh_postinc_imm", rs2="t5", rs1="a6", imm_s=2), "srli t5, t5, 16",
                asm.line("p_sh_postinc_imm", rs2="t5", rs1="a6", imm_s=2),
                "addi a1, a1, 4", "add a0, a0, s5"])
    saved = [f"s{i}" for i in range(6)]
    pro = ["addi sp, sp, -32"] + [f"sw {r}, {4 * i}(sp)" for i, r in enumerate(saved)]
    pro += ["slli a7, a3, 1", "lui t4, 0x3c004", "addi t4, t4, -1024", "slli s5, a5, 1"] + _HIGH_HALVES
    epi = [f"lw {r}, {4 * i}(sp)" for i, r in enumerate(saved)] + ["addi sp, sp, 32"]
    return ([f"    .section .text.{name}, \"ax\"", f"    .globl {name}", f"    .type {name}, @function",
             "    .balign 4", f"{name}:", "    .option push", "    .option norvc"]
            + ["    " + x for x in pro]
            + ["    " + asm.line("lp_setup", hwl_l=1, hwl_rs1="a4", hwl_uimm12=2 * len(outer))]
            + ["    " + x for x in outer] + ["    " + x for x in epi]
            + ["    ret", "    .option pop", f"    .size {name}, . - {name}", ""])


def pack_cols1() -> list[str]:
    """odl_packc1(d0, src, k2, pitch_bytes, dstep): one column of a K-major FP16 matrix into one row of
    K-pairs (d0 stepping by dstep bytes), 5 instructions a pair."""
    pro = ["add a6, a1, a3", "slli a3, a3, 1"]
    body = [asm.line("p_lhu_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
            asm.line("p_lhu_postinc_reg", rd="t1", rs1="a6", rs2="a3"),
            "slli t1, t1, 16", "or t0, t0, t1",
            asm.line("p_sw_postinc_reg", rs2="t0", rs1="a0", rs3_s="a4")]
    return _routine("odl_packc1", pro, body)


def packers() -> str:
    return "\n".join(pack_rows(2) + pack_rows(3) + pack_rows(4) + pack_rows(5) + pack_cols2() + pack_cols2_long() + pack_cols2s() + pack_cols1()
                     + trans_sum(False) + trans_sum(True))
