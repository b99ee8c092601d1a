"""Scatter combiners and select-and-scatter computations holding a ``map`` or ``call`` on
scalars, tuples and opt-barriers (flat_scalar_code.py): kernels, not host fallbacks, matching
the interpreter bit for bit with duplicate indices, out-of-bounds rows, NaN, infinities and
-0.0; a combiner with a rank-0 reduce stays a host fallback with its reason."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.text.parser import parse_module

HEAD = """HloModule sc
inner {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] subtract(m, b)
}
biggest {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
"""

COMBINERS = {
    "map": "ROOT c = f32[] map(a, b), dimensions={}, to_apply=inner",
    "call-max": "ROOT c = f32[] call(a, b), to_apply=biggest",
    "opt-barrier": "t = (f32[], f32[]) tuple(b, a)\n  o = (f32[], f32[]) opt-barrier(t)\n"
    "  g0 = f32[] get-tuple-element(o), index=0\n  g1 = f32[] get-tuple-element(o), index=1\n"
    "  ROOT c = f32[] map(g1, g0), dimensions={}, to_apply=biggest",
}

SCATTER = """comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  BODY
}
ENTRY main {
  x = f32[8,3] parameter(0)
  i = s32[6,1] parameter(1)
  u = f32[6,3] parameter(2)
  ROOT r = f32[8,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, \
scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""

SELECT_SCATTER = """sel {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] map(a, b), dimensions={}, to_apply=biggest
  ROOT c = pred[] compare(m, a), direction=EQ
}
comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  BODY
}
ENTRY main {
  x = f32[8,3] parameter(0)
  s = f32[4,3] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[8,3] select-and-scatter(x, s, z), window={size=3x1 stride=2x1 pad=1_0x0_0}, \
select=sel, scatter=comb
}
"""

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32)


def _values(rng, dims, special=SPECIAL):
    x = (rng.integers(-6, 7, dims) / 4).astype(np.float32)
    return np.where(rng.random(dims) < 0.15, rng.choice(special, dims), x).astype(np.float32)


def _check(text: str, args: list[np.ndarray], schedules: set[str]) -> None:
    module = parse_module(text)
    expected = flatten_value(evaluate(module, args))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} <= schedules
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == np.asarray(e).tobytes(), (g, e)


@pytest.mark.parametrize("name", sorted(COMBINERS))
def test_scatter_with_an_inlined_combiner(name):
    rng = np.random.default_rng(4)
    indices = np.array([[1], [6], [1], [7], [-1], [1]], np.int32)  # duplicates, one skipped
    # no signed zeros among the updates: which of two tied zeros wins a float max atomic is
    # the order the atomics land in (docs/gpu-kernels.md)
    updates = _values(rng, (6, 3), SPECIAL[:3]) + np.float32(0.125)
    args = [_values(rng, (8, 3)), indices, updates]
    text = HEAD + SCATTER.replace("BODY", COMBINERS[name])
    _check(text, args, {"scatter_serial", "scatter_atomic"})


@pytest.mark.parametrize("name", sorted(COMBINERS))
def test_select_and_scatter_with_inlined_computations(name):
    rng = np.random.default_rng(5)
    args = [_values(rng, (8, 3)), _values(rng, (4, 3))]
    _check(HEAD + SELECT_SCATTER.replace("BODY", COMBINERS[name]), args, {"select_and_scatter"})


def test_a_reduce_in_the_combiner_stays_on_the_host():
    body = "ROOT c = f32[] reduce(b, a), dimensions={}, to_apply=biggest"
    program = simulated_program(parse_module(HEAD + SCATTER.replace("BODY", body)))
    (fallback,) = program.fallbacks
    assert fallback.opcode == "scatter" and "not scalar code" in fallback.reason
