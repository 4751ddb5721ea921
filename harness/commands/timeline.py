"""`pulp-odl timeline FILE.json`: draw a timeline (written by run, kernel or deploy --timeline) as one
offline HTML page, the dashboard's view of it."""
from __future__ import annotations

from pathlib import Path

from harness import paths
from harness.commands.layers import console

NAME = "timeline"
HELP = "draw a timeline file (--timeline of run, kernel, deploy) as one offline HTML page"
ORDER = 48


def add_arguments(p) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="a timeline written by --timeline (Chrome trace-event JSON)")
    p.add_argument("-o", "--output", type=Path, metavar="HTML",
                   help="the page to write (default: FILE with .html instead of .json)")


def _is_page(path: Path) -> bool:
    from harness.commands.report import _is_report
    return _is_report(path)


def run(args) -> int:
    from harness import timeline
    from harness.experiments import report

    out = args.output or args.file.with_suffix(".html")
    paths.input_file(args.file, "timeline", "give a file written by --timeline")
    paths.output_file(out, "--output", inputs=[args.file], owned=_is_page, kind="a pulp-odl page")
    doc = timeline.load(args.file)
    with paths.user_path(out, "--output path"):
        path = report.timeline_page(doc, args.file, out)
    console().print(f"timeline page: {path} ({timeline.summary(doc)})", highlight=False)
    return 0
