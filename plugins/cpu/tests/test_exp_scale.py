"""f32 exp's scaling by llvm.ldexp (MathPolicy.ldexp_instruction, AVX-512's vscalefps) gives the
bits of the two exact steps it replaces, for exp, tanh and logistic (which share the scaling).

All 2**32 patterns were compared once (0 differ, 220 s); here a sample keeps the suite fast:
every exponent field with random mantissas, the clamp and overflow/underflow edges and their
neighbours, the subnormal-result range, and the specials (+-0, +-inf, NaNs of both signs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from codegen_helpers import unique
from test_transcendental_ulp import _module

from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.compiled import compile_kernel_module
from hlort_cpu.codegen.cpu_target import CPU_TARGET, host_has_avx512f
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.kernel_builder import KernelModule

OPS = [Opcode.EXP, Opcode.TANH, Opcode.LOGISTIC]


def _samples() -> np.ndarray:
    rng = np.random.default_rng(7)
    exponents = np.repeat(np.arange(256, dtype=np.uint32), 2048) << 23
    mantissas = rng.integers(0, 1 << 23, exponents.size, dtype=np.uint32)
    bits = exponents | mantissas
    bits = np.concatenate([bits, bits | np.uint32(1 << 31)])
    edges = np.array(
        [88.72283, 88.72284, 89.0, -87.33655, -103.97208, -104.0, -149.0, -150.0, -176.0]
        + [-175.9, 0.5, -0.5, 1e-30, -1e-30, 9.5, 9.01, 0.625, 0.0, -0.0, np.inf, -np.inf],
        np.float32,
    )
    near = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf))])
    near = np.concatenate([near, np.nextafter(edges, np.float32(-np.inf))])
    tails = np.linspace(-110, -86, 1 << 16, dtype=np.float32)  # subnormal and tiny results
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF], np.uint32)
    return np.concatenate([bits.view(np.float32), near, tails, nans.view(np.float32)])


X = _samples()


def _kernels(flag: bool):
    target = replace(CPU_TARGET, math=replace(CPU_TARGET.math, ldexp_instruction=flag))
    km = KernelModule(target=target)
    names = {op: unique("expscale") for op in OPS}
    for op, name in names.items():
        km.add(name, _module(op, "f32", X.size).entry)
    _, compiled = compile_kernel_module(km)
    return km.ir_text(), {op: compiled[name] for op, name in names.items()}


@pytest.mark.skipif(not host_has_avx512f(), reason="llvm.ldexp is a libm call without AVX-512")
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.value)
def test_ldexp_scaling_gives_the_same_bits(op):
    text, by_ldexp = _kernels(True)
    assert "llvm.ldexp" in text and "llvm.lrint" in text
    _, by_steps = _kernels(False)
    got, want = by_ldexp[op](X)[0], by_steps[op](X)[0]
    diff = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0]
    assert diff.size == 0, [(X[i], got[i], want[i]) for i in diff[:5]]


def test_the_cpu_target_scales_by_ldexp_exactly_with_avx512():
    """ldexp where it is vscalefps, never where LLVM would call ldexpf per element."""
    engine = jit_engine()
    has = "+avx512f" in engine.target.features
    assert CPU_TARGET.math.ldexp_instruction == has == host_has_avx512f()
    km = KernelModule()
    km.add(unique("expscale"), _module(Opcode.EXP, "f32", 4096).entry)
    asm = engine.machine.emit_assembly(
        engine.llvm.parse_assembly(engine.optimized_ir(km.ir_text()))
    )
    assert ("vscalefps" in asm) == has and "ldexp" not in asm
