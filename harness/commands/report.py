"""`pulp-odl report`: the static HTML dashboard of the experiments' results."""
from __future__ import annotations

from pathlib import Path

from harness import paths
from harness.commands.layers import console
from harness.errors import UserError
from harness.experiments import report
from harness.experiments.cache import results_root

NAME = "report"
HELP = ("write results/report/index.html, an offline interactive dashboard: latency tables, where the cycles go, "
        "Pareto plots, memory plans, a training step's timeline, kernel tables")
ORDER = 47


def add_arguments(p) -> None:
    p.add_argument("--accuracy", type=Path, metavar="FILE",
                   help="CSV with columns net, dataset, layer_id, p, accuracy: adds accuracy vs latency plots")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results directory to read (default: results/, or $PULP_ODL_RESULTS)")
    p.add_argument("--output", type=Path, metavar="DIR", help="where to write index.html (default: RESULTS/report)")


def _is_report(path: Path) -> bool:
    """An existing index.html the report may replace: empty or one it wrote (its generator line, or
    the title of earlier pages)."""
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return False
    return head == b"" or f'content="{report.GENERATOR}"'.encode() in head or b"<h1>pulp-odl:" in head


def run(args) -> int:
    results = args.results or results_root()
    if not results.is_dir():
        raise UserError(f"--results {results}: {'not a directory' if results.exists() else 'no such directory'}; "
                        "give the directory experiments wrote (default results/)")
    if args.accuracy is not None:
        paths.input_file(args.accuracy, "--accuracy")
    outdir = args.output or results / "report"
    paths.make_dir(outdir, "--output")
    index = paths.output_file(outdir / "index.html", "--output", owned=_is_report, kind="a pulp-odl report",
                              inputs=[args.accuracy] if args.accuracy else [])
    with paths.user_path(index, "--output directory"):
        path, n = report.build(results, outdir, args.accuracy)
    console().print(f"dashboard: {path} ({n} figure{'' if n == 1 else 's'}; one file that works offline: open it in a "
                    "browser)", highlight=False)
    return 0
