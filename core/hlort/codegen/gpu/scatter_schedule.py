"""Scatter on the GPU: the operands are copied to the outputs (Copy steps), then one kernel
applies the updates, in one of three modes chosen at compile time (``plan_scatter``):

- ``"atomic"``: one thread per update element (grid-stride), each combined into its target with
  an atomic: LLVM ``atomicrmw`` (add/and/or/xor/max/min on 32/64-bit integers, fadd on f32/f64),
  which both NVPTX and AMDGPU lower to their native atomics, or a compare-and-swap loop around
  the inlined combiner (multiply, float max/min); 8- and 16-bit elements with an exact combiner
  (integer add/and/or/xor/max/min/multiply, narrow-float max/min) by a compare-and-swap loop on
  the 32-bit word holding them. Integer results are exact whatever the order;
  float add and multiply round in the order the atomics land, so with duplicate targets they
  differ from the interpreter's (in-order) result by rounding only; float max/min are exact
  except which of two tied zeros (-0.0, +0.0) or NaN payloads wins.
- ``"parallel"``: ``unique_indices=true`` (each target hit at most once, as the user promises):
  one thread per update element, load, inlined combiner, store; any combiner, variadic scatters
  and narrow floats included; exact.
- ``"overwrite"``: the replace combiner with possible duplicates, whose result is the last update
  per target in the interpreter's order (update element ``t`` in row-major order of row, then
  window element): three launches over a scratch of one integer per operand element: clear it,
  ``atomicrmw max(winner[target], t + 1)`` for every update element, then the element whose
  ``t + 1`` won stores. Exact, deterministic, variadic scatters included.
- ``"serial"``: everything else (non-commutative or non-associative combiners, overwrite with
  possible duplicates, variadic scatters, 8/16-bit elements, complex): one thread walks every
  update in the interpreter's order (hlort.codegen.llvm.scatter_walk), bit for bit the
  interpreter's result; slow for many updates, but the order is what the result depends on.

Rows whose window does not fit are skipped (XLA's rule), in every mode.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import llvmlite.ir as ir

from hlort.codegen.gpu.flat_scalar_code import flat_scalar_code
from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.complex_values import is_element_dtype
from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.gather import start_vector_index, widen_index
from hlort.codegen.llvm.index import Index, delinearize, i64, linearize
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import from_storage, storage_type, to_storage
from hlort.codegen.llvm.scatter_walk import walk_scatter_updates
from hlort.codegen.llvm.window_index import emit_if
from hlort.ir import patterns
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

BLOCK = 256
MAX_BLOCKS = 4096

_INT_RMW = {
    Opcode.ADD: ("add", "add"),
    Opcode.AND: ("and", "and"),
    Opcode.OR: ("or", "or"),
    Opcode.XOR: ("xor", "xor"),
    Opcode.MAXIMUM: ("max", "umax"),
    Opcode.MINIMUM: ("min", "umin"),
}
_CAS_OPS = frozenset({Opcode.MULTIPLY, Opcode.MAXIMUM, Opcode.MINIMUM})
_SUBWORD_INT_OPS = frozenset(_INT_RMW) | {Opcode.MULTIPLY}  # exact mod 2^bits, any order
_SUBWORD_FLOAT_OPS = frozenset({Opcode.MAXIMUM, Opcode.MINIMUM})


@dataclass(frozen=True)
class ScatterPlan:
    mode: str  # "atomic" | "parallel" | "overwrite" | "serial"
    rmw: str = ""  # atomic: the atomicrmw operation, or "" for a compare-and-swap loop
    rows: int = 0  # update rows (scatter indices)
    window: int = 0  # elements per row's window

    operand_elements: int = 0
    # the update computation the kernels inline (flat_scalar_code: maps, calls and tuples
    # inlined); the compiler wraps the scatter with it
    combiner: Computation | None = field(default=None, compare=False)

    @property
    def elements(self) -> int:
        return self.rows * self.window

    @property
    def winner_bits(self) -> int:
        """Width of the overwrite mode's winner integers (they hold ``t + 1``)."""
        return 32 if self.elements < (1 << 31) - 1 else 64

    @property
    def phases(self) -> tuple[str, ...]:
        return ("clear", "mark", "write") if self.mode == "overwrite" else ("apply",)

    @property
    def scratch_bytes(self) -> int:
        return self.operand_elements * self.winner_bits // 8 if self.mode == "overwrite" else 0


