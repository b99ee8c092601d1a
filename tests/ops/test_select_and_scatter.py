"""select-and-scatter (max-pool gradients): interpreter results against a slow reference, the
StableHLO interpreter's case, every window and direction."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from reduce_window_helpers import (
    _np,
    out_dims,
    run,
    sas_module,
    sub_neg_reducer,
    window_elements,
)

from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.ir.attributes import window_from_sizes
from hlort.ir.opcodes import Opcode
from hlort.shape import array, scalar

# -- select-and-scatter -------------------------------------------------------------------------


def reference_select_and_scatter(operand, source, init, window, select, scatter):
    """XLA's evaluator: per source element, select in its window, then scatter(source, current)."""
    result = np.full(operand.shape, init, dtype=np.asarray(init).dtype)
    for position in np.ndindex(*source.shape):
        chosen = None
        for index in window_elements(operand.shape, window, position):
            if chosen is None or not select(operand[chosen], operand[index]):
                chosen = index
        if chosen is not None:
            result[chosen] = scatter(source[position], result[chosen])
    return result


def test_select_and_scatter_stablehlo_case():
    operand = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64)
    source = np.array([[5, 6], [7, 8]], np.int64)
    window = window_from_sizes([3, 1], [2, 1], [(0, 1), (0, 0)])
    got = run(sas_module("s64", [4, 2], window), operand, source, np.int64(0))
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [5, 14], [7, 0]])


SAS_WINDOWS = {
    "pool": window_from_sizes([2, 2], [2, 2]),
    "overlapping": window_from_sizes([3, 3], [1, 2]),
    "padded": window_from_sizes([3, 2], [2, 2], [(1, 1), (1, 0)]),
    "padding_only_windows": window_from_sizes([2, 2], [2, 1], [(3, 0), (0, 0)]),
}


@pytest.mark.parametrize("name", sorted(SAS_WINDOWS))
@pytest.mark.parametrize("dtype", ["f32", "bf16", "s32", "f64"])
@pytest.mark.parametrize("direction", ["GE", "GT", "LE"])
def test_max_pool_gradient_matches_reference(name, dtype, direction):
    window = SAS_WINDOWS[name]
    rng = np.random.default_rng(3)
    npd = _np(dtype)
    operand = rng.integers(0, 4, size=(5, 6)).astype(npd)  # ties
    source = rng.integers(1, 9, size=out_dims((5, 6), window)).astype(npd)
    init = np.array(0).astype(npd)
    got = run(sas_module(dtype, [5, 6], window, direction), operand, source, init)
    compare = {"GE": np.greater_equal, "GT": np.greater, "LE": np.less_equal}[direction]
    want = reference_select_and_scatter(
        operand, source, init, window, lambda a, c: bool(compare(a, c)), lambda s, cur: s + cur
    )
    assert got.dtype == npd
    np.testing.assert_array_equal(got, want)


def _first_wins_scatter(b: Builder, dtype):
    """scatter(source, current) = current if current != 0 else source: not commutative."""
    sub = b.sub("first_wins")
    s, cur = sub.parameter(scalar(dtype)), sub.parameter(scalar(dtype))
    nonzero = sub.compare(cur, sub.constant(np.array(0).astype(_np(dtype))), "NE")
    return sub.finish(sub.select(nonzero, cur, s))


@pytest.mark.parametrize("dtype", ["f32", "s32"])
def test_general_scatter_applies_sources_in_row_major_order(dtype):
    window = SAS_WINDOWS["overlapping"]
    npd = _np(dtype)
    operand = np.zeros((5, 6), npd)  # every window selects its first element
    source = np.arange(1, 1 + np.prod(out_dims((5, 6), window))).astype(npd)
    source = source.reshape(out_dims((5, 6), window))
    got = run(
        sas_module(dtype, [5, 6], window, "GE", _first_wins_scatter),
        operand,
        source,
        np.array(0).astype(npd),
    )
    want = reference_select_and_scatter(
        operand,
        source,
        np.array(0).astype(npd),
        window,
        lambda a, c: a >= c,
        lambda s, cur: cur if cur != 0 else s,
    )
    np.testing.assert_array_equal(got, want)
    adder = run(
        sas_module(dtype, [5, 6], window, "GE", sub_neg_reducer),
        operand,
        source,
        np.array(1).astype(npd),
    )
    plain = run(
        sas_module(dtype, [5, 6], window, "GE", "add"), operand, source, np.array(1).astype(npd)
    )
    np.testing.assert_array_equal(adder, plain)


