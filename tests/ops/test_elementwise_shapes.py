"""Shape rules of the elementwise ops: which element types each op takes, and the messages."""

import pytest

from hlort import Builder, dtypes, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import ComparisonDirection, ComparisonType, Opcode, infer_shape
from hlort.shape import ArrayShape

ALL = {d.name for d in dtypes.ALL_DTYPES}
INTS = {d.name for d in dtypes.INTEGER_DTYPES}
SINTS = {d.name for d in dtypes.SIGNED_INTEGER_DTYPES}
FLOATS = {d.name for d in dtypes.FLOAT_DTYPES}
COMPLEX = {"c64", "c128"}

UNARY_ACCEPTS = {
    Opcode.ABS: SINTS | FLOATS | COMPLEX,
    Opcode.NEGATE: INTS | FLOATS | COMPLEX,
    Opcode.SIGN: SINTS | FLOATS | COMPLEX,
    Opcode.NOT: {"pred"} | INTS,
    Opcode.POPCNT: INTS,
    Opcode.CLZ: INTS,
    Opcode.IS_FINITE: FLOATS,
    Opcode.REAL: FLOATS | COMPLEX,
    Opcode.IMAG: FLOATS | COMPLEX,
    Opcode.ERF: FLOATS,
    Opcode.FLOOR: FLOATS,
    Opcode.CEIL: FLOATS,
    Opcode.ROUND_NEAREST_AFZ: FLOATS,
    Opcode.ROUND_NEAREST_EVEN: FLOATS,
    **{
        op: FLOATS | COMPLEX
        for op in (
            Opcode.EXP,
            Opcode.EXPM1,
            Opcode.LOG,
            Opcode.LOG1P,
            Opcode.LOGISTIC,
            Opcode.SQRT,
            Opcode.RSQRT,
            Opcode.CBRT,
            Opcode.TANH,
            Opcode.SINE,
            Opcode.COSINE,
            Opcode.TAN,
        )
    },
}

BINARY_ACCEPTS = {
    Opcode.ADD: ALL,
    Opcode.MULTIPLY: ALL,
    Opcode.SUBTRACT: ALL - {"pred"},
    Opcode.DIVIDE: ALL - {"pred"},
    Opcode.POWER: ALL - {"pred"},
    Opcode.REMAINDER: INTS | FLOATS,
    Opcode.MAXIMUM: {"pred"} | INTS | FLOATS,
    Opcode.MINIMUM: {"pred"} | INTS | FLOATS,
    Opcode.ATAN2: FLOATS | COMPLEX,
    Opcode.AND: {"pred"} | INTS,
    Opcode.OR: {"pred"} | INTS,
    Opcode.XOR: {"pred"} | INTS,
    Opcode.SHIFT_LEFT: INTS,
    Opcode.SHIFT_RIGHT_LOGICAL: INTS,
    Opcode.SHIFT_RIGHT_ARITHMETIC: INTS,
}


# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def arr(dtype, dims=(2, 3)):
    return shape.array(dtype, dims)


def rejected(opcode, shapes, attrs=None, declared=None):
    with pytest.raises(HlortError) as err:
        infer_shape(opcode, shapes, attrs or {}, declared)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    return str(err.value)


@pytest.mark.parametrize("opcode", list(UNARY_ACCEPTS), ids=lambda o: o.value)
@pytest.mark.parametrize("dtype", sorted(ALL))
def test_unary_element_types(opcode, dtype):
    if dtype in UNARY_ACCEPTS[opcode]:
        result = infer_shape(opcode, [arr(dtype)])
        assert result.dims == (2, 3)
        if opcode is Opcode.IS_FINITE:
            assert result.dtype is dtypes.PRED
        elif opcode in (Opcode.ABS, Opcode.REAL, Opcode.IMAG):
            assert result.dtype is dtypes.from_hlo_name(dtype).component
        else:
            assert result.dtype.name == dtype
    else:
        message = rejected(opcode, [arr(dtype)])
        assert opcode.value in message and f"{dtype}[2,3]" in message and "element type" in message


@pytest.mark.parametrize("opcode", list(BINARY_ACCEPTS), ids=lambda o: o.value)
@pytest.mark.parametrize("dtype", sorted(ALL))
def test_binary_element_types(opcode, dtype):
    if dtype in BINARY_ACCEPTS[opcode]:
        assert infer_shape(opcode, [arr(dtype), arr(dtype)]) == arr(dtype)
    else:
        message = rejected(opcode, [arr(dtype), arr(dtype)])
        assert opcode.value in message and f"{dtype}[2,3]" in message