def _geometry(instr: Instruction):
    n = (len(instr.operands) - 1) // 2
    updates = instr.operands[n + 1 :]
    dn = instr.attrs["scatter_dimension_numbers"]
    update_dims = updates[0].shape.dims
    window_axes = list(dn.update_window_dims)
    scatter_axes = [a for a in range(len(update_dims)) if a not in window_axes]
    return n, dn, update_dims, window_axes, scatter_axes


def _atomic_op(instr: Instruction, combiner: Computation) -> str | None:
    """The atomicrmw operation ("" = CAS loop, "subword" = CAS on the containing 32-bit word)
    for a one-output scatter, or None."""
    op = patterns.binary_reducer_opcode(combiner)
    dt = instr.shape.dtype
    if op is None or dt.is_complex or dt.is_pred:
        return None
    if dt.bits in (8, 16):  # only order-independent (exact) combiners: no float add/multiply
        exact = _SUBWORD_INT_OPS if dt.is_integer else _SUBWORD_FLOAT_OPS
        return "subword" if op in exact else None
    if dt.bits not in (32, 64):
        return None
    if dt.is_integer:
        if op in _INT_RMW:
            return _INT_RMW[op][0 if dt.is_signed_integer else 1]
        return "" if op is Opcode.MULTIPLY else None
    if dt.is_float:
        if op is Opcode.ADD:
            return "fadd"
        return "" if op in _CAS_OPS else None
    return None


def plan_scatter(instr: Instruction) -> tuple[ScatterPlan | None, str]:
    """How scatter ``instr`` runs on the GPU, or None and why it stays a host fallback."""
    if not all(o.shape.is_array for o in instr.operands):
        return None, "an operand is not an array"
    leaves = instr.shape.leaf_shapes()
    if any(not is_element_dtype(s.dtype) for s in leaves) or not all(
        is_element_dtype(o.shape.dtype) for o in instr.operands
    ):
        return None, "an element type the GPU emitter does not compile"
    combiner = flat_scalar_code(instr.attrs["to_apply"])
    if combiner is None:
        return None, "its update computation is not scalar code (a reduce, a loop, ...)"
    plan = _plan(instr, combiner)
    return dataclasses.replace(plan, combiner=combiner), ""


def _plan(instr: Instruction, combiner: Computation) -> ScatterPlan:
    n, dn, update_dims, window_axes, scatter_axes = _geometry(instr)
    rows = math.prod(update_dims[a] for a in scatter_axes)
    window = math.prod(update_dims[a] for a in window_axes)
    if not rows * window or not math.prod(instr.operands[0].shape.dims):
        return ScatterPlan("serial", "", rows, window)  # nothing to scatter
    if n == 1:
        rmw = _atomic_op(instr, combiner)
        if rmw is not None:
            return ScatterPlan("atomic", rmw, rows, window)
    if instr.attrs.get("unique_indices", False):
        return ScatterPlan("parallel", "", rows, window)
    if patterns.is_overwrite(combiner):
        size = math.prod(instr.operands[0].shape.dims)
        return ScatterPlan("overwrite", "", rows, window, size)
    return ScatterPlan("serial", "", rows, window)


def emit_scatter_kernel(
    target: GpuTarget, entry: KernelEntry, comp: Computation, plan: ScatterPlan, phase: str
) -> LaunchShape:
    """A kernel of ``comp`` (a wrapped scatter) for one of ``plan.phases``; its outputs already
    hold the operands. Arguments: the scatter's operands, indices and updates, then its outputs,
    then (overwrite) the winner scratch."""
    root = comp.root
    if root.opcode is Opcode.TUPLE:  # a variadic scatter wrapped with its leaves
        root = root.operands[0].operands[0]
    nparams = len(comp.parameters)
    params, outs = list(entry.buffers[:nparams]), list(entry.buffers[nparams:])
    b, ctx = entry.builder, entry.ctx
    em = FusedEmitter(ctx, comp, params)
    if phase == "clear":
        return _emit_clear(target, entry, plan)
    if plan.mode == "serial" or not plan.elements:
        walk_scatter_updates(b, ctx, em, root, outs)
        b.ret_void()
        return LaunchShape(1, 1)
    launch = LaunchShape.for_elements(plan.elements, BLOCK, MAX_BLOCKS)
    start = grid_stride_start(target, b, launch)
    apply = _plain_apply
    if plan.mode == "atomic":
        apply = functools.partial(_atomic_apply, target)
    if plan.mode == "overwrite":
        apply = _overwrite_step(target, phase, entry.buffers[-1], plan.winner_bits)

    def element(t: ir.Value) -> None:
        em.reset()
        keep, target_index, where = _element_target(b, em, root, plan, t)
        if keep is False:
            return
        em.reset()

        def body() -> None:
            values = [] if phase == "mark" else [em.value(u, where) for u in _updates(root)]
            apply(ctx, root, plan, outs[: len(root.shape.leaf_shapes())], target_index, values, t)

        emit_if(b, keep, body, "keep")
        em.reset()

    _grid_stride(b, start, i64(plan.elements), i64(launch.threads), element, "updates")
    b.ret_void()
    return launch


