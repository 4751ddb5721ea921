"""A network as rows, classifier first, in the column layout of shared/data/networks/*.csv.

Extra columns: `name` (the weight layer's name, usable as a cut) and `layer_id` (the block cut
that makes this block trainable). The cumulative columns are dense (p = 1) figures.
"""
from __future__ import annotations

from harness.nets.layer import Network

ROW_COLUMNS = ("name", "layer_id", "resolution", "num_classes", "idx_from_classifier", "idx_no_se", "block",
               "type", "stride", "kernel", "groups", "Cin", "Cout", "H_in", "W_in", "H_out", "W_out", "pad",
               "MACs_fw", "params", "act_in_elems", "act_out_elems", "bias", "bn_after", "act_after",
               "residual", "cum_fw_MACs", "cum_bw_MACs_if_first_trained", "cum_trainable_params", "note")


def layer_rows(net: Network) -> list[dict]:
    block_id = {block: k for k, block in enumerate(reversed(net.blocks), start=1)}
    rows = []
    cum_fw = cum_params = 0
    no_se = 0
    for idx, lay in enumerate(reversed(net.layers), start=1):
        is_se = lay.kind.startswith("se_")
        if not is_se:
            no_se += 1
        prev_fw = cum_fw
        cum_fw += lay.macs
        cum_params += lay.params
        rows.append({
            "name": lay.name, "layer_id": block_id[lay.block],
            "resolution": net.resolution, "num_classes": net.num_classes,
            "idx_from_classifier": idx, "idx_no_se": "" if is_se else no_se, "block": lay.block,
            "type": lay.kind, "stride": lay.stride, "kernel": lay.kernel, "groups": lay.groups,
            "Cin": lay.c_in, "Cout": lay.c_out, "H_in": lay.h_in, "W_in": lay.w_in,
            "H_out": lay.h_out, "W_out": lay.w_out, "pad": ",".join(map(str, lay.pad)),
            "MACs_fw": lay.macs, "params": lay.params, "act_in_elems": lay.act_in_elems,
            "act_out_elems": lay.act_out_elems, "bias": int(lay.bias), "bn_after": int(lay.bn_after),
            "act_after": lay.act_after, "residual": lay.residual,
            "cum_fw_MACs": cum_fw,
            # Dense WG = IG = FW; the first trained layer needs no input gradient.
            "cum_bw_MACs_if_first_trained": cum_fw + prev_fw,
            "cum_trainable_params": cum_params, "note": lay.note,
        })
    return rows
