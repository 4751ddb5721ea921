"""The 4x4 FP16 matrix micro-kernel, generated as assembly from the ISA table.

odl_mm4x4(ap, bp, k2, out): 16 FP32 accumulators, a hardware loop of k2 iterations, each loading
one word (2 x FP16) of 4 A-panel rows and 4 B-panel rows with post-increment loads and issuing 16
vfdotpex.s.h (32 MACs in 24 instructions, no load-use stall). The loop body is 96 bytes, so it needs
lp.setup (count in a register) rather than lp.setupi."""
from __future__ import annotations

import functools

import numpy as np

from harness.isa import asm

ACC = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"]
AREG = ["t0", "t1", "t2", "a4"]
BREG = ["a5", "a6", "a7", "ra"]
SAVED = ["ra"] + [f"s{i}" for i in range(12)]


def _body() -> list:
    body = []
    for r in AREG:
        body.append(asm.line("p_lw_postinc_imm", rd=r, rs1="a0", imm_i=4))
    for r in BREG:
        body.append(asm.line("p_lw_postinc_imm", rd=r, rs1="a1", imm_i=4))
    for i in range(4):
        for j in range(4):
            body.append(asm.line("vfdotpex_s_h", rd_acc=ACC[4 * i + j], rs1=AREG[i], rs2=BREG[j]))
    return body


def _open(name: str, frame: int) -> list:
    """A routine's start: its section and label, a frame of `frame` bytes, the registers it saves."""
    return [f"    .section .text.{name}, \"ax\"", f"    .globl {name}", f"    .type {name}, @function",
            "    .balign 4", f"{name}:", "    .option push", f"    addi sp, sp, -{frame}"] + \
        [f"    sw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]


def _close(name: str, frame: int) -> list:
    return [f"    lw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)] + \
        [f"    addi sp, sp, {frame}", "    ret", "    .option pop", f"    .size {name}, . - {name}", ""]


def _loop() -> list:
    """The reduction over a2 words in hardware loop 0 (none when a2 is 0). Compressed encodings outside the
    loop keep the routines small for the cores' 512-byte L0 caches; the loop body is kept uncompressed
    so that its end offset (LPEND: its last instruction, in halfwords from lp.setup) is known exactly."""
    body = _body()
    return ["    beqz a2, 1f", "    .option norvc",
            "    " + asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=2 * len(body))] + \
        ["    " + b for b in body] + ["    .option rvc", "1:"]


def _func(name: str, inner: list, epilogue: list) -> list:
    return _open(name, 4 * 16) + inner + [f"    li {r}, 0" for r in ACC] + _loop() + epilogue + _close(name, 4 * 16)


def mm4x4_store() -> list:
    """odl_mm4x4_st(ap, bp, k2, c, pitch_bytes, bias): the block goes straight to FP16 rows of C, the 4
    FP32 biases (zeros when the layer has none) added before the one rounding (vfcpka.h.s)."""
    bias = [BREG[0], BREG[1], BREG[2], AREG[0]]
    t1, t2 = AREG[1], AREG[2]
    epi = [f"    lw {t1}, 56(sp)", "    lw a4, 52(sp)"] + [f"    lw {bias[j]}, {4 * j}({t1})" for j in range(4)]
    for i in range(4):
        for half in range(2):
            a, b = ACC[4 * i + 2 * half], ACC[4 * i + 2 * half + 1]
            epi += [f"    fadd.s {t1}, {a}, {bias[2 * half]}, rne", f"    fadd.s {t2}, {b}, {bias[2 * half + 1]}, rne",
                    "    " + asm.line("vfcpka_h_s", rd=t1, rs1=t1, rs2=t2), f"    sw {t1}, {4 * half}(a3)"]
        epi.append("    add a3, a3, a4")
    inner = ["    sw a4, 52(sp)", "    sw a5, 56(sp)"]
    return _func("odl_mm4x4_st", inner, epi)


def pack4() -> list:
    """odl_pack4(dst, src, k2, pitch_bytes): 4 rows of k2 words into one panel (2 instructions a word)."""
    body = [asm.line("p_lw_postinc_imm", rd="t0", rs1="a1", imm_i=4),
            asm.line("p_lw_postinc_imm", rd="t1", rs1="a4", imm_i=4),
            asm.line("p_lw_postinc_imm", rd="t2", rs1="a5", imm_i=4),
            asm.line("p_lw_postinc_imm", rd="t3", rs1="a6", imm_i=4),
            asm.line("p_sw_postinc_imm", rs2="t0", rs1="a0", imm_s=4),
            asm.line("p_sw_postinc_imm", rs2="t1", rs1="a0", imm_s=4),
            asm.line("p_sw_postinc_imm", rs2="t2", rs1="a0", imm_s=4),
            asm.line("p_sw_postinc_imm", rs2="t3", rs1="a0", imm_s=4)]
    return ["    .section .text.odl_pack4, \"ax\"", "    .globl odl_pack4", "    .type odl_pack4, @function",
            "    .balign 4", "odl_pack4:", "    .option push", "    .option norvc",
            "    add a4, a1, a3", "    add a5, a4, a3", "    add a6, a5, a3", "    beqz a2, 1f",
            "    " + asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=2 * len(body))]\
        + ["    " + b for b in body] + ["1:", "    ret", "    .option pop", "    .size odl_pack4, . - odl_pack4", ""]


