"""`pulp-odl report`: the static HTML dashboard of the experiments' results."""
from __future__ import annotations

from pathlib import Path

from harness.commands.layers import console
from harness.experiments import report
from harness.experiments.cache import results_root

NAME = "report"
HELP = "write results/report/index.html: Pareto, kernel efficiency, stall/DMA breakdown, model vs measured"
ORDER = 47


def add_arguments(p) -> None:
    p.add_argument("--accuracy", type=Path, metavar="FILE",
                   help="CSV with columns net, dataset, layer_id, p, accuracy: adds accuracy vs latency plots")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results directory to read (default: results/, or $PULP_ODL_RESULTS)")
    p.add_argument("--output", type=Path, metavar="DIR", help="where to write index.html (default: RESULTS/report)")


def run(args) -> int:
    results = args.results or results_root()
    path, n = report.build(results, args.output or results / "report", args.accuracy)
    console().print(f"wrote {path} ({n} figures)")
    return 0
