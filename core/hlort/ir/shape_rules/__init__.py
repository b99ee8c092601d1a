"""Shape rules, grouped by op family; importing this package registers them all."""

from hlort.ir.shape_rules import (  # noqa: F401
    control_flow,
    data_movement,
    elementwise,
    indexing,
    leaves,
    linalg,
    reduction,
)
