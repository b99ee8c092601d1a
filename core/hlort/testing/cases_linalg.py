"""Case generators for dot, convolution, cholesky, triangular-solve and fft.

Inputs are moderate random values (no infinities) so the ``accumulate`` tolerance measures the
backend's arithmetic, not cancellation; cholesky gets symmetric positive definite matrices and
triangular-solve well-conditioned triangles, where the answer is well defined.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.attributes import ConvDimensionNumbers, DotDimensionNumbers, window_from_sizes
from hlort.ir.opcodes import Opcode
from hlort.testing.case_helpers import param, random_inputs
from hlort.testing.op_case import CaseSpec, generates
from hlort.testing.values import random_values

_SMALL = random_inputs(-2.0, 2.0)
_INT_SMALL = random_inputs(-8, 8)


def _inputs(dt: DType):
    return _INT_SMALL if dt.is_integer else _SMALL


@generates(Opcode.DOT)
def dot(op: Opcode, dt: DType) -> list[CaseSpec]:
    def general(lhs_dims, rhs_dims, dnums, preferred=None):
        return lambda b: b.dot_general(
            param(b, dt, lhs_dims), param(b, dt, rhs_dims), dnums, preferred=preferred
        )

    mm = DotDimensionNumbers((1,), (0,))
    specs = [
        CaseSpec("matvec", general((3, 4), (4,), mm), inputs=_inputs(dt)),
        CaseSpec("matmul", general((2, 3), (3, 4), mm), inputs=_inputs(dt)),
        CaseSpec(
            "batch",
            general((2, 3, 4), (2, 4, 5), DotDimensionNumbers((2,), (1,), (0,), (0,))),
            inputs=_inputs(dt),
        ),
        CaseSpec("empty-k", general((2, 0), (0, 3), mm)),
    ]
    if dt.is_integer:  # full-range values: products and sums wrap around
        specs.append(CaseSpec("wrapping", general((2, 3), (3, 2), mm), inputs=random_inputs()))
    if dt.is_float and dt.name != "f32":  # low-precision inputs, f32 result (mixed precision)
        specs.append(CaseSpec("to-f32", general((2, 3), (3, 4), mm, dtypes.F32), inputs=_SMALL))
    return specs


# NHWC input, HWIO kernel, NHWC output: "b01f_01io->b01f" in XLA's notation.
_NHWC = ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))


@generates(Opcode.CONVOLUTION)
def convolution(op: Opcode, dt: DType) -> list[CaseSpec]:
    def conv(lhs_dims, rhs_dims, window, groups=1):
        return lambda b: b.convolution(
            param(b, dt, lhs_dims),
            param(b, dt, rhs_dims),
            window,
            _NHWC,
            feature_group_count=groups,
        )

    return [
        CaseSpec(
            "basic", conv((1, 5, 5, 2), (3, 3, 2, 3), window_from_sizes([3, 3])), inputs=_inputs(dt)
        ),
        CaseSpec(
            "strided-padded",
            conv(
                (2, 6, 5, 2),
                (3, 2, 2, 2),
                window_from_sizes([3, 2], [2, 1], [(1, 1), (0, 1)], window_dilation=[1, 2]),
            ),
            inputs=_inputs(dt),
        ),
        CaseSpec(
            "grouped",
            conv((1, 4, 4, 4), (2, 2, 2, 4), window_from_sizes([2, 2]), 2),
            inputs=_inputs(dt),
        ),
    ]


def _spd(rng: np.random.Generator, dt: DType, dims) -> np.ndarray:
    n = dims[-1]
    m = random_values(dt, dims, rng, -1.0, 1.0).astype(
        np.complex128 if dt.is_complex else np.float64
    )
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    return a.astype(dt.numpy)


@generates(Opcode.CHOLESKY)
def cholesky(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims, lower):
        return lambda b: b.cholesky(param(b, dt, dims), lower=lower)

    def spd(rng, shapes):
        return [_spd(rng, dt, shapes[0].dims)]

    return [
        CaseSpec("lower", build_for((3, 3), True), inputs=spd),
        CaseSpec("upper-batched", build_for((2, 4, 4), False), inputs=spd),
    ]


def _triangle(rng: np.random.Generator, dt: DType, dims, lower: bool) -> np.ndarray:
    n = dims[-1]
    a = random_values(dt, dims, rng, -0.5, 0.5).astype(
        np.complex128 if dt.is_complex else np.float64
    )
    a = np.tril(a) if lower else np.triu(a)
    a = a + 2.0 * np.eye(n)
    return a.astype(dt.numpy)


@generates(Opcode.TRIANGULAR_SOLVE)
def triangular_solve(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(b_dims, left, lower, unit, transpose):
        def build(b: Builder):
            return b.triangular_solve(
                param(b, dt, (3, 3)), param(b, dt, b_dims), left, lower, unit, transpose
            )

        def inputs(rng, shapes):
            return [_triangle(rng, dt, (3, 3), lower), random_values(dt, b_dims, rng, -2.0, 2.0)]

        return build, inputs

    variants = {
        "left-lower": ((3, 2), True, True, False, "NO_TRANSPOSE"),
        "right-upper-transpose": ((2, 3), False, False, False, "TRANSPOSE"),
        "left-unit-adjoint": ((3, 4), True, True, True, "ADJOINT"),
    }
    specs = []
    for name, args in variants.items():
        build, inputs = build_for(*args)
        specs.append(CaseSpec(name, build, inputs=inputs))
    return specs


@generates(Opcode.FFT)
def fft(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims, kind, length):
        return lambda b: b.fft(param(b, dt, dims), kind, length)

    return [
        CaseSpec("fft", build_for((4, 8), "FFT", [8]), inputs=_SMALL),
        CaseSpec("ifft-2d", build_for((4, 8), "IFFT", [4, 8]), inputs=_SMALL),
        CaseSpec("rfft", build_for((3, 8), "RFFT", [8]), inputs=_SMALL),
        CaseSpec("irfft", build_for((3, 5), "IRFFT", [8]), inputs=_SMALL),
    ]
