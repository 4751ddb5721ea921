"""`pulp-odl disasm` against llvm-objdump-19 -d -M no-aliases.

For every standard instruction (RV32IMC, Zicsr, Zifencei, and F/Zfh with FP values in x registers, i.e.
Zfinx/Zhinx) the text must be exactly llvm's: mnemonic, a tab, operands, rounding-mode suffix, branch
targets as absolute hex (llvm's ` <symbol+off>` suffix is stripped before comparing). PULP instructions
keep their own mnemonics and are not compared.

Two kinds of input:
  * C programs built with `python -m harness build` at -O0, -O2 and -Os, compared line by line;
  * raw words, assembled as data into one object and disassembled by llvm-objdump in one call: random
    32-bit words, every 32-bit entry of the ISA table with random operand bits, sweeps of the function
    codes of the standard opcodes, all 4096 CSR numbers and all 49152 16-bit halfwords.
For raw words, every word that both decoders decode as a standard instruction must print identically,
and a word decoded as a standard instruction by only one of them must be one of the documented
exceptions below.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from harness import ROOT
from harness.isa import model

LLVM_OBJDUMP = shutil.which("llvm-objdump-19")
CLANG = shutil.which("clang-19")
needs_llvm = pytest.mark.skipif(LLVM_OBJDUMP is None or CLANG is None,
                                reason="llvm-objdump-19 and clang-19 are needed to compare the disassembly "
                                       "(apt-get install -y clang-19 llvm-19)")
needs_lld = pytest.mark.skipif(shutil.which("ld.lld-19") is None,
                               reason="ld.lld-19 is needed to link the test programs (apt-get install -y lld-19)")
pytestmark = needs_llvm

ISA = model.load()
NAME_EXT = {i.name: i.ext for i in ISA.insns}
STANDARD_EXTS = {"i", "zicsr", "m", "c", "f", "zfh"}
PULP_EXTS = {"xpulp", "xfvec"}
# Not instructions, but llvm-objdump names them and so do we: the all-zero halfword and csrrw zero, cycle, zero.
NAMED_ILLEGAL = {"c.unimp", "unimp"}

# Assembler/disassembler settings per FP register convention: (march for clang, fp_separate for our decoder).
MODES = {
    "zfinx": ("rv32imc_zicsr_zifencei_zfinx_zhinx", False),   # pulp-open: F/Zfh values in x registers
    "fsep": ("rv32imfc_zicsr_zifencei_zfh", True),            # separate f registers (fp_regfile = "separate")
}


def _mnemonic(text: str) -> str:
    return text.split("\t", 1)[0]


def _ours_standard(text: str) -> bool:
    name = _mnemonic(text)
    return name in NAMED_ILLEGAL or NAME_EXT.get(name) in STANDARD_EXTS


def _ours_pulp(text: str) -> bool:
    return NAME_EXT.get(_mnemonic(text)) in PULP_EXTS


def _llvm_standard(text: str | None) -> bool:
    return text is not None and text != "<unknown>" and not text.startswith(".")


# ---- documented exceptions -------------------------------------------------------------------------

# Words llvm-objdump-19 decodes as standard instructions that we leave undecoded: (key, reason, predicate).
LLVM_ONLY = [
    ("rv32-shamt-ge-32",
     "slli/srli/srai with shamt[5] set are reserved on RV32 (they are the RV64 encodings); llvm-objdump-19 "
     "decodes a 6-bit shift amount whatever the XLEN",
     lambda w, sz: sz == 4 and w & 0x7F == 0x13 and (w >> 12) & 3 == 1 and (w >> 25) & 1 == 1),
    ("rvc-shamt-ge-32",
     "c.slli/c.srli/c.srai with shamt[5] (bit 12) set are reserved for custom use on RV32C; llvm decodes them",
     lambda w, sz: sz == 2 and (w >> 12) & 1 == 1 and ((w & 0xE003) == 0x0002 or (w & 0xEC03) in (0x8001, 0x8401))),
    ("c.lui-zero-imm",
     "c.lui with a zero immediate is reserved (the RVC spec); llvm decodes it",
     lambda w, sz: sz == 2 and (w & 0xE003) == 0x6001 and (w >> 7) & 31 != 2 and w & 0x107C == 0),
    ("supervisor",
     "sret and sfence.vma are supervisor-mode instructions; pulp-open's cores (RI5CY/CV32E40P) have machine "
     "(and user) mode only, so they are illegal there",
     lambda w, sz: sz == 4 and (w == 0x10200073 or w & 0xFE007FFF == 0x12000073)),
    ("dret",
     "dret is legal only in debug mode, which the simulator does not model",
     lambda w, sz: sz == 4 and w == 0x7B200073),
]

# Words we decode as standard instructions that llvm-objdump-19 does not: (key, reason, predicate).
GVSOC_ONLY = {"flw", "fsw", "flh", "fsh", "fmv.x.w", "fmv.w.x", "fmv.x.h", "fmv.h.x"}
OURS_ONLY = [
    ("gvsoc-zfinx-extras",
     "flw/fsw/flh/fsh/fmv.x.w/fmv.w.x/fmv.x.h/fmv.h.x do not exist in Zfinx/Zhinx, but GVSoC's pulp-open "
     "(single register file) still executes them, on x registers",
     lambda w, sz, text: _mnemonic(text) in GVSOC_ONLY),
    ("fence-reserved-fm",
     "fence with a reserved fm (other than 0000, or 1000 other than fence.tso): the ISA manual says to "
     "execute it as an ordinary fence, which we do; llvm shows <unknown>",
     lambda w, sz, text: sz == 4 and _mnemonic(text) == "fence" and w >> 28 != 0),
]

# Standard encodings that GVSoC's pulp-open gives a PULP meaning: none for RV32IMC/Zicsr/Zifencei/F/Zfh. The
# PULP extensions live in the custom opcodes (0x0b, 0x2b, 0x5b, 0x7b), OP-V (0x57; V is not enabled) and in
# encodings RV32 leaves reserved (LOAD funct3 110/111, STORE funct3 100-110, BRANCH funct3 010/011, OP funct7
# values no standard extension here uses). Any overlap would fail test_random_words.
PULP_OVERRIDES: list = []


def _exception(table, *args):
    for key, _reason, pred in table:
        if pred(*args):
            return key
    return None


# ---- llvm-objdump ----------------------------------------------------------------------------------

_LINE = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{4,8} )+)\s*\t?(.*)$")


def _strip_symbol(text: str) -> str:
    return re.sub(r" <[^<>]*>$", "", text.strip())


def _objdump(path, *extra) -> dict:
    """{address: text} of llvm-objdump-19 -d -M no-aliases."""
    out = subprocess.run([LLVM_OBJDUMP, "-d", "-M", "no-aliases", "-z", *extra, str(path)], capture_output=True,
                         text=True, check=True).stdout
    ref = {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            ref[int(m.group(1), 16)] = _strip_symbol(m.group(3))
    return ref


def _llvm_words(words, march, tmp_path) -> list:
    """llvm's text for each (word, size), assembled as data into one object."""
    src = tmp_path / "words.s"
    lines = [".text"]
    for w, sz in words:
        lines.append(f".word 0x{w:08x}" if sz == 4 else f".hword 0x{w:04x}")
    src.write_text("\n".join(lines) + "\n")
    obj = tmp_path / "words.o"
    subprocess.run([CLANG, "--target=riscv32-unknown-elf", f"-march={march}", "-c", str(src), "-o", str(obj)],
                   check=True, capture_output=True)
    ref = _objdump(obj)
    out, addr = [], 0
    for _, sz in words:
        out.append(ref.get(addr))
        addr += sz
    return out


