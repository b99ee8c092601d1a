"""Typed attribute values of instructions.

Instructions keep attributes in ``instr.attrs`` under the name XLA's HLO text uses for them
(``dimensions``, ``slice``, ``window``, ``to_apply``...), with the value types defined here. The
dimension-number bundles (dot, convolution, gather, scatter) are dataclasses stored under one key
each; the text printer spells them out the way XLA does.

Which keys each opcode takes, their value types and defaults: the op table's attribute schema
(``Opcode.X.info.attrs``, :mod:`hlort.ir.opcodes`; docs/ops.md lists it).
Parameters and constants keep ``parameter_number`` and ``literal`` on the instruction itself.
"""

from __future__ import annotations

import enum

from hlort.dtypes import DType
from hlort.lazy_dataclass import dataclass


class ComparisonDirection(enum.Enum):
    EQ = "EQ"
    NE = "NE"
    LT = "LT"
    LE = "LE"
    GT = "GT"
    GE = "GE"


class ComparisonType(enum.Enum):
    """XLA's Comparison::Type. TOTALORDER orders -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""

    FLOAT = "FLOAT"
    TOTALORDER = "TOTALORDER"
    SIGNED = "SIGNED"
    UNSIGNED = "UNSIGNED"


def default_comparison_type(dtype: DType) -> ComparisonType:
    """XLA's default comparison type of an element type, what an absent attribute means: FLOAT
    for float and complex, SIGNED for signed integers, UNSIGNED for pred and unsigned."""
    if dtype.is_floating_or_complex:
        return ComparisonType.FLOAT
    if dtype.is_signed_integer:
        return ComparisonType.SIGNED
    return ComparisonType.UNSIGNED


class Precision(enum.Enum):
    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


class FftType(enum.Enum):
    FFT = "FFT"
    IFFT = "IFFT"
    RFFT = "RFFT"
    IRFFT = "IRFFT"


class Transpose(enum.Enum):
    NO_TRANSPOSE = "NO_TRANSPOSE"
    TRANSPOSE = "TRANSPOSE"
    ADJOINT = "ADJOINT"


class RngAlgorithm(enum.Enum):
    DEFAULT = "rng_default"  # XLA's CPU and GPU compilers expand it as Philox
    THREE_FRY = "rng_three_fry"
    PHILOX = "rng_philox"


class FusionKind(enum.Enum):
    LOOP = "kLoop"
    INPUT = "kInput"
    OUTPUT = "kOutput"
    CUSTOM = "kCustom"


@dataclass(frozen=True)
class SliceDim:
    start: int
    limit: int
    stride: int = 1


@dataclass(frozen=True)
class PadDim:
    low: int
    high: int
    interior: int = 0


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True)
class DotDimensionNumbers:
    lhs_contracting_dims: tuple[int, ...] = ()
    rhs_contracting_dims: tuple[int, ...] = ()
    lhs_batch_dims: tuple[int, ...] = ()
    rhs_batch_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ConvDimensionNumbers:
    """Which dimension of each of input, kernel and output plays which role.

    Text form ``b01f_01io->b01f``: letters b/f (input, output), i/o (kernel) and digits for the
    spatial dimensions in order.
    """

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple[int, ...]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple[int, ...]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple[int, ...]


@dataclass(frozen=True)
class GatherDimensionNumbers:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def window_from_sizes(
    sizes, strides=None, padding=None, base_dilation=None, window_dilation=None
) -> tuple[WindowDim, ...]:
    """Build a window tuple from per-dimension lists (None = defaults)."""
    n = len(sizes)
    strides = strides or [1] * n
    padding = padding or [(0, 0)] * n
    base_dilation = base_dilation or [1] * n
    window_dilation = window_dilation or [1] * n
    return tuple(
        WindowDim(
            int(sizes[i]),
            int(strides[i]),
            int(padding[i][0]),
            int(padding[i][1]),
            int(window_dilation[i]),
            int(base_dilation[i]),
        )
        for i in range(n)
    )


@dataclass(frozen=True)
class IotaReplicaGroupList:
    """XLA's compact replica groups ``[G,S]<=[dims]T(perm)``: ``G`` groups of ``S`` ids, read
    row by row from ``iota(prod(dims)).reshape(dims).transpose(perm)`` (no ``T(...)``: the
    identity permutation). Kept as written so the printer gives the same text back;
    :meth:`groups` is the explicit list."""

    num_groups: int
    group_size: int
    reshape_dims: tuple[int, ...]
    transpose_perm: tuple[int, ...] = ()

    def groups(self) -> tuple[tuple[int, ...], ...]:
        import numpy as np

        ids = np.arange(self.num_groups * self.group_size).reshape(self.reshape_dims)
        if self.transpose_perm:
            ids = ids.transpose(self.transpose_perm)
        rows = ids.reshape(self.num_groups, self.group_size)
        return tuple(tuple(int(v) for v in row) for row in rows)
