/* Start-up code. The loader (pulp-odl or GVSoC) starts the fabric controller at the ELF entry;
 * cluster cores start here too when the FC fetch-enables them (see cluster.c), and are told apart
 * by the cluster id in mhartid. */
    .section .text.start, "ax"
    .global _start
    .type _start, @function
_start:
    .option push
    .option norelax
    csrr  t0, mhartid
    srli  t1, t0, PULP_SOC_HARTID_CORE_BITS
    andi  t1, t1, (1 << PULP_SOC_HARTID_CLUSTER_BITS) - 1
    li    t2, PULP_FC_CLUSTER_ID
    bne   t1, t2, 2f
    /* fabric controller: stack, .bss, then main() */
    la    sp, __fc_stack_top
    la    t0, __bss_start
    la    t1, __bss_end
1:  bgeu  t0, t1, 3f
    sw    zero, 0(t0)
    addi  t0, t0, 4
    j     1b
3:  li    a0, 0
    li    a1, 0
    call  main
    call  exit
2:  /* cluster core: core id in a0 */
    andi  a0, t0, (1 << PULP_SOC_HARTID_CORE_BITS) - 1
    j     __pulp_cluster_start
    .option pop
    .size _start, . - _start

    .section .text.exit, "ax"
    .global exit
    .type exit, @function
exit:
    /* CORESTATUS with the end-of-computation bit: the simulator stops with the status below it */
    li    t0, PULP_SOC_CTRL + PULP_SOC_CORESTATUS
    li    t1, (1 << PULP_SOC_EOC_BIT) - 1
    and   a0, a0, t1
    not   t1, t1
    or    a0, a0, t1
    sw    a0, 0(t0)
4:  wfi
    j     4b
    .size exit, . - exit

    /* cluster core a0: its stack is __cluster_stacks + (a0 + 1) * PULP_CLUSTER_STACK_SIZE */
    .type __pulp_cluster_start, @function
__pulp_cluster_start:
    .option push
    .option norelax
    la    sp, __cluster_stacks
    addi  t0, a0, 1
    li    t1, PULP_CLUSTER_STACK_SIZE
    mul   t0, t0, t1
    add   sp, sp, t0
    call  __pulp_cluster_main
5:  wfi
    j     5b
    .option pop

    /* The platform this program is built for: a section that is never loaded, read back by
     * pulp-odl's ELF loader so that a program is not run on a platform with another memory map. */
    .section .pulp_odl.platform, "", @progbits
    .asciz PULP_PLATFORM_NAME
