"""Convolution programs for the GPU direct convolution kernel's checks
(hlort.codegen.gpu.conv_schedule), shared by the host-simulator tests (tests/gpu) and the PTX /
code-object checks of the cuda and rocm plugins: unusual dimension numbers (NCHW/OIHW, a 1-D
feature-first layout), strides, negative and positive padding, base and window dilation,
window reversal, feature and batch groups, integer and narrow-float accumulation, a window
long enough (K > 64) that the interpreter sums it by BLAS, complex (c64, c128) and pred
convolutions (pred into pred: the OR of ANDs; into s32: counts)."""

from __future__ import annotations

import numpy as np

from hlort.ir.attributes import ConvDimensionNumbers, WindowDim

_NCHW = ConvDimensionNumbers(0, 1, (2, 3), 1, 0, (2, 3), 0, 1, (2, 3))
_NHWC = ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
_F0B = ConvDimensionNumbers(2, 0, (1,), 1, 2, (0,), 1, 2, (0,))  # f0b_0io->0bf


def _window(sizes, strides=None, pads=None, base=None, dil=None, rev=None):
    n = len(sizes)
    strides, pads = strides or [1] * n, pads or [(0, 0)] * n
    base, dil, rev = base or [1] * n, dil or [1] * n, rev or [False] * n
    return tuple(
        WindowDim(s, st, lo, hi, d, bd, r)
        for s, st, (lo, hi), bd, d, r in zip(sizes, strides, pads, base, dil, rev, strict=True)
    )


# name -> (input dtype, result dtype, input dims, kernel dims, window, dims, groups, batch groups)
CONV_PROGRAMS = {
    "nchw-dilated-reversed": (
        "f32",
        "f32",
        (2, 3, 7, 6),
        (4, 3, 3, 2),
        _window([3, 2], [2, 1], [(2, 1), (-1, 2)], [2, 1], [1, 2], [True, False]),
        _NCHW,
        1,
        1,
    ),
    "nhwc-batch-groups": ("f32", "f32", (4, 5, 5, 3), (2, 2, 3, 6), _window([2, 2]), _NHWC, 1, 2),
    "f0b-feature-groups-1d": (
        "f64",
        "f64",
        (4, 9, 2),
        (3, 2, 6),
        _window([3], [2], [(1, 1)]),
        _F0B,
        2,
        1,
    ),
    "s8-into-s32": ("s8", "s32", (1, 6, 6, 4), (3, 3, 4, 5), _window([3, 3]), _NHWC, 1, 1),
    "c64-padded-dilated": (
        "c64",
        "c64",
        (2, 6, 5, 3),
        (3, 2, 3, 4),
        _window([3, 2], [1, 2], [(1, 2), (0, 1)], None, [2, 1]),
        _NHWC,
        1,
        1,
    ),
    "c128-feature-groups-1d": (
        "c128",
        "c128",
        (4, 9, 2),
        (3, 2, 6),
        _window([3], [2], [(1, 1)], None, None, [True]),
        _F0B,
        2,
        1,
    ),
    "pred-or-of-ands": ("pred", "pred", (1, 6, 6, 2), (2, 2, 2, 3), _window([2, 2]), _NHWC, 1, 1),
    "pred-into-s32": ("pred", "s32", (2, 3, 5, 5), (4, 3, 2, 2), _window([2, 2]), _NCHW, 1, 1),
    "bf16-long-window": (
        "bf16",
        "bf16",
        (1, 12, 12, 8),
        (5, 5, 8, 4),
        _window([5, 5]),
        _NHWC,
        1,
        1,
    ),
}


def conv_module(name: str):
    from hlort import Builder
    from hlort.shape import array

    dt, out, lhs, rhs, window, dn, groups, batch_groups = CONV_PROGRAMS[name]
    b = Builder(name.replace("-", "_"))
    conv = b.convolution(
        b.parameter(array(dt, lhs)),
        b.parameter(array(dt, rhs)),
        window,
        dn,
        feature_group_count=groups,
        batch_group_count=batch_groups,
        preferred=out if out != dt else None,
    )
    return b.build(conv)


def conv_inputs(name: str, seed: int = 5) -> list[np.ndarray]:
    from hlort.dtypes import from_hlo_name

    dt, _out, lhs, rhs, *_ = CONV_PROGRAMS[name]
    rng = np.random.default_rng(seed)
    np_dt = from_hlo_name(dt).numpy
    if dt == "pred":  # mostly false, so that some OR of ANDs is false too
        return [rng.random(d) < 0.3 for d in (lhs, rhs)]
    if dt.startswith(("s", "u")):
        return [rng.integers(-8, 8, d).astype(np_dt) for d in (lhs, rhs)]
    if dt.startswith("c"):  # quarters in both parts: every product and sum exact
        return [
            ((rng.integers(-8, 8, d) + 1j * rng.integers(-8, 8, d)) / 4).astype(np_dt)
            for d in (lhs, rhs)
        ]
    return [(rng.integers(-8, 8, d) / 4).astype(np_dt) for d in (lhs, rhs)]


__all__ = ["CONV_PROGRAMS", "conv_inputs", "conv_module"]
