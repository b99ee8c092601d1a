"""Shape rules, grouped by op family; importing this package registers them all."""

from hlort.ir.shape_rules import (  # noqa: F401
    collectives,
    control_flow,
    conversions,
    convolution,
    custom_call,
    data_movement,
    elementwise,
    fft,
    indexing,
    leaves,
    linalg,
    reduction,
    rng,
)
