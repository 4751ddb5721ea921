"""`pulp-odl memory`: training memory M, replay storage and tensor placement for one replay cut."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace

from rich.table import Table

from harness import platform as platforms
from harness import validate
from harness.commands.layers import add_net_arguments, build_from_args, console, net_overrides
from harness.errors import UserError
from harness.memmodel import MB, place, training_memory
from harness.nets import cut_at_layer, cut_at_layer_id, cut_points, max_layer_id
from harness.partial import kept_channels
from harness.schedule import cl_params

NAME = "memory"
HELP = "training memory M, replay storage S_replay and where each tensor lives, for one replay cut and p"
ORDER = 21
SWEEP_P = (1.0, 0.9, 0.8, 0.7, 0.6)
from harness.platform import DEFAULT_PLATFORM  # pulp-open, as everywhere


def add_arguments(parser) -> None:
    add_net_arguments(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--layer-id", type=validate.int_arg(1, None),
                       help="replay cut at a block boundary: 1 = classifier only, k = classifier + k-1 blocks")
    where.add_argument("--cut", metavar="LAYER", help="replay cut at a weight layer by name (see 'pulp-odl layers')")
    parser.add_argument("--p", type=float, default=1.0,
                        help="partiality in (0, 1] (experiments: 1, 0.9, 0.8, 0.7, 0.6; default 1)")
    parser.add_argument("--platform", default=DEFAULT_PLATFORM,
                        help=f"platform name or .toml path for the placement (default: {DEFAULT_PLATFORM})")
    parser.add_argument("--batch", type=validate.int_arg(1, validate.MAX_COUNT), help="batch size N_batch (default 16)")
    parser.add_argument("--replays", type=validate.int_arg(0, validate.MAX_COUNT), help="replay buffer size (default: 3000 cifar10, 5000 core50)")
    parser.add_argument("--new-per-task", type=validate.int_arg(1, validate.MAX_COUNT),
                        help="new samples per task, for the cached new latents (default: 10000 cifar10, 24000 core50)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    parser.add_argument("--plan", action="store_true",
                        help="the deployed training step's memory plan: every tensor's home, bytes and lifetime, the "
                             "L2 peak, the chunk sizes and what runs fused")
    parser.add_argument("--placement", choices=("fit", "method"), default="fit",
                        help="with --plan: L2 wherever it fits (default) or method.md's placement")
    parser.add_argument("--chunk-frozen", type=validate.int_arg(1, None), metavar="N",
                        help="with --plan: new samples per frozen-forward chunk (default: the largest that fits L2, and "
                             "larger chunks for the deeper stages where they fit; a given chunk size runs every stage in it)")
    parser.add_argument("--chunk-tail", type=validate.int_arg(1, None), metavar="N",
                        help="with --plan: samples per chunk of the trained layers (default: the largest that fits)")


def _check_p(p: float) -> None:
    try:
        kept_channels(p, 1)
    except UserError:
        raise UserError(f"--p must be in (0, 1], got {p:g}; the experiments use "
                        f"{', '.join(f'{v:g}' for v in SWEEP_P)}") from None


def _cut(net, args):
    if args.cut is not None:
        return cut_at_layer(net, args.cut)
    n = max_layer_id(net)
    if not 1 <= args.layer_id <= n:
        points = cut_points(net)
        names = ", ".join(f"{k} = {b}" for k, b in points[:3]) + f", ..., {n} = {points[-1][1]}"
        raise UserError(f"--layer-id must be from 1 to {n} for {net.name} ({names}), got {args.layer_id}")
    return cut_at_layer_id(net, args.layer_id)


def report(args) -> dict:
    _check_p(args.p)
    net = build_from_args(args)
    cut = _cut(net, args)
    params = cl_params(args.dataset, batch=args.batch, replays=args.replays, new_per_task=args.new_per_task)
    plat = platforms.load(args.platform)
    mem = training_memory(cut, args.p, params.batch, params.replays)
    placement = place(mem, plat, params.new_per_task)
    cost = mem.cost
    return {
        "network": net.name, "title": net.title, "dataset": args.dataset, "resolution": net.resolution,
        "input_shape": list(net.input_shape),
        "num_classes": net.num_classes, "platform": plat.name, "cut": cut.label, "layer_id": cut.layer_id,
        "first_trained_block": cut.first_block, "p": args.p, "batch": params.batch, "replays": params.replays,
        "new_per_task": params.new_per_task,
        "M_bytes": mem.M_bytes, "M_MB": mem.M_bytes / MB,
        "M_breakdown_MB": {"weights": mem.weights_bytes / MB, "weight_grads": mem.grads_bytes / MB,
                           "stored_acts": mem.acts_bytes / MB},
        "S_replay_bytes": mem.S_replay_bytes, "S_replay_MB": mem.S_replay_bytes / MB,
        "latent": {"tensors": list(cut.latent_tensors), "elems": cut.latent_elems, "bytes": mem.latent_bytes},
        "trainable_layers": [m.layer.name for m in mem.layers],
        "frozen_layers": len(cost.head),
        "macs_fw": cost.macs_fw_tail, "macs_wg": cost.macs_wg, "macs_ig": cost.macs_ig, "macs_bw": cost.macs_bw,
        "macs_frozen_fw": cost.macs_fw_head,
        "layers": [{"name": m.layer.name, "kind": m.layer.kind, "p_in": m.cost.p_in, "p_out": m.cost.p_out,
                    "kept_in": m.cost.kept_in, "kept_out": m.cost.kept_out, "macs_fw": m.cost.fw,
                    "macs_wg": m.cost.wg, "macs_ig": m.cost.ig, "param_elems": m.param_elems,
                    "grad_elems": m.grad_elems, "stored_act_elems": m.act_elems,
                    "bytes": m.bytes(params.batch)} for m in mem.layers],
        "placement": [asdict(e) for e in placement.entries],
        "capacity": [asdict(c) for c in placement.capacity],
        "needs_l1_tiling": list(placement.needs_tiling),
        "not_fitting": placement.not_fitting,
        "fits_all": placement.fits_all,
    }


def plan_report(args) -> dict:
    from harness.deploy.runner import Point, check_chunks, plan_of

    _check_p(args.p)
    if args.layer_id is None:
        raise UserError("--plan needs --layer-id (a cut at a block boundary)")
    net = build_from_args(args)
    _cut(net, args)
    net_name, overrides = net_overrides(args)
    cl = tuple(sorted((k, v) for k, v in (("batch", args.batch), ("replays", args.replays),
                                           ("new_per_task", args.new_per_task)) if v is not None))
    pt = Point(net_name, args.dataset, args.layer_id, args.p, platforms.load(args.platform).name, args.placement,
               overrides, cl)
    if args.chunk_frozen is not None or args.chunk_tail is not None:
        check_chunks(pt, args.chunk_frozen, args.chunk_tail)
        auto = plan_of(pt).step
        pt = replace(pt, chunks=(args.chunk_frozen or auto.n_f, args.chunk_tail or auto.n_t))
    plan = plan_of(pt)
    step = plan.step
    rows = plan.rows()
    return {"network": net.name, "dataset": args.dataset, "cut": step.cut.label, "p": args.p,
            "platform": plan.platform.name, "placement": plan.placement, "batch": step.params.batch,
            "chunk_frozen": step.n_f, "chunk_frozen_deep": step.n_f2, "deep_from": step.deep_from,
            "chunk_tail": step.n_t, "l2_peak_bytes": plan.arena,
            "l2_budget_bytes": plan.budget, "external_bytes": plan.external_bytes, "not_fitting": plan.fits(),
            "stages": len(step.stages), "program_steps": len(step.sequence()), "fusion_notes": step.notes,
            "fused": {s.name: list(s.fused) for s in step.stages if s.fused}, "tensors": rows}


def run_plan(args) -> int:
    doc = plan_report(args)
    if args.format == "json":
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    out = console()
    out.print(f"[bold]memory plan[/bold] of one training step: {doc['network']} {doc['dataset']}, {doc['cut']}, "
              f"p = {doc['p']:g}, platform {doc['platform']}, placement {doc['placement']}")
    deep = f" (from {doc['deep_from']} on in chunks of {doc['chunk_frozen_deep']})" if doc["deep_from"] else ""
    out.print(f"batch {doc['batch']}: frozen forward in chunks of {doc['chunk_frozen']} samples{deep}, trained layers "
              f"in chunks of {doc['chunk_tail']}; {doc['stages']} stages, {doc['program_steps']} stage runs a step")
    t = Table(title="tensors (L2 arena offsets; external memories by address)")
    for col in ("tensor", "role", "home", "offset", "bytes", "scope", "first use", "last use"):
        t.add_column(col, justify="right" if col in ("offset", "bytes") else "left")
    for r in doc["tensors"]:
        t.add_row(r["tensor"], r["role"], r["home"], f"{r['offset']:,}", f"{r['bytes']:,}", r["scope"], r["first"],
                  r["last"])
    out.print(t)
    ext = doc["external_bytes"]
    out.print(f"L2 peak {doc['l2_peak_bytes']:,} of {doc['l2_budget_bytes']:,} bytes left for tensors; "
              f"HyperRAM {ext.get('hyperram', 0):,} bytes; flash {ext.get('flash', 0):,} bytes")
    for line in doc["fusion_notes"]:
        out.print(f"not fused: {line}")
    for line in doc["not_fitting"]:
        out.print(f"[red]does not fit[/red] {line}")
    return 0


def run(args) -> int:
    if args.plan:
        return run_plan(args)
    if args.placement != "fit":
        raise UserError("--placement applies to --plan")
    doc = report(args)
    if args.format == "json":
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    out = console()
    out.print(f"[bold]{doc['title']}[/bold], {doc['dataset']} {'x'.join(map(str, doc['input_shape'][1:]))}, "
              f"{doc['cut']}, p = {doc['p']:g}, platform {doc['platform']}")
    b = doc["M_breakdown_MB"]
    out.print(f"M = {doc['M_MB']:.3f} MB (weights {b['weights']:.3f} + grads {b['weight_grads']:.3f} + "
              f"{doc['batch']} x acts {b['stored_acts']:.3f});  S_replay = {doc['S_replay_MB']:.3f} MB "
              f"({doc['replays']} x {doc['latent']['elems']} elements of {'+'.join(doc['latent']['tensors'])})")
    out.print(f"per sample: tail FW {doc['macs_fw']:,} MAC, BW {doc['macs_bw']:,} MAC "
              f"(WG {doc['macs_wg']:,} + IG {doc['macs_ig']:,}); frozen FW {doc['macs_frozen_fw']:,} MAC")

    t = Table(title="trainable layers")
    for col in ("layer", "kind", "kept in/out", "FW MAC", "WG MAC", "IG MAC", "params", "grads", "stored act",
                "bytes"):
        t.add_column(col, justify="left" if col in ("layer", "kind") else "right")
    for r in doc["layers"]:
        t.add_row(r["name"], r["kind"], f"{r['kept_in']}/{r['kept_out']}", f"{r['macs_fw']:,}", f"{r['macs_wg']:,}",
                  f"{r['macs_ig']:,}", f"{r['param_elems']:,}", f"{r['grad_elems']:,}",
                  f"{r['stored_act_elems']:,}", f"{r['bytes']:,}")
    out.print(t)

    t = Table(title="placement (resident tensors, grouped)")
    for col in ("memory", "role", "tensors", "bytes", "MB"):
        t.add_column(col, justify="right" if col in ("tensors", "bytes", "MB") else "left")
    groups: dict[tuple[str, str], list[int]] = {}
    for e in doc["placement"]:
        if e["role"] != "working_set":
            groups.setdefault((e["memory"], e["role"]), []).append(e["bytes"])
    for (memname, role), sizes in groups.items():
        t.add_row(memname, role, str(len(sizes)), f"{sum(sizes):,}", f"{sum(sizes) / MB:.3f}")
    out.print(t)

    t = Table(title="capacity")
    for col in ("memory", "rule", "used", "capacity", "fits", "detail"):
        t.add_column(col)
    for c in doc["capacity"]:
        t.add_row(c["memory"], c["rule"], f"{c['used']:,}", f"{c['capacity']:,}",
                  "yes" if c["fits"] else ("tiled" if c["memory"] == "l1" else "[red]NO[/red]"), c["detail"])
    out.print(t)
    if doc["needs_l1_tiling"]:
        out.print(f"L1 tiling needed for {len(doc['needs_l1_tiling'])} working sets: "
                  + ", ".join(doc["needs_l1_tiling"][:6]) + (" ..." if len(doc["needs_l1_tiling"]) > 6 else ""))
    for line in doc["not_fitting"]:
        out.print(f"[red]does not fit[/red] {line}")
    return 0
