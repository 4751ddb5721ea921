"""Valid network and dataset names, and the one entry point that builds a network for a dataset."""
from __future__ import annotations

import sys
from pathlib import Path
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from harness import validate
from harness.errors import UserError
from harness.nets import mobilenetv2, onnx_import, phinet
from harness.nets.layer import Network
from harness.nets.onnx_import import is_onnx


@dataclass(frozen=True)
class NetSpec:
    name: str
    builder: Callable[..., Network]
    defaults: dict
    description: str


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    resolution: int
    num_classes: int
    description: str


NETWORKS: dict[str, NetSpec] = {
    "mobilenetv2": NetSpec("mobilenetv2", mobilenetv2.build, mobilenetv2.DEFAULTS,
                           "MobileNetV2 (torchvision), width 0.75"),
    "phinet": NetSpec("phinet", phinet.build, phinet.DEFAULTS,
                      "PhiNet (micromind), alpha 1.1, beta 0.75, t0 5, 7 layers"),
}

# Both benchmarks use a 10-way classifier; resolutions are the datasets' native image sizes.
DATASETS: dict[str, DatasetSpec] = {
    "cifar10": DatasetSpec("cifar10", 32, 10, "Split CIFAR-10, 32x32, 5 tasks of 2 classes"),
    "core50": DatasetSpec("core50", 128, 10, "CORe50 (10 categories), 128x128, 5 tasks of 2 categories"),
}


def network_names() -> list[str]:
    return list(NETWORKS)


def dataset_names() -> list[str]:
    return list(DATASETS)


def net_spec(name: str) -> NetSpec:
    try:
        return NETWORKS[name]
    except KeyError:
        raise UserError(f"unknown network '{name}'; choose one of: {', '.join(NETWORKS)}, "
                        f"or the path of a .onnx model") from None


def net_label(net: str) -> str:
    """The network's name in result rows and program names: an ONNX model by its file name."""
    return Path(net).name if is_onnx(net) else net


def check_input_shape(shape) -> tuple[int, int, int]:
    """(C, H, W) of one input sample, each from 1 to validate.MAX_EXTENT."""
    if not isinstance(shape, (list, tuple)) or len(shape) != 3:
        raise UserError(f"input_shape must be three integers C, H, W (e.g. [3, 32, 32]), got {shape!r}")
    for v in shape:
        validate.check_int("input_shape", v, 1, validate.MAX_EXTENT)
    return tuple(int(v) for v in shape)


def load_weights(net: str, dataset: str | None, **params) -> dict:
    """The weights of an ONNX model's initializers (BatchNorm folded), for `--weights model`."""
    if not is_onnx(net):
        raise UserError(f"--weights model needs an ONNX model for --net; {net} is built in and has no trained "
                        f"weights (its programs run on random ones)")
    shape = params.get("input_shape")
    return onnx_import.load(net, None if shape is None else check_input_shape(shape)).weights


def dataset_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise UserError(f"unknown dataset '{name}'; choose one of: {', '.join(DATASETS)}") from None


def build_network(net: str, dataset: str | None = None, *, resolution: int | None = None,
                  num_classes: int | None = None, **params) -> Network:
    """Build `net` for `dataset` (or an explicit resolution / class count).

    Extra keyword arguments override the network's hyper-parameters (e.g. width=1.0 for
    MobileNetV2, num_layers=8 for PhiNet). `net` may also be the path of an ONNX model
    (harness.nets.onnx_import): its input and classes come from the model (`input_shape` = (C, H, W)
    for symbolic inputs), the dataset gives only the CL schedule.
    """
    if is_onnx(net):
        if resolution is not None or num_classes is not None:
            raise UserError(f"{net}: an ONNX model's input size and classes come from the model; drop "
                            f"--resolution/--classes (give --input-shape CxHxW for a symbolic input)")
        if dataset is not None:
            dataset_spec(dataset)
        unknown = set(params) - {"input_shape"}
        if unknown:
            raise UserError(f"unknown parameter '{sorted(unknown)[0]}' for an ONNX model; valid: input_shape")
        shape = params.get("input_shape")
        if shape is not None:
            shape = check_input_shape(shape)
        return onnx_import.load(net, shape).network
    spec = net_spec(net)
    ds = dataset_spec(dataset) if dataset is not None else None
    if resolution is None:
        if ds is None:
            raise UserError("give a dataset or a resolution to build a network for")
        resolution = ds.resolution
    if num_classes is None:
        num_classes = ds.num_classes if ds is not None else 10
    for what, value in (("resolution", resolution), ("number of classes", num_classes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{what} must be a positive integer, got {value!r}")
    check_params(net, params)
    merged = {**spec.defaults, **params}
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in merged.items()))
    return _build(net, resolution, num_classes, key)


def check_params(net: str, params: dict) -> None:
    """Hyper-parameter overrides of `net`: known names, values in the network module's PARAMS ranges."""
    spec = net_spec(net)
    unknown = set(params) - set(spec.defaults)
    if unknown:
        raise UserError(f"unknown {net} parameter '{sorted(unknown)[0]}'; valid: {', '.join(spec.defaults)}")
    ranges = getattr(sys.modules[spec.builder.__module__], "PARAMS", {})
    for key, value in params.items():
        rule = ranges.get(key)
        where = f"{net} parameter {key}"
        if rule is None:
            continue
        if rule[0] == "number":
            validate.check_number(where, value, rule[1], rule[2], lo_open=True)
        elif rule[0] == "fraction":
            validate.check_number(where, value, 0.0, 1.0, hi_open=True)
        elif rule[0] == "int":
            validate.check_int(where, value, rule[1], rule[2])
        elif rule[0] == "ints":
            if not isinstance(value, (list, tuple)):
                raise UserError(f"{where}: must be a list of integers from {rule[1]} to {rule[2]}, got {value!r}")
            for v in value:
                validate.check_int(where, v, rule[1], rule[2])
        elif rule[0] == "bool":
            validate.check_bool(where, value)


@lru_cache(maxsize=64)
def _build(net: str, resolution: int, num_classes: int, key: tuple) -> Network:
    try:
        return NETWORKS[net].builder(resolution, num_classes, **dict(key))
    except ValueError as e:
        # A builder rejects geometry it cannot realise (e.g. an input too small for the strides).
        raise UserError(f"cannot build {net} at {resolution}x{resolution}: {e}") from None
