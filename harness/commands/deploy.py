"""`pulp-odl deploy`: one whole training step as one program on the simulator, checked end to end,
next to the composition of its stages measured on their own (what the latency tables sum)."""
from __future__ import annotations

import json
import sys
from dataclasses import replace

from rich.console import Console
from rich.table import Table

from harness import energy
from harness import platform as platforms
from harness import paths, validate
from harness.commands.layers import add_net_arguments, console, net_overrides
from harness.commands.run import add_timeline_arguments, timeline_request
from harness.commands.memory import _check_p
from harness.deploy import task as taskmod
from harness.deploy.runner import Point, check_chunks, model_tensors, plan_of, run_step, stage_jobs
from harness.errors import UserError
from harness.nets.registry import net_label
from harness.experiments import cache as cachemod, execute
from harness.platform import DEFAULT_PLATFORM

NAME = "deploy"
HELP = "build and run one whole training step as one program, check it against NumPy, compare with its stages"
ORDER = 44
AGREEMENT = 0.03     # the composed stages must be within 3 % of the whole program


def add_arguments(p) -> None:
    add_net_arguments(p)
    p.add_argument("--layer-id", type=validate.int_arg(1, None), required=True,
                   help="replay cut: 1 = classifier only, k = classifier + k-1 blocks")
    p.add_argument("--p", type=validate.fraction_arg(), default=1.0, help="partiality in (0, 1] (default 1)")
    p.add_argument("--platform", default=DEFAULT_PLATFORM, help=f"platform (default: {DEFAULT_PLATFORM})")
    p.add_argument("--placement", choices=("fit", "method"), default="fit",
                   help="L2 wherever it fits (default) or method.md's placement")
    p.add_argument("--chunk-frozen", type=validate.int_arg(1, None), metavar="N",
                   help="new samples per frozen-forward chunk (default: the largest whose activations fit L2, and "
                        "larger chunks for the deeper stages where they fit; a given chunk size runs every stage in it)")
    p.add_argument("--chunk-tail", type=validate.int_arg(1, None), metavar="N",
                   help="samples per chunk of the trained layers (default: the largest that fits L2)")
    p.add_argument("--weights", choices=("random", "model"), default="random",
                   help="the programs' weights: random (default) or the ONNX model's initializers (BatchNorm folded)")
    p.add_argument("--jobs", type=validate.jobs_arg(),
                   help="parallel stage programs for the composition (default: host cores)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    add_timeline_arguments(p, "FILE", "write a timeline of the whole step's program to FILE (Chrome trace-event "
                                      "JSON, for Perfetto or chrome://tracing): its stages, per-core states and "
                                      "calls, both DMAs, counters")


def compare(pt: Point, jobs: int | None = None, progress: bool = True, timeline=None) -> dict:
    whole = run_step(pt, timeline=timeline)
    plan, sjobs = stage_jobs(pt)
    step = plan.step
    outcome = execute.run_specs({j.name: j for j in sjobs}, jobs=jobs, cache=cachemod.Cache(),
                                console=Console(stderr=True, highlight=False), progress=progress)
    if outcome.errors:
        name, msg = sorted(outcome.errors.items())[0]
        raise UserError(f"stage program {name} failed: {msg}")
    by = {(j.stage, j.variant): outcome.rows[j.name] for j in sjobs}
    phases = {}
    composed_energy = dict.fromkeys(energy.COLUMNS, 0.0)
    for (name, variant), n in taskmod.step_counts(step).items():
        ph = step.stage(name).phase
        row = by[(name, variant)]
        phases.setdefault(ph, [0, 0])[1] += n * row["cycles"]
        priced = energy.row_fields(row["energy_events"], plan.platform)
        for c in energy.COLUMNS:
            composed_energy[c] += n * priced[c]
    for s in whole["stages"]:
        phases.setdefault(s["phase"], [0, 0])[0] += s["cycles"]
    composed = sum(v[1] for v in phases.values())
    diff = (composed - whole["cycles"]) / whole["cycles"]
    return {"network": pt.net, "dataset": pt.dataset, "layer_id": pt.layer_id, "p": pt.p, "platform": pt.platform,
            "placement": pt.placement, "weights": pt.weights, "chunk_frozen": step.n_f,
            "chunk_frozen_deep": step.n_f2, "deep_from": step.deep_from, "chunk_tail": step.n_t,
            "whole_cycles": whole["cycles"], "whole_cluster_cycles": whole["cluster_cycles"],
            "composed_cycles": composed, "difference": diff, "agree": abs(diff) <= AGREEMENT,
            "phases": {k: {"whole": v[0], "composed": v[1]} for k, v in phases.items()},
            "checks": whole["checks"], "ok": whole["ok"], "instructions": whole["instructions"],
            "host_seconds": whole["host_seconds"], "timeline": whole["timeline"],
            "whole_energy": {c: whole[c] for c in energy.COLUMNS}, "composed_energy": composed_energy}


