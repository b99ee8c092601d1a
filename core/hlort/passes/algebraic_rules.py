"""Algebraic rules for elementwise and data-movement ops, each exact under IEEE arithmetic.

Every rule returns the instruction replacing ``instr`` or None. A rule holds for every input,
NaN, infinities and signed zeros included, so the interpreter's results stay bit for bit (NaNs
compared as NaNs). Hence what is *not* here: ``x + 0.0 -> x`` for floats (``-0.0 + 0.0`` is
``+0.0``; only ``x + -0.0`` is exact), ``x * 0 -> 0`` and ``x - x -> 0`` for floats (NaN, inf),
and anything that reassociates floats.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hlort.dtypes import DType
from hlort.ir.attributes import SliceDim
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.passes.rewriter import Rewriter, as_float, is_float_zero, splat
from hlort.shape import ArrayShape, major_to_minor

Rule = Callable[[Instruction, Rewriter], "Instruction | None"]


# -- identities of binary ops ---------------------------------------------------------------------
def _components(value: np.ndarray) -> list[np.ndarray]:
    if value.dtype.kind == "c":
        return [value.real, value.imag]
    return [value]


def _adds_nothing(value: np.ndarray, dt: DType) -> bool:
    """x + value == x for every x: -0.0 for floats (and both parts of complex), 0, false."""
    if dt.is_pred:
        return not bool(value)
    if dt.is_integer:
        return int(value) == 0
    return all(is_float_zero(c, negative=True) for c in _components(value))


def _subtracts_nothing(value: np.ndarray, dt: DType) -> bool:
    """x - value == x for every x: +0.0 for floats (x - +0.0 is x + -0.0), 0 for integers."""
    if dt.is_integer:
        return int(value) == 0
    if dt.is_pred:
        return False
    return all(is_float_zero(c, negative=False) for c in _components(value))


def _is_one(value: np.ndarray, dt: DType) -> bool:
    """x * value == x and x / value == x for every x (complex excluded: (a+bi)(1+0i) turns an
    infinite part into NaN)."""
    if dt.is_pred:
        return bool(value)
    if dt.is_integer:
        return int(value) == 1
    if dt.is_float:
        return as_float(value) == 1.0
    return False


def _all_ones(value: np.ndarray, dt: DType) -> bool:
    if dt.is_pred:
        return bool(value)
    return bool(np.asarray(value).astype(dt.numpy) == np.invert(np.zeros((), dt.numpy)))


def _is_zero_bits(value: np.ndarray, dt: DType) -> bool:
    return (dt.is_pred or dt.is_integer) and not bool(value)


def _identity_rule(test, either_side: bool):
    """x op c -> x (and c op x -> x when ``either_side``) when ``test(c)`` holds."""

    def rule(instr: Instruction, rw: Rewriter) -> Instruction | None:
        dt = instr.shape.dtype
        x, c = instr.operands
        pairs = [(x, c), (c, x)] if either_side else [(x, c)]
        for keep, other in pairs:
            value = splat(other)
            if value is not None and keep.shape == instr.shape and test(value, dt):
                return keep
        return None

    return rule


def _power_of_two_reciprocal(value: np.ndarray, dt: DType) -> np.ndarray | None:
    """1 / value when value is a power of two whose reciprocal the type holds exactly (then
    ``x / value`` and ``x * (1 / value)`` are the same real number, so they round alike for every
    x: NaN, infinities, signed zeros and subnormal results included); else None."""
    if not dt.is_float or dt.name not in _FLOAT_DIGITS:
        return None
    v = as_float(value)
    if not np.isfinite(v) or v == 0.0 or abs(np.frexp(v)[0]) != 0.5:
        return None
    inverse = 1.0 / v
    with np.errstate(over="ignore"):
        exact = np.asarray(inverse).astype(dt.numpy)
    if as_float(exact) != inverse:
        return None  # 1 / value overflows or underflows the type
    return exact


def _divide_by_power_of_two(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """x / 2^k -> x * 2^-k (XLA's rule too): one multiply instead of a division per element
    (softmax's scores / sqrt(64), a mean's / 256)."""
    x, c = instr.operands
    value = splat(c)
    if value is None or not isinstance(instr.shape, ArrayShape):
        return None
    inverse = _power_of_two_reciprocal(value, instr.shape.dtype)
    if inverse is None:
        return None
    scale = rw.broadcast_scalar(rw.constant(inverse), instr.shape)
    return rw.make(Opcode.MULTIPLY, [x, scale])


def _involution(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """negate(negate(x)) -> x, not(not(x)) -> x (exact also for wrapping integers)."""
    inner = instr.operands[0]
    if inner.opcode is instr.opcode:
        return inner.operands[0]
    return None


# -- select ---------------------------------------------------------------------------------------
def _select(instr: Instruction, rw: Rewriter) -> Instruction | None:
    pred, on_true, on_false = instr.operands
    if on_true is on_false:
        return on_true
    value = splat(pred)
    if value is not None:
        return on_true if bool(value) else on_false
    return None


# -- convert --------------------------------------------------------------------------------------
_FLOAT_DIGITS = {"f8e4m3fn": 4, "f8e5m2": 3, "bf16": 8, "f16": 11, "f32": 24, "f64": 53}
_FLOAT_EMAX = {"f8e4m3fn": 8, "f8e5m2": 15, "bf16": 127, "f16": 15, "f32": 127, "f64": 1023}
_FLOAT_EMIN = {
    "f8e4m3fn": -9,
    "f8e5m2": -16,
    "bf16": -133,
    "f16": -24,
    "f32": -149,
    "f64": -1074,
}  # smallest subnormal exponent


def is_exact_widening(src: DType, dst: DType) -> bool:
    """Every value of ``src`` converts to ``dst`` exactly (so a later conversion sees it intact)."""
    if src == dst:
        return True
    if src.is_pred:
        return dst.is_integer or dst.is_float
    if src.is_integer and dst.is_integer:
        if src.is_signed_integer and dst.is_unsigned_integer:
            return False
        extra = 1 if src.is_unsigned_integer and dst.is_signed_integer else 0
        return dst.bits >= src.bits + extra
    if src.is_integer and dst.is_float:
        magnitude_bits = src.bits - (1 if src.is_signed_integer else 0)
        return magnitude_bits <= _FLOAT_DIGITS.get(dst.name, 0)
    if src.is_float and dst.is_float:
        if src.name not in _FLOAT_DIGITS or dst.name not in _FLOAT_DIGITS:
            return False
        if src.name == "f8e4m3fn" and dst.name == "f8e5m2":
            return False
        return (
            _FLOAT_DIGITS[dst.name] >= _FLOAT_DIGITS[src.name]
            and _FLOAT_EMAX[dst.name] >= _FLOAT_EMAX[src.name]
            and _FLOAT_EMIN[dst.name] <= _FLOAT_EMIN[src.name]
        )
    return False


def _convert(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    if x.shape.dtype == instr.shape.dtype:
        return x
    if x.opcode is Opcode.CONVERT:
        source = x.operands[0]
        if is_exact_widening(source.shape.dtype, x.shape.dtype):
            if source.shape.dtype == instr.shape.dtype:
                return source
            return rw.make(Opcode.CONVERT, [source], instr.shape)
    return None


# -- reshape, transpose, broadcast ----------------------------------------------------------------
def _reshape(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    if x.shape.dims == instr.shape.dims:
        return x
    if x.opcode is Opcode.RESHAPE:
        return rw.make(Opcode.RESHAPE, [x.operands[0]], instr.shape)
    if x.opcode is Opcode.BROADCAST and not x.operands[0].shape.dims:
        return rw.make(Opcode.BROADCAST, [x.operands[0]], instr.shape, dimensions=())
    return None


def _bitcast(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """XLA's layout-level reshape as logical ops: transpose to the operand's memory order,
    reshape, transpose from the result's memory order (identity transposes left out)."""
    x = instr.operands[0]
    source, result = x.shape, instr.shape
    if not isinstance(source, ArrayShape) or not isinstance(result, ArrayShape):
        return None
    into, outof = major_to_minor(source), major_to_minor(result)
    if source.dtype != result.dtype:  # same width (the shape rule): the bits, then the layout
        x = rw.make(Opcode.BITCAST_CONVERT, [x], ArrayShape(result.dtype, source.dims))
    y = x if into == tuple(range(source.rank)) else rw.make(Opcode.TRANSPOSE, [x], dimensions=into)
    laid_out = ArrayShape(result.dtype, tuple(result.dims[d] for d in outof))
    y = rw.make(Opcode.RESHAPE, [y], laid_out)
    if outof != tuple(range(result.rank)):
        y = rw.make(Opcode.TRANSPOSE, [y], dimensions=tuple(int(d) for d in np.argsort(outof)))
    return y


def _transpose(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    perm = tuple(instr.attrs["dimensions"])
    if perm == tuple(range(len(perm))):
        return x
    if x.opcode is Opcode.TRANSPOSE:
        inner = tuple(x.attrs["dimensions"])
        composed = tuple(inner[p] for p in perm)
        if composed == tuple(range(len(composed))):
            return x.operands[0]
        return rw.make(Opcode.TRANSPOSE, [x.operands[0]], dimensions=composed)
    if x.opcode is Opcode.BROADCAST and not x.operands[0].shape.dims:
        return rw.make(Opcode.BROADCAST, [x.operands[0]], instr.shape, dimensions=())
    return None


def _broadcast(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    dims = tuple(instr.attrs["dimensions"])
    if x.shape.dims == instr.shape.dims and dims == tuple(range(len(dims))):
        return x
    if x.opcode is Opcode.BROADCAST:
        inner = tuple(x.attrs["dimensions"])
        return rw.make(
            Opcode.BROADCAST, [x.operands[0]], instr.shape, dimensions=tuple(dims[d] for d in inner)
        )
    return None


# -- slice, pad, concatenate ----------------------------------------------------------------------
def _slice(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    spec: tuple[SliceDim, ...] = tuple(instr.attrs["slice"])
    dims = x.shape.dims
    if all(
        s.start == 0 and s.stride == 1 and s.limit == d for s, d in zip(spec, dims, strict=True)
    ):
        return x
    if x.opcode is Opcode.SLICE:
        composed = []
        for outer, inner, size in zip(spec, x.attrs["slice"], instr.shape.dims, strict=True):
            start = inner.start + outer.start * inner.stride
            stride = inner.stride * outer.stride
            if size == 0:
                start = min(start, x.operands[0].shape.dims[len(composed)])
            limit = start + (size - 1) * stride + 1 if size else start
            composed.append(SliceDim(start, limit, stride if size > 1 else 1))
        return rw.make(Opcode.SLICE, [x.operands[0]], slice=tuple(composed))
    if x.opcode is Opcode.CONCATENATE:
        return _slice_of_concatenate(instr, x, spec, rw)
    return None


def _slice_of_concatenate(instr, concat, spec, rw: Rewriter) -> Instruction | None:
    """A slice that reads one operand of a concatenate reads that operand directly."""
    (axis,) = concat.attrs["dimensions"]
    s = spec[axis]
    size = instr.shape.dims[axis]
    if size == 0:
        return None
    first, last = s.start, s.start + (size - 1) * s.stride
    offset = 0
    for op in concat.operands:
        extent = op.shape.dims[axis]
        if offset <= first and last < offset + extent:
            new = list(spec)
            new[axis] = SliceDim(first - offset, last - offset + 1, s.stride)
            return rw.make(Opcode.SLICE, [op], slice=tuple(new))
        offset += extent
    return None


def _pad(instr: Instruction, rw: Rewriter) -> Instruction | None:
    if all(p.low == 0 and p.high == 0 and p.interior == 0 for p in instr.attrs["padding"]):
        return instr.operands[0]
    return None


def _concatenate(instr: Instruction, rw: Rewriter) -> Instruction | None:
    if len(instr.operands) == 1:
        return instr.operands[0]
    return None


RULES: dict[Opcode, tuple[Rule, ...]] = {
    Opcode.ADD: (_identity_rule(_adds_nothing, either_side=True),),
    Opcode.SUBTRACT: (_identity_rule(_subtracts_nothing, either_side=False),),
    Opcode.MULTIPLY: (_identity_rule(_is_one, either_side=True),),
    Opcode.DIVIDE: (_identity_rule(_is_one, either_side=False), _divide_by_power_of_two),
    Opcode.AND: (_identity_rule(_all_ones, either_side=True),),
    Opcode.OR: (_identity_rule(_is_zero_bits, either_side=True),),
    Opcode.XOR: (_identity_rule(_is_zero_bits, either_side=True),),
    Opcode.NEGATE: (_involution,),
    Opcode.NOT: (_involution,),
    Opcode.SELECT: (_select,),
    Opcode.CONVERT: (_convert,),
    Opcode.RESHAPE: (_reshape,),
    Opcode.BITCAST: (_bitcast,),
    Opcode.TRANSPOSE: (_transpose,),
    Opcode.BROADCAST: (_broadcast,),
    Opcode.SLICE: (_slice,),
    Opcode.PAD: (_pad,),
    Opcode.CONCATENATE: (_concatenate,),
}