def test_messages_say_what_is_allowed():
    assert "floating-point or complex" in rejected(Opcode.EXP, [arr("s32")])
    assert "pred or integer" in rejected(Opcode.AND, [arr("f32"), arr("f32")])
    assert "integer element type" in rejected(Opcode.SHIFT_LEFT, [arr("f32"), arr("f32")])
    assert "signed integer, floating-point or complex" in rejected(Opcode.ABS, [arr("u8")])


@pytest.mark.parametrize(
    "other", [arr("f32", (3, 2)), arr("f64"), arr("f32", ()), arr("f32", (2, 3, 1))]
)
def test_binary_operands_must_match_exactly(other):
    message = rejected(Opcode.ADD, [arr("f32"), other])
    assert "identical dims and element type" in message
    assert "f32[2,3]" in message and str(other) in message


def test_binary_rejects_tuples_and_wrong_arity():
    t = shape.tuple_of(arr("f32"))
    assert "must be an array" in rejected(Opcode.ADD, [arr("f32"), t])
    assert "takes 2 operand(s), got 1" in rejected(Opcode.ADD, [arr("f32")])


def test_scalar_and_empty_shapes():
    assert infer_shape(Opcode.ADD, [arr("f32", ()), arr("f32", ())]) == arr("f32", ())
    assert infer_shape(Opcode.EXP, [arr("bf16", (0,))]) == arr("bf16", (0,))


def test_copy_takes_anything():
    t = shape.tuple_of(arr("f32"), shape.TOKEN)
    assert infer_shape(Opcode.COPY, [t]) == t
    assert infer_shape(Opcode.COPY, [arr("pred")]) == arr("pred")


# -- compare ----------------------------------------------------------------------------------
def cmp_attrs(direction="LT", ctype=None):
    attrs = {"direction": ComparisonDirection(direction)}
    if ctype is not None:
        attrs["comparison_type"] = ComparisonType(ctype)
    return attrs


@pytest.mark.parametrize("dtype", sorted(ALL))
def test_compare_gives_pred_of_same_dims(dtype):
    direction = "EQ" if dtype in COMPLEX else "LT"
    result = infer_shape(Opcode.COMPARE, [arr(dtype), arr(dtype)], cmp_attrs(direction))
    assert result == arr("pred")


@pytest.mark.parametrize(
    "dtype, ctype, ok",
    [
        ("f32", "FLOAT", True),
        ("bf16", "TOTALORDER", True),
        ("s32", "SIGNED", True),
        ("u8", "UNSIGNED", True),
        ("pred", "UNSIGNED", True),
        ("c64", "FLOAT", True),
        ("s32", "UNSIGNED", False),
        ("u32", "SIGNED", False),
        ("f32", "SIGNED", False),
        ("s8", "FLOAT", False),
        ("c64", "TOTALORDER", False),
        ("pred", "SIGNED", False),
    ],
)
def test_compare_type_must_fit_element_type(dtype, ctype, ok):
    shapes = [arr(dtype), arr(dtype)]
    if ok:
        assert infer_shape(Opcode.COMPARE, shapes, cmp_attrs("EQ", ctype)) == arr("pred")
    else:
        message = rejected(Opcode.COMPARE, shapes, cmp_attrs("EQ", ctype))
        assert f"comparison_type {ctype}" in message and f"{dtype}[2,3]" in message


def test_compare_complex_only_eq_ne():
    for direction in ("EQ", "NE"):
        infer_shape(Opcode.COMPARE, [arr("c64"), arr("c64")], cmp_attrs(direction))
    message = rejected(Opcode.COMPARE, [arr("c128"), arr("c128")], cmp_attrs("LT"))
    assert "EQ or NE" in message and "c128[2,3]" in message


def test_compare_attributes():
    assert "missing attribute 'direction'" in rejected(Opcode.COMPARE, [arr("f32"), arr("f32")])
    message = rejected(Opcode.COMPARE, [arr("f32"), arr("f32")], {"direction": "LESS"})
    assert "LESS" in message and "EQ" in message
    spelled = {"direction": "GE", "comparison_type": "TOTALORDER"}
    assert infer_shape(Opcode.COMPARE, [arr("f32"), arr("f32")], spelled) == arr("pred")
    assert "identical" in rejected(Opcode.COMPARE, [arr("f32"), arr("s32")], cmp_attrs())


