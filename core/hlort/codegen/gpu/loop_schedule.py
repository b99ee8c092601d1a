"""The elementwise (loop fusion) schedule: a grid-stride loop over the outputs' elements.

Every output of the fusion has the same dims; thread ``t`` of the grid computes elements ``t,
t + G*B, ...``, its operands' elements computed in registers from the inputs (reduces by their
own loop, reduce_emitter.py). When no instruction needs per-dimension indices the loop runs over
chunks of ``LANES`` consecutive elements (16 bytes of the widest element): every parameter read
at the output's index is loaded with one 128-bit (or narrower, for small chunks) vector load and
every output stored with one vector store; the remainder runs element by element. Slots are
aligned to at least 16 bytes (GpuProgram's buffer slots), which is what makes the vector access
legal.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.reduce_emitter import ReducingEmitter
from hlort.codegen.llvm.complex_values import involves_complex
from hlort.codegen.llvm.fused_emitter import needs_multi
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, from_storage, storage_type, store_element, to_storage
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

VECTOR_BYTES = 16
BLOCK = 256
MAX_BLOCKS_PER_GRID = 4096  # a grid-stride loop needs no more to fill an H200 (132 SMs)


def root_outputs(comp: Computation) -> list[Instruction]:
    root = comp.root
    return list(root.operands) if root.opcode is Opcode.TUPLE else [root]


def _lanes(comp: Computation, outputs: list[Instruction]) -> int:
    """Elements per vector chunk, or 1 when the loop cannot run over chunks."""
    if needs_multi(comp) or any(i.opcode is Opcode.REDUCE for i in comp.instructions):
        return 1
    if any(
        involves_complex(i) or i.shape.dtype.is_complex
        for i in comp.instructions
        if i.shape.is_array
    ):
        return 1
    dims = outputs[0].shape.dims
    sizes = [max(1, o.shape.dtype.itemsize) for o in outputs]
    sizes += [max(1, p.shape.dtype.itemsize) for p in comp.parameters if p.shape.dims == dims]
    widest = max(sizes)
    return max(1, VECTOR_BYTES // widest) if VECTOR_BYTES % widest == 0 else 1


def emit_loop_kernel(target: GpuTarget, entry: KernelEntry, comp: Computation) -> LaunchShape:
    outputs = root_outputs(comp)
    nparams = len(comp.parameters)
    params, outs = list(entry.buffers[:nparams]), list(entry.buffers[nparams:])
    dims = outputs[0].shape.dims
    n = math.prod(dims)
    lanes = _lanes(comp, outputs)
    chunks = n // lanes if lanes > 1 else 0
    work = chunks + (n - chunks * lanes)
    launch = LaunchShape.for_elements(max(work, 1), BLOCK, MAX_BLOCKS_PER_GRID)
    b, ctx = entry.builder, entry.ctx
    em = ReducingEmitter(ctx, comp, params)
    start = grid_stride_start(target, b, launch)
    stride = i64(launch.threads)
    by_param = {p.parameter_number: p for p in comp.parameters}

    def element(i: ir.Value) -> None:
        index = Index(b, dims, linear=i)
        for k, out in enumerate(outputs):
            store_element(b, out.shape.dtype, em.value(out, index), outs[k], i)
        em.reset()

    def chunk(c: ir.Value) -> None:
        base = b.mul(c, i64(lanes))
        indices = [Index(b, dims, linear=b.add(base, i64(k)) if k else base) for k in range(lanes)]
        for number, param in by_param.items():
            if param.shape.dims != dims or not _read_directly(comp, param):
                continue
            for k, value in enumerate(_vector_load(b, param, params[number], c, lanes)):
                em.provide(param, indices[k], value)
        for out, ptr in zip(outputs, outs, strict=True):
            values = [em.value(out, index) for index in indices]
            _vector_store(b, out, values, ptr, c, lanes)
        em.reset()

    if chunks:
        _grid_stride(b, start, i64(chunks), stride, chunk, "chunks")
        tail = b.add(start, i64(chunks * lanes))
        _grid_stride(b, tail, i64(n), stride, element, "tail")
    elif n:
        _grid_stride(b, start, i64(n), stride, element, "elements")
    b.ret_void()
    return launch


def _read_directly(comp: Computation, param: Instruction) -> bool:
    """Whether some elementwise user reads ``param`` at the output's index (worth a load)."""
    return any(u.is_elementwise for u in comp.instructions if param in u.operands)


def _vector_load(
    b: ir.IRBuilder, param: Instruction, ptr: ir.Value, c: ir.Value, lanes: int
) -> list[ir.Value]:
    dt = param.shape.dtype
    st = storage_type(dt)
    vt = ir.VectorType(st, lanes)
    raw = b.load(b.gep(ptr, [c], inbounds=True, source_etype=vt), typ=vt)
    raw.align = lanes * max(1, dt.itemsize)
    return [from_storage(b, dt, b.extract_element(raw, ir.Constant(I32, k))) for k in range(lanes)]


def _vector_store(
    b: ir.IRBuilder,
    out: Instruction,
    values: list[ir.Value],
    ptr: ir.Value,
    c: ir.Value,
    lanes: int,
) -> None:
    dt = out.shape.dtype
    st = storage_type(dt)
    vt = ir.VectorType(st, lanes)
    vec = ir.Constant(vt, ir.Undefined)
    for k, v in enumerate(values):
        vec = b.insert_element(vec, to_storage(b, dt, v), ir.Constant(I32, k))
    store = b.store(vec, b.gep(ptr, [c], inbounds=True, source_etype=vt))
    store.align = lanes * max(1, dt.itemsize)


def _grid_stride(
    b: ir.IRBuilder, start: ir.Value, stop: ir.Value, stride: ir.Value, body, name: str
) -> None:
    """``for i in range(start, stop, stride): body(i)``."""
    fn = b.block.function
    pre = b.block
    loop = fn.append_basic_block(f"{name}.body")
    after = fn.append_basic_block(f"{name}.end")
    b.cbranch(b.icmp_signed("<", start, stop), loop, after)
    b.position_at_end(loop)
    i = b.phi(I64, name=f"{name}.i")
    i.add_incoming(start, pre)
    body(i)
    nxt = b.add(i, stride, flags=("nsw",))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, stop), loop, after)
    b.position_at_end(after)


__all__ = ["emit_loop_kernel", "root_outputs"]
