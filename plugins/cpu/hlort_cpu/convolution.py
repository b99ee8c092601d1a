"""ConvolutionThunk: convolution as im2col plus one (batched) BLAS matmul, planned at compile time.

Every form the interpreter evaluates (``hlort.interpreter.ops.convolution``): any dimension
numbers and number of spatial dimensions, strides, padding (negative crops), base (lhs) and window
(rhs) dilation, window reversal, ``feature_group_count`` and ``batch_group_count``.

At compile time the thunk fixes: the input's axis order with features last (so one window row of
the im2col matrix is a run of contiguous features); the padded, dilated "base" shape and the
slices that place the input in it; the strides of the im2col view over that base,
[batch group, feature group, batch, out spatial..., window..., features]; the kernel's
rearrangement to [group, window * features, out features]; and the transpose to the output's
dimension order. A call then does a fixed handful of NumPy operations, none per element: place the
input in a zeroed base (skipped when nothing is padded or dilated and the input is already
features-last in the compute type), materialize the im2col rows a chunk of batch at a time
(bounded memory), and let one matmul per chunk write straight into the features-last result.

Depthwise convolutions (one input feature per group) skip im2col: the output is summed over the
window positions, one vectorized multiply-add of the strided base per position, in the
interpreter's order (window positions row-major, each product rounded, from +0).

Arithmetic (compute type, exact integers, wrapping, rounding) is the dot's:
:mod:`hlort_cpu.contraction_arithmetic`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from hlort.ir.attributes import WindowDim
from hlort.ir.instruction import Instruction
from hlort.ir.shape_rules.convolution import dilated_bound
from hlort_cpu import blas_threads
from hlort_cpu.contraction_arithmetic import plan_arithmetic
from hlort_cpu.dot_split import split_matmul

IM2COL_CHUNK_BYTES = 8 << 20
"""The im2col rows of this many bytes are built and multiplied at a time (at least one batch)."""


@dataclass(frozen=True)
class BasePlan:
    """Where the input (features last) lands in the zero-filled, padded, dilated base."""

    shape: tuple[int, ...]
    source: tuple[slice, ...]
    target: tuple[slice, ...]
    is_input: bool  # no padding, no dilation: the base is the input itself


def plan_base(dims: tuple[int, ...], window: tuple[WindowDim, ...]) -> BasePlan:
    """``dims`` = [batch, spatial..., features]; padding may be negative (it crops)."""
    shape, source, target = [dims[0]], [slice(None)], [slice(None)]
    for d, w in zip(dims[1:-1], window, strict=True):
        step, low = w.base_dilation, w.padding_low
        size = dilated_bound(d, step) + low + w.padding_high
        first = -(low // step) if low < 0 else 0  # the first element landing at >= 0
        stop = max(min(d, -((low - size) // step)), first) if size > low else first
        shape.append(size)
        source.append(slice(first, stop))
        end = low + (stop - 1) * step + 1 if stop > first else low + first * step
        target.append(slice(low + first * step, end, step))
    shape.append(dims[-1])
    source.append(slice(None))
    target.append(slice(None))
    is_input = all(
        w.base_dilation == 1 and w.padding_low == 0 and w.padding_high == 0 for w in window
    )
    return BasePlan(tuple(shape), tuple(source), tuple(target), is_input)


class ConvolutionThunk:
    """im2col + matmul (or the depthwise sum), see the module docstring."""

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        dn = instr.attrs["dim_labels"]
        window = tuple(instr.attrs.get("window", ()))
        lhs, rhs = (o.shape for o in instr.operands)
        result = instr.shape
        self.ins, self.out = ins, out
        self.out_dims = result.dims
        self.result_dtype = result.dtype.numpy

        batch_groups = instr.attrs.get("batch_group_count", 1)
        groups = instr.attrs.get("feature_group_count", 1)
        nb = lhs.dims[dn.input_batch_dimension] // batch_groups
        cg = lhs.dims[dn.input_feature_dimension] // groups
        bg = batch_groups * groups
        og = rhs.dims[dn.kernel_output_feature_dimension] // bg
        out_spatial = tuple(result.dims[d] for d in dn.output_spatial_dimensions)
        win = tuple(w.size for w in window)
        positions = math.prod(out_spatial)
        k = math.prod(win) * cg
        self.arithmetic = plan_arithmetic(lhs.dtype, rhs.dtype, result.dtype, k, result.size)
        self.compute = self.arithmetic.compute
        self.empty = result.size == 0 or k == 0
        # complex sums in XLA's order take the batched in-order matmul (one loop over K)
        self.depthwise = (
            cg == 1 and groups > 1 and batch_groups == 1 and (not self.arithmetic.ordered)
        )

        self.input_perm = (
            dn.input_batch_dimension,
            *dn.input_spatial_dimensions,
            dn.input_feature_dimension,
        )
        self.base = plan_base(tuple(lhs.dims[d] for d in self.input_perm), window)
        self._plan_kernel(dn, window, (bg, og, *win, cg))
        self.nb, self.bg, self.k, self.rows_per_batch = nb, bg, k, positions
        self.product_shape = (nb * positions, bg, og)  # features last, rows = batch * positions
        self.features_last = (nb, *out_spatial, bg * og)
        self.output_perm = _output_perm(dn)
        self.output_is_features_last = self.output_perm == tuple(range(len(self.output_perm)))
        if self.depthwise:
            self.window_slices = _window_slices(window, out_spatial)
        else:
            self._plan_im2col(window, (batch_groups, groups, nb, *out_spatial, *win, cg))

    def _plan_kernel(self, dn, window: tuple[WindowDim, ...], groups_shape: tuple) -> None:
        """The kernel as [out features, window..., in features] (reversed where asked), split
        into ``groups_shape`` = [bg, og, window..., cg], then laid out for the product."""
        spatial = len(window)
        bg, og, cg = groups_shape[0], groups_shape[1], groups_shape[-1]
        window_size = math.prod(groups_shape[2:-1])
        self.kernel_perm = (
            dn.kernel_output_feature_dimension,
            *dn.kernel_spatial_dimensions,
            dn.kernel_input_feature_dimension,
        )
        self.kernel_flips = tuple(1 + i for i, w in enumerate(window) if w.window_reversal)
        self.kernel_groups = groups_shape
        if self.depthwise:  # [window position, group, og]
            self.kernel_order = (*range(2, 2 + spatial), 0, 2 + spatial, 1)
            self.kernel_shape = (window_size, bg, og)
        else:  # [bg, window..., cg, og] -> [bg, K, og]
            self.kernel_order = (0, *range(2, 3 + spatial), 1)
            self.kernel_shape = (bg, window_size * cg, og) if bg > 1 else (window_size * cg, og)

    def _plan_im2col(self, window: tuple[WindowDim, ...], shape: tuple[int, ...]) -> None:
        """Strides of the im2col view [B, G, batch, out..., window..., cg] over the C-ordered
        base [B * batch, padded..., G * cg], and how many batches to materialize at a time."""
        itemsize = self.compute.itemsize
        strides = [
            math.prod(self.base.shape[d + 1 :]) * itemsize for d in range(len(self.base.shape))
        ]
        batch, feature = strides[0], strides[-1]
        nb, cg = shape[2], shape[-1]
        self.im2col_shape = shape
        self.im2col_strides = (
            nb * batch,
            cg * feature,
            batch,
            *(strides[1 + i] * w.stride for i, w in enumerate(window)),
            *(strides[1 + i] * w.window_dilation for i, w in enumerate(window)),
            feature,
        )
        batch_bytes = self.rows_per_batch * self.k * self.bg * itemsize
        self.batch_chunk = max(1, IM2COL_CHUNK_BYTES // max(batch_bytes, 1))

    @property
    def label(self) -> str:
        if self.depthwise:
            return f"convolution (depthwise multiply-add, {self.compute.name})"
        return f"convolution (im2col, {self.arithmetic.label})"

    def _base(self, lhs: np.ndarray) -> np.ndarray:
        """The padded, dilated input, features last, C-ordered, in the compute type."""
        x = lhs.transpose(self.input_perm)
        if self.base.is_input:
            return np.ascontiguousarray(x, dtype=self.compute)
        base = np.zeros(self.base.shape, self.compute)
        base[self.base.target] = x[self.base.source]
        return base

    def _kernel(self, rhs: np.ndarray) -> np.ndarray:
        w = rhs.transpose(self.kernel_perm)
        if self.kernel_flips:
            w = np.flip(w, self.kernel_flips)
        w = w.reshape(self.kernel_groups).transpose(self.kernel_order)
        return np.asarray(w, dtype=self.compute, order="C").reshape(self.kernel_shape)

    def _im2col_product(self, base: np.ndarray, kernel: np.ndarray) -> np.ndarray:
        view = np.ndarray(self.im2col_shape, self.compute, base, 0, self.im2col_strides)
        product = np.empty(self.product_shape, self.compute)
        rows = self.rows_per_batch
        for first in range(0, self.nb, self.batch_chunk):
            last = min(self.nb, first + self.batch_chunk)
            span = slice(first * rows, last * rows)
            cols = view[:, :, first:last].reshape(self.bg, (last - first) * rows, self.k)
            if self.bg == 1:
                out = product[span, 0]
                if self.arithmetic.ordered or not split_matmul(cols[0], kernel, out):
                    self.arithmetic.matmul(cols[0], kernel, out=out)
                else:
                    self.arithmetic.repair(cols[0], kernel, out)
            else:
                self.arithmetic.matmul(cols, kernel, out=product[span].transpose(1, 0, 2))
        return product

    def _depthwise_product(self, base: np.ndarray, kernel: np.ndarray) -> np.ndarray:
        total = np.zeros(self.product_shape, self.compute).reshape(
            (*self.features_last[:-1], *self.product_shape[1:])
        )
        term = np.empty_like(total)
        for position, where in enumerate(self.window_slices):
            np.multiply(base[where][..., None], kernel[position], out=term)
            np.add(total, term, out=total)
        return total

    def __call__(self, env) -> None:
        if self.empty:  # no products: every sum is zero (false for pred)
            env[self.out] = np.zeros(self.out_dims, self.result_dtype)
            return
        base = self._base(env[self.ins[0]])
        kernel = self._kernel(env[self.ins[1]])
        # one BLAS thread, hlort's pool for the rest (blas_threads.py, dot_split.py)
        with np.errstate(over="ignore", invalid="ignore"), blas_threads.single_threaded():
            if self.depthwise:
                product = self._depthwise_product(base, kernel)
            else:
                product = self._im2col_product(base, kernel)
            result = product.reshape(self.features_last)
            if not self.output_is_features_last:
                result = result.transpose(self.output_perm)
            if self.arithmetic.needs_finish:
                result = self.arithmetic.finish(result)
            elif not self.output_is_features_last:
                result = np.ascontiguousarray(result)
        env[self.out] = result


def _output_perm(dn) -> tuple[int, ...]:
    """Axis j of the output is axis perm[j] of the features-last [batch, spatial..., features]."""
    spatial = len(dn.output_spatial_dimensions)
    perm = [0] * (spatial + 2)
    perm[dn.output_batch_dimension] = 0
    perm[dn.output_feature_dimension] = spatial + 1
    for i, d in enumerate(dn.output_spatial_dimensions):
        perm[d] = 1 + i
    return tuple(perm)


def _window_slices(window: tuple[WindowDim, ...], out_spatial: tuple[int, ...]) -> list:
    """Per window position (row-major): the base's strided slice the position multiplies."""
    per_dim = []
    for w, count in zip(window, out_spatial, strict=True):
        starts = [i * w.window_dilation for i in range(w.size)]
        per_dim.append([slice(s, s + (count - 1) * w.stride + 1, w.stride) for s in starts])
    return [(slice(None), *combo, slice(None)) for combo in itertools.product(*per_dim)]


def convolution_thunk(instr: Instruction, ins: list[int], out: int) -> ConvolutionThunk | None:
    """A thunk for any array convolution; None for shapes it does not take."""
    if not instr.shape.is_array or not all(o.shape.is_array for o in instr.operands):
        return None
    return ConvolutionThunk(instr, ins, out)
