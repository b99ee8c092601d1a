"""Interpreter: arithmetic, logical, rounding, comparison, select, clamp and map.

Semantics are XLA's (its HloEvaluator and CPU emitter); where StableHLO says otherwise the choice
is noted. Integer arithmetic wraps. Floating-point results are IEEE: f32/f64/c64/c128 use NumPy's
own loops (one ufunc call, so a large add costs what NumPy's costs), narrower types are computed in
f32 and rounded, which is exact for the operations here. Results are always ndarrays of exactly
the instruction's dtype, 0-d arrays for scalars. Functions broadcast, so :func:`_map` can run a
scalar computation on whole arrays at once.
"""

from __future__ import annotations

import numpy as np

from hlort.dtypes import from_numpy
from hlort.errors import Unimplemented
from hlort.interpreter.ops.float_rounding import (
    F32,
    NARROW_FLOATS,
    apply_native,
    is_complex,
    widen,
)
from hlort.interpreter.ops.integer_arith import divide_int, remainder_int
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import ComparisonDirection, ComparisonType
from hlort.ir.opcodes import Opcode


def out_dtype(instr) -> np.dtype:
    return instr.shape.dtype.numpy


def exact(x: np.ndarray) -> np.ndarray:
    """Narrow floats as f32 (exactly); other arrays unchanged. For ops that cannot round."""
    return x.astype(F32) if x.dtype in NARROW_FLOATS else x


def _integer_or_native(fn, dtype: np.dtype, *xs: np.ndarray) -> np.ndarray:
    """pred, integers (wrapping) and complex in their own dtype; floats via apply_native."""
    if dtype.kind in "biuc":
        with np.errstate(all="ignore"):
            return np.asarray(fn(*xs), dtype=dtype)
    return apply_native(fn, dtype, *xs)


def _sign_bit(x: np.ndarray, flip: bool) -> np.ndarray:
    """A real float's sign bit flipped or cleared, every other bit kept: IEEE 754's negate and
    abs (5.5.1) and LLVM's fneg/fabs, so NaN payloads (signaling ones too) survive."""
    bits = np.asarray(x).view(f"u{x.dtype.itemsize}")  # a view keeps 0-d arrays 0-d
    sign = bits.dtype.type(1 << (8 * x.dtype.itemsize - 1))
    return np.asarray(bits ^ sign if flip else bits & ~sign).view(x.dtype)


# -- unary ----------------------------------------------------------------------------------------
@evaluates(Opcode.ABS)
def _abs(ev, instr, x):
    """|INT_MIN| wraps to INT_MIN; complex magnitudes are computed in c128 and rounded."""
    if is_complex(x.dtype):
        with np.errstate(all="ignore"):
            return np.asarray(np.abs(widen(x)).astype(out_dtype(instr)))
    if from_numpy(x.dtype).is_float:
        return _sign_bit(x, flip=False)
    return _integer_or_native(np.abs, x.dtype, x)


@evaluates(Opcode.NEGATE)
def _negate(ev, instr, x):
    if from_numpy(x.dtype).is_float:
        return _sign_bit(x, flip=True)
    return _integer_or_native(np.negative, x.dtype, x)


@evaluates(Opcode.SIGN)
def _sign(ev, instr, x):
    """-1/0/+1; floats keep the sign of zero and NaN stays NaN; complex: x/|x| (0 at 0)."""
    dt = x.dtype
    with np.errstate(all="ignore"):
        if from_numpy(dt).is_integer:
            return np.asarray(np.sign(x), dtype=dt)
        if is_complex(dt):
            w = widen(x)
            mag = np.abs(w)
            return np.asarray(np.where(mag == 0, 0, w / np.where(mag == 0, 1, mag)), dtype=dt)
        v = exact(x)
        r = np.copysign((v != 0).astype(v.dtype), v)
        return np.asarray(np.where(np.isnan(v), v, r).astype(dt))


@evaluates(Opcode.NOT)
def _not(ev, instr, x):
    return np.asarray(np.logical_not(x) if x.dtype == np.bool_ else np.invert(x))


@evaluates(Opcode.IS_FINITE)
def _is_finite(ev, instr, x):
    return np.asarray(np.isfinite(exact(x)))


@evaluates(Opcode.REAL)
def _real(ev, instr, x):
    return np.asarray(np.real(x), dtype=out_dtype(instr))


@evaluates(Opcode.IMAG)
def _imag(ev, instr, x):
    """The imaginary part; +0 for real operands (XLA)."""
    if is_complex(x.dtype):
        return np.asarray(np.imag(x), dtype=out_dtype(instr))
    return np.zeros(x.shape, dtype=x.dtype)


@evaluates(Opcode.COPY)
def _copy(ev, instr, x):
    if isinstance(x, tuple):
        return tuple(np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in x)
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """Round half away from zero without the ``floor(x + 0.5)`` error near 0.5 - ulp."""
    t = np.trunc(v)
    r = np.where(np.abs(v - t) >= 0.5, t + np.sign(v), t)
    return np.copysign(r, v)  # -0.4 -> -0.0; NaN stays NaN (inf - inf is NaN, so t = inf stays)


