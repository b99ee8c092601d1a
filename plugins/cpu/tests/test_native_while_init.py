"""Where a native while loop keeps the state leaves its initial value gives it.

A leaf whose initial value is a kernel's fresh result that nothing reads after the loop (a
scan's zero-filled output stack) lives in that very buffer: no copy into the loop's state, and
that buffer is the loop's output. Every other initial buffer (a parameter, donated or not, a
value read after the loop, one array given to two leaves) is copied and never written.
Tolerance: bit for bit against the interpreter (the bodies are adds and in-place
dynamic-update-slices), NaN, +-inf and -0.0 included.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.runtime.program import parse_program  # noqa: E402
from hlort_cpu.native_while import NativeWhileThunk  # noqa: E402

RNG = np.random.default_rng(31)
HERE = os.path.dirname(os.path.abspath(__file__))
STACK, ROW = [6, 4, 5], [1, 4, 5]


def specials(dims) -> np.ndarray:
    values = RNG.standard_normal(int(np.prod(dims))).astype(np.float32)
    values[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return values.reshape(dims)


def bits_equal(actual, expected) -> None:
    for a, e in zip(actual, expected, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), e.reshape(-1).view(np.uint8))


def scan(init: str, read_after: str = ""):
    """``for i < n: x = x + 1; stack[i] = x`` with the stack's initial value from ``init``:
    "fill" (a broadcast of -0.0, a kernel), "param" (the caller's buffer) or "twice" (one fill
    given to two stack leaves, both updated). ``read_after``: "init" also returns the fill,
    "tuple" reads the stack back from the loop's initial tuple after the loop."""
    b = Builder(f"scan_{init}_{read_after}")
    stack_shape, row_shape = shape.array("f32", STACK), shape.array("f32", ROW)
    stacks = 2 if init == "twice" else 1
    state = shape.tuple_of(
        shape.scalar("s32"), shape.scalar("s32"), row_shape, *[stack_shape] * stacks
    )
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, x = (bb.get_tuple_element(p, k) for k in range(3))
    x = bb.add(x, bb.broadcast(bb.constant(1.0, "f32"), ROW, []))
    zero = bb.constant(np.int32(0))
    rows = [bb.dynamic_update_slice(bb.get_tuple_element(p, 3), x, [i, zero, zero])]
    if init == "twice":  # the second stack gets the row one place down
        row = bb.multiply(x, bb.broadcast(bb.constant(2.0, "f32"), ROW, []))
        i2 = bb.add(i, bb.constant(np.int32(1)))
        rows.append(bb.dynamic_update_slice(bb.get_tuple_element(p, 4), row, [i2, zero, zero]))
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, x, *rows]))
    n0, x0 = b.parameter(shape.scalar("s32")), b.parameter(row_shape)
    if init == "param":
        stack0 = b.parameter(stack_shape)
    else:
        stack0 = b.broadcast(b.constant(-0.0, "f32"), STACK, [])
    start = b.tuple([b.constant(np.int32(0)), n0, x0, *[stack0] * stacks])
    loop = b.while_loop(cond, body, start)
    outs = [b.get_tuple_element(loop, k) for k in range(2, 3 + stacks)]
    if read_after == "init":
        outs.append(stack0)
    elif read_after == "tuple":
        outs.append(b.get_tuple_element(start, 3))
    return b.build(b.tuple(outs))


def native_loop(exe) -> NativeWhileThunk:
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"].get("while (native)") == 1 and "while" not in stats["compiled"]
    loops = [s for s, _ in exe.raw.program.schedule if isinstance(s, NativeWhileThunk)]
    assert len(loops) == 1
    return loops[0]


def taken_leaves(loop: NativeWhileThunk) -> list[int]:
    """State leaves the loop keeps in its input buffers (besides the ones its body passes
    through: here the trip count ``n``, leaf 1)."""
    return [k for k, (_, _, offset) in enumerate(loop.out_specs) if offset is None and k != 1]


