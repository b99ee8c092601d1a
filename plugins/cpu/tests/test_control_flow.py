"""Compiled control flow on cpu: while (native driver and Python path), conditional, call.

Every result is compared with the reference interpreter: bit for bit (floats: same values,
same zero signs, NaN where the interpreter has NaN; no tolerance) unless a test states one.
Each test also asserts through ``exe.raw.stats()`` that nothing fell back and which path ran.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import ml_dtypes  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.testing.programs import side_effect_in_unused_loop  # noqa: E402
from hlort.text import parse_module  # noqa: E402

RNG = np.random.default_rng(11)
COMPILED_DTYPES = [
    "pred",
    "s8",
    "s16",
    "s32",
    "s64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
]
NO_INLINING = {"debug": {"disabled_passes": ["call-inlining"]}}


def assert_same(actual, expected) -> None:
    """Same structure, dtypes, shapes and values; -0.0 differs from 0.0; NaN matches NaN."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same(a, e)
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind == "f" or actual.dtype == ml_dtypes.bfloat16:
        wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
        nan = np.isnan(wide_e)
        np.testing.assert_array_equal(np.isnan(wide_a), nan)
        bits = f"u{actual.dtype.itemsize}"
        np.testing.assert_array_equal(actual.view(bits)[~nan], expected.view(bits)[~nan])
    else:
        np.testing.assert_array_equal(actual, expected)


def run_both(module, args, options=None):
    exe = hlort.compile(module, "cpu", options)
    result = exe(*args)
    assert_same(result, hlort.evaluate(module, args))
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    return exe, result, stats


def _values(dtype: str, dims, special: bool = False) -> np.ndarray:
    np_dtype = hlort.dtypes.from_hlo_name(dtype).numpy
    size = int(np.prod(dims))
    if dtype == "pred":
        return RNG.integers(0, 2, dims).astype(bool)
    if np.dtype(np_dtype).kind in "iu":
        info = np.iinfo(np_dtype)
        return RNG.integers(info.min, info.max, dims, dtype=np_dtype, endpoint=True)
    values = RNG.standard_normal(size)
    if special:
        values[: min(size, 5)] = [np.nan, np.inf, -np.inf, -0.0, 0.0][: min(size, 5)]
    return values.astype(np_dtype).reshape(dims)


def counter_loop(dtype: str, dims, name: str = "counter"):
    """``i, acc = 0, acc0; while i < n: acc = acc * c + x (xor for pred); i += 1`` -> (i, acc)."""
    b = Builder(name)
    elem = shape.array(dtype, list(dims))
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), elem, elem)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, acc, x = (bb.get_tuple_element(p, k) for k in range(4))
    if dtype == "pred":
        acc = bb.xor(acc, x)
    else:
        factor = 3 if np.dtype(elem.dtype.numpy).kind in "iu" else 1.0001
        scale = bb.broadcast(bb.constant(factor, dtype), list(dims), [])
        acc = bb.add(bb.multiply(acc, scale), x)
    one = bb.constant(np.int32(1))
    body = bb.finish(bb.tuple([bb.add(i, one), n, acc, x]))
    n0, x0, acc0 = (b.parameter(shape.scalar("s32")), b.parameter(elem), b.parameter(elem))
    loop = b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, acc0, x0]))
    return b.build(b.tuple([b.get_tuple_element(loop, 0), b.get_tuple_element(loop, 2)]))


# -- the native driver --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPILED_DTYPES)
def test_native_counter_loop_every_dtype(dtype):
    module = counter_loop(dtype, [3, 5])
    args = [np.int32(37), _values(dtype, [3, 5], True), _values(dtype, [3, 5], True)]
    _, result, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats
    assert "while" not in stats["compiled"]
    assert int(result[0]) == 37


@pytest.mark.parametrize("dims", [[], [0], [1], [7], [2, 0, 3]], ids=str)
def test_native_loop_scalar_and_empty_shapes(dims):
    module = counter_loop("f32", dims)
    args = [np.int32(5), _values("f32", dims, True), _values("f32", dims)]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats


