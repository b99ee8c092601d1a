"""Shape rules: dot, cholesky, triangular-solve, and the result-type policy of contractions.

Dot and convolution share one element-type policy (:func:`contraction_result_dtype`), modelled on
XLA's ``MaybeUpcast(HigherPrecisionElementType(lhs, rhs), preferred_element_type)``:

* Convolution operands belong to one family: both pred, both integer (any width or
  signedness), both floating point (any precision, f8 included) or both complex.
* A dot may mix families (JAX's TPU ``svd`` multiplies f32 by s32): XLA's shape inference no
  longer compares the two types, and its operand upcasting gives the meaning hlort uses: each
  operand is converted to the result type (the higher-precision operand type when none is
  declared: complex > float > integer > pred) and the dot runs there. The result must then be
  of the widest family present (a float result for float x integer, complex for complex x real).
* Without a declared result the type is the higher-precision operand type (XLA's ordering:
  complex > more exponent range > more significand > wider > signed).
* A declared result type is XLA's "preferred element type": for float operands any float type
  (narrowing allowed, as in XLA); for complex any complex type; for integers an integer type at
  least as wide as the operands (signedness may change: the arithmetic wraps modulo 2^bits);
  for pred, pred (OR of ANDs), any integer (a count) or any float. Integers may also go to a
  float type at least as wide (s8 into f16/bf16/f32, s32 into f32, not s32 into f16), as
  XLA's ``MaybeUpcast`` allows; the operands are then converted to float (see the
  interpreter's ``accumulation_dtype``).
"""

from __future__ import annotations

from collections.abc import Sequence

from hlort.dtypes import DType, finfo
from hlort.ir.attributes import DotDimensionNumbers, Precision, Transpose
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.dimension_lists import integer_tuple
from hlort.shape import ArrayShape, Shape


def _family(dtype: DType) -> str:
    return "integer" if dtype.is_integer else dtype.kind


def _precision_key(dtype: DType) -> tuple:
    """XLA's primitive_util::HigherPrecisionType ordering, as a sortable key."""
    comp = dtype.component
    if comp.is_float:
        info = finfo(comp)
        exponent, significand = int(info.maxexp), int(info.nmant) + 1
    else:
        exponent = significand = -1
    return (dtype.is_complex, exponent, significand, comp.bits, comp.is_signed_integer)


def higher_precision(a: DType, b: DType) -> DType:
    """The operand type a contraction of ``a`` and ``b`` produces by default."""
    return a if _precision_key(a) >= _precision_key(b) else b


def contraction_result_dtype(
    q: ShapeQuery, lhs: ArrayShape, rhs: ArrayShape, mixed_families: bool = False
) -> DType:
    """The element type of dot / convolution: checks the operands and the declared result.
    ``mixed_families`` (dot): operands of different families are allowed (module docstring)."""
    a, b = lhs.dtype, rhs.dtype
    if _family(a) != _family(b) and not mixed_families:
        q.fail(
            f"operand element types {a} (lhs {lhs}) and {b} (rhs {rhs}) must both be pred, "
            f"both integer, both floating point or both complex; convert one operand first"
        )
    default = higher_precision(a, b)
    if q.declared is None:
        return default
    if not isinstance(q.declared, ArrayShape):
        q.fail(f"result must be an array shape, got {q.declared}")
    result = q.declared.dtype
    family = _family(default)
    if family == "pred":
        ok = result.is_pred or result.is_integer or result.is_float
    elif family == "integer":
        ok = (result.is_integer or result.is_float) and result.bits >= default.bits
    elif family == "float":
        ok = result.is_float
    else:
        ok = result.is_complex
    if not ok:
        allowed = {
            "pred": "pred, an integer or a float type",
            "integer": f"an integer or float type of at least {default.bits} bits",
            "float": "a floating-point type",
            "complex": "a complex type",
        }[family]
        q.fail(
            f"result element type {result} is not allowed for {default} operands "
            f"(lhs {lhs}, rhs {rhs}); the result must be {allowed}"
        )
    return result


def check_operand_precision(q: ShapeQuery) -> None:
    """``operand_precision`` is optional; when given it holds one Precision per operand."""
    precision = q.attrs.get("operand_precision")
    if precision is None:
        return
    if (
        not isinstance(precision, (tuple, list))
        or len(precision) not in (0, 2)
        or not all(isinstance(p, Precision) for p in precision)
    ):
        q.fail(
            f"operand_precision={precision!r} must be empty or two Precision values "
            f"(DEFAULT, HIGH, HIGHEST), one per operand"
        )


