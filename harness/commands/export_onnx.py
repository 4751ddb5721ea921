"""`pulp-odl export-onnx`: a network (built in, or an imported model) as an ONNX file with its weights."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness import paths, validate
from harness.commands.layers import add_net_arguments, build_from_args, net_overrides
from harness.errors import UserError
from harness.nets import layer_rows
from harness.nets.onnx_import import is_onnx

NAME = "export-onnx"
HELP = "write a network and its weights (random, an .npz file, or an ONNX model's own) as an ONNX model"
ORDER = 22


def add_arguments(p) -> None:
    add_net_arguments(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT.onnx", help="ONNX file to write")
    p.add_argument("--weights", default="random", metavar="random|model|FILE.npz",
                   help="random (default, seeded), model (an imported model's own initializers) or an .npz file of "
                        "<layer>.weight (C_out, C_in/groups, k, k; linear: C_out, C_in) and <layer>.bias arrays, "
                        "BatchNorm folded")
    p.add_argument("--seed", type=validate.int_arg(0, 2 ** 32 - 1), default=0, help="seed of the random weights")


def _weights(args, net):
    from harness.nets.registry import load_weights
    from harness.nets.weights import load_npz, random_weights

    if args.weights == "random":
        return random_weights(net, args.seed)
    if args.weights == "model":
        name, items = net_overrides(args)
        return load_weights(name, args.dataset, **dict(items))
    if not args.weights.endswith(".npz"):
        raise UserError(f"--weights {args.weights}: give random, model or the path of an .npz file")
    return load_npz(args.weights, net)


def run(args) -> int:
    from harness.nets.onnx_export import to_model, written_by_us

    inputs = [args.net] if is_onnx(args.net) else []
    if args.weights.endswith(".npz"):
        inputs.append(args.weights)
    out = paths.output_file(args.output, "-o", inputs=[i for i in inputs if Path(i).exists()], owned=written_by_us,
                            kind="an ONNX model written by pulp-odl")
    net = build_from_args(args)
    model = to_model(net, _weights(args, net))
    data = model.SerializeToString(deterministic=True)
    with paths.user_path(out, "-o"):
        if out.exists() and not out.is_file():      # a device: written in place
            out.write_bytes(data)
        else:
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, out)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    print(f"wrote {out}: {net.title}, {len(layer_rows(net))} weight layers, {net.params:,} params, "
          f"{len(net.blocks)} replay cut points ({len(data):,} bytes)")
    return 0


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
