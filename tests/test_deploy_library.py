"""The deployed programs' compute library (pulp_kernels/deploy/odl_deploy.c) tested routine by routine on
the simulator, bit for bit against NumPy, where a stage's check (tolerances against a float64 reference)
could not tell a rounding apart."""
from __future__ import annotations

import numpy as np
import pytest

from harness import platform as platmod, toolchain
from harness.backends import embedded
from harness.deploy import reference, runner
from tests.conftest import needs_clang
from tests.helpers import parse_lines

ACTS = {"relu": 4, "relu6": 1, "hswish": 2, "sigmoid": 3}   # ODL_ACT_* (odl_deploy.h)
ROWS, COLS, PITCH = 7, 13, 14                 # an odd count: the last lane of a row goes alone, its pad kept
PAD = 0x1234                                  # what the pad lane holds before and after

PROGRAM = r"""
#include <pmsis.h>
#include "odl_deploy.h"

/* what a deployed program's main defines for the library (harness/deploy/program.py) */
odl_times_t odl_tm;
struct pi_device odl_ram_dev, odl_flash_dev;
%(arrays)s
static f16 g[2][%(n)d + 2], st[2][%(n)d + 2];   /* [0]: rows on words; [1]: a half past a word */
static int act_now;

static void work(void *arg) {
  (void)arg;
  odl_act_bw_tile(g[0], %(pitch)d, st[0], %(pitch)d, %(rows)d, %(cols)d, act_now);
  odl_act_bw_tile(g[1] + 1, %(pitch)d, st[1] + 1, %(pitch)d, %(rows)d, %(cols)d, act_now);
}
static void entry(void *arg) { (void)arg; pi_cl_team_fork(0, work, 0); }

int main(void) {
  static const int acts[] = {%(acts)s};
  static const char *names[] = {%(names)s};
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task task;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  for (unsigned a = 0; a < sizeof acts / sizeof acts[0]; a++) {
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < %(n)d; i++) {
        g[k][i + k] = g_in[i];
        st[k][i + k] = st_in[i];
      }
    act_now = acts[a];
    pi_cluster_send_task_to_cl(&cl, pi_cluster_task(&task, entry, 0));
    for (int k = 0; k < 2; k++) {
      printf("%%s.%%d", names[a], k);
      for (int i = 0; i < %(n)d; i++) printf(" %%x", g[k][i + k]);
      printf("\n");
    }
  }
  return 0;
}
"""


def _f16(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint16).view(np.float16)


def _expected(act: str, g: np.ndarray, st: np.ndarray) -> np.ndarray:
    """The routine's values as bits: relu and relu6 keep or clear g; hswish and sigmoid round in FP32 as
    odl_act_grad does (hswish: (2 st + 3) exact, times 1/6 rounded, times g rounded, then to FP16)."""
    s = _f16(st).astype(np.float32)
    if act == "relu":
        return np.where(s > 0, g, 0).astype(np.uint16)
    if act == "relu6":
        return np.where((s > 0) & (s < 6), g, 0).astype(np.uint16)
    with np.errstate(all="ignore"):
        if act == "sigmoid":   # from the post-activation y: (g y) (1 - y)
            return ((_f16(g).astype(np.float32) * s) * (np.float32(1) - s)).astype(np.float16).view(np.uint16)
    mid = (np.float32(2) * s + np.float32(3)) * np.float32(1.0 / 6.0)
    d = np.where(s > 3, np.float32(1), np.where(s >= -3, mid, np.float32(0)))
    with np.errstate(all="ignore"):
        return (_f16(g).astype(np.float32) * d.astype(np.float32)).astype(np.float16).view(np.uint16)


@needs_clang
def test_activation_backward_by_pairs_of_lanes_equals_one_lane_at_a_time(tmp_path):
    """odl_act_bw_tile takes rows that start on a word two lanes at a time (relu, relu6: a mask from one
    compare of both lanes; hswish, sigmoid: FP32 per lane, packed with one rounding each) and others one lane at a
    time: both give the FP32 model's bits, at the edges of the derivatives too, and leave the pad lane."""
    rng = np.random.default_rng(7)
    n = ROWS * PITCH
    edges = np.array([3.0, -3.0, -1.5, 0.0, -0.0, 6.0, 2.9990234375, -2.9990234375, 3.001953125, 6.00390625,
                      5.99609375, 1e-7, -1e-7, 65504.0, -65504.0, 1.0, -1.0], dtype=np.float16).view(np.uint16)
    st = rng.uniform(-8, 8, n).astype(np.float16).view(np.uint16)
    st[: len(edges)] = edges
    st[PITCH: PITCH + len(edges)] = edges[::-1]
    g = rng.normal(0, 2, n).astype(np.float16).view(np.uint16)
    g[::5] = rng.integers(0, 1 << 16, len(g[::5]))    # any bits: subnormals, negative zeros, large values
    g[rng.integers(0, n, 6)] = 0x7c00                 # an infinite gradient stays one where kept
    g = np.where((g & 0x7c00) == 0x7c00, np.uint16(0x3c00), g)   # no NaN or inf to compare bit for bit
    pad = np.zeros(n, bool)
    pad[COLS::PITCH] = True
    g[pad] = PAD
    arrays = (f"static const f16 g_in[{n}] = {{{', '.join(map(str, g))}}};\n"
              f"static const f16 st_in[{n}] = {{{', '.join(map(str, st))}}};")
    src = tmp_path / "act_bw.c"
    src.write_text(PROGRAM % {"arrays": arrays, "n": n, "rows": ROWS, "cols": COLS, "pitch": PITCH,
                              "acts": ", ".join(str(v) for v in ACTS.values()),
                              "names": ", ".join(f'"{k}"' for k in ACTS)})
    plat = platmod.load("paper")
    elf = toolchain.build([src], tmp_path / "act_bw.elf", plat, opt="2", include_dirs=[runner.INCLUDE],
                          defines=runner.DEFINES, fixed=[runner.LIBRARY, runner._shared("kernels.S", runner.asm_kernels())])
    res = embedded.run(elf, plat)
    assert res["status"] == "exit" and res["exit_code"] == 0, res.get("fault")
    out = parse_lines(res["stdout"])
    for act in ACTS:
        want = np.where(pad, g, _expected(act, g, st))
        for k in (0, 1):
            got = np.array(out[f"{act}.{k}"], dtype=np.uint16)
            bad = np.flatnonzero(got != want)
            assert not len(bad), (f"{act} ({'on words' if k == 0 else 'a half past a word'}): "
                                  + ", ".join(f"[{i}] st {st[i]:04x} g {g[i]:04x} got {got[i]:04x} want {want[i]:04x}"
                                              for i in bad[:8]))


@pytest.mark.parametrize("act", sorted(ACTS))
def test_the_model_is_the_reference_derivative(act):
    """The bit model above against the stage checks' float64 reference (harness.deploy.reference.act_bw):
    the same derivative, within one rounding of the product."""
    rng = np.random.default_rng(11)
    st = rng.uniform(-8, 8, 4000).astype(np.float16)
    st[:6] = [3.0, -3.0, -1.5, 0.0, 6.0, 4.0]
    g = rng.normal(0, 2, 4000).astype(np.float16)
    got = _f16(_expected(act, g.view(np.uint16), st.view(np.uint16))).astype(np.float64)
    ref = reference.act_bw(act, st.astype(np.float64), g.astype(np.float64))
    assert np.all(np.abs(got - ref) <= 2.0 ** -10 * np.abs(ref) + 2.0 ** -24)
