"""Algebraic simplification: each rule fires where exact and never where a float could change."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers
from hlort.ir.opcodes import Opcode
from hlort.passes import AlgebraicSimplifier, DeadCodeElimination
from hlort.passes.algebraic_rules import is_exact_widening
from hlort.text.parser import parse_module

SIMPLIFY = [AlgebraicSimplifier(), DeadCodeElimination()]


def simplify(h, text: str, expected: str | None = None, changes: bool = True):
    return h.rewrite_checked(text, SIMPLIFY, expected, changes)


def unary_module(body: str, dtype: str = "f32", dims: str = "4") -> str:
    t = f"{dtype}[{dims}]"
    return f"""
HloModule m
ENTRY %main (x: {t}) -> {t} {{
  %x = {t} parameter(0)
{body}
}}
"""


def just_x(dtype="f32", dims="4"):
    t = f"{dtype}[{dims}]"
    return f"HloModule m\nENTRY %main (x: {t}) -> {t} {{\n  ROOT %x = {t} parameter(0)\n}}\n"


# -- elementwise identities -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        "  %z = f32[] constant(-0)\n  %b = f32[4] broadcast(f32[] %z), dimensions={}\n"
        "  ROOT %r = f32[4] add(f32[4] %x, f32[4] %b)",
        "  %z = f32[] constant(-0)\n  %b = f32[4] broadcast(f32[] %z), dimensions={}\n"
        "  ROOT %r = f32[4] add(f32[4] %b, f32[4] %x)",
        "  %z = f32[4] constant({0, 0, 0, 0})\n  ROOT %r = f32[4] subtract(f32[4] %x, f32[4] %z)",
        "  %o = f32[] constant(1)\n  %b = f32[4] broadcast(f32[] %o), dimensions={}\n"
        "  ROOT %r = f32[4] multiply(f32[4] %b, f32[4] %x)",
        "  %o = f32[4] constant({1, 1, 1, 1})\n  ROOT %r = f32[4] divide(f32[4] %x, f32[4] %o)",
        "  %n = f32[4] negate(f32[4] %x)\n  ROOT %r = f32[4] negate(f32[4] %n)",
        "  %c = f32[4] convert(f32[4] %x)\n  ROOT %r = f32[4] copy(f32[4] %c)",
    ],
)
def test_float_identities(h, body):
    module = simplify(h, unary_module(body))
    x = module.entry.parameters[0]
    root = module.entry.root
    assert root is x or (root.opcode is Opcode.COPY and root.operands == [x])


@pytest.mark.parametrize(
    "body",
    [
        # x + 0.0 is -0.0 + 0.0 = +0.0 for x = -0.0: not x
        "  %z = f32[] constant(0)\n  %b = f32[4] broadcast(f32[] %z), dimensions={}\n"
        "  ROOT %r = f32[4] add(f32[4] %x, f32[4] %b)",
        # x - (-0.0) is x + 0.0
        "  %z = f32[] constant(-0)\n  %b = f32[4] broadcast(f32[] %z), dimensions={}\n"
        "  ROOT %r = f32[4] subtract(f32[4] %x, f32[4] %b)",
        # x * 0 is NaN for inf and NaN, -0 for negative x
        "  %z = f32[] constant(0)\n  %b = f32[4] broadcast(f32[] %z), dimensions={}\n"
        "  ROOT %r = f32[4] multiply(f32[4] %x, f32[4] %b)",
        # x - x is NaN for inf and NaN
        "  ROOT %r = f32[4] subtract(f32[4] %x, f32[4] %x)",
        # 1 / x is not x
        "  %o = f32[] constant(1)\n  %b = f32[4] broadcast(f32[] %o), dimensions={}\n"
        "  ROOT %r = f32[4] divide(f32[4] %b, f32[4] %x)",
    ],
)
def test_inexact_float_rewrites_never_happen(h, body):
    simplify(h, unary_module(body), changes=False)


@pytest.mark.parametrize(
    "body",
    [
        "  %z = s32[] constant(0)\n  %b = s32[4] broadcast(s32[] %z), dimensions={}\n"
        "  ROOT %r = s32[4] add(s32[4] %x, s32[4] %b)",
        "  %z = s32[] constant(0)\n  %b = s32[4] broadcast(s32[] %z), dimensions={}\n"
        "  ROOT %r = s32[4] subtract(s32[4] %x, s32[4] %b)",
        "  %o = s32[] constant(1)\n  %b = s32[4] broadcast(s32[] %o), dimensions={}\n"
        "  ROOT %r = s32[4] divide(s32[4] %x, s32[4] %b)",
        "  %m = s32[] constant(-1)\n  %b = s32[4] broadcast(s32[] %m), dimensions={}\n"
        "  ROOT %r = s32[4] and(s32[4] %b, s32[4] %x)",
        "  %z = s32[] constant(0)\n  %b = s32[4] broadcast(s32[] %z), dimensions={}\n"
        "  ROOT %r = s32[4] xor(s32[4] %x, s32[4] %b)",
        "  %n = s32[4] negate(s32[4] %x)\n  ROOT %r = s32[4] negate(s32[4] %n)",
        "  %n = s32[4] not(s32[4] %x)\n  ROOT %r = s32[4] not(s32[4] %n)",
    ],
)
def test_integer_identities(h, body):
    simplify(h, unary_module(body, "s32"), just_x("s32"))


def test_complex_multiply_by_one_stays(h):
    body = (
        "  %o = c64[] constant((1, 0))\n  %b = c64[4] broadcast(c64[] %o), dimensions={}\n"
        "  ROOT %r = c64[4] multiply(c64[4] %x, c64[4] %b)"
    )
    simplify(h, unary_module(body, "c64"), changes=False)


# -- select ---------------------------------------------------------------------------------------
def test_select_constant_predicate_and_equal_branches(h):
    text = """
