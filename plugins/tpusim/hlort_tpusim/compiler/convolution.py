"""Convolution on the matrix unit: im2col by DMA, one tiled matmul, a gather into place.

``dma.im2col`` writes the patch matrix [N * out_positions, C * window] (the DMA engines' strided
gather of every window, dilation and padding included); a vector gather kernel lays the kernel
out as [C * window, O]; the MXU matmul kernel multiplies them; the [N, out..., O] product is a
view, moved into the output's dimension order by one more gather kernel when that order differs.
Grouped convolutions and window reversal take the host-assisted path.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hlort.interpreter.ops.convolution import _dilate_and_pad, _patches
from hlort.ir.attributes import WindowDim
from hlort.ir.instruction import Instruction
from hlort.shape import ArrayShape
from hlort_tpusim.compiler import matmul
from hlort_tpusim.compiler.lowering_context import Context
from hlort_tpusim.compiler.vector import emit_gather_copy
from hlort_tpusim.isa import Instr
from hlort_tpusim.program import Kernel

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering


def supports(instr: Instruction) -> bool:
    window = instr.attrs.get("window", ())
    return (
        matmul.supports(instr)
        and instr.attrs.get("feature_group_count", 1) == 1
        and instr.attrs.get("batch_group_count", 1) == 1
        and not any(w.window_reversal for w in window)
    )


def im2col(x: np.ndarray, conv: dict) -> np.ndarray:
    """The patch matrix of ``x`` for the descriptor ``conv`` (see :func:`lower_convolution`)."""
    window = tuple(WindowDim(*w) for w in conv["window"])
    xt = np.transpose(x, conv["input_perm"])
    p = _patches(_dilate_and_pad(xt, window), window)  # [N, C, *out, *win]
    s = len(window)
    order = (0, *range(2, 2 + s), 1, *range(2 + s, 2 + 2 * s))
    p = np.transpose(p, order)
    n, c = xt.shape[:2]
    positions = math.prod(p.shape[1 : 1 + s])
    return np.ascontiguousarray(p).reshape(n * positions, c * math.prod(p.shape[2 + s :]))


def lower_convolution(lw: Lowering, ctx: Context, instr: Instruction) -> int:
    dn = instr.attrs["dim_labels"]
    window = tuple(instr.attrs.get("window", ()))
    lhs, rhs = instr.operands
    x_buf, k_buf = lw.value(ctx, lhs), lw.value(ctx, rhs)
    s = len(window)
    n = lhs.shape.dims[dn.input_batch_dimension]
    c = lhs.shape.dims[dn.input_feature_dimension]
    o = rhs.shape.dims[dn.kernel_output_feature_dimension]
    out_spatial = [instr.shape.dims[d] for d in dn.output_spatial_dimensions]
    win = [w.size for w in window]
    rows, cols = n * math.prod(out_spatial), c * math.prod(win)
    conv = {
        "input_perm": [
            dn.input_batch_dimension,
            dn.input_feature_dimension,
            *dn.input_spatial_dimensions,
        ],
        "window": [
            [
                w.size,
                w.stride,
                w.padding_low,
                w.padding_high,
                w.window_dilation,
                w.base_dilation,
                False,
            ]
            for w in window
        ],
        "window_sizes": win,
    }
    patches = lw.new_buffer(ArrayShape(lhs.shape.dtype, (rows, cols)), f"{instr.name} patches")
    lw.emit(
        Kernel(
            lw.kernel_name(f"{instr.name}.im2col"),
            f"im2col {lhs.shape} -> [{rows},{cols}]",
            body=[Instr("dma.im2col", {"dst": patches, "src": x_buf, "conv": conv})],
        )
    )
    # kernel [C*win, O] from the kernel operand: reshape to [C, *win, O], then transpose
    kshape = ArrayShape(rhs.shape.dtype, (cols, o))
    perm = [
        dn.kernel_input_feature_dimension,
        *dn.kernel_spatial_dimensions,
        dn.kernel_output_feature_dimension,
    ]
    maps = [
        {"op": "reshape", "out": [cols, o], "operand": [c, *win, o]},
        {"op": "transpose", "perm": perm},
    ]
    kmat = emit_gather_copy(lw, f"{instr.name}.kernel", k_buf, kshape, maps)
    product_shape = ArrayShape(instr.shape.dtype, (n, *out_spatial, o))
    product = matmul.emit_matmul(
        lw,
        f"{instr.name}.matmul",
        patches,
        [0, 1],
        kmat,
        [0, 1],
        (1, rows, cols, o),
        ArrayShape(instr.shape.dtype, (rows, o)),
        matmul.precision_of(instr),
        f"convolution {lhs.shape} * {rhs.shape} as [{rows},{cols}]x[{cols},{o}]",
    )
    view = lw.program.add_buffer(product_shape, "view", view_of=product, label=instr.name).id
    order = [0] * (s + 2)
    order[dn.output_batch_dimension] = 0
    order[dn.output_feature_dimension] = s + 1
    for i, d in enumerate(dn.output_spatial_dimensions):
        order[d] = 1 + i
    if order == list(range(s + 2)):
        return view
    return emit_gather_copy(
        lw, f"{instr.name}.layout", view, instr.shape, [{"op": "transpose", "perm": order}]
    )