@evaluates(Opcode.FLOOR, Opcode.CEIL, Opcode.ROUND_NEAREST_AFZ, Opcode.ROUND_NEAREST_EVEN)
def _rounding(ev, instr, x):
    """Rounding to an integral value is exact in every float type, so f32 is enough for narrow."""
    fn = {
        Opcode.FLOOR: np.floor,
        Opcode.CEIL: np.ceil,
        Opcode.ROUND_NEAREST_EVEN: np.rint,
        Opcode.ROUND_NEAREST_AFZ: _round_half_away,
    }[instr.opcode]
    return apply_native(fn, x.dtype, x)


# -- binary arithmetic ----------------------------------------------------------------------------
@evaluates(Opcode.ADD)
def _add(ev, instr, a, b):
    """pred: logical or (NumPy's bool add)."""
    return _integer_or_native(np.add, a.dtype, a, b)


@evaluates(Opcode.SUBTRACT)
def _subtract(ev, instr, a, b):
    return _integer_or_native(np.subtract, a.dtype, a, b)


@evaluates(Opcode.MULTIPLY)
def _multiply(ev, instr, a, b):
    """pred: logical and. Complex: (ac - bd) + (ad + bc)i, each product rounded (XLA's emitter).

    Spelled out on the parts because NumPy's own complex loop fuses multiply-adds on some CPUs
    (AVX-512) and some lengths, which would make the reference depend on the machine.
    """
    if is_complex(a.dtype):
        with np.errstate(all="ignore"):
            out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)), dtype=a.dtype)
            out.real = a.real * b.real - a.imag * b.imag
            out.imag = a.real * b.imag + a.imag * b.real
        return out
    return _integer_or_native(np.multiply, a.dtype, a, b)


def complex_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """XLA's complex division: Smith's algorithm, with its fixes when that yields (NaN, NaN).

    Differs from NumPy at the edges: (1+1j)/0 is (inf, inf), finite/inf is a signed zero.
    """
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    r_over_i, i_over_r = br / bi, bi / br
    r_denom, i_denom = bi + r_over_i * br, br + i_over_r * bi
    r_small = np.abs(br) < np.abs(bi)
    cr = np.where(r_small, (r_over_i * ar + ai) / r_denom, (i_over_r * ai + ar) / i_denom)
    ci = np.where(r_small, (r_over_i * ai - ar) / r_denom, (ai - i_over_r * ar) / i_denom)
    inf, one, zero = np.inf, 1.0, 0.0
    # a / 0 (a not NaN): inf with the sign of br, times a.
    zero_denom = (br == 0) & (bi == 0) & (~np.isnan(ar) | ~np.isnan(ai))
    s = np.copysign(inf, br)
    zr, zi = s * ar, s * ai
    # infinite / finite
    a_r_inf, a_i_inf = np.isinf(ar), np.isinf(ai)
    b_finite = np.isfinite(br) & np.isfinite(bi)
    inf_num = (a_r_inf | a_i_inf) & b_finite
    ar1 = np.copysign(np.where(a_r_inf, one, zero), ar)
    ai1 = np.copysign(np.where(a_i_inf, one, zero), ai)
    nr, ni = inf * (ar1 * br + ai1 * bi), inf * (ai1 * br - ar1 * bi)
    # finite / infinite
    b_r_inf, b_i_inf = np.isinf(br), np.isinf(bi)
    inf_den = (b_r_inf | b_i_inf) & np.isfinite(ar) & np.isfinite(ai)
    br1 = np.copysign(np.where(b_r_inf, one, zero), br)
    bi1 = np.copysign(np.where(b_i_inf, one, zero), bi)
    dr, di = zero * (ar * br1 + ai * bi1), zero * (ai * br1 - ar * bi1)
    nan = np.isnan(cr) & np.isnan(ci)
    conditions = [nan & zero_denom, nan & inf_num, nan & inf_den]
    rr = np.select(conditions, [zr, nr, dr], cr)
    ri = np.select(conditions, [zi, ni, di], ci)
    out = np.empty(np.shape(rr), dtype=np.result_type(a, b))
    out.real, out.imag = rr, ri
    return out


@evaluates(Opcode.DIVIDE)
def _divide(ev, instr, a, b):
    dt = a.dtype
    if from_numpy(dt).is_integer:
        return divide_int(a, b)
    if is_complex(dt):
        with np.errstate(all="ignore"):  # the narrowing cast overflows to inf, as XLA's does
            return np.asarray(complex_divide(widen(a), widen(b)).astype(dt))
    return apply_native(np.divide, dt, a, b)


@evaluates(Opcode.REMAINDER)
def _remainder(ev, instr, a, b):
    """C's fmod for floats (exact, sign of the dividend); integers as in integer_arith."""
    if from_numpy(a.dtype).is_integer:
        return remainder_int(a, b)
    return apply_native(np.fmod, a.dtype, a, b)


