"""Networks as data: layer records, builders, the registry and replay cut points.

    from harness.nets import build_network, cut_at_layer_id
    net = build_network("mobilenetv2", "core50")
    cut = cut_at_layer_id(net, 5)      # classifier + head + B17..B15 trained
"""
from harness.nets.builder import make_divisible
from harness.nets.cuts import Cut, cut_at_layer, cut_at_layer_id, cut_points, max_layer_id, resolve_cut
from harness.nets.layer import Layer, Network, Op
from harness.nets.registry import (DATASETS, NETWORKS, build_network, dataset_names, dataset_spec,
                                   net_spec, network_names)
from harness.nets.table import layer_rows, ROW_COLUMNS

__all__ = ["Cut", "DATASETS", "Layer", "NETWORKS", "Network", "Op", "ROW_COLUMNS", "build_network",
           "cut_at_layer", "cut_at_layer_id", "cut_points", "dataset_names", "dataset_spec", "layer_rows",
           "make_divisible", "max_layer_id", "net_spec", "network_names", "resolve_cut"]