def _sim():
    from harness.backends.embedded import simulator

    return simulator()


# ---- raw words ---------------------------------------------------------------------------------------

def _words(seed: int = 20240611) -> list:
    """Deterministic (word, size, group) list: 32-bit words that are not the start of a longer instruction,
    then all 16-bit halfwords."""
    rng = random.Random(seed)
    rnd = rng.getrandbits
    out = []
    group = ""

    def add(w):
        w = (w | 3) & 0xFFFFFFFF
        if (w >> 2) & 7 != 7:  # bits 4:2 = 111 start a 48-bit or longer instruction
            out.append((w, 4, group))

    group = "random32"
    while len(out) < 20000:                                 # random words
        add(rnd(32))
    group = "table"
    for insn in ISA.insns:                                  # every 32-bit table entry, random operand bits
        if insn.size == 4:
            for _ in range(24):
                add(insn.match | (rnd(32) & ~insn.mask))
    group = "sweeps"
    for f7 in range(128):                                   # OP-FP: funct7 x rs2 x funct3
        for rs2 in range(32):
            for f3 in range(8):
                add(f7 << 25 | rs2 << 20 | rnd(5) << 15 | f3 << 12 | rnd(5) << 7 | 0x53)
    for op in (0x43, 0x47, 0x4B, 0x4F):                     # FMA: fmt x rm
        for fmt in range(4):
            for rm in range(8):
                for _ in range(8):
                    add(rnd(5) << 27 | fmt << 25 | rnd(10) << 15 | rm << 12 | rnd(5) << 7 | op)
    for op in (0x33, 0x13, 0x3B, 0x1B):                     # OP, OP-IMM (+ the RV64 -32 forms): funct7 x funct3
        for f7 in range(128):
            for f3 in range(8):
                for _ in range(2):
                    add(f7 << 25 | rnd(10) << 15 | f3 << 12 | rnd(5) << 7 | op)
    for f3 in range(8):                                     # SYSTEM and MISC-MEM: funct3 x imm12
        for imm in range(4096):
            rs1 = 0 if imm & 1 else rnd(5)
            rd = 0 if imm & 2 else rnd(5)
            add(imm << 20 | rs1 << 15 | f3 << 12 | rd << 7 | 0x73)
            if f3 == 0:
                add(imm << 20 | 0x73)                       # ecall, ebreak, mret, wfi, sret, dret, ...
            add(imm << 20 | (0 if imm & 4 else rnd(5)) << 15 | f3 << 12 | (0 if imm & 8 else rnd(5)) << 7 | 0x0F)
    group = "csr"
    for csr in range(4096):                                 # every CSR number (csrrs a0, csr, zero)
        add(csr << 20 | 2 << 12 | 10 << 7 | 0x73)
    group = "sweeps"
    for op in range(32):                                    # every opcode x funct3
        for f3 in range(8):
            for _ in range(20):
                add(rnd(17) << 15 | f3 << 12 | rnd(5) << 7 | op << 2 | 3)
    out.extend((h, 2, "rvc16") for h in range(1 << 16) if h & 3 != 3)  # every 16-bit halfword
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_random_words(mode, tmp_path):
    march, fp_separate = MODES[mode]
    sim = _sim()
    words = _words()
    ref = _llvm_words([(w, sz) for w, sz, _ in words], march, tmp_path)
    assert sum(t is not None for t in ref) == len(words), "llvm-objdump consumed the words differently"
    compared = agree = 0
    per_group = {}
    diffs, missing, extra, pulp_clash = [], [], [], []
    hits = {}
    addr = 0
    for (w, sz, grp), lt in zip(words, ref):
        ours = sim.disasm(w, addr, fp_separate)
        addr += sz
        o_std, l_std = _ours_standard(ours), _llvm_standard(lt)
        hexw = f"{w:0{sz * 2}x}"
        if o_std and l_std:
            compared += 1
            g = per_group.setdefault(grp, [0, 0])
            g[0] += 1
            if ours == lt:
                agree += 1
                g[1] += 1
            else:
                diffs.append(f"{hexw}: ours {ours!r} llvm {lt!r}")
        elif l_std:
            key = _exception(LLVM_ONLY, w, sz)
            if key is None and _ours_pulp(ours):
                key = _exception(PULP_OVERRIDES, w, sz)
                if key is None:
                    pulp_clash.append(f"{hexw}: ours {ours!r} llvm {lt!r}")
                    continue
            if key is None:
                missing.append(f"{hexw}: ours {ours!r} llvm {lt!r}")
            else:
                hits[key] = hits.get(key, 0) + 1
        elif o_std:
            key = _exception(OURS_ONLY, w, sz, ours)
            if key is None:
                extra.append(f"{hexw}: ours {ours!r} llvm {lt!r}")
            else:
                hits[key] = hits.get(key, 0) + 1
    print(f"\n[{mode}] {len(words)} words; {compared} decoded as standard by both, {agree} agree; "
          f"documented exceptions: {dict(sorted(hits.items()))}; per group (total, both standard, agree): "
          f"{ {k: (sum(x[2] == k for x in words), *v) for k, v in per_group.items()} }")
    assert not diffs, f"{len(diffs)} words print differently:\n" + "\n".join(diffs[:30])
    assert not missing, f"{len(missing)} standard words llvm decodes and we do not:\n" + "\n".join(missing[:30])
    assert not extra, f"{len(extra)} words we decode as standard and llvm does not:\n" + "\n".join(extra[:30])
    assert not pulp_clash, ("standard encodings we decode as PULP instructions (add them to PULP_OVERRIDES "
                            "with a reason if intended):\n" + "\n".join(pulp_clash[:30]))
    assert compared > 50000