def float_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 maximum (XLA's llvm.maximum): NaN wins, and max(-0, +0) is +0.

    np.maximum returns its first operand for equal zeros; only a zero result needs the fix, so
    the common case costs one comparison more than np.maximum.
    """
    r = np.maximum(a, b)
    if not np.any(r == 0):
        return r
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a), b, a), r)


def float_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN wins, and min(-0, +0) is -0."""
    r = np.minimum(a, b)
    if not np.any(r == 0):
        return r
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a), a, b), r)


@evaluates(Opcode.MAXIMUM)
def _maximum(ev, instr, a, b):
    if a.dtype.kind == "f" or a.dtype in NARROW_FLOATS:
        return apply_native(float_max, a.dtype, a, b)
    return np.asarray(np.maximum(a, b), dtype=a.dtype)  # pred: logical or


@evaluates(Opcode.MINIMUM)
def _minimum(ev, instr, a, b):
    if a.dtype.kind == "f" or a.dtype in NARROW_FLOATS:
        return apply_native(float_min, a.dtype, a, b)
    return np.asarray(np.minimum(a, b), dtype=a.dtype)  # pred: logical and


@evaluates(Opcode.AND)
def _and(ev, instr, a, b):
    return np.asarray(np.bitwise_and(a, b), dtype=a.dtype)


@evaluates(Opcode.OR)
def _or(ev, instr, a, b):
    return np.asarray(np.bitwise_or(a, b), dtype=a.dtype)


@evaluates(Opcode.XOR)
def _xor(ev, instr, a, b):
    return np.asarray(np.bitwise_xor(a, b), dtype=a.dtype)


@evaluates(Opcode.COMPLEX)
def _complex(ev, instr, re, im):
    dt = out_dtype(instr)
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype=dt)
    out.real = re
    out.imag = im
    return out


# -- comparison -----------------------------------------------------------------------------------
def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered like XLA's TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < +NaN.

    The bits of a float are sign-magnitude; flipping the magnitude bits of negative values turns
    them into two's complement order.
    """
    i = np.dtype(f"i{x.dtype.itemsize}")
    bits = np.asarray(x).view(i)
    magnitude = i.type(np.iinfo(i).max)
    return bits ^ ((bits >> i.type(x.dtype.itemsize * 8 - 1)) & magnitude)


_COMPARE = {
    ComparisonDirection.EQ: np.equal,
    ComparisonDirection.NE: np.not_equal,
    ComparisonDirection.LT: np.less,
    ComparisonDirection.LE: np.less_equal,
    ComparisonDirection.GT: np.greater,
    ComparisonDirection.GE: np.greater_equal,
}


@evaluates(Opcode.COMPARE)
def _compare(ev, instr, a, b):
    """FLOAT: IEEE (NaN unordered, so only NE is true; -0 == +0). TOTALORDER: by bit pattern."""
    direction = ComparisonDirection(
        getattr(instr.attrs["direction"], "value", instr.attrs["direction"])
    )
    ctype = instr.attrs.get("comparison_type")
    if ctype is not None and ComparisonType(getattr(ctype, "value", ctype)) is (
        ComparisonType.TOTALORDER
    ):
        a, b = total_order_key(a), total_order_key(b)
    else:
        a, b = exact(a), exact(b)
    return np.asarray(_COMPARE[direction](a, b))


# -- ternary --------------------------------------------------------------------------------------
@evaluates(Opcode.SELECT)
def _select(ev, instr, pred, on_true, on_false):
    """A scalar predicate picks a whole operand (StableHLO); XLA requires matching dims."""
    return np.asarray(np.where(pred, on_true, on_false), dtype=on_true.dtype)


@evaluates(Opcode.CLAMP)
def _clamp(ev, instr, low, x, high):
    """min(max(x, low), high) with NaN-propagating max/min: a NaN anywhere gives NaN."""
    if from_numpy(x.dtype).is_float:
        return apply_native(
            lambda lo, v, hi: float_min(float_max(v, lo), hi), x.dtype, low, x, high
        )
    return np.asarray(np.minimum(np.maximum(x, low), high), dtype=x.dtype)


# -- map ------------------------------------------------------------------------------------------
_MAP_LEAVES = (Opcode.PARAMETER, Opcode.CONSTANT)


@evaluates(Opcode.MAP)
def _map(ev, instr, *operands):
    """Runs ``to_apply`` once on the whole operands: its ops are elementwise, so this equals
    applying it to every element, without a Python loop over elements.

    Shape checks are off for that call: its instructions declare scalars but see arrays.
    """
    comp = instr.attrs["to_apply"]
    for inner in comp.execution_order():
        if inner.opcode not in _MAP_LEAVES and not inner.is_elementwise:
            raise Unimplemented(
                f"{instr.name}: the interpreter maps only computations of elementwise ops; "
                f"{comp.name} contains {inner.opcode.value} ({inner.name})"
            )
    saved = ev.check_shapes
    ev.check_shapes = False
    try:
        result = ev.call(comp, list(operands))
    finally:
        ev.check_shapes = saved
    dims = np.broadcast_shapes(*(np.shape(o) for o in operands))  # nested maps see arrays too
    return np.array(np.broadcast_to(np.asarray(result, out_dtype(instr)), dims))
