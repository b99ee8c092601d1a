"""dot (XLA DotGeneral): shape rule, result types, and values against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.interpreter import evaluate
from hlort.ir import verify_module
from hlort.ir.attributes import DotDimensionNumbers, Precision
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape

DN = DotDimensionNumbers
MATMUL = DN((1,), (0,))


def run_dot(lhs, rhs, dnums=MATMUL, preferred=None, precision=None):
    """Build, verify and evaluate one dot of two parameters."""
    b = Builder("dot")
    x = b.parameter(shape.array(dtypes.from_numpy(lhs.dtype), lhs.shape))
    y = b.parameter(shape.array(dtypes.from_numpy(rhs.dtype), rhs.shape))
    module = b.build(b.dot_general(x, y, dnums, precision=precision, preferred=preferred))
    verify_module(module)
    return evaluate(module, [lhs, rhs])


def infer(lhs, rhs, dnums, declared=None, **attrs):
    return infer_shape(
        Opcode.DOT, [lhs, rhs], {"dot_dimension_numbers": dnums, **attrs}, declared, "d"
    )


def rand(rng, dims, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    if dtype.kind in "iu":
        low, high = max(np.iinfo(dtype).min, -50), min(np.iinfo(dtype).max, 50)
        return rng.integers(low, high, dims, endpoint=True).astype(dtype)
    if dtype == np.bool_:
        return rng.random(dims) < 0.5
    return rng.standard_normal(dims).astype(dtype)


# -- shape rule -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lhs, rhs, dnums, expected",
    [
        ([2, 3], [3, 4], MATMUL, [2, 4]),
        ([3], [3], DN((0,), (0,)), []),
        ([2, 3], [3], DN((1,), (0,)), [2]),
        ([2], [3], DN(), [2, 3]),  # outer product: no contracting dims
        ([5, 2, 3], [3, 5, 4], DN((2,), (0,), (0,), (1,)), [5, 2, 4]),
        # batch dims first (in lhs batch order), then lhs free, then rhs free
        ([7, 2, 5, 3], [5, 3, 7, 6], DN((3,), (1,), (2, 0), (0, 2)), [5, 7, 2, 6]),
        ([4, 3, 2], [2, 3, 6], DN((1, 2), (1, 0)), [4, 6]),
        ([2, 0], [0, 3], MATMUL, [2, 3]),
    ],
)
def test_shape_accepted(lhs, rhs, dnums, expected):
    result = infer(shape.array("f32", lhs), shape.array("f32", rhs), dnums)
    assert result == shape.array("f32", expected)


@pytest.mark.parametrize(
    "lhs, rhs, dnums, words",
    [
        ([2, 3], [3, 4], DN((2,), (0,)), ["lhs_contracting_dims", "out of range"]),
        ([2, 3], [3, 4], DN((1,), (-1,)), ["rhs_contracting_dims", "out of range"]),
        ([2, 3], [3, 4], DN((1,), (0,), (5,), (1,)), ["lhs_batch_dims", "out of range"]),
        ([2, 3], [3, 4], DN((1, 1), (0, 0)), ["repeat"]),
        ([3, 3], [3, 3], DN((0,), (0,), (0,), (1,)), ["lhs_batch_dims", "repeat"]),
        ([2, 3], [3, 4], DN((1,), ()), ["same length"]),
        ([2, 3], [2, 3], DN((1,), (1,), (0,), ()), ["same length"]),
        ([2, 3], [4, 4], MATMUL, ["contracting dimension sizes differ", "f32[2,3]", "f32[4,4]"]),
        ([2, 3, 4], [5, 4, 6], DN((2,), (1,), (0,), (0,)), ["batch dimension sizes differ"]),
    ],
)
def test_shape_rejected(lhs, rhs, dnums, words):
    with pytest.raises(InvalidArgument) as err:
        infer(shape.array("f32", lhs), shape.array("f32", rhs), dnums)
    message = str(err.value)
    assert message.startswith("INVALID_ARGUMENT: dot d:")
    for word in words:
        assert word in message


def test_rejects_bad_attributes():
    f = shape.array("f32", [2, 2])
    with pytest.raises(InvalidArgument, match="dot_dimension_numbers"):
        infer(f, f, ((1,), (0,)))
    with pytest.raises(InvalidArgument, match="missing attribute 'dot_dimension_numbers'"):
        infer_shape(Opcode.DOT, [f, f], {})
    with pytest.raises(InvalidArgument, match="operand_precision"):
        infer(f, f, MATMUL, operand_precision=(Precision.HIGH,))
    with pytest.raises(InvalidArgument, match="operand_precision"):
        infer(f, f, MATMUL, operand_precision=("HIGH", "HIGH"))
    ok = infer(f, f, MATMUL, operand_precision=(Precision.HIGHEST, Precision.DEFAULT))
    assert ok == f
    with pytest.raises(InvalidArgument, match="must be an array"):
        infer(shape.tuple_of(f), f, MATMUL)


@pytest.mark.parametrize(
    "lhs, rhs, result",
    [
        ("f32", "f32", "f32"),
        ("bf16", "f32", "f32"),  # floats mix; the more precise wins
        ("f16", "bf16", "bf16"),  # more exponent range wins (XLA's HigherPrecisionType)
        ("s8", "u8", "s8"),  # same width: signed wins
        ("u16", "s8", "u16"),
        ("c64", "c128", "c128"),
        ("pred", "pred", "pred"),
        ("f32", "s32", "f32"),  # families mix in a dot: complex > float > integer > pred
        ("s8", "bf16", "bf16"),
        ("c64", "f64", "c64"),
        ("pred", "u8", "u8"),
    ],
)
def test_default_result_type(lhs, rhs, result):
    out = infer(shape.array(lhs, [2, 3]), shape.array(rhs, [3, 2]), MATMUL)
    assert out == shape.array(result, [2, 2])


@pytest.mark.parametrize(
    "operands, declared",
    [
        ("s8", "s32"),
        ("s8", "u8"),
        ("u32", "s64"),
        ("bf16", "f32"),
        ("f16", "f32"),
        ("f32", "bf16"),
        ("f8e4m3fn", "f32"),
        ("c64", "c128"),
        ("pred", "s32"),
        ("pred", "f32"),
        ("s8", "f32"),  # integers into a float at least as wide: XLA's MaybeUpcast
        ("s8", "bf16"),
        ("s16", "f16"),
        ("s32", "f32"),
        ("u64", "f64"),
    ],
)
def test_declared_result_type_accepted(operands, declared):
    out = infer(
        shape.array(operands, [2, 3]),
        shape.array(operands, [3, 2]),
        MATMUL,
        declared=shape.array(declared, [2, 2]),
    )
    assert out.dtype.name == declared


@pytest.mark.parametrize(
    "lhs, rhs, declared, words",
    [
        ("s32", "s32", "s8", ["s8", "at least 32 bits"]),
        ("s32", "s32", "f16", ["s32", "float type of at least 32 bits"]),
        ("s64", "s64", "f32", ["at least 64 bits"]),
        ("f32", "f32", "s32", ["floating-point"]),
        ("f32", "f32", "c64", ["floating-point"]),
        ("c64", "c64", "f32", ["complex"]),
        ("s32", "f32", "s32", ["floating-point", "s32[2,3]", "f32[3,2]"]),  # mixed: float wins
        ("f32", "c64", "f32", ["complex"]),
        ("pred", "s8", "pred", ["integer or float type"]),
    ],
)
def test_result_type_rejected(lhs, rhs, declared, words):
    decl = None if declared is None else shape.array(declared, [2, 2])
    with pytest.raises(InvalidArgument) as err:
        infer(shape.array(lhs, [2, 3]), shape.array(rhs, [3, 2]), MATMUL, declared=decl)
    for word in words:
        assert word in str(err.value)


def test_declared_dims_must_match():
    with pytest.raises(InvalidArgument, match="does not match the inferred shape"):
        infer(
            shape.array("f32", [2, 3]),
            shape.array("f32", [3, 4]),
            MATMUL,
            declared=shape.array("f32", [4, 2]),
        )


# -- values -----------------------------------------------------------------------------------

# (dtype, relative tolerance of the sum against sum |a||b|)
FLOAT_CASES = [
    (np.float16, 2e-3),
    (ml_dtypes.bfloat16, 1e-2),
    (np.float32, 1e-6),
    (np.float64, 1e-14),
    (np.complex64, 1e-6),
    (np.complex128, 1e-14),
]


@pytest.mark.parametrize("dtype, tol", FLOAT_CASES)
def test_batched_float_dot_matches_einsum(dtype, tol):
    rng = np.random.default_rng(0)
    lhs = rand(rng, (3, 4, 5, 6), dtype)  # batch 0, free 1, contract 2, 3
    rhs = rand(rng, (6, 3, 5, 2), dtype)  # contract 0, batch 1, contract 2, free 3
    dnums = DN((2, 3), (2, 0), (0,), (1,))
    got = run_dot(lhs, rhs, dnums)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    a, b = lhs.astype(wide), rhs.astype(wide)
    want = np.einsum("bmkc,cbkn->bmn", a, b)
    scale = np.einsum("bmkc,cbkn->bmn", np.abs(a), np.abs(b))
    assert got.dtype == np.dtype(dtype) and got.shape == (3, 4, 2)
    assert np.all(np.abs(got.astype(wide) - want) <= tol * scale + 1e-30)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_dot_is_exact(dtype):
    rng = np.random.default_rng(1)
    lhs = rand(rng, (2, 3, 4), dtype)
    rhs = rand(rng, (2, 4, 5), dtype)
    got = run_dot(lhs, rhs, DN((2,), (1,), (0,), (0,)))
    want = np.einsum("bmk,bkn->bmn", lhs.astype(object), rhs.astype(object))
    bits = np.dtype(dtype).itemsize * 8
    wrapped = np.vectorize(lambda v: _wrap(int(v), bits, np.dtype(dtype).kind == "i"))(want)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, wrapped.astype(dtype))


def _wrap(value: int, bits: int, signed: bool) -> int:
    value %= 1 << bits
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def test_integer_overflow_wraps():
    lhs = np.array([[100, 100, 100]], np.int8)
    rhs = np.array([[100], [100], [28]], np.int8)
    # 10000 + 10000 + 2800 = 22800 = 89 * 256 + 16
    np.testing.assert_array_equal(run_dot(lhs, rhs), np.array([[16]], np.int8))
    big = np.array([[2**31 - 1, 2**31 - 1]], np.int32)
    col = np.array([[2], [3]], np.int32)
    want = _wrap((2**31 - 1) * 5, 32, True)
    np.testing.assert_array_equal(run_dot(big, col), np.array([[want]], np.int32))
    u = np.array([[2**63 + 5]], np.uint64)
    np.testing.assert_array_equal(
        run_dot(u, np.array([[2]], np.uint64)), np.array([[10]], np.uint64)
    )


def test_mixed_precision_results():
    rng = np.random.default_rng(2)
    a = rand(rng, (4, 8), np.int8)
    b = rand(rng, (8, 3), np.int8)
    a[0, :] = 127
    b[:, 0] = 127  # 8 * 127 * 127 overflows s8 and s16 but not s32
    got = run_dot(a, b, preferred="s32")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
    x = rand(rng, (5, 16), ml_dtypes.bfloat16)
    y = rand(rng, (16, 3), ml_dtypes.bfloat16)
    got = run_dot(x, y, preferred="f32")
    assert got.dtype == np.float32  # bf16 products are exact in f32: only the sums round
    np.testing.assert_allclose(
        got, x.astype(np.float64) @ y.astype(np.float64), rtol=1e-5, atol=1e-5
    )
    h = rand(rng, (3, 4), np.float16)
    got = run_dot(h, rand(rng, (4, 2), np.float16), preferred="f64")
    assert got.dtype == np.float64
    f8 = rand(rng, (2, 4), ml_dtypes.float8_e4m3fn)
    got = run_dot(f8, f8.T.copy(), preferred="f32")
    np.testing.assert_allclose(got, f8.astype(np.float32) @ f8.T.astype(np.float32), rtol=1e-6)


def test_narrowing_float_result_rounds_once():
    x = np.full((1, 3), 1 + 2**-9, np.float32)
    y = np.ones((3, 1), np.float32)
    got = run_dot(x, y, preferred="bf16")
    assert got.dtype == ml_dtypes.bfloat16
    assert got[0, 0] == ml_dtypes.bfloat16(3 * (1 + 2**-9))


def test_mixed_operand_types():
    x = np.array([[1.5, 2.0]], ml_dtypes.bfloat16)
    y = np.array([[2.0], [0.25]], np.float32)
    got = run_dot(x, y)
    assert got.dtype == np.float32 and got[0, 0] == 3.5


def test_pred_dot_is_or_of_and():
    rng = np.random.default_rng(3)
    a = rand(rng, (4, 5), np.bool_)
    b = rand(rng, (5, 3), np.bool_)
    a[0] = False
    got = run_dot(a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, (a.astype(int) @ b.astype(int)) > 0)
    counts = run_dot(a, b, preferred="s32")
    np.testing.assert_array_equal(counts, a.astype(np.int32) @ b.astype(np.int32))


def test_nan_and_inf_propagate():
    nan, inf = np.nan, np.inf
    lhs = np.array([[nan, 1.0], [inf, 0.0], [inf, 1.0], [1.0, 2.0]], np.float32)
    rhs = np.array([[0.0, 1.0], [1.0, -inf]], np.float32)
    got = run_dot(lhs, rhs)
    assert np.isnan(got[0]).all()  # NaN * anything
    assert np.isnan(got[1, 0])  # inf * 0
    assert np.isnan(got[1, 1])  # inf * 1 + 0 * -inf
    assert np.isnan(got[2, 1])  # inf + -inf
    assert got[3, 1] == -inf
    assert np.isnan(got[2, 0])  # inf * 0 + 1
    assert got[3, 0] == 2.0
    c = np.array([[complex(nan, 0), 1]], np.complex64)
    assert np.isnan(run_dot(c, np.ones((2, 1), np.complex64))).all()


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64, np.bool_])
def test_empty_contracting_dimension_gives_zeros(dtype):
    lhs = np.zeros((3, 0), dtype)
    rhs = np.zeros((0, 2), dtype)
    got = run_dot(lhs, rhs)
    assert got.shape == (3, 2) and got.dtype == np.dtype(dtype)
    assert not got.any()


def test_empty_free_dimension():
    got = run_dot(np.zeros((0, 4), np.float32), np.ones((4, 3), np.float32))
    assert got.shape == (0, 3)


def test_precision_does_not_change_reference_result():
    rng = np.random.default_rng(4)
    a, b = rand(rng, (3, 4), np.float32), rand(rng, (4, 2), np.float32)
    base = run_dot(a, b)
    high = run_dot(a, b, precision=["highest", "highest"])
    np.testing.assert_array_equal(base, high)


# -- summation order ----------------------------------------------------------------------------


def sequential_dot(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """XLA's evaluator order for a matmul, one element and one product at a time: acc = 0, then
    acc += lhs[m, k] * rhs[k, n] for k = 0, 1, ...; a complex product is (ac - bd) + (ad + bc)i,
    every operation on NumPy scalars of the part type (so each one rounds, none is fused)."""
    m, k = lhs.shape
    out = np.zeros((m, rhs.shape[1]), lhs.dtype)
    for i, j in np.ndindex(out.shape):
        if lhs.dtype.kind == "c":
            part = lhs.real.dtype.type
            re = im = part(0)
            for t in range(k):
                a, b = lhs[i, t], rhs[t, j]
                re = re + (part(a.real) * part(b.real) - part(a.imag) * part(b.imag))
                im = im + (part(a.real) * part(b.imag) + part(a.imag) * part(b.real))
            out[i, j] = lhs.dtype.type(complex(re, im))
        else:
            acc = lhs.dtype.type(0)
            for t in range(k):
                acc = acc + lhs[i, t] * rhs[t, j]
            out[i, j] = acc
    return out


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_dot_adds_whole_products_in_order(dtype):
    """Regression (corpus dot_general_*_complex*): BLAS sums the real parts of the products
    separately (sum ac - sum bd); XLA adds each naive product in turn. Here sum ac = 1 + 2^60
    loses the 1, while the second product's real part is exactly 2^60 - 2^60 = 0."""
    s = 2.0**30
    lhs = np.array([[1, complex(s, s)]], dtype)
    rhs = np.array([[1], [complex(s, s)]], dtype)
    got = run_dot(lhs, rhs)
    np.testing.assert_array_equal(got, sequential_dot(lhs, rhs))
    assert got[0, 0] == complex(1, 2 * s * s)


