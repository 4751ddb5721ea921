"""pulp-odl build: compile and link C sources with the MCU runtime into an ELF."""
from __future__ import annotations

import sys
from pathlib import Path

from harness import paths
from harness import platform as platmod
from harness import toolchain

NAME = "build"
HELP = "compile and link C/assembly sources with the runtime into an ELF for a platform"
ORDER = 10


def add_arguments(p):
    p.add_argument("sources", nargs="+", metavar="SRC", help=".c, .S or .s files")
    p.add_argument("-o", "--output", required=True, metavar="OUT.elf", help="ELF file to write")
    p.add_argument("--platform", default=platmod.DEFAULT_PLATFORM, help="platform name or .toml path (default: pulp-open)")
    p.add_argument("-O", dest="opt", default="2", metavar="LEVEL", help="optimisation level (default 2)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VAL", help="preprocessor define")
    p.add_argument("-I", dest="includes", action="append", default=[], metavar="DIR", help="include directory")
    p.add_argument("-v", "--verbose", action="store_true", help="show the compiler's full diagnostics on failure")


def run(args) -> int:
    plat = platmod.load(args.platform)
    out = paths.output_file(args.output, "-o", inputs=[s for s in args.sources if Path(s).exists()],
                            owned=paths.is_elf, kind="an ELF file")
    try:
        out = toolchain.build(args.sources, out, plat, opt=args.opt, defines=args.defines,
                              include_dirs=args.includes)
    except toolchain.BuildError as e:
        if args.verbose:
            sys.stderr.write(e.diagnostics)
        raise
    print(f"built {out} for {plat.name}")
    return 0
