"""Tiled transposes and split full reductions against the interpreter.

Transposes move data only, so tiles (edge tiles of odd sizes included) must match bit for bit;
split float reductions reassociate additions into per-chunk partials, so they get a tolerance,
while integer ones stay exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import compile_modules, reference, same_bits

from hlort import Builder, shape
from hlort_cpu.codegen.kernel_builder import TILE, transposed_dim
from hlort_cpu.codegen.split_reduce import SPLIT_CHUNK, split_reduce

RNG = np.random.default_rng(11)


def _arr(dims, dtype):
    dt = shape.array(dtype, list(dims)).dtype.numpy
    if dt.kind == "b":
        return RNG.integers(0, 2, dims).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(-100 if dt.kind == "i" else 0, 100, dims).astype(dt)
    return (RNG.standard_normal(dims) * 3).astype(dt)


def m_transpose(dims, perm, dtype="f32"):
    b = Builder("t")
    x = b.parameter(shape.array(dtype, list(dims)))
    return b.build(b.transpose(x, perm))


def m_transpose_add(dims, dtype="f32"):
    """Loop fusion whose root iterates a transposed operand."""
    b = Builder("ta")
    x = b.parameter(shape.array(dtype, list(dims)))
    y = b.parameter(shape.array(dtype, list(reversed(dims))))
    return b.build(b.multiply(b.add(b.transpose(x, [1, 0]), y), y))


T = TILE
CASES = {
    "square_tile": m_transpose([2 * T, 2 * T], [1, 0]),
    "odd": m_transpose([T + 3, 2 * T - 5], [1, 0]),
    "small_odd": m_transpose([7, 5], [1, 0]),
    "one_row": m_transpose([1, 3 * T + 1], [1, 0]),
    "one_col": m_transpose([3 * T + 1, 1], [1, 0]),
    "rank3_201": m_transpose([5, T + 1, 2 * T + 3], [2, 0, 1]),
    "rank3_120": m_transpose([T + 7, 3, T - 1], [1, 2, 0]),
    "rank3_021": m_transpose([3, T + 2, T + 5], [0, 2, 1]),
    "rank3_102": m_transpose([T + 2, 3, 9], [1, 0, 2]),
    "bf16": m_transpose([T + 9, 2 * T + 1], [1, 0], "bf16"),
    "f64": m_transpose([2 * T + 1, T - 3], [1, 0], "f64"),
    "s32": m_transpose([T + 1, T + 2], [1, 0], "s32"),
    "u8": m_transpose([2 * T + 5, 3], [1, 0], "u8"),
    "pred": m_transpose([T + 4, T + 1], [1, 0], "pred"),
    "fused_f32": m_transpose_add([T + 5, 2 * T + 3]),
    "fused_s32": m_transpose_add([2 * T - 1, T + 1], "s32"),
}
TILED = {
    "square_tile",
    "odd",
    "small_odd",
    "u8",
    "rank3_201",
    "rank3_120",
    "rank3_021",
    "bf16",
    "f64",
    "s32",
    "pred",
    "fused_f32",
    "fused_s32",
}


@pytest.fixture(scope="module")
def kernels():
    return compile_modules(CASES)


def _args(module):
    return [_arr(p.shape.dims, p.shape.dtype.name) for p in module.entry.parameters]


@pytest.mark.parametrize("name", list(CASES))
def test_transpose_matches_interpreter_bitwise(kernels, name):
    module = CASES[name]
    assert (transposed_dim(module.entry) is not None) == (name in TILED)
    args = _args(module)
    (got,) = kernels[name](*args)
    assert same_bits(got, reference(module, *args)), name


def test_plain_transposes_run_as_register_blocks(kernels):
    """transpose(param) moving the contiguous dim -> the "transpose" kernel; fused -> tiled loop."""
    for name, kernel in kernels.items():
        want = "transpose" if name in TILED and not name.startswith("fused") else "loop"
        assert kernel.info.kind == want, name


@pytest.mark.parametrize(
    "dims,perm,dtype",
    [
        ([1024, 1100], [1, 0], "f32"),  # 4.4 MiB: streaming stores when the output is aligned
        ([600, 1000], [1, 0], "f64"),
        ([3, 700, 520], [0, 2, 1], "s32"),
        ([520, 3, 700], [2, 1, 0], "f32"),
    ],
)
def test_big_transposes_stream_and_match(dims, perm, dtype):
    module = m_transpose(dims, perm, dtype)
    (kernel,) = compile_modules({"t": module}).values()
    (x,) = _args(module)
    want = np.transpose(x, perm)
    for offset in (0, 1):  # an aligned output takes the streaming path, a misaligned one not
        raw = np.empty(want.size + 64, want.dtype)
        start = (-raw.ctypes.data % 64) // want.itemsize + offset
        out = raw[start : start + want.size].reshape(want.shape)
        kernel.run_range(kernel.pointers([x, out]), 0, kernel.info.extent)
        assert same_bits(out, want), offset


@pytest.mark.parametrize("name", ["odd", "rank3_201", "fused_f32"])
def test_tiles_split_across_ranges(kernels, name):
    """Threads get disjoint ranges of tiles; any split must give the same bits."""
    module = CASES[name]
    kernel = kernels[name]
    args = [np.ascontiguousarray(a) for a in _args(module)]
    out = np.empty(module.entry.root.shape.dims, module.entry.root.shape.dtype.numpy)
    ptrs = kernel.pointers(args + [out])
    extent = kernel.info.extent
    cuts = sorted({0, extent, *RNG.integers(0, extent, 3).tolist()})
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=False):
        kernel.run_range(ptrs, lo, hi)
    assert same_bits(out, reference(module, *args))


N_SPLIT = 2 * SPLIT_CHUNK + 12345  # several chunks, the last one partial


def m_full_reduce(op, dtype, init, n=N_SPLIT):
    b = Builder(f"full_{op}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    k = b.constant(np.array(init, shape.array(dtype, []).dtype.numpy))
    return b.build(b.reduce(b.add(x, x), k, b.scalar_computation(op, dtype), [0]))


REDUCES = {
    "f32_add": m_full_reduce("add", "f32", 0.0),
    "f64_add": m_full_reduce("add", "f64", 0.0),
    "f32_max": m_full_reduce("maximum", "f32", -np.inf),
    "s32_add": m_full_reduce("add", "s32", 0),
    "u8_xor": m_full_reduce("xor", "u8", 0),
    "s64_min": m_full_reduce("minimum", "s64", np.iinfo(np.int64).max),
    "u16_and": m_full_reduce("and", "u16", 0xFFFF),
    "init_not_identity": m_full_reduce("add", "s32", 5),
    "small": m_full_reduce("add", "f32", 0.0, n=SPLIT_CHUNK),
    "bf16_not_split": m_full_reduce("add", "bf16", 0.0),
}
NOT_SPLIT = {"init_not_identity", "small", "bf16_not_split"}


@pytest.fixture(scope="module")
def reduce_kernels():
    return compile_modules(REDUCES)


@pytest.mark.parametrize("name", list(REDUCES))
def test_split_reduce_matches_interpreter(reduce_kernels, name):
    module = REDUCES[name]
    assert (split_reduce(module.entry) is None) == (name in NOT_SPLIT)
    assert reduce_kernels[name].info.split == (name not in NOT_SPLIT)
    (x,) = _args(module)
    (got,) = reduce_kernels[name](x)
    want = reference(module, x)
    if (got.dtype.kind == "f" and name.endswith("add")) or name == "small":
        # Partial sums reassociate: bound by n ulp-scaled magnitudes of the summands.
        bound = 2 * x.size * np.finfo(got.dtype).eps * float(np.abs(x.astype(np.float64)).sum())
        assert abs(float(got) - float(want)) <= bound, (got, want)
    elif name == "bf16_not_split":
        np.testing.assert_allclose(float(got), float(want), rtol=2e-2, atol=1.0)
    else:
        assert same_bits(got, want), (name, got, want)


def test_split_reduce_through_plugin_threads():
    """The thunk path: chunks on the thread pool, then the combining iteration."""
    import hlort

    module = m_full_reduce("add", "s32", 0, n=40 * SPLIT_CHUNK + 7)
    (x,) = _args(module)
    got = np.asarray(hlort.compile(module, "cpu:0")(x))
    assert same_bits(got, np.asarray(reference(module, x)))
