/* Generated from isa/*.toml by harness/isa/gen_cheader.py (table sha256 8f59dfbd85be93fa681708e0c9db1bcc5748ea29ed15ea1ebe4885bfa52b4203). Do not edit. */
#ifndef PULP_ISA_H
#define PULP_ISA_H
#include <stdint.h>

/* MATCH_/MASK_: fixed bits of every instruction of the table */
#define MATCH_LUI 0x00000037u
#define MASK_LUI 0x0000007fu
#define MATCH_AUIPC 0x00000017u
#define MASK_AUIPC 0x0000007fu
#define MATCH_JAL 0x0000006fu
#define MASK_JAL 0x0000007fu
#define MATCH_JALR 0x00000067u
#define MASK_JALR 0x0000707fu
#define MATCH_BEQ 0x00000063u
#define MASK_BEQ 0x0000707fu
#define MATCH_BNE 0x00001063u
#define MASK_BNE 0x0000707fu
#define MATCH_BLT 0x00004063u
#define MASK_BLT 0x0000707fu
#define MATCH_BGE 0x00005063u
#define MASK_BGE 0x0000707fu
#define MATCH_BLTU 0x00006063u
#define MASK_BLTU 0x0000707fu
#define MATCH_BGEU 0x00007063u
#define MASK_BGEU 0x0000707fu
#define MATCH_LB 0x00000003u
#define MASK_LB 0x0000707fu
#define MATCH_LH 0x00001003u
#define MASK_LH 0x0000707fu
#define MATCH_LW 0x00002003u
#define MASK_LW 0x0000707fu
#define MATCH_LBU 0x00004003u
#define MASK_LBU 0x0000707fu
#define MATCH_LHU 0x00005003u
#define MASK_LHU 0x0000707fu
#define MATCH_SB 0x00000023u
#define MASK_SB 0x0000707fu
#define MATCH_SH 0x00001023u
#define MASK_SH 0x0000707fu
#define MATCH_SW 0x00002023u
#define MASK_SW 0x0000707fu
#define MATCH_ADDI 0x00000013u
#define MASK_ADDI 0x0000707fu
#define MATCH_SLTI 0x00002013u
#define MASK_SLTI 0x0000707fu
#define MATCH_SLTIU 0x00003013u
#define MASK_SLTIU 0x0000707fu
#define MATCH_XORI 0x00004013u
#define MASK_XORI 0x0000707fu
#define MATCH_ORI 0x00006013u
#define MASK_ORI 0x0000707fu
#define MATCH_ANDI 0x00007013u
#define MASK_ANDI 0x0000707fu
#define MATCH_SLLI 0x00001013u
#define MASK_SLLI 0xfe00707fu
#define MATCH_SRLI 0x00005013u
#define MASK_SRLI 0xfe00707fu
#define MATCH_SRAI 0x40005013u
#define MASK_SRAI 0xfe00707fu
#define MATCH_ADD 0x00000033u
#define MASK_ADD 0xfe00707fu
#define MATCH_SUB 0x40000033u
#define MASK_SUB 0xfe00707fu
#define MATCH_SLL 0x00001033u
#define MASK_SLL 0xfe00707fu
#define MATCH_SLT 0x00002033u
#define MASK_SLT 0xfe00707fu
#define MATCH_SLTU 0x00003033u
#define MASK_SLTU 0xfe00707fu
#define MATCH_XOR 0x00004033u
#define MASK_XOR 0xfe00707fu
#define MATCH_SRL 0x00005033u
#define MASK_SRL 0xfe00707fu
#define MATCH_SRA 0x40005033u
#define MASK_SRA 0xfe00707fu
#define MATCH_OR 0x00006033u
#define MASK_OR 0xfe00707fu
#define MATCH_AND 0x00007033u
#define MASK_AND 0xfe00707fu
#define MATCH_FENCE 0x0000000fu
#define MASK_FENCE 0x000fffffu
#define MATCH_FENCE_TSO 0x8330000fu
#define MASK_FENCE_TSO 0xffffffffu
#define MATCH_FENCE_I 0x0000100fu
#define MASK_FENCE_I 0xffffffffu
#define MATCH_ECALL 0x00000073u
#define MASK_ECALL 0xffffffffu
#define MATCH_EBREAK 0x00100073u
#define MASK_EBREAK 0xffffffffu
#define MATCH_MRET 0x30200073u
#define MASK_MRET 0xffffffffu
#define MATCH_WFI 0x10500073u
#define MASK_WFI 0xffffffffu
#define MATCH_CSRRW 0x00001073u
#define MASK_CSRRW 0x0000707fu
#define MATCH_CSRRS 0x00002073u
#define MASK_CSRRS 0x0000707fu
#define MATCH_CSRRC 0x00003073u
#define MASK_CSRRC 0x0000707fu
#define MATCH_CSRRWI 0x00005073u
#define MASK_CSRRWI 0x0000707fu
#define MATCH_CSRRSI 0x00006073u
#define MASK_CSRRSI 0x0000707fu
#define MATCH_CSRRCI 0x00007073u
#define MASK_CSRRCI 0x0000707fu
#define MATCH_MUL 0x02000033u
#define MASK_MUL 0xfe00707fu
#define MATCH_MULH 0x02001033u
#define MASK_MULH 0xfe00707fu
#define MATCH_MULHSU 0x02002033u
#define MASK_MULHSU 0xfe00707fu
#define MATCH_MULHU 0x02003033u
#define MASK_MULHU 0xfe00707fu
#define MATCH_DIV 0x02004033u
#define MASK_DIV 0xfe00707fu
#define MATCH_DIVU 0x02005033u
#define MASK_DIVU 0xfe00707fu
#define MATCH_REM 0x02006033u
#define MASK_REM 0xfe00707fu
#define MATCH_REMU 0x02007033u
#define MASK_REMU 0xfe00707fu
#define MATCH_C_ADDI4SPN 0x00000000u
#define MASK_C_ADDI4SPN 0x0000e003u
#define MATCH_C_LW 0x00004000u
#define MASK_C_LW 0x0000e003u
#define MATCH_C_SW 0x0000c000u
#define MASK_C_SW 0x0000e003u
#define MATCH_C_NOP 0x00000001u
#define MASK_C_NOP 0x0000ffffu
#define MATCH_C_NOP_HINT 0x00000001u
#define MASK_C_NOP_HINT 0x0000ef83u
#define MATCH_C_ADDI 0x00000001u
#define MASK_C_ADDI 0x0000e003u
#define MATCH_C_JAL 0x00002001u
#define MASK_C_JAL 0x0000e003u
#define MATCH_C_LI 0x00004001u
#define MASK_C_LI 0x0000e003u
#define MATCH_C_ADDI16SP 0x00006101u
#define MASK_C_ADDI16SP 0x0000ef83u
#define MATCH_C_LUI_HINT 0x00006001u
#define MASK_C_LUI_HINT 0x0000ef83u
#define MATCH_C_LUI 0x00006001u
#define MASK_C_LUI 0x0000e003u
#define MATCH_C_SRLI64 0x00008001u
#define MASK_C_SRLI64 0x0000fc7fu
#define MATCH_C_SRAI64 0x00008401u
#define MASK_C_SRAI64 0x0000fc7fu
#define MATCH_C_SRLI 0x00008001u
#define MASK_C_SRLI 0x0000fc03u
#define MATCH_C_SRAI 0x00008401u
#define MASK_C_SRAI 0x0000fc03u
#define MATCH_C_ANDI 0x00008801u
#define MASK_C_ANDI 0x0000ec03u
#define MATCH_C_SUB 0x00008c01u
#define MASK_C_SUB 0x0000fc63u
#define MATCH_C_XOR 0x00008c21u
#define MASK_C_XOR 0x0000fc63u
#define MATCH_C_OR 0x00008c41u
#define MASK_C_OR 0x0000fc63u
#define MATCH_C_AND 0x00008c61u
#define MASK_C_AND 0x0000fc63u
#define MATCH_C_J 0x0000a001u
#define MASK_C_J 0x0000e003u
#define MATCH_C_BEQZ 0x0000c001u
#define MASK_C_BEQZ 0x0000e003u
#define MATCH_C_BNEZ 0x0000e001u
#define MASK_C_BNEZ 0x0000e003u
#define MATCH_C_SLLI64 0x00000002u
#define MASK_C_SLLI64 0x0000f07fu
#define MATCH_C_SLLI 0x00000002u
#define MASK_C_SLLI 0x0000f003u
#define MATCH_C_LWSP 0x00004002u
#define MASK_C_LWSP 0x0000e003u
#define MATCH_C_JR 0x00008002u
#define MASK_C_JR 0x0000f07fu
#define MATCH_C_MV 0x00008002u
#define MASK_C_MV 0x0000f003u
#define MATCH_C_EBREAK 0x00009002u
#define MASK_C_EBREAK 0x0000ffffu
#define MATCH_C_JALR 0x00009002u
#define MASK_C_JALR 0x0000f07fu
#define MATCH_C_ADD 0x00009002u
#define MASK_C_ADD 0x0000f003u
#define MATCH_C_SWSP 0x0000c002u
#define MASK_C_SWSP 0x0000e003u
#define MATCH_C_FLW 0x00006000u
#define MASK_C_FLW 0x0000e003u
#define MATCH_C_FSW 0x0000e000u
#define MASK_C_FSW 0x0000e003u
#define MATCH_C_FLWSP 0x00006002u
#define MASK_C_FLWSP 0x0000e003u
#define MATCH_C_FSWSP 0x0000e002u
#define MASK_C_FSWSP 0x0000e003u
#define MATCH_FLW 0x00002007u
#define MASK_FLW 0x0000707fu
#define MATCH_FSW 0x00002027u
#define MASK_FSW 0x0000707fu
#define MATCH_FMADD_S 0x00000043u
#define MASK_FMADD_S 0x0600007fu
#define MATCH_FMSUB_S 0x00000047u
#define MASK_FMSUB_S 0x0600007fu
#define MATCH_FNMSUB_S 0x0000004bu
#define MASK_FNMSUB_S 0x0600007fu
#define MATCH_FNMADD_S 0x0000004fu
#define MASK_FNMADD_S 0x0600007fu
#define MATCH_FADD_S 0x00000053u
#define MASK_FADD_S 0xfe00007fu
#define MATCH_FSUB_S 0x08000053u
#define MASK_FSUB_S 0xfe00007fu
#define MATCH_FMUL_S 0x10000053u
#define MASK_FMUL_S 0xfe00007fu
#define MATCH_FDIV_S 0x18000053u
#define MASK_FDIV_S 0xfe00007fu
#define MATCH_FSQRT_S 0x58000053u
#define MASK_FSQRT_S 0xfff0007fu
#define MATCH_FSGNJ_S 0x20000053u
#define MASK_FSGNJ_S 0xfe00707fu
#define MATCH_FSGNJN_S 0x20001053u
#define MASK_FSGNJN_S 0xfe00707fu
#define MATCH_FSGNJX_S 0x20002053u
#define MASK_FSGNJX_S 0xfe00707fu
#define MATCH_FMIN_S 0x28000053u
#define MASK_FMIN_S 0xfe00707fu
#define MATCH_FMAX_S 0x28001053u
#define MASK_FMAX_S 0xfe00707fu
#define MATCH_FCVT_W_S 0xc0000053u
#define MASK_FCVT_W_S 0xfff0007fu
#define MATCH_FCVT_WU_S 0xc0100053u
#define MASK_FCVT_WU_S 0xfff0007fu
#define MATCH_FCVT_S_W 0xd0000053u
#define MASK_FCVT_S_W 0xfff0007fu
#define MATCH_FCVT_S_WU 0xd0100053u
#define MASK_FCVT_S_WU 0xfff0007fu
#define MATCH_FEQ_S 0xa0002053u
#define MASK_FEQ_S 0xfe00707fu
#define MATCH_FLT_S 0xa0001053u
#define MASK_FLT_S 0xfe00707fu
#define MATCH_FLE_S 0xa0000053u
#define MASK_FLE_S 0xfe00707fu
#define MATCH_FCLASS_S 0xe0001053u
#define MASK_FCLASS_S 0xfff0707fu
#define MATCH_FMV_X_W 0xe0000053u
#define MASK_FMV_X_W 0xfff0707fu
#define MATCH_FMV_W_X 0xf0000053u
#define MASK_FMV_W_X 0xfff0707fu
#define MATCH_FLH 0x00001007u
#define MASK_FLH 0x0000707fu
#define MATCH_FSH 0x00001027u
#define MASK_FSH 0x0000707fu
#define MATCH_FMADD_H 0x04000043u
#define MASK_FMADD_H 0x0600007fu
#define MATCH_FMSUB_H 0x04000047u
#define MASK_FMSUB_H 0x0600007fu
#define MATCH_FNMSUB_H 0x0400004bu
#define MASK_FNMSUB_H 0x0600007fu
#define MATCH_FNMADD_H 0x0400004fu
#define MASK_FNMADD_H 0x0600007fu
#define MATCH_FADD_H 0x04000053u
#define MASK_FADD_H 0xfe00007fu
#define MATCH_FSUB_H 0x0c000053u
#define MASK_FSUB_H 0xfe00007fu
#define MATCH_FMUL_H 0x14000053u
#define MASK_FMUL_H 0xfe00007fu
#define MATCH_FDIV_H 0x1c000053u
#define MASK_FDIV_H 0xfe00007fu
#define MATCH_FSQRT_H 0x5c000053u
#define MASK_FSQRT_H 0xfff0007fu
#define MATCH_FSGNJ_H 0x24000053u
#define MASK_FSGNJ_H 0xfe00707fu
#define MATCH_FSGNJN_H 0x24001053u
#define MASK_FSGNJN_H 0xfe00707fu
#define MATCH_FSGNJX_H 0x24002053u
#define MASK_FSGNJX_H 0xfe00707fu
#define MATCH_FMIN_H 0x2c000053u
#define MASK_FMIN_H 0xfe00707fu
#define MATCH_FMAX_H 0x2c001053u
#define MASK_FMAX_H 0xfe00707fu
#define MATCH_FCVT_W_H 0xc4000053u
#define MASK_FCVT_W_H 0xfff0007fu
#define MATCH_FCVT_WU_H 0xc4100053u
#define MASK_FCVT_WU_H 0xfff0007fu
#define MATCH_FCVT_H_W 0xd4000053u
#define MASK_FCVT_H_W 0xfff0007fu
#define MATCH_FCVT_H_WU 0xd4100053u
#define MASK_FCVT_H_WU 0xfff0007fu
#define MATCH_FEQ_H 0xa4002053u
#define MASK_FEQ_H 0xfe00707fu
#define MATCH_FLT_H 0xa4001053u
#define MASK_FLT_H 0xfe00707fu
#define MATCH_FLE_H 0xa4000053u
#define MASK_FLE_H 0xfe00707fu
#define MATCH_FCLASS_H 0xe4001053u
#define MASK_FCLASS_H 0xfff0707fu
#define MATCH_FMV_X_H 0xe4000053u
#define MASK_FMV_X_H 0xfff0707fu
#define MATCH_FMV_H_X 0xf4000053u
#define MASK_FMV_H_X 0xfff0707fu
#define MATCH_FCVT_S_H 0x40200053u
#define MASK_FCVT_S_H 0xfff0007fu
#define MATCH_FCVT_H_S 0x44000053u
#define MASK_FCVT_H_S 0xfff0007fu
#define MATCH_LP_STARTI 0x0000007bu
#define MASK_LP_STARTI 0x000fff7fu
#define MATCH_LP_ENDI 0x0000107bu
#define MASK_LP_ENDI 0x000fff7fu
#define MATCH_LP_COUNT 0x0000207bu
#define MASK_LP_COUNT 0xfff07f7fu
#define MATCH_LP_COUNTI 0x0000307bu
#define MASK_LP_COUNTI 0x000fff7fu
#define MATCH_LP_SETUP 0x0000407bu
#define MASK_LP_SETUP 0x00007f7fu
#define MATCH_LP_SETUPI 0x0000507bu
#define MASK_LP_SETUPI 0x00007f7fu
#define MATCH_P_LB_POSTINC_IMM 0x0000000bu
#define MASK_P_LB_POSTINC_IMM 0x0000707fu
#define MATCH_P_LH_POSTINC_IMM 0x0000100bu
#define MASK_P_LH_POSTINC_IMM 0x0000707fu
#define MATCH_P_LW_POSTINC_IMM 0x0000200bu
#define MASK_P_LW_POSTINC_IMM 0x0000707fu
#define MATCH_P_LBU_POSTINC_IMM 0x0000400bu
#define MASK_P_LBU_POSTINC_IMM 0x0000707fu
#define MATCH_P_LHU_POSTINC_IMM 0x0000500bu
#define MASK_P_LHU_POSTINC_IMM 0x0000707fu
#define MATCH_P_LB_POSTINC_REG 0x0000700bu
#define MASK_P_LB_POSTINC_REG 0xfe00707fu
#define MATCH_P_LH_POSTINC_REG 0x1000700bu
#define MASK_P_LH_POSTINC_REG 0xfe00707fu
#define MATCH_P_LW_POSTINC_REG 0x2000700bu
#define MASK_P_LW_POSTINC_REG 0xfe00707fu
#define MATCH_P_LBU_POSTINC_REG 0x4000700bu
#define MASK_P_LBU_POSTINC_REG 0xfe00707fu
#define MATCH_P_LHU_POSTINC_REG 0x5000700bu
#define MASK_P_LHU_POSTINC_REG 0xfe00707fu
#define MATCH_P_LB_REGOFF 0x00007003u
#define MASK_P_LB_REGOFF 0xfe00707fu
#define MATCH_P_LH_REGOFF 0x10007003u
#define MASK_P_LH_REGOFF 0xfe00707fu
#define MATCH_P_LW_REGOFF 0x20007003u
#define MASK_P_LW_REGOFF 0xfe00707fu
#define MATCH_P_LBU_REGOFF 0x40007003u
#define MASK_P_LBU_REGOFF 0xfe00707fu
#define MATCH_P_LHU_REGOFF 0x50007003u
#define MASK_P_LHU_REGOFF 0xfe00707fu
#define MATCH_P_SB_POSTINC_IMM 0x0000002bu
#define MASK_P_SB_POSTINC_IMM 0x0000707fu
#define MATCH_P_SH_POSTINC_IMM 0x0000102bu
#define MASK_P_SH_POSTINC_IMM 0x0000707fu
#define MATCH_P_SW_POSTINC_IMM 0x0000202bu
#define MASK_P_SW_POSTINC_IMM 0x0000707fu
#define MATCH_P_SB_POSTINC_REG 0x0000402bu
#define MASK_P_SB_POSTINC_REG 0xfe00707fu
#define MATCH_P_SH_POSTINC_REG 0x0000502bu
#define MASK_P_SH_POSTINC_REG 0xfe00707fu
#define MATCH_P_SW_POSTINC_REG 0x0000602bu
#define MASK_P_SW_POSTINC_REG 0xfe00707fu
#define MATCH_P_SB_REGOFF 0x00004023u
#define MASK_P_SB_REGOFF 0xfe00707fu
#define MATCH_P_SH_REGOFF 0x00005023u
#define MASK_P_SH_REGOFF 0xfe00707fu
#define MATCH_P_SW_REGOFF 0x00006023u
#define MASK_P_SW_REGOFF 0xfe00707fu
#define MATCH_P_ELW 0x00006003u
#define MASK_P_ELW 0x0000707fu
#define MATCH_P_MAC 0x42000033u
#define MASK_P_MAC 0xfe00707fu
#define MATCH_P_MSU 0x42001033u
#define MASK_P_MSU 0xfe00707fu
#define MATCH_P_ABS 0x04000033u
#define MASK_P_ABS 0xfff0707fu
#define MATCH_P_AVGU 0x04001033u
#define MASK_P_AVGU 0xfe00707fu
#define MATCH_P_SLET 0x04002033u
#define MASK_P_SLET 0xfe00707fu
#define MATCH_P_SLETU 0x04003033u
#define MASK_P_SLETU 0xfe00707fu
#define MATCH_P_MIN 0x04004033u
#define MASK_P_MIN 0xfe00707fu
#define MATCH_P_MINU 0x04005033u
#define MASK_P_MINU 0xfe00707fu
#define MATCH_P_MAX 0x04006033u
#define MASK_P_MAX 0xfe00707fu
#define MATCH_P_MAXU 0x04007033u
#define MASK_P_MAXU 0xfe00707fu
#define MATCH_P_ROR 0x08005033u
#define MASK_P_ROR 0xfe00707fu
#define MATCH_P_FF1 0x10000033u
#define MASK_P_FF1 0xfff0707fu
#define MATCH_P_FL1 0x10001033u
#define MASK_P_FL1 0xfff0707fu
#define MATCH_P_CLB 0x10002033u
#define MASK_P_CLB 0xfff0707fu
#define MATCH_P_CNT 0x10003033u
#define MASK_P_CNT 0xfff0707fu
#define MATCH_P_EXTHS 0x10004033u
#define MASK_P_EXTHS 0xfff0707fu
#define MATCH_P_EXTHZ 0x10005033u
#define MASK_P_EXTHZ 0xfff0707fu
#define MATCH_P_EXTBS 0x10006033u
#define MASK_P_EXTBS 0xfff0707fu
#define MATCH_P_EXTBZ 0x10007033u
#define MASK_P_EXTBZ 0xfff0707fu
#define MATCH_P_CLIP 0x14005033u
#define MASK_P_CLIP 0xfe00707fu
#define MATCH_P_CLIPU 0x14006033u
#define MASK_P_CLIPU 0xfe00707fu
#define MATCH_P_CLIPI 0x14001033u
#define MASK_P_CLIPI 0xfe00707fu
#define MATCH_P_CLIPUI 0x14002033u
#define MASK_P_CLIPUI 0xfe00707fu
#define MATCH_P_BEQIMM 0x00002063u
#define MASK_P_BEQIMM 0x0000707fu
#define MATCH_P_BNEIMM 0x00003063u
#define MASK_P_BNEIMM 0x0000707fu
#define MATCH_PV_ADD_H 0x00000057u
#define MASK_PV_ADD_H 0xfe00707fu
#define MATCH_PV_ADD_B 0x00001057u
#define MASK_PV_ADD_B 0xfe00707fu
#define MATCH_PV_SUB_H 0x08000057u
#define MASK_PV_SUB_H 0xfe00707fu
#define MATCH_PV_SUB_B 0x08001057u
#define MASK_PV_SUB_B 0xfe00707fu
#define MATCH_PV_DOTUP_H 0x80000057u
#define MASK_PV_DOTUP_H 0xfe00707fu
#define MATCH_PV_DOTSP_H 0x98000057u
#define MASK_PV_DOTSP_H 0xfe00707fu
#define MATCH_PV_SDOTUP_H 0xa0000057u
#define MASK_PV_SDOTUP_H 0xfe00707fu
#define MATCH_PV_SDOTSP_H 0xb8000057u
#define MASK_PV_SDOTSP_H 0xfe00707fu
#define MATCH_PV_DOTSP_B 0x98001057u
#define MASK_PV_DOTSP_B 0xfe00707fu
#define MATCH_PV_SDOTSP_B 0xb8001057u
#define MASK_PV_SDOTSP_B 0xfe00707fu
#define MATCH_VFADD_H 0x82002033u
#define MASK_VFADD_H 0xfe00707fu
#define MATCH_VFADD_R_H 0x82006033u
#define MASK_VFADD_R_H 0xfe00707fu
#define MATCH_VFSUB_H 0x84002033u
#define MASK_VFSUB_H 0xfe00707fu
#define MATCH_VFSUB_R_H 0x84006033u
#define MASK_VFSUB_R_H 0xfe00707fu
#define MATCH_VFMUL_H 0x86002033u
#define MASK_VFMUL_H 0xfe00707fu
#define MATCH_VFMUL_R_H 0x86006033u
#define MASK_VFMUL_R_H 0xfe00707fu
#define MATCH_VFDIV_H 0x88002033u
#define MASK_VFDIV_H 0xfe00707fu
#define MATCH_VFDIV_R_H 0x88006033u
#define MASK_VFDIV_R_H 0xfe00707fu
#define MATCH_VFMIN_H 0x8a002033u
#define MASK_VFMIN_H 0xfe00707fu
#define MATCH_VFMIN_R_H 0x8a006033u
#define MASK_VFMIN_R_H 0xfe00707fu
#define MATCH_VFMAX_H 0x8c002033u
#define MASK_VFMAX_H 0xfe00707fu
#define MATCH_VFMAX_R_H 0x8c006033u
#define MASK_VFMAX_R_H 0xfe00707fu
#define MATCH_VFSQRT_H 0x8e002033u
#define MASK_VFSQRT_H 0xfff0707fu
#define MATCH_VFMAC_H 0x90002033u
#define MASK_VFMAC_H 0xfe00707fu
#define MATCH_VFMAC_R_H 0x90006033u
#define MASK_VFMAC_R_H 0xfe00707fu
#define MATCH_VFMRE_H 0x92002033u
#define MASK_VFMRE_H 0xfe00707fu
#define MATCH_VFMRE_R_H 0x92006033u
#define MASK_VFMRE_R_H 0xfe00707fu
#define MATCH_VFMV_X_H 0x98002033u
#define MASK_VFMV_X_H 0xfff0707fu
#define MATCH_VFMV_H_X 0x98006033u
#define MASK_VFMV_H_X 0xfff0707fu
#define MATCH_VFCLASS_H 0x98102033u
#define MASK_VFCLASS_H 0xfff0707fu
#define MATCH_VFCVT_X_H 0x98202033u
#define MASK_VFCVT_X_H 0xfff0707fu
#define MATCH_VFCVT_XU_H 0x98206033u
#define MASK_VFCVT_XU_H 0xfff0707fu
#define MATCH_VFCVT_H_X 0x98302033u
#define MASK_VFCVT_H_X 0xfff0707fu
#define MATCH_VFCVT_H_XU 0x98306033u
#define MASK_VFCVT_H_XU 0xfff0707fu
#define MATCH_VFSGNJ_H 0x9a002033u
#define MASK_VFSGNJ_H 0xfe00707fu
#define MATCH_VFSGNJ_R_H 0x9a006033u
#define MASK_VFSGNJ_R_H 0xfe00707fu
#define MATCH_VFSGNJN_H 0x9c002033u
#define MASK_VFSGNJN_H 0xfe00707fu
#define MATCH_VFSGNJN_R_H 0x9c006033u
#define MASK_VFSGNJN_R_H 0xfe00707fu
#define MATCH_VFSGNJX_H 0x9e002033u
#define MASK_VFSGNJX_H 0xfe00707fu
#define MATCH_VFSGNJX_R_H 0x9e006033u
#define MASK_VFSGNJX_R_H 0xfe00707fu
#define MATCH_VFEQ_H 0xa0002033u
#define MASK_VFEQ_H 0xfe00707fu
#define MATCH_VFEQ_R_H 0xa0006033u
#define MASK_VFEQ_R_H 0xfe00707fu
#define MATCH_VFNE_H 0xa2002033u
#define MASK_VFNE_H 0xfe00707fu
#define MATCH_VFNE_R_H 0xa2006033u
#define MASK_VFNE_R_H 0xfe00707fu
#define MATCH_VFLT_H 0xa4002033u
#define MASK_VFLT_H 0xfe00707fu
#define MATCH_VFLT_R_H 0xa4006033u
#define MASK_VFLT_R_H 0xfe00707fu
#define MATCH_VFGE_H 0xa6002033u
#define MASK_VFGE_H 0xfe00707fu
#define MATCH_VFGE_R_H 0xa6006033u
#define MASK_VFGE_R_H 0xfe00707fu
#define MATCH_VFLE_H 0xa8002033u
#define MASK_VFLE_H 0xfe00707fu
#define MATCH_VFLE_R_H 0xa8006033u
#define MASK_VFLE_R_H 0xfe00707fu
#define MATCH_VFGT_H 0xaa002033u
#define MASK_VFGT_H 0xfe00707fu
#define MATCH_VFGT_R_H 0xaa006033u
#define MASK_VFGT_R_H 0xfe00707fu
#define MATCH_VFCPKA_H_S 0xb0002033u
#define MASK_VFCPKA_H_S 0xfe00707fu
#define MATCH_VFDOTPEX_S_H 0x96000033u
#define MASK_VFDOTPEX_S_H 0xfe00707fu
#define MATCH_VFDOTPEX_S_R_H 0x96004033u
#define MASK_VFDOTPEX_S_R_H 0xfe00707fu
#define MATCH_VFNDOTPEX_S_H 0xba000033u
#define MASK_VFNDOTPEX_S_H 0xfe00707fu
#define MATCH_VFNDOTPEX_S_R_H 0xba004033u
#define MASK_VFNDOTPEX_S_R_H 0xfe00707fu
#define MATCH_VFAVG_H 0xac002033u
#define MASK_VFAVG_H 0xfe00707fu
#define MATCH_VFAVG_R_H 0xac006033u
#define MASK_VFAVG_R_H 0xfe00707fu