@pytest.mark.parametrize("trips", [0, -3, 1, 1000])
def test_native_loop_trip_counts(trips):
    module = counter_loop("f64", [4])
    args = [np.int32(trips), _values("f64", [4], True), _values("f64", [4])]
    _, result, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats
    assert int(result[0]) == max(trips, 0)
    if trips <= 0:
        assert_same(result[1], args[2])  # ran zero times: the init state comes back


def test_native_loop_swaps_and_rotations_of_state():
    """(i, n, a, b, c) -> (i + 1, n, b, c, a + b): two leaves come from other state leaves."""
    b = Builder("rotate")
    vec = shape.array("s64", [6])
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), vec, vec, vec)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, x, y, z = (bb.get_tuple_element(p, k) for k in range(5))
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, y, z, bb.add(x, y)]))
    params = [b.parameter(s) for s in (shape.scalar("s32"), vec, vec, vec)]
    init = b.tuple([b.constant(np.int32(0)), *params])
    module = b.build(b.while_loop(cond, body, init))
    args = [np.int32(41), *(RNG.integers(-9, 9, 6).astype(np.int64) for _ in range(3))]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats


def test_native_loop_predicate_in_state_and_constant_next_state():
    """The condition is a state leaf (no kernel); the body stores a constant into the state."""
    b = Builder("flagged")
    vec = shape.array("f32", [3])
    state = shape.tuple_of(shape.scalar("pred"), shape.scalar("s32"), shape.scalar("s32"), vec)
    c = b.sub("cond")
    cond = c.finish(c.get_tuple_element(c.parameter(state), 0))
    bb = b.sub("body")
    p = bb.parameter(state)
    i1 = bb.add(bb.get_tuple_element(p, 1), bb.constant(np.int32(1)))
    n = bb.get_tuple_element(p, 2)
    fixed = bb.constant(np.array([1.5, -0.0, np.inf], np.float32))
    body = bb.finish(bb.tuple([bb.compare(i1, n, "LT"), i1, n, fixed]))
    go, n0, v0 = (
        b.parameter(shape.scalar("pred")),
        b.parameter(shape.scalar("s32")),
        b.parameter(vec),
    )
    module = b.build(b.while_loop(cond, body, b.tuple([go, b.constant(np.int32(0)), n0, v0])))
    v = np.array([7.0, 8.0, np.nan], np.float32)
    for go_value, n_value in ((True, 6), (False, 6), (True, 0)):
        exe, result, stats = run_both(module, [np.bool_(go_value), np.int32(n_value), v])
        assert stats["compiled"].get("while (native)") == 1, stats
    result[3][0] = 99.0  # outputs are the caller's: the next call still sees the constant
    assert_same(exe(np.bool_(True), np.int32(3), v)[3], np.array([1.5, -0.0, np.inf], np.float32))


def test_loop_with_a_large_state_and_small_kernels_runs_natively():
    module = counter_loop("f32", [40000])  # 2 x 160 KB of state: heap arena, output block
    args = [np.int32(3), _values("f32", [40000], True), _values("f32", [40000])]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats


def test_loop_with_a_kernel_big_enough_to_split_takes_the_python_path():
    module = counter_loop("f32", [70000])  # over PARALLEL_MIN_ELEMENTS: split across cores
    args = [np.int32(3), _values("f32", [70000], True), _values("f32", [70000])]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while") == 1 and "while (native)" not in stats["compiled"]


