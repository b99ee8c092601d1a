"""Uniform quantization (``!quant.uniform``) by dequantize -> float op -> quantize.

A quantized tensor is held as its storage integers (``i8`` for ``!quant.uniform<i8:f32, ...>``).
StableHLO defines an op on quantized tensors as the float op applied to the dequantized operands,
its result quantized to the result type; the importer emits exactly that, in HLO, so every
backend runs quantized programs with no quantized types of its own:

    dequantize(q) = (convert(q, f32) - zero_point) * scale
    quantize(x)   = convert(round_nearest_even(clamp(storage_min, x / scale + zero_point,
                                                      storage_max)), storage)

Per-axis types carry one (scale, zero_point) per index of their quantized dimension.
"""

from __future__ import annotations

import re

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.errors import Unimplemented
from hlort.importers.stablehlo.mlir_ast import QuantType, ScalarType, TensorType
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass

_HEADER = re.compile(
    r"^!quant\.uniform<\s*(?P<storage>[a-z]+\d+)\s*(?:<\s*(?P<min>-?\d+)\s*:\s*(?P<max>-?\d+)\s*>)?"
    r"\s*:\s*(?P<expressed>[a-z]+\d+)\s*(?::\s*(?P<axis>\d+))?\s*,\s*(?P<params>.*)>$",
    re.DOTALL,
)
_PARAM = re.compile(r"([-+]?[\d.]+(?:[eE][-+]?\d+)?)(?:\s*:\s*([-+]?\d+))?")
_STORAGE = {d.stablehlo_name: d for d in dtypes.INTEGER_DTYPES}
_EXPRESSED = {"f32": dtypes.F32, "f16": dtypes.F16, "bf16": dtypes.BF16, "f64": dtypes.F64}


@dataclass(frozen=True)
class QuantParams:
    storage: DType
    expressed: DType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None
    storage_min: int
    storage_max: int


def quant_params(q: QuantType) -> QuantParams:
    m = _HEADER.match(q.text.strip())
    if m is None or m["storage"] not in _STORAGE or m["expressed"] not in _EXPRESSED:
        raise Unimplemented(f"quantized type {q} is not supported by hlort")
    storage = _STORAGE[m["storage"]]
    info = np.iinfo(storage.numpy)
    pairs = _PARAM.findall(m["params"].strip().strip("{}"))
    if not pairs:
        raise Unimplemented(f"quantized type {q}: cannot read its scales")
    return QuantParams(
        storage,
        _EXPRESSED[m["expressed"]],
        tuple(float(s) for s, _ in pairs),
        tuple(int(z) if z else 0 for _, z in pairs),
        int(m["axis"]) if m["axis"] is not None else None,
        int(m["min"]) if m["min"] is not None else int(info.min),
        int(m["max"]) if m["max"] is not None else int(info.max),
    )


def quant_of(t) -> QuantParams | None:
    """The quantization of an MLIR type (a tensor of !quant.uniform), or None."""
    element = t.element if isinstance(t, TensorType) else t
    return quant_params(element) if isinstance(element, QuantType) else None


def expressed_type(t, q: QuantParams) -> TensorType:
    """``tensor<2x!quant.uniform<i8:f32, ...>>`` -> ``tensor<2xf32>``."""
    dims = t.dims if isinstance(t, TensorType) else ()
    return TensorType(dims, ScalarType(q.expressed.stablehlo_name))


def _per_element(b: Builder, x: Instruction, values, q: QuantParams, dt: DType) -> Instruction:
    dims = x.shape.dims
    if q.axis is None or len(values) == 1:
        c = b.constant(np.array(values[0]).astype(dt.numpy))
        return b.broadcast(c, dims, []) if dims else c
    if len(values) != dims[q.axis]:
        raise Unimplemented(
            f"per-axis quantization with {len(values)} scales for dimension "
            f"{q.axis} of size {dims[q.axis]}"
        )
    c = b.constant(np.array(values).astype(dt.numpy))
    return b.broadcast(c, dims, [q.axis])


def dequantize(b: Builder, x: Instruction, q: QuantParams) -> Instruction:
    value = b.convert(x, q.expressed)
    shifted = b.subtract(value, _per_element(b, x, q.zero_points, q, q.expressed))
    return b.multiply(shifted, _per_element(b, x, q.scales, q, q.expressed))


def quantize(b: Builder, x: Instruction, q: QuantParams) -> Instruction:
    if x.shape.dtype != q.expressed:
        x = b.convert(x, q.expressed)
    scaled = b.divide(x, _per_element(b, x, q.scales, q, q.expressed))
    shifted = b.add(scaled, _per_element(b, x, q.zero_points, q, q.expressed))
    low = _per_element(b, x, (q.storage_min,), _scalar_axis(q), q.expressed)
    high = _per_element(b, x, (q.storage_max,), _scalar_axis(q), q.expressed)
    clamped = b.clamp(low, shifted, high)
    rounded = b.op(Opcode.ROUND_NEAREST_EVEN, (clamped,))
    return b.convert(rounded, q.storage)


def _scalar_axis(q: QuantParams) -> QuantParams:
    return QuantParams(q.storage, q.expressed, (1.0,), (0,), None, q.storage_min, q.storage_max)