/* PULP instructions as assembler strings (operands: register tokens or immediate numbers) */
/* lp.starti x{hwl_l}, {hwl_uimm12:hex} */
#define PULP_LP_STARTI(hwl_l, hwl_uimm12) ".insn i 0x7b, 0, " "x" #hwl_l ", " "x0" ", " #hwl_uimm12
/* lp.endi x{hwl_l}, {hwl_uimm12:hex} */
#define PULP_LP_ENDI(hwl_l, hwl_uimm12) ".insn i 0x7b, 1, " "x" #hwl_l ", " "x0" ", " #hwl_uimm12
/* lp.count x{hwl_l}, {hwl_rs1} */
#define PULP_LP_COUNT(hwl_l, hwl_rs1) ".insn r 0x7b, 2, 0x00, " "x" #hwl_l ", " #hwl_rs1 ", " "x0"
/* lp.counti x{hwl_l}, {hwl_uimm12:hex} */
#define PULP_LP_COUNTI(hwl_l, hwl_uimm12) ".insn i 0x7b, 3, " "x" #hwl_l ", " "x0" ", " #hwl_uimm12
/* lp.setup x{hwl_l}, {hwl_rs1}, {hwl_uimm12:hex} */
#define PULP_LP_SETUP(hwl_l, hwl_rs1, hwl_uimm12) ".insn i 0x7b, 4, " "x" #hwl_l ", " #hwl_rs1 ", " #hwl_uimm12
/* lp.setupi x{hwl_l}, {hwl_uimm12:hex}, {hwl_uimm5:hex} */
#define PULP_LP_SETUPI(hwl_l, hwl_uimm12, hwl_uimm5) ".insn i 0x7b, 5, " "x" #hwl_l ", " "x" #hwl_uimm5 ", " #hwl_uimm12
/* p.lb {rd}, {imm_i:hex}({rs1}!) */
#define PULP_P_LB_POSTINC_IMM(rd, rs1, imm_i) ".insn i 0x0b, 0, " #rd ", " #rs1 ", " #imm_i
/* p.lh {rd}, {imm_i:hex}({rs1}!) */
#define PULP_P_LH_POSTINC_IMM(rd, rs1, imm_i) ".insn i 0x0b, 1, " #rd ", " #rs1 ", " #imm_i
/* p.lw {rd}, {imm_i:hex}({rs1}!) */
#define PULP_P_LW_POSTINC_IMM(rd, rs1, imm_i) ".insn i 0x0b, 2, " #rd ", " #rs1 ", " #imm_i
/* p.lbu {rd}, {imm_i:hex}({rs1}!) */
#define PULP_P_LBU_POSTINC_IMM(rd, rs1, imm_i) ".insn i 0x0b, 4, " #rd ", " #rs1 ", " #imm_i
/* p.lhu {rd}, {imm_i:hex}({rs1}!) */
#define PULP_P_LHU_POSTINC_IMM(rd, rs1, imm_i) ".insn i 0x0b, 5, " #rd ", " #rs1 ", " #imm_i
/* p.lb {rd}, {rs2}({rs1}!) */
#define PULP_P_LB_POSTINC_REG(rd, rs1, rs2) ".insn r 0x0b, 7, 0x00, " #rd ", " #rs1 ", " #rs2
/* p.lh {rd}, {rs2}({rs1}!) */
#define PULP_P_LH_POSTINC_REG(rd, rs1, rs2) ".insn r 0x0b, 7, 0x08, " #rd ", " #rs1 ", " #rs2
/* p.lw {rd}, {rs2}({rs1}!) */
#define PULP_P_LW_POSTINC_REG(rd, rs1, rs2) ".insn r 0x0b, 7, 0x10, " #rd ", " #rs1 ", " #rs2
/* p.lbu {rd}, {rs2}({rs1}!) */
#define PULP_P_LBU_POSTINC_REG(rd, rs1, rs2) ".insn r 0x0b, 7, 0x20, " #rd ", " #rs1 ", " #rs2
/* p.lhu {rd}, {rs2}({rs1}!) */
#define PULP_P_LHU_POSTINC_REG(rd, rs1, rs2) ".insn r 0x0b, 7, 0x28, " #rd ", " #rs1 ", " #rs2
/* p.lb {rd}, {rs2}({rs1}) */
#define PULP_P_LB_REGOFF(rd, rs1, rs2) ".insn r 0x03, 7, 0x00, " #rd ", " #rs1 ", " #rs2
/* p.lh {rd}, {rs2}({rs1}) */
#define PULP_P_LH_REGOFF(rd, rs1, rs2) ".insn r 0x03, 7, 0x08, " #rd ", " #rs1 ", " #rs2
/* p.lw {rd}, {rs2}({rs1}) */
#define PULP_P_LW_REGOFF(rd, rs1, rs2) ".insn r 0x03, 7, 0x10, " #rd ", " #rs1 ", " #rs2
/* p.lbu {rd}, {rs2}({rs1}) */
#define PULP_P_LBU_REGOFF(rd, rs1, rs2) ".insn r 0x03, 7, 0x20, " #rd ", " #rs1 ", " #rs2
/* p.lhu {rd}, {rs2}({rs1}) */
#define PULP_P_LHU_REGOFF(rd, rs1, rs2) ".insn r 0x03, 7, 0x28, " #rd ", " #rs1 ", " #rs2
/* p.sb {rs2}, {imm_s:hex}({rs1}!) */
#define PULP_P_SB_POSTINC_IMM(rs2, rs1, imm_s) ".insn s 0x2b, 0, " #rs2 ", " #imm_s "(" #rs1 ")"
/* p.sh {rs2}, {imm_s:hex}({rs1}!) */
#define PULP_P_SH_POSTINC_IMM(rs2, rs1, imm_s) ".insn s 0x2b, 1, " #rs2 ", " #imm_s "(" #rs1 ")"
/* p.sw {rs2}, {imm_s:hex}({rs1}!) */
#define PULP_P_SW_POSTINC_IMM(rs2, rs1, imm_s) ".insn s 0x2b, 2, " #rs2 ", " #imm_s "(" #rs1 ")"
/* p.sb {rs2}, {rs3_s}({rs1}!) */
#define PULP_P_SB_POSTINC_REG(rs2, rs1, rs3_s) ".insn r 0x2b, 4, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.sh {rs2}, {rs3_s}({rs1}!) */
#define PULP_P_SH_POSTINC_REG(rs2, rs1, rs3_s) ".insn r 0x2b, 5, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.sw {rs2}, {rs3_s}({rs1}!) */
#define PULP_P_SW_POSTINC_REG(rs2, rs1, rs3_s) ".insn r 0x2b, 6, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.sb {rs2}, {rs3_s}({rs1}) */
#define PULP_P_SB_REGOFF(rs2, rs1, rs3_s) ".insn r 0x23, 4, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.sh {rs2}, {rs3_s}({rs1}) */
#define PULP_P_SH_REGOFF(rs2, rs1, rs3_s) ".insn r 0x23, 5, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.sw {rs2}, {rs3_s}({rs1}) */
#define PULP_P_SW_REGOFF(rs2, rs1, rs3_s) ".insn r 0x23, 6, 0x00, " #rs3_s ", " #rs1 ", " #rs2
/* p.elw {rd}, {imm_i:hex}({rs1}) */
#define PULP_P_ELW(rd, rs1, imm_i) ".insn i 0x03, 6, " #rd ", " #rs1 ", " #imm_i
/* p.mac {rd_acc}, {rs1}, {rs2} */
#define PULP_P_MAC(rd_acc, rs1, rs2) ".insn r 0x33, 0, 0x21, " #rd_acc ", " #rs1 ", " #rs2
/* p.msu {rd_acc}, {rs1}, {rs2} */
#define PULP_P_MSU(rd_acc, rs1, rs2) ".insn r 0x33, 1, 0x21, " #rd_acc ", " #rs1 ", " #rs2
/* p.abs {rd}, {rs1} */
#define PULP_P_ABS(rd, rs1) ".insn r 0x33, 0, 0x02, " #rd ", " #rs1 ", " "x0"
/* p.avgu {rd}, {rs1}, {rs2} */
#define PULP_P_AVGU(rd, rs1, rs2) ".insn r 0x33, 1, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.slet {rd}, {rs1}, {rs2} */
#define PULP_P_SLET(rd, rs1, rs2) ".insn r 0x33, 2, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.sletu {rd}, {rs1}, {rs2} */
#define PULP_P_SLETU(rd, rs1, rs2) ".insn r 0x33, 3, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.min {rd}, {rs1}, {rs2} */
#define PULP_P_MIN(rd, rs1, rs2) ".insn r 0x33, 4, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.minu {rd}, {rs1}, {rs2} */
#define PULP_P_MINU(rd, rs1, rs2) ".insn r 0x33, 5, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.max {rd}, {rs1}, {rs2} */
#define PULP_P_MAX(rd, rs1, rs2) ".insn r 0x33, 6, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.maxu {rd}, {rs1}, {rs2} */
#define PULP_P_MAXU(rd, rs1, rs2) ".insn r 0x33, 7, 0x02, " #rd ", " #rs1 ", " #rs2
/* p.ror {rd}, {rs1}, {rs2} */
#define PULP_P_ROR(rd, rs1, rs2) ".insn r 0x33, 5, 0x04, " #rd ", " #rs1 ", " #rs2
/* p.ff1 {rd}, {rs1} */
#define PULP_P_FF1(rd, rs1) ".insn r 0x33, 0, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.fl1 {rd}, {rs1} */
#define PULP_P_FL1(rd, rs1) ".insn r 0x33, 1, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.clb {rd}, {rs1} */
#define PULP_P_CLB(rd, rs1) ".insn r 0x33, 2, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.cnt {rd}, {rs1} */
#define PULP_P_CNT(rd, rs1) ".insn r 0x33, 3, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.exths {rd}, {rs1} */
#define PULP_P_EXTHS(rd, rs1) ".insn r 0x33, 4, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.exthz {rd}, {rs1} */
#define PULP_P_EXTHZ(rd, rs1) ".insn r 0x33, 5, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.extbs {rd}, {rs1} */
#define PULP_P_EXTBS(rd, rs1) ".insn r 0x33, 6, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.extbz {rd}, {rs1} */
#define PULP_P_EXTBZ(rd, rs1) ".insn r 0x33, 7, 0x08, " #rd ", " #rs1 ", " "x0"
/* p.clip {rd}, {rs1}, {rs2} */
#define PULP_P_CLIP(rd, rs1, rs2) ".insn r 0x33, 5, 0x0a, " #rd ", " #rs1 ", " #rs2
/* p.clipu {rd}, {rs1}, {rs2} */
#define PULP_P_CLIPU(rd, rs1, rs2) ".insn r 0x33, 6, 0x0a, " #rd ", " #rs1 ", " #rs2
/* p.clipi {rd}, {rs1}, {uimm5_rs2} */
#define PULP_P_CLIPI(rd, rs1, uimm5_rs2) ".insn r 0x33, 1, 0x0a, " #rd ", " #rs1 ", " "x" #uimm5_rs2
/* p.clipui {rd}, {rs1}, {uimm5_rs2} */
#define PULP_P_CLIPUI(rd, rs1, uimm5_rs2) ".insn r 0x33, 2, 0x0a, " #rd ", " #rs1 ", " "x" #uimm5_rs2
/* p.beqimm {rs1}, {imm5_rs2}, {imm_b:target} */
#define PULP_P_BEQIMM(rs1, imm5_rs2, imm_b) ".insn b 0x63, 2, " #rs1 ", " "x" #imm5_rs2 ", " #imm_b
/* p.bneimm {rs1}, {imm5_rs2}, {imm_b:target} */
#define PULP_P_BNEIMM(rs1, imm5_rs2, imm_b) ".insn b 0x63, 3, " #rs1 ", " "x" #imm5_rs2 ", " #imm_b
/* pv.add.h {rd}, {rs1}, {rs2} */
#define PULP_PV_ADD_H(rd, rs1, rs2) ".insn r 0x57, 0, 0x00, " #rd ", " #rs1 ", " #rs2
/* pv.add.b {rd}, {rs1}, {rs2} */
#define PULP_PV_ADD_B(rd, rs1, rs2) ".insn r 0x57, 1, 0x00, " #rd ", " #rs1 ", " #rs2
/* pv.sub.h {rd}, {rs1}, {rs2} */
#define PULP_PV_SUB_H(rd, rs1, rs2) ".insn r 0x57, 0, 0x04, " #rd ", " #rs1 ", " #rs2
/* pv.sub.b {rd}, {rs1}, {rs2} */
#define PULP_PV_SUB_B(rd, rs1, rs2) ".insn r 0x57, 1, 0x04, " #rd ", " #rs1 ", " #rs2
/* pv.dotup.h {rd}, {rs1}, {rs2} */
#define PULP_PV_DOTUP_H(rd, rs1, rs2) ".insn r 0x57, 0, 0x40, " #rd ", " #rs1 ", " #rs2
/* pv.dotsp.h {rd}, {rs1}, {rs2} */
#define PULP_PV_DOTSP_H(rd, rs1, rs2) ".insn r 0x57, 0, 0x4c, " #rd ", " #rs1 ", " #rs2
/* pv.sdotup.h {rd_acc}, {rs1}, {rs2} */
#define PULP_PV_SDOTUP_H(rd_acc, rs1, rs2) ".insn r 0x57, 0, 0x50, " #rd_acc ", " #rs1 ", " #rs2
/* pv.sdotsp.h {rd_acc}, {rs1}, {rs2} */
#define PULP_PV_SDOTSP_H(rd_acc, rs1, rs2) ".insn r 0x57, 0, 0x5c, " #rd_acc ", " #rs1 ", " #rs2
/* pv.dotsp.b {rd}, {rs1}, {rs2} */
#define PULP_PV_DOTSP_B(rd, rs1, rs2) ".insn r 0x57, 1, 0x4c, " #rd ", " #rs1 ", " #rs2
/* pv.sdotsp.b {rd_acc}, {rs1}, {rs2} */
#define PULP_PV_SDOTSP_B(rd_acc, rs1, rs2) ".insn r 0x57, 1, 0x5c, " #rd_acc ", " #rs1 ", " #rs2
/* vfadd.h {rd}, {rs1}, {rs2} */
#define PULP_VFADD_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x41, " #rd ", " #rs1 ", " #rs2
/* vfadd.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFADD_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x41, " #rd ", " #rs1 ", " #rs2
/* vfsub.h {rd}, {rs1}, {rs2} */
#define PULP_VFSUB_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x42, " #rd ", " #rs1 ", " #rs2
/* vfsub.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFSUB_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x42, " #rd ", " #rs1 ", " #rs2
/* vfmul.h {rd}, {rs1}, {rs2} */
#define PULP_VFMUL_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x43, " #rd ", " #rs1 ", " #rs2
/* vfmul.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFMUL_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x43, " #rd ", " #rs1 ", " #rs2
/* vfdiv.h {rd}, {rs1}, {rs2} */
#define PULP_VFDIV_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x44, " #rd ", " #rs1 ", " #rs2
/* vfdiv.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFDIV_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x44, " #rd ", " #rs1 ", " #rs2
/* vfmin.h {rd}, {rs1}, {rs2} */
#define PULP_VFMIN_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x45, " #rd ", " #rs1 ", " #rs2
/* vfmin.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFMIN_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x45, " #rd ", " #rs1 ", " #rs2
/* vfmax.h {rd}, {rs1}, {rs2} */
#define PULP_VFMAX_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x46, " #rd ", " #rs1 ", " #rs2
/* vfmax.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFMAX_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x46, " #rd ", " #rs1 ", " #rs2
/* vfsqrt.h {rd}, {rs1} */
#define PULP_VFSQRT_H(rd, rs1) ".insn r 0x33, 2, 0x47, " #rd ", " #rs1 ", " "x0"
/* vfmac.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFMAC_H(rd_acc, rs1, rs2) ".insn r 0x33, 2, 0x48, " #rd_acc ", " #rs1 ", " #rs2
/* vfmac.r.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFMAC_R_H(rd_acc, rs1, rs2) ".insn r 0x33, 6, 0x48, " #rd_acc ", " #rs1 ", " #rs2
/* vfmre.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFMRE_H(rd_acc, rs1, rs2) ".insn r 0x33, 2, 0x49, " #rd_acc ", " #rs1 ", " #rs2
/* vfmre.r.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFMRE_R_H(rd_acc, rs1, rs2) ".insn r 0x33, 6, 0x49, " #rd_acc ", " #rs1 ", " #rs2
/* vfmv.x.h {rd}, {rs1} */
#define PULP_VFMV_X_H(rd, rs1) ".insn r 0x33, 2, 0x4c, " #rd ", " #rs1 ", " "x0"
/* vfmv.h.x {rd}, {rs1} */
#define PULP_VFMV_H_X(rd, rs1) ".insn r 0x33, 6, 0x4c, " #rd ", " #rs1 ", " "x0"
/* vfclass.h {rd}, {rs1} */
#define PULP_VFCLASS_H(rd, rs1) ".insn r 0x33, 2, 0x4c, " #rd ", " #rs1 ", " "x1"
/* vfcvt.x.h {rd}, {rs1} */
#define PULP_VFCVT_X_H(rd, rs1) ".insn r 0x33, 2, 0x4c, " #rd ", " #rs1 ", " "x2"
/* vfcvt.xu.h {rd}, {rs1} */
#define PULP_VFCVT_XU_H(rd, rs1) ".insn r 0x33, 6, 0x4c, " #rd ", " #rs1 ", " "x2"
/* vfcvt.h.x {rd}, {rs1} */
#define PULP_VFCVT_H_X(rd, rs1) ".insn r 0x33, 2, 0x4c, " #rd ", " #rs1 ", " "x3"
/* vfcvt.h.xu {rd}, {rs1} */
#define PULP_VFCVT_H_XU(rd, rs1) ".insn r 0x33, 6, 0x4c, " #rd ", " #rs1 ", " "x3"
/* vfsgnj.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJ_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x4d, " #rd ", " #rs1 ", " #rs2
/* vfsgnj.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJ_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x4d, " #rd ", " #rs1 ", " #rs2
/* vfsgnjn.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJN_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x4e, " #rd ", " #rs1 ", " #rs2
/* vfsgnjn.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJN_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x4e, " #rd ", " #rs1 ", " #rs2
/* vfsgnjx.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJX_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x4f, " #rd ", " #rs1 ", " #rs2
/* vfsgnjx.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFSGNJX_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x4f, " #rd ", " #rs1 ", " #rs2
/* vfeq.h {rd}, {rs1}, {rs2} */
#define PULP_VFEQ_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x50, " #rd ", " #rs1 ", " #rs2
/* vfeq.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFEQ_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x50, " #rd ", " #rs1 ", " #rs2
/* vfne.h {rd}, {rs1}, {rs2} */
#define PULP_VFNE_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x51, " #rd ", " #rs1 ", " #rs2
/* vfne.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFNE_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x51, " #rd ", " #rs1 ", " #rs2
/* vflt.h {rd}, {rs1}, {rs2} */
#define PULP_VFLT_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x52, " #rd ", " #rs1 ", " #rs2
/* vflt.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFLT_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x52, " #rd ", " #rs1 ", " #rs2
/* vfge.h {rd}, {rs1}, {rs2} */
#define PULP_VFGE_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x53, " #rd ", " #rs1 ", " #rs2
/* vfge.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFGE_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x53, " #rd ", " #rs1 ", " #rs2
/* vfle.h {rd}, {rs1}, {rs2} */
#define PULP_VFLE_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x54, " #rd ", " #rs1 ", " #rs2
/* vfle.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFLE_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x54, " #rd ", " #rs1 ", " #rs2
/* vfgt.h {rd}, {rs1}, {rs2} */
#define PULP_VFGT_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x55, " #rd ", " #rs1 ", " #rs2
/* vfgt.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFGT_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x55, " #rd ", " #rs1 ", " #rs2
/* vfcpka.h.s {rd}, {rs1}, {rs2} */
#define PULP_VFCPKA_H_S(rd, rs1, rs2) ".insn r 0x33, 2, 0x58, " #rd ", " #rs1 ", " #rs2
/* vfdotpex.s.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFDOTPEX_S_H(rd_acc, rs1, rs2) ".insn r 0x33, 0, 0x4b, " #rd_acc ", " #rs1 ", " #rs2
/* vfdotpex.s.r.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFDOTPEX_S_R_H(rd_acc, rs1, rs2) ".insn r 0x33, 4, 0x4b, " #rd_acc ", " #rs1 ", " #rs2
/* vfndotpex.s.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFNDOTPEX_S_H(rd_acc, rs1, rs2) ".insn r 0x33, 0, 0x5d, " #rd_acc ", " #rs1 ", " #rs2
/* vfndotpex.s.r.h {rd_acc}, {rs1}, {rs2} */
#define PULP_VFNDOTPEX_S_R_H(rd_acc, rs1, rs2) ".insn r 0x33, 4, 0x5d, " #rd_acc ", " #rs1 ", " #rs2
/* vfavg.h {rd}, {rs1}, {rs2} */
#define PULP_VFAVG_H(rd, rs1, rs2) ".insn r 0x33, 2, 0x56, " #rd ", " #rs1 ", " #rs2
/* vfavg.r.h {rd}, {rs1}, {rs2} */
#define PULP_VFAVG_R_H(rd, rs1, rs2) ".insn r 0x33, 6, 0x56, " #rd ", " #rs1 ", " #rs2

