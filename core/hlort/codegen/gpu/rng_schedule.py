"""rng-bit-generator on the GPU: the core's Threefry / Philox blocks (rng_bits.py), one block of
counters per thread iteration (grid-stride), bit exact with the interpreter.

Blocks are small here (RNG_GPU_BLOCK counters) so the output spreads over many threads; block 0
also writes the new state. Arguments: state, new state, bits.

JAX's threefry custom call (``cu_threefry2x32`` and its spellings: key0, key1, count0, count1 of
one u32 shape -> the two output words) is elementwise: one element per grid-stride iteration
through the same ``rng_bits.threefry2x32`` rounds the CPU plugin's kernel uses, so bit exact
with ``hlort.interpreter.prng``. JAX broadcasts the four operands to one shape before the call;
the target's shape rule admits nothing else. Arguments: the four operands, then the two words.
"""

from __future__ import annotations

from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I32
from hlort.codegen.llvm.rng_bits import RngBits, threefry2x32
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


def emit_threefry_kernel(target: GpuTarget, entry: KernelEntry, count: int) -> LaunchShape:
    """``count`` elements of JAX's threefry custom call; arguments as the module docstring's."""
    b, ptrs = entry.builder, entry.buffers
    launch = LaunchShape.for_elements(count, BLOCK, MAX_BLOCKS)

    def element(i):
        words = [b.load(b.gep(p, [i], inbounds=True, source_etype=I32), typ=I32) for p in ptrs[:4]]
        for out, value in zip(ptrs[4:6], threefry2x32(b, *words), strict=True):
            b.store(value, b.gep(out, [i], inbounds=True, source_etype=I32))

    if count:
        start = grid_stride_start(target, b, launch)
        _grid_stride(b, start, i64(count), i64(launch.threads), element, "elements")
    b.ret_void()
    return launch


__all__ = ["emit_rng_kernel", "emit_threefry_kernel", "plan_rng"]
