"""How complex elements (c64, c128) look in LLVM: a literal struct of two parts, real first.

Storage and register form are the same struct (``{float, float}`` / ``{double, double}``), so
llvm_types.py can name the type of any element without the complex ops (complex_values.py).
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from hlort import dtypes
from hlort.dtypes import DType

F32 = ir.FloatType()
F64 = ir.DoubleType()
C64_TYPE = ir.LiteralStructType([F32, F32])
C128_TYPE = ir.LiteralStructType([F64, F64])


def complex_type(dtype: DType) -> ir.LiteralStructType:
    """The register (and storage) type of a complex element."""
    return C128_TYPE if dtype is dtypes.C128 else C64_TYPE


def part_dtype(dtype: DType) -> DType:
    """The real type of each part: f32 for c64, f64 for c128."""
    return dtypes.F64 if dtype is dtypes.C128 else dtypes.F32


def complex_constant(dtype: DType, value) -> ir.Constant:
    z = complex(np.asarray(value).astype(dtype.numpy))
    t = F64 if dtype is dtypes.C128 else F32
    return ir.Constant(complex_type(dtype), [ir.Constant(t, z.real), ir.Constant(t, z.imag)])


def complex_elements(dtype: DType, flat: np.ndarray) -> list[ir.Constant]:
    """Constants for a global array of complex elements (one per element of ``flat``)."""
    return [complex_constant(dtype, v) for v in flat.astype(dtype.numpy)]


def parts(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    return b.extract_value(z, 0), b.extract_value(z, 1)


def make(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> ir.Value:
    t = ir.LiteralStructType([re.type, im.type])
    return b.insert_value(b.insert_value(ir.Constant(t, ir.Undefined), re, 0), im, 1)
