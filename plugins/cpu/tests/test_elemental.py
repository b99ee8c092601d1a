"""Every elementwise opcode compiled by the LLVM emitter, against the interpreter, on edge values.

Exact ops (arithmetic, rounding, comparisons, integer division by zero, shifts, conversions
between every pair of compiled types) must match bit for bit; NaN matches any NaN.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from codegen_helpers import compile_modules, reference, same_bits

from hlort import Builder, shape
from hlort.errors import InvalidArgument
from hlort.ir.attributes import ComparisonDirection
from hlort.ir.opcodes import Opcode

FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]


def edge_values(dtype: str) -> np.ndarray:
    dt = shape.array(dtype, []).dtype.numpy
    if dtype == "pred":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1, 31, 32, 63, 64]
        if dt.kind == "i":
            vals += [-1, -2, -3, -7, -31, -64]
        return np.array(sorted(set(v for v in vals if info.min <= v <= info.max)), dtype=dt)
    info = ml_dtypes.finfo(dt)
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.7,
        -1e-3,
        np.inf,
        -np.inf,
        np.nan,
        float(info.max),
        -float(info.max),
        float(info.tiny),
        float(info.smallest_subnormal),
        -float(info.smallest_subnormal),
        100.25,
        -7.75,
        65504.0,
        1e10,
    ]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=np.float64).astype(dt)


def _pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    v = edge_values(dtype)
    a, b = zip(*itertools.product(v, v), strict=True)
    dt = v.dtype
    return np.array(a, dtype=dt), np.array(b, dtype=dt)


UNARY_FLOAT = [
    Opcode.ABS,
    Opcode.NEGATE,
    Opcode.SIGN,
    Opcode.FLOOR,
    Opcode.CEIL,
    Opcode.ROUND_NEAREST_AFZ,
    Opcode.ROUND_NEAREST_EVEN,
    Opcode.IS_FINITE,
    Opcode.SQRT,
    Opcode.COPY,
]
UNARY_INT = [Opcode.ABS, Opcode.NEGATE, Opcode.SIGN, Opcode.NOT, Opcode.POPCNT, Opcode.CLZ]
BINARY_FLOAT = [
    Opcode.ADD,
    Opcode.SUBTRACT,
    Opcode.MULTIPLY,
    Opcode.DIVIDE,
    Opcode.REMAINDER,
    Opcode.MAXIMUM,
    Opcode.MINIMUM,
]
BINARY_INT = [
    Opcode.ADD,
    Opcode.SUBTRACT,
    Opcode.MULTIPLY,
    Opcode.DIVIDE,
    Opcode.REMAINDER,
    Opcode.MAXIMUM,
    Opcode.MINIMUM,
    Opcode.AND,
    Opcode.OR,
    Opcode.XOR,
    Opcode.POWER,
    Opcode.SHIFT_LEFT,
    Opcode.SHIFT_RIGHT_LOGICAL,
    Opcode.SHIFT_RIGHT_ARITHMETIC,
]


CASES: dict = {}


def _add(key, build, args) -> None:
    """Register a case unless the op's shape rule rejects the element type."""
    try:
        CASES[key] = (build(), args)
    except InvalidArgument:
        pass


def _unary(op: Opcode, dtype: str, n: int, **attrs):
    b = Builder(f"{op.name}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    b.build(b.op(op, (x,), **attrs))
    return b.module


def _binary(op: Opcode, dtype: str, n: int, **attrs):
    b = Builder(f"{op.name}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    y = b.parameter(shape.array(dtype, [n]))
    b.build(b.op(op, (x, y), **attrs))
    return b.module


def _convert(src: str, dst: str, n: int):
    b = Builder(f"convert_{src}_{dst}")
    x = b.parameter(shape.array(src, [n]))
    b.build(b.convert(x, dst))
    return b.module


for dt in FLOATS:
    n = len(edge_values(dt))
    for op in UNARY_FLOAT:
        _add(("u", op, dt), lambda op=op, dt=dt, n=n: _unary(op, dt, n), (edge_values(dt),))
    a, c = _pairs(dt)
    for op in BINARY_FLOAT:
        _add(("b", op, dt), lambda op=op, dt=dt, a=a: _binary(op, dt, a.size), (a, c))
    for direction in ComparisonDirection:
        for ctype in ("FLOAT", "TOTALORDER"):
            key = ("cmp", direction, ctype, dt)
            CASES[key] = (None, (a, c))
for dt in INTS:
    n = len(edge_values(dt))
    for op in UNARY_INT:
        _add(("u", op, dt), lambda op=op, dt=dt, n=n: _unary(op, dt, n), (edge_values(dt),))
    a, c = _pairs(dt)
    for op in BINARY_INT:
        _add(("b", op, dt), lambda op=op, dt=dt, a=a: _binary(op, dt, a.size), (a, c))


def _compare_module(dt: str, n: int, direction: ComparisonDirection, ctype: str):
    b = Builder(f"cmp_{dt}")
    x = b.parameter(shape.array(dt, [n]))
    y = b.parameter(shape.array(dt, [n]))
    b.build(b.compare(x, y, direction, ctype))
    return b.module


for key in [k for k in CASES if k[0] == "cmp"]:
    _, direction, ctype, dt = key
    args = CASES[key][1]
    CASES[key] = (_compare_module(dt, args[0].size, direction, ctype), args)
for dt in INTS:
    a, c = _pairs(dt)
    for direction in ComparisonDirection:
        module = _compare_module(dt, a.size, direction, None)
        CASES[("cmp", direction, "int", dt)] = (module, (a, c))

ALL_TYPES = FLOATS + INTS + ["pred"]
for src, dst in itertools.product(ALL_TYPES, ALL_TYPES):
    vals = edge_values(src)
    if dst in ("f16", "bf16") and src in ("s64", "u64"):
        continue  # not compiled: would round twice (the backend falls back)
    CASES[("convert", src, dst)] = (_convert(src, dst, vals.size), (vals,))
for dt in FLOATS:
    for e, m in ((5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52)):
        CASES[("rp", dt, e, m)] = (
            _unary(
                Opcode.REDUCE_PRECISION, dt, len(edge_values(dt)), exponent_bits=e, mantissa_bits=m
            ),
            (edge_values(dt),),
        )
for src, dst in (
    ("f32", "s32"),
    ("s32", "f32"),
    ("f64", "u64"),
    ("u16", "f16"),
    ("bf16", "s16"),
    ("s16", "bf16"),
    ("f16", "u16"),
):
    vals = edge_values(src)
    b = Builder("bitcast")
    x = b.parameter(shape.array(src, [vals.size]))
    b.build(b.bitcast_convert(x, dst))
    CASES[("bitcast", src, dst)] = (b.module, (vals,))


@pytest.fixture(scope="module")
def kernels():
    return compile_modules({k: m for k, (m, _) in CASES.items()})


@pytest.mark.parametrize("key", list(CASES), ids=lambda k: "-".join(map(str, k)))
def test_matches_interpreter_bitwise(kernels, key):
    module, args = CASES[key]
    got = kernels[key](*args)[0]
    want = reference(module, *args)
    assert same_bits(got, want), f"{key}: inputs {args}\n got {got}\nwant {want}"
