"""Small programs the API tests run (the op cases live in ``cases_*``)."""

from __future__ import annotations

import numpy as np

from hlort.builder import Builder
from hlort.ir.module import Module
from hlort.shape import TupleShape, array
from hlort.testdata import check_targets  # noqa: F401  (check.expect_eq, in failing_at_run_time)


def axpy(n: int = 8, name: str = "axpy") -> Module:
    """(a: f32[], x: f32[n], y: f32[n]) -> a * x + y."""
    b = Builder(name)
    a = b.parameter(array("f32", ()))
    x = b.parameter(array("f32", (n,)))
    y = b.parameter(array("f32", (n,)))
    return b.build(b.add(b.multiply(b.broadcast(a, [n], []), x), y))


def axpy_reference(a, x, y) -> np.ndarray:
    return (np.float32(a) * x + y).astype(np.float32)


def two_outputs(n: int = 4) -> Module:
    """(x: f32[n], y: s32[n]) -> (x + x, y, x): a tuple root, flattened to three outputs."""
    b = Builder("two_outputs")
    x = b.parameter(array("f32", (n,)))
    y = b.parameter(array("s32", (n,)))
    return b.build(b.tuple([b.add(x, x), y, x]))


def slow_loop(iterations: int = 2000) -> Module:
    """(x: f32[64]) -> x + iterations, one add per loop trip: takes a while on any backend."""
    b = Builder("slow_loop")
    state = array("s32", ())
    cond = b.sub("cond")
    i = cond.parameter(state)
    cond_comp = cond.finish(cond.compare(i, cond.constant(np.int32(iterations)), "LT"))
    body = b.sub("body")
    j = body.parameter(state)
    body_comp = body.finish(body.add(j, body.constant(np.int32(1))))
    count = b.while_loop(cond_comp, body_comp, b.constant(np.int32(0)))
    x = b.parameter(array("f32", (64,)))
    return b.build(b.add(x, b.broadcast(b.convert(count, "f32"), [64], [])))


def unknown_custom_call() -> Module:
    """A custom call to a target no backend knows: compile must say UNIMPLEMENTED."""
    b = Builder("unknown_target")
    x = b.parameter(array("f32", (3,)))
    return b.build(b.custom_call("hlort_conformance_no_such_target", [x], x.shape))


def failing_at_run_time() -> Module:
    """Compiles, then fails when run on x != [1, 2, 3]: a ``check.expect_eq`` custom call."""
    b = Builder("expect_fails")
    x = b.parameter(array("f32", (3,)))
    expected = b.constant(np.array([1.0, 2.0, 3.0], np.float32))
    b.custom_call("check.expect_eq", [x, expected], TupleShape(()), has_side_effect=True)
    return b.build(b.add(x, x))


def side_effect_in_unused_loop() -> Module:
    """(x: f32[3]) -> x + x, beside a one-trip while loop nothing uses whose body checks
    x == [1, 2, 3] (``check.expect_eq``, a side effect): the loop must run, so other x fail.

    The side effect is reached only through a called computation: DCE keeps the loop, and every
    backend must run it too (one execution order, ``Computation.execution_order``).
    """
    b = Builder("side_effect_in_unused_loop")
    x = b.parameter(array("f32", (3,)))
    state = TupleShape((array("s32", ()), array("f32", (3,))))
    cond = b.sub("cond")
    s = cond.parameter(state)
    cond_comp = cond.finish(
        cond.compare(cond.get_tuple_element(s, 0), cond.constant(np.int32(1)), "LT")
    )
    body = b.sub("body")
    s = body.parameter(state)
    i, v = body.get_tuple_element(s, 0), body.get_tuple_element(s, 1)
    expected = body.constant(np.array([1.0, 2.0, 3.0], np.float32))
    body.custom_call("check.expect_eq", [v, expected], TupleShape(()), has_side_effect=True)
    body_comp = body.finish(body.tuple([body.add(i, body.constant(np.int32(1))), v]))
    b.while_loop(cond_comp, body_comp, b.tuple([b.constant(np.int32(0)), x]))
    return b.build(b.add(x, x))