# -- the Python path ----------------------------------------------------------------------------
def test_nested_loops_outer_python_inner_native():
    """for i < n: (for j < m: acc = acc * 1.5 + x); x = x - 1 -> the inner loop is native."""
    b = Builder("nested")
    vec = shape.array("f32", [4])
    inner_state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), vec, vec)
    ic = b.sub("inner_cond")
    p = ic.parameter(inner_state)
    inner_cond = ic.finish(ic.compare(ic.get_tuple_element(p, 0), ic.get_tuple_element(p, 1), "LT"))
    ib = b.sub("inner_body")
    p = ib.parameter(inner_state)
    j, m, acc, x = (ib.get_tuple_element(p, k) for k in range(4))
    scaled = ib.multiply(acc, ib.broadcast(ib.constant(np.float32(1.5)), [4], []))
    inner_body = ib.finish(ib.tuple([ib.add(j, ib.constant(np.int32(1))), m, ib.add(scaled, x), x]))
    outer_state = shape.tuple_of(*(shape.scalar("s32"),) * 3, vec, vec)
    oc = b.sub("outer_cond")
    p = oc.parameter(outer_state)
    outer_cond = oc.finish(oc.compare(oc.get_tuple_element(p, 0), oc.get_tuple_element(p, 1), "LT"))
    ob = b.sub("outer_body")
    p = ob.parameter(outer_state)
    i, n, m, acc, x = (ob.get_tuple_element(p, k) for k in range(5))
    inner = ob.while_loop(inner_cond, inner_body, ob.tuple([ob.constant(np.int32(0)), m, acc, x]))
    x1 = ob.subtract(x, ob.broadcast(ob.constant(np.float32(1.0)), [4], []))
    outer_body = ob.finish(
        ob.tuple([ob.add(i, ob.constant(np.int32(1))), n, m, ob.get_tuple_element(inner, 2), x1])
    )
    n0, m0, acc0, x0 = (
        b.parameter(s) for s in (shape.scalar("s32"), shape.scalar("s32"), vec, vec)
    )
    loop = b.while_loop(
        outer_cond, outer_body, b.tuple([b.constant(np.int32(0)), n0, m0, acc0, x0])
    )
    module = b.build(b.get_tuple_element(loop, 3))
    for n, m in ((5, 7), (0, 3), (4, 0)):
        args = [np.int32(n), np.int32(m), _values("f32", [4], True), _values("f32", [4])]
        _, _, stats = run_both(module, args)
        assert stats["compiled"].get("while") == 1, stats
        assert stats["compiled"].get("while (native)") == 1, stats


def test_loop_with_reduce_and_dot_in_its_body_runs_natively():
    """m = dot(m, w) * 0.5; s = s + sum(m), 4 trips: the dot runs in the driver (small matmul).
    Small integers in m and w keep every product and sum exact in f32 (|m| <= 3 * 4^4 in steps
    of 2^-4, |s| < 2^18), so any summation order gives the interpreter's bits."""
    b = Builder("matloop")
    mat = shape.array("f32", [8, 8])
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), mat, shape.scalar("f32"))
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, m, s = (bb.get_tuple_element(p, k) for k in range(4))
    w = bb.constant(RNG.integers(-1, 2, (8, 8)).astype(np.float32))
    m1 = bb.multiply(bb.dot(m, w), bb.broadcast(bb.constant(np.float32(0.5)), [8, 8], []))
    total = bb.reduce(m1, bb.constant(np.float32(0)), b.scalar_computation("add", "f32"), [0, 1])
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, m1, bb.add(s, total)]))
    n0, m0 = b.parameter(shape.scalar("s32")), b.parameter(mat)
    init = b.tuple([b.constant(np.int32(0)), n0, m0, b.constant(np.float32(0))])
    module = b.build(b.while_loop(cond, body, init))
    args = [np.int32(4), RNG.integers(-3, 4, (8, 8)).astype(np.float32)]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats
    assert stats["compiled"].get("dot (small matmul)") == 1, stats


# -- conditional and call -----------------------------------------------------------------------
def _branch(b: Builder, name: str, operand_shape, make):
    sub = b.sub(name)
    return sub.finish(make(sub, sub.parameter(operand_shape)))


def test_conditional_with_a_pred_selector():
    b = Builder("cond_pred")
    vec = shape.array("f32", [5])
    on_true = _branch(b, "on_true", vec, lambda s, x: s.add(s.multiply(x, x), x))
    on_false = _branch(b, "on_false", vec, lambda s, x: s.negate(x))
    pred, x = b.parameter(shape.scalar("pred")), b.parameter(vec)
    module = b.build(b.conditional(pred, [on_true, on_false], [x, x]))
    x_value = _values("f32", [5], True)
    for selector in (True, False):
        _, _, stats = run_both(module, [np.bool_(selector), x_value])
        assert stats["compiled"].get("conditional") == 1, stats


