"""Canonical forms before fusion (algebraic_rules_canonical.py): each rule fires where it should,
leaves alone what it must, and keeps every result bit for bit (NaN, infinities, -0.0 included:
``simplify`` runs the module before and after on the interpreter with edge values)."""

from __future__ import annotations

import pytest

from hlort.ir.opcodes import Opcode
from hlort.passes import AlgebraicSimplifier, DeadCodeElimination

SIMPLIFY = [AlgebraicSimplifier(), DeadCodeElimination()]


def simplify(h, text: str, expected: str | None = None, changes: bool = True):
    return h.rewrite_checked(text, SIMPLIFY, expected, changes)


def module(params: str, body: str, result: str) -> str:
    return f"HloModule m\nENTRY %main ({params}) -> {result} {{\n{body}\n}}\n"


# -- reshape / transpose of a broadcast, broadcast of an iota -------------------------------------
@pytest.mark.parametrize("n", [8, 0, 1])
def test_jax_row_broadcast_becomes_one_broadcast(h, n):
    """JAX's broadcast_in_dim to [rows, 1] then to [rows, cols] (HLO: broadcast, reshape,
    broadcast) is one broadcast of the row; empty and one-row shapes too."""
    text = module(
        f"x: f32[{n}], y: f32[{n},5]",
        f"""
  %x = f32[{n}] parameter(0)
  %y = f32[{n},5] parameter(1)
  %b1 = f32[{n},1] broadcast(f32[{n}] %x), dimensions={{0}}
  %r = f32[{n}] reshape(f32[{n},1] %b1)
  %b2 = f32[{n},5] broadcast(f32[{n}] %r), dimensions={{0}}
  ROOT %s = f32[{n},5] subtract(f32[{n},5] %y, f32[{n},5] %b2)""",
        f"f32[{n},5]",
    )
    expected = module(
        f"x: f32[{n}], y: f32[{n},5]",
        f"""
  %x = f32[{n}] parameter(0)
  %y = f32[{n},5] parameter(1)
  %b2 = f32[{n},5] broadcast(f32[{n}] %x), dimensions={{0}}
  ROOT %s = f32[{n},5] subtract(f32[{n},5] %y, f32[{n},5] %b2)""",
        f"f32[{n},5]",
    )
    out = simplify(h, text, expected if n != 1 else None)
    assert h.count(out, Opcode.BROADCAST) == 1  # (one row: a broadcast of the squeezed scalar)


def test_reshape_of_broadcast_squeezes_the_source(h):
    text = module(
        "x: f32[3,1]",
        """
  %x = f32[3,1] parameter(0)
  %b = f32[3,4,1] broadcast(f32[3,1] %x), dimensions={0,2}
  ROOT %r = f32[1,3,4] reshape(f32[3,4,1] %b)""",
        "f32[1,3,4]",
    )
    expected = module(
        "x: f32[3,1]",
        """
  %x = f32[3,1] parameter(0)
  %q = f32[3] reshape(f32[3,1] %x)
  ROOT %b = f32[1,3,4] broadcast(f32[3] %q), dimensions={1}""",
        "f32[1,3,4]",
    )
    simplify(h, text, expected)


def test_reshape_that_merges_broadcast_dims_stays(h):
    text = module(
        "x: f32[3]",
        """
  %x = f32[3] parameter(0)
  %b = f32[3,4] broadcast(f32[3] %x), dimensions={0}
  ROOT %r = f32[12] reshape(f32[3,4] %b)""",
        "f32[12]",
    )
    simplify(h, text, changes=False)


def test_transpose_of_broadcast(h):
    text = module(
        "x: f32[3]",
        """
  %x = f32[3] parameter(0)
  %b = f32[4,3] broadcast(f32[3] %x), dimensions={1}
  ROOT %t = f32[3,4] transpose(f32[4,3] %b), dimensions={1,0}""",
        "f32[3,4]",
    )
    expected = module(
        "x: f32[3]",
        """
  %x = f32[3] parameter(0)
  ROOT %b = f32[3,4] broadcast(f32[3] %x), dimensions={0}""",
        "f32[3,4]",
    )
    simplify(h, text, expected)