def test_csr_names_match_llvm(tmp_path):
    """Every CSR number prints as llvm prints it: a name from isa/csrs.toml, or hex."""
    sim = _sim()
    words = [(csr << 20 | 2 << 12 | 10 << 7 | 0x73, 4) for csr in range(4096)]
    ref = _llvm_words(words, MODES["zfinx"][0], tmp_path)
    llvm_names = {}
    for csr, text in enumerate(ref):
        name = text.split(", ")[1]
        if not name.startswith("0x"):
            llvm_names[csr] = name
    assert ISA.csrs == llvm_names
    for (w, _), text in zip(words, ref):
        assert sim.disasm(w, 0, False) == text


def test_special_encodings():
    sim = _sim()
    cases = {
        (0x0000, 2): "c.unimp",
        (0xC0001073, 4): "unimp",
        (0x8330000F, 4): "fence.tso",
        (0x0FF0000F, 4): "fence\tiorw, iorw",
        (0x0000000F, 4): "fence\t0, 0",
        (0x0005, 2): "c.nop\t0x1",
        (0x7001, 2): "c.lui\tzero, -0x20",
        (0x7081, 2): "c.lui\tra, 0xfffe0",
        (0x0082, 2): "c.slli64\tra",
        (0x00A5F553, 4): "fadd.s\ta0, a1, a0, dyn",
        (0x00A5E553, 4): "<unknown>",          # reserved rounding mode 6
        (0x40250553, 4): "fcvt.s.h\ta0, a0",    # legacy rm: rne is not printed
    }
    for (w, _sz), text in cases.items():
        assert sim.disasm(w, 0x1C000000, False) == text, hex(w)


