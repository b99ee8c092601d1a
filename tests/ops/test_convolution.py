"""convolution: shape rule, and values against a slow loop reference written from the spec."""

from __future__ import annotations

import itertools

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
from hlort.ir.attributes import ConvDimensionNumbers, WindowDim
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape


def labels(n_spatial: int, inp=None, ker=None, out=None) -> ConvDimensionNumbers:
    """Dimension numbers from three orders: each a list of roles ('b'/'f', 'o'/'i', digits)."""
    sp = [str(i) for i in range(n_spatial)]
    inp = inp or ["b", "f", *sp]
    ker = ker or ["o", "i", *sp]
    out = out or ["b", "f", *sp]
    return ConvDimensionNumbers(
        inp.index("b"),
        inp.index("f"),
        tuple(inp.index(s) for s in sp),
        ker.index("i"),
        ker.index("o"),
        tuple(ker.index(s) for s in sp),
        out.index("b"),
        out.index("f"),
        tuple(out.index(s) for s in sp),
    )


def run_conv(lhs, rhs, window, dn, groups=1, batch_groups=1, preferred=None):
    b = Builder("conv")
    x = b.parameter(shape.array(dtypes.from_numpy(lhs.dtype), lhs.shape))
    y = b.parameter(shape.array(dtypes.from_numpy(rhs.dtype), rhs.shape))
    module = b.build(b.convolution(x, y, window, dn, groups, batch_groups, preferred=preferred))
    verify_module(module)
    return evaluate(module, [lhs, rhs])


def infer(lhs, rhs, window, dn, groups=1, batch_groups=1, declared=None):
    attrs = dict(
        window=tuple(window),
        dim_labels=dn,
        feature_group_count=groups,
        batch_group_count=batch_groups,
    )
    return infer_shape(Opcode.CONVOLUTION, [lhs, rhs], attrs, declared, "c")


