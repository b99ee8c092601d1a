"""What the reduce-window and select-and-scatter tests share: window geometry, a slow reference
reduce-window, module builders and reducers."""

from __future__ import annotations

import itertools

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.interpreter import evaluate
from hlort.ir.verifier import verify_module
from hlort.shape import array, scalar


def _np(dtype: str) -> np.dtype:
    return dtypes.from_hlo_name(dtype).numpy


def out_dims(dims, window):
    out = []
    for d, w in zip(dims, window, strict=True):
        base = (d - 1) * w.base_dilation + 1 if d else 0
        padded = base + w.padding_low + w.padding_high
        span = (w.size - 1) * w.window_dilation + 1
        out.append(0 if padded < span else (padded - span) // w.stride + 1)
    return tuple(out)


def window_elements(x_shape, window, position):
    """Operand indices of the real elements of the window at ``position``, row-major."""
    for k in itertools.product(*(range(w.size) for w in window)):
        index = []
        for i, w in enumerate(window):
            pos = position[i] * w.stride + k[i] * w.window_dilation - w.padding_low
            if pos % w.base_dilation:
                break
            pos //= w.base_dilation
            if not 0 <= pos < x_shape[i]:
                break
            index.append(pos)
        else:
            yield tuple(index)


def reference_reduce_window(xs, inits, window, fn):
    """XLA's evaluator, one output element at a time: acc = fn(acc, x) over real elements."""
    dims = out_dims(xs[0].shape, window)
    outs = [np.empty(dims, dtype=np.asarray(i).dtype) for i in inits]
    for position in np.ndindex(*dims):
        acc = tuple(inits)
        for index in window_elements(xs[0].shape, window, position):
            acc = fn(acc, tuple(x[index] for x in xs))
        for o, a in zip(outs, acc, strict=True):
            o[position] = a
    return outs


def reduce_window_module(dtype, dims, window, reducer="maximum"):
    b = Builder("rw")
    x = b.parameter(array(dtype, dims))
    init = b.parameter(scalar(dtype))
    comp = b.scalar_computation(reducer, dtype) if isinstance(reducer, str) else reducer(b)
    module = b.build(b.reduce_window(x, init, comp, window))
    verify_module(module)
    return module


def run(module, *args):
    return evaluate(module, list(args))


def select_max_reducer(b: Builder, dtype="f32"):
    """max written with compare/select: not recognised, so it takes the general path."""
    sub = b.sub("select_max")
    p, q = sub.parameter(scalar(dtype)), sub.parameter(scalar(dtype))
    return sub.finish(sub.select(sub.compare(p, q, "GE"), p, q))


def sub_neg_reducer(b: Builder, dtype="s32"):
    """add written as p - (-q): not recognised, so it takes the general path."""
    sub = b.sub("sub_neg")
    p, q = sub.parameter(scalar(dtype)), sub.parameter(scalar(dtype))
    return sub.finish(sub.subtract(p, sub.negate(q)))


def sas_module(dtype, operand_dims, window, direction="GE", scatter="add"):
    b = Builder("sas")
    operand = b.parameter(array(dtype, operand_dims))
    source = b.parameter(array(dtype, out_dims(operand_dims, window)))
    init = b.parameter(scalar(dtype))
    sel = b.sub("select")
    p, q = sel.parameter(scalar(dtype)), sel.parameter(scalar(dtype))
    select = sel.finish(sel.compare(p, q, direction))
    if isinstance(scatter, str):
        scatter_comp = b.scalar_computation(scatter, dtype)
    else:
        scatter_comp = scatter(b, dtype)
    module = b.build(b.select_and_scatter(operand, select, window, source, init, scatter_comp))
    verify_module(module)
    return module
