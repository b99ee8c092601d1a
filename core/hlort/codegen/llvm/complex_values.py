"""Complex elements (c64, c128) in the elemental emitter, with the interpreter's semantics.

Storage is NumPy's: two f32 (c64) or two f64 (c128), real part first. The register value is the
same literal struct ``{float, float}`` / ``{double, double}``: loads and stores are plain struct
loads (alignment 4 / 8, as NumPy's), and every op takes the parts apart with ``extractvalue``,
which LLVM's instcombine turns into scalar loads of the parts the loop vectorizer can widen.

Semantics (core/hlort/interpreter/ops): add, subtract, negate and compare EQ/NE work on the
parts; multiply is the naive ``(ac - bd) + (ad + bc)i`` without fused multiply-adds (XLA's
elemental emitter); divide is XLA's algorithm as the interpreter's ``complex_divide`` writes it,
computed in f64 for c64 and rounded once per part; abs of c64 is ``sqrt(re^2 + im^2)`` in f64
(exact squares, one rounding of the sum, so it rounds to the same f32 as any faithful f64 hypot)
with an infinite part giving +inf. On targets whose math policy says f64 is slow
(``MathPolicy.f32_via_f64`` False: the GPU targets) c64 divide and abs are computed in f32
instead (complex_math_f32.py: the same algorithm with power-of-two scaling, a two-float hypot).
Reducers made of these ops compile too (row, column and split reduces); a complex add reducer
is reassociable like a real float sum. abs of c128, sign, the transcendentals, power and atan2
are complex_math_ops.py's (computed in f64, or in f32 for c64 on those targets, within the
bounds stated there rather than bit for bit). Not compiled, so on the counted interpreter fallback:
TOTALORDER comparisons and bitcast-convert. Sort, scatter, reduce-window and select-and-scatter
of complex elements compile (``sort_plan.py``, ``hero_kernels.py``), with comparators, combiners
and selects made of the ops above.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.complex_types import (
    complex_constant,
    complex_elements,
    complex_type,
    make,
    part_dtype,
    parts,
)
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, is_compiled_dtype
from hlort.dtypes import DType
from hlort.errors import Unimplemented
from hlort.ir.attributes import ComparisonDirection, ComparisonType
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import comparison_type_of

INF = float("inf")


def is_element_dtype(dtype: DType) -> bool:
    """Element types the fused emitter handles: the compiled real types, c64 and c128."""
    return dtype.is_complex or is_compiled_dtype(dtype)


def involves_complex(instr: Instruction) -> bool:
    shapes = [instr.shape] + [o.shape for o in instr.operands]
    return any(s.is_array and s.dtype.is_complex for s in shapes)


# -- what compiles ------------------------------------------------------------------------------
_PARTWISE = frozenset(
    {
        Opcode.ADD,
        Opcode.SUBTRACT,
        Opcode.MULTIPLY,
        Opcode.DIVIDE,
        Opcode.NEGATE,
        Opcode.COPY,
        Opcode.OPTIMIZATION_BARRIER,
        Opcode.REAL,
        Opcode.IMAG,
        Opcode.COMPLEX,
        Opcode.CONVERT,
        Opcode.SELECT,
    }
)


def can_emit_complex(instr: Instruction) -> bool:
    """Whether an elementwise ``instr`` touching complex values compiles (the rest falls back)."""
    from hlort.codegen.llvm.llvm_types import is_compiled_dtype

    shapes = [instr.shape] + [o.shape for o in instr.operands]
    if not all(s.is_array and (s.dtype.is_complex or is_compiled_dtype(s.dtype)) for s in shapes):
        return False
    op = instr.opcode
    if op in _PARTWISE:
        return True
    if op is Opcode.ABS and instr.operands[0].shape.dtype is dtypes.C64:
        return True
    from hlort.codegen.llvm.complex_math_ops import can_emit_math  # complex math: on first use

    if can_emit_math(instr):
        return True
    if op is Opcode.COMPARE:
        direction = _direction(instr)
        return (
            direction in (ComparisonDirection.EQ, ComparisonDirection.NE)
            and comparison_type_of(instr) is not ComparisonType.TOTALORDER
        )
    return False


def _direction(instr: Instruction) -> ComparisonDirection:
    d = instr.attrs["direction"]
    return ComparisonDirection(getattr(d, "value", d))


# -- emission -----------------------------------------------------------------------------------
def emit_complex(ctx: IrContext, instr: Instruction, values: list[ir.Value]) -> ir.Value:
    """The value of an elementwise ``instr`` with a complex operand or result."""
    b, op = ctx.b, instr.opcode
    if op in (Opcode.COPY, Opcode.OPTIMIZATION_BARRIER):
        return values[0]
    if op is Opcode.COMPLEX:
        return make(b, values[0], values[1])
    if op is Opcode.REAL:
        return parts(b, values[0])[0]
    if op is Opcode.IMAG:
        return parts(b, values[0])[1]
    if op is Opcode.CONVERT:
        return convert_complex(ctx, values[0], instr.operands[0].shape.dtype, instr.shape.dtype)
    if op is Opcode.SELECT:
        (tr, ti), (fr, fi) = parts(b, values[1]), parts(b, values[2])
        return make(b, b.select(values[0], tr, fr), b.select(values[0], ti, fi))
    if op is Opcode.COMPARE:
        return _compare(ctx, _direction(instr), values[0], values[1])
    from hlort.codegen.llvm.complex_math_ops import OPCODES as MATH_OPCODES
    from hlort.codegen.llvm.complex_math_ops import emit_math, in_f32

    if (
        op is Opcode.ABS
        and instr.operands[0].shape.dtype is dtypes.C64
        and not in_f32(ctx, dtypes.C64)
    ):
        return _abs_c64(ctx, values[0])

    if op in MATH_OPCODES:
        return emit_math(ctx, instr, values)
    if op is Opcode.NEGATE:
        re, im = parts(b, values[0])
        return make(b, b.fneg(re), b.fneg(im))
    (ar, ai), (br, bi) = parts(b, values[0]), parts(b, values[1])
    if op is Opcode.ADD:
        return make(b, b.fadd(ar, br), b.fadd(ai, bi))
    if op is Opcode.SUBTRACT:
        return make(b, b.fsub(ar, br), b.fsub(ai, bi))
    if op is Opcode.MULTIPLY:
        return make(
            b, b.fsub(b.fmul(ar, br), b.fmul(ai, bi)), b.fadd(b.fmul(ar, bi), b.fmul(ai, br))
        )
    if op is Opcode.DIVIDE:
        if in_f32(ctx, instr.shape.dtype):
            from hlort.codegen.llvm.complex_math_f32 import xla_divide

            return make(b, *xla_divide(ctx, (ar, ai), (br, bi)))
        return _divide(ctx, instr.shape.dtype, ar, ai, br, bi)
    raise Unimplemented(f"no complex emitter for {op.value} ({instr.name})")


def add_reassociable(b: ir.IRBuilder, acc: ir.Value, v: ir.Value) -> ir.Value:
    """A complex sum step whose part additions may be reassociated (a reduce's partial sums,
    as for real float sums in row_fusion.apply_reducer)."""
    (xr, xi), (yr, yi) = parts(b, acc), parts(b, v)
    return make(b, b.fadd(xr, yr, flags=("reassoc",)), b.fadd(xi, yi, flags=("reassoc",)))


def _compare(ctx: IrContext, direction: ComparisonDirection, x: ir.Value, y: ir.Value) -> ir.Value:
    b = ctx.b
    (xr, xi), (yr, yi) = parts(b, x), parts(b, y)
    equal = b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered("==", xi, yi))
    return equal if direction is ComparisonDirection.EQ else b.not_(equal)


def convert_complex(ctx: IrContext, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """XLA's convert with a complex side (the interpreter's ``convert_array``).

    real -> complex converts to the part type and adds +0i; complex -> complex rounds each part;
    complex -> pred is ``x != 0`` (either part nonzero or NaN); complex -> other real types
    convert the real part.
    """
    b = ctx.b
    if src is dst:
        return x
    if not src.is_complex:
        part = part_dtype(dst)
        re = convert_real(ctx, x, src, part)
        return make(b, re, ir.Constant(re.type, 0.0))
    re, im = parts(b, x)
    if dst.is_complex:
        part = part_dtype(dst)
        return make(
            b,
            convert_real(ctx, re, part_dtype(src), part),
            convert_real(ctx, im, part_dtype(src), part),
        )
    if dst.is_pred:
        zero = ctx.f(re.type, 0.0)
        return b.or_(b.fcmp_unordered("!=", re, zero), b.fcmp_unordered("!=", im, zero))
    return convert_real(ctx, re, part_dtype(src), dst)


def _is_inf(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.b.fcmp_ordered("==", ctx.fabs(x), ctx.f(x.type, INF))


def _abs_c64(ctx: IrContext, z: ir.Value) -> ir.Value:
    """|z| of a c64: the squares of f32 parts are exact in f64, so one rounding of the sum and
    a correctly rounded sqrt land on the f32 that NumPy's f64 hypot rounds to."""
    b = ctx.b
    re, im = (b.fpext(p, F64) for p in parts(b, z))
    root = ctx.intrinsic("sqrt", b.fadd(b.fmul(re, re), b.fmul(im, im)))
    either_inf = b.or_(_is_inf(ctx, re), _is_inf(ctx, im))
    return b.fptrunc(b.select(either_inf, ctx.f(F64, INF), root), F32)


