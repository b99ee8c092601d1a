"""A tiny expression layer over the Builder for writing decompositions as formulas.

``E`` wraps an HLO instruction so ``(x + 1) * (x - 1)`` builds add, subtract and multiply; plain
numbers become constants of the other operand's type and shape. Decompositions in
:mod:`.chlo_elementary` and :mod:`.chlo_special` read close to their math this way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType, finfo
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


class E:
    """An HLO value in a formula."""

    __slots__ = ("b", "i")

    def __init__(self, b: Builder, instr: Instruction):
        self.b = b
        self.i = instr

    # -- properties -----------------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return self.i.shape.dtype

    @property
    def dims(self) -> tuple[int, ...]:
        return self.i.shape.dims

    def const(self, value) -> E:
        """``value`` as a constant of this value's type and shape. Strings: "nan", "inf",
        "-inf", "max" (largest finite), "tiny" (smallest normal), "denorm_min"."""
        dt = self.dtype
        np_type = dt.numpy
        if isinstance(value, str):
            info = finfo(dt.component) if dt.is_floating_or_complex else None
            value = {
                "nan": np.nan,
                "inf": np.inf,
                "-inf": -np.inf,
                "max": info.max if info else None,
                "tiny": info.tiny if info else None,
                "denorm_min": info.smallest_subnormal if info else None,
            }[value]
        arr = np.array(value).astype(np_type)
        c = self.b.constant(arr)
        if self.dims:
            c = self.b.broadcast(c, self.dims, [])
        return E(self.b, c)

    def _wrap(self, other) -> E:
        return other if isinstance(other, E) else self.const(other)

    def op(self, opcode: Opcode, *others) -> E:
        operands = [self.i] + [self._wrap(o).i for o in others]
        return E(self.b, self.b.op(opcode, operands))

    # -- arithmetic -------------------------------------------------------------------------------
    def __add__(self, o) -> E:
        return self.op(Opcode.ADD, o)

    def __radd__(self, o) -> E:
        return self._wrap(o).op(Opcode.ADD, self)

    def __sub__(self, o) -> E:
        return self.op(Opcode.SUBTRACT, o)

    def __rsub__(self, o) -> E:
        return self._wrap(o).op(Opcode.SUBTRACT, self)

    def __mul__(self, o) -> E:
        return self.op(Opcode.MULTIPLY, o)

    def __rmul__(self, o) -> E:
        return self._wrap(o).op(Opcode.MULTIPLY, self)

    def __truediv__(self, o) -> E:
        return self.op(Opcode.DIVIDE, o)

    def __rtruediv__(self, o) -> E:
        return self._wrap(o).op(Opcode.DIVIDE, self)

    def __neg__(self) -> E:
        return self.op(Opcode.NEGATE)

    def __and__(self, o) -> E:
        return self.op(Opcode.AND, o)

    def __or__(self, o) -> E:
        return self.op(Opcode.OR, o)

    def __invert__(self) -> E:
        return self.op(Opcode.NOT)

    def __xor__(self, o) -> E:
        return self.op(Opcode.XOR, o)

    # -- comparisons (methods: == stays identity) -------------------------------------------------
    def cmp(self, direction: str, o) -> E:
        return E(self.b, self.b.compare(self.i, self._wrap(o).i, direction))

    def lt(self, o) -> E:
        return self.cmp("LT", o)

    def le(self, o) -> E:
        return self.cmp("LE", o)

    def gt(self, o) -> E:
        return self.cmp("GT", o)

    def ge(self, o) -> E:
        return self.cmp("GE", o)

    def eq(self, o) -> E:
        return self.cmp("EQ", o)

    def ne(self, o) -> E:
        return self.cmp("NE", o)

    # -- conversions ------------------------------------------------------------------------------
    def convert(self, dt: DType | str) -> E:
        dt = dt if isinstance(dt, DType) else dtypes.from_hlo_name(dt)
        if dt == self.dtype:
            return self
        return E(self.b, self.b.convert(self.i, dt))

    def bitcast(self, dt: DType | str) -> E:
        dt = dt if isinstance(dt, DType) else dtypes.from_hlo_name(dt)
        return E(self.b, self.b.bitcast_convert(self.i, dt))


def _unary(opcode: Opcode) -> Callable[[E], E]:
    return lambda x: x.op(opcode)


abs_ = _unary(Opcode.ABS)
sqrt = _unary(Opcode.SQRT)
log = _unary(Opcode.LOG)
log1p = _unary(Opcode.LOG1P)
exp = _unary(Opcode.EXP)
expm1 = _unary(Opcode.EXPM1)
sin = _unary(Opcode.SINE)
cos = _unary(Opcode.COSINE)
tanh = _unary(Opcode.TANH)
floor = _unary(Opcode.FLOOR)
sign = _unary(Opcode.SIGN)
real = _unary(Opcode.REAL)
imag = _unary(Opcode.IMAG)
is_finite = _unary(Opcode.IS_FINITE)


def atan2(y: E, x) -> E:
    return y.op(Opcode.ATAN2, x)


def maximum(a: E, b) -> E:
    return a.op(Opcode.MAXIMUM, b)


def minimum(a: E, b) -> E:
    return a.op(Opcode.MINIMUM, b)


def power(a: E, b) -> E:
    return a.op(Opcode.POWER, b)


def remainder(a: E, b) -> E:
    return a.op(Opcode.REMAINDER, b)


def complex_(re: E, im: E) -> E:
    return re.op(Opcode.COMPLEX, im)


def select(pred: E, on_true, on_false) -> E:
    """``pred ? on_true : on_false``; either branch may be a plain number."""
    like = on_true if isinstance(on_true, E) else on_false
    t = like._wrap(on_true)
    f = like._wrap(on_false)
    return E(pred.b, pred.b.select(pred.i, t.i, f.i))


def polynomial(x: E, coefficients) -> E:
    """Horner: ``coefficients[0] * x^(n-1) + ... + coefficients[-1]``."""
    p = x.const(coefficients[0])
    for c in coefficients[1:]:
        p = p * x + c
    return p


def with_upcast(x: E, fn: Callable[..., E], *others: E, min_bits: int = 32) -> E:
    """``fn`` evaluated in f32 for f16/bf16 operands, the result cast back (CHLO's policy)."""
    if x.dtype.is_float and x.dtype.bits < min_bits:
        result = fn(x.convert("f32"), *(o.convert("f32") for o in others))
        return result.convert(x.dtype)
    return fn(x, *others)
