"""Shape rules: reduce, reduce-window, select-and-scatter, sort, topk.

These ops call computations on scalars, so besides operand shapes the rules check each called
computation's signature (what XLA's ``VerifyReducerShape`` and sort/select checks do) and name
the expected and the actual signature when they differ. Element types must match exactly: an
accumulator has the init value's type and an input parameter the operand's type.
"""

from __future__ import annotations

from collections.abc import Sequence

from hlort import dtypes
from hlort.ir.attributes import WindowDim
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.convolution import dilated_bound, strided_bound
from hlort.ir.shape_rules.dimension_lists import check_dimension_list
from hlort.shape import ArrayShape, Shape, TupleShape, scalar


def _signature(params: Sequence[Shape], result: Shape) -> str:
    return f"({', '.join(str(p) for p in params)}) -> {result}"


def check_called(
    q: ShapeQuery, key: str, params: Sequence[Shape], results: Sequence[Shape] | Shape
) -> Computation:
    """Check that ``q.attrs[key]`` takes ``params`` and returns ``results``.

    ``results`` is one shape, or a list of shapes meaning "a tuple of them, or the single shape
    when the list has one entry" (XLA accepts both forms from an N=1 reducer).
    """
    comp = q.attr(key)
    if not isinstance(comp, Computation):
        q.fail(f"{key} must be a computation, got {comp!r}")
    actual_params = comp.parameter_shapes
    actual = comp.root.shape if comp.root is not None else None
    if isinstance(results, Shape):
        accepted = [results]
        expected = results
    else:
        as_tuple = TupleShape(tuple(results))
        expected = results[0] if len(results) == 1 else as_tuple
        accepted = [as_tuple, expected]
    if list(actual_params) != list(params) or actual not in accepted:
        q.fail(
            f"{key} computation {comp.name} must have signature {_signature(params, expected)}, "
            f"but it has {_signature(actual_params, actual)}"
        )
    return comp


def _split_inputs_and_inits(q: ShapeQuery) -> tuple[list[ArrayShape], list[ArrayShape]]:
    """Variadic reduce/reduce-window operands: N arrays of equal dims, then N scalar inits."""
    if not q.operands or len(q.operands) % 2:
        q.fail(f"takes N inputs then N init values, got {len(q.operands)} operand(s)")
    n = len(q.operands) // 2
    inputs = [q.array(i) for i in range(n)]
    inits = [q.array(n + i) for i in range(n)]
    for i, x in enumerate(inputs[1:], 1):
        if x.dims != inputs[0].dims:
            q.fail(f"input {i} {x} must have the dims of input 0 {inputs[0]}")
    for i, (x, init) in enumerate(zip(inputs, inits, strict=True)):
        if init.rank != 0:
            q.fail(f"init value {i} must be a scalar, got {init}")
        if init.dtype != x.dtype:
            q.fail(f"init value {i} {init} must have the element type of input {i} {x}")
    return inputs, inits


def _check_reducer(q: ShapeQuery, inputs: list[ArrayShape], inits: list[ArrayShape]) -> bool:
    """Check to_apply (accumulators first, then inputs); True when it returns a tuple."""
    accs = [scalar(i.dtype) for i in inits]
    params = accs + [scalar(x.dtype) for x in inputs]
    comp = check_called(q, "to_apply", params, accs)
    return comp.root.shape.is_tuple


def _result(dtypes_: list, dims: Sequence[int], as_tuple: bool) -> Shape:
    shapes = [ArrayShape(d, tuple(dims)) for d in dtypes_]
    return TupleShape(tuple(shapes)) if as_tuple else shapes[0]


@shape_rule(Opcode.REDUCE)
def _reduce(q: ShapeQuery) -> Shape:
    inputs, inits = _split_inputs_and_inits(q)
    dims = check_dimension_list(
        q, q.attr("dimensions"), inputs[0].rank, "dimensions", f"input 0 {inputs[0]}"
    )
    as_tuple = _check_reducer(q, inputs, inits)
    kept = [d for i, d in enumerate(inputs[0].dims) if i not in dims]
    return _result([i.dtype for i in inits], kept, as_tuple)


