"""Where an experiment writes: RESULTS/NAME/, checked before any kernel runs.

The results root must be a writable directory (created if missing). RESULTS/NAME/ is written only
when it is new, or holds what an earlier run of the same experiment file wrote: its meta.json names
that file. So a custom experiment file that happens to be called kernels.toml cannot replace the
results of experiments/kernels.toml, and a directory of the user's own files is never written into.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness import ROOT, paths
from harness.errors import UserError

META = "meta.json"
WRITTEN = (".csv", ".json")   # what write_results writes (tables, meta.json); its temporaries start with '.'


def _source(meta: dict) -> Path | None:
    f = meta.get("file") if isinstance(meta, dict) else None
    if not isinstance(f, str) or not f:
        return None
    p = Path(f)
    return (p if p.is_absolute() else ROOT / p).resolve()


def prepare(root: Path, name: str, source: Path) -> Path:
    """Check RESULTS and RESULTS/NAME for experiment file `source`; returns RESULTS/NAME."""
    root = paths.output_dir(root, "--results")
    outdir = root / name
    if not outdir.exists():
        return outdir
    if not outdir.is_dir():
        raise UserError(f"--results {root}: {outdir} is a file, not a result directory; move it or give another --results")
    meta_path = outdir / META
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = None
        owner = _source(meta)
        if owner is None:
            raise UserError(f"{meta_path}: not the meta.json of an experiment; move {outdir} away or give another --results")
        if owner != Path(source).resolve():
            raise UserError(f"{outdir} holds the results of {owner}, not of {source}; rename {Path(source).name} "
                            "or give another --results directory")
        return outdir
    foreign = [p.name for p in outdir.iterdir() if not p.name.startswith(".") and p.suffix not in WRITTEN]
    if foreign:
        raise UserError(f"{outdir} holds {foreign[0]}, which no experiment wrote; move it away or give another "
                        "--results directory")
    return outdir