# Activations a run may apply to its FP16 pairs before the stores, the operations of odl_act_pair
# (odl_deploy.h) on the same FP16 values: a frozen layer's forward then needs no pass over its output.
ACTS = ("relu", "relu6", "hswish")


def _pair(v: float) -> int:
    """A word holding v (rounded to FP16 from FP32, as odl_pair does) in both lanes."""
    h = int(np.float16(np.float32(v)).view(np.uint16))
    return h | h << 16


ACT_PAIRS = {"six": _pair(6.0), "three": _pair(3.0), "sixth": _pair(1.0 / 6.0)}
ACT_CONSTS = {"relu": (), "relu6": ("six",), "hswish": ("six", "three", "sixth")}   # the pairs each one reads


def _li(reg: str, v: int) -> list:
    """reg = v as two instructions (lui, addi): the lines of a hardware loop are counted one each."""
    hi = (v + 0x800) >> 12
    return [f"lui {reg}, {hi & 0xfffff}", f"addi {reg}, {reg}, {v - (hi << 12)}"]


def act_consts(act: str, regs: dict) -> list:
    """Lines loading the constants `act` reads into regs ("six", "three", "sixth" -> register)."""
    if act not in ACTS:
        raise ValueError(f"no fused activation {act!r}")
    return [line for k in ACT_CONSTS[act] for line in _li(regs[k], ACT_PAIRS[k])]


def act_ops(act: str, words: list, regs: dict, tmp: list) -> list:
    """Lines applying `act` to the FP16 pairs in `words` (zero: x0, a pair of +0.0; the constants in regs, as
    act_consts loads them), one operation across all the words before the next, so that no operation waits
    on the one before it."""
    if act not in ACTS:
        raise ValueError(f"no fused activation {act!r}")

    def each(op, dst, a, b):
        return [asm.line(op, rd=d, rs1=x, rs2=y) for d, x, y in zip(dst, a, b)]

    n = len(words)
    if act == "relu":
        return each("vfmax_h", words, words, ["zero"] * n)
    six = regs["six"]
    if act == "relu6":
        return each("vfmax_h", words, words, ["zero"] * n) + each("vfmin_h", words, words, [six] * n)
    three, sixth, t = regs["three"], regs["sixth"], tmp[:n]
    return (each("vfadd_h", t, words, [three] * n) + each("vfmax_h", t, t, ["zero"] * n)   # x * (min(max(x + 3, 0), 6) * 1/6)
            + each("vfmin_h", t, t, [six] * n) + each("vfmul_h", t, t, [sixth] * n) + each("vfmul_h", words, words, t))


def act_words(act: str, words: list, consts: list, tmp: list) -> list:
    """act_consts then act_ops, the constants in consts (six, three, sixth)."""
    regs = dict(zip(("six", "three", "sixth"), consts))
    return act_consts(act, regs) + act_ops(act, words, regs, tmp)


def run_name(bias: bool, act: str = "") -> str:
    return "odl_mm4x4_run" + ("_bias" if bias else "") + (f"_{act}" if act else "")