@pytest.mark.parametrize("index", [0, 1, 2, 3, -1, 100, -(2**31)])
def test_conditional_with_an_index_out_of_range_runs_the_last_branch(index):
    b = Builder("cond_index")
    ints = shape.array("s32", [4])
    floats = shape.array("f64", [2])
    add_f64 = b.scalar_computation("add", "f64")

    def sum_as_ints(s: Builder, x):
        total = s.reduce(x, s.constant(np.float64(0)), add_f64, [0])
        return s.tuple([s.convert(s.broadcast(total, [4], []), "s32"), s.constant(2.5, "f64")])

    branches = [
        _branch(b, "b0", ints, lambda s, x: s.tuple([s.add(x, x), s.constant(0.0, "f64")])),
        _branch(b, "b1", floats, sum_as_ints),
        _branch(b, "b2", ints, lambda s, x: s.tuple([s.negate(x), s.constant(-0.0, "f64")])),
    ]
    sel, xi, xf = (b.parameter(s) for s in (shape.scalar("s32"), ints, floats))
    module = b.build(b.conditional(sel, branches, [xi, xf, xi]))
    args = [np.int32(index), np.array([1, -2, 2**31 - 1, 0], np.int32), np.array([1.25, -3.5])]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("conditional") == 1, stats


def test_call_is_compiled_when_not_inlined():
    b = Builder("caller")
    vec = shape.array("bf16", [6])
    callee_builder = b.sub("callee")
    x, y = callee_builder.parameter(vec), callee_builder.parameter(vec)
    callee = callee_builder.finish(
        callee_builder.tuple([callee_builder.add(x, y), callee_builder.multiply(x, y)])
    )
    px, py = b.parameter(vec), b.parameter(vec)
    module = b.build(b.call(callee, [px, py]))
    args = [_values("bf16", [6], True), _values("bf16", [6], True)]
    exe, _, stats = run_both(module, args, NO_INLINING)
    assert stats["compiled"].get("call") == 1, stats


def test_conditional_inside_a_loop_and_a_loop_inside_a_branch():
    """while i < n: acc = (i is even) ? acc + x : loop(acc * 2, 3 times)."""
    b = Builder("mixed")
    vec = shape.array("s32", [3])
    inner_state = shape.tuple_of(shape.scalar("s32"), vec)
    ic = b.sub("inner_cond")
    inner_cond = ic.finish(
        ic.compare(
            ic.get_tuple_element(ic.parameter(inner_state), 0), ic.constant(np.int32(3)), "LT"
        )
    )
    ib = b.sub("inner_body")
    p = ib.parameter(inner_state)
    two = ib.broadcast(ib.constant(np.int32(2)), [3], [])
    inner_body = ib.finish(
        ib.tuple(
            [
                ib.add(ib.get_tuple_element(p, 0), ib.constant(np.int32(1))),
                ib.multiply(ib.get_tuple_element(p, 1), two),
            ]
        )
    )
    pair = shape.tuple_of(vec, vec)
    even = _branch(
        b, "even", pair, lambda s, t: s.add(s.get_tuple_element(t, 0), s.get_tuple_element(t, 1))
    )
    odd_builder = b.sub("odd")
    t = odd_builder.parameter(pair)
    loop = odd_builder.while_loop(
        inner_cond,
        inner_body,
        odd_builder.tuple([odd_builder.constant(np.int32(0)), odd_builder.get_tuple_element(t, 0)]),
    )
    odd = odd_builder.finish(odd_builder.get_tuple_element(loop, 1))
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), vec, vec)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, acc, x = (bb.get_tuple_element(p, k) for k in range(4))
    parity = bb.remainder(i, bb.constant(np.int32(2)))
    branch = bb.conditional(parity, [even, odd], [bb.tuple([acc, x]), bb.tuple([acc, x])])
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, branch, x]))
    n0, acc0, x0 = b.parameter(shape.scalar("s32")), b.parameter(vec), b.parameter(vec)
    module = b.build(b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, acc0, x0])))
    args = [np.int32(7), np.array([1, -1, 3], np.int32), np.array([5, 0, -7], np.int32)]
    _, _, stats = run_both(module, args)
    compiled = stats["compiled"]
    assert compiled.get("while") == 1 and compiled.get("while (native)") == 1, stats
    assert compiled.get("conditional") == 1, stats


