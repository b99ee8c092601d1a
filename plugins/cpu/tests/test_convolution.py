"""Convolutions on the cpu backend (im2col + BLAS, depthwise multiply-add) vs the interpreter.

Integer and pred convolutions must match bit for bit (wrapping included). Float convolutions may
differ from the interpreter only by summation order: per element, ``|cpu - ref| <= 2 (K + 2)
eps(acc) sum_k |x_k w_k| + eps(result) |ref|`` with K = window size * input features per group
(twice the standard dot-product error bound in the accumulation type, plus one rounding to the
result type), with NaN where the interpreter has NaN and equal infinities. Complex convolutions
of at most 64 products per element are summed in XLA's order: bit for bit. Every program must
run without an interpreter FALLBACK.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("llvmlite")
hypothesis = pytest.importorskip("hypothesis")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from conv_cases import Conv, window  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hlort  # noqa: E402
from hlort.ir.attributes import WindowDim  # noqa: E402
from hlort_cpu.convolution import ConvolutionThunk  # noqa: E402


def _run_compiled(module, args):
    exe = hlort.compile(module, "cpu")
    got = exe(*args)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    return got, stats


def _run_thunk(module, args, batch_chunk: int | None = None):
    thunk = ConvolutionThunk(module.entry.root, [0, 1], 2)
    if batch_chunk is not None:
        thunk.batch_chunk = batch_chunk
    env = [*args, None]
    thunk(env)
    return env[2]


def check(conv: Conv, seed: int = 0, low=-3.0, high=3.0, compiled: bool = True) -> np.ndarray:
    """Run ``conv`` as a thunk and compiled end to end; both must match the interpreter."""
    module = conv.module()
    args = conv.inputs(np.random.default_rng(seed), low, high)
    got = _run_thunk(module, args)
    assert_matches_reference(module, args, got, conv.k)
    if compiled:
        got, stats = _run_compiled(module, args)
        assert any(label.startswith("convolution") for label in stats["compiled"]), stats
        assert_matches_reference(module, args, got, conv.k)
    return got


LAYOUTS = {
    "nhwc-hwio": ("b01f_01io->b01f", (6, 5)),
    "nchw-oihw": ("bf01_oi01->bf01", (6, 5)),
    "nchw-hwio-nhwc": ("bf01_01io->b01f", (6, 5)),
    "scrambled": ("0fb1_o1i0->1bf0", (6, 5)),
    "1d-nwc": ("b0f_0io->b0f", (9,)),
    "1d-ncw": ("bf0_oi0->bf0", (9,)),
    "3d-ndhwc": ("b012f_012io->b012f", (4, 5, 4)),
    "3d-ncdhw": ("bf012_oi012->bf012", (4, 5, 4)),
    "no-spatial": ("bf_io->bf", ()),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_dimension_numbers(name):
    labels, spatial = LAYOUTS[name]
    check(Conv(labels, spatial=spatial, window=window([3] * len(spatial))))
    check(
        Conv(
            labels,
            spatial=spatial,
            window=window([2] * len(spatial), [2] * len(spatial), [(1, 0)] * len(spatial)),
        )
    )


WINDOWS = {
    "stride": window([3, 2], strides=[2, 3]),
    "padding": window([3, 3], padding=[(1, 1), (2, 0)]),
    "negative-padding": window([2, 3], padding=[(-1, 2), (1, -2)]),
    "lhs-dilation-transposed-conv": window([3, 3], padding=[(2, 2), (1, 2)], lhs_dilation=[2, 3]),
    "rhs-dilation-atrous": window([3, 2], padding=[(2, 2), (0, 0)], rhs_dilation=[2, 3]),
    "reversal": window([3, 2], reversal=[True, False]),
    "everything": window([2, 3], [2, 1], [(-1, 3), (2, 1)], [3, 2], [2, 1], [False, True]),
    "window-larger-than-input": window([7, 3]),
    "one-by-one": window([1, 1]),
    "one-by-one-strided": window([1, 1], strides=[2, 2]),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
@pytest.mark.parametrize("labels", ["b01f_01io->b01f", "bf01_oi01->bf01"])
def test_window_attributes(name, labels):
    check(Conv(labels, window=WINDOWS[name]))


GROUPS = {  # name: (features, out_features, groups, batch_groups, batch)
    "feature-groups": (4, 6, 2, 1, 2),
    "depthwise": (5, 5, 5, 1, 2),
    "depthwise-multiplier": (3, 6, 3, 1, 2),
    "batch-groups": (3, 4, 1, 2, 4),
    "batch-groups-as-weight-gradient": (3, 6, 1, 3, 3),
}


@pytest.mark.parametrize("name", sorted(GROUPS))
@pytest.mark.parametrize("win", ["plain", "strided-padded-dilated"])
@pytest.mark.parametrize("labels", ["b01f_01io->b01f", "bf01_oi01->bf01", "f01b_i01o->01bf"])
def test_groups(name, win, labels):
    features, out_features, groups, batch_groups, batch = GROUPS[name]
    w = (
        window([3, 3])
        if win == "plain"
        else window([3, 2], [2, 1], [(1, 1), (0, 2)], rhs_dilation=[1, 2])
    )
    conv = Conv(
        labels,
        batch=batch,
        features=features,
        out_features=out_features,
        window=w,
        groups=groups,
        batch_groups=batch_groups,
    )
    check(conv)


def test_depthwise_uses_the_direct_kernel_and_im2col_otherwise():
    depthwise = Conv(features=4, out_features=8, groups=4).module()
    grouped = Conv(features=4, out_features=8, groups=2).module()
    assert ConvolutionThunk(depthwise.entry.root, [0, 1], 2).depthwise
    assert not ConvolutionThunk(grouped.entry.root, [0, 1], 2).depthwise


SAME_TYPE = [
    "pred",
    "s8",
    "s16",
    "s32",
    "s64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8e4m3fn",
    "f8e5m2",
    "c64",
    "c128",
]


@pytest.mark.parametrize("type_name", SAME_TYPE)
@pytest.mark.parametrize("groups", [1, 3])
def test_every_element_type(type_name, groups):
    conv = Conv(
        features=3,
        out_features=6,
        groups=groups,
        types=(type_name, type_name),
        window=window([3, 2], padding=[(1, 1), (0, 1)]),
    )
    check(conv, low=-4, high=4)


MIXED = [  # (lhs, rhs, declared result or None)
    ("pred", "pred", "s32"),
    ("pred", "pred", "f32"),
    ("s8", "s8", "s32"),
    ("s8", "s8", "s8"),
    ("u8", "s8", "s16"),
    ("u16", "u16", "u64"),
    ("s32", "s32", "s64"),
    ("u64", "s64", None),
    ("f16", "f32", None),
    ("bf16", "bf16", "f32"),
    ("f16", "f16", "f32"),
    ("f64", "f64", "f16"),
    ("f32", "f32", "bf16"),
    ("f8e4m3fn", "f8e5m2", "f32"),
    ("c64", "c128", None),
]


@pytest.mark.parametrize("lhs_type,rhs_type,result", MIXED)
def test_mixed_element_types(lhs_type, rhs_type, result):
    check(Conv(types=(lhs_type, rhs_type), preferred=result), low=-4, high=4)


@pytest.mark.parametrize(
    "type_name,result",
    [
        ("s8", None),
        ("s8", "s32"),
        ("u8", "u32"),
        ("s16", None),
        ("s32", None),
        ("s64", None),
        ("u64", None),
    ],
)
@pytest.mark.parametrize("groups", [1, 4])
def test_full_range_integers_wrap_like_the_interpreter(type_name, result, groups):
    conv = Conv(
        features=8,
        out_features=4,
        groups=groups,
        types=(type_name, type_name),
        preferred=result,
        window=window([3, 3], padding=[(1, 1), (1, 1)]),
    )
    check(conv, low=None, high=None)


@pytest.mark.parametrize("type_name", ["f32", "f64", "bf16", "f16", "c64"])
@pytest.mark.parametrize("groups", [1, 3])
def test_nan_inf_and_signed_zero(type_name, groups):
    """NaN and inf spread to the windows that see them; inf times a padded zero is NaN."""
    conv = Conv(
        features=3,
        out_features=3,
        groups=groups,
        types=(type_name, type_name),
        window=window([3, 3], padding=[(1, 1), (1, 1)]),
    )
    module = conv.module()
    x, w = conv.inputs(np.random.default_rng(8))
    x[0, 0, 0, 0], x[1, 3, 2, 1] = np.nan, np.inf
    x[0, 4, 4, :] = -np.inf
    x[1, :, :, 2] = -0.0
    w[1, 1, :, 2] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf and inf * 0 stay silent, as in XLA
        got = _run_thunk(module, [x, w])
    assert_matches_reference(module, [x, w], got, conv.k)
    got, _ = _run_compiled(module, [x, w])
    assert_matches_reference(module, [x, w], got, conv.k)


@pytest.mark.parametrize("type_name", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("groups", [1, 3])
def test_sums_of_negative_zero_products_are_positive_zero(type_name, groups):
    """Every product of output feature 2 of batch 1 is -0.0 (no padding); XLA sums from a +0
    accumulator, so the sums are +0.0."""
    conv = Conv(features=3, out_features=3, groups=groups, types=(type_name, type_name))
    module = conv.module()
    x, w = conv.inputs(np.random.default_rng(10))
    x[1] = -0.0
    w[..., 2] = np.abs(w[..., 2]) + 1
    for got in (_run_thunk(module, [x, w]), _run_compiled(module, [x, w])[0]):
        plane = got[1, :, :, 2].astype(np.float32)
        assert (plane == 0).all() and not np.signbit(plane).any()
        assert_matches_reference(module, [x, w], got, conv.k)


EMPTY = {
    "zero-batch": dict(batch=0),
    "zero-features": dict(features=0),
    "zero-out-features": dict(out_features=0),
    "zero-spatial": dict(spatial=(0, 5), window=window([1, 2])),
    "cropped-to-nothing": dict(window=window([1, 1], padding=[(-3, -3), (0, 0)])),
    "empty-input-padded": dict(spatial=(0, 5), window=window([2, 2], padding=[(2, 1), (0, 0)])),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
@pytest.mark.parametrize("type_name", ["f32", "s16", "pred", "c64"])
def test_empty_dimensions(name, type_name):
    """Empty results, empty contractions, and a padding-only base (all products zero)."""
    check(Conv(types=(type_name, type_name), **EMPTY[name]))


@pytest.mark.parametrize("chunk", [1, 2])
@pytest.mark.parametrize("groups,batch_groups", [(1, 1), (2, 1), (1, 5)])
def test_im2col_chunks_over_the_batch(chunk, groups, batch_groups):
    """The im2col rows are built a few batches at a time; uneven chunks cover every batch."""
    conv = Conv(
        batch=5,
        features=4,
        out_features=10,
        groups=groups,
        batch_groups=batch_groups,
        window=window([3, 3], padding=[(1, 1), (1, 1)]),
    )
    module = conv.module()
    args = conv.inputs(np.random.default_rng(9))
    assert_matches_reference(module, args, _run_thunk(module, args, chunk), conv.k)


def test_resnet_style_block_matches():
    conv = Conv(
        batch=2,
        features=32,
        out_features=32,
        spatial=(14, 14),
        window=window([3, 3], padding=[(1, 1), (1, 1)]),
    )
    check(conv)
    check(
        Conv(
            batch=2,
            features=32,
            out_features=32,
            spatial=(14, 14),
            groups=32,
            window=window([3, 3], [2, 2], padding=[(1, 1), (1, 1)]),
        )
    )


@st.composite
def convolutions(draw):
    n_spatial = draw(st.integers(0, 3))
    group_kind = draw(st.sampled_from(["none", "feature", "batch"]))
    count = draw(st.integers(1, 3))
    groups = count if group_kind == "feature" else 1
    batch_groups = count if group_kind == "batch" else 1
    batch = batch_groups * draw(st.integers(1, 2))  # empty shapes: test_empty_dimensions
    features = groups * draw(st.integers(1, 3))
    out_features = groups * batch_groups * draw(st.integers(1, 3))
    dims = []
    for _ in range(n_spatial):
        size = draw(st.integers(1, 3))
        dilation = draw(st.integers(1, 2))
        stride = draw(st.integers(1, 3))
        lhs_dilation = draw(st.integers(1, 2))
        base = draw(st.integers(1, 6))
        low, high = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        if (base - 1) * lhs_dilation + 1 + low + high < 0:  # the shape rule rejects it
            low = high = 0
        dims.append(
            (base, WindowDim(size, stride, low, high, dilation, lhs_dilation, draw(st.booleans())))
        )
    letters = [str(i) for i in range(n_spatial)]
    lhs_labels = draw(st.permutations(["b", "f", *letters]))
    rhs_labels = draw(st.permutations(["i", "o", *letters]))
    out_labels = draw(st.permutations(["b", "f", *letters]))
    labels = f"{''.join(lhs_labels)}_{''.join(rhs_labels)}->{''.join(out_labels)}"
    type_name = draw(st.sampled_from(["f32", "f64", "s32", "u8", "bf16", "c64", "pred"]))
    conv = Conv(
        labels,
        batch=batch,
        features=features,
        spatial=tuple(d[0] for d in dims),
        out_features=out_features,
        window=tuple(d[1] for d in dims),
        groups=groups,
        batch_groups=batch_groups,
        types=(type_name, type_name),
    )
    return conv, draw(st.integers(0, 2**16))


@settings(max_examples=100, deadline=None)
@given(convolutions())
def test_random_convolutions_match_interpreter(case):
    conv, seed = case
    check(conv, seed, low=-4, high=4, compiled=False)
