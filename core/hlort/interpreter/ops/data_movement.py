"""Interpreter: broadcast, reshape, bitcast, transpose, slice, dynamic-slice, dynamic-update-slice,
concatenate, pad, reverse.

Results are fresh arrays (never views of an operand), so no later in-place update can alias an
input. Dynamic start indices are clamped the way XLA does, so the slice always fits.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode
from hlort.shape import major_to_minor


def clamped_start(index: np.ndarray, dim: int, size: int) -> int:
    """A scalar start index of any integer type, clamped to [0, dim - size] (XLA's rule).

    Converted through a Python int, so huge unsigned values clamp high instead of wrapping.
    """
    return min(max(int(index[()]), 0), dim - size)


@evaluates(Opcode.BROADCAST)
def _broadcast(ev, instr, x):
    dims = tuple(instr.attrs["dimensions"])
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    view = [1] * instr.shape.rank
    for i in order:
        view[dims[i]] = x.shape[i]
    placed = np.transpose(x, order).reshape(view)
    return np.array(np.broadcast_to(placed, instr.shape.dims))


@evaluates(Opcode.RESHAPE)
def _reshape(ev, instr, x):
    return np.array(x.reshape(instr.shape.dims))


@evaluates(Opcode.BITCAST)
def _bitcast(ev, instr, x):
    """Reinterpret the operand's physical order (its layout) as the result's physical order."""
    source, result = instr.operands[0].shape, instr.shape
    physical = np.transpose(x, major_to_minor(source)).reshape(-1)
    order = major_to_minor(result)
    laid_out = physical.reshape([result.dims[d] for d in order])
    out = np.array(np.transpose(laid_out, np.argsort(order)))
    wanted = result.dtype.numpy
    return out if out.dtype == wanted else out.view(wanted)  # same width (the shape rule)


@evaluates(Opcode.TRANSPOSE)
def _transpose(ev, instr, x):
    return np.array(np.transpose(x, instr.attrs["dimensions"]))


@evaluates(Opcode.SLICE)
def _slice(ev, instr, x):
    return np.array(x[tuple(slice(s.start, s.limit, s.stride) for s in instr.attrs["slice"])])


@evaluates(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(ev, instr, x, *starts):
    sizes = instr.attrs["dynamic_slice_sizes"]
    index = []
    for start, dim, size in zip(starts, x.shape, sizes, strict=True):
        begin = clamped_start(start, dim, size)
        index.append(slice(begin, begin + size))
    return np.array(x[tuple(index)])


@evaluates(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(ev, instr, x, update, *starts):
    out = x.copy()
    index = []
    for start, dim, size in zip(starts, x.shape, update.shape, strict=True):
        begin = clamped_start(start, dim, size)
        index.append(slice(begin, begin + size))
    out[tuple(index)] = update
    return out


@evaluates(Opcode.CONCATENATE)
def _concatenate(ev, instr, *xs):
    return np.concatenate(xs, axis=instr.attrs["dimensions"][0])


def _padded_positions(size: int, low: int, interior: int, out_size: int) -> tuple[slice, slice]:
    """(operand slice, result slice) for one dimension: operand element i lands at
    ``low + i * (interior + 1)``; elements landing outside the result (negative low/high) drop."""
    step = interior + 1
    first = (-low + step - 1) // step if low < 0 else 0  # smallest i with low + i*step >= 0
    last = min(size - 1, (out_size - 1 - low) // step)  # largest i with low + i*step < out_size
    if last < first:
        return slice(0, 0), slice(0, 0)
    count = last - first + 1
    start = low + first * step
    return slice(first, last + 1), slice(start, start + (count - 1) * step + 1, step)


@evaluates(Opcode.PAD)
def _pad(ev, instr, x, value):
    out = np.full(instr.shape.dims, value, dtype=x.dtype)
    src, dst = [], []
    for size, p, out_size in zip(x.shape, instr.attrs["padding"], instr.shape.dims, strict=True):
        s, d = _padded_positions(size, p.low, p.interior, out_size)
        src.append(s)
        dst.append(d)
    out[tuple(dst)] = x[tuple(src)]
    return out


@evaluates(Opcode.REVERSE)
def _reverse(ev, instr, x):
    return np.array(np.flip(x, axis=tuple(instr.attrs["dimensions"])))
