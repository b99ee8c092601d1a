"""Differential tests: random modules mean the same before and after the whole pipeline.

Hypothesis builds modules from elementwise chains, broadcasts, reshapes, transposes, slices,
concatenates, reductions, dots (including one-element contractions), converts, selects,
constants that invite inexact rewrites (``x + 0.0``, ``x * 0``), calls, while loops with
constant trip counts and conditionals. Inputs carry NaN, infinities and signed zeros. The
interpreter must give the same bits before and after (any NaN equals any NaN: payloads are not
part of the contract), the result must verify, a second pipeline run must change nothing, and
the buffer assignment must never overlap two live buffers.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlort.builder import Builder
from hlort.interpreter import evaluate
from hlort.ir import DotDimensionNumbers
from hlort.passes import FusionPolicy, assign_buffers, run_default_pipeline
from hlort.shape import array, scalar
from hlort.text.printer import print_module

M, N = 4, 6
SHAPES = [(M, N), (N,), (M,), ()]
UNARY = ["negate", "abs", "exponential", "tanh", "sqrt", "log", "floor", "sign", "cosine"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
REDUCERS = ["add", "maximum", "minimum", "multiply"]
SPECIAL = [0.0, -0.0, 1.0, 2.0, 0.5, float("nan"), float("inf")]


class RandomModule:
    def __init__(self, data):
        self.data = data
        self.b = Builder("random")
        self.pool: dict[tuple, list] = {s: [] for s in SHAPES}
        for s in SHAPES:
            self.pool[s].append(self.b.parameter(array("f32", s)))

    def draw(self, strategy):
        return self.data.draw(strategy)

    def get(self, dims: tuple):
        values = self.pool[dims]
        return values[self.draw(st.integers(0, len(values) - 1))]

    def put(self, value) -> None:
        self.pool.setdefault(tuple(value.shape.dims), []).append(value)

    def const(self, value: float, dims: tuple):
        c = self.b.constant(np.float32(value))
        return self.b.broadcast(c, list(dims), []) if dims else c

    def reducer(self, name: str):
        return self.b.scalar_computation(name, "f32")

    # -- one random step ----------------------------------------------------------------------
    def step(self) -> None:
        b = self.b
        kind = self.draw(
            st.sampled_from(
                [
                    "unary",
                    "binary",
                    "binary",
                    "select",
                    "broadcast",
                    "reduce",
                    "dot",
                    "dot1",
                    "identity",
                    "movement",
                    "concat",
                    "convert",
                    "while",
                    "conditional",
                    "call",
                    "iota",
                    "reduce1",
                    "fold",
                ]
            )
        )
        dims = self.draw(st.sampled_from(SHAPES))
        if kind == "unary":
            self.put(b.op(_op(self.draw(st.sampled_from(UNARY))), [self.get(dims)]))
        elif kind == "binary":
            op = _op(self.draw(st.sampled_from(BINARY)))
            self.put(b.op(op, [self.get(dims), self.get(dims)]))
        elif kind == "select":
            x, y = self.get(dims), self.get(dims)
            p = b.compare(x, y, self.draw(st.sampled_from(["LT", "GE", "EQ", "NE"])))
            self.put(b.select(p, x, y))
        elif kind == "broadcast":
            src = self.draw(st.sampled_from([(N,), (M,), ()]))
            mapping = {(N,): [1], (M,): [0], (): []}[src]
            self.put(b.broadcast(self.get(src), [M, N], mapping))
        elif kind == "reduce":
            x = self.get((M, N))
            dim = self.draw(st.sampled_from([[0], [1], [0, 1]]))
            init = self.const(self.draw(st.sampled_from([0.0, -0.0, 1.0, -np.inf])), ())
            self.put(b.reduce(x, init, self.reducer(self.draw(st.sampled_from(REDUCERS))), dim))
        elif kind == "dot":
            self.put(
                b.dot_general(self.get((M, N)), self.get((N,)), DotDimensionNumbers((1,), (0,)))
            )
        elif kind == "dot1":
            lhs = b.reshape(self.get((M,)), [M, 1])
            rhs = b.reshape(self.get((N,)), [1, N])
            self.put(b.dot_general(lhs, rhs, DotDimensionNumbers((1,), (0,))))
        elif kind == "identity":
            x = self.get(dims)
            c = self.draw(st.sampled_from(SPECIAL))
            op = _op(self.draw(st.sampled_from(["add", "subtract", "multiply", "divide"])))
            self.put(b.op(op, [x, self.const(c, dims)]))
        elif kind == "movement":
            x = self.get((M, N))
            choice = self.draw(st.integers(0, 3))
            if choice == 0:
                y = b.reshape(b.reshape(x, [M * N]), [M, N])
            elif choice == 1:
                y = b.transpose(b.transpose(x, [1, 0]), [1, 0])
            elif choice == 2:
                y = b.slice(b.reverse(x, [1]), [0, 1], [M, N], [1, 2])
                y = b.broadcast(
                    b.reduce(y, self.const(0.0, ()), self.reducer("add"), [1]), [M, N], [0]
                )
            else:
                y = b.pad(b.slice(x, [0, 0], [M, N]), self.const(0.0, ()), [(0, 0, 0)] * 2)
            self.put(y)
        elif kind == "concat":
            x, y = self.get((M, N)), self.get((M, N))
            cat = b.concatenate([x, y], 0)
            start = self.draw(st.sampled_from([0, M, 2]))
            self.put(b.slice(cat, [start, 0], [start + M, N]))
        elif kind == "convert":
            x = self.get(dims)
            via = self.draw(st.sampled_from(["f64", "f16", "bf16"]))
            self.put(b.convert(b.convert(x, via), "f32"))
        elif kind == "while":
            self.put(self._loop(self.get((M,)), self.draw(st.sampled_from([0, 1, 3]))))
        elif kind == "conditional":
            self.put(self._conditional(self.get((M,)), self.get(())))
        elif kind == "call":
            sub = b.sub("callee")
            p = sub.parameter(array("f32", dims))
            callee = sub.finish(sub.negate(sub.abs(p)))
            self.put(b.call(callee, [self.get(dims)]))
        elif kind == "iota":
            self.put(
                b.add(b.iota(array("f32", [M, N]), self.draw(st.integers(0, 1))), self.get((M, N)))
            )
        elif kind == "fold":
            values = self.draw(st.lists(st.sampled_from(SPECIAL), min_size=M, max_size=M))
            c = b.constant(np.array(values, np.float32))
            d = b.constant(np.array(values[::-1], np.float32))
            op = _op(self.draw(st.sampled_from(BINARY)))
            self.put(b.add(b.op(op, [c, b.negate(d)]), self.get((M,))))
        elif kind == "reduce1":
            x = b.reshape(self.get((M,)), [M, 1])
            init = self.const(self.draw(st.sampled_from([0.0, -0.0, 1.0])), ())
            op = self.draw(st.sampled_from(["add", "multiply"]))
            self.put(b.reduce(x, init, self.reducer(op), [1]))

    def _loop(self, x, trips: int):
        b = self.b
        state = (scalar("s32"), array("f32", [M]))
        body = b.sub("body")
        s = body.parameter(_tuple(state))
        i = body.get_tuple_element(s, 0)
        v = body.get_tuple_element(s, 1)
        one = body.constant(np.int32(1))
        half = body.broadcast(body.constant(np.float32(0.5)), [M], [])
        body_comp = body.finish(
            body.tuple([body.add(i, one), body.add(body.multiply(v, half), body.tanh(v))])
        )
        cond = b.sub("cond")
        cs = cond.parameter(_tuple(state))
        limit = cond.constant(np.int32(trips))
        cond_comp = cond.finish(cond.compare(cond.get_tuple_element(cs, 0), limit, "LT"))
        init = b.tuple([b.constant(np.int32(0)), x])
        return b.get_tuple_element(b.while_loop(cond_comp, body_comp, init), 1)

    def _conditional(self, x, s):
        b = self.b
        branches = []
        for name, op in (("yes", "exponential"), ("no", "negate")):
            sub = b.sub(name)
            p = sub.parameter(array("f32", [M]))
            branches.append(sub.finish(sub.op(_op(op), [p])))
        pred = b.compare(s, self.const(0.0, ()), "GT")
        return b.conditional(pred, branches, [x, x])

    def build(self, steps: int):
        for _ in range(steps):
            self.step()
        candidates = [v for values in self.pool.values() for v in values[1:]]
        outs = candidates[-3:] or [self.pool[(M, N)][0]]
        return self.b.build(self.b.tuple(outs) if len(outs) > 1 else outs[0])


def _op(name: str):
    from hlort.ir.opcodes import Opcode

    return Opcode(name)


def _tuple(shapes):
    from hlort.shape import TupleShape

    return TupleShape(tuple(shapes))


def _check(h, module, policy=None):
    before = module.clone()
    report = run_default_pipeline(module, policy=policy, verify=True)
    assert report.records
    for seed in range(2):
        args = h.make_inputs(before, seed)
        expected = evaluate(before, args)
        actual = evaluate(module, args)
        assert h.same_bits(expected, actual), (
            f"seed {seed}\n--- before ---\n{print_module(before)}\n"
            f"--- after ---\n{print_module(module)}"
        )
    again = run_default_pipeline(module, policy=policy, verify=True)
    assert again.changed_passes() == [], again.summary() + "\n" + print_module(module)
    assignment = assign_buffers(module)
    arena = [x for x in assignment.buffers if x.in_arena]
    for i, a in enumerate(arena):
        for c in arena[i + 1 :]:
            if assignment.interferes(a, c):
                assert a.offset + a.size <= c.offset or c.offset + c.size <= a.offset


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(st.data(), st.integers(3, 20))
def test_pipeline_keeps_meaning(h, data, steps):
    _check(h, RandomModule(data).build(steps))


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data(), st.integers(3, 10))
def test_pipeline_keeps_meaning_under_other_policies(h, data, steps):
    policy = data.draw(
        st.sampled_from(
            [
                FusionPolicy(epilogue_fusion=True),
                FusionPolicy(multi_output_fusion=False, duplicate_cheap_producers=False),
                FusionPolicy(max_fused_instructions=3, max_operands=3, max_outputs=2),
            ]
        )
    )
    _check(h, RandomModule(data).build(steps), policy)