def mm4x4_run(bias: bool, act: str = "") -> list:
    """odl_mm4x4_run(ap, bp, k2, c, pitch_bytes, nblocks[, bias]): a row of `nblocks` 4x4 blocks of C that
    share one A panel and take consecutive B panels (the B pointer leaves each block's loop at the next
    panel), stored as FP16. One call per row of blocks pays the register saves once, and the
    accumulators start at the biases (odl_mm4x4_run_bias, which steps `bias` by 4 a block) or at zero,
    so a short reduction (a weight gradient over 16 samples) is not dominated by per-block overhead.
    With `act` (odl_mm4x4_run_bias_relu6, ...) the FP16 pairs pass through the activation first."""
    name = run_name(bias, act)
    frame = 4 * 20
    BIAS = 68      # after the run's own slots (_RUN)
    out = _open(name, frame) + _run_start()
    if bias:
        out.append(f"    sw a6, {BIAS}(sp)")
    out += ["    beqz a5, 3f", "2:", f"    lw a0, {_RUN['ap']}(sp)"]
    if bias:
        out += [f"    lw t0, {BIAS}(sp)"] + [f"    lw {ACC[j]}, {4 * j}(t0)" for j in range(4)]
        out += [f"    addi t0, t0, 16", f"    sw t0, {BIAS}(sp)"]
        out += [f"    mv {ACC[4 * i + j]}, {ACC[j]}" for i in range(1, 4) for j in range(4)]
    else:
        out += [f"    li {r}, 0" for r in ACC]
    out += _loop()
    # the 8 packed words first, then the stores: no store waits on the conversion before it
    words = ["t0", "t1", "t2", "a5", "a6", "a7", "ra", "a0"]
    for w in range(8):
        i, half = divmod(w, 2)
        out.append("    " + asm.line("vfcpka_h_s", rd=words[w], rs1=ACC[4 * i + 2 * half], rs2=ACC[4 * i + 2 * half + 1]))
    if act:   # the accumulators are free again: constants and temporaries
        out += ["    " + line for line in act_words(act, words, ACC[:3], ACC[3:11])]
    out += [f"    lw a3, {_RUN['c']}(sp)", f"    lw a4, {_RUN['pitch']}(sp)", "    addi t3, a3, 8", f"    sw t3, {_RUN['c']}(sp)"]
    for i in range(4):
        out += [f"    sw {words[2 * i]}, 0(a3)", f"    sw {words[2 * i + 1]}, 4(a3)"]
        if i < 3:
            out.append("    add a3, a3, a4")
    return out + _run_next() + _close(name, frame)


# The arguments a run of blocks keeps on its stack, after the 13 saved registers: A's panel (a0), C (a3),
# C's row pitch (a4), the blocks left (a5)
_RUN = {"ap": 52, "c": 56, "pitch": 60, "nb": 64}


def _run_start() -> list:
    return [f"    sw a0, {_RUN['ap']}(sp)", f"    sw a3, {_RUN['c']}(sp)", f"    sw a4, {_RUN['pitch']}(sp)",
            f"    sw a5, {_RUN['nb']}(sp)"]


def _run_next() -> list:
    """The next block of the run (back to label 2), or its end (label 3)."""
    return [f"    lw t0, {_RUN['nb']}(sp)", "    addi t0, t0, -1", f"    sw t0, {_RUN['nb']}(sp)", "    bnez t0, 2b", "3:"]


def mm4x4_run_acc() -> list:
    """odl_mm4x4_run_acc(ap, bp, k2, acc, pitch_bytes, nblocks): odl_mm4x4_run whose blocks add to FP32
    accumulators in memory (rows `pitch_bytes` apart, 4 floats a block, consecutive blocks 16 bytes
    apart): each block's registers start at its accumulators and go back to them, so a reduction cut into
    slices sums in the order it would uncut, and a slice costs a block 32 loads and stores more than its
    products rather than a pass over its 16 sums."""
    name = "odl_mm4x4_run_acc"
    frame = 4 * 20

    def rows(op):   # the 16 accumulators from or to the block's 4 rows (t0 walks them)
        out = ["    mv t0, a3"]
        for i in range(4):
            out += [f"    {op} {ACC[4 * i + j]}, {4 * j}(t0)" for j in range(4)]
            if i < 3:
                out.append("    add t0, t0, a4")
        return out
    c, pitch = _RUN["c"], _RUN["pitch"]
    out = _open(name, frame) + _run_start()
    out += ["    beqz a5, 3f", "2:", f"    lw a0, {_RUN['ap']}(sp)", f"    lw a3, {c}(sp)", f"    lw a4, {pitch}(sp)"]
    out += rows("lw") + _loop()
    out += [f"    lw a3, {c}(sp)", f"    lw a4, {pitch}(sp)", "    addi t1, a3, 16", f"    sw t1, {c}(sp)"]
    return out + rows("sw") + _run_next() + _close(name, frame)