# ---- compiled programs -------------------------------------------------------------------------------

PROGRAMS = {
    "int": r"""
#include <stdint.h>
volatile int sink;
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int classify(int x) {
  switch (x) {
    case 0: return 11; case 1: return 23; case 2: return 37; case 3: return 41;
    case 4: return 59; case 5: return 61; case 7: return 73; case 9: return 97;
    default: return -1;
  }
}
uint32_t mix(uint32_t a, uint32_t b) {
  a ^= b << 7; a += b >> 3; a = (a << 13) | (a >> 19);
  int32_t s = (int32_t)a >> 5;
  return a * 2654435761u + (uint32_t)s / (b | 1) + (uint32_t)((int64_t)(int32_t)a * (int32_t)b >> 32)
         + (a % (b | 3)) + (uint32_t)((int32_t)a / ((int32_t)b | 1)) + (uint32_t)((int32_t)a % ((int32_t)b | 5));
}
int arr[64]; short sarr[32]; signed char carr[32]; unsigned char uc[32]; unsigned short us[32];
int main(void) {
  int acc = 0;
  for (int i = 0; i < 64; i++) arr[i] = i * 3 - 50;
  for (int i = 0; i < 32; i++) { sarr[i] = (short)(i * -700); carr[i] = (signed char)(i * 9); uc[i] = i * 7; us[i] = i * 3000; }
  for (int i = 0; i < 64; i++) acc += arr[i] < 0 ? -arr[i] : arr[i];
  for (int i = 0; i < 32; i++) acc += sarr[i] + carr[i] + uc[i] + us[i];
  for (int i = 0; i < 12; i++) acc += classify(i);
  acc += fib(15);
  acc ^= (int)mix((uint32_t)acc, 12345u);
  uint64_t big = (uint64_t)acc * 0x123456789ull; acc += (int)(big >> 17);
  if ((unsigned)acc > 1000u) acc -= 7; else if (acc >= -5) acc += 3;
  acc += (acc < 77) + ((unsigned)acc < 99u);
  sink = acc;
  return acc & 0x7f;
}
""",
    "float": r"""
volatile float fs; volatile int is;
float poly(float x) { return ((x * 1.5f + 2.25f) * x - 0.125f) * x + 3.0f; }
float dot(const float* a, const float* b, int n) { float s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
float data[32], w[32];
int main(void) {
  for (int i = 0; i < 32; i++) { data[i] = (float)i * 0.5f - 3.0f; w[i] = 1.0f / (float)(i + 1); }
  float s = dot(data, w, 32);
  s += __builtin_sqrtf(s * s + 1.0f);
  s = __builtin_fabsf(s) + __builtin_copysignf(2.0f, -s) + __builtin_fminf(s, 3.0f) + __builtin_fmaxf(s, -1.0f);
  s = __builtin_fmaf(s, 1.25f, -0.5f) - __builtin_fmaf(-s, 0.75f, 2.0f);
  int k = (int)s; unsigned u = (unsigned)(s * 3.0f);
  s += (float)k + (float)u + poly(s) / (s + 7.0f);
  is = (s < 3.0f) + (s <= 4.0f) + (s == 5.0f) + __builtin_isnan(s) + __builtin_isinf(s);
  fs = s;
  return k & 0x7f;
}
""",
    "half": r"""
volatile _Float16 hs; volatile float fs; volatile int is;
_Float16 hdot(const _Float16* a, const _Float16* b, int n) { _Float16 s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
_Float16 ha[16], hb[16];
int main(void) {
  for (int i = 0; i < 16; i++) { ha[i] = (_Float16)i * (_Float16)0.25f; hb[i] = (_Float16)(16 - i) / (_Float16)3.0f; }
  _Float16 s = hdot(ha, hb, 16);
  s = s - (_Float16)1.5f * s / (s + (_Float16)2.0f);
  s = (_Float16)__builtin_sqrtf((float)s) + __builtin_fabsf16(s);
  float f = (float)s * 1.5f;
  int k = (int)s; unsigned u = (unsigned)s;
  s += (_Float16)k + (_Float16)u + (_Float16)f;
  is = (s < (_Float16)3.0f) + (s <= (_Float16)f) + (s == (_Float16)1.0f) + (int)(s > (_Float16)0);
  hs = s; fs = f;
  return k & 0x7f;
}
""",
    "misc": r"""
#include <pmsis.h>
#include <stdint.h>
typedef int (*binop)(int, int);
static int add(int a, int b) { return a + b; }
static int sub(int a, int b) { return a - b; }
static int mulx(int a, int b) { return a * b; }
static int band(int a, int b) { return a & b; }
static const binop ops[] = {add, sub, mulx, band};
volatile binop vop = add;
float fneg_fma(float a, float b, float c) { return -(a * b) - c; }
float fms(float a, float b, float c) { return a * b - c; }
float fnms(float a, float b, float c) { return -(a * b) + c; }
_Float16 hms(_Float16 a, _Float16 b, _Float16 c) { return a * b - c; }
_Float16 hnms(_Float16 a, _Float16 b, _Float16 c) { return -(a * b) - c; }
int main(void) {
  uint32_t t0, t1, old;
  __asm__ volatile("csrr %0, mcycle" : "=r"(t0));
  __asm__ volatile("csrrw %0, mscratch, %1" : "=r"(old) : "r"(t0));
  __asm__ volatile("csrrc %0, mstatus, %1" : "=r"(old) : "r"(8));
  __asm__ volatile("csrrsi %0, mstatus, 8" : "=r"(old));
  __asm__ volatile("csrrci %0, mie, 3" : "=r"(old));
  __asm__ volatile("csrrwi %0, mscratch, 17" : "=r"(old));
  __asm__ volatile("csrr %0, fflags" : "=r"(old));
  __asm__ volatile("csrw frm, %0" :: "r"(0));
  __asm__ volatile("fence rw, rw\n fence iorw, iorw\n fence r, w\n fence.tso\n nop");
  __asm__ volatile("fadd.s %0, %0, %0, rne\n fmul.h %0, %0, %0, rtz\n fcvt.w.s %0, %0, rdn\n"
                   " fcvt.wu.h %0, %0, rup\n fsqrt.s %0, %0, rmm" : "+r"(old));
  __asm__ volatile("fcvt.s.h %0, %0\n fcvt.h.s %0, %0, rtz\n fsgnj.s %0, %0, %0\n fsgnjn.h %0, %0, %0\n"
                   " fmin.h %0, %0, %0\n fmax.h %0, %0, %0\n fclass.h %0, %0" : "+r"(old));
  int acc = 0;
  for (int i = 0; i < 16; i++) acc = ops[i & 3](acc, i + 1);
  acc += vop(acc, 5);
  float f = fneg_fma(1.5f, (float)acc, 0.25f) + fms(2.0f, 3.0f, (float)acc) + fnms(1.0f, 2.0f, 3.0f);
  _Float16 h = hms((_Float16)1.5f, (_Float16)acc, (_Float16)0.5f) + hnms((_Float16)1.0f, (_Float16)2.0f, (_Float16)3.0f);
  __asm__ volatile("csrr %0, mcycle" : "=r"(t1));
  printf("acc=%d f=%d h=%d cycles=%u old=%x\n", acc, (int)f, (int)h, t1 - t0, old);
  return acc == 0 ? 1 : 0;
}
""",
}


