"""Command-line entry point: `pulp-odl <command> ...`.

Each command is a module in harness/commands/ that defines NAME, HELP, add_arguments(parser)
and run(args) -> int. Commands are discovered, so adding one touches no other file. A module is
named after its command, so `pulp-odl NAME ...` imports that module alone (the others pull in
NumPy, pandas and the simulator); the full list is imported only for the top-level help.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from harness import __version__, paths, procs
from harness.errors import UserError
import harness.commands


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        # prog is "pulp-odl", "pulp-odl CMD" or "pulp-odl CMD ACTION": the help of the command that failed
        words = self.prog.split()[1:]
        where = " ".join(["pulp-odl", *words, "--help"])
        self.exit(2, f"pulp-odl: error: {message} (see '{where}')\n")


def _command_names() -> list[str]:
    return [info.name for info in pkgutil.iter_modules(harness.commands.__path__) if not info.name.startswith("_")]


def _commands(only: str | None = None):
    mods = []
    for name in _command_names():
        if only is not None and name != only:
            continue
        mod = importlib.import_module(f"harness.commands.{name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    return sorted(mods, key=lambda m: getattr(m, "ORDER", 50))


def build_parser(argv=None):
    parser = _Parser(prog="pulp-odl", description="Measure on-device learning on a simulated PULP MCU.")
    parser.add_argument("--version", action="version", version=f"pulp-odl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    module = first.replace("-", "_") if first else None     # export-onnx lives in export_onnx.py
    for mod in _commands(module if module in _command_names() else None):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    handlers = procs.handle_termination()   # SIGTERM ends a command the way Ctrl-C does
    try:
        return int(args._run(args) or 0)
    except UserError as e:
        print(f"pulp-odl: error: {e}", file=sys.stderr)
        return e.exit_code
    except procs.Terminated as e:
        print(f"pulp-odl: interrupted ({e})", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print("pulp-odl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        paths.detach_stdout()
        return 0
    except OSError as e:
        # a path the command did not check up front: still one line naming it
        print(f"pulp-odl: error: {paths.error(e.filename or 'a file', e, 'check that path')}", file=sys.stderr)
        return 2
    finally:
        procs.restore(handlers)


if __name__ == "__main__":
    sys.exit(main())
