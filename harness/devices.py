"""Register layouts of the MCU's devices (platforms/devices/<device>.toml): offsets inside a device's
window, bit positions, counts and event lines, the same on every platform. Where each device sits is
the platform file's [peripherals]; what its registers are is here, once, and generated into the
simulator (devices.hpp, at build time) and into the runtime's pulp_platform.h.

Only the standard library is used: the simulator's build runs this before any dependency is installed.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

DEVICE_DIR = Path(__file__).resolve().parent.parent / "platforms" / "devices"


class DeviceError(Exception):
    """A problem in a device file; the message starts with the file name."""


def load(device_dir: Path = DEVICE_DIR) -> dict:
    """device -> {register: value}, devices and registers in file order."""
    out = {}
    paths = sorted(Path(device_dir).glob("*.toml"))
    if not paths:
        raise DeviceError(f"{device_dir}: no device files")
    for path in paths:
        try:
            raw = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise DeviceError(f"{path.name}: not valid TOML ({e})") from None
        for key, value in raw.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", key):
                raise DeviceError(f"{path.name}: {key}: names are lower case letters, digits and _")
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 32:
                raise DeviceError(f"{path.name}: {key}: a register offset or value is a 32-bit unsigned integer")
        out[path.stem] = raw
    return out


def constants(devices: dict) -> list[tuple[str, int]]:
    """(NAME, value) for every register: <DEVICE>_<REGISTER>, upper case."""
    return [(f"{dev}_{key}".upper(), value) for dev, regs in devices.items() for key, value in regs.items()]


def gen_hpp(devices: dict) -> str:
    out = ["// Generated from platforms/devices/*.toml by harness/devices.py. Do not edit.", "#pragma once",
           "#include <cstdint>", "", "namespace pulpsim {"]
    out += [f"static const uint32_t {name} = 0x{value:x}u;" for name, value in constants(devices)]
    out += ["}  // namespace pulpsim", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    import argparse

    from harness.isa.gen import write_if_changed

    ap = argparse.ArgumentParser(prog="python -m harness.devices")
    ap.add_argument("--cpp", type=Path, required=True, help="directory for the simulator's devices.hpp")
    args = ap.parse_args(argv)
    write_if_changed(args.cpp / "devices.hpp", gen_hpp(load()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
