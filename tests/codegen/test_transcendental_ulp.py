"""Accuracy of the emitted transcendental functions, in ulp, over the whole float range.

Inputs are uniformly sampled bit patterns (every exponent, both signs, subnormals, inf, NaN)
plus normal-distributed values and hand-picked edges; the reference is the interpreter (NumPy
in f64, rounded). The bounds are the ones float_math's docstring states.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import compile_modules, reference, ulp_distance

from hlort import Builder, shape
from hlort.ir.opcodes import Opcode

F32_BOUNDS = {
    Opcode.EXP: 2, Opcode.LOG: 2, Opcode.TANH: 3, Opcode.LOGISTIC: 3, Opcode.ERF: 1,
    Opcode.SINE: 1, Opcode.COSINE: 1, Opcode.TAN: 1, Opcode.EXPM1: 1, Opcode.LOG1P: 1,
    Opcode.CBRT: 1, Opcode.SQRT: 0, Opcode.RSQRT: 1,
}  # fmt: skip
F64_BOUNDS = {Opcode.EXP: 4, Opcode.LOG: 4, Opcode.EXPM1: 4, Opcode.LOG1P: 4,
              Opcode.LOGISTIC: 4, Opcode.ERF: 4}  # fmt: skip
BINARY_F32 = {Opcode.POWER: 1, Opcode.ATAN2: 1}


def _samples(dtype) -> np.ndarray:
    rng = np.random.default_rng(1234)
    if dtype == np.float32:
        bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    else:
        bits = rng.integers(0, 2**63, size=100_000, dtype=np.uint64) * np.uint64(2)
        bits |= rng.integers(0, 2, size=bits.size, dtype=np.uint64)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 0.625, -0.625, 88.72,
                      88.73, -103.9, -104.1, 709.7, 709.8, -745.1, np.pi / 2, np.pi, 1e-7,
                      -1e-7, 7.9, 9.1, 3.9, 4.1, 1e30, -1e30], dtype=np.float64)  # fmt: skip
    with np.errstate(over="ignore"):
        extra = [edges.astype(dtype), (rng.standard_normal(50_000) * 8).astype(dtype),
                 (rng.standard_normal(20_000) * 1e-3).astype(dtype)]  # fmt: skip
    return np.concatenate([bits.view(dtype), *extra])


X32 = _samples(np.float32)
X64 = _samples(np.float64)
Y32 = np.random.default_rng(7).standard_normal(X32.size).astype(np.float32) * 6
Y32[::7] = np.round(Y32[::7])


def _module(op: Opcode, dtype: str, n: int, arity: int = 1):
    b = Builder(f"{op.name}_{dtype}")
    xs = [b.parameter(shape.array(dtype, [n])) for _ in range(arity)]
    b.build(b.op(op, tuple(xs)))
    return b.module


MODULES = {("f32", op): _module(op, "f32", X32.size) for op in F32_BOUNDS}
MODULES.update({("f64", op): _module(op, "f64", X64.size) for op in F64_BOUNDS})
MODULES.update({("f32b", op): _module(op, "f32", X32.size, 2) for op in BINARY_F32})


@pytest.fixture(scope="module")
def kernels():
    return compile_modules(MODULES)


@pytest.mark.parametrize("op", list(F32_BOUNDS), ids=lambda o: o.value)
def test_f32_ulp(kernels, op):
    got = kernels[("f32", op)](X32)[0]
    want = reference(MODULES[("f32", op)], X32)
    with np.errstate(invalid="ignore"):
        d = ulp_distance(got, want)
    worst = int(np.argmax(d))
    assert d.max() <= F32_BOUNDS[op], (
        f"{op.value}({X32[worst]!r}) = {got[worst]!r}, want {want[worst]!r}")


@pytest.mark.parametrize("op", list(F64_BOUNDS), ids=lambda o: o.value)
def test_f64_ulp(kernels, op):
    got = kernels[("f64", op)](X64)[0]
    want = reference(MODULES[("f64", op)], X64)
    with np.errstate(invalid="ignore"):
        d = ulp_distance(got, want)
    worst = int(np.argmax(d))
    assert d.max() <= F64_BOUNDS[op], (
        f"{op.value}({X64[worst]!r}) = {got[worst]!r}, want {want[worst]!r}")


@pytest.mark.parametrize("op", list(BINARY_F32), ids=lambda o: o.value)
def test_f32_binary_ulp(kernels, op):
    got = kernels[("f32b", op)](X32, Y32)[0]
    want = reference(MODULES[("f32b", op)], X32, Y32)
    with np.errstate(invalid="ignore"):
        d = ulp_distance(got, want)
    worst = int(np.argmax(d))
    assert d.max() <= BINARY_F32[op], (
        f"{op.value}({X32[worst]!r}, {Y32[worst]!r}) = {got[worst]!r}, want {want[worst]!r}")