@pytest.mark.parametrize("trips", [0, 1, 6, 9])
def test_a_fresh_fill_is_the_loop_state_and_output(trips):
    module = scan("fill")
    exe = hlort.compile(module, "cpu")
    loop = native_loop(exe)
    assert taken_leaves(loop) == [3]
    assert loop.output_bytes < 4 * np.prod(STACK)  # the stack is not in the output block
    args = [np.int32(trips), specials(ROW)]
    first = exe(*args)
    kept = [np.array(a, copy=True) for a in first]
    bits_equal(first, hlort.evaluate(module, args))
    second = exe(np.int32(trips), args[1] + 1)  # a second call writes its own fresh stack
    bits_equal(first, kept)
    bits_equal(second, hlort.evaluate(module, [np.int32(trips), args[1] + 1]))


@pytest.mark.parametrize("read_after", ["init", "tuple"])
def test_a_fill_read_after_the_loop_is_copied_and_left_as_it_was(read_after):
    module = scan("fill", read_after)
    exe = hlort.compile(module, "cpu")
    assert taken_leaves(native_loop(exe)) == []
    args = [np.int32(6), specials(ROW)]
    bits_equal(exe(*args), hlort.evaluate(module, args))


def test_one_fill_given_to_two_leaves_is_copied_for_each():
    module = scan("twice")
    exe = hlort.compile(module, "cpu")
    assert taken_leaves(native_loop(exe)) == []
    args = [np.int32(5), specials(ROW)]
    bits_equal(exe(*args), hlort.evaluate(module, args))


@pytest.mark.parametrize("donate", [False, True])
def test_a_parameter_stack_is_copied_donated_or_not(donate):
    """The caller's stack is read again after the call (not donated) or dead (donated): either
    way the loop works on its own copy, and a stack the caller keeps is never written."""
    module = scan("param")
    options = {"donated_arguments": [2]} if donate else None
    exe = hlort.compile(module, "cpu", options=options)
    assert taken_leaves(native_loop(exe)) == []
    args = [np.int32(5), specials(ROW), specials(STACK)]
    want = hlort.evaluate(module, args)
    kept = args[2].copy()
    buffers = [hlort.device_put(a) for a in args]
    got = exe(*buffers)
    bits_equal([g.numpy() for g in got], want)
    assert buffers[2].is_deleted() == donate
    if not donate:
        bits_equal([buffers[2].numpy()], [kept])
    bits_equal(exe(*args), want)  # NumPy in: the caller's array is not written either
    bits_equal([args[2]], [kept])


def test_the_jax_lstm_scan_takes_its_output_stack():
    """Its state ends with the stack of hidden states, a zero fill the body updates in place;
    its results are checked in test_native_while_dots.test_jax_rnn_scans_run_natively."""
    with open(os.path.join(HERE, "rnn_scans", "lstm_scan_float32.mlir")) as f:
        module = parse_program(f.read())
    loop = native_loop(hlort.compile(module, "cpu"))
    dims, _, offset = loop.out_specs[-1]
    assert dims == (7, 3, 5) and offset is None
    assert loop.output_bytes < 4 * 7 * 3 * 5


def test_nested_tuple_state_runs_natively_and_keeps_its_structure():
    """``while i < n: (a, b) = (a + b, a)`` with the pair nested in the state: the native thunk
    flattens and reassembles it (flat states take a shortcut); bit for bit, specials included."""
    b = Builder("nested_state")
    row = shape.array("f32", [4, 5])
    pair = shape.tuple_of(row, row)
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), pair)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, ab = (bb.get_tuple_element(p, k) for k in range(3))
    first, second = bb.get_tuple_element(ab, 0), bb.get_tuple_element(ab, 1)
    next_pair = bb.tuple([bb.add(first, second), first])
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, next_pair]))
    n0, a0, b0 = b.parameter(shape.scalar("s32")), b.parameter(row), b.parameter(row)
    loop = b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, b.tuple([a0, b0])]))
    module = b.build(b.get_tuple_element(loop, 2))
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["compiled"].get("while (native)") == 1, exe.raw.stats()
    args = [np.int32(5), specials([4, 5]), specials([4, 5])]
    got = exe(*args)
    bits_equal(got, hlort.evaluate(module, args))
