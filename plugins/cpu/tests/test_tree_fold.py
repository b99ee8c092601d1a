"""Reductions of f16, bf16 and float8 with reducers the interpreter folds in its pairwise tree
(JAX's argmax/argmin and random.categorical: a variadic reduce of values and indices with a
comparator; any reducer that is not a plain per-operand add/multiply/max/min) compile natively
(tree_fold.py) and give the interpreter's results bit for bit, in the row form (trailing
dimensions), the column form (leading, middle or several dimensions), a full reduction, and on
empty and size-1 reduced dimensions. Inputs mix NaN, +-inf, -0.0, +0.0 and many ties. An
order-sensitive reducer (a sum in the narrow type, one rounding per call) proves the order is
the interpreter's tree, not a sequential fold: on these inputs a sequential fold differs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from float8_helpers import as_bits  # noqa: E402

import hlort  # noqa: E402
from hlort import dtypes  # noqa: E402
from hlort.text import parse_module  # noqa: E402

NARROW = [dtypes.BF16, dtypes.F16, dtypes.F8E4M3FN, dtypes.F8E5M2]
SHAPES = [  # (input dims, reduced dimensions)
    ((15,), [0]),
    ((5, 4), [1]),
    ((3, 37), [1]),
    ((2, 1000), [1]),
    ((6, 3), [0]),
    ((3, 4, 5), [1]),
    ((3, 4, 5), [0, 2]),
    ((4, 1), [1]),
    ((1, 4), [0]),
    ((3, 0), [1]),
    ((0, 5), [1]),
    ((0,), [0]),
]
SHAPE_IDS = [f"{'x'.join(map(str, d))}-{r}" for d, r in SHAPES]

_ARG = """
HloModule arg_{kind}

reducer {{
  a = {t}[] parameter(0)
  i = s32[] parameter(1)
  b = {t}[] parameter(2)
  j = s32[] parameter(3)
  better = pred[] compare(a, b), direction={dir}
  a_nan = pred[] compare(a, a), direction=NE
  take_a = pred[] or(better, a_nan)
  same = pred[] compare(a, b), direction=EQ
  lower = pred[] compare(i, j), direction=LT
  tie_a = pred[] and(same, lower)
  take_i = pred[] or(take_a, tie_a)
  v = {t}[] select(take_a, a, b)
  k = s32[] select(take_i, i, j)
  ROOT r = ({t}[], s32[]) tuple(v, k)
}}

ENTRY e {{
  x = {t}[{dims}] parameter(0)
  idx = s32[{dims}] iota(), iota_dimension={iota}
  init = {t}[] constant({init})
  zero = s32[] constant(0)
  ROOT out = ({t}[{kept}], s32[{kept}]) reduce(x, idx, init, zero), dimensions={{{red}}},
    to_apply=reducer
}}
"""

_SUM = """
HloModule tree_sum

reducer {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  nb = {t}[] negate(b)
  ROOT s = {t}[] subtract(a, nb)
}}

ENTRY e {{
  x = {t}[{dims}] parameter(0)
  init = {t}[] constant(0.5)
  ROOT out = {t}[{kept}] reduce(x, init), dimensions={{{red}}}, to_apply=reducer
}}
"""


def _module(text: str, dt, dims, reduced, **fields):
    kept = [d for k, d in enumerate(dims) if k not in reduced]
    return parse_module(
        text.format(
            t=dt.name,
            dims=",".join(map(str, dims)),
            kept=",".join(map(str, kept)),
            red=",".join(map(str, reduced)),
            iota=reduced[-1],
            **fields,
        )
    )


def _argmax(dt, dims, reduced, kind: str):
    direction, init = ("GT", "-inf") if kind == "max" else ("LT", "inf")
    return _module(_ARG, dt, dims, reduced, kind=kind, dir=direction, init=init)


def _special_values(dt, dims, seed: int) -> np.ndarray:
    """Few distinct values (ties everywhere), and NaN, +-inf, -0.0, +0.0 among them."""
    rng = np.random.default_rng(seed)
    pool = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -1.5, 3.0, 0.25, -2.0])
    if dt is dtypes.F8E4M3FN:  # no infinities: they convert to NaN
        pool = pool[np.isfinite(pool) | np.isnan(pool)]
    weights = np.full(len(pool), 1.0)
    weights[0] = 0.3  # not every row NaN
    x = rng.choice(pool, size=dims, p=weights / weights.sum())
    return x.astype(dt.numpy)


def _run(module, x):
    exe = hlort.compile(module, "cpu:0")
    got = exe(x)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    want = hlort.evaluate(module, [x])
    if not isinstance(got, (list, tuple)):
        got, want = [got], [want]
    return list(got), list(want)


@pytest.mark.parametrize("dims,reduced", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dt", NARROW, ids=[d.name for d in NARROW])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_argmax_argmin_match_the_interpreter_bit_for_bit(kind, dt, dims, reduced):
    module = _argmax(dt, dims, reduced, kind)
    for seed in range(3):
        x = _special_values(dt, dims, seed)
        got, want = _run(module, x)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(as_bits(g), as_bits(w))


def _sequential(x: np.ndarray, axis: int, init) -> np.ndarray:
    acc = np.full(np.delete(x.shape, axis), init, x.dtype)
    for k in range(x.shape[axis]):
        acc = (acc.astype(np.float32) + np.take(x, k, axis).astype(np.float32)).astype(x.dtype)
    return acc


@pytest.mark.parametrize("dims,reduced", [((4, 301), [1]), ((301, 4), [0])], ids=["row", "col"])
@pytest.mark.parametrize("dt", NARROW, ids=[d.name for d in NARROW])
def test_an_order_sensitive_reducer_folds_in_the_interpreters_tree(dt, dims, reduced):
    module = _module(_SUM, dt, dims, reduced)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(dims) * np.exp2(rng.integers(-4, 5, dims))).astype(dt.numpy)
    got, want = _run(module, x)
    np.testing.assert_array_equal(as_bits(got[0]), as_bits(want[0]))
    sequential = _sequential(x, reduced[0], dt.numpy.type(0.5))
    assert not np.array_equal(as_bits(sequential), as_bits(want[0])), (
        "inputs too tame: a sequential fold gives the tree's results, so the test cannot fail"
    )


_SUM_THEN_DOUBLE = """
HloModule sum_then_double

reducer {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  nb = bf16[] negate(b)
  ROOT s = bf16[] subtract(a, nb)
}

ENTRY e {
  x = bf16[6,3] parameter(0)
  init = bf16[] constant(0)
  s = bf16[3] reduce(x, init), dimensions={0}, to_apply=reducer
  ROOT d = bf16[3] add(s, s)
}
"""


def test_a_column_tree_fold_with_an_epilogue_is_refused_with_the_reason():
    from hlort_cpu.codegen.kernel_builder import classify
    from hlort_cpu.codegen.unsupported_reason import why_not_compiled

    comp = parse_module(_SUM_THEN_DOUBLE).entry
    assert classify(comp) is None
    reason = why_not_compiled(comp)
    assert "= bf16[3] reduce reduces bf16 over leading dimensions" in reason
    assert reason.endswith("the tree-order column kernel writes the reductions only")
