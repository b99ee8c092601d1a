"""The ``tpusim`` platform's plugin object (entry point ``hlort.plugins: tpusim``).

Importing this module is cheap (the simulator loads in ``create_client``). Its priority is
below the interpreter's: a simulator is chosen only when named (``--platform tpusim``,
``HLORT_PLATFORMS=tpusim``, ``hlort.backend("tpusim")``), never as a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.plugin.api import AttributeValue, Plugin
from hlort.plugin.capabilities import Capabilities

PLATFORM = "tpusim"


class TpuSimPlugin(Plugin):
    name = PLATFORM
    api_version = (1, 0)
    priority = -2000

    def attributes(self) -> Mapping[str, AttributeValue]:
        from hlort_tpusim.version import __version__

        return {
            "version": __version__,
            "vendor": "hlort",
            "description": "simulated TPU-like chip (systolic MXU, HBM, DMA)",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
            cost_analysis=True,
            compiled_memory_stats=True,
            multi_device=True,
            artifacts=True,
            extra={"execution_profile": True, "simulated": True},
        )

    def conformance_profile(self):
        """bf16-input tolerances for dot and convolution (see conformance_profile.py)."""
        from hlort_tpusim.conformance_profile import conformance_profile

        return conformance_profile()

    def create_client(self, options: Mapping[str, Any] | None = None):
        from hlort_tpusim.client import TpuSimClient

        return TpuSimClient(self, options)
