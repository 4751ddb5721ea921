"""The MCU runtime for one platform: generated linker script, platform header (pulp_platform.h,
from the platform file and platforms/devices/) and instruction header (pulp_isa.h, from isa/), plus
the hand-written sources in pulp_kernels/runtime/, which take every hardware number from those two
headers. Generated files go to build/runtime/<platform>-<hash>/ and are rewritten only when their
content changes; nothing is generated into the source tree."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

from harness import ROOT
from harness import devices
from harness.isa import gen as isagen
from harness.platform import Platform

RUNTIME_DIR = ROOT / "pulp_kernels" / "runtime"
INCLUDE_DIR = ROOT / "pulp_kernels" / "include"
BUILD_DIR = ROOT / "build" / "runtime"
SOURCES = ("crt0.S", "io.c", "libc.c", "perf.c", "alloc.c", "cluster.c", "hyperbus.c")


@lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(RUNTIME_DIR)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)


def template_values(plat: Platform) -> dict:
    l1, l2 = plat.memory("l1"), plat.memory("l2")
    return {
        "name": plat.name, "sha": plat.sha256, "fc_cluster_id": plat.fc["cluster_id"],
        "cores": plat.cluster["cores"], "l1_base": l1.base, "l1_size": l1.size,
        "l2_base": l2.base, "l2_size": l2.size, "fc_stack": plat.fc["stack_size"],
        "cluster_stack": plat.cluster["stack_size"],
        "hyperram_size": plat.memory("hyperram").size, "flash_size": plat.memory("flash").size,
        "peripherals": [(k, w["base"], w["size"]) for k, w in plat.peripherals.items()],
        "registers": devices.constants(devices.load()),
    }


_PREPARED: dict[tuple, Path] = {}


def prepare(plat: Platform) -> Path:
    """Write the platform's generated runtime files; return their directory. Once per process and
    platform: a sweep builds hundreds of programs, and the headers depend only on the platform file,
    platforms/devices/ and isa/, which do not change under a running command."""
    key = (plat.name, plat.sha256)
    out = _PREPARED.get(key)
    if out is not None and (out / "pulp_isa.h").exists() and (out / "link.ld").exists():
        return out
    out = _prepare(plat)
    _PREPARED[key] = out
    return out


def _prepare(plat: Platform) -> Path:
    out = BUILD_DIR / f"{plat.name}-{plat.sha256[:12]}"
    env = _env()
    vals = template_values(plat)
    isagen.write_if_changed(out / "link.ld", env.get_template("link.ld.j2").render(**vals))
    isagen.write_if_changed(out / "pulp_platform.h", env.get_template("pulp_platform.h.j2").render(**vals))
    isagen.write_cheader(out / "pulp_isa.h")
    return out


def sources() -> list[Path]:
    return [RUNTIME_DIR / s for s in SOURCES]