def _disguised_scatter(opcode: str):
    """``opcode(source, copy(current))``: the same function as the plain reducer, not recognised,
    so select-and-scatter combines through the interpreter's own op (the general path)."""

    def make(b: Builder, dtype):
        sub = b.sub(f"disguised_{opcode}")
        s, cur = sub.parameter(scalar(dtype)), sub.parameter(scalar(dtype))
        return sub.finish(sub.op(Opcode(opcode), (s, sub.copy(cur))))

    return make


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f8e4m3fn", "f8e5m2"])
@pytest.mark.parametrize("opcode", ["add", "multiply", "maximum", "minimum"])
def test_ufunc_at_scatter_agrees_with_general_path_on_narrow_floats(dtype, opcode):
    """The ``ufunc.at`` fast path folds bf16 / f16 / f8 exactly as the interpreter's ops do."""
    window = SAS_WINDOWS["overlapping"]
    rng = np.random.default_rng(7)
    npd = _np(dtype)
    operand = (rng.standard_normal((5, 6)) * 3).astype(npd)
    source = (rng.standard_normal(out_dims((5, 6), window)) * 3).astype(npd)
    source.flat[:2] = [np.nan, -0.0]
    init = np.array(0.5).astype(npd)
    fast = run(sas_module(dtype, [5, 6], window, "GE", opcode), operand, source, init)
    slow = run(
        sas_module(dtype, [5, 6], window, "GE", _disguised_scatter(opcode)), operand, source, init
    )
    assert fast.dtype == slow.dtype == npd
    np.testing.assert_array_equal(fast.view(np.uint8), slow.view(np.uint8))


def test_select_and_scatter_nan_operand_follows_select():
    operand = np.array([1.0, np.nan, 3.0, 2.0], np.float32)
    source = np.array([10.0, 20.0], np.float32)
    window = window_from_sizes([2], [2])
    got = run(sas_module("f32", [4], window), operand, source, np.float32(0))
    want = reference_select_and_scatter(
        operand, source, np.float32(0), window, lambda a, c: a >= c, lambda s, cur: s + cur
    )
    np.testing.assert_array_equal(got, want)  # GE with NaN is false: NaN is selected


def test_select_and_scatter_rejects_bad_signatures():
    b = Builder("s")
    operand = b.parameter(array("f32", [4, 4]))
    init = b.constant(np.float32(0))
    window = window_from_sizes([2, 2], [2, 2])
    sel = b.sub("sel")
    p, q = sel.parameter(scalar("f32")), sel.parameter(scalar("f32"))
    select = sel.finish(sel.compare(p, q, "GE"))
    add = b.scalar_computation("add", "f32")
    with pytest.raises(InvalidArgument, match=r"window output dims \[2, 2\]"):
        b.select_and_scatter(operand, select, window, b.parameter(array("f32", [3, 2])), init, add)
    source = b.parameter(array("f32", [2, 2]))
    with pytest.raises(InvalidArgument, match=r"select computation .* -> pred\[\]"):
        b.select_and_scatter(operand, add, window, source, init, add)
    with pytest.raises(InvalidArgument, match="scatter computation"):
        b.select_and_scatter(operand, select, window, source, init, select)
    with pytest.raises(InvalidArgument, match="same element type"):
        b.select_and_scatter(operand, select, window, source, b.constant(np.int32(0)), add)


def test_select_and_scatter_empty_source():
    window = window_from_sizes([3], [1])
    got = run(
        sas_module("f32", [2], window),
        np.array([1, 2], np.float32),
        np.zeros((0,), np.float32),
        np.float32(4),
    )
    np.testing.assert_array_equal(got, [4, 4])


def test_bf16_select_and_scatter_sums_duplicates():
    window = window_from_sizes([2], [1])
    operand = np.array([0, 5, 0], ml_dtypes.bfloat16)
    source = np.array([1, 2], ml_dtypes.bfloat16)
    got = run(sas_module("bf16", [3], window), operand, source, np.array(0, ml_dtypes.bfloat16))
    np.testing.assert_array_equal(got.astype(np.float32), [0, 3, 0])
