"""hlort-tpusim: a simulated TPU-like accelerator plugin for hlort (platform ``tpusim``).

``MachineConfig`` is loaded on first use (PEP 562): plugin discovery imports this package in
every process, whatever platform it compiles for.
"""

from hlort_tpusim.plugin import TpuSimPlugin  # noqa: F401
from hlort_tpusim.version import __version__  # noqa: F401


def __getattr__(name: str):
    if name == "MachineConfig":
        from hlort_tpusim.machine_config import MachineConfig

        return MachineConfig
    raise AttributeError(f"module 'hlort_tpusim' has no attribute {name!r}")