/* PULP register-to-register instructions as C functions */
static inline uint32_t pulp_p_mac(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_P_MAC(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_msu(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_P_MSU(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_abs(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_ABS(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_avgu(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_AVGU(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_slet(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_SLET(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_sletu(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_SLETU(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_min(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_MIN(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_minu(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_MINU(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_max(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_MAX(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_maxu(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_MAXU(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_ror(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_ROR(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_ff1(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_FF1(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_fl1(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_FL1(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_clb(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_CLB(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_cnt(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_CNT(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_exths(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_EXTHS(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_exthz(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_EXTHZ(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_extbs(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_EXTBS(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_extbz(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_P_EXTBZ(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_p_clip(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_CLIP(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_p_clipu(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_P_CLIPU(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_add_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_ADD_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_add_b(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_ADD_B(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_sub_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_SUB_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_sub_b(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_SUB_B(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_dotup_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_DOTUP_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_dotsp_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_DOTSP_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_sdotup_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_PV_SDOTUP_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_sdotsp_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_PV_SDOTSP_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_dotsp_b(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_PV_DOTSP_B(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_pv_sdotsp_b(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_PV_SDOTSP_B(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfadd_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFADD_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfadd_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFADD_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsub_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSUB_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsub_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSUB_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmul_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMUL_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmul_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMUL_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfdiv_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFDIV_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfdiv_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFDIV_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmin_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMIN_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmin_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMIN_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmax_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMAX_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmax_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFMAX_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsqrt_h(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFSQRT_H(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfmac_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFMAC_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmac_r_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFMAC_R_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmre_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFMRE_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmre_r_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFMRE_R_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfmv_x_h(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFMV_X_H(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfmv_h_x(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFMV_H_X(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfclass_h(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFCLASS_H(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfcvt_x_h(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFCVT_X_H(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfcvt_xu_h(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFCVT_XU_H(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfcvt_h_x(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFCVT_H_X(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfcvt_h_xu(uint32_t rs1) {
  uint32_t r;
  __asm__ (PULP_VFCVT_H_XU(%[r], %[rs1]) : [r] "=r"(r) : [rs1] "r"(rs1));
  return r;
}
static inline uint32_t pulp_vfsgnj_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJ_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsgnj_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJ_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsgnjn_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJN_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsgnjn_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJN_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsgnjx_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJX_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfsgnjx_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFSGNJX_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfeq_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFEQ_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfeq_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFEQ_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfne_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFNE_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfne_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFNE_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vflt_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFLT_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vflt_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFLT_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfge_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFGE_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfge_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFGE_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfle_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFLE_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfle_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFLE_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfgt_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFGT_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfgt_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFGT_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfcpka_h_s(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFCPKA_H_S(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfdotpex_s_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFDOTPEX_S_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfdotpex_s_r_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFDOTPEX_S_R_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfndotpex_s_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFNDOTPEX_S_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfndotpex_s_r_h(uint32_t acc, uint32_t rs1, uint32_t rs2) {
  uint32_t r = acc;
  __asm__ (PULP_VFNDOTPEX_S_R_H(%[r], %[rs1], %[rs2]) : [r] "+r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfavg_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFAVG_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}
static inline uint32_t pulp_vfavg_r_h(uint32_t rs1, uint32_t rs2) {
  uint32_t r;
  __asm__ (PULP_VFAVG_R_H(%[r], %[rs1], %[rs2]) : [r] "=r"(r) : [rs1] "r"(rs1), [rs2] "r"(rs2));
  return r;
}

#endif /* PULP_ISA_H */
