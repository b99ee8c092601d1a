"""Where a window position lands in the operand of reduce-window and select-and-scatter.

The window slides over the operand dilated by ``base_dilation`` and padded (negative padding
crops). For output position ``o`` and window position ``k`` of one dimension the padded base
position is ``p = o * stride + k * window_dilation - padding_low``; it is an operand element
(``p / base_dilation``) only when it lies inside the dilated operand on a multiple of the base
dilation. Padding and holes are not elements: XLA skips them, and so do these kernels. Each check
is emitted only when the static bounds say it can fail, so the common unpadded windows cost no
compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.ir.attributes import WindowDim
from hlort.ir.shape_rules.convolution import dilated_bound


@dataclass(frozen=True)
class WindowAxis:
    """One dimension of a window over an operand dimension of ``size``, for ``out`` outputs."""

    window: WindowDim
    size: int
    out: int

    @property
    def trivial(self) -> bool:
        """Window of one element, stride 1, no padding or dilation: output i reads operand i."""
        w = self.window
        return (
            w.size,
            w.stride,
            w.padding_low,
            w.padding_high,
            w.window_dilation,
            w.base_dilation,
        ) == (1, 1, 0, 0, 1, 1)


def window_axes(
    dims: Sequence[int], out_dims: Sequence[int], window: Sequence[WindowDim]
) -> list[WindowAxis]:
    return [WindowAxis(w, d, o) for w, d, o in zip(window, dims, out_dims, strict=True)]


def operand_position(
    b: ir.IRBuilder, axis: WindowAxis, out: ir.Value, k: ir.Value
) -> tuple[ir.Value | None, ir.Value]:
    """(in-bounds flag or None when always in bounds, operand index) for one dimension.

    The index is meaningful only where the flag holds; callers load under a branch on it.
    """
    w = axis.window
    p = b.mul(out, i64(w.stride)) if w.stride != 1 else out
    if w.window_dilation != 1:
        k = b.mul(k, i64(w.window_dilation))
    p = b.add(p, k)
    if w.padding_low:
        p = b.sub(p, i64(w.padding_low))
    bound = dilated_bound(axis.size, w.base_dilation)
    highest = (
        max(axis.out - 1, 0) * w.stride + max(w.size - 1, 0) * w.window_dilation - w.padding_low
    )
    checks = []
    if w.padding_low > 0:
        checks.append(b.icmp_signed(">=", p, i64(0)))
    if highest >= bound:
        checks.append(b.icmp_signed("<", p, i64(bound)))
    if w.base_dilation != 1:
        checks.append(b.icmp_signed("==", b.srem(p, i64(w.base_dilation)), i64(0)))
        p = b.sdiv(p, i64(w.base_dilation))
    ok = None
    for c in checks:
        ok = c if ok is None else b.and_(ok, c)
    return ok, p


def window_positions(
    b: ir.IRBuilder, axes: Sequence[WindowAxis], out: Sequence[ir.Value], ks: Sequence[ir.Value]
) -> tuple[ir.Value | None, list[ir.Value]]:
    """The operand index of window position ``ks`` of output ``out``, and its in-bounds flag."""
    ok = None
    multi = []
    for axis, o, k in zip(axes, out, ks, strict=True):
        c, q = operand_position(b, axis, o, k)
        multi.append(q)
        if c is not None:
            ok = c if ok is None else b.and_(ok, c)
    return ok, multi


def emit_if(b: ir.IRBuilder, cond: ir.Value | None, body, name: str = "inwin") -> None:
    """``if cond: body()``; ``body()`` unconditionally when ``cond`` is None."""
    if cond is None:
        body()
        return
    fn = b.block.function
    then = fn.append_basic_block(f"{name}.then")
    after = fn.append_basic_block(f"{name}.end")
    b.cbranch(cond, then, after)
    b.position_at_end(then)
    body()
    b.branch(after)
    b.position_at_end(after)
