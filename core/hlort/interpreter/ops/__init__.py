"""Interpreter functions by op family; importing this package registers them all."""

from hlort.interpreter.ops import (  # noqa: F401
    collectives,
    control_flow,
    conversions,
    convolution,
    custom_call,
    data_movement,
    elementwise,
    fft,
    indexing,
    integer_arith,
    leaves,
    linalg,
    reduce_window,
    reduction,
    rng_bit_generator,
    scatter,
    sort,
    special_functions,
    transcendental,
)
