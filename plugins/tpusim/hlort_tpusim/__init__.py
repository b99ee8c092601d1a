"""hlort-tpusim: a simulated TPU-like accelerator plugin for hlort (platform ``tpusim``)."""

__version__ = "0.1.0"

from hlort_tpusim.machine_config import MachineConfig  # noqa: F401
from hlort_tpusim.plugin import TpuSimPlugin  # noqa: F401