def _dilated(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


def reference_conv(lhs, rhs, window, dn, groups=1, batch_groups=1, acc=np.float64):
    """Convolution by its definition: one Python loop per output element and per tap."""
    x = np.transpose(
        lhs, (dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions)
    ).astype(acc)
    k = np.transpose(
        rhs,
        (
            dn.kernel_output_feature_dimension,
            dn.kernel_input_feature_dimension,
            *dn.kernel_spatial_dimensions,
        ),
    ).astype(acc)
    n, c = x.shape[:2]
    o, i_size = k.shape[:2]
    out_sp = []
    for w, size in zip(window, x.shape[2:], strict=True):
        padded = w.padding_low + _dilated(size, w.base_dilation) + w.padding_high
        span = _dilated(w.size, w.window_dilation)
        out_sp.append(0 if padded < span or padded == 0 else (padded - span) // w.stride + 1)
    nb = n // batch_groups
    out = np.zeros((nb, o, *out_sp), acc)
    for b, oz in itertools.product(range(nb), range(o)):
        group = oz // (o // groups)
        batch = (oz // (o // batch_groups)) * nb + b
        for opos in itertools.product(*[range(s) for s in out_sp]):
            total = acc(0)
            for ci in range(i_size):
                for kpos in itertools.product(*[range(w.size) for w in window]):
                    index = []
                    for d, w in enumerate(window):
                        tap = w.size - 1 - kpos[d] if w.window_reversal else kpos[d]
                        p = opos[d] * w.stride + tap * w.window_dilation - w.padding_low
                        if p < 0 or p >= _dilated(x.shape[2 + d], w.base_dilation):
                            break
                        if p % w.base_dilation:
                            break
                        index.append(p // w.base_dilation)
                    else:
                        total += x[(batch, group * i_size + ci, *index)] * k[(oz, ci, *kpos)]
            out[(b, oz, *opos)] = total
    order = [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions]
    return np.transpose(out, np.argsort(order))


REPEATED_INPUT = ConvDimensionNumbers(0, 0, (2,), 1, 0, (2,), 0, 1, (2,))
REPEATED_OUTPUT = ConvDimensionNumbers(0, 1, (2,), 1, 0, (2,), 1, 1, (2,))

# -- shape rule -------------------------------------------------------------------------------


def test_shape_nhwc_hwio_same_padding():
    dn = labels(2, ["b", "0", "1", "f"], ["0", "1", "i", "o"], ["b", "0", "1", "f"])
    window = [WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1)]
    out = infer(shape.array("f32", [8, 32, 32, 3]), shape.array("f32", [3, 3, 3, 16]), window, dn)
    assert out == shape.array("f32", [8, 32, 32, 16])


@pytest.mark.parametrize(
    "base, w, expected",
    [
        (10, WindowDim(3), 8),
        (10, WindowDim(3, stride=2), 4),
        (10, WindowDim(3, window_dilation=2), 6),
        (5, WindowDim(2, base_dilation=2), 8),  # dilated base 9
        (5, WindowDim(3, padding_low=-1, padding_high=-1), 1),
        (4, WindowDim(5), 0),  # window does not fit: empty output, as XLA's StridedBound
        (0, WindowDim(1), 0),
        (4, WindowDim(1, padding_low=-2, padding_high=-2), 0),
    ],
)
def test_output_spatial_size(base, w, expected):
    out = infer(
        shape.array("f32", [1, 1, base]), shape.array("f32", [1, 1, w.size]), [w], labels(1)
    )
    assert out.dims == (1, 1, expected)


def test_groups_shapes():
    feat = infer(
        shape.array("f32", [2, 6, 5]),
        shape.array("f32", [9, 2, 3]),
        [WindowDim(3)],
        labels(1),
        groups=3,
    )
    assert feat.dims == (2, 9, 3)
    batch = infer(
        shape.array("f32", [6, 4, 5]),
        shape.array("f32", [9, 4, 3]),
        [WindowDim(3)],
        labels(1),
        batch_groups=3,
    )
    assert batch.dims == (2, 9, 3)


def test_zero_spatial_dims_is_a_matmul_shape():
    out = infer(shape.array("f32", [4, 3]), shape.array("f32", [5, 3]), [], labels(0))
    assert out.dims == (4, 5)


@pytest.mark.parametrize(
    "lhs, rhs, window, dn, groups, bgroups, words",
    [
        (
            [1, 1, 4, 4],
            [1, 1, 3],
            [WindowDim(3)] * 2,
            labels(2),
            1,
            1,
            ["rhs f32[1,1,3]", "rank 4"],
        ),
        ([1, 1, 4], [1, 1, 3], [WindowDim(3)] * 2, labels(1), 1, 1, ["window has 2", "1 spatial"]),
        ([1, 1, 4], [1, 1, 3], [WindowDim(2)], labels(1), 1, 1, ["window dimension 0 has size 2"]),
        ([1, 4, 4], [4, 3, 3], [WindowDim(3)], labels(1), 2, 1, ["feature_group_count=2"]),
        ([1, 6, 4], [4, 2, 3], [WindowDim(3)], labels(1), 3, 1, ["4 output features"]),
        ([1, 5, 4], [4, 5, 3], [WindowDim(3)], labels(1), 1, 2, ["batch_group_count=2"]),
        ([2, 5, 4], [3, 5, 3], [WindowDim(3)], labels(1), 1, 2, ["3 output features"]),
        ([2, 4, 4], [4, 2, 3], [WindowDim(3)], labels(1), 2, 2, ["cannot both"]),
        ([1, 1, 4], [1, 1, 3], [WindowDim(3, stride=0)], labels(1), 1, 1, ["stride=0"]),
        (
            [1, 1, 4],
            [1, 1, 3],
            [WindowDim(3, window_dilation=0)],
            labels(1),
            1,
            1,
            ["window_dilation=0"],
        ),
        (
            [1, 1, 4],
            [1, 1, 3],
            [WindowDim(3, base_dilation=-1)],
            labels(1),
            1,
            1,
            ["base_dilation=-1"],
        ),
        (
            [1, 1, 4],
            [1, 1, 3],
            [WindowDim(3, padding_low=-3, padding_high=-2)],
            labels(1),
            1,
            1,
            ["padded size would be -1"],
        ),
        ([1, 1, 4], [1, 1, 3], [WindowDim(3)], REPEATED_INPUT, 1, 1, ["input dimensions"]),
        ([1, 1, 4], [1, 1, 3], [WindowDim(3)], REPEATED_OUTPUT, 1, 1, ["output dimensions"]),
        ([1, 1, 4], [1, 1, 3], [WindowDim(3)], labels(1), 0, 1, ["feature_group_count=0"]),
    ],
)
def test_shape_rejected(lhs, rhs, window, dn, groups, bgroups, words):
    with pytest.raises(InvalidArgument) as err:
        infer(shape.array("f32", lhs), shape.array("f32", rhs), window, dn, groups, bgroups)
    message = str(err.value)
    assert message.startswith("INVALID_ARGUMENT: convolution c:")
    for word in words:
        assert word in message, message


def test_kernel_spatial_count_mismatch_rejected():
    dn = labels(1)
    bad = ConvDimensionNumbers(0, 1, (2,), 1, 0, (2, 3), 0, 1, (2,))
    with pytest.raises(InvalidArgument, match="same number of spatial"):
        infer(shape.array("f32", [1, 1, 4]), shape.array("f32", [1, 1, 3]), [WindowDim(3)], bad)
    with pytest.raises(InvalidArgument, match="dim_labels must be"):
        infer(
            shape.array("f32", [1, 1, 4]),
            shape.array("f32", [1, 1, 3]),
            [WindowDim(3)],
            "bf0_oi0->bf0",
        )
    with pytest.raises(InvalidArgument, match="window must be"):
        infer(shape.array("f32", [1, 1, 4]), shape.array("f32", [1, 1, 3]), [3], dn)


def test_result_types():
    s8 = infer(
        shape.array("s8", [1, 1, 4]),
        shape.array("s8", [1, 1, 3]),
        [WindowDim(3)],
        labels(1),
        declared=shape.array("s32", [1, 1, 2]),
    )
    assert s8.dtype.name == "s32"
    with pytest.raises(InvalidArgument, match="both floating point"):
        infer(
            shape.array("f32", [1, 1, 4]), shape.array("s32", [1, 1, 3]), [WindowDim(3)], labels(1)
        )
    for narrow in ("s16", "f16"):
        with pytest.raises(InvalidArgument, match="at least 32 bits"):
            infer(
                shape.array("s32", [1, 1, 4]),
                shape.array("s32", [1, 1, 3]),
                [WindowDim(3)],
                labels(1),
                declared=shape.array(narrow, [1, 1, 2]),
            )
    s32_into_f32 = infer(
        shape.array("s32", [1, 1, 4]),
        shape.array("s32", [1, 1, 3]),
        [WindowDim(3)],
        labels(1),
        declared=shape.array("f32", [1, 1, 2]),
    )
    assert s32_into_f32.dtype.name == "f32"


# -- values -----------------------------------------------------------------------------------


def test_1d_valid_matches_numpy_correlate():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20)
    k = rng.standard_normal(5)
    got = run_conv(x.reshape(1, 1, 20), k.reshape(1, 1, 5), [WindowDim(5)], labels(1))
    np.testing.assert_allclose(got.ravel(), np.correlate(x, k, "valid"), rtol=1e-12)
    flipped = run_conv(
        x.reshape(1, 1, 20), k.reshape(1, 1, 5), [WindowDim(5, window_reversal=True)], labels(1)
    )
    np.testing.assert_allclose(flipped.ravel(), np.convolve(x, k, "valid"), rtol=1e-12)


def test_2d_nhwc_with_stride_padding_and_dilations():
    rng = np.random.default_rng(1)
    dn = labels(2, ["b", "0", "1", "f"], ["0", "1", "i", "o"], ["b", "0", "1", "f"])
    x = rng.integers(-3, 4, (2, 7, 6, 3)).astype(np.float32)
    k = rng.integers(-3, 4, (3, 2, 3, 4)).astype(np.float32)
    window = [WindowDim(3, 2, 1, 2, window_dilation=2), WindowDim(2, 1, -1, 1, base_dilation=2)]
    got = run_conv(x, k, window, dn)
    np.testing.assert_array_equal(got, reference_conv(x, k, window, dn))


def test_3d_convolution():
    rng = np.random.default_rng(2)
    dn = labels(3)
    x = rng.integers(-2, 3, (1, 2, 4, 5, 3)).astype(np.float64)
    k = rng.integers(-2, 3, (3, 2, 2, 3, 2)).astype(np.float64)
    window = [WindowDim(2, 1, 1, 0), WindowDim(3, 2, 0, 1), WindowDim(2, 1, 0, 0, 2, 1, True)]
    got = run_conv(x, k, window, dn)
    np.testing.assert_array_equal(got, reference_conv(x, k, window, dn))


def test_depthwise_convolution():
    rng = np.random.default_rng(3)
    dn = labels(2, ["b", "0", "1", "f"], ["0", "1", "i", "o"], ["b", "0", "1", "f"])
    channels, multiplier = 4, 2
    x = rng.integers(-3, 4, (2, 5, 5, channels)).astype(np.float32)
    k = rng.integers(-3, 4, (3, 3, 1, channels * multiplier)).astype(np.float32)
    window = [WindowDim(3, 1, 1, 1)] * 2
    got = run_conv(x, k, window, dn, groups=channels)
    assert got.shape == (2, 5, 5, channels * multiplier)
    np.testing.assert_array_equal(got, reference_conv(x, k, window, dn, groups=channels))
    # output feature f reads only input channel f // multiplier
    for f in range(channels * multiplier):
        alone = run_conv(
            x[..., f // multiplier : f // multiplier + 1], k[..., f : f + 1], window, dn
        )
        np.testing.assert_array_equal(got[..., f : f + 1], alone)


def test_batch_group_count_is_a_weight_gradient():
    """bgc = batch: output feature block g sees only batch element g (JAX's filter gradient)."""
    rng = np.random.default_rng(4)
    dn = labels(1, ["f", "b", "0"], ["i", "o", "0"], ["f", "b", "0"])
    x = rng.integers(-3, 4, (3, 4, 6)).astype(np.float64)  # 3 features, batch 4
    k = rng.integers(-3, 4, (3, 8, 2)).astype(np.float64)  # 8 output features = 4 groups of 2
    window = [WindowDim(2)]
    got = run_conv(x, k, window, dn, batch_groups=4)
    assert got.shape == (8, 1, 5)
    np.testing.assert_array_equal(got, reference_conv(x, k, window, dn, batch_groups=4))
    for g in range(4):
        alone = run_conv(x[:, g : g + 1], k[:, 2 * g : 2 * g + 2], window, dn)
        np.testing.assert_array_equal(got[2 * g : 2 * g + 2], alone)


def test_empty_output_window_larger_than_input():
    got = run_conv(
        np.ones((1, 1, 2), np.float32), np.ones((1, 1, 3), np.float32), [WindowDim(3)], labels(1)
    )
    assert got.shape == (1, 1, 0) and got.dtype == np.float32


def test_zero_input_features_gives_zeros():
    got = run_conv(
        np.ones((2, 0, 4), np.float32), np.ones((3, 0, 2), np.float32), [WindowDim(2)], labels(1)
    )
    assert got.shape == (2, 3, 3) and not got.any()


def test_no_spatial_dims_is_a_matmul():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3))
    k = rng.standard_normal((5, 3))
    got = run_conv(x, k, [], labels(0))
    np.testing.assert_allclose(got, x @ k.T, rtol=1e-12)


@pytest.mark.parametrize(
    "dtype, preferred, exact",
    [
        (np.float16, None, False),
        (ml_dtypes.bfloat16, "f32", True),
        (np.float32, None, False),
        (np.int8, "s32", True),
        (np.int32, None, True),
        (np.uint8, "u16", True),
        (np.int8, "f32", True),  # integers into a float result: JAX's preferred_element_type
        (np.int16, "bf16", True),
        (np.int32, "f32", True),
        (np.complex64, None, False),
        (np.complex128, None, False),
    ],
)
def test_dtypes(dtype, preferred, exact):
    rng = np.random.default_rng(6)
    dn = labels(2)
    x = rng.integers(0 if np.dtype(dtype).kind == "u" else -3, 4, (2, 4, 5, 5))
    k = rng.integers(0 if np.dtype(dtype).kind == "u" else -3, 4, (6, 2, 3, 2))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.integers(-3, 4, x.shape)
        k = k + 1j * rng.integers(-3, 4, k.shape)
    x, k = x.astype(dtype), k.astype(dtype)
    window = [WindowDim(3, 1, 1, 0), WindowDim(2, 2, 0, 1, base_dilation=2)]
    got = run_conv(x, k, window, dn, groups=2, preferred=preferred)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    want = reference_conv(x, k, window, dn, groups=2, acc=wide)
    result = dtypes.from_hlo_name(preferred).numpy if preferred else np.dtype(dtype)
    assert got.dtype == result
    if exact:
        np.testing.assert_array_equal(got.astype(wide), want)
    else:
        np.testing.assert_allclose(got.astype(wide), want, rtol=1e-3, atol=1e-3)


def test_integer_overflow_wraps():
    x = np.full((1, 1, 3), 100, np.int8)
    k = np.full((1, 1, 3), 100, np.int8)
    got = run_conv(x, k, [WindowDim(3)], labels(1))
    assert got.dtype == np.int8 and int(got.ravel()[0]) == 48  # 30000 mod 256


def test_nan_and_inf_propagate():
    x = np.array([[[1.0, np.nan, 2.0, 3.0, np.inf]]], np.float32)
    k = np.ones((1, 1, 2), np.float32)
    got = run_conv(x, k, [WindowDim(2)], labels(1)).ravel()
    assert np.isnan(got[0]) and np.isnan(got[1])
    assert got[2] == 5.0 and got[3] == np.inf
    zero_k = np.array([[[0.0, 1.0]]], np.float32)
    got = run_conv(x, zero_k, [WindowDim(2)], labels(1)).ravel()
    assert np.isnan(got[0]) and np.isnan(got[1])  # 0 * NaN and NaN * 1
    assert got[3] == np.inf


def test_small_convolution_sums_window_positions_outer_features_inner():
    """Regression (corpus conv_general_dilated_float32_2_3_9_float32_12_1_3): XLA's evaluator
    loops over window positions, and inside each over input features, adding each separately
    rounded product to a zero f32 accumulator. Products here, in that order: BIG, 1 (lost),
    -BIG, 1, giving 1; features outer would give 2, and BLAS differs again."""
    big = 2.0**25
    x = np.array([[[big, -big], [1, 1]]], np.float32)  # [batch 1, features 2, width 2]
    k = np.ones((1, 2, 2), np.float32)  # [out 1, in 2, width 2]
    got = run_conv(x, k, [WindowDim(2)], labels(1))
    acc = np.float32(0)
    for w in range(2):
        for f in range(2):
            acc = acc + x[0, f, w] * k[0, f, w]
    np.testing.assert_array_equal(got, [[[acc]]])
    assert acc == 1


def test_small_convolution_rounds_each_product_before_adding():
    """Products are rounded before they are added (no fused multiply-add, unlike BLAS kernels):
    (1 + 2^-12)^2 rounds to 1 + 2^-11 and cancels exactly."""
    x = np.tile(np.array([-(1 + 2**-11), 1 + 2**-12], np.float32), (2, 1, 4))  # [2, 1, 8]
    k = np.tile(np.array([1, 1 + 2**-12], np.float32), (3, 1, 1))  # [3, 1, 2]
    got = run_conv(x, k, [WindowDim(2, 2)], labels(1))
    np.testing.assert_array_equal(got, np.zeros((2, 3, 4), np.float32))


@st.composite
def conv_problems(draw):
    n_spatial = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(["plain", "feature", "batch"]))
    g = draw(st.integers(2, 3)) if mode != "plain" else 1
    groups, batch_groups = (g, 1) if mode == "feature" else (1, g) if mode == "batch" else (1, 1)
    batch = batch_groups * draw(st.integers(1, 2))
    kin = draw(st.integers(1, 2))
    out_f = groups * batch_groups * draw(st.integers(1, 2))
    window, base = [], []
    for _ in range(n_spatial):
        size = draw(st.integers(1, 3))
        base_size = draw(st.integers(1, 6 if n_spatial < 3 else 4))
        bd = draw(st.integers(1, 3))
        dilated = (base_size - 1) * bd + 1
        lo = draw(st.integers(-2, 3))
        hi = draw(st.integers(max(-2, -(dilated + lo)), 3))
        window.append(
            WindowDim(
                size,
                draw(st.integers(1, 3)),
                lo,
                hi,
                draw(st.integers(1, 2)),
                bd,
                draw(st.booleans()),
            )
        )
        base.append(base_size)
    sp = [str(i) for i in range(n_spatial)]
    inp = draw(st.permutations(["b", "f", *sp]))
    ker = draw(st.permutations(["o", "i", *sp]))
    out = draw(st.permutations(["b", "f", *sp]))
    dn = labels(n_spatial, list(inp), list(ker), list(out))
    lhs_dims = [0] * (n_spatial + 2)
    lhs_dims[dn.input_batch_dimension] = batch
    lhs_dims[dn.input_feature_dimension] = kin * groups
    rhs_dims = [0] * (n_spatial + 2)
    rhs_dims[dn.kernel_input_feature_dimension] = kin
    rhs_dims[dn.kernel_output_feature_dimension] = out_f
    for i in range(n_spatial):
        lhs_dims[dn.input_spatial_dimensions[i]] = base[i]
        rhs_dims[dn.kernel_spatial_dimensions[i]] = window[i].size
    return lhs_dims, rhs_dims, window, dn, groups, batch_groups, draw(st.integers(0, 2**16))


@settings(max_examples=100, deadline=None)
@given(conv_problems())
def test_random_convolutions_match_reference(problem):
    lhs_dims, rhs_dims, window, dn, groups, batch_groups, seed = problem
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, lhs_dims).astype(np.float64)
    k = rng.integers(-4, 5, rhs_dims).astype(np.float64)
    got = run_conv(x, k, window, dn, groups, batch_groups)
    want = reference_conv(x, k, window, dn, groups, batch_groups)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
