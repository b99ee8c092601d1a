"""rng-bit-generator kernels on the CPU: the core's Threefry / Philox blocks (rng_bits.py) over
the kernel's iteration range, so threads fill disjoint blocks of counters.

``void k(ptr* buffers, i64 begin, i64 end)``: buffers = state, new state, bits.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.rng_bits import RngBits
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.fusion_kernel import KernelInfo


def supports_rng(instr: Instruction) -> bool:
    if instr.opcode is not Opcode.RNG_BIT_GENERATOR or not instr.shape.is_tuple:
        return False
    state = instr.operands[0]
    bits = instr.shape.elements[1]
    return (
        state.opcode is Opcode.PARAMETER
        and state.shape.is_array
        and bits.is_array
        and bits.dtype.bits in (8, 16, 32, 64)
    )


def emit_rng_kernel(module: ir.Module, target: TargetSpec, name: str, comp: Computation):
    """The kernel of a wrapped rng-bit-generator; returns its KernelInfo."""
    instr = comp.root
    if not supports_rng(instr):
        raise Unimplemented(f"{instr.name}: no compiled rng-bit-generator for {instr.shape}")
    kernel = define_kernel(module, target, name, 3)
    bits = RngBits(kernel.builder, kernel.buffers, instr)
    emit_loop(kernel.builder, kernel.begin, kernel.end, bits.block, "blocks")
    kernel.builder.ret_void()
    shapes = tuple(instr.shape.elements)
    return KernelInfo(name, "rng", 1, shapes, bits.extent, bits.counters_per_block)
