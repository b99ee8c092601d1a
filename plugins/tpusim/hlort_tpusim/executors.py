"""The registry of what the simulator does for each ISA instruction outside vector loops.

Apart from the simulator so that its executor modules (the Simulator class and the
data-movement/matrix-unit mixin) register into it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hlort.ir.op_registry import OpRegistry

Executor = Callable[[Any, Any, dict], None]
EXECUTORS: OpRegistry[str, Executor] = OpRegistry(
    "tpusim executor", modules=("hlort_tpusim.simulator",)
)
"""The simulator's method for each ISA instruction outside vector loops (``isa.OPS``)."""


def executes(*names: str) -> Callable[[Executor], Executor]:
    """Register the decorated method as what the simulator does for the instructions ``names``."""
    return EXECUTORS.register(*names)