def test_transpose_that_would_read_the_source_transposed_stays(h):
    text = module(
        "x: f32[3,4]",
        """
  %x = f32[3,4] parameter(0)
  %b = f32[3,4,5] broadcast(f32[3,4] %x), dimensions={0,1}
  ROOT %t = f32[4,3,5] transpose(f32[3,4,5] %b), dimensions={1,0,2}""",
        "f32[4,3,5]",
    )
    simplify(h, text, changes=False)


def test_broadcast_of_iota_is_an_iota(h):
    text = module(
        "",
        """
  %i = s32[4] iota(), iota_dimension=0
  ROOT %b = s32[3,4] broadcast(s32[4] %i), dimensions={1}""",
        "s32[3,4]",
    )
    expected = module(
        "",
        """
  ROOT %i = s32[3,4] iota(), iota_dimension=1""",
        "s32[3,4]",
    )
    simplify(h, text, expected)


# -- elementwise ops of broadcasts ----------------------------------------------------------------
def test_row_arithmetic_runs_on_the_row(h):
    """layernorm's ``mean = sum[rows, 1] / n``: the divide runs on [rows] (n not a power of two,
    which would become a multiply)."""
    text = module(
        "x: f32[6]",
        """
  %x = f32[6] parameter(0)
  %b = f32[6,1] broadcast(f32[6] %x), dimensions={0}
  %n = f32[] constant(30)
  %bn = f32[6,1] broadcast(f32[] %n), dimensions={}
  ROOT %d = f32[6,1] divide(f32[6,1] %b, f32[6,1] %bn)""",
        "f32[6,1]",
    )
    expected = module(
        "x: f32[6]",
        """
  %x = f32[6] parameter(0)
  %n = f32[] constant(30)
  %bn = f32[6] broadcast(f32[] %n), dimensions={}
  %d = f32[6] divide(f32[6] %x, f32[6] %bn)
  ROOT %b = f32[6,1] broadcast(f32[6] %d), dimensions={0}""",
        "f32[6,1]",
    )
    simplify(h, text, expected)


def test_convert_and_select_of_broadcasts(h):
    text = module(
        "p: pred[5], a: bf16[5], c: f32[]",
        """
  %p = pred[5] parameter(0)
  %a = bf16[5] parameter(1)
  %c = f32[] parameter(2)
  %bp = pred[5,3] broadcast(pred[5] %p), dimensions={0}
  %ba = bf16[5,3] broadcast(bf16[5] %a), dimensions={0}
  %wa = f32[5,3] convert(bf16[5,3] %ba)
  %bc = f32[5,3] broadcast(f32[] %c), dimensions={}
  ROOT %s = f32[5,3] select(pred[5,3] %bp, f32[5,3] %wa, f32[5,3] %bc)""",
        "f32[5,3]",
    )
    expected = module(
        "p: pred[5], a: bf16[5], c: f32[]",
        """
  %p = pred[5] parameter(0)
  %a = bf16[5] parameter(1)
  %c = f32[] parameter(2)
  %wa = f32[5] convert(bf16[5] %a)
  %bc = f32[5] broadcast(f32[] %c), dimensions={}
  %s = f32[5] select(pred[5] %p, f32[5] %wa, f32[5] %bc)
  ROOT %b = f32[5,3] broadcast(f32[5] %s), dimensions={0}""",
        "f32[5,3]",
    )
    simplify(h, text, expected)


def test_scalar_broadcasts_combine_into_one(h):
    text = module(
        "a: f32[], b: f32[]",
        """
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %ba = f32[2,3] broadcast(f32[] %a), dimensions={}
  %bb = f32[2,3] broadcast(f32[] %b), dimensions={}
  ROOT %m = f32[2,3] multiply(f32[2,3] %ba, f32[2,3] %bb)""",
        "f32[2,3]",
    )
    expected = module(
        "a: f32[], b: f32[]",
        """
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %m = f32[] multiply(f32[] %a, f32[] %b)
  ROOT %bm = f32[2,3] broadcast(f32[] %m), dimensions={}""",
        "f32[2,3]",
    )
    simplify(h, text, expected)


