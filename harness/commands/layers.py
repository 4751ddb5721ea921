"""`pulp-odl layers`: a network's weight layers for a dataset's input size."""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from harness import validate
from harness.terminal import Console
from rich.table import Table

from harness.errors import UserError
from harness.nets import (ROW_COLUMNS, build_network, cut_points, dataset_names, dataset_spec, layer_rows,
                          network_names)
from harness.nets.onnx_import import is_onnx

NAME = "layers"
HELP = "list a network's layers (shapes, MACs, params, activations, replay cut ids)"
ORDER = 20
FORMATS = ("table", "csv", "json")


def console() -> Console:
    # Off a terminal rich falls back to 80 columns, which folds wide tables into unreadable cells.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def net_arg(value: str) -> str:
    """A built-in network's name or the path of an ONNX model."""
    if value in network_names() or is_onnx(value):
        return value
    raise argparse.ArgumentTypeError(f"invalid choice: '{value}' (choose from {', '.join(network_names())}, "
                                     f"or the path of a .onnx model)")


def add_net_arguments(parser) -> None:
    parser.add_argument("--net", required=True, type=net_arg, metavar="NET",
                        help=f"network: {', '.join(network_names())}, or the path of an ONNX model (.onnx)")
    parser.add_argument("--dataset", required=True, choices=dataset_names(),
                        help="dataset: sets the input resolution (cifar10 32x32, core50 128x128) and 10 classes; for "
                             "an ONNX model only the CL schedule (new samples per task, replay buffer, learning rate)")
    parser.add_argument("--resolution", type=validate.int_arg(1, validate.MAX_EXTENT),
                        help="override the input resolution (H = W)")
    parser.add_argument("--classes", type=validate.int_arg(1, validate.MAX_EXTENT), help="override the number of classes")
    parser.add_argument("--input-shape", type=validate.shape_arg, metavar="CxHxW",
                        help="an ONNX model's input sample where its C, H or W is symbolic (e.g. 1x49x10)")


def net_overrides(args) -> tuple[str, tuple]:
    """(network, builder arguments as sorted items) of the command line: an ONNX path made absolute,
    so that a point names the same file from any directory."""
    if args.input_shape is not None and not is_onnx(args.net):
        raise UserError(f"--input-shape applies to ONNX models; {args.net} is built in (use --resolution)")
    items = [(k, v) for k, v in (("resolution", args.resolution), ("num_classes", args.classes),
                                 ("input_shape", args.input_shape)) if v is not None]
    net = str(Path(args.net).resolve()) if is_onnx(args.net) else args.net
    return net, tuple(sorted(items))


def add_arguments(parser) -> None:
    add_net_arguments(parser)
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")


def build_from_args(args):
    net, items = net_overrides(args)
    return build_network(net, args.dataset, **dict(items))


def _ops(net) -> list[dict]:
    return [{"name": op.name, "kind": op.kind, "block": op.block, "inputs": list(op.inputs), "output": op.output,
             "shape": list(net.tensors[op.output]), "attrs": dict(op.attrs)} for op in net.ops]


def run(args) -> int:
    net = build_from_args(args)
    rows = layer_rows(net)
    if args.format == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=ROW_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    cuts = [{"layer_id": k, "block": block} for k, block in cut_points(net)]
    if args.format == "json":
        doc = {"network": net.name, "title": net.title, "dataset": args.dataset, "resolution": net.resolution,
               "input_shape": list(net.input_shape),
               "num_classes": net.num_classes, "config": dict(net.config),
               "totals": {"weight_layers": len(rows), "macs_fw": net.macs, "params": net.params,
                          "bn_params": net.bn_params},
               "cut_points": cuts, "layers": rows, "ops": _ops(net)}
        json.dump(doc, sys.stdout, indent=1, default=list)
        sys.stdout.write("\n")
        return 0

    c, h, w = net.input_shape
    source = ("input and classes from the model" if is_onnx(args.net) else
              dataset_spec(args.dataset).description if args.resolution is None else "custom input")
    table = Table(title=f"{net.title}, {c}x{h}x{w}, {net.num_classes} classes ({source})")
    for col, justify in (("idx", "right"), ("layer", "left"), ("id", "right"), ("type", "left"),
                         ("Cin>Cout", "right"), ("in HxW", "right"), ("out HxW", "right"), ("k/s/g", "right"),
                         ("MACs", "right"), ("params", "right"), ("act in", "right"), ("act", "left"),
                         ("residual", "left")):
        table.add_column(col, justify=justify)
    for r in rows:
        table.add_row(str(r["idx_from_classifier"]), r["name"], str(r["layer_id"]), r["type"],
                      f"{r['Cin']}>{r['Cout']}", f"{r['H_in']}x{r['W_in']}", f"{r['H_out']}x{r['W_out']}",
                      f"{r['kernel']}/{r['stride']}/{r['groups']}", f"{r['MACs_fw']:,}", f"{r['params']:,}",
                      f"{r['act_in_elems']:,}", r["act_after"], r["residual"])
    out = console()
    out.print(table)
    out.print(f"{len(rows)} weight layers, {net.macs:,} MACs forward, {net.params:,} params "
              f"(+{net.bn_params:,} BN). 'id' is the layer_id that makes the row's block trainable "
              f"(1 = classifier only, {len(cuts)} = whole network).")
    return 0
