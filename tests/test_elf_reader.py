"""Reading a program: a segment keeps only its file bytes (the zero tail is memory the simulator
already holds zero), a file read twice is parsed once, and a file rewritten in place is read again."""
from __future__ import annotations

import shutil

from harness import elf as elfmod
from harness import platform as platmod
from harness.backends import embedded
from tests import helpers
from tests.conftest import needs_clang

# A large zero-initialised array (.bss) and an initialised one (.data): the program fails unless the
# first reads zero everywhere and the second holds its values.
SRC = """
#include <stdint.h>
static volatile uint32_t zeros[%d];
static volatile uint32_t vals[4] = {3, 5, 7, %d};
int main(void) {
  uint32_t s = 0;
  for (int i = 0; i < (int)(sizeof zeros / sizeof zeros[0]); i++) s |= zeros[i];
  if (s) return 1;
  return (int)(vals[0] + vals[1] + vals[2] + vals[3]);
}
"""


@needs_clang
def test_zero_tail_is_not_in_the_segment_and_reads_zero():
    elf = helpers.build(SRC % (16384, 11), name="bss")
    prog = elfmod.load(elf, platmod.load("pulp-open"))
    assert any(s.memsz >= len(s.data) + 4 * 16384 for s in prog.segments)   # the array is not in the file bytes
    assert all(len(s.data) <= s.memsz for s in prog.segments)
    res = helpers.run(elf)
    assert res["status"] == "exit" and res["exit_code"] == 3 + 5 + 7 + 11


@needs_clang
def test_a_file_rewritten_in_place_is_read_again(tmp_path):
    plat = platmod.load("pulp-open")
    a, b = helpers.build(SRC % (64, 1), name="bss"), helpers.build(SRC % (64, 2), name="bss")
    path = tmp_path / "p.elf"
    shutil.copyfile(a, path)
    first = elfmod.load(path, plat)
    assert elfmod.load(path, plat).segments[0].data == first.segments[0].data   # the second read: the same
    assert embedded.run(path, plat)["exit_code"] == 3 + 5 + 7 + 1
    shutil.copyfile(b, path)   # same size, same path: another program
    assert embedded.run(path, plat)["exit_code"] == 3 + 5 + 7 + 2


@needs_clang
def test_sections_read_from_the_header_table_are_pyelftools_sections():
    """The section table is read from the file's bytes (faster than pyelftools' lookup by name): the same
    names, offsets and sizes as pyelftools gives, and the same symbols as its symbol table."""
    import io

    from elftools.elf.elffile import ELFFile

    path = helpers.build(SRC % (64, 1), name="bss")
    raw = path.read_bytes()
    elf = ELFFile(io.BytesIO(raw))
    ours = elfmod._sections(elf, raw)
    theirs = [(s.name, s["sh_offset"], s.data_size if s["sh_type"] != "SHT_NOBITS" else 0) for s in elf.iter_sections()]
    assert [(s.name, s.offset, s.size) for s in ours] == theirs
    assert elfmod.PLATFORM_SECTION in [s.name for s in ours]
    syms, funcs = elfmod._symbols(ours, raw)
    want = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s.name and s["st_info"]["type"] in ("STT_NOTYPE", "STT_OBJECT", "STT_FUNC")}
    assert syms == want and funcs["main"] == syms["main"] & ~1


@needs_clang
def test_a_section_table_past_the_end_of_the_file_is_one_clear_error(tmp_path):
    import struct

    import pytest

    from harness.errors import UserError

    raw = bytearray(helpers.build(SRC % (64, 1), name="bss").read_bytes())
    struct.pack_into("<I", raw, 0x20, len(raw) - 8)   # e_shoff: the table would run past the end
    path = tmp_path / "bad.elf"
    path.write_bytes(bytes(raw))
    with pytest.raises(UserError, match="not a readable ELF file"):
        elfmod.load(path, platmod.load("pulp-open"))