def _divide(
    ctx: IrContext, dtype: DType, ar: ir.Value, ai: ir.Value, br: ir.Value, bi: ir.Value
) -> ir.Value:
    """XLA's complex division, step for step as the interpreter's ``complex_divide`` (Smith's
    algorithm and its fixes for a zero or infinite denominator or an infinite numerator), in
    f64 for both c64 and c128, each part rounded once at the end."""
    b = ctx.b
    narrow = dtype is dtypes.C64
    if narrow:
        ar, ai, br, bi = (b.fpext(v, F64) for v in (ar, ai, br, bi))
    mul, add, sub, div, sel = b.fmul, b.fadd, b.fsub, b.fdiv, b.select
    r_over_i, i_over_r = div(br, bi), div(bi, br)
    r_denom, i_denom = add(bi, mul(r_over_i, br)), add(br, mul(i_over_r, bi))
    r_small = b.fcmp_ordered("<", ctx.fabs(br), ctx.fabs(bi))
    cr = sel(
        r_small, div(add(mul(r_over_i, ar), ai), r_denom), div(add(mul(i_over_r, ai), ar), i_denom)
    )
    ci = sel(
        r_small, div(sub(mul(r_over_i, ai), ar), r_denom), div(sub(ai, mul(i_over_r, ar)), i_denom)
    )
    from hlort.codegen.llvm.complex_math import divide_specials

    rr, ri = divide_specials(ctx, (ar, ai), (br, bi), (cr, ci))
    if narrow:
        rr, ri = b.fptrunc(rr, F32), b.fptrunc(ri, F32)
    return make(b, rr, ri)


__all__ = [
    "complex_type",
    "can_emit_complex",
    "emit_complex",
    "involves_complex",
    "complex_constant",
    "complex_elements",
    "convert_complex",
    "is_element_dtype",
    "add_reassociable",
]
