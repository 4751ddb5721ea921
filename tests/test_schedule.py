"""CL schedule: how many times each kernel runs in one task."""
from __future__ import annotations

import pytest

from harness.errors import UserError
from harness.nets import build_network, cut_at_layer, cut_at_layer_id
from harness.schedule import CLParams, buffer_writes, cl_params, task_cycles, task_schedule


def test_documented_defaults():
    c = cl_params("cifar10")
    assert (c.new_per_task, c.replays, c.batch, c.batch_replay, c.batch_new, c.epochs) == (10000, 3000, 16, 4, 12, 4)
    k = cl_params("core50")
    assert (k.new_per_task, k.replays) == (24000, 5000)


def test_cifar10_counts():
    net = build_network("mobilenetv2", "cifar10")
    s = task_schedule(cut_at_layer_id(net, 5), cl_params("cifar10"))
    assert s.iterations_per_epoch == 834                  # ceil(10000 / 12)
    assert s.tail_samples_per_epoch == 10000 + 4 * 834
    assert s.count("B16.expand", "fw") == 4 * 13336 == s.count("B16.expand", "wg") == s.count("B16.expand", "ig")
    assert s.count("B16.expand", "update") == 4 * 834
    assert s.count("B15.expand", "ig") == 0                # reads the latent only
    assert s.count("B15.expand", "wg") == 4 * 13336
    assert s.count("B14.project", "frozen_fw") == 10000    # frozen: once per new sample
    assert s.count("stem.conv", "fw") == 0 and s.count("B14.project", "wg") == 0
    assert s.count("B15.add", "fw") == 4 * 13336 and s.count("B15.add", "bw") == 4 * 13336
    assert s.count("head.pool", "bw") == 4 * 13336


def test_hand_computed_small_schedule():
    net = build_network("phinet", "cifar10")
    params = CLParams("cifar10", new_per_task=25, replays=8, batch=4, batch_replay=1, epochs=2)
    s = task_schedule(cut_at_layer_id(net, 1), params)
    assert s.iterations_per_epoch == 9                     # ceil(25 / 3)
    assert s.tail_samples == 2 * (25 + 9) == 68
    assert (s.count("classifier", "fw"), s.count("classifier", "ig"), s.count("classifier", "update")) == (68, 0, 18)
    assert s.count("B8.pool", "frozen_fw") == 25 and s.count("B8.se_scale", "frozen_fw") == 25


def test_every_op_has_counts():
    net = build_network("phinet", "core50")
    s = task_schedule(cut_at_layer_id(net, 3), cl_params("core50"))
    names = {k.name for k in s.counts}
    assert names == {op.name for op in net.ops}
    assert {k.step for k in s.counts if k.name == "B7.se_reduce"} == {"fw", "wg", "ig", "update"}
    assert s.count("B7.se_scale", "bw") == s.tail_samples


def test_cut_inside_block_schedule():
    net = build_network("phinet", "cifar10")
    s = task_schedule(cut_at_layer(net, "B3.se_reduce"), cl_params("cifar10"))
    assert s.count("B3.se_reduce", "ig") == 0 and s.count("B3.se_expand", "ig") > 0
    assert s.count("B3.se_pool", "bw") == 0               # the gradient would only reach the latent
    assert s.count("B3.dw", "frozen_fw") == 10000


def test_overrides_and_errors():
    assert cl_params("core50", new_per_task=2400).new_per_task == 2400
    assert cl_params("cifar10", replays=None).replays == 3000   # None keeps the default
    with pytest.raises(UserError, match="choose one of: cifar10, core50"):
        cl_params("mnist")
    with pytest.raises(UserError, match="valid: new_per_task"):
        cl_params("cifar10", momentum=0.9)
    assert cl_params("cifar10").lr == 1e-3 and cl_params("core50").lr == 1e-4   # method.md's learning rates
    assert cl_params("cifar10", lr=0.01).lr == 0.01
    with pytest.raises(UserError, match="lr must be a number in"):
        cl_params("cifar10", lr=2.0)
    with pytest.raises(UserError, match="must exceed"):
        cl_params("cifar10", batch=4)
    with pytest.raises(UserError, match="epochs"):
        cl_params("cifar10", epochs=0)
    with pytest.raises(UserError, match="replay buffer"):
        cl_params("cifar10", replays=0)
    assert cl_params("cifar10", replays=0, batch_replay=0).batch_new == 16


def test_task_cycles_and_buffer_writes():
    net = build_network("mobilenetv2", "cifar10")
    s = task_schedule(cut_at_layer_id(net, 2), cl_params("cifar10"))
    ones = {(k.name, k.step): 1 for k in s.counts if k.weight_layer}
    assert task_cycles(s, ones) == sum(k.count for k in s.counts if k.weight_layer)
    twice = {key: 2 for key in ones}
    assert task_cycles(s, twice) == 2 * task_cycles(s, ones)
    del ones[("classifier", "wg")]
    with pytest.raises(UserError, match="classifier/wg"):
        task_cycles(s, ones)
    p = cl_params("cifar10")
    assert [buffer_writes(p, t) for t in (1, 2, 3, 5)] == [3000, 1500, 1000, 600]
    with pytest.raises(UserError):
        buffer_writes(p, 0)
