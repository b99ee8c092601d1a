"""The direct channels-last convolution kernel (codegen/conv_kernel.py) vs the interpreter.

It sums each output element in the interpreter's order (window positions row-major, input
features inner, from +0, a rounded multiply then a rounded add), so where the interpreter sums in
order (``linalg.contract``: K <= 64 and at most 2^24 products) results match bit for bit, NaN
payloads aside (NaN positions must agree). Larger sums the interpreter gives to ``np.matmul``:
there the stated dot tolerance of contraction_tolerance.py applies. Which convolutions take the
kernel, and that the rest still run on the im2col thunk, is checked too.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from conv_cases import Conv, window  # noqa: E402

import hlort  # noqa: E402
from hlort_cpu.convolution import ConvolutionThunk  # noqa: E402
from hlort_cpu.thunks import KernelThunk  # noqa: E402


def _compiled(conv: Conv, args):
    exe = hlort.compile(conv.module(), "cpu")
    got = np.asarray(exe(*args))
    assert exe.raw.stats()["fallback_count"] == 0
    return got, exe.raw.program.steps


def _uses_kernel(steps) -> bool:
    kinds = {type(s) for s in steps}
    assert kinds & {KernelThunk, ConvolutionThunk}, kinds
    return ConvolutionThunk not in kinds


def _bitwise(got: np.ndarray, ref: np.ndarray) -> None:
    assert got.dtype == ref.dtype and got.shape == ref.shape
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    g, r = got[~nan], ref[~nan]
    np.testing.assert_array_equal(g.view(np.uint8), r.view(np.uint8))


def check_exact(conv: Conv, args=None, seed: int = 0):
    args = args if args is not None else conv.inputs(np.random.default_rng(seed))
    got, steps = _compiled(conv, args)
    assert _uses_kernel(steps)
    ref = np.asarray(hlort.evaluate(conv.module(), args))
    _bitwise(got, ref)
    return got


CASES = {
    "3x3-same": dict(window=window([3, 3], padding=[(1, 1), (1, 1)])),
    "3x3-valid": dict(window=window([3, 3])),
    "strided-asymmetric": dict(
        spatial=(9, 8), window=window([3, 3], strides=[2, 2], padding=[(0, 1), (0, 1)])
    ),
    "dilated-window": dict(
        spatial=(9, 9), window=window([3, 2], padding=[(2, 2), (1, 0)], rhs_dilation=[2, 3])
    ),
    "cropping": dict(spatial=(8, 9), window=window([2, 3], padding=[(-1, 2), (-2, -1)])),
    "window-larger-than-input": dict(spatial=(2, 3), window=window([4, 4], padding=[(2, 2)] * 2)),
    "1x1": dict(window=window([1, 1]), out_features=20),
    "size-1": dict(batch=1, features=1, spatial=(1, 1), out_features=1, window=window([1, 1])),
    "wide-row": dict(spatial=(3, 40), features=5, out_features=37, window=window([2, 3])),
    "many-out-features": dict(
        features=2, out_features=70, window=window([3, 3], padding=[(1, 1)] * 2)
    ),
    "many-in-features": dict(features=7, out_features=3, spatial=(4, 5)),
    "empty-rows-padded": dict(spatial=(0, 4), window=window([2, 2], padding=[(1, 2), (1, 0)])),
    "empty-last-dim-padded": dict(spatial=(4, 0), window=window([2, 2], padding=[(1, 0), (2, 1)])),
    "1d": dict(labels="b0f_0io->b0f", spatial=(17,), window=window([4], padding=[(2, 1)])),
    "3d": dict(
        labels="b012f_012io->b012f",
        spatial=(4, 5, 6),
        window=window([2, 3, 3], padding=[(1, 0), (1, 1), (0, 2)]),
    ),
}


@pytest.mark.parametrize("type_name", ["f32", "f64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_bitwise_equal_to_the_interpreter(name, type_name):
    check_exact(Conv(types=(type_name, type_name), **CASES[name]))


@pytest.mark.parametrize("type_name", ["f32", "f64"])
def test_nan_inf_signed_zero_and_padded_inf_weights(type_name):
    """NaN and inf spread to the windows that see them; an inf weight meets the padding's zeros
    (NaN there, as the interpreter's zero-padded product); -0 products sum to +0."""
    conv = Conv(
        features=3,
        out_features=11,
        spatial=(7, 9),
        types=(type_name, type_name),
        window=window([3, 3], padding=[(1, 1), (1, 1)]),
    )
    x, w = conv.inputs(np.random.default_rng(8))
    x[0, 0, 0, 0], x[1, 3, 2, 1] = np.nan, np.inf
    x[0, 4, 4, :] = -np.inf
    x[1, :, :, 2] = -0.0
    w[0, 0, 1, 5] = np.inf
    w[1, 1, :, 2] = 0.0
    w[2, 2, 0, 7] = np.nan
    got = check_exact(conv, [x, w])
    assert np.isnan(got[0, 0, 0, 5])  # the top-left window's (0, 0) position is padding
    x2, w2 = conv.inputs(np.random.default_rng(9))
    x2[1] = -0.0
    w2[..., 3] = np.abs(w2[..., 3]) + 1
    got = check_exact(conv, [x2, w2])
    plane = got[1, :, :, 3]
    assert (plane == 0).all() and not np.signbit(plane).any()


def test_cnn_shapes_within_the_dot_tolerance():
    """The benchmark CNN's two convolutions: K = 27 sums in order (bitwise), K = 144 is
    np.matmul in the interpreter (the stated tolerance)."""
    first = Conv(
        batch=2,
        features=3,
        spatial=(32, 32),
        out_features=16,
        window=window([3, 3], padding=[(1, 1)] * 2),
    )
    check_exact(first)
    second = Conv(
        batch=2,
        features=16,
        spatial=(32, 32),
        out_features=32,
        window=window([3, 3], strides=[2, 2], padding=[(0, 1)] * 2),
    )
    args = second.inputs(np.random.default_rng(3))
    got, steps = _compiled(second, args)
    assert _uses_kernel(steps)
    assert_matches_reference(second.module(), args, got, second.k)


OTHERS = {
    "nchw": dict(labels="bf01_oi01->bf01"),
    "groups": dict(features=4, out_features=4, groups=2),
    "batch-groups": dict(batch=4, out_features=4, batch_groups=2),
    "base-dilation": dict(window=window([3, 3], lhs_dilation=[2, 1])),
    "reversal": dict(window=window([3, 3], reversal=[True, False])),
    "bf16": dict(types=("bf16", "bf16")),
    "f16": dict(types=("f16", "f16")),
    "mixed": dict(types=("f32", "f64")),
    "s32": dict(types=("s32", "s32")),
    "empty-features": dict(features=0),
    "big-kernel": dict(features=64, out_features=64, spatial=(4, 4)),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_convolutions_stay_on_the_im2col_thunk(name):
    conv = Conv(**OTHERS[name])
    args = conv.inputs(np.random.default_rng(1))
    got, steps = _compiled(conv, args)
    assert not _uses_kernel(steps)
    assert_matches_reference(conv.module(), args, got, conv.k)


def test_rows_split_across_threads_match():
    """Enough rows for several chunks: every thread's rows are written, bit for bit."""
    conv = Conv(
        batch=3,
        features=4,
        spatial=(40, 33),
        out_features=24,
        window=window([3, 3], padding=[(1, 1)] * 2),
    )
    check_exact(conv, seed=5)


def test_interior_never_starts_past_the_row():
    """A low padding larger than the output row (cropped back by a negative high padding) puts
    the first fully-inside pixel past the row's end: the interior is then empty at the row's
    end, so no edge block starts past it (a block starting past it wrote out of bounds)."""
    from hlort_cpu.codegen.conv_kernel import _interior

    w = window([12], padding=[(10, 3)])[0]
    assert _interior(1, w, 3) == (3, 3)
    w = window([1], padding=[(20, -18)])[0]
    assert _interior(1, w, 3) == (3, 3)


@pytest.mark.parametrize("type_name", ["f32", "f64"])
def test_low_padding_past_the_output_row(type_name):
    conv = Conv(
        batch=3,
        features=2,
        spatial=(40, 1),
        out_features=8,
        types=(type_name, type_name),
        window=window([2, 12], padding=[(1, 0), (10, 3)]),
    )
    check_exact(conv, seed=4)
