"""Convolution cases shared by the cpu convolution tests (test_convolution.py, test_conv_kernel.py):
a convolution described by its logical sizes and laid out by XLA's dimension labels, and its
window. A module of its own because test modules' names are not unique across the repository's
test folders (tests/ops has a test_convolution.py too)."""

from __future__ import annotations

import math

from hlort import Builder, dtypes, shape
from hlort.ir.attributes import WindowDim
from hlort.testing.values import random_values
from hlort.text.attribute_syntax import dim_labels_from_text


class Conv:
    """One convolution: logical sizes, laid out by ``labels`` (XLA's ``b01f_01io->b01f``)."""

    def __init__(
        self,
        labels="b01f_01io->b01f",
        batch=2,
        features=3,
        spatial=(6, 5),
        out_features=4,
        window=None,
        groups=1,
        batch_groups=1,
        types=("f32", "f32"),
        preferred=None,
    ):
        self.dn = dim_labels_from_text(labels)
        window = window or tuple(WindowDim(3) for _ in spatial)
        self.window = tuple(window)
        self.groups, self.batch_groups = groups, batch_groups
        self.types, self.preferred = types, preferred
        dn = self.dn
        lhs = [0] * (len(spatial) + 2)
        lhs[dn.input_batch_dimension] = batch
        lhs[dn.input_feature_dimension] = features
        rhs = [0] * (len(spatial) + 2)
        rhs[dn.kernel_input_feature_dimension] = features // groups
        rhs[dn.kernel_output_feature_dimension] = out_features
        for i, size in enumerate(spatial):
            lhs[dn.input_spatial_dimensions[i]] = size
            rhs[dn.kernel_spatial_dimensions[i]] = self.window[i].size
        self.lhs_dims, self.rhs_dims = tuple(lhs), tuple(rhs)
        self.k = math.prod(w.size for w in self.window) * (features // groups)

    def module(self):
        b = Builder("conv")
        x = b.parameter(shape.array(self.types[0], self.lhs_dims))
        w = b.parameter(shape.array(self.types[1], self.rhs_dims))
        return b.build(
            b.convolution(
                x,
                w,
                self.window,
                self.dn,
                feature_group_count=self.groups,
                batch_group_count=self.batch_groups,
                preferred=self.preferred,
            )
        )

    def inputs(self, rng, low=-3.0, high=3.0):
        """Uniform in [low, high] (full range for integers when None)."""
        return [
            random_values(dtypes.from_hlo_name(t), dims, rng, low, high)
            for t, dims in zip(self.types, (self.lhs_dims, self.rhs_dims), strict=True)
        ]


def window(
    sizes, strides=None, padding=None, lhs_dilation=None, rhs_dilation=None, reversal=None
) -> tuple[WindowDim, ...]:
    n = len(sizes)
    strides, lhs_dilation = strides or [1] * n, lhs_dilation or [1] * n
    padding, rhs_dilation = padding or [(0, 0)] * n, rhs_dilation or [1] * n
    reversal = reversal or [False] * n
    return tuple(
        WindowDim(
            sizes[i],
            strides[i],
            padding[i][0],
            padding[i][1],
            rhs_dilation[i],
            lhs_dilation[i],
            reversal[i],
        )
        for i in range(n)
    )
