"""Write the generated ISA artefacts, each only when its content changed.

  python -m harness.isa.gen --cpp DIR        simulator sources (CMake runs this at build time)
  python -m harness.isa.gen --cheader FILE   the kernels' PULP instruction header
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from harness.isa import gen_cheader, gen_cpp, model


def write_if_changed(path: Path, text: str) -> bool:
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique temporary name: several processes may generate the same file at once.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".new")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


def write_cpp(outdir: Path, isa=None) -> None:
    isa = isa or model.load()
    write_if_changed(Path(outdir) / "isa_ops.hpp", gen_cpp.gen_ops_hpp(isa))
    write_if_changed(Path(outdir) / "isa_exec.inc", gen_cpp.gen_exec_inc(isa))
    write_if_changed(Path(outdir) / "isa_disasm.inc", gen_cpp.gen_disasm_inc(isa))


def write_cheader(path: Path, isa=None) -> None:
    isa = isa or model.load()
    write_if_changed(Path(path), gen_cheader.gen_header(isa))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.isa.gen")
    ap.add_argument("--cpp", type=Path, help="directory for the simulator's generated sources")
    ap.add_argument("--cheader", type=Path, help="path of the kernels' generated header")
    args = ap.parse_args(argv)
    isa = model.load()
    if args.cpp:
        write_cpp(args.cpp, isa)
    if args.cheader:
        write_cheader(args.cheader, isa)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
