"""pulp-odl platform: the platform files. `list` names them; `show NAME` prints one as a single
resolved file (what it inherits laid in), exactly what pulp-odl reads."""
from __future__ import annotations

NAME = "platform"
HELP = "list the platforms, or print one resolved (inheritance laid in)"
ORDER = 60


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    sub.add_parser("list", help="the platforms and what each models")
    show = sub.add_parser("show", help="print a platform file with what it inherits resolved")
    show.add_argument("name", metavar="NAME", help="platform name or path to a .toml file")


def run(args) -> int:
    from harness import platform as platmod

    if args.action == "list":
        for name in platmod.available():
            plat = platmod.load(name)
            parent = f" (inherits {plat.chain[1].stem})" if len(plat.chain) > 1 else ""
            print(f"{name}{parent}: {plat.raw['platform']['description']}")
        return 0
    print(platmod.load(args.name).resolved_toml(), end="")
    return 0
