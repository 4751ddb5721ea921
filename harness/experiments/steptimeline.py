"""The timeline of one whole training step of a deployed experiment: results/NAME/timeline.json.

The point named by [experiment] timeline runs its step as ONE program (harness.deploy.runner.run_step,
checked against NumPy), recorded by the simulator (harness.timeline), with its stage functions named
after the stages. The file carries a key made of everything the recording depends on (the program's
sources, the platform file, the simulator, the toolchain, the code that writes trace events); a later
run with the same key keeps the file instead of simulating again.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness import platform as platmod
from harness import timeline as tlmod
from harness import toolchain
from harness.backends import embedded
from harness.deploy import program as progmod
from harness.deploy.codegen import Gen
from harness.deploy.runner import Point, _source_hash, plan_of, run_step
from harness.errors import UserError

FILE = "timeline.json"


def runner_point(pt) -> Point:
    """The deployer's Point of an experiment's DeployedPoint."""
    sw = pt.sweep
    return Point(sw.net, pt.dataset, pt.layer_id, pt.p, pt.platform, pt.placement,
                 tuple(sorted(sw.network.items())), tuple(sorted(sw.cl.items())))


def chosen(plan) -> object | None:
    """The experiment's point named by [experiment] timeline, on its first platform."""
    pick = plan.experiment.timeline
    if not pick:
        return None
    for pt in plan.points:
        if (pt.sweep.net, pt.dataset, pt.layer_id, pt.p, pt.placement, pt.platform) == \
                (pick["net"], pick["dataset"], pick["layer_id"], pick["p"], pick["placement"],
                 plan.experiment.platforms[0]):
            return pt
    return None


def key(pt: Point) -> str:
    plan = plan_of(pt)
    prog = progmod.step_program(Gen(plan, plan.platform), plan.step)
    h = hashlib.sha256()
    for part in (_source_hash(prog.c), platmod.load(pt.platform).sha256, embedded.version(),
                 toolchain.find().describe(), repr(pt), Path(tlmod.__file__).read_text()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _kept(path: Path, k: str) -> bool:
    try:
        with open(path) as f:
            doc = json.load(f)
        return doc.get("otherData", {}).get("key") == k
    except (OSError, ValueError):
        return False


def write(plan, outdir: Path, console=None) -> Path | None:
    """Record the chosen point's step into outdir/timeline.json (kept when its key is unchanged).
    Returns the path, or None when the experiment names no timeline point."""
    pt = chosen(plan)
    if pt is None:
        return None
    rp = runner_point(pt)
    path = Path(outdir) / FILE
    k = key(rp)
    if _kept(path, k):
        if console is not None:
            console.print(f"{plan.experiment.name}: step timeline unchanged ({path})")
        return path
    if console is not None:
        console.print(f"{plan.experiment.name}: running the whole training step of {pt.net} {pt.dataset}, "
                      f"layer_id {pt.layer_id}, p {pt.p:g} as one program, with a timeline")
    whole = run_step(rp, timeline=tlmod.request())
    if not whole["ok"]:
        bad = sorted(n for n, c in whole["checks"].items() if not c["ok"])
        raise UserError(f"the whole training step of {pt.net} layer_id {pt.layer_id} p {pt.p:g} "
                        f"disagrees with NumPy ({', '.join(bad)}); its timeline is not written")
    plat = platmod.load(pt.platform)
    doc = tlmod.to_trace(whole["timeline"], plat.clock_hz,
                         f"one training step of {pt.net} {pt.dataset}, layer_id {pt.layer_id}, p {pt.p:g}, "
                         f"placement {pt.placement}, on {pt.platform}", pt.platform)
    doc["otherData"].update({
        "key": k, "experiment": plan.experiment.name,
        "point": {"net": pt.net, "dataset": pt.dataset, "layer_id": pt.layer_id, "p": pt.p,
                  "placement": pt.placement, "platform": pt.platform},
        "step_cycles": whole["cycles"], "chunk_frozen": plan_of(rp).step.n_f, "chunk_tail": plan_of(rp).step.n_t,
        "numpy_check": f"{sum(c['ok'] for c in whole['checks'].values())} of {len(whole['checks'])} tensors agree",
        "stages": [{"stage": s["stage"], "variant": s["variant"], "phase": s["phase"], "cycles": s["cycles"],
                    "runs": s["runs"]} for s in whole["stages"]]})
    tlmod.write(path, doc)
    return path