def test_broadcasts_along_different_dims_stay(h):
    text = module(
        "x: f32[3], y: f32[4]",
        """
  %x = f32[3] parameter(0)
  %y = f32[4] parameter(1)
  %bx = f32[3,4] broadcast(f32[3] %x), dimensions={0}
  %by = f32[3,4] broadcast(f32[4] %y), dimensions={1}
  ROOT %a = f32[3,4] add(f32[3,4] %bx, f32[3,4] %by)""",
        "f32[3,4]",
    )
    simplify(h, text, changes=False)


# -- constants, max/min, booleans -----------------------------------------------------------------
def test_splat_constant_is_a_broadcast_of_a_scalar(h):
    text = module(
        "x: f32[4]",
        """
  %x = f32[4] parameter(0)
  %c = f32[4] constant({2.5, 2.5, 2.5, 2.5})
  ROOT %m = f32[4] multiply(f32[4] %x, f32[4] %c)""",
        "f32[4]",
    )
    expected = module(
        "x: f32[4]",
        """
  %x = f32[4] parameter(0)
  %c = f32[] constant(2.5)
  %b = f32[4] broadcast(f32[] %c), dimensions={}
  ROOT %m = f32[4] multiply(f32[4] %x, f32[4] %b)""",
        "f32[4]",
    )
    simplify(h, text, expected)


def test_constant_of_both_zeros_is_no_splat(h):
    text = module(
        "x: f32[4]",
        """
  %x = f32[4] parameter(0)
  %c = f32[4] constant({0, -0, 0, 0})
  ROOT %m = f32[4] multiply(f32[4] %x, f32[4] %c)""",
        "f32[4]",
    )
    simplify(h, text, changes=False)


@pytest.mark.parametrize(
    "op,bound,dtype",
    [
        ("maximum", "-inf", "f32"),
        ("minimum", "inf", "f32"),
        ("maximum", "-inf", "bf16"),
        ("maximum", "-2147483648", "s32"),
        ("minimum", "255", "u8"),
    ],
)
def test_max_min_with_their_identity_is_x(h, op, bound, dtype):
    text = module(
        f"x: {dtype}[6]",
        f"""
  %x = {dtype}[6] parameter(0)
  %c = {dtype}[] constant({bound})
  %b = {dtype}[6] broadcast({dtype}[] %c), dimensions={{}}
  ROOT %m = {dtype}[6] {op}({dtype}[6] %b, {dtype}[6] %x)""",
        f"{dtype}[6]",
    )
    expected = (
        f"HloModule m\nENTRY %main (x: {dtype}[6]) -> {dtype}[6] {{\n"
        f"  ROOT %x = {dtype}[6] parameter(0)\n}}\n"
    )
    simplify(h, text, expected)


def test_max_with_another_bound_stays(h):
    text = module(
        "x: f32[6]",
        """
  %x = f32[6] parameter(0)
  %c = f32[] constant(-3)
  %b = f32[6] broadcast(f32[] %c), dimensions={}
  ROOT %m = f32[6] maximum(f32[6] %x, f32[6] %b)""",
        "f32[6]",
    )
    simplify(h, text, changes=False)


@pytest.mark.parametrize(
    "on_true,on_false,negated", [("true", "false", False), ("false", "true", True)]
)
def test_select_of_booleans(h, on_true, on_false, negated):
    text = module(
        "p: pred[7]",
        f"""
  %p = pred[7] parameter(0)
  %t = pred[] constant({on_true})
  %f = pred[] constant({on_false})
  %bt = pred[7] broadcast(pred[] %t), dimensions={{}}
  %bf = pred[7] broadcast(pred[] %f), dimensions={{}}
  ROOT %s = pred[7] select(pred[7] %p, pred[7] %bt, pred[7] %bf)""",
        "pred[7]",
    )
    out = simplify(h, text)
    root = out.entry.root
    assert root.opcode is (Opcode.NOT if negated else Opcode.PARAMETER)


