"""Shared helpers: compile many one-op kernels in one LLVM module, run them, compare."""

from __future__ import annotations

import numpy as np

from hlort import Builder, evaluate, shape  # noqa: E402
from hlort_cpu.codegen.compiled import compile_kernel_module  # noqa: E402
from hlort_cpu.codegen.kernel_builder import KernelModule  # noqa: E402

_counter = [0]


def unique(prefix: str) -> str:
    _counter[0] += 1
    return f"test_{prefix}_{_counter[0]}"


def compile_modules(modules: dict[str, object]) -> dict[str, object]:
    """{key: hlort Module} -> {key: CompiledKernel} with one LLVM compile for all of them."""
    km = KernelModule()
    names = {}
    for key, module in modules.items():
        name = unique("k")
        km.add(name, module.entry)
        names[key] = name
    _, kernels = compile_kernel_module(km)
    return {key: kernels[name] for key, name in names.items()}


def unary_module(op: str, dtype: str, n: int, **attrs):
    b = Builder(f"{op}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    fn = getattr(b, op, None)
    if fn is not None and not attrs:
        b.build(fn(x))
    else:
        from hlort.ir.opcodes import Opcode

        b.build(b.op(Opcode[op.upper()], (x,), **attrs))
    return b.module


def binary_module(op: str, dtype: str, n: int):
    b = Builder(f"{op}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    y = b.parameter(shape.array(dtype, [n]))
    b.build(getattr(b, op)(x, y))
    return b.module


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN equal to NaN, and -0.0 distinct from +0.0."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(fa) & np.isnan(fb)
    eq = (fa == fb) & (np.signbit(fa) == np.signbit(fb))
    return bool(np.all(nan | eq))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between float arrays of one type (NaN==NaN is 0)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia = a.view(bits).astype(np.int64)
    ib = b.view(bits).astype(np.int64)
    width = a.dtype.itemsize * 8
    ia = np.where(ia < 0, -(ia & ((1 << (width - 1)) - 1)), ia)
    ib = np.where(ib < 0, -(ib & ((1 << (width - 1)) - 1)), ib)
    d = np.abs(ia - ib)
    both_nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    one_nan = np.isnan(a.astype(np.float64)) ^ np.isnan(b.astype(np.float64))
    d = np.where(both_nan, 0, d)
    return np.where(one_nan, np.iinfo(np.int64).max, d)


def reference(module, *args):
    return evaluate(module, list(args))