def _emit_clear(target: GpuTarget, entry: KernelEntry, plan: ScatterPlan) -> LaunchShape:
    """Zero the overwrite mode's winners (the last argument)."""
    b = entry.builder
    wt = ir.IntType(plan.winner_bits)
    launch = LaunchShape.for_elements(max(plan.operand_elements, 1), BLOCK, MAX_BLOCKS)
    start = grid_stride_start(target, b, launch)
    winners = entry.buffers[-1]

    def clear(i: ir.Value) -> None:
        b.store(ir.Constant(wt, 0), b.gep(winners, [i], inbounds=True, source_etype=wt))

    _grid_stride(b, start, i64(plan.operand_elements), i64(launch.threads), clear, "clear")
    b.ret_void()
    return launch


def _overwrite_step(target: GpuTarget, phase: str, winners: ir.Value, bits: int):
    """mark: ``winner[target] = max(winner[target], t + 1)``; write: the winner stores."""
    wt = ir.IntType(bits)

    def apply(ctx, root, plan, outs, target_index, values, t) -> None:
        b = ctx.b
        ptr = b.gep(winners, [target_index], inbounds=True, source_etype=wt)
        mine = _narrow(b, b.add(t, i64(1)), wt)
        if phase == "mark":
            target.atomic_rmw(b, "max", ptr, mine)
            return
        won = b.icmp_unsigned("==", b.load(ptr, typ=wt), mine)
        with b.if_then(won):
            shapes = root.shape.leaf_shapes()
            for v, o, s in zip(values, outs, shapes, strict=True):
                b.store(to_storage(b, s.dtype, v), _pointer(b, s.dtype, o, target_index))

    return apply


def _narrow(b: ir.IRBuilder, value: ir.Value, t: ir.IntType) -> ir.Value:
    return value if t.width == 64 else b.trunc(value, t)


def _updates(root: Instruction) -> list[Instruction]:
    n = (len(root.operands) - 1) // 2
    return list(root.operands[n + 1 :])


def _element_target(b: ir.IRBuilder, em: FusedEmitter, root: Instruction, plan, t: ir.Value):
    """(keep or None or False, flat target index, update Index) of update element ``t``
    (row ``t // window``, window element ``t % window``), with the walk's index rules."""
    n, dn, update_dims, window_axes, scatter_axes = _geometry(root)
    indices = root.operands[n]
    dims = root.shape.leaf_shapes()[0].dims
    row_dims = tuple(update_dims[a] for a in scatter_axes)
    window_sizes = [update_dims[a] for a in window_axes]
    point = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
    window_dims = [d for d in range(len(dims)) if d not in point]
    fit = dict.fromkeys(range(len(dims)), 1)
    fit.update(zip(window_dims, window_sizes, strict=True))
    if any(fit[d] > dims[d] for d in fit):
        return False, None, None
    window = max(plan.window, 1)
    r = b.udiv(t, i64(window)) if window > 1 else t
    w = b.urem(t, i64(window)) if window > 1 else i64(0)
    batch = delinearize(b, r, row_dims)
    ws = delinearize(b, w, tuple(window_sizes))
    base: list[ir.Value] = [i64(0)] * len(dims)
    keep = None
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        at = start_vector_index(b, batch, k, dn.index_vector_dim, indices.shape.rank)
        raw = em.value(indices, Index(b, indices.shape.dims, multi=at))
        start = widen_index(b, raw, indices.shape.dtype)
        ok = b.icmp_unsigned("<=", start, i64(dims[d] - fit[d]))
        keep = ok if keep is None else b.and_(keep, ok)
        base[d] = start
    for d, idim in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        base[d] = batch[idim - (idim > dn.index_vector_dim)]
    multi = list(base)
    for d, v in zip(window_dims, ws, strict=True):
        multi[d] = b.add(multi[d], v)
    update_multi: list[ir.Value] = [i64(0)] * len(update_dims)
    for a, v in zip(scatter_axes, batch, strict=True):
        update_multi[a] = v
    for a, v in zip(window_axes, ws, strict=True):
        update_multi[a] = v
    return keep, linearize(b, multi, dims), Index(b, update_dims, multi=update_multi)


