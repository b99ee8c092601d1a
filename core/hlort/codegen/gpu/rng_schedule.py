"""rng-bit-generator on the GPU: the core's Threefry / Philox blocks (rng_bits.py), one block of
counters per thread iteration (grid-stride), bit exact with the interpreter.

Blocks are small here (RNG_GPU_BLOCK counters) so the output spreads over many threads; block 0
also writes the new state. Arguments: state, new state, bits.
"""

from __future__ import annotations

from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.rng_bits import RngBits
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

RNG_GPU_BLOCK = 16
BLOCK = 128
MAX_BLOCKS = 4096


def plan_rng(instr: Instruction) -> str:
    """ "" when a GPU kernel computes ``instr``, else why not."""
    if instr.opcode is not Opcode.RNG_BIT_GENERATOR or not instr.shape.is_tuple:
        return "its result is not a (state, bits) tuple"
    state, bits = instr.operands[0].shape, instr.shape.elements[1]
    if not (state.is_array and bits.is_array):
        return "its state or bits are not arrays"
    if bits.dtype.bits not in (8, 16, 32, 64):
        return f"no GPU generator for {bits.dtype.bits}-bit outputs"
    return ""


def emit_rng_kernel(target: GpuTarget, entry: KernelEntry, instr: Instruction) -> LaunchShape:
    b = entry.builder
    bits = RngBits(b, entry.buffers, instr, RNG_GPU_BLOCK)
    launch = LaunchShape.for_elements(bits.extent, BLOCK, MAX_BLOCKS)
    start = grid_stride_start(target, b, launch)
    _grid_stride(b, start, i64(bits.extent), i64(launch.threads), bits.block, "blocks")
    b.ret_void()
    return launch


__all__ = ["emit_rng_kernel", "plan_rng"]