@needs_lld
@pytest.mark.parametrize("opt", ["0", "2", "s"])
@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_compiled_program(prog, opt, tmp_path):
    from harness.commands.disasm import lines

    src = tmp_path / f"{prog}.c"
    src.write_text(PROGRAMS[prog])
    elf = tmp_path / f"{prog}-O{opt}.elf"
    pypath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-m", "harness", "build", str(src), "-O", opt, "-o", str(elf)], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": pypath})
    assert r.returncode == 0, r.stdout + r.stderr
    ref = _objdump(elf, "--mattr=+m,+c,+zfinx,+zhinx")
    ours = {addr: text for addr, _, _, text in lines(elf)}
    assert set(ours) == set(ref), "instruction boundaries differ"
    diffs = [f"{a:08x}: ours {ours[a]!r} llvm {ref[a]!r}" for a in sorted(ours)
             if not _ours_pulp(ours[a]) and ours[a] != ref[a]]
    compared = sum(not _ours_pulp(t) for t in ours.values())
    print(f"\n[{prog} -O{opt}] {compared} lines compared")
    assert not diffs, f"{len(diffs)} of {compared} lines differ:\n" + "\n".join(diffs[:30])
    assert compared > 100


@needs_lld
def test_disasm_command_format(tmp_path, capsys):
    """`pulp-odl disasm` prints `ADDRESS: HEXWORD  TEXT`, 4 hex digits for compressed instructions."""
    from harness import platform as platmod
    from harness import toolchain
    from harness.cli import main

    src = tmp_path / "m.c"
    src.write_text("int main(void) { return 3; }\n")
    elf = toolchain.build([src], tmp_path / "m.elf", platmod.load("pulp-open"), opt="2")
    assert main(["disasm", str(elf)]) == 0
    out = capsys.readouterr().out.splitlines()
    ref = _objdump(elf)
    assert len(out) == len(ref)
    for line in out:
        m = re.match(r"^([0-9a-f]{8}): ([0-9a-f]{4}|[0-9a-f]{8})  (.+)$", line)
        assert m, line
        if not _ours_pulp(m.group(3)):  # llvm knows no PULP instruction
            assert ref[int(m.group(1), 16)] == m.group(3)
