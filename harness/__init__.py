"""pulp-odl: measure what on-device learning costs on a PULP RISC-V MCU, cycle by cycle."""
from pathlib import Path
import os

__version__ = "0.1.0"

# The repository root holds the data the harness reads at run time (platforms/, isa/, pulp_kernels/).
ROOT = Path(os.environ.get("PULP_ODL_ROOT", Path(__file__).resolve().parent.parent))
