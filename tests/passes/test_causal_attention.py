"""CausalAttentionBlocking: masked attention in row blocks, checked against the interpreter on the
unblocked program. Blocking changes only summation order, so results agree within a float
tolerance (stated per dtype); NaN and infinities must land in exactly the same places. Inputs
include NaN, +-inf, -0.0 and huge values; masks that keep a row prefix (causal, strictly causal
with an all-masked first row, a masked value of -inf or of the float's lowest), with the
scores on either side of the select, no batch, one and two batch dimensions; programs that must
not be rewritten stay as they are."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import shape
from hlort.builder import Builder
from hlort.interpreter.evaluator import evaluate
from hlort.ir import DotDimensionNumbers as Dn
from hlort.ir.opcodes import Opcode
from hlort.passes import causal_attention_match
from hlort.passes.causal_attention import CausalAttentionBlocking, plan_blocks
from hlort.passes.cse import CommonSubexpressionElimination

SMALL = CausalAttentionBlocking(min_block_rows=4)
RTOL = {"f32": 2e-5, "f64": 1e-12}  # of max |reference| per output: summation order only


def attention_module(
    dtype="f32",
    batch=(2,),
    seq=16,
    d=8,
    direction="GE",
    scores_on_true=True,
    masked=None,
    scale=0.125,
    extra_output=False,
    batched_mask=False,
    qk_dtype=None,
    inner=None,
    layers=1,
):
    """softmax(select(iota_row DIR iota_col, q k^T * scale, masked)) v, as JAX lowers it; q and
    k of ``qk_dtype`` (a dot to ``dtype``), the softmax in ``inner`` (converts around it);
    ``layers`` of it in a chain."""
    b = Builder("attention")
    nb = len(batch)
    q = b.parameter(shape.array(qk_dtype or dtype, (*batch, seq, d)))
    k = b.parameter(shape.array(qk_dtype or dtype, (*batch, seq, d)))
    v = b.parameter(shape.array(dtype, (*batch, seq, d)))
    bd = tuple(range(nb))
    full = (*batch, seq, seq)
    outer, dtype = dtype, inner or dtype
    for _ in range(layers):  # each layer's output is the next one's queries
        s = b.dot_general(q, k, Dn((nb + 1,), (nb + 1,), bd, bd), preferred=qk_dtype and outer)
        s = b.convert(s, dtype) if inner else s
        s = b.multiply(
            s, b.broadcast(b.constant(np.array(scale, shape.array(dtype).dtype.numpy)), full, [])
        )
        if batched_mask:
            rows = b.iota(shape.array("s32", full), nb)
            cols = b.iota(shape.array("s32", full), nb + 1)
            pred = b.compare(rows, cols, direction)
        else:
            rows = b.iota(shape.array("s32", (seq, seq)), 0)
            cols = b.iota(shape.array("s32", (seq, seq)), 1)
            pred = b.broadcast(b.compare(rows, cols, direction), full, (nb, nb + 1))
        np_dt = shape.array(dtype).dtype.numpy
        fill = np.finfo(np_dt).min if masked is None else masked
        c = b.broadcast(b.constant(np.array(fill, np_dt)), full, [])
        x = b.select(pred, s, c) if scores_on_true else b.select(b.not_(pred), c, s)
        dt = shape.array(dtype).dtype
        mx = b.reduce(
            x, b.constant(np.array(-np.inf, np_dt)), b.scalar_computation("maximum", dt), [nb + 1]
        )
        e = b.exponential(b.subtract(x, b.broadcast(mx, full, tuple(range(nb + 1)))))
        total = b.reduce(
            e, b.constant(np.array(0, np_dt)), b.scalar_computation("add", dt), [nb + 1]
        )
        p = b.divide(e, b.broadcast(total, full, tuple(range(nb + 1))))
        p = b.convert(p, outer) if inner else p
        out = b.dot_general(p, v, Dn((nb + 1,), (nb,), bd, bd))
        q = out
    return b.build(b.tuple([out, p]) if extra_output else out)


def inputs(module, seed, edges=True):
    rng = np.random.default_rng(seed)
    args = []
    for i, param in enumerate(module.entry.parameters):
        dt = param.shape.dtype.numpy
        x = rng.standard_normal(param.shape.dims).astype(dt)
        if edges and x.size:
            flat = x.reshape(-1)
            picks = rng.choice(flat.size, size=min(6, flat.size), replace=False)
            vals = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dt).max / 4]
            flat[picks] = np.array(vals[: len(picks)], dt)[rng.permutation(len(picks))]
            if i == 2:  # v: keep most rows finite so the finite rows are compared too
                x = x.reshape(-1, x.shape[-1])
                x[: x.shape[0] // 2] = np.nan_to_num(x[: x.shape[0] // 2], posinf=2.0, neginf=-2.0)
                x = x.reshape(param.shape.dims)
        args.append(x)
    return args


def assert_close(expected, actual, dtype):
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for want, got in zip(expected, actual, strict=True):
        want, got = np.asarray(want, np.float64), np.asarray(got, np.float64)
        assert want.shape == got.shape
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(
            got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]
        )
        if finite.any():
            scale = max(float(np.max(np.abs(want[finite]))), 1e-300)
            err = np.max(np.abs(got[finite] - want[finite])) / scale
            assert err <= RTOL[dtype], f"relative error {err}"


def check(module, dtype="f32", seeds=range(3), rewrites=True, passes=SMALL, edges=True):
    before = module.clone()
    changed = passes.run(module)
    assert changed == rewrites
    for seed in seeds:
        args = inputs(before, seed, edges)
        assert_close(evaluate(before, args), evaluate(module, args), dtype)
    assert not passes.run(module), "a second run changed the module"
    return module


def count(module, opcode):
    return sum(1 for i in module.entry.post_order() if i.opcode is opcode)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_causal_attention_blocks(dtype, batch):
    module = check(attention_module(dtype, batch), dtype)
    assert count(module, Opcode.DOT) == 8  # 4 blocks, two dots each
    assert count(module, Opcode.CONCATENATE) == 1


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_finite_inputs(dtype):
    check(attention_module(dtype, (2,), seq=32, d=4), dtype, edges=False)


def test_strict_mask_leaves_the_first_row_all_masked():
    """Row 0 keeps nothing: every score is the masked value, each weight 1/seq over all of v
    (the tail term carries it)."""
    module = check(attention_module(direction="GT"), "f32")
    args = inputs(attention_module(direction="GT"), 0, edges=False)
    out = evaluate(module, args)
    np.testing.assert_allclose(out[:, 0], args[2].mean(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("masked", [-np.inf, -1e30, 0.0])
@pytest.mark.parametrize("direction", ["GE", "GT"])
def test_masked_values(masked, direction):
    check(attention_module(masked=masked, direction=direction), "f32")


def test_scores_on_the_false_side():
    check(attention_module(scores_on_true=False), "f32")


def test_mask_of_the_batch_shape():
    check(attention_module(batched_mask=True), "f32")


def test_default_options_on_a_longer_sequence():
    module = check(
        attention_module(seq=256, d=4, batch=(2,)), passes=CausalAttentionBlocking(), seeds=[0]
    )
    assert count(module, Opcode.DOT) == 8


def test_size_one_and_empty_dimensions():
    check(attention_module(seq=1), rewrites=False)  # one row: nothing to block
    check(attention_module(d=1), "f32")
    check(attention_module(batch=(0,)), "f32", seeds=[0])
    check(attention_module(batch=(1,), d=0), "f32", seeds=[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"direction": "LE"},  # keeps a suffix of each row: nothing to skip at the end
        {"direction": "NE"},  # not a prefix
        {"extra_output": True},  # the probabilities are an output too
    ],
)
def test_not_rewritten(kwargs):
    check(attention_module(**kwargs), rewrites=False)


def test_a_mask_that_differs_between_batch_elements_is_not_rewritten():
    b = Builder("per_head_mask")
    q, k, v = (b.parameter(shape.array("f32", (2, 16, 4))) for _ in range(3))
    full = (2, 16, 16)
    s = b.dot_general(q, k, Dn((2,), (2,), (0,), (0,)))
    rows = b.add(b.iota(shape.array("s32", full), 1), b.iota(shape.array("s32", full), 0))
    pred = b.compare(rows, b.iota(shape.array("s32", full), 2), "GE")
    x = b.select(pred, s, b.broadcast(b.constant(np.float32(-np.inf)), full, []))
    total = b.reduce(x, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [2])
    p = b.divide(x, b.broadcast(total, full, (0, 1)))
    module = b.build(b.dot_general(p, v, Dn((2,), (1,), (0,), (0,))))
    check(module, rewrites=False)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_narrow_floats_are_not_rewritten(dtype):
    module = attention_module(dtype)
    assert not SMALL.run(module)


def test_plan_blocks():
    causal = np.arange(1, 513)
    assert plan_blocks(causal, 4, 64, 0.3, 512) == [
        (0, 128, 128),
        (128, 256, 256),
        (256, 384, 384),
        (384, 512, 512),
    ]
    assert plan_blocks(np.arange(1, 129), 4, 64, 0.3, 128) is None  # 2 blocks save 25%
    assert plan_blocks(np.full(512, 512), 4, 64, 0.3, 512) is None  # nothing masked
    assert plan_blocks(np.zeros(256, np.int64), 4, 64, 0.3, 256)[0] == (0, 64, 1)


@pytest.mark.parametrize("masked", [-np.inf, np.finfo(np.float64).min])
def test_huge_f64_values_in_the_masked_tail(masked):
    """v's masked rows sum past f64's largest finite value: the full dot weights each by 0 (or
    1/seq in the all-masked row 0 with a finite masked value), so the tail term must not turn
    that sum into inf or 0 * inf."""
    module = attention_module("f64", (), seq=16, d=2, direction="GT", masked=masked)
    before = module.clone()
    assert SMALL.run(module)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 16, 2))
    v = np.full((16, 2), np.finfo(np.float64).max / 2)
    v[:, 1] *= -1
    want = evaluate(before, [q, k, v])
    assert np.isfinite(want[1:]).all()
    assert np.isfinite(want[0]).all() == np.isfinite(masked)  # -inf: NaN weights in row 0
    assert_close(want, evaluate(module, [q, k, v]), "f64")


def test_empty_batch_with_a_mask_of_the_batch_shape():
    """A [0, seq, seq] mask has no rows to read a pattern from: left alone, not an IndexError."""
    check(attention_module(batch=(0,), batched_mask=True), rewrites=False, seeds=[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"qk_dtype": "bf16"},  # bf16 q k^T accumulated to an f32 result (preferred type)
        {"qk_dtype": "f16", "dtype": "f64"},
        {"inner": "f64"},  # converts in the region: their result types must be kept
    ],
)
def test_result_types_the_operands_do_not_give(kwargs):
    dtype = kwargs.get("dtype", "f32")
    check(attention_module(**{"dtype": dtype, **kwargs}), dtype)


@pytest.mark.parametrize("inner", ["f16", "bf16"])
def test_narrow_float_reduces_inside_the_region_are_not_rewritten(inner):
    """The interpreter sums narrow floats in f32 and rounds once; a block's partial sum plus
    its tail (count * value, the count rounded to the narrow type: inf in f16 past 65504)
    would round more often, or make 0 * inf."""
    check(attention_module(inner=inner), rewrites=False)


def test_each_dot_is_matched_once_and_each_mask_read_once(monkeypatch):
    """A dot refused once (here every block's own dots: too little left to skip) is not matched
    again after each later rewrite, and a mask the layers share (one after CSE, as in the
    pipeline) is evaluated once: both were quadratic in the layers (24 layers of seq 2048: 324
    mask evaluations, 3.2 s of compile CPU time; now 25, 0.5 s)."""
    evaluated = []
    real = causal_attention_match._evaluate_constant
    monkeypatch.setattr(
        causal_attention_match, "_evaluate_constant", lambda m: evaluated.append(m) or real(m)
    )
    layers = 6
    module = attention_module(seq=64, d=4, layers=layers)
    CommonSubexpressionElimination().run(module)
    before = module.clone()
    assert SMALL.run(module)
    assert count(module, Opcode.CONCATENATE) == layers
    args = inputs(before, 0, edges=False)
    assert_close(evaluate(before, args), evaluate(module, args), "f32")
    # the shared mask once, and each layer's last block's slice of it (the other blocks' dots
    # are refused on their row values' users before a mask is read): was 27 here
    assert len(evaluated) <= layers + 1, len(evaluated)