def _check_side(
    q: ShapeQuery, side: str, shape: ArrayShape, contracting: Sequence[int], batch: Sequence[int]
) -> None:
    for name, dims in (("contracting", contracting), ("batch", batch)):
        bad = [d for d in dims if not 0 <= d < shape.rank]
        if bad:
            q.fail(
                f"{side}_{name}_dims={list(dims)} has {bad} out of range for {side} {shape} "
                f"of rank {shape.rank}"
            )
    together = list(contracting) + list(batch)
    if len(set(together)) != len(together):
        q.fail(
            f"{side}_contracting_dims={list(contracting)} and {side}_batch_dims={list(batch)} "
            f"repeat a dimension of {side} {shape}; each dimension may appear once"
        )


_DOT = "dot_dimension_numbers"


@shape_rule(Opcode.DOT)
def _dot(q: ShapeQuery) -> Shape:
    lhs, rhs = q.array(0), q.array(1)
    dn = q.attr("dot_dimension_numbers")
    if not isinstance(dn, DotDimensionNumbers):
        q.fail(f"dot_dimension_numbers must be a DotDimensionNumbers, got {dn!r}")
    check_operand_precision(q)
    lc = integer_tuple(q, dn.lhs_contracting_dims, f"{_DOT}.lhs_contracting_dims")
    rc = integer_tuple(q, dn.rhs_contracting_dims, f"{_DOT}.rhs_contracting_dims")
    lb = integer_tuple(q, dn.lhs_batch_dims, f"{_DOT}.lhs_batch_dims")
    rb = integer_tuple(q, dn.rhs_batch_dims, f"{_DOT}.rhs_batch_dims")
    _check_side(q, "lhs", lhs, lc, lb)
    _check_side(q, "rhs", rhs, rc, rb)
    if len(lc) != len(rc):
        q.fail(
            f"lhs_contracting_dims={list(lc)} and rhs_contracting_dims={list(rc)} must have the "
            f"same length (lhs {lhs}, rhs {rhs})"
        )
    if len(lb) != len(rb):
        q.fail(
            f"lhs_batch_dims={list(lb)} and rhs_batch_dims={list(rb)} must have the same length "
            f"(lhs {lhs}, rhs {rhs})"
        )
    for name, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        for ld, rd in zip(ldims, rdims, strict=True):
            if lhs.dims[ld] != rhs.dims[rd]:
                q.fail(
                    f"{name} dimension sizes differ: lhs {lhs} dimension {ld} has size "
                    f"{lhs.dims[ld]}, rhs {rhs} dimension {rd} has size {rhs.dims[rd]}"
                )
    dims = [lhs.dims[d] for d in lb]
    dims += [s for d, s in enumerate(lhs.dims) if d not in lc and d not in lb]
    dims += [s for d, s in enumerate(rhs.dims) if d not in rc and d not in rb]
    return ArrayShape(contraction_result_dtype(q, lhs, rhs, mixed_families=True), tuple(dims))


def _bool_attr(q: ShapeQuery, key: str) -> bool:
    """Boolean options default to false, as in XLA's CholeskyOptions / TriangularSolveOptions."""
    value = q.attrs.get(key, False)
    if not isinstance(value, bool):
        q.fail(f"attribute {key}={value!r} must be a bool")
    return value


def _check_square_float(q: ShapeQuery, shape: ArrayShape, what: str) -> None:
    if not shape.dtype.is_floating_or_complex:
        q.fail(f"{what} {shape} must have a floating-point or complex element type")
    if shape.rank < 2:
        q.fail(f"{what} {shape} must have rank >= 2 (a matrix or a batch of matrices)")
    if shape.dims[-1] != shape.dims[-2]:
        q.fail(f"the two minor dimensions of {what} {shape} must be equal (square matrices)")


@shape_rule(Opcode.CHOLESKY)
def _cholesky(q: ShapeQuery) -> Shape:
    a = q.array(0)
    _bool_attr(q, "lower")
    _check_square_float(q, a, "operand")
    return a


@shape_rule(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(q: ShapeQuery) -> Shape:
    a, b = q.array(0), q.array(1)
    left_side = _bool_attr(q, "left_side")
    for key in ("lower", "unit_diagonal"):
        _bool_attr(q, key)
    transpose = q.attrs.get("transpose_a", Transpose.NO_TRANSPOSE)
    if not isinstance(transpose, Transpose):
        q.fail(f"transpose_a={transpose!r} must be NO_TRANSPOSE, TRANSPOSE or ADJOINT")
    _check_square_float(q, a, "a")
    if a.dtype != b.dtype:
        q.fail(f"a {a} and b {b} must have the same element type")
    if b.rank != a.rank:
        q.fail(f"a {a} and b {b} must have the same rank")
    shared = b.dims[-2] if left_side else b.dims[-1]
    if shared != a.dims[-1]:
        which = "rows" if left_side else "columns"
        q.fail(
            f"with left_side={left_side}, b {b} must have {a.dims[-1]} {which} to match a {a}, "
            f"got {shared}"
        )
    if a.dims[:-2] != b.dims[:-2]:
        q.fail(f"the batch dimensions of a {a} and b {b} must be equal")
    return b
