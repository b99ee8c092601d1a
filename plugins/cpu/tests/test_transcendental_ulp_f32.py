"""The all-f32 forms (float_math_f32.py, float_log_f32.py) that GPU targets select with
``MathPolicy(f32_via_f64=False)``, measured on the CPU JIT: the same kernels emitted for a CPU
target with that policy, over test_transcendental_ulp's samples (sampled bit patterns of the
whole f32 range, normals, edges) against the interpreter (NumPy f64, rounded). The bounds are
float_math's table; extra edges cover the pi/2 reduction (near multiples of pi/2, the largest
floats) and pow's overflow and subnormal results.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from codegen_helpers import reference, ulp_distance, unique
from test_transcendental_ulp import X32, Y32, _module

from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.compiled import compile_kernel_module
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.kernel_builder import KernelModule

F32_ONLY = replace(CPU_TARGET, math=replace(CPU_TARGET.math, f32_via_f64=False))
UNARY = {
    Opcode.ERF: 1,
    Opcode.SINE: 1,
    Opcode.COSINE: 1,
    Opcode.TAN: 1,
    Opcode.EXPM1: 1,
    Opcode.LOG1P: 1,
    Opcode.CBRT: 1,
    Opcode.RSQRT: 1,
}
BINARY = {Opcode.POWER: 1, Opcode.ATAN2: 1}


def _edges() -> np.ndarray:
    rng = np.random.default_rng(99)
    turns = np.arange(1, 20000, dtype=np.float64) * (np.pi / 2)
    near = np.concatenate([turns, turns * 1e3, [2.0**k * np.pi for k in range(0, 120, 3)]])
    near = near.astype(np.float32)
    near = np.concatenate([near, np.nextafter(near, np.float32(0)), np.nextafter(near, np.inf)])
    big = np.float32(3.4e38) * rng.uniform(0, 1, 5000).astype(np.float32)
    small = np.array([2.0**-149, 2.0**-126, 2.0**-127, 1e-40, 3.9, 3.92, 0.99999, 1.0000001])
    # the f32 closest to multiples of pi/2 (2**-29.9, 2**-29.5, 2**-28.5 quarter turns off)
    worst = np.array([16367173 * 2.0**72, 10741887 * 2.0**11, 16573937 * 2.0**-16])
    small = np.concatenate([small, worst])
    x = np.concatenate([near, big, small.astype(np.float32), X32])
    return np.concatenate([x, -x])


XE = _edges()
# pow: y log2|x| across the whole result range (overflow, subnormal results, underflow)
_rng = np.random.default_rng(5)
with np.errstate(divide="ignore", invalid="ignore"):
    YE = (_rng.uniform(-160, 130, XE.size) / np.log2(np.abs(XE.astype(np.float64)))).astype(
        np.float32
    )
YE[~np.isfinite(YE)] = 3.0
XB = np.concatenate([X32, XE])
YB = np.concatenate([Y32, YE])


@pytest.fixture(scope="module")
def kernels():
    km = KernelModule(target=F32_ONLY)
    names = {}
    for op in UNARY:
        names[op] = unique("f32only")
        km.add(names[op], _module(op, "f32", XE.size).entry)
    for op in BINARY:
        names[op] = unique("f32only")
        km.add(names[op], _module(op, "f32", XB.size, 2).entry)
    ir_text = km.ir_text()
    _, compiled = compile_kernel_module(km)
    return {op: compiled[name] for op, name in names.items()}, ir_text


def _check(op, bound, got, want, *args):
    with np.errstate(invalid="ignore"):
        d = ulp_distance(got, want)
    worst = int(np.argmax(d))
    where = ", ".join(repr(a[worst]) for a in args)
    assert d.max() <= bound, f"{op.value}({where}) = {got[worst]!r}, want {want[worst]!r}"


@pytest.mark.parametrize("op", list(UNARY), ids=lambda o: o.value)
def test_f32_form_ulp(kernels, op):
    got = kernels[0][op](XE)[0]
    _check(op, UNARY[op], got, reference(_module(op, "f32", XE.size), XE), XE)


@pytest.mark.parametrize("op", list(BINARY), ids=lambda o: o.value)
def test_f32_form_binary_ulp(kernels, op):
    got = kernels[0][op](XB, YB)[0]
    want = reference(_module(op, "f32", XB.size, 2), XB, YB)
    _check(op, BINARY[op], got, want, XB, YB)


def test_the_f32_forms_use_no_f64(kernels):
    body = kernels[1]
    assert " double" not in body and "fpext" not in body


SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 0.25, 4.0]
    + [np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 3.4028235e38, -3.4028235e38]
    + [0.9999999, 1.0000001, 2.0**24, 2.0**24 + 2, 2.0**25, 1 - 2.0**24, 1e10, -1e10]
    + [126.0, 127.0, 128.0, -149.0, -150.0],
    dtype=np.float32,
)
GX, GY = np.repeat(SPECIAL, SPECIAL.size), np.tile(SPECIAL, SPECIAL.size)


@pytest.fixture(scope="module")
def grid_kernels():
    km = KernelModule(target=F32_ONLY)
    names = {}
    for op in [*UNARY, *BINARY]:
        names[op] = unique("f32grid")
        km.add(names[op], _module(op, "f32", GX.size, 2 if op in BINARY else 1).entry)
    _, compiled = compile_kernel_module(km)
    return {op: compiled[name] for op, name in names.items()}


@pytest.mark.parametrize("op", [*UNARY, *BINARY], ids=lambda o: o.value)
def test_f32_form_special_values(grid_kernels, op):
    """Every pair of special values (C99 Annex F cases): zeros (with their sign), infinities
    and NaN exactly as the interpreter, anything else within the op's bound."""
    args = (GX, GY) if op in BINARY else (GX,)
    got = grid_kernels[op](*args)[0]
    want = reference(_module(op, "f32", GX.size, len(args)), *args)
    special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0)
    same = (np.isnan(got) & np.isnan(want)) | (
        (got == want) & (np.signbit(got) == np.signbit(want))
    )
    with np.errstate(invalid="ignore"):
        far = ulp_distance(got, want) > {**UNARY, **BINARY}[op]
    bad = np.nonzero((special & ~same) | (~special & far))[0]
    assert bad.size == 0, [(*(a[i] for a in args), got[i], want[i]) for i in bad[:5]]