def high_halves(reg: str) -> list[str]:
    """`reg` = 0x00030001: pv.shuffle2.h's selector of rd's high half (into the low lane) and rs1's (the high)."""
    return [f"lui {reg}, 0x30", f"addi {reg}, {reg}, 1"]


def pair_words(lo: str, w0: str, w1: str, sel: str) -> list[str]:
    """Two words of K-pairs from two words of two adjacent columns (w0: row 2kk, w1: row 2kk + 1): lo = w0's
    low half under w1's, then w0 = w0's high half under w1's (sel holds high_halves). 2 instructions."""
    return [asm.line("pv_pack_h", rd=lo, rs1=w1, rs2=w0), asm.line("pv_shuffle2_h", rd_acc=w0, rs1=w1, rs2=sel)]


def packk2() -> list:
    """odl_packk2(dst, src, k2, pitch_bytes): two adjacent columns of a K-major FP16 matrix (one word per
    row, rows `pitch_bytes` apart) into the words of two panel rows: word kk of the first column holds
    rows 2kk and 2kk+1 of column 0, the word after it those of column 1; dst steps 16 bytes per kk (a
    4-row panel). The two words are made by pv.pack.h (the low halves) and pv.shuffle2.h (the high
    ones), 6 instructions per pair of rows in a hardware loop."""
    # The loop stores the pair before its own (the first is made before it, the last stored after it), so
    # that no instruction uses a word the one before it loaded.
    first = [asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
             asm.line("p_lw_postinc_reg", rd="t1", rs1="a4", rs2="a3"), "addi a2, a2, -1"]
    pair = pair_words("t2", "t0", "t1", "a5")
    body = [asm.line("p_lw_postinc_reg", rd="t1", rs1="a4", rs2="a3"), "sw t0, 4(a0)",
            asm.line("p_lw_postinc_reg", rd="t0", rs1="a1", rs2="a3"),
            asm.line("p_sw_postinc_imm", rs2="t2", rs1="a0", imm_s=16)] + pair
    return ["    .section .text.odl_packk2, \"ax\"", "    .globl odl_packk2", "    .type odl_packk2, @function",
            "    .balign 4", "odl_packk2:", "    .option push", "    .option norvc",
            "    add a4, a1, a3", "    slli a3, a3, 1"] + ["    " + x for x in high_halves("a5")] + ["    beqz a2, 1f"]\
        + ["    " + x for x in first + pair] + ["    beqz a2, 2f",
           "    " + asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=2 * len(body))]\
        + ["    " + b for b in body] + ["2:", "    sw t0, 4(a0)", "    sw t2, 0(a0)",
                                        "1:", "    ret", "    .option pop", "    .size odl_packk2, . - odl_packk2", ""]


@functools.lru_cache(maxsize=None)
def kernels() -> str:
    """All generated assembly routines of the kernel library (made once per process: every stage
    program of a sweep links the same text)."""
    runs = [line for bias in (False, True) for act in ("",) + ACTS for line in mm4x4_run(bias, act)]
    # the newest routine last: the others keep their addresses
    return "\n".join([mm4x4(), *mm4x4_store(), *pack4(), *runs, *packk2(), *mm4x4_run_acc()])


def mm4x4() -> str:
    body = _body()
    # LPEND is the address of the body's last instruction, counted in halfwords from lp.setup
    end_off = 2 * len(body)
    out = ["    .section .text.odl_mm4x4, \"ax\"", "    .globl odl_mm4x4", "    .type odl_mm4x4, @function",
           "    .balign 4", "odl_mm4x4:", "    .option push", "    .option norvc",
           f"    addi sp, sp, -{4 * 16}"]
    out += [f"    sw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += [f"    li {r}, 0" for r in ACC]
    out.append("    beqz a2, 1f")
    out.append("    " + asm.line("lp_setup", hwl_l=0, hwl_rs1="a2", hwl_uimm12=end_off))
    out += ["    " + b for b in body]
    out.append("1:")
    out += [f"    sw {r}, {4 * k}(a3)" for k, r in enumerate(ACC)]
    out += [f"    lw {r}, {4 * k}(sp)" for k, r in enumerate(SAVED)]
    out += [f"    addi sp, sp, {4 * 16}", "    ret", "    .option pop", "    .size odl_mm4x4, . - odl_mm4x4", ""]
    return "\n".join(out)
