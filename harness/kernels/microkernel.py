"""The 4x4 FP16 matrix micro-kernel, generated as assembly from the ISA table.

odl_mm4x4(ap, bp, k2, out): 16 FP32 accumulators, a hardware loop of k2 iterations, each loading
one word (2 x FP16) of 4 A-panel rows and 4 B-panel rows with post-increment loads and issuing 16
vfdotpex.s.h (32 MACs in 24 instructions, no load-use stall). The loop body is 96 bytes, so it needs
lp.setup (count in a register) rather than lp.setupi."""
from __future__ import annotations

from harness.isa import asm

ACC = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"]
AREG = ["t0", "t1", "t2", "a4"]
BREG = ["a5", "a6", "a7", "ra"]
SAVED = ["ra"] + [f"s{i}" for i in range(12)]


def mm4x4() -> str:
    body = []
    for r in AREG:
        body.append(asm.line("p_lw_postinc_imm", rd=r, rs1="a0", imm_i=4))
    for r in BREG:
        body.append(asm.line("p_lw_postinc_imm", rd=r, rs1="a1", imm_i=4))
    for i in range(4):
        for j in range(4):
            body.append(asm.line("vfdotpex_s_h", rd_acc=ACC[4 * i + j], rs1=AREG[i], rs2=BREG[j]))
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
