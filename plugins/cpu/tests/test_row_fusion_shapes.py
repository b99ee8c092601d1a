"""Row fusions whose row values take other shapes than the kept one ([rows, 1], [1, rows]) and
move between them by reshapes, transposes and broadcasts of size-1 dimensions: planned as one
row kernel when every read names the current row, refused when a read could name another."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.codegen.llvm.row_fusion import plan_row_fusion  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402

RAW = {"debug": {"disabled_passes": ["simplify"]}}  # fusion sees the chains as written


def _row_max(b, x):
    f32 = x.shape.dtype
    return b.reduce(x, b.constant(np.float32(-np.inf)), b.scalar_computation("maximum", f32), [1])


def _relabelled_rows(rows: int, cols: int):
    """max -> [rows,1] -> transpose [1,rows] -> reshape [rows,1] -> exp -> [rows] -> x - row."""
    b = Builder("relabelled")
    x = b.parameter(shape.array("f32", [rows, cols]))
    m = _row_max(b, x)
    col = b.broadcast(m, [rows, 1], [0])
    flat = b.transpose(col, [1, 0])
    back = b.reshape(flat, [rows, 1])
    e = b.exp(back)
    row = b.reshape(e, [rows])
    centered = b.subtract(x, b.broadcast(row, [rows, cols], [0]))
    return b.build(b.tuple([centered, e]))


@pytest.mark.parametrize("rows,cols", [(8, 32), (1, 5), (3, 1), (0, 4)])
def test_relabelled_row_values_compile_as_one_row_kernel(rows, cols):
    module = _relabelled_rows(rows, cols)
    assert plan_row_fusion(module.entry) is not None
    exe = hlort.compile(module, "cpu:0", options=RAW)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"] == {"fusion(kInput)": 1}, stats
    x = mixed(shape.array("f32", [1]).dtype, (rows, cols), np.random.default_rng(3))
    for got, want in zip(exe(x), hlort.evaluate(module, [x]), strict=True):
        # exp differs from NumPy's by at most an ulp or two
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)


def test_a_broadcast_reading_another_row_is_no_row_fusion():
    """broadcast(row[8], dims={1}) to [8,8] reads row j's value at column j: not the current
    row, so the plan refuses it (and the program still compiles and matches)."""
    b = Builder("cross")
    x = b.parameter(shape.array("f32", [8, 8]))
    m = _row_max(b, x)
    module = b.build(b.subtract(x, b.broadcast(m, [8, 8], [1])))
    assert plan_row_fusion(module.entry) is None
    exe = hlort.compile(module, "cpu:0", options=RAW)
    assert exe.raw.stats()["fallback_count"] == 0, exe.raw.stats()
    arg = np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32)
    np.testing.assert_array_equal(exe(arg), hlort.evaluate(module, [arg]))


def test_rows_of_one_element_may_reduce_row_values_again():
    """With one element per row, a row value is also an element value: a reduce may read one
    (``max(reshape(max(y)))`` over [4, 1]) and it is still one row kernel."""
    b = Builder("rows_of_rows")
    y = b.parameter(shape.array("f32", [4, 1]))
    again = b.reshape(b.exp(_row_max(b, y)), [4, 1])
    module = b.build(_row_max(b, again))
    assert plan_row_fusion(module.entry) is not None
    exe = hlort.compile(module, "cpu:0", options=RAW)
    assert exe.raw.stats()["compiled"] == {"fusion(kInput)": 1}, exe.raw.stats()
    arg = mixed(shape.array("f32", [1]).dtype, (4, 1), np.random.default_rng(5))
    np.testing.assert_allclose(exe(arg), hlort.evaluate(module, [arg]), rtol=1e-6, equal_nan=True)
