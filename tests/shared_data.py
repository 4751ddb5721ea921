"""Where the shared data lives (calibration kit, reference network tables): the one place that
reads PULP_ODL_SHARED. Tests that need the data skip, saying where they looked, when it is absent."""
import os
from pathlib import Path

from harness import ROOT

SHARED = Path(os.environ.get("PULP_ODL_SHARED", ROOT.parent / "shared"))
CALIB = SHARED / "data" / "gvsoc-calibration"
NETWORKS = SHARED / "data" / "networks"
