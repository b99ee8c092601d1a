"""Ops that compute nothing run natively: bitcast-convert between widths (a view of the bytes),
optimization-barrier, after-all, replica-id and partition-id; bit for bit the interpreter's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402
from hlort.shape import TupleShape, scalar  # noqa: E402

RNG = np.random.default_rng(5)
PAIRS = [
    ("s8", "s32", [3, 4], [3]),
    ("u8", "f64", [2, 8], [2]),
    ("f32", "u8", [5], [5, 4]),
    ("f64", "bf16", [3], [3, 4]),
    ("s16", "f8e5m2", [6], [6, 2]),
    ("u16", "s64", [0, 4], [0]),
    ("u64", "f16", [2, 3], [2, 3, 4]),
]


def _bits(dtype: str, dims) -> np.ndarray:
    dt = np.dtype(shape.array(dtype, [1]).dtype.numpy)
    raw = RNG.integers(0, 256, (int(np.prod(dims)) * dt.itemsize,), dtype=np.uint8)
    return raw.view(dt).reshape(dims)


def _run(module, args):
    exe = hlort.compile(module, "cpu:0")
    assert exe.raw.stats()["fallback_count"] == 0, exe.raw.stats()
    return exe(*args), hlort.evaluate(module, args)


@pytest.mark.parametrize(
    "src,dst,in_dims,out_dims", PAIRS, ids=[f"{s}-to-{d}" for s, d, _, _ in PAIRS]
)
def test_bitcast_between_widths_is_a_view_of_the_bytes(src, dst, in_dims, out_dims):
    b = Builder("bitcast")
    x = b.parameter(shape.array(src, in_dims))
    y = b.op(
        Opcode.BITCAST_CONVERT,
        (b.negate(x) if src[0] in "fs" else x,),
        shape=shape.array(dst, out_dims),
    )
    module = b.build(y)
    value = _bits(src, in_dims)
    got, want = _run(module, [value])
    assert got.dtype == want.dtype and got.shape == tuple(out_dims)
    np.testing.assert_array_equal(
        np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)
    )


def test_an_output_viewing_an_input_belongs_to_the_caller():
    b = Builder("view_of_input")
    x = b.parameter(shape.array("u8", [4, 4]))
    module = b.build(b.op(Opcode.BITCAST_CONVERT, (x,), shape=shape.array("f32", [4])))
    value = _bits("u8", [4, 4])
    got = hlort.compile(module, "cpu:0")(value)
    assert not np.shares_memory(got, value)
    np.testing.assert_array_equal(got.view(np.uint8), value.reshape(-1))


def test_barrier_token_and_launch_ids():
    b = Builder("leaves")
    x = b.parameter(shape.array("f32", [3]))
    pair = b.tuple([x, b.negate(x)])
    kept = b.op(Opcode.OPTIMIZATION_BARRIER, (pair,), shape=pair.shape)
    token = b.op(Opcode.AFTER_ALL, (), shape=shape.TOKEN)
    del token
    replica = b.op(Opcode.REPLICA_ID, (), shape=scalar("u32"))
    partition = b.op(Opcode.PARTITION_ID, (), shape=scalar("u32"))
    first = b.get_tuple_element(kept, 1)
    module = b.build(b.tuple([first, replica, partition]))
    assert isinstance(module.entry.root.shape, TupleShape)
    value = RNG.standard_normal(3).astype(np.float32)
    got, want = _run(module, [value])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert int(got[1]) == 0 and int(got[2]) == 0