HloModule sel
ENTRY %main (x: f32[3], y: f32[3], p: pred[3]) -> (f32[3], f32[3], f32[3]) {
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %p = pred[3] parameter(2)
  %t = pred[] constant(true)
  %bt = pred[3] broadcast(pred[] %t), dimensions={}
  %f = pred[3] constant({false, false, false})
  %s1 = f32[3] select(pred[3] %bt, f32[3] %x, f32[3] %y)
  %s2 = f32[3] select(pred[3] %f, f32[3] %x, f32[3] %y)
  %s3 = f32[3] select(pred[3] %p, f32[3] %y, f32[3] %y)
  ROOT %o = (f32[3], f32[3], f32[3]) tuple(f32[3] %s1, f32[3] %s2, f32[3] %s3)
}
"""
    expected = """
HloModule sel
ENTRY %main (x: f32[3], y: f32[3], p: pred[3]) -> (f32[3], f32[3], f32[3]) {
  %x = f32[3] parameter(0)
  %y = f32[3] parameter(1)
  %p = pred[3] parameter(2)
  ROOT %o = (f32[3], f32[3], f32[3]) tuple(f32[3] %x, f32[3] %y, f32[3] %y)
}
"""
    simplify(h, text, expected)


# -- conversions ----------------------------------------------------------------------------------
def test_convert_chains(h):
    text = """
HloModule conv
ENTRY %main (x: f16[4], i: s32[4]) -> (f16[4], f64[4], s32[4], f32[4]) {
  %x = f16[4] parameter(0)
  %i = s32[4] parameter(1)
  %w = f32[4] convert(f16[4] %x)
  %back = f16[4] convert(f32[4] %w)
  %wider = f64[4] convert(f32[4] %w)
  %f = f32[4] convert(s32[4] %i)
  %lossy = s32[4] convert(f32[4] %f)
  %same = f32[4] convert(f32[4] %w)
  ROOT %o = (f16[4], f64[4], s32[4], f32[4]) tuple(f16[4] %back, f64[4] %wider, s32[4] %lossy,
                                                   f32[4] %same)
}
"""
    expected = """
HloModule conv
ENTRY %main (x: f16[4], i: s32[4]) -> (f16[4], f64[4], s32[4], f32[4]) {
  %x = f16[4] parameter(0)
  %i = s32[4] parameter(1)
  %wider = f64[4] convert(f16[4] %x)
  %f = f32[4] convert(s32[4] %i)
  %lossy = s32[4] convert(f32[4] %f)
  %w = f32[4] convert(f16[4] %x)
  ROOT %o = (f16[4], f64[4], s32[4], f32[4]) tuple(f16[4] %x, f64[4] %wider, s32[4] %lossy,
                                                   f32[4] %w)
}
"""
    simplify(h, text, expected)


@pytest.mark.parametrize(
    "src,dst,exact",
    [
        ("f16", "f32", True),
        ("bf16", "f32", True),
        ("f32", "f64", True),
        ("f16", "bf16", False),
        ("bf16", "f16", False),
        ("s8", "s16", True),
        ("u8", "s8", False),
        ("u8", "s16", True),
        ("s32", "f32", False),
        ("s16", "f32", True),
        ("s32", "f64", True),
        ("pred", "f16", True),
        ("f8e4m3fn", "f16", True),
        ("f8e5m2", "f16", True),
        ("f8e4m3fn", "f8e5m2", False),
        ("f32", "s32", False),
        ("s8", "u16", False),
    ],
)
def test_exact_widening_table(src, dst, exact):
    from hlort import dtypes

    assert is_exact_widening(dtypes.from_hlo_name(src), dtypes.from_hlo_name(dst)) is exact


# -- data movement --------------------------------------------------------------------------------
def test_shape_chains(h):
    text = """