# -- HLO text in the shape JAX emits ------------------------------------------------------------
FORI_LOOP = """
HloModule jit_f, entry_computation_layout={(f32[8]{0}, f32[8]{0})->(s32[], f32[8]{0})}

region_0.3 {
  arg_tuple.4 = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  get-tuple-element.5 = s32[] get-tuple-element(arg_tuple.4), index=0
  constant.8 = s32[] constant(1)
  add.9 = s32[] add(get-tuple-element.5, constant.8)
  get-tuple-element.6 = f32[8]{0} get-tuple-element(arg_tuple.4), index=1
  get-tuple-element.7 = f32[8]{0} get-tuple-element(arg_tuple.4), index=2
  sine.10 = f32[8]{0} sine(get-tuple-element.6)
  multiply.11 = f32[8]{0} multiply(sine.10, get-tuple-element.7)
  add.12 = f32[8]{0} add(get-tuple-element.6, multiply.11)
  ROOT tuple.13 = (s32[], f32[8]{0}, f32[8]{0}) tuple(add.9, add.12, get-tuple-element.7)
}

region_1.14 {
  arg_tuple.15 = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  get-tuple-element.16 = s32[] get-tuple-element(arg_tuple.15), index=0
  constant.19 = s32[] constant(100)
  ROOT compare.20 = pred[] compare(get-tuple-element.16, constant.19), direction=LT
}

ENTRY main.25 {
  Arg_0.1 = f32[8]{0} parameter(0)
  Arg_1.2 = f32[8]{0} parameter(1)
  constant.21 = s32[] constant(0)
  tuple.22 = (s32[], f32[8]{0}, f32[8]{0}) tuple(constant.21, Arg_0.1, Arg_1.2)
  while.23 = (s32[], f32[8]{0}, f32[8]{0}) while(tuple.22), condition=region_1.14, body=region_0.3,
    backend_config={"known_trip_count":{"n":"100"}}
  get-tuple-element.24 = s32[] get-tuple-element(while.23), index=0
  get-tuple-element.25 = f32[8]{0} get-tuple-element(while.23), index=1
  ROOT tuple.26 = (s32[], f32[8]{0}) tuple(get-tuple-element.24, get-tuple-element.25)
}
"""


def test_jax_fori_loop_text():
    """sine is a polynomial approximation in the kernel: rtol=1e-5, atol=1e-6 after 100 trips
    (the interpreter uses NumPy's sin)."""
    module = parse_module(FORI_LOOP)
    args = [_values("f32", [8]), _values("f32", [8]) * np.float32(0.1)]
    exe = hlort.compile(module, "cpu")
    counter, values = exe(*args)
    want_counter, want_values = hlort.evaluate(module, args)
    assert_same(counter, want_counter)
    np.testing.assert_allclose(values, want_values, rtol=1e-5, atol=1e-6)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"].get("while (native)") == 1, stats


