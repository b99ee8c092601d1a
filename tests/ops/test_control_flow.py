"""while, conditional, call, fusion, tuple, get-tuple-element, opt-barrier and after-all: the shape
rules check callee signatures against operands (naming both), and the interpreter runs loops,
branches (XLA's out-of-range index -> last branch) and calls as XLA does."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from hlort import Builder, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.interpreter.evaluator import Evaluator
from hlort.ir import FusionKind, Opcode, infer_shape, verify_module
from hlort.shape import TOKEN, Token, TupleShape, scalar
from hlort.testing.programs import side_effect_in_unused_loop

S32 = scalar("s32")
F32 = scalar("f32")
PRED = scalar("pred")


def counter_loop(b: Builder, limit: int):
    """(i, acc) -> while i < limit: (i + 1, acc + i): the condition and body computations."""
    state = TupleShape((S32, S32))
    c = b.sub("cond")
    t = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(t, 0), c.constant(limit, "s32"), "LT"))
    d = b.sub("body")
    t = d.parameter(state)
    i, acc = d.get_tuple_element(t, 0), d.get_tuple_element(t, 1)
    body = d.finish(d.tuple([d.add(i, d.constant(1, "s32")), d.add(acc, i)]))
    return cond, body


def invalid(opcode, operands, attrs, *fragments, declared=None):
    with pytest.raises(HlortError) as err:
        infer_shape(opcode, operands, attrs, declared)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)
    return str(err.value)


# -- while -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [0, 1, 10, 100])
def test_while_counts_with_tuple_state(limit):
    b = Builder("count")
    cond, body = counter_loop(b, limit)
    start = b.tuple([b.constant(0, "s32"), b.constant(0, "s32")])
    module = b.build(b.while_loop(cond, body, start))
    verify_module(module)
    i, acc = evaluate(module)
    assert int(i) == limit and int(acc) == limit * (limit - 1) // 2


def test_while_with_array_state_and_parameter_init():
    b = Builder("double")
    vec = shape.array("f32", [4])
    c = b.sub("cond")
    x = c.parameter(vec)
    zero = c.constant(np.float32(0))
    total = c.reduce(x, zero, c.scalar_computation(Opcode.ADD, "f32"), [0])
    cond = c.finish(c.compare(total, c.constant(np.float32(100)), "LT"))
    d = b.sub("body")
    x = d.parameter(vec)
    body = d.finish(d.add(x, x))
    p = b.parameter(vec)
    module = b.build(b.while_loop(cond, body, p))
    out = evaluate(module, [np.float32([1, 2, 3, 4])])
    assert out.tolist() == [16, 32, 48, 64]  # 10 -> 20 -> 40 -> 80 -> 160


def test_nested_while():
    """An outer loop of 3 trips runs an inner loop of 4 trips: 12 increments in all."""
    b = Builder("nested")
    inner_cond, inner_body = counter_loop(b, 4)
    state = TupleShape((S32, S32))
    c = b.sub("outer_cond")
    t = c.parameter(state)
    outer_cond = c.finish(c.compare(c.get_tuple_element(t, 0), c.constant(3, "s32"), "LT"))
    d = b.sub("outer_body")
    t = d.parameter(state)
    i, total = d.get_tuple_element(t, 0), d.get_tuple_element(t, 1)
    inner = d.while_loop(inner_cond, inner_body, d.tuple([d.constant(0, "s32"), total]))
    # the inner loop adds 0+1+2+3 = 6 to the running total on every outer trip
    outer_body = d.finish(d.tuple([d.add(i, d.constant(1, "s32")), d.get_tuple_element(inner, 1)]))
    start = b.tuple([b.constant(0, "s32"), b.constant(0, "s32")])
    module = b.build(b.while_loop(outer_cond, outer_body, start))
    verify_module(module)
    i, total = evaluate(module)
    assert int(i) == 3 and int(total) == 18


def _computation(b: Builder, name: str, params, make):
    sub = b.sub(name)
    ps = [sub.parameter(p) for p in params]
    return sub.finish(make(sub, *ps))


def test_while_rejects_bad_condition_and_body():
    b = Builder("bad")
    state = TupleShape((S32, F32))
    good_cond = _computation(b, "cond", [state], lambda s, t: s.constant(True))
    good_body = _computation(b, "body", [state], lambda s, t: t)
    int_cond = _computation(b, "int_cond", [state], lambda s, t: s.constant(1, "s32"))
    two_param = _computation(b, "two", [state, S32], lambda s, t, u: s.constant(True))
    wrong_body = _computation(b, "wrong", [state], lambda s, t: s.get_tuple_element(t, 0))
    other_state = _computation(b, "other", [S32], lambda s, x: x)
    attrs = {"condition": good_cond, "body": good_body}
    assert infer_shape(Opcode.WHILE, [state], attrs) == state
    invalid(
        Opcode.WHILE,
        [state],
        {**attrs, "condition": int_cond},
        "condition computation int_cond must return pred[]",
        "-> s32[]",
    )
    invalid(
        Opcode.WHILE,
        [state],
        {**attrs, "condition": two_param},
        "must take ((s32[], f32[]))",
        "((s32[], f32[]), s32[]) -> pred[]",
    )
    invalid(
        Opcode.WHILE,
        [state],
        {**attrs, "body": wrong_body},
        "body computation wrong must return the loop state (s32[], f32[])",
        "((s32[], f32[])) -> s32[]",
    )
    invalid(
        Opcode.WHILE,
        [state],
        {**attrs, "body": other_state},
        "body computation other must take ((s32[], f32[]))",
        "(s32[]) -> s32[]",
    )
    invalid(Opcode.WHILE, [state], {"body": good_body}, "missing attribute 'condition'")
    invalid(Opcode.WHILE, [state], {**attrs, "body": "body"}, "'body' must be a computation")


# -- conditional -----------------------------------------------------------------------------------
def _branches(b: Builder):
    plus = _computation(b, "plus", [F32], lambda s, x: s.add(x, s.constant(np.float32(10))))
    times = _computation(b, "times", [F32], lambda s, x: s.multiply(x, s.constant(np.float32(3))))
    negate = _computation(b, "neg", [F32], lambda s, x: s.negate(x))
    return plus, times, negate


@pytest.mark.parametrize("flag, expected", [(True, 12.0), (False, 15.0)])
def test_conditional_pred_form(flag, expected):
    b = Builder("cond_pred")
    plus, times, _ = _branches(b)
    p = b.parameter(PRED)
    module = b.build(
        b.conditional(p, [plus, times], [b.constant(np.float32(2)), b.constant(np.float32(5))])
    )
    verify_module(module)
    assert float(evaluate(module, [np.bool_(flag)])) == expected


@pytest.mark.parametrize(
    "index, expected", [(0, 11.0), (1, 6.0), (2, -4.0), (3, -4.0), (-1, -4.0), (2**31 - 1, -4.0)]
)
def test_conditional_index_form_out_of_range_runs_last(index, expected):
    b = Builder("cond_index")
    plus, times, negate = _branches(b)
    p = b.parameter(S32)
    ops = [b.constant(np.float32(v)) for v in (1, 2, 4)]
    module = b.build(b.conditional(p, [plus, times, negate], ops))
    assert float(evaluate(module, [np.int32(index)])) == expected


def test_conditional_branches_take_different_operand_types():
    b = Builder("mixed")
    from_int = _computation(b, "from_int", [S32], lambda s, x: s.convert(x, "f32"))
    from_tuple = _computation(
        b, "from_tuple", [TupleShape((F32, F32))], lambda s, t: s.get_tuple_element(t, 1)
    )
    p = b.parameter(S32)
    pair = b.tuple([b.constant(np.float32(1)), b.constant(np.float32(7))])
    module = b.build(b.conditional(p, [from_int, from_tuple], [b.constant(5, "s32"), pair]))
    assert float(evaluate(module, [np.int32(0)])) == 5.0
    assert float(evaluate(module, [np.int32(1)])) == 7.0


def test_conditional_rejects():
    b = Builder("bad_cond")
    plus, times, negate = _branches(b)
    to_int = _computation(b, "to_int", [F32], lambda s, x: s.convert(x, "s32"))
    three = {"branch_computations": (plus, times, negate)}
    assert infer_shape(Opcode.CONDITIONAL, [S32, F32, F32, F32], three) == F32
    invalid(
        Opcode.CONDITIONAL,
        [PRED, F32, F32, F32],
        three,
        "a pred[] selector needs exactly 2 branches [true, false], got 3",
    )
    invalid(
        Opcode.CONDITIONAL,
        [F32, F32, F32, F32],
        three,
        "selector (operand 0) must be pred[] or s32[], got f32[]",
    )
    invalid(Opcode.CONDITIONAL, [shape.array("s32", [1]), F32, F32, F32], three, "got s32[1]")
    invalid(Opcode.CONDITIONAL, [S32, F32, F32], three, "3 branch(es) need 4 operands", "got 3")
    invalid(
        Opcode.CONDITIONAL,
        [S32, F32, S32, F32],
        three,
        "branch 1 computation times must take (s32[])",
        "(f32[]) -> f32[]",
    )
    invalid(
        Opcode.CONDITIONAL,
        [PRED, F32, F32],
        {"branch_computations": (plus, to_int)},
        "branch 0 (plus) returns f32[]",
        "branch 1 (to_int) returns s32[]",
    )
    invalid(Opcode.CONDITIONAL, [S32], {"branch_computations": ()}, "non-empty")


# -- call and fusion -------------------------------------------------------------------------------
def _axpy(b: Builder, name: str):
    vec = shape.array("f32", [3])

    def make(s, a, x, y):
        return s.add(s.multiply(s.broadcast(a, [3], []), x), y)

    return _computation(b, name, [F32, vec, vec], make)


def test_call():
    b = Builder("call")
    axpy = _axpy(b, "axpy")
    vec = shape.array("f32", [3])
    a, x, y = b.parameter(F32), b.parameter(vec), b.parameter(vec)
    module = b.build(b.call(axpy, [a, x, y]))
    verify_module(module)
    out = evaluate(module, [np.float32(2), np.float32([1, 2, 3]), np.float32([10, 20, 30])])
    assert out.tolist() == [12, 24, 36]
    invalid(
        Opcode.CALL,
        [F32, vec],
        {"to_apply": axpy},
        "to_apply computation axpy must take (f32[], f32[3])",
        "(f32[], f32[3], f32[3]) -> f32[3]",
    )


def test_fusion_matches_the_unfused_computation():
    b = Builder("fused")
    fused = _axpy(b, "fused_axpy")
    fused.is_fusion_computation = True
    b.module.add_computation(fused)
    vec = shape.array("f32", [3])
    a, x, y = b.parameter(F32), b.parameter(vec), b.parameter(vec)
    fusion = b.op(Opcode.FUSION, [a, x, y], kind=FusionKind.LOOP, calls=fused)
    direct = b.add(b.multiply(b.broadcast(a, [3], []), x), y)
    module = b.build(b.tuple([fusion, direct]))
    verify_module(module)
    args = [np.float32(-1.5), np.float32([1, 2, 3]), np.float32([0.25, 0.5, 4])]
    got, want = evaluate(module, args)
    assert got.tobytes() == want.tobytes()


def test_fusion_rejects():
    b = Builder("bad_fusion")
    fused = _axpy(b, "f")
    vec = shape.array("f32", [3])
    invalid(
        Opcode.FUSION,
        [F32, vec, vec],
        {"kind": "kLoop", "calls": fused},
        "'kind' must be a FusionKind",
    )
    invalid(
        Opcode.FUSION,
        [F32, vec],
        {"kind": FusionKind.INPUT, "calls": fused},
        "fused computation f must take (f32[], f32[3])",
    )
    invalid(Opcode.FUSION, [F32, vec, vec], {"kind": FusionKind.LOOP}, "missing attribute 'calls'")


# -- tuples, barriers, tokens ----------------------------------------------------------------------
def test_tuple_and_get_tuple_element():
    b = Builder("tuples")
    x = b.parameter(shape.array("s8", [2]))
    y = b.parameter(F32)
    inner = b.tuple([y, x])
    t = b.tuple([x, inner, b.tuple([])])
    assert t.shape == TupleShape((x.shape, TupleShape((F32, x.shape)), TupleShape(())))
    module = b.build(
        b.tuple([b.get_tuple_element(b.get_tuple_element(t, 1), 1), b.get_tuple_element(t, 2), t])
    )
    verify_module(module)
    picked, empty, whole = evaluate(module, [np.int8([3, -4]), np.float32(0.5)])
    assert picked.tolist() == [3, -4] and empty == ()
    assert whole[1][0] == np.float32(0.5) and whole[0].tolist() == [3, -4]


def test_get_tuple_element_rejects():
    pair = TupleShape((S32, F32))
    invalid(
        Opcode.GET_TUPLE_ELEMENT,
        [pair],
        {"index": 2},
        "index=2 is out of range",
        "2-tuple (s32[], f32[])",
    )
    invalid(Opcode.GET_TUPLE_ELEMENT, [pair], {"index": -1}, "index=-1 is out of range")
    invalid(Opcode.GET_TUPLE_ELEMENT, [S32], {"index": 0}, "operand must be a tuple, got s32[]")
    invalid(Opcode.GET_TUPLE_ELEMENT, [pair], {"index": True}, "index must be an integer")


def test_optimization_barrier_is_identity():
    b = Builder("barrier")
    x = b.parameter(shape.array("f32", [2]))
    barrier = b.optimization_barrier(b.tuple([x, b.constant(7, "s32")]))
    assert barrier.shape == TupleShape((x.shape, S32))
    module = b.build(barrier)
    out = evaluate(module, [np.float32([1, 2])])
    assert out[0].tolist() == [1, 2] and int(out[1]) == 7


def test_after_all():
    b = Builder("tokens")
    t0 = b.after_all()
    t1 = b.parameter(TOKEN)
    joined = b.after_all([t0, t1])
    assert joined.shape == TOKEN
    module = b.build(b.tuple([joined, b.constant(1, "s32")]))
    out = evaluate(module, [Token()])
    assert isinstance(out[0], Token) and int(out[1]) == 1
    invalid(Opcode.AFTER_ALL, [TOKEN, S32], {}, "operand 1 is s32[]")


def test_an_unused_loop_whose_body_has_a_side_effect_still_runs():
    """DCE keeps the loop (its body's check is a side effect); the interpreter must run it."""
    module = side_effect_in_unused_loop()
    out = evaluate(module, [np.float32([1, 2, 3])])
    assert out.tolist() == [2, 4, 6]
    with pytest.raises(HlortError, match="check.expect_eq") as info:
        evaluate(module, [np.float32([0, 0, 0])])
    assert info.value.code is ErrorCode.FAILED_PRECONDITION


def test_the_evaluator_never_runs_a_collected_computations_order_for_a_new_one():
    """A collected computation's id can be reused by a new one; the evaluator's order cache
    must not hand the new computation the old one's instructions."""
    ev = Evaluator()
    x = np.float32(3)
    for k in range(50):
        b = Builder(f"plus_{k}")
        p = b.parameter(F32)
        comp = b.build(b.add(p, b.constant(np.float32(k)))).entry
        assert ev.call(comp, [x]) == x + k
        for instr in comp.instructions:  # nothing refers back: the computation can be freed
            instr.parent = None
        del b, p, comp
        gc.collect()
