"""The native fast path for small while loops: plan the arena, then one ctypes call per loop.

A while whose condition and body hold only compiled kernels and structure (parameter, tuple,
get-tuple-element, constant), and whose state plus temporaries fit in ``ARENA_LIMIT`` bytes, runs
as one LLVM driver (``hlort.codegen.llvm.while_driver``): no Python, no allocation and no ctypes
call per iteration. The plan is pure data computed from the module and the kernels' infos, so a
compile-cache hit recomputes it without emitting any IR. Every other loop runs on the Python
path (``control_flow.WhileThunk``) with its condition and body compiled as programs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hlort.codegen.llvm.kernel_builder import KernelInfo
from hlort.codegen.llvm.while_driver import (
    ARENA_ALIGN,
    BufferRef,
    ByteCopy,
    KernelCall,
    WhileDriverPlan,
)
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, Shape, TupleShape

ARENA_LIMIT = 64 * 1024  # state + temporaries, on the driver's stack; larger: the Python path

Tree = BufferRef | tuple  # a value: one buffer, or a tuple of values


@dataclass(frozen=True)
class NativeWhile:
    """A planned native loop: the driver's plan and what its thunk passes to it."""

    plan: WhileDriverPlan
    state_shape: Shape
    leaf_shapes: tuple[ArrayShape, ...]
    output_offsets: tuple[int, ...]  # of each output leaf in the output block
    output_bytes: int
    constants: tuple[np.ndarray, ...]  # pointer arguments len(leaf_shapes) + 1 onwards
    kernels: tuple[Instruction, ...]  # the condition's and body's kernel instructions