def check_window(q: ShapeQuery, dims: Sequence[int], allow_reversal: bool = False) -> list[int]:
    """Validate ``q.attrs["window"]`` against a base of ``dims``; returns the output dims."""
    window = q.attr("window")
    if not isinstance(window, (tuple, list)) or not all(isinstance(w, WindowDim) for w in window):
        q.fail(f"window must be a tuple of WindowDim, got {window!r}")
    if len(window) != len(dims):
        q.fail(f"window has {len(window)} dimension(s) but the operand has rank {len(dims)}")
    out = []
    for i, (w, d) in enumerate(zip(window, dims, strict=True)):
        for name in ("size", "stride", "window_dilation", "base_dilation"):
            if getattr(w, name) < 1:
                q.fail(f"window dimension {i}: {name}={getattr(w, name)} must be positive")
        if w.window_reversal and not allow_reversal:
            q.fail(f"window dimension {i}: window_reversal is only meaningful for convolution")
        padded = dilated_bound(d, w.base_dilation) + w.padding_low + w.padding_high
        if padded < 0:
            q.fail(
                f"window dimension {i}: padding ({w.padding_low}, {w.padding_high}) leaves a "
                f"negative size {padded} of the dilated operand dimension {d}"
            )
        out.append(strided_bound(padded, dilated_bound(w.size, w.window_dilation), w.stride))
    return out


@shape_rule(Opcode.REDUCE_WINDOW)
def _reduce_window(q: ShapeQuery) -> Shape:
    inputs, inits = _split_inputs_and_inits(q)
    out = check_window(q, inputs[0].dims)
    as_tuple = _check_reducer(q, inputs, inits)
    return _result([i.dtype for i in inits], out, as_tuple)


@shape_rule(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(q: ShapeQuery) -> Shape:
    operand, source, init = q.array(0), q.array(1), q.array(2)
    if init.rank != 0:
        q.fail(f"init value must be a scalar, got {init}")
    if source.dtype != init.dtype:
        q.fail(f"source {source} and init value {init} must have the same element type")
    out = check_window(q, operand.dims)
    if tuple(out) != source.dims:
        q.fail(f"source {source} must have the window output dims {list(out)} of operand {operand}")
    s_operand = scalar(operand.dtype)
    check_called(q, "select", [s_operand, s_operand], scalar(dtypes.PRED))
    check_called(q, "scatter", [scalar(source.dtype), scalar(init.dtype)], scalar(init.dtype))
    return operand.with_dtype(init.dtype)


@shape_rule(Opcode.SORT)
def _sort(q: ShapeQuery) -> Shape:
    if not q.operands:
        q.fail("takes at least one operand")
    arrays = [q.array(i) for i in range(len(q.operands))]
    for i, x in enumerate(arrays[1:], 1):
        if x.dims != arrays[0].dims:
            q.fail(f"operand {i} {x} must have the dims of operand 0 {arrays[0]}")
    dims = check_dimension_list(
        q, q.attr("dimensions"), arrays[0].rank, "dimensions", f"operand 0 {arrays[0]}"
    )
    if len(dims) != 1:
        q.fail(f"dimensions={list(dims)} must name exactly one dimension to sort along")
    stable = q.attrs.get("is_stable", False)
    if not isinstance(stable, bool):
        q.fail(f"is_stable={stable!r} must be a bool")
    params = [scalar(x.dtype) for x in arrays for _ in (0, 1)]
    check_called(q, "to_apply", params, scalar(dtypes.PRED))
    return TupleShape(tuple(arrays)) if len(arrays) > 1 else arrays[0]


@shape_rule(Opcode.TOPK)
def _topk(q: ShapeQuery) -> Shape:
    x = q.array(0)
    if x.rank == 0:
        q.fail("operand must have rank >= 1 (top-k runs along the last dimension)")
    if x.dtype.is_complex:
        q.fail(f"operand {x} has no order; top-k needs an integer, float or pred type")
    k = q.attr("k")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= x.dims[-1]:
        q.fail(f"k={k!r} must be an integer in [0, {x.dims[-1]}] (the last dimension of {x})")
    largest = q.attrs.get("largest", True)
    if not isinstance(largest, bool):
        q.fail(f"largest={largest!r} must be a bool")
    dims = (*x.dims[:-1], k)
    return TupleShape((ArrayShape(x.dtype, dims), ArrayShape(dtypes.S32, dims)))
