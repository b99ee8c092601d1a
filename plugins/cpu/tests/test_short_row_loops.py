"""Loop kernels whose rows (last dimension) are short: the row loop is kept and vectorized, the
outer loop left scalar (kernel_builder._short_row_hints). Loop hints only change how LLVM
schedules the same operations, so results must match the interpreter bit for bit (elementwise
ops round once each), with edge values (NaN, infinities, signed zeros) in the inputs; rows on
both sides of the thresholds, and empty and size-1 dimensions."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from codegen_helpers import same_bits  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.codegen.llvm.loops import NO_UNROLL, NO_VECTORIZE  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu.codegen.kernel_builder import KernelModule, _short_row_hints  # noqa: E402


def _bn_like(dtype: str, dims: tuple[int, ...]):
    """max((x - mean) * scale + shift, 0) with per-row-element vectors (BatchNorm's shape)."""
    b = Builder("short_rows")
    t = shape.array(dtype, list(dims))
    x = b.parameter(t)
    vec = shape.array(dtype, [dims[-1]])
    mean, scale, shift = (b.parameter(vec) for _ in range(3))
    last = (len(dims) - 1,)
    spread = lambda v: b.broadcast(v, list(dims), last)  # noqa: E731
    y = b.add(b.multiply(b.subtract(x, spread(mean)), spread(scale)), spread(shift))
    zero = b.broadcast(b.constant(np.zeros((), t.dtype.numpy)), list(dims), ())
    return b.build(b.maximum(y, zero))


SHAPES = [(64, 8), (64, 9), (8, 4, 16), (33, 17), (5, 31), (7, 255), (3, 256), (1, 16), (0, 16)]


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_short_rows_match_interpreter(dims, dtype):
    module = _bn_like(dtype, dims)
    rng = np.random.default_rng(5)
    dt = dtypes.from_hlo_name(dtype)
    args = [mixed(dt, dims, rng)] + [mixed(dt, (dims[-1],), rng) for _ in range(3)]
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(*args))
    assert exe.raw.stats()["fallback_count"] == 0
    want = np.asarray(hlort.evaluate(module, args))
    assert same_bits(got, want)


def test_hints_only_for_rows_between_one_vector_and_the_interleave_threshold():
    f32 = (shape.array("f32", [4, 16]),)
    f64 = (shape.array("f64", [4, 16]),)
    assert _short_row_hints(8, f32) == ((), ())  # one AVX2 vector: vectorized across rows
    assert _short_row_hints(9, f32) == ((NO_UNROLL,), (NO_VECTORIZE,))
    assert _short_row_hints(255, f32) == ((NO_UNROLL,), (NO_VECTORIZE,))
    assert _short_row_hints(256, f32) == ((), ())  # long rows: interleaved, as before
    assert _short_row_hints(4, f64) == ((), ())
    assert _short_row_hints(5, f64) == ((NO_UNROLL,), (NO_VECTORIZE,))


def test_kernel_ir_carries_the_hints():
    km = KernelModule()
    km.add("short_rows", _bn_like("f32", (64, 16)).entry)
    text = km.ir_text()
    assert '"llvm.loop.vectorize.enable", i1 0' in text
    assert '"llvm.loop.unroll.disable"' in text