class _Arena:
    """Bump allocation of aligned byte ranges in one block (the arena, or the output block)."""

    def __init__(self, arg: int | None = None, align: int = ARENA_ALIGN) -> None:
        self.arg, self.align, self.size = arg, align, 0

    def take(self, nbytes: int) -> BufferRef:
        at = -(-self.size // self.align) * self.align
        self.size = at + nbytes
        return BufferRef(self.arg, at)


def plan_native_whiles(orders: dict, names: list[str], to_compile: list, infos: list,
                       prefix: str) -> dict[int, NativeWhile]:  # fmt: skip
    """Native plans of every while in ``orders`` that qualifies, by ``id`` of the while.

    ``names`` and ``to_compile`` pair kernel names with their instructions; ``infos`` are the
    kernel module's infos (fresh or from the cache). Driver names follow the order of
    ``orders``, so a cache hit plans the same symbols the cached object defines.
    """
    info_by_name = {info.name: info for info in infos if isinstance(info, KernelInfo)}
    kernel_of = {id(instr): (name, info_by_name[name])
                 for name, (instr, _) in zip(names, to_compile, strict=True)}  # fmt: skip

    def order_of(comp: Computation) -> list[Instruction]:
        return orders[id(comp)][1]

    natives: dict[int, NativeWhile] = {}
    for _, order in orders.values():
        for instr in order:
            if instr.opcode is Opcode.WHILE:
                native = plan_native_while(instr, f"{prefix}_w{len(natives)}", order_of,
                                           kernel_of)  # fmt: skip
                if native is not None:
                    natives[id(instr)] = native
    return natives


def plan_native_while(
    instr: Instruction,
    name: str,
    order_of: Callable[[Computation], list[Instruction]],
    kernel_of: dict[int, tuple[str, KernelInfo]],
) -> NativeWhile | None:
    """The native plan for ``instr``, or None when the loop must take the Python path."""
    state_shape = instr.operands[0].shape
    leaves = state_shape.leaf_shapes()
    if not all(isinstance(s, ArrayShape) for s in leaves):
        return None
    n = len(leaves)
    arena = _Arena()
    state = [arena.take(s.nbytes) for s in leaves]
    planner = _ComputationPlanner(arena, order_of, kernel_of, first_constant_arg=n + 1)
    cond = planner.plan(instr.attrs["condition"], _tree(state_shape, iter(state)))
    if cond is None or not isinstance(cond[0], BufferRef):
        return None
    predicate, cond_calls = cond
    body = planner.plan(instr.attrs["body"], _tree(state_shape, iter(state)))
    if body is None:
        return None
    root, body_calls = body
    next_state = _leaves(root)
    if len(next_state) != n or arena.size > ARENA_LIMIT:
        return None
    update = _update(arena, state, next_state, leaves)
    if arena.size > ARENA_LIMIT:
        return None
    output_block = _Arena(arg=n, align=16)
    outputs = [output_block.take(leaf.nbytes) for leaf in leaves]
    plan = WhileDriverPlan(
        name=name, arena_bytes=arena.size,
        enter=tuple(ByteCopy(s, BufferRef(k), leaf.nbytes)
                    for k, (s, leaf) in enumerate(zip(state, leaves, strict=True))),
        condition=tuple(cond_calls), predicate=predicate, body=tuple(body_calls),
        update=tuple(update),
        leave=tuple(ByteCopy(o, s, leaf.nbytes)
                    for o, s, leaf in zip(outputs, state, leaves, strict=True)),
    )  # fmt: skip
    return NativeWhile(plan, state_shape, tuple(leaves), tuple(o.offset for o in outputs),
                       output_block.size, tuple(planner.constants),
                       tuple(planner.kernels))  # fmt: skip


def _update(arena: _Arena, state: list[BufferRef], next_state: list[BufferRef],
            leaves: list[ArrayShape]) -> list[ByteCopy]:  # fmt: skip
    """Copies that make ``next_state`` the state; a leaf taken from another state leaf (a swap
    or rotation) is saved into a temporary first, so no copy reads an overwritten leaf."""
    saved, rest = [], []
    state_set = set(state)
    for dst, src, leaf in zip(state, next_state, leaves, strict=True):
        if src == dst:
            continue
        if src in state_set:
            temp = arena.take(leaf.nbytes)
            saved.append(ByteCopy(temp, src, leaf.nbytes))
            src = temp
        rest.append(ByteCopy(dst, src, leaf.nbytes))
    return saved + rest


class _ComputationPlanner:
    """Walks a condition or body: values become buffers, kernels become calls."""

    def __init__(self, arena: _Arena, order_of, kernel_of, first_constant_arg: int):
        self.arena, self.order_of, self.kernel_of = arena, order_of, kernel_of
        self.first_constant_arg = first_constant_arg
        self.constants: list[np.ndarray] = []
        self.kernels: list[Instruction] = []

    def plan(self, comp: Computation, param: Tree) -> tuple[Tree, list[KernelCall]] | None:
        values: dict[int, Tree] = {}
        calls: list[KernelCall] = []
        for instr in self.order_of(comp):
            op = instr.opcode
            if op is Opcode.PARAMETER:
                value = param
            elif op is Opcode.GET_TUPLE_ELEMENT:
                value = values[id(instr.operands[0])][instr.attrs["index"]]
            elif op is Opcode.TUPLE:
                value = tuple(values[id(o)] for o in instr.operands)
            elif op is Opcode.CONSTANT:
                if not isinstance(instr.shape, ArrayShape):
                    return None
                value = BufferRef(self.first_constant_arg + len(self.constants))
                self.constants.append(np.ascontiguousarray(instr.literal,
                                                           instr.shape.dtype.numpy))  # fmt: skip
            else:
                value = self._kernel(instr, values, calls)
                if value is None:
                    return None
            values[id(instr)] = value
        return values[id(comp.root)], calls

    def _kernel(self, instr: Instruction, values: dict, calls: list[KernelCall]) -> Tree | None:
        entry = self.kernel_of.get(id(instr))
        if entry is None:
            return None
        name, info = entry
        ins = [values[id(o)] for o in instr.operands]
        if not all(isinstance(v, BufferRef) for v in ins):
            return None
        outs = [self.arena.take(s.nbytes) for s in info.output_shapes]
        scratch = []
        if info.split:
            scratch = [self.arena.take(info.extent * info.output_shapes[0].dtype.numpy.itemsize)]
        if info.scratch_bytes:  # sort: one region (the driver runs the whole range at once)
            scratch.append(self.arena.take(info.scratch_bytes))
        calls.append(KernelCall(name, tuple(ins + outs + scratch), info.extent, info.split))
        self.kernels.append(instr)
        if isinstance(instr.shape, TupleShape):
            if any(not isinstance(e, ArrayShape) for e in instr.shape.elements):
                return None
            return tuple(outs)
        return outs[0]


def _tree(shape: Shape, leaves) -> Tree:
    if isinstance(shape, TupleShape):
        return tuple(_tree(s, leaves) for s in shape.elements)
    return next(leaves)


def _leaves(tree: Tree) -> list[BufferRef]:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


class NativeWhileThunk:
    """One ctypes call runs the whole loop; the outputs are views of one fresh output block."""

    def __init__(self, native: NativeWhile, driver, ins: list[int], out: int):
        self.driver = driver
        self.state_slot, self.out = ins[0], out
        self.state_shape = native.state_shape
        self.out_specs = [(s.dims, s.dtype.numpy, offset)
                          for s, offset in zip(native.leaf_shapes, native.output_offsets,
                                               strict=True)]  # fmt: skip
        self.output_bytes = native.output_bytes
        self.constants = native.constants  # kept alive: the driver reads them by address
        self.constant_addresses = [c.ctypes.data for c in native.constants]
        n_args = len(native.leaf_shapes) + 1 + len(native.constants)
        self.pointer_array_type = ctypes.c_void_p * n_args

    def __call__(self, env) -> None:
        inputs = _flatten(env[self.state_slot])
        for k, a in enumerate(inputs):
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                inputs[k] = np.ascontiguousarray(a)
        block = np.empty(self.output_bytes, np.uint8)
        pointers = self.pointer_array_type(*[a.ctypes.data for a in inputs], block.ctypes.data,
                                           *self.constant_addresses)  # fmt: skip
        self.driver(pointers, 0, 1)
        outs = [np.ndarray(dims, dtype, block, offset) for dims, dtype, offset in self.out_specs]
        env[self.out] = _assemble(self.state_shape, iter(outs))


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _assemble(shape: Shape, leaves):
    if isinstance(shape, TupleShape):
        return tuple(_assemble(s, leaves) for s in shape.elements)
    return next(leaves)