# -- complex, select, clamp -------------------------------------------------------------------
def test_complex_compose():
    assert infer_shape(Opcode.COMPLEX, [arr("f32"), arr("f32")]) == arr("c64")
    assert infer_shape(Opcode.COMPLEX, [arr("f64", ()), arr("f64", ())]) == arr("c128", ())
    for dtype in ("f16", "bf16", "s32", "c64"):
        message = rejected(Opcode.COMPLEX, [arr(dtype), arr(dtype)])
        assert "f32 (giving c64) or f64 (giving c128)" in message
    assert "identical" in rejected(Opcode.COMPLEX, [arr("f32"), arr("f64")])


def test_select():
    assert infer_shape(Opcode.SELECT, [arr("pred"), arr("s8"), arr("s8")]) == arr("s8")
    assert infer_shape(Opcode.SELECT, [arr("pred", ()), arr("c64"), arr("c64")]) == arr("c64")
    assert "must be pred" in rejected(Opcode.SELECT, [arr("s32"), arr("f32"), arr("f32")])
    message = rejected(Opcode.SELECT, [arr("pred", (3,)), arr("f32"), arr("f32")])
    assert "scalar or have the dims" in message and "pred[3]" in message
    message = rejected(Opcode.SELECT, [arr("pred"), arr("f32"), arr("f16")])
    assert "identical shapes" in message and "f16[2,3]" in message


def test_clamp():
    assert infer_shape(Opcode.CLAMP, [arr("f32"), arr("f32"), arr("f32")]) == arr("f32")
    assert infer_shape(Opcode.CLAMP, [arr("u8", ()), arr("u8"), arr("u8", ())]) == arr("u8")
    message = rejected(Opcode.CLAMP, [arr("f32", (3,)), arr("f32"), arr("f32")])
    assert "min f32[3]" in message
    assert "max s32[2,3]" in rejected(Opcode.CLAMP, [arr("f32"), arr("f32"), arr("s32")])
    assert "integer or floating-point" in rejected(Opcode.CLAMP, [arr("c64")] * 3)
    assert "integer or floating-point" in rejected(Opcode.CLAMP, [arr("pred")] * 3)


# -- map --------------------------------------------------------------------------------------
def _scalar_comp(b, param_dtypes, result_op=Opcode.ADD):
    sub = b.sub("fn")
    params = [sub.parameter(shape.scalar(d)) for d in param_dtypes]
    root = sub.op(result_op, params[:2]) if len(params) >= 2 else params[0]
    return sub.finish(root)


def test_map_shape():
    b = Builder("m")
    comp = _scalar_comp(b, ["f32", "f32"])
    dims = {"dimensions": (0, 1), "to_apply": comp}
    assert infer_shape(Opcode.MAP, [arr("f32"), arr("f32")], dims) == arr("f32")
    cmp = b.sub("lt")
    p, q = cmp.parameter(shape.scalar("s32")), cmp.parameter(shape.scalar("s32"))
    lt = cmp.finish(cmp.compare(p, q, "LT"))
    got = infer_shape(Opcode.MAP, [arr("s32", (4,))] * 2, {"dimensions": (0,), "to_apply": lt})
    assert got == ArrayShape(dtypes.PRED, (4,))


def test_map_rejections():
    b = Builder("m")
    comp = _scalar_comp(b, ["f32", "f32"])
    good = {"dimensions": (0, 1), "to_apply": comp}
    assert "same dims" in rejected(Opcode.MAP, [arr("f32"), arr("f32", (3, 2))], good)
    message = rejected(Opcode.MAP, [arr("f32"), arr("f32")], {**good, "dimensions": (1, 0)})
    assert "dimensions=[1, 0]" in message
    assert "takes 2 parameter(s)" in rejected(Opcode.MAP, [arr("f32")] * 3, good)
    message = rejected(Opcode.MAP, [arr("f32"), arr("s32")], good)
    assert "parameter 1" in message and "s32[]" in message
    assert "at least one operand" in rejected(Opcode.MAP, [], good)
    vec = b.sub("vec")
    v = vec.parameter(shape.array("f32", [2]))
    vcomp = vec.finish(v)
    assert "must be f32[]" in rejected(
        Opcode.MAP, [arr("f32")], {"dimensions": (0, 1), "to_apply": vcomp}
    )