HloModule chains
ENTRY %main (x: f32[2,3,4], s: f32[]) -> (f32[24], f32[4,3,2], f32[2,3,4], f32[5,2,3]) {
  %x = f32[2,3,4] parameter(0)
  %s = f32[] parameter(1)
  %r1 = f32[6,4] reshape(f32[2,3,4] %x)
  %r2 = f32[24] reshape(f32[6,4] %r1)
  %t1 = f32[3,4,2] transpose(f32[2,3,4] %x), dimensions={1,2,0}
  %t2 = f32[4,3,2] transpose(f32[3,4,2] %t1), dimensions={1,0,2}
  %t3 = f32[2,3,4] transpose(f32[3,4,2] %t1), dimensions={2,0,1}
  %b1 = f32[2,3] broadcast(f32[] %s), dimensions={}
  %b2 = f32[5,2,3] broadcast(f32[2,3] %b1), dimensions={1,2}
  ROOT %o = (f32[24], f32[4,3,2], f32[2,3,4], f32[5,2,3]) tuple(f32[24] %r2, f32[4,3,2] %t2,
                                                             f32[2,3,4] %t3, f32[5,2,3] %b2)
}
"""
    expected = """
HloModule chains
ENTRY %main (x: f32[2,3,4], s: f32[]) -> (f32[24], f32[4,3,2], f32[2,3,4], f32[5,2,3]) {
  %x = f32[2,3,4] parameter(0)
  %s = f32[] parameter(1)
  %r = f32[24] reshape(f32[2,3,4] %x)
  %t = f32[4,3,2] transpose(f32[2,3,4] %x), dimensions={2,1,0}
  %b = f32[5,2,3] broadcast(f32[] %s), dimensions={}
  ROOT %o = (f32[24], f32[4,3,2], f32[2,3,4], f32[5,2,3]) tuple(f32[24] %r, f32[4,3,2] %t,
                                                             f32[2,3,4] %x, f32[5,2,3] %b)
}
"""
    simplify(h, text, expected)


def test_slices_pads_concatenates(h):
    text = """
HloModule slices
ENTRY %main (x: f32[10], y: f32[6]) -> (f32[10], f32[2], f32[3], f32[10], f32[6]) {
  %x = f32[10] parameter(0)
  %y = f32[6] parameter(1)
  %full = f32[10] slice(f32[10] %x), slice={[0:10]}
  %s1 = f32[4] slice(f32[10] %x), slice={[1:9:2]}
  %s2 = f32[2] slice(f32[4] %s1), slice={[1:4:2]}
  %cat = f32[16] concatenate(f32[10] %x, f32[6] %y), dimensions={0}
  %s3 = f32[3] slice(f32[16] %cat), slice={[11:14]}
  %z = f32[] constant(0)
  %p = f32[10] pad(f32[10] %x, f32[] %z), padding=0_0
  %one = f32[6] concatenate(f32[6] %y), dimensions={0}
  ROOT %o = (f32[10], f32[2], f32[3], f32[10], f32[6]) tuple(f32[10] %full, f32[2] %s2,
                                                          f32[3] %s3, f32[10] %p, f32[6] %one)
}
"""
    expected = """
HloModule slices
ENTRY %main (x: f32[10], y: f32[6]) -> (f32[10], f32[2], f32[3], f32[10], f32[6]) {
  %x = f32[10] parameter(0)
  %s2 = f32[2] slice(f32[10] %x), slice={[3:8:4]}
  %y = f32[6] parameter(1)
  %s3 = f32[3] slice(f32[6] %y), slice={[1:4]}
  ROOT %o = (f32[10], f32[2], f32[3], f32[10], f32[6]) tuple(f32[10] %x, f32[2] %s2,
                                                          f32[3] %s3, f32[10] %x, f32[6] %y)
}
"""
    simplify(h, text, expected)


def test_slice_across_concatenate_operands_stays(h):
    text = """