def _pointer(b: ir.IRBuilder, dtype, base: ir.Value, index: ir.Value) -> ir.Value:
    return b.gep(base, [index], inbounds=True, source_etype=storage_type(dtype))


def _plain_apply(ctx, root, plan, outs, target_index, values, t) -> None:
    """Load, combine, store: each target is hit once (unique indices)."""
    b = ctx.b
    shapes = root.shape.leaf_shapes()
    ptrs = [_pointer(b, s.dtype, o, target_index) for o, s in zip(outs, shapes, strict=True)]
    current = [
        from_storage(b, s.dtype, b.load(p, typ=storage_type(s.dtype)))
        for p, s in zip(ptrs, shapes, strict=True)
    ]
    new = emit_scalar_computation(ctx, root.attrs["to_apply"], current + values)
    for v, p, s in zip(new, ptrs, shapes, strict=True):
        b.store(to_storage(b, s.dtype, v), p)


def _atomic_apply(target, ctx, root, plan, outs, target_index, values, t) -> None:
    b = ctx.b
    dt = root.shape.dtype
    if plan.rmw == "subword":
        _subword_apply(target, ctx, root, outs[0], target_index, values[0])
        return
    ptr = _pointer(b, dt, outs[0], target_index)
    if plan.rmw:
        target.atomic_rmw(b, plan.rmw, ptr, to_storage(b, dt, values[0]))
        return
    # compare-and-swap loop around the inlined combiner, on the element's bits
    st = storage_type(dt)
    bits = ir.IntType(dt.bits)
    combiner = root.attrs["to_apply"]
    entry_block = b.block
    first = b.load(ptr, typ=st)
    first_bits = first if st == bits else b.bitcast(first, bits)
    fn = b.block.function
    loop, done = fn.append_basic_block("cas.loop"), fn.append_basic_block("cas.done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(bits, name="cas.old")
    old.add_incoming(first_bits, entry_block)
    current = old if st == bits else b.bitcast(old, st)
    new = emit_scalar_computation(ctx, combiner, [from_storage(b, dt, current), values[0]])[0]
    new_raw = to_storage(b, dt, new)
    new_bits = new_raw if st == bits else b.bitcast(new_raw, bits)
    pair = target.compare_exchange(b, ptr, old, new_bits)
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    old.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)


def _subword_apply(target, ctx, root, out, target_index, value) -> None:
    """An 8- or 16-bit element combined by a compare-and-swap loop on the aligned 32-bit word
    that holds it (little-endian lanes; slots are 256-byte aligned, so the word never reaches
    into another buffer and every other lane is written back as it was)."""
    b = ctx.b
    dt = root.shape.dtype
    bits, st = dt.bits, storage_type(dt)
    it = ir.IntType(bits)
    per_word = 32 // bits
    word = b.lshr(target_index, i64(per_word.bit_length() - 1))
    lane = b.and_(target_index, i64(per_word - 1))
    shift = b.trunc(b.mul(lane, i64(bits)), I32)
    mask = b.shl(ir.Constant(I32, (1 << bits) - 1), shift)
    ptr = b.gep(out, [word], inbounds=True, source_etype=I32)
    entry_block = b.block
    first = b.load(ptr, typ=I32)
    fn = b.block.function
    loop, done = fn.append_basic_block("subword.loop"), fn.append_basic_block("subword.done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(I32, name="subword.old")
    old.add_incoming(first, entry_block)
    raw = b.trunc(b.lshr(old, shift), it)
    current = from_storage(b, dt, raw if st == it else b.bitcast(raw, st))
    new = emit_scalar_computation(ctx, root.attrs["to_apply"], [current, value])[0]
    new_raw = to_storage(b, dt, new)
    new_bits = b.zext(new_raw if st == it else b.bitcast(new_raw, it), I32)
    new_word = b.or_(b.and_(old, b.not_(mask)), b.shl(new_bits, shift))
    pair = target.compare_exchange(b, ptr, old, new_word)
    old.add_incoming(b.extract_value(pair, 0), b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)


__all__ = ["ScatterPlan", "emit_scatter_kernel", "plan_scatter"]
