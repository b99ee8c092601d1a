"""custom-call on cpu (custom_call.py): the shipped targets run natively, never the interpreter
fallback, with the interpreter's results bit for bit; a target defined by its Python
``evaluate_fn`` runs that function, counted as "custom-call (host callback)", not as a
fallback; unknown targets fail the compile; an SPMD reshape between different shapes stays the
counted fallback and raises UNIMPLEMENTED when run, as the interpreter does."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from linalg_tolerance import assert_same_bits  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.errors import HlortError, Unimplemented  # noqa: E402
from hlort.ir.custom_calls import (  # noqa: E402
    lookup_custom_call,
    register_custom_call,
    unregister_custom_call,
)
from hlort.ir.opcodes import Opcode  # noqa: E402
from hlort.shape import TupleShape, scalar  # noqa: E402
from hlort.testdata.check_targets import ExpectationFailed  # noqa: E402

U32 = np.uint32


def _module(target: str, operands: list[shape.ArrayShape], result, **attrs):
    b = Builder("cc")
    params = [b.parameter(s) for s in operands]
    root = b.op(Opcode.CUSTOM_CALL, params, result, custom_call_target=target, **attrs)
    return b.build(root)


def _compile(module, compiled: dict | None = None, fallback: dict | None = None):
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback"] == (fallback or {}), stats
    if compiled is not None:
        assert stats["compiled"] == compiled, stats
    return exe


@pytest.mark.parametrize(
    "target",
    [
        "Sharding",
        "annotate_device_placement",
        "MoveToHost",
        "MoveToDevice",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
    ],
)
@pytest.mark.parametrize("dt", ["f32", "bf16", "c128", "s8", "pred"])
def test_identity_annotations_alias_their_operand(target, dt):
    s = shape.array(dt, (3, 4))
    module = _module(target, [s], s)
    exe = _compile(module, {"custom-call (alias)": 1})
    x = np.asarray(np.random.default_rng(0).standard_normal((3, 4)) * 3).astype(s.dtype.numpy)
    assert exe.raw.program.run([x])[0] is x  # no copy inside the program
    got = exe(x)
    assert_same_bits(got, hlort.evaluate(module, [x]))
    assert not np.shares_memory(got, x)  # the caller still owns its result


def test_spmd_reshape_between_shapes_stays_on_the_counted_fallback(allow_fallback):
    module = _module(
        "SPMDFullToShardShape", [shape.array("f32", (2, 4))], shape.array("f32", (2, 2))
    )
    exe = _compile(module, fallback={"custom-call": 1})
    with pytest.raises(HlortError, match="needs a partitioned backend"):
        exe(np.zeros((2, 4), np.float32))


ALLOCATED = [
    shape.array("bf16", (2, 3)),
    shape.array("f32", (300, 300)),
    shape.array("c64", (0, 5)),
    scalar("s32"),
    TupleShape((shape.array("u8", (4,)), scalar("f64"))),
]


@pytest.mark.parametrize("result", ALLOCATED)
def test_allocate_buffer_is_a_zeroed_pooled_buffer(result):
    module = _module("AllocateBuffer", [], result)
    exe = _compile(module, {"custom-call (AllocateBuffer)": 1})
    for _ in range(2):  # the second call may reuse the first one's pooled memory
        got = exe()
        want = hlort.evaluate(module, [])
        if isinstance(want, tuple):
            for g, w in zip(got, want, strict=True):
                assert_same_bits(g, w)
        else:
            assert_same_bits(got, want)


@pytest.mark.parametrize(
    "target", ["cu_threefry2x32", "cu_threefry2x32_ffi", "hip_threefry2x32", "hip_threefry2x32_ffi"]
)
@pytest.mark.parametrize("dims", [(3,), (), (0, 4), (5, 7), (70000,)])
def test_threefry_kernel_is_bit_exact(target, dims):
    """The last shape splits across threads."""
    s = shape.array("u32", dims)
    module = _module(target, [s] * 4, TupleShape((s, s)))
    exe = _compile(module, {"custom-call (threefry kernel)": 1})
    rng = np.random.default_rng(len(dims))
    args = [rng.integers(0, 2**32, size=dims, dtype=U32) for _ in range(4)]
    args[0].reshape(-1)[:1] = 0xFFFFFFFF
    got, want = exe(*args), hlort.evaluate(module, args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.uint32
        np.testing.assert_array_equal(g, w)


def test_threefry_known_answer():
    s = shape.array("u32", (3,))
    module = _module("cu_threefry2x32", [s] * 4, TupleShape((s, s)))
    exe = _compile(module)
    words = [0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3]
    args = [np.array([0, 0xFFFFFFFF, w], U32) for w in words]
    out0, out1 = exe(*args)
    assert out0.tolist() == [0x6B200159, 0x1CB996FC, 0xC4923A9C]
    assert out1.tolist() == [0x99BA4EFE, 0xBB002BE7, 0x483DF7A0]


@pytest.fixture
def user_targets():
    names = []

    def register(name, evaluate_fn, **kw):
        register_custom_call(name, evaluate_fn=evaluate_fn, **kw)
        names.append(name)

    yield register
    for name in names:
        unregister_custom_call(name)


def test_user_target_runs_its_python_definition_as_a_host_callback(user_targets):
    user_targets("test.cpu.cube", lambda ev, instr, x: (x * x * x).astype(x.dtype))
    s = shape.array("f32", (4,))
    module = _module("test.cpu.cube", [s], s)
    exe = _compile(module, {"custom-call (host callback)": 1})
    x = np.float32([1, -2, 0.5, np.nan])
    assert_same_bits(exe(x), hlort.evaluate(module, [x]))


def test_failing_user_target_is_reported_with_its_name(user_targets):
    def boom(ev, instr, x):
        raise ValueError("no luck")

    user_targets("test.cpu.boom", boom)
    s = shape.array("f32", (2,))
    exe = _compile(_module("test.cpu.boom", [s], s), {"custom-call (host callback)": 1})
    with pytest.raises(HlortError, match="'test.cpu.boom' raised ValueError: no luck"):
        exe(np.zeros(2, np.float32))


def test_unknown_target_fails_the_compile():
    s = shape.array("f32", (2,))
    with pytest.raises(Unimplemented, match="'vendor.cpu.unknown' is not registered"):
        hlort.compile(_module("vendor.cpu.unknown", [s], s), "cpu")


def test_a_replaced_shipped_target_runs_the_replacement():
    original = lookup_custom_call("Sharding")
    register_custom_call("Sharding", original.shape_fn, lambda ev, instr, x: x + 1, replace=True)
    try:
        s = shape.array("s32", (2,))
        exe = _compile(_module("Sharding", [s], s), {"custom-call (host callback)": 1})
        assert exe(np.int32([1, 2])).tolist() == [2, 3]
    finally:
        register_custom_call(
            "Sharding",
            original.shape_fn,
            original.evaluate_fn,
            description=original.description,
            replace=True,
        )


def test_stablehlo_checks_run_as_host_callbacks():
    b = Builder("checked")
    x = b.parameter(shape.array("f32", (3,)))
    y = b.parameter(shape.array("f32", (3,)))
    b.custom_call("check.expect_eq", [x, y], TupleShape(()), has_side_effect=True)
    module = b.build(b.add(x, y))
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"]["custom-call (host callback)"] == 1
    one = np.float32([1, 2, 3])
    np.testing.assert_array_equal(exe(one, one), 2 * one)
    with pytest.raises(ExpectationFailed):
        exe(one, np.float32([1, 2, 4]))