HloModule across
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %cat = f32[8] concatenate(f32[4] %x, f32[4] %y), dimensions={0}
  ROOT %s = f32[4] slice(f32[8] %cat), slice={[2:6]}
}
"""
    simplify(h, text, changes=False)


# -- reduce, dot, while ---------------------------------------------------------------------------
def test_reduce_over_size_one_and_empty_dimensions(h):
    text = """
HloModule red
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[3,1], e: f32[3,0], i: f32[]) -> (f32[3], f32[3]) {
  %x = f32[3,1] parameter(0)
  %e = f32[3,0] parameter(1)
  %i = f32[] parameter(2)
  %r1 = f32[3] reduce(f32[3,1] %x, f32[] %i), dimensions={1}, to_apply=%add
  %r0 = f32[3] reduce(f32[3,0] %e, f32[] %i), dimensions={1}, to_apply=%add
  ROOT %o = (f32[3], f32[3]) tuple(f32[3] %r1, f32[3] %r0)
}
"""
    expected = """
HloModule red
ENTRY %main (x: f32[3,1], e: f32[3,0], i: f32[]) -> (f32[3], f32[3]) {
  %x = f32[3,1] parameter(0)
  %e = f32[3,0] parameter(1)
  %i = f32[] parameter(2)
  %bi = f32[3] broadcast(f32[] %i), dimensions={}
  %rx = f32[3] reshape(f32[3,1] %x)
  %r1 = f32[3] add(f32[3] %bi, f32[3] %rx)
  %bi2 = f32[3] broadcast(f32[] %i), dimensions={}
  ROOT %o = (f32[3], f32[3]) tuple(f32[3] %r1, f32[3] %bi2)
}
"""
    simplify(h, text, expected)


def test_max_reduce_of_one_float_element_stays(h):
    text = """
HloModule red
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[3,1], i: f32[]) -> f32[3] {
  %x = f32[3,1] parameter(0)
  %i = f32[] parameter(1)
  ROOT %r1 = f32[3] reduce(f32[3,1] %x, f32[] %i), dimensions={1}, to_apply=%max
}
"""
    simplify(h, text, changes=False)


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "s32"])
def test_dot_contracting_one_element(h, dtype):
    b = Builder("dot")
    lhs = b.parameter(shape.array(dtype, [2, 3, 1]))
    rhs = b.parameter(shape.array(dtype, [2, 1, 4]))
    dot = b.dot_general(lhs, rhs, DotDimensionNumbers((2,), (1,), (0,), (0,)))
    module = b.build(dot)
    before = module.clone()
    assert h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.DOT) == 0
    h.check_same_results(before, module, seeds=range(6))


def test_outer_product_dot(h):
    b = Builder("outer")
    u = b.parameter(shape.array("f32", [5]))
    v = b.parameter(shape.array("f32", [3]))
    module = b.build(b.dot_general(u, v, DotDimensionNumbers()))
    before = module.clone()
    assert h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.DOT) == 0
    h.check_same_results(before, module, seeds=range(6))


def _loop(start: int, limit: int, step: int = 1, direction: str = "LT") -> str:
    return f"""