def test_small_float_dot_rounds_each_product_before_adding():
    """Regression (corpus conv_general_dilated_float32_2_3_9_float32_12_1_3, same contraction): a
    fused multiply-add (as in BLAS's gemm kernels) keeps the 2^-24 of the exact product
    (1 + 2^-12)^2 that XLA's separate multiply rounds away before the sum cancels."""
    lhs = np.array([[-(1 + 2**-11), 1 + 2**-12]] * 2, np.float32)
    rhs = np.array([[1, 1], [1 + 2**-12, 1 + 2**-12]], np.float32)
    got = run_dot(lhs, rhs)
    np.testing.assert_array_equal(got, sequential_dot(lhs, rhs))
    np.testing.assert_array_equal(got, np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_small_dots_match_a_sequential_loop_bitwise(dtype):
    rng = np.random.default_rng(7)
    lhs, rhs = rand(rng, (5, 9), dtype), rand(rng, (9, 4), dtype)
    np.testing.assert_array_equal(run_dot(lhs, rhs), sequential_dot(lhs, rhs))


def test_large_real_dot_still_uses_blas():
    """Big real contractions keep np.matmul: equal to it exactly, within tolerance of the loop."""
    rng = np.random.default_rng(8)
    lhs, rhs = rand(rng, (3, 200), np.float32), rand(rng, (200, 2), np.float32)
    np.testing.assert_array_equal(run_dot(lhs, rhs), lhs @ rhs)


@st.composite
def dot_problems(draw):
    """A random general dot: per role a few sizes, placed at random positions in each operand."""
    n_batch = draw(st.integers(0, 2))
    n_contract = draw(st.integers(0, 2))
    n_lfree = draw(st.integers(0, 2))
    n_rfree = draw(st.integers(0, 2))
    size = st.integers(0, 3)
    batch = [draw(size) for _ in range(n_batch)]
    contract = [draw(size) for _ in range(n_contract)]
    lfree = [draw(size) for _ in range(n_lfree)]
    rfree = [draw(size) for _ in range(n_rfree)]
    lroles = [("b", i) for i in range(n_batch)] + [("c", i) for i in range(n_contract)]
    lroles += [("f", i) for i in range(n_lfree)]
    rroles = [("b", i) for i in range(n_batch)] + [("c", i) for i in range(n_contract)]
    rroles += [("g", i) for i in range(n_rfree)]
    lroles = draw(st.permutations(lroles))
    rroles = draw(st.permutations(rroles))
    # contracting pairs may be listed in any order, as long as both sides use the same order
    cperm = draw(st.permutations(list(range(n_contract))))
    bperm = draw(st.permutations(list(range(n_batch))))
    sizes = {"b": batch, "c": contract, "f": lfree, "g": rfree}
    ldims = [sizes[r][i] for r, i in lroles]
    rdims = [sizes[r][i] for r, i in rroles]
    dn = DN(
        tuple(lroles.index(("c", i)) for i in cperm),
        tuple(rroles.index(("c", i)) for i in cperm),
        tuple(lroles.index(("b", i)) for i in bperm),
        tuple(rroles.index(("b", i)) for i in bperm),
    )
    seed = draw(st.integers(0, 2**16))
    return ldims, rdims, lroles, rroles, dn, bperm, seed


@settings(max_examples=60, deadline=None)
@given(dot_problems())
def test_general_dot_matches_einsum(problem):
    ldims, rdims, lroles, rroles, dn, bperm, seed = problem
    rng = np.random.default_rng(seed)
    lhs = rng.integers(-5, 6, ldims).astype(np.float64)
    rhs = rng.integers(-5, 6, rdims).astype(np.float64)
    letters = {}

    def letter(role):
        return letters.setdefault(role, "abcdefghijklmnop"[len(letters)])

    lsub = "".join(letter(r) for r in lroles)
    rsub = "".join(letter(r) for r in rroles)
    out = "".join(letter(("b", i)) for i in bperm)
    out += "".join(letter(r) for r in lroles if r[0] == "f")
    out += "".join(letter(r) for r in rroles if r[0] == "g")
    want = np.einsum(f"{lsub},{rsub}->{out}", lhs, rhs)
    got = run_dot(lhs, rhs, dn)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # small integers: exact in f64


@pytest.mark.parametrize(
    "lhs_type, rhs_type, result",
    [
        (np.float32, np.int32, np.float32),
        (np.int32, np.float32, np.float32),
        (np.int8, np.float64, np.float64),
        (np.complex64, np.float32, np.complex64),
        (np.float32, np.bool_, np.float32),
    ],
)
def test_mixed_family_dot_converts_operands_first(lhs_type, rhs_type, result):
    """As XLA's operand upcasting: each operand converted to the result type, then the dot."""
    rng = np.random.default_rng(3)
    lhs = rand(rng, (3, 4), lhs_type) if lhs_type is not np.bool_ else rng.random((3, 4)) > 0.5
    rhs = rand(rng, (4, 2), rhs_type) if rhs_type is not np.bool_ else rng.random((4, 2)) > 0.5
    got = run_dot(lhs, rhs)
    assert got.dtype == result
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    want = lhs.astype(result).astype(wide) @ rhs.astype(result).astype(wide)
    np.testing.assert_allclose(got, want.astype(result), rtol=1e-6)


@pytest.mark.parametrize(
    "operands, result",
    [
        (np.int8, np.float32),
        (np.int8, ml_dtypes.bfloat16),
        (np.int16, np.float16),
        (np.uint8, np.float64),
    ],
)
def test_integers_into_a_float_result_convert_operands_first(operands, result):
    """JAX's preferred_element_type=f32 on s8 operands: as converting both to float first."""
    rng = np.random.default_rng(8)
    lhs, rhs = rand(rng, (3, 5), operands), rand(rng, (5, 4), operands)
    got = run_dot(lhs, rhs, preferred=dtypes.from_numpy(np.dtype(result)).name)
    assert got.dtype == result
    want = lhs.astype(np.float64) @ rhs.astype(np.float64)  # exact: |sums| < 2^24
    np.testing.assert_array_equal(got, want.astype(result))  # rounded once


def test_large_integers_into_f32_sum_in_float_not_wrapping_int64():
    """s32 x s32 into f32: 4 products of 2^62 overflow int64, not f32 (XLA sums in f32)."""
    big = np.full((1, 4), -(2**31), np.int32)
    got = run_dot(big, big.T.copy(), preferred="f32")
    np.testing.assert_array_equal(got, np.full((1, 1), 2.0**64, np.float32))