def run(args) -> int:
    _check_p(args.p)
    req = timeline_request(args)
    if req is not None:
        from harness import timeline
        timeline.check_output(args.timeline, "--timeline")
    paths.output_dir(cachemod.results_root(), "results directory")   # the stages' cache, before the step runs
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    net, overrides = net_overrides(args)
    own = Point(net, args.dataset, args.layer_id, args.p, platforms.load(args.platform).name, args.placement, overrides)
    chunks = ()
    if args.chunk_frozen is not None or args.chunk_tail is not None:
        check_chunks(own, args.chunk_frozen, args.chunk_tail)
        auto = plan_of(own).step
        chunks = (args.chunk_frozen or auto.n_f, args.chunk_tail or auto.n_t)
    pt = replace(own, chunks=chunks, weights=args.weights)
    model_tensors(pt)     # --weights model of a built-in network is refused before anything runs
    doc = compare(pt, args.jobs, progress=not args.json, timeline=req)
    rec = doc.pop("timeline")
    if req is not None:
        trace = timeline.to_trace(rec, platforms.load(pt.platform).clock_hz,
                                  f"training step of {pt.net} {pt.dataset}, layer_id {pt.layer_id}, p {pt.p:g}, "
                                  f"placement {pt.placement}", pt.platform)
        timeline.write(args.timeline, trace)
        doc["timeline"] = {"path": str(args.timeline), "events": len(trace["traceEvents"])}
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        out = console()
        out.print(f"[bold]training step[/bold] of {net_label(pt.net)} {pt.dataset}, layer_id {pt.layer_id}, p {pt.p:g}, "
                  f"{pt.platform}, placement {pt.placement}, {pt.weights} weights: frozen chunks of {doc['chunk_frozen']}"
                  + (f" (from {doc['deep_from']} on of {doc['chunk_frozen_deep']})" if doc["deep_from"] else "")
                  + f", tail chunks of {doc['chunk_tail']}")
        t = Table(title="cycles of one step: one program vs the stages on their own")
        for col in ("phase", "one program", "stages composed", "difference"):
            t.add_column(col, justify="left" if col == "phase" else "right")
        for ph in ("frozen", "latents", "fw", "bw", "update"):
            if ph in doc["phases"]:
                w, c = doc["phases"][ph]["whole"], doc["phases"][ph]["composed"]
                t.add_row(ph, f"{w:,}", f"{c:,}", f"{100 * (c - w) / w:+.2f}%" if w else "")
        t.add_row("total (FC view)", f"{doc['whole_cycles']:,}", f"{doc['composed_cycles']:,}",
                  f"{100 * doc['difference']:+.2f}%")
        out.print(t)
        we, ce = doc["whole_energy"], doc["composed_energy"]
        out.print(f"energy of the timed stages: one program {energy.summary(we)}; stages composed "
                  f"{energy.joules(ce['energy_J'])} ({100 * (ce['energy_J'] - we['energy_J']) / we['energy_J']:+.2f}%)")
        bad = [n for n, c in doc["checks"].items() if not c["ok"]]
        out.print(f"NumPy check of the step: {len(doc['checks']) - len(bad)} of {len(doc['checks'])} tensors agree "
                  f"(loss, weight gradients, updated weights)" + (f"; [red]wrong: {', '.join(bad)}[/red]" if bad else ""))
        out.print(f"agreement within {100 * AGREEMENT:g} %: {'yes' if doc['agree'] else '[red]no[/red]'}; "
                  f"{doc['instructions']:,} instructions simulated in {doc['host_seconds']:.1f} s")
        if req is not None:
            out.print(f"timeline: {args.timeline} ({doc['timeline']['events']:,} trace events)")
    return 0 if doc["ok"] and doc["agree"] else 1
