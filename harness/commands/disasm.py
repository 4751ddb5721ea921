"""pulp-odl disasm: one line per instruction of an ELF's code, `ADDRESS: HEXWORD  TEXT`."""
from __future__ import annotations

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from harness import elf as elfmod
from harness import platform as platmod
from harness.backends.embedded import simulator

NAME = "disasm"
HELP = "disassemble the code of an ELF (llvm-objdump -M no-aliases text, PULP mnemonics)"
ORDER = 30


def add_arguments(p):
    p.add_argument("elf", help="ELF file")
    p.add_argument("--platform", default=platmod.DEFAULT_PLATFORM,
                   help="platform whose FP register convention names the registers (default: pulp-open)")


def lines(path, fp_separate: bool = False, platform=None):
    """Yield (address, word, size, text) for every instruction in the executable sections."""
    sim = simulator()
    elfmod.load(path, platform)  # validates the file with a clear error
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if not sec["sh_flags"] & SH_FLAGS.SHF_EXECINSTR or sec["sh_type"] != "SHT_PROGBITS":
                continue
            data = sec.data()
            base = sec["sh_addr"]
            off = 0
            while off + 2 <= len(data):
                half = int.from_bytes(data[off:off + 2], "little")
                if half & 3 == 3 and off + 4 <= len(data):
                    word, size = int.from_bytes(data[off:off + 4], "little"), 4
                else:
                    word, size = half, 2
                yield base + off, word, size, sim.disasm(word, base + off, fp_separate)
                off += size


def run(args) -> int:
    plat = platmod.load(args.platform)
    sep = plat.isa["fp_regfile"] == "separate"
    out = []
    for addr, word, size, text in lines(args.elf, sep, plat):
        out.append(f"{addr:08x}: {word:0{size * 2}x}  {text}")
    print("\n".join(out))
    return 0