HloModule loop
%body (s: (s32[], f32[3])) -> (s32[], f32[3]) {{
  %s = (s32[], f32[3]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[3]) %s), index=0
  %step = s32[] constant({step})
  %next = s32[] add(s32[] %i, s32[] %step)
  %v = f32[3] get-tuple-element((s32[], f32[3]) %s), index=1
  %e = f32[3] exponential(f32[3] %v)
  ROOT %t = (s32[], f32[3]) tuple(s32[] %next, f32[3] %e)
}}
%cond (s: (s32[], f32[3])) -> pred[] {{
  %s = (s32[], f32[3]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[3]) %s), index=0
  %n = s32[] constant({limit})
  ROOT %c = pred[] compare(s32[] %i, s32[] %n), direction={direction}
}}
ENTRY %main (x: f32[3]) -> f32[3] {{
  %x = f32[3] parameter(0)
  %zero = s32[] constant({start})
  %init = (s32[], f32[3]) tuple(s32[] %zero, f32[3] %x)
  %w = (s32[], f32[3]) while((s32[], f32[3]) %init), condition=%cond, body=%body
  ROOT %r = f32[3] get-tuple-element((s32[], f32[3]) %w), index=1
}}
"""


@pytest.mark.parametrize(
    "start,limit,trips", [(0, 0, 0), (5, 3, 0), (0, 1, 1), (2, 3, 1), (0, 2, 2), (0, 10, 10)]
)
def test_while_with_zero_or_one_trip(h, start, limit, trips):
    from hlort.passes import TupleSimplifier

    module = parse_module(_loop(start, limit))
    before = module.clone()
    h.run_passes(module, [AlgebraicSimplifier(), TupleSimplifier(), DeadCodeElimination()])
    h.check_same_results(before, module)
    assert h.count(module, Opcode.WHILE) == (1 if trips > 1 else 0)
    if trips < 2:
        assert h.count(module, Opcode.EXP) == trips
        assert len(module.computations) == 1


def test_while_counting_down_and_wrapping(h):
    module = parse_module(_loop(0, -5, step=-1, direction="GT"))  # 5 trips
    assert not h.run_passes(module, SIMPLIFY)
    module = parse_module(_loop(2147483647, 0, step=1, direction="GT"))  # wraps: one trip
    before = module.clone()
    h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.WHILE) == 0
    h.check_same_results(before, module)


def test_rules_keep_results_on_random_inputs(h):
    b = Builder("mix")
    x = b.parameter(shape.array("f32", [6]))
    neg0 = b.broadcast(b.constant(np.float32(-0.0)), [6], [])
    one = b.broadcast(b.constant(np.float32(1.0)), [6], [])
    y = b.divide(b.multiply(b.add(x, neg0), one), one)
    z = b.negate(b.negate(b.subtract(y, b.broadcast(b.constant(np.float32(0.0)), [6], []))))
    module = b.build(b.reshape(b.reshape(z, [2, 3]), [6]))
    before = module.clone()
    assert h.run_passes(module, SIMPLIFY)
    assert module.entry.root is module.entry.parameters[0]
    h.check_same_results(before, module, seeds=range(8))


# -- bitcast ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source,result,ops",
    [
        ("f32[2,3]{1,0}", "f32[6]{0}", {Opcode.RESHAPE}),
        ("f32[2,3]{1,0}", "f32[3,2]{0,1}", {Opcode.RESHAPE, Opcode.TRANSPOSE}),
        ("f32[2,3]{0,1}", "f32[6]{0}", {Opcode.RESHAPE, Opcode.TRANSPOSE}),
        ("f32[2,3,4]{0,2,1}", "f32[4,6]{0,1}", {Opcode.RESHAPE, Opcode.TRANSPOSE}),
    ],
)
def test_bitcast_becomes_logical_transposes_and_reshape(h, source, result, ops):
    module = simplify(
        h,
        f"""
HloModule m
ENTRY %main (x: {source.split("{")[0]}) -> {result.split("{")[0]} {{
  %x = {source} parameter(0)
  ROOT %b = {result} bitcast({source} %x)
}}
""",
    )
    found = {i.opcode for i in module.entry.instructions} - {Opcode.PARAMETER}
    assert Opcode.BITCAST not in found and found <= ops


# -- division by a power of two -------------------------------------------------------------------
def _divide_by(dtype: str, literal: str) -> str:
    return unary_module(
        f"  %c = {dtype}[] constant({literal})\n"
        f"  %b = {dtype}[4] broadcast({dtype}[] %c), dimensions={{}}\n"
        f"  ROOT %r = {dtype}[4] divide({dtype}[4] %x, {dtype}[4] %b)",
        dtype,
    )


@pytest.mark.parametrize(
    "dtype, literal",
    [
        ("f32", "8"),
        ("f32", "-0.25"),
        ("f32", "1.17549435e-38"),  # 2^-126: the reciprocal 2^126 is normal
        ("f32", "1.70141183e+38"),  # 2^127: the reciprocal 2^-127 is subnormal, still exact
        ("f64", "0.5"),
        ("f16", "256"),
        ("bf16", "8"),
    ],
)
def test_divide_by_power_of_two_is_a_multiply(h, dtype, literal):
    module = simplify(h, _divide_by(dtype, literal))  # same bits on edge values (NaN, inf, -0)
    root = module.entry.root
    assert root.opcode is Opcode.MULTIPLY


@pytest.mark.parametrize(
    "dtype, literal",
    [
        ("f32", "3"),  # not a power of two: 1/3 is rounded
        ("f32", "1.40129846e-45"),  # 2^-149: the reciprocal overflows
        ("f16", "5.96046448e-08"),  # 2^-24: the reciprocal overflows f16
        ("f32", "0"),
        ("f32", "inf"),
        ("f32", "nan"),
        ("s32", "8"),  # integer division truncates
    ],
)
def test_other_divisions_stay(h, dtype, literal):
    simplify(h, _divide_by(dtype, literal), changes=False)
