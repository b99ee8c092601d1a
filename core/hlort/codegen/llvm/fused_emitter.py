"""Element generators for a fused computation: the value of any instruction at an index.

This is XLA's "elemental IR emitter" with its index maps: ``value(instr, index)`` emits the IR
computing one element of ``instr`` by pulling the elements of its operands it needs. Elementwise
ops use the same index for their operands; broadcast, reshape, transpose, slice, reverse, pad,
concatenate, dynamic-slice, dynamic-update-slice, gather (gather.py) and iota map the index;
parameters load from the kernel's buffers; constants are immediates or global arrays. Loads are
never out of bounds: pad and concatenate clamp the index they load with and then select. Values
are memoized per (instruction, index object), so a producer used twice at one index is computed
once.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np

from hlort.codegen.llvm.complex_types import complex_elements
from hlort.codegen.llvm.complex_values import is_element_dtype
from hlort.codegen.llvm.elemental import can_emit, convert_value, emit_elementwise
from hlort.codegen.llvm.gather import emit_gather
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import (
    I64,
    constant,
    load_element,
    storage_type,
)
from hlort.dtypes import S64 as _S64
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode

# Ops whose index map needs the per-dimension index (the rest work on the linear index).
NEEDS_MULTI = frozenset(
    {
        Opcode.BROADCAST,
        Opcode.TRANSPOSE,
        Opcode.SLICE,
        Opcode.REVERSE,
        Opcode.PAD,
        Opcode.CONCATENATE,
        Opcode.DYNAMIC_SLICE,
        Opcode.DYNAMIC_UPDATE_SLICE,
        Opcode.IOTA,
        Opcode.GATHER,
    }
)
INDEX_MAPPED = NEEDS_MULTI | {Opcode.RESHAPE, Opcode.BITCAST_CONVERT}

ElementOf = Callable[["FusedEmitter", Instruction, Index], ir.Value]
FUSED_ELEMENTS: OpRegistry[Opcode, ElementOf] = OpRegistry("fused element generator")
"""The ops the fused emitter generates itself (loads, constants, index maps, map); any other
elementwise op goes to the elemental emitters (elemental.ELEMENTAL_EMITTERS)."""
fused_element = FUSED_ELEMENTS.register  # @fused_element(Opcode.X) above an op's generator


def supports_instruction(instr: Instruction) -> bool:
    """Whether the generator can produce elements of ``instr`` inside a fused loop."""
    op = instr.opcode
    if not instr.shape.is_array or not is_element_dtype(instr.shape.dtype):
        return False
    if any(not o.shape.is_array or not is_element_dtype(o.shape.dtype) for o in instr.operands):
        return False
    if op in (Opcode.PARAMETER, Opcode.CONSTANT) or op in INDEX_MAPPED - {Opcode.BITCAST_CONVERT}:
        return True
    if op is Opcode.MAP:
        comp = instr.attrs["to_apply"]
        return all(
            i.opcode in (Opcode.PARAMETER, Opcode.CONSTANT) or (i.is_elementwise and can_emit(i))
            for i in comp.instructions
        )
    if op is Opcode.BITCAST_CONVERT and (
        instr.shape.dtype.bits != instr.operands[0].shape.dtype.bits
    ):
        return False
    return instr.is_elementwise and can_emit(instr)


def needs_multi(comp: Computation) -> bool:
    """True when some instruction needs per-dimension indices (a loop nest, not a flat loop)."""
    for instr in comp.instructions:
        if instr.opcode is Opcode.BROADCAST and instr.operands[0].shape.rank == 0:
            continue
        if instr.opcode in NEEDS_MULTI:
            return True
    return False


class FusedEmitter:
    """Generates elements of the instructions of ``comp``; parameter k reads ``params[k]``."""

    def __init__(self, ctx: IrContext, comp: Computation, params: list[ir.Value]):
        self.ctx = ctx
        self.comp = comp
        self.params = params
        self._cache: dict[tuple[Instruction, Index], tuple[Index, ir.Value]] = {}
        self._globals: dict[Instruction, ir.GlobalVariable] = {}
        # (function, parameter) -> value
        self._scalars: dict[tuple[ir.Function, Instruction], ir.Value] = {}

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    def reset(self) -> None:
        """Forget memoized values (call when leaving the block they were emitted in)."""
        self._cache.clear()

    def provide(self, instr: Instruction, index: Index, value: ir.Value) -> None:
        """Use ``value`` as ``instr``'s element at ``index`` (a reduction's result, computed
        elsewhere, that an epilogue reads; valid until the next reset)."""
        self._cache[(instr, index)] = (index, value)

    def value(self, instr: Instruction, index: Index) -> ir.Value:
        key = (instr, index)
        hit = self._cache.get(key)
        if hit is not None:
            return hit[1]
        result = self._emit(instr, index)
        self._cache[key] = (index, result)
        return result

    # -- dispatch ------------------------------------------------------------------------------
    def _emit(self, instr: Instruction, index: Index) -> ir.Value:
        handler = FUSED_ELEMENTS.get(instr.opcode)
        if handler is not None:
            return handler(self, instr, index)
        if instr.is_elementwise:
            values = [self.value(o, self._same(o, index)) for o in instr.operands]
            return emit_elementwise(self.ctx, instr, values)
        raise Unimplemented(f"fused loop cannot generate {instr.opcode.value} ({instr.name})")

    @fused_element(Opcode.PARAMETER)
    def _parameter(self, instr: Instruction, index: Index) -> ir.Value:
        ptr = self.params[instr.parameter_number]
        if instr.shape.rank == 0:
            return self._scalar_parameter(instr, ptr)
        return load_element(self.b, instr.shape.dtype, ptr, index.linear)

    @fused_element(Opcode.IOTA)
    def _iota(self, instr: Instruction, index: Index) -> ir.Value:
        pos = index.multi[instr.attrs["iota_dimension"]]
        return convert_value(self.ctx, pos, _S64, instr.shape.dtype)

    @fused_element(Opcode.MAP)
    def _map(self, instr: Instruction, index: Index) -> ir.Value:
        values = [self.value(o, self._same(o, index)) for o in instr.operands]
        return emit_scalar_computation(self.ctx, instr.attrs["to_apply"], values)[0]

    def _scalar_parameter(self, instr: Instruction, ptr: ir.Value) -> ir.Value:
        """A scalar parameter is loaded once, in the function's entry block: everything computed
        from it alone is then visibly loop-invariant and LLVM hoists it out of the loops (a
        pow or atan2 of broadcast scalars is computed once per call, not per element, and the
        vectorizer never analyses it: its uniformity walk is exponential on such chains)."""
        b = self.b
        key = (b.function, instr)
        value = self._scalars.get(key)
        if value is None:
            with b.goto_entry_block():  # before its terminator, if it has one; then back
                value = load_element(b, instr.shape.dtype, ptr, i64(0))
            self._scalars[key] = value
        return value

    def _same(self, operand: Instruction, index: Index) -> Index:
        """Index for an elementwise operand: the same, or the scalar index for a rank-0 one."""
        if operand.shape.dims == index.dims:
            return index
        if operand.shape.rank == 0:
            return Index.scalar(self.b)
        raise Unimplemented(
            f"elementwise operand {operand.name} has dims {operand.shape.dims}, "
            f"expected {index.dims}"
        )

    @fused_element(Opcode.CONSTANT)
    def _constant(self, instr: Instruction, index: Index) -> ir.Value:
        literal = np.asarray(instr.literal)
        dt = instr.shape.dtype
        if literal.size == 1 or (
            literal.size > 0 and np.all(literal == literal.flat[0]) and literal.dtype.kind in "biu"
        ):
            return constant(dt, literal.flat[0])
        gv = self._globals.get(instr)
        if gv is None:
            gv = self._global_array(instr, literal)
            self._globals[instr] = gv
        return load_element(self.b, dt, gv, index.linear)

    def _global_array(self, instr: Instruction, literal: np.ndarray) -> ir.GlobalVariable:
        dt = instr.shape.dtype
        st = storage_type(dt)
        flat = np.ascontiguousarray(literal).reshape(-1)
        if dt.is_complex:
            elems = complex_elements(dt, flat)
        elif dt.is_pred or dt.is_integer:
            raw = (
                flat.astype(dt.numpy).view(f"u{max(dt.itemsize, 1)}")
                if not dt.is_pred
                else flat.astype(np.uint8)
            )
            elems = [ir.Constant(st, int(v)) for v in raw]
        elif isinstance(st, ir.IntType):  # bf16 and float8 stored as their bits
            elems = [ir.Constant(st, int(v)) for v in flat.view(f"u{dt.itemsize}")]
        else:
            elems = [ir.Constant(st, float(v)) for v in flat.astype(np.float64)]
        arr_t = ir.ArrayType(st, len(elems))
        module = self.ctx.module
        gv = ir.GlobalVariable(
            module,
            arr_t,
            module.get_unique_name(f"const_{instr.name}"),
            addrspace=self.ctx.target.address_spaces.constant,
        )
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(arr_t, elems)
        return gv

    # -- index maps ----------------------------------------------------------------------------
    @fused_element(Opcode.BROADCAST)
    def _broadcast(self, instr, index):
        operand = instr.operands[0]
        if operand.shape.rank == 0:
            return self.value(operand, Index.scalar(self.b))
        dims = instr.attrs["dimensions"]
        multi = [index.multi[d] for d in dims]
        return self.value(operand, Index(self.b, operand.shape.dims, multi=multi))

    @fused_element(Opcode.RESHAPE)
    def _reshape(self, instr, index):
        operand = instr.operands[0]
        return self.value(operand, Index(self.b, operand.shape.dims, linear=index.linear))

    @fused_element(Opcode.BITCAST_CONVERT)
    def _bitcast_convert(self, instr, index):
        operand = instr.operands[0]
        value = self.value(operand, self._same(operand, index))
        return emit_elementwise(self.ctx, instr, [value])

    @fused_element(Opcode.TRANSPOSE)
    def _transpose(self, instr, index):
        operand = instr.operands[0]
        perm = instr.attrs["dimensions"]
        multi = [None] * len(perm)
        for i, p in enumerate(perm):
            multi[p] = index.multi[i]
        return self.value(operand, Index(self.b, operand.shape.dims, multi=multi))

    @fused_element(Opcode.SLICE)
    def _slice(self, instr, index):
        b = self.b
        operand = instr.operands[0]
        multi = []
        for m, s in zip(index.multi, instr.attrs["slice"], strict=True):
            v = b.mul(m, i64(s.stride)) if s.stride != 1 else m
            multi.append(b.add(v, i64(s.start)) if s.start else v)
        return self.value(operand, Index(b, operand.shape.dims, multi=multi))

    @fused_element(Opcode.REVERSE)
    def _reverse(self, instr, index):
        b = self.b
        operand = instr.operands[0]
        dims = set(instr.attrs["dimensions"])
        pairs = enumerate(zip(index.multi, operand.shape.dims, strict=True))
        multi = [b.sub(i64(d - 1), m) if k in dims else m for k, (m, d) in pairs]
        return self.value(operand, Index(b, operand.shape.dims, multi=multi))

    @fused_element(Opcode.PAD)
    def _pad(self, instr, index):
        b = self.b
        operand, pad_value = instr.operands
        valid = None
        multi = []
        for m, p, size in zip(index.multi, instr.attrs["padding"], operand.shape.dims, strict=True):
            step = p.interior + 1
            t = b.sub(m, i64(p.low)) if p.low else m
            ok = b.and_(
                b.icmp_signed(">=", t, i64(0)), b.icmp_signed("<=", t, i64((size - 1) * step))
            )
            if step != 1:
                q = b.sdiv(t, i64(step))
                ok = b.and_(ok, b.icmp_signed("==", b.srem(t, i64(step)), i64(0)))
            else:
                q = t
            q = _clamp_index(b, q, size)
            multi.append(q)
            valid = ok if valid is None else b.and_(valid, ok)
        pad = self.value(pad_value, Index.scalar(b))
        if operand.shape.size == 0:
            return pad
        inner = self.value(operand, Index(b, operand.shape.dims, multi=multi))
        return b.select(valid, inner, pad) if valid is not None else inner

    @fused_element(Opcode.CONCATENATE)
    def _concatenate(self, instr, index):
        b = self.b
        dim = instr.attrs["dimensions"][0]
        pos = index.multi[dim]
        result = None
        offset = 0
        pieces = []
        for operand in instr.operands:
            size = operand.shape.dims[dim]
            if size:
                pieces.append((operand, offset, size))
            offset += size
        if not pieces:  # every operand empty along ``dim``: so is the result; never read
            return constant(instr.shape.dtype, 0)
        for operand, start, size in reversed(pieces):
            local = _clamp_index(b, b.sub(pos, i64(start)), size)
            multi = list(index.multi)
            multi[dim] = local
            v = self.value(operand, Index(b, operand.shape.dims, multi=multi))
            if result is None:
                result = v
            else:
                result = b.select(b.icmp_signed("<", pos, i64(start + size)), v, result)
        return result

    def _start_indices(self, operands, dims, sizes) -> list[ir.Value]:
        b = self.b
        out = []
        for start_instr, dim, size in zip(operands, dims, sizes, strict=True):
            raw = self.value(start_instr, Index.scalar(b))
            dt = start_instr.shape.dtype
            wide = _to_i64(b, raw, dt)
            hi = i64(dim - size)
            if dt.is_unsigned_integer and dt.bits == 64:
                big = b.icmp_unsigned(">", wide, hi)
            else:
                big = b.icmp_signed(">", wide, hi)
            wide = b.select(big, hi, wide)
            if not dt.is_unsigned_integer:
                wide = b.select(b.icmp_signed("<", wide, i64(0)), i64(0), wide)
            out.append(wide)
        return out

    @fused_element(Opcode.DYNAMIC_SLICE)
    def _dynamic_slice(self, instr, index):
        b = self.b
        operand = instr.operands[0]
        starts = self._start_indices(
            instr.operands[1:], operand.shape.dims, instr.attrs["dynamic_slice_sizes"]
        )
        multi = [b.add(m, s) for m, s in zip(index.multi, starts, strict=True)]
        return self.value(operand, Index(b, operand.shape.dims, multi=multi))

    @fused_element(Opcode.GATHER)
    def _gather(self, instr, index):
        return emit_gather(self, instr, index)

    @fused_element(Opcode.DYNAMIC_UPDATE_SLICE)
    def _dynamic_update_slice(self, instr, index):
        b = self.b
        operand, update = instr.operands[:2]
        starts = self._start_indices(instr.operands[2:], operand.shape.dims, update.shape.dims)
        inside = None
        multi = []
        for m, s, size in zip(index.multi, starts, update.shape.dims, strict=True):
            local = b.sub(m, s)
            ok = b.and_(b.icmp_signed(">=", local, i64(0)), b.icmp_signed("<", local, i64(size)))
            inside = ok if inside is None else b.and_(inside, ok)
            multi.append(_clamp_index(b, local, size))
        base = self.value(operand, index)
        if update.shape.size == 0:
            return base
        new = self.value(update, Index(b, update.shape.dims, multi=multi))
        return b.select(inside, new, base) if inside is not None else new


def _to_i64(b: ir.IRBuilder, value: ir.Value, dt) -> ir.Value:
    if value.type.width == 64:
        return value
    return b.sext(value, I64) if dt.is_signed_integer else b.zext(value, I64)


def _clamp_index(b: ir.IRBuilder, value: ir.Value, size: int) -> ir.Value:
    value = b.select(b.icmp_signed("<", value, i64(0)), i64(0), value)
    return b.select(b.icmp_signed(">", value, i64(size - 1)), i64(max(size - 1, 0)), value)


def emit_scalar_computation(
    ctx: IrContext, comp: Computation, args: list[ir.Value]
) -> list[ir.Value]:
    """Inline a computation on scalars (a reducer, a map body); returns its results in order."""
    env: dict[Instruction, ir.Value] = {}
    for instr in comp.reachable_from_root():
        op = instr.opcode
        if op is Opcode.PARAMETER:
            env[instr] = args[instr.parameter_number]
        elif op is Opcode.CONSTANT:
            env[instr] = constant(instr.shape.dtype, np.asarray(instr.literal).reshape(-1)[0])
        elif op is Opcode.TUPLE:
            continue
        elif op in (Opcode.BROADCAST, Opcode.RESHAPE, Opcode.COPY) and instr.shape.rank == 0:
            env[instr] = env[instr.operands[0]]
        elif instr.is_elementwise:
            env[instr] = emit_elementwise(ctx, instr, [env[o] for o in instr.operands])
        else:
            raise Unimplemented(f"scalar computation {comp.name}: {op.value} is not elementwise")
    root = comp.root
    if root.opcode is Opcode.TUPLE:
        return [env[o] for o in root.operands]
    return [env[root]]


def supports_scalar_computation(comp: Computation) -> bool:
    for instr in comp.instructions:
        if instr.opcode in (Opcode.PARAMETER, Opcode.CONSTANT):
            if not instr.shape.is_array or instr.shape.rank != 0:
                return False
            if not is_element_dtype(instr.shape.dtype):
                return False
            continue
        if instr.opcode is Opcode.TUPLE and instr is comp.root:
            continue
        if instr.opcode in (Opcode.BROADCAST, Opcode.RESHAPE) and instr.shape.rank == 0:
            continue
        if not (instr.is_elementwise and can_emit(instr)):
            return False
        if instr.shape.rank != 0:
            return False
    return True


__all__ = ["FUSED_ELEMENTS", "FusedEmitter", "emit_scalar_computation", "supports_instruction"]
