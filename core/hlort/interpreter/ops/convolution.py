"""Interpreter: convolution, by im2col.

The input is brought to [batch, feature, spatial...] and the kernel to [out, in, spatial...];
the input is dilated (base_dilation) and padded (negative padding crops), every window is taken
as a strided view (``sliding_window_view``, then ``::stride`` over positions and ``::dilation``
inside the window), and one batched contraction per group sums over window positions and
features. The contraction axis is ordered as XLA's evaluator sums it, window positions
(row-major) outer and input features inner, so that a small contraction, which
:func:`~hlort.interpreter.ops.linalg.contract` sums in order, rounds as XLA does.

Groups follow StableHLO's definition: with ``feature_group_count`` G the input features and the
kernel's output features are split into G consecutive blocks and block g of the output comes from
block g of the input; with ``batch_group_count`` B the batch and the output features are split into
B consecutive blocks the same way. ``window_reversal`` flips the kernel along that dimension.
Arithmetic (accumulation type, wrapping, rounding) is the same as dot's.
"""

from __future__ import annotations

import math

import numpy as np

from hlort.interpreter.ops.linalg import (
    accumulation_dtype,
    contract,
    from_accumulation,
    to_accumulation,
)
from hlort.interpreter.ops.window_padding import dilate_and_pad
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import WindowDim
from hlort.ir.opcodes import Opcode

_WHOLE_AXIS = WindowDim(size=1)


def _dilate_and_pad(x: np.ndarray, window) -> np.ndarray:
    """Dilate and pad spatial axes 2.. of ``x`` with zeros; negative padding removes elements."""
    return dilate_and_pad(x, (_WHOLE_AXIS, _WHOLE_AXIS, *window), 0)


def _patches(x: np.ndarray, window: tuple[WindowDim, ...]) -> np.ndarray:
    """[N, C, *P] -> [N, C, *out, *window] (a view where possible)."""
    if not window:
        return x
    spatial = tuple(range(2, x.ndim))
    spans = [(w.size - 1) * w.window_dilation + 1 for w in window]
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=spatial)
    index = [slice(None), slice(None)]
    index += [slice(None, None, w.stride) for w in window]
    index += [slice(None, None, w.window_dilation) for w in window]
    return view[tuple(index)]


@evaluates(Opcode.CONVOLUTION)
def _convolution(ev, instr, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    dn = instr.attrs["dim_labels"]
    window = tuple(instr.attrs.get("window", ()))
    groups = instr.attrs.get("feature_group_count", 1)
    batch_groups = instr.attrs.get("batch_group_count", 1)
    result = instr.shape
    if result.size == 0:
        return np.zeros(result.dims, result.dtype.numpy)
    acc = accumulation_dtype(
        instr.operands[0].shape.dtype, instr.operands[1].shape.dtype, result.dtype
    )
    x = np.transpose(
        lhs, (dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions)
    )
    k = np.transpose(
        rhs,
        (
            dn.kernel_output_feature_dimension,
            dn.kernel_input_feature_dimension,
            *dn.kernel_spatial_dimensions,
        ),
    )
    x = to_accumulation(x, acc)
    k = to_accumulation(k, acc)
    flips = tuple(2 + i for i, w in enumerate(window) if w.window_reversal)
    if flips:
        k = np.flip(k, flips)

    patches = _patches(_dilate_and_pad(x, window), window)
    n, c = x.shape[:2]
    o = k.shape[0]
    out_spatial = patches.shape[2 : 2 + len(window)]
    n_pos = math.prod(out_spatial)
    n_win = math.prod(w.size for w in window)
    nb, cg = n // batch_groups, c // groups
    og = o // (groups * batch_groups)
    # [B, Nb, G, Cg, pos, win] -> [B, G, Nb*pos, win*Cg]
    p = patches.reshape(batch_groups, nb, groups, cg, n_pos, n_win)
    p = p.transpose(0, 2, 1, 4, 5, 3).reshape(batch_groups, groups, nb * n_pos, n_win * cg)
    # kernel [B*G*Og, Cg, win] -> [B, G, win*Cg, Og]
    kk = k.reshape(batch_groups, groups, og, cg, n_win).transpose(0, 1, 4, 3, 2)
    kk = kk.reshape(batch_groups, groups, n_win * cg, og)
    out = contract(p, kk)  # [B, G, Nb*pos, Og]
    out = out.reshape(batch_groups, groups, nb, n_pos, og).transpose(2, 0, 1, 4, 3)
    out = out.reshape((nb, o) + tuple(out_spatial))
    order = [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions]
    out = np.transpose(out, np.argsort(order))
    return from_accumulation(out, result.dtype)