SCAN_CUMSUM = """
HloModule jit_cumsum, entry_computation_layout={(f32[16]{0})->(f32[], f32[16]{0})}

body.1 {
  arg.2 = (s32[], f32[16]{0}, f32[], f32[16]{0}) parameter(0)
  i.3 = s32[] get-tuple-element(arg.2), index=0
  xs.4 = f32[16]{0} get-tuple-element(arg.2), index=1
  carry.5 = f32[] get-tuple-element(arg.2), index=2
  ys.6 = f32[16]{0} get-tuple-element(arg.2), index=3
  one.7 = s32[] constant(1)
  next.8 = s32[] add(i.3, one.7)
  slice.9 = f32[1]{0} dynamic-slice(xs.4, i.3), dynamic_slice_sizes={1}
  x.10 = f32[] reshape(slice.9)
  sum.11 = f32[] add(carry.5, x.10)
  update.12 = f32[1]{0} reshape(sum.11)
  ys.13 = f32[16]{0} dynamic-update-slice(ys.6, update.12, i.3)
  ROOT tuple.14 = (s32[], f32[16]{0}, f32[], f32[16]{0}) tuple(next.8, xs.4, sum.11, ys.13)
}

cond.15 {
  arg.16 = (s32[], f32[16]{0}, f32[], f32[16]{0}) parameter(0)
  i.17 = s32[] get-tuple-element(arg.16), index=0
  n.18 = s32[] constant(16)
  ROOT lt.19 = pred[] compare(i.17, n.18), direction=LT
}

ENTRY main.20 {
  xs.21 = f32[16]{0} parameter(0)
  zero.22 = s32[] constant(0)
  fzero.23 = f32[] constant(0)
  ys.24 = f32[16]{0} broadcast(fzero.23), dimensions={}
  init.25 = (s32[], f32[16]{0}, f32[], f32[16]{0}) tuple(zero.22, xs.21, fzero.23, ys.24)
  loop.26 = (s32[], f32[16]{0}, f32[], f32[16]{0}) while(init.25), condition=cond.15, body=body.1
  carry.27 = f32[] get-tuple-element(loop.26), index=2
  ys.28 = f32[16]{0} get-tuple-element(loop.26), index=3
  ROOT out.29 = (f32[], f32[16]{0}) tuple(carry.27, ys.28)
}
"""

LAX_COND = """
HloModule jit_cond, entry_computation_layout={(f32[5]{0}, f32[])->f32[5]{0}}

branch_false.1 {
  p.2 = (f32[5]{0}) parameter(0)
  x.3 = f32[5]{0} get-tuple-element(p.2), index=0
  ROOT neg.4 = f32[5]{0} negate(x.3)
}

branch_true.5 {
  p.6 = (f32[5]{0}) parameter(0)
  x.7 = f32[5]{0} get-tuple-element(p.6), index=0
  two.8 = f32[] constant(2)
  twos.9 = f32[5]{0} broadcast(two.8), dimensions={}
  ROOT mul.10 = f32[5]{0} multiply(x.7, twos.9)
}

ENTRY main.11 {
  x.12 = f32[5]{0} parameter(0)
  t.13 = f32[] parameter(1)
  zero.14 = f32[] constant(0)
  gt.15 = pred[] compare(t.13, zero.14), direction=GT
  index.16 = s32[] convert(gt.15)
  operand.17 = (f32[5]{0}) tuple(x.12)
  ROOT cond.18 = f32[5]{0} conditional(index.16, operand.17, operand.17),
    branch_computations={branch_false.1, branch_true.5}
}
"""


def test_jax_scan_with_dynamic_slices_runs_natively():
    module = parse_module(SCAN_CUMSUM)
    args = [_values("f32", [16], True)]
    _, _, stats = run_both(module, args)
    assert stats["compiled"].get("while (native)") == 1, stats


def test_jax_lax_cond_text():
    module = parse_module(LAX_COND)
    x = _values("f32", [5], True)
    for t in (1.0, -1.0, 0.0, np.nan):
        _, _, stats = run_both(module, [x, np.float32(t)])
        assert stats["compiled"].get("conditional") == 1, stats


def test_native_loops_survive_the_disk_cache():
    from hlort_cpu import compile_cache

    module = counter_loop("s16", [9], name="cached_counter")
    args = [np.int32(50), _values("s16", [9]), _values("s16", [9])]
    first = hlort.compile(module, "cpu")
    compile_cache.clear_memory()
    second = hlort.compile(module, "cpu")
    assert second.raw.stats()["cache_hit"] and not first.raw.stats()["cache_hit"]
    assert second.raw.stats()["compiled"] == first.raw.stats()["compiled"]
    assert first.raw.stats()["compiled"].get("while (native)") == 1
    assert_same(second(*args), hlort.evaluate(module, args))


def test_an_unused_loop_whose_body_has_a_side_effect_still_runs():
    """DCE keeps the loop (its body's check is a side effect); the compiled program runs it."""
    exe = hlort.compile(side_effect_in_unused_loop(), "cpu")
    assert_same(exe(np.float32([1, 2, 3])), np.float32([2, 4, 6]))
    with pytest.raises(hlort.HlortError, match="check.expect_eq"):
        exe(np.float32([0, 0, 0]))
