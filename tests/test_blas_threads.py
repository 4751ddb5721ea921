"""A process that runs simulations keeps NumPy's BLAS to one thread, even when NumPy is not loaded yet."""
from __future__ import annotations

import os
import subprocess
import sys

from harness import ROOT

PROBE = """
import sys
from harness import procs
assert 'numpy' not in sys.modules, 'the probe must start without NumPy loaded'
procs.one_blas_thread()
import numpy
from threadpoolctl import threadpool_info
print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))
"""


def test_one_blas_thread_holds_for_numpy_loaded_later():
    # Two threads by default whatever the machine's core count, so that the limit has something to change.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2", MKL_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1]", out.stdout
