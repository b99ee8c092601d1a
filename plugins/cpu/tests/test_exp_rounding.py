"""f32 exp's exponent rounded by llvm.lrint (MathPolicy.lrint_instruction, x86's cvtps2dq) gives
the bits of roundeven and a conversion, for exp, tanh and logistic (which share the rounding).

All 2**32 patterns were compared once (0 differ, but for exp's signaling NaNs, which it now
returns quieted, as NumPy does: its NaN flows through rather than being selected back); here a
sample keeps the suite fast:
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
from hlort_cpu.codegen.cpu_target import CPU_TARGET, X86
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
    target = replace(CPU_TARGET, math=replace(CPU_TARGET.math, lrint_instruction=flag))
    km = KernelModule(target=target)
    names = {op: unique("exprounding") for op in OPS}
    for op, name in names.items():
        km.add(name, _module(op, "f32", X.size).entry)
    _, compiled = compile_kernel_module(km)
    return km.ir_text(), {op: compiled[name] for op, name in names.items()}


@pytest.mark.skipif(not X86, reason="llvm.lrint is one instruction on x86")
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.value)
def test_lrint_rounding_gives_the_same_bits(op):
    text, by_lrint = _kernels(True)
    assert "llvm.lrint" in text and "llvm.roundeven" not in text
    _, by_roundeven = _kernels(False)
    got, want = by_lrint[op](X)[0].view(np.uint32), by_roundeven[op](X)[0].view(np.uint32)
    same = got == want
    if op is Opcode.EXP:  # NaN flows through instead of keep_nan: a signaling NaN is quieted
        bits = X.view(np.uint32)
        signaling = (bits & 0x7FC00000) == 0x7F800000
        signaling &= (bits & 0x3FFFFF) != 0
        assert np.count_nonzero(signaling) > 0
        same |= signaling & (got == (want | 0x400000))
    diff = np.nonzero(~same)[0]
    assert diff.size == 0, [
        (hex(X.view(np.uint32)[i]), hex(got[i]), hex(want[i])) for i in diff[:5]
    ]


def test_the_cpu_target_rounds_by_one_conversion_on_x86():
    """cvtps2dq where lrint is one instruction, and never a call of lrintf per element."""
    engine = jit_engine()
    assert CPU_TARGET.math.lrint_instruction == X86
    km = KernelModule()
    km.add(unique("exprounding"), _module(Opcode.EXP, "f32", 4096).entry)
    optimized = engine.optimized_ir(km.ir_text())
    asm = engine.machine.emit_assembly(engine.llvm.parse_assembly(optimized))
    assert ("cvtps2dq" in asm) == X86 and "lrint" not in asm
