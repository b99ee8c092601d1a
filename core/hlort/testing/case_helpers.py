"""Small builders shared by the case generators: reducer computations, identities, inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, array, scalar
from hlort.testing.op_case import InputsFn
from hlort.testing.values import edge_values, mixed, random_values


def param(b: Builder, dt: DType | str, dims: Sequence[int] = ()) -> Instruction:
    return b.parameter(array(dt, tuple(dims)))


def reducer(b: Builder, opcode: Opcode, dt: DType) -> Computation:
    """``(a, b) -> opcode(a, b)`` on scalars of ``dt``."""
    return b.scalar_computation(opcode, dt, name=f"{opcode.value.replace('-', '_')}_{dt.name}")


def overwrite(b: Builder, dt: DType) -> Computation:
    """``(current, update) -> update``: scatter's plain store."""
    sub = b.sub(f"overwrite_{dt.name}")
    sub.parameter(scalar(dt), "current")
    update = sub.parameter(scalar(dt), "update")
    return b._comp(sub.finish(update))


def identity_value(opcode: Opcode, dt: DType) -> np.ndarray:
    """The identity of ``opcode`` (add, maximum, minimum) as a 0-d array of ``dt``."""
    if opcode in (Opcode.ADD, Opcode.OR):
        return np.zeros((), dt.numpy)
    if opcode in (Opcode.MULTIPLY, Opcode.AND):
        return np.ones((), dt.numpy)
    high = opcode is Opcode.MINIMUM
    if dt.is_pred:
        return np.array(high)
    if dt.is_integer:
        info = dtypes.iinfo(dt)
        return np.array(info.max if high else info.min, dt.numpy)
    if dt.name == "f8e4m3fn":  # no infinity: the extreme finite value is the identity
        fmax = float(ml_dtypes.finfo(dt.numpy).max)
        return np.array(fmax if high else -fmax).astype(dt.numpy)
    return np.array(np.inf if high else -np.inf).astype(dt.numpy)


def identity(b: Builder, opcode: Opcode, dt: DType) -> Instruction:
    return b.constant(identity_value(opcode, dt), dtype=dt)


def random_inputs(low: float | None = None, high: float | None = None) -> InputsFn:
    """Inputs without edge values (floats in [low, high] when given)."""

    def make(rng: np.random.Generator, shapes: Sequence[ArrayShape]) -> list[np.ndarray]:
        return [random_values(s.dtype, s.dims, rng, low, high) for s in shapes]

    return make


def fixed_tail(*values: Callable[[ArrayShape], np.ndarray] | np.ndarray) -> InputsFn:
    """The first parameters get edge-salted random values; the last ones get ``values``."""

    def make(rng: np.random.Generator, shapes: Sequence[ArrayShape]) -> list[np.ndarray]:
        head = shapes[: len(shapes) - len(values)]
        tail = shapes[len(shapes) - len(values) :]
        out = [mixed(s.dtype, s.dims, rng) for s in head]
        for shape, value in zip(tail, values, strict=True):
            v = value(shape) if callable(value) else value
            out.append(np.asarray(v, dtype=shape.dtype.numpy).reshape(shape.dims))
        return out

    return make


def edge_count(dt: DType) -> int:
    return len(edge_values(dt))


S32 = dtypes.S32
