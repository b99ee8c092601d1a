"""hlort-tpusim: a simulated TPU-like accelerator plugin for hlort (platform ``tpusim``)."""

from hlort_tpusim.machine_config import MachineConfig  # noqa: F401
from hlort_tpusim.plugin import TpuSimPlugin  # noqa: F401
from hlort_tpusim.version import __version__  # noqa: F401
