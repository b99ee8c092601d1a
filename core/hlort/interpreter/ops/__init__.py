"""Interpreter functions by op family; importing this package registers them all."""

from hlort.interpreter.ops import (  # noqa: F401
    control_flow,
    data_movement,
    elementwise,
    indexing,
    leaves,
    linalg,
    reduction,
)