def test_causal_mask_is_a_compare_of_iotas(h):
    """jnp.tril as JAX lowers it: ``select(iota0 + 0 >= iota1, ones, zeros)`` -> one compare of
    two iotas, which fusion generates in place (no mask constant, no mask in memory)."""
    text = module(
        "",
        """
  %i0 = s32[16,16] iota(), iota_dimension=0
  %z = s32[] constant(0)
  %bz = s32[16,16] broadcast(s32[] %z), dimensions={}
  %a = s32[16,16] add(s32[16,16] %i0, s32[16,16] %bz)
  %i1 = s32[16,16] iota(), iota_dimension=1
  %ge = pred[16,16] compare(s32[16,16] %a, s32[16,16] %i1), direction=GE
  %t = pred[] constant(true)
  %bt = pred[16,16] broadcast(pred[] %t), dimensions={}
  %f = pred[] constant(false)
  %bf = pred[16,16] broadcast(pred[] %f), dimensions={}
  ROOT %s = pred[16,16] select(pred[16,16] %ge, pred[16,16] %bt, pred[16,16] %bf)""",
        "pred[16,16]",
    )
    expected = module(
        "",
        """
  %i0 = s32[16,16] iota(), iota_dimension=0
  %i1 = s32[16,16] iota(), iota_dimension=1
  ROOT %ge = pred[16,16] compare(s32[16,16] %i0, s32[16,16] %i1), direction=GE""",
        "pred[16,16]",
    )
    simplify(h, text, expected)


# -- reduce over size-1 dimensions, convert chains ------------------------------------------------
REDUCERS = """
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(s32[] %a, s32[] %b)
}
"""


@pytest.mark.parametrize("dtype,reducer,init", [("f32", "max", "-inf"), ("s32", "add", "0")])
@pytest.mark.parametrize("n", [4, 0])
def test_reduce_over_size_1_dims_reduces_the_others(h, dtype, reducer, init, n):
    text = (
        "HloModule m\n"
        + REDUCERS
        + f"""
ENTRY %main (x: {dtype}[{n},1,5]) -> {dtype}[{n}] {{
  %x = {dtype}[{n},1,5] parameter(0)
  %i = {dtype}[] constant({init})
  ROOT %r = {dtype}[{n}] reduce({dtype}[{n},1,5] %x, {dtype}[] %i), dimensions={{1,2}},
    to_apply=%{reducer}
}}
"""
    )
    expected = (
        "HloModule m\n"
        + REDUCERS
        + f"""
ENTRY %main (x: {dtype}[{n},1,5]) -> {dtype}[{n}] {{
  %x = {dtype}[{n},1,5] parameter(0)
  %q = {dtype}[{n},5] reshape({dtype}[{n},1,5] %x)
  %i = {dtype}[] constant({init})
  ROOT %r = {dtype}[{n}] reduce({dtype}[{n},5] %q, {dtype}[] %i), dimensions={{1}},
    to_apply=%{reducer}
}}
"""
    )
    simplify(h, text, expected)


def test_exact_convert_chain_folds_and_rounding_one_stays(h):
    exact = module(
        "x: f16[5]",
        """
  %x = f16[5] parameter(0)
  %a = f32[5] convert(f16[5] %x)
  ROOT %b = f64[5] convert(f32[5] %a)""",
        "f64[5]",
    )
    expected = module(
        "x: f16[5]",
        """
  %x = f16[5] parameter(0)
  ROOT %b = f64[5] convert(f16[5] %x)""",
        "f64[5]",
    )
    simplify(h, exact, expected)
    rounding = module(
        "x: f32[5]",
        """
  %x = f32[5] parameter(0)
  %a = bf16[5] convert(f32[5] %x)
  ROOT %b = f32[5] convert(bf16[5] %a)""",
        "f32[5]",
    )
    simplify(h, rounding, changes=False)
