"""The native fast path for while loops: plan where every value lives, then one ctypes call
runs the whole loop.

A while whose condition and body hold only compiled kernels, dots that are plain f32/f64 BLAS
(native_dot.py: the driver calls NumPy's own gemm through a function pointer), in-place
dynamic-update-slices and structure (parameter, tuple, get-tuple-element, constant) runs as one
LLVM driver (``hlort_cpu.codegen.while_driver``): no Python, no allocation and no ctypes call per
iteration. Kernels run single-threaded there, so a loop with a kernel big enough for the thread
pool to split (``thread_pool.PARALLEL_MIN_ELEMENTS``) stays on the Python path, where it is split.

Where values live: a state leaf the body passes through unchanged is read from the loop's input
buffer (and is the loop's output, as on the Python path). So is a leaf whose initial value is a
kernel's fresh result that nothing reads after the loop (``_owned_init_leaves``: a scan's
zero-filled output stack): the loop owns that buffer, updates it in place and hands it out.
Every other leaf lives in the fresh output block, so the state needs no copy on the way out.
A body that writes one slice of a state leaf (``dynamic-update-slice`` of a leaf read nowhere
else, as a scan stacks its outputs) writes it there in place, copying only the slice.
Temporaries live in an arena: on the driver's stack up to ``STACK_ARENA_LIMIT`` bytes, else a
block the thunk allocates per call. The plan is pure data computed from the module and the
kernels' infos, so a compile-cache hit recomputes it without emitting any IR. Every other loop
runs on the Python path (``control_flow.WhileThunk``) with its condition and body compiled as
programs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import OP_DEFS, Opcode
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort_cpu import blas_functions, blas_threads, thread_pool
from hlort_cpu.array_address import address
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import KernelInfo
from hlort_cpu.codegen.small_gemm import SmallDot
from hlort_cpu.codegen.while_driver import (
    ARENA_ALIGN,
    BufferRef,
    ByteCopy,
    KernelCall,
    WhileDriverPlan,
)
from hlort_cpu.codegen.while_steps import SliceUpdate
from hlort_cpu.native_dot import gemm_dtype, plan_dot
from hlort_cpu.spin_pool import native_pool
from hlort_cpu.thread_pool import worker_count

STACK_ARENA_LIMIT = 64 * 1024  # temporaries on the driver's stack; larger: a block per call
# A kernel evaluating this many transcendentals per call (~5 us on one core: an LSTM cell's
# gates, 16 x 128 x 5, took 6.5) runs in two halves on the pool (while_driver_pool.py).
POOL_MIN_TRANSCENDENTALS = 1 << 13
code_settings.declare(__name__, "STACK_ARENA_LIMIT", "POOL_MIN_TRANSCENDENTALS")

Tree = BufferRef | tuple  # a value: one buffer, or a tuple of values


@dataclass(frozen=True)
class NativeWhile:
    """A planned native loop: the driver's plan and what its thunk passes to it.

    Pointer arguments: the input leaves, the output block, the arena block (null when the arena
    is on the stack), then ``pointers`` (constants' arrays and BLAS function addresses)."""

    plan: WhileDriverPlan
    state_shape: Shape
    leaf_shapes: tuple[ArrayShape, ...]
    output_offsets: tuple[int | None, ...]  # in the output block; None: the input leaf itself
    output_bytes: int
    pointers: tuple[np.ndarray | int, ...]
    steps: tuple[tuple[Instruction, str | None], ...]  # what runs natively, with its label
    pool_slots: tuple[int, int] | None = None  # in pointers: filled per call (pool state, run)


class _Arena:
    """Bump allocation of aligned byte ranges in one block (the arena, or the output block)."""

    def __init__(self, arg: int | None = None, align: int = ARENA_ALIGN) -> None:
        self.arg, self.align, self.size = arg, align, 0

    def take(self, nbytes: int) -> BufferRef:
        at = -(-self.size // self.align) * self.align
        self.size = at + nbytes
        return BufferRef(self.arg, at)


def plan_native_whiles(
    orders: dict, names: list[str], to_compile: list, infos: list, prefix: str
) -> dict[Instruction, NativeWhile]:
    """Native plans of every while in ``orders`` that qualifies, by ``id`` of the while.

    ``names`` and ``to_compile`` pair kernel names with their instructions; ``infos`` are the
    kernel module's infos (fresh or from the cache). Driver names follow the order of
    ``orders``, so a cache hit plans the same symbols the cached object defines.
    """
    info_by_name = {info.name: info for info in infos if isinstance(info, KernelInfo)}
    kernel_of = {
        instr: (name, info_by_name[name])
        for name, (instr, _) in zip(names, to_compile, strict=True)
    }

    def order_of(comp: Computation) -> list[Instruction]:
        return orders[comp][1]

    natives: dict[Instruction, NativeWhile] = {}
    for comp, order in orders.values():
        readers = _readers(order)
        for instr in order:
            if instr.opcode is Opcode.WHILE:
                owned = _owned_init_leaves(instr, comp, readers, kernel_of)
                name = f"{prefix}_w{len(natives)}"
                native = plan_native_while(instr, name, order_of, kernel_of, owned)
                if native is not None:
                    natives[instr] = native
    return natives


def _readers(order: list[Instruction]) -> dict[Instruction, list[Instruction]]:
    """Each instruction's readers, once per operand position (a tuple reading x twice: twice)."""
    readers: dict[Instruction, list[Instruction]] = {}
    for instr in order:
        for o in instr.operands:
            readers.setdefault(o, []).append(instr)
    return readers


def _owned_init_leaves(
    loop: Instruction,
    comp: Computation,
    readers: dict[Instruction, list[Instruction]],
    kernel_of: dict[Instruction, tuple[str, KernelInfo]],
) -> frozenset[int]:
    """Leaves of ``loop``'s initial state whose buffer the loop may take as its own state.

    Leaf k qualifies when the init is a tuple only the loop reads, and its element k is the
    array result of a compiled kernel that only this tuple reads, once, and that is not the
    computation's result. A kernel thunk's result is then a fresh array (never a parameter, a
    constant or a view of one; the arena holds no value a tuple reads, arena.py) and no step
    reads it after the loop: updating it in place is invisible, and no copy into the state is
    needed. Parameters are never taken, donated or not: the caller may read its buffer again."""
    init = loop.operands[0]
    if init.opcode is not Opcode.TUPLE or readers.get(init) != [loop] or init is comp.root:
        return frozenset()
    return frozenset(
        k
        for k, element in enumerate(init.operands)
        if element in kernel_of
        and isinstance(element.shape, ArrayShape)
        and readers.get(element) == [init]
        and element is not comp.root
    )


def plan_native_while(
    instr: Instruction,
    name: str,
    order_of: Callable[[Computation], list[Instruction]],
    kernel_of: dict[Instruction, tuple[str, KernelInfo]],
    owned: frozenset[int] = frozenset(),
) -> NativeWhile | None:
    """The native plan for ``instr``, or None when the loop must take the Python path.
    ``owned``: leaves whose input buffer the loop may update in place (_owned_init_leaves)."""
    state_shape = instr.operands[0].shape
    leaves = state_shape.leaf_shapes()
    if not all(isinstance(s, ArrayShape) for s in leaves):
        return None
    n = len(leaves)
    body_comp = instr.attrs["body"]
    passed, in_place = _state_uses(body_comp, order_of(body_comp), n)
    in_input = passed | owned  # leaves that live in the loop's input buffer
    output_block = _Arena(arg=n)
    state = [
        BufferRef(k) if k in in_input else output_block.take(s.nbytes) for k, s in enumerate(leaves)
    ]
    arena = _Arena()
    planner = _ComputationPlanner(name, arena, order_of, kernel_of, first_pointer_arg=n + 2)
    cond = planner.plan(instr.attrs["condition"], _tree(state_shape, iter(state)), {})
    if cond is None or not isinstance(cond[0], BufferRef):
        return None
    predicate, cond_steps = cond
    body = planner.plan(body_comp, _tree(state_shape, iter(state)), in_place)
    if body is None:
        return None
    root, body_steps = body
    next_state = _leaves(root)
    if len(next_state) != n:
        return None
    update = _update(arena, state, next_state, leaves)
    on_stack = arena.size <= STACK_ARENA_LIMIT
    plan = WhileDriverPlan(
        name=name,
        arena_bytes=arena.size,
        enter=tuple(
            ByteCopy(s, BufferRef(k), leaf.nbytes)
            for k, (s, leaf) in enumerate(zip(state, leaves, strict=True))
            if k not in in_input
        ),
        condition=tuple(cond_steps),
        predicate=predicate,
        body=tuple(body_steps),
        update=tuple(update),
        leave=(),
        arena_arg=None if on_stack else n + 1,
    )
    offsets = tuple(None if k in in_input else ref.offset for k, ref in enumerate(state))
    return NativeWhile(
        plan,
        state_shape,
        tuple(leaves),
        offsets,
        output_block.size,
        tuple(planner.pointers),
        tuple(planner.steps),
        planner.pool_slots,
    )


def _state_uses(
    body: Computation, order: list[Instruction], n: int
) -> tuple[set[int], dict[Instruction, int]]:
    """Which state leaves the body passes through unchanged (leaf numbers), and which
    dynamic-update-slices may write their state leaf in place (instruction -> leaf number).

    Only a flat tuple state is analysed: leaf k is get-tuple-element k of the parameter. A leaf
    passes through when the root's element k is that get-tuple-element. A dynamic-update-slice
    at the root's element k updates leaf k in place when its operand is get-tuple-element k and
    nothing else reads the leaf (one get-tuple-element of it, whose only reader is the update),
    so no step can see the leaf's old value after the update wrote it."""
    root = body.root
    param = body.parameters[0] if body.parameters else None
    if (
        param is None
        or root.opcode is not Opcode.TUPLE
        or len(root.operands) != n
        or not isinstance(param.shape, TupleShape)
        or len(param.shape.elements) != n
    ):
        return set(), {}
    readers = _readers(order)
    if any(r.opcode is not Opcode.GET_TUPLE_ELEMENT for r in readers.get(param, [])):
        return set(), {}
    extracts: dict[int, list[Instruction]] = {}
    for r in readers.get(param, []):
        extracts.setdefault(r.attrs["index"], []).append(r)
    passed, in_place = set(), {}
    for k, element in enumerate(root.operands):
        if element.opcode is Opcode.GET_TUPLE_ELEMENT and element.operands[0] is param:
            if element.attrs["index"] == k:
                passed.add(k)
        elif element.opcode is Opcode.DYNAMIC_UPDATE_SLICE:
            operand = element.operands[0]
            if (
                extracts.get(k) == [operand]
                and operand.attrs["index"] == k
                and readers.get(operand) == [element]
                and sum(e is element for e in root.operands) == 1
            ):
                in_place[element] = k
    return passed, in_place


def _update(
    arena: _Arena, state: list[BufferRef], next_state: list[BufferRef], leaves: list[ArrayShape]
) -> list[ByteCopy]:
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
    """Walks a condition or body: values become buffers, kernels, dots and in-place updates
    become steps."""

    def __init__(self, name: str, arena: _Arena, order_of, kernel_of, first_pointer_arg: int):
        self.name, self.arena, self.order_of, self.kernel_of = name, arena, order_of, kernel_of
        self.first_pointer_arg = first_pointer_arg
        self.pointers: list[np.ndarray | int] = []
        self.steps: list[tuple[Instruction, str | None]] = []
        self._function_args: dict[int, int] = {}
        self.pool_slots: tuple[int, int] | None = None  # in pointers: the pool's state, run

    def _pool_args(self) -> tuple[int, int]:
        """Two pointer arguments the thunk fills per call: the native pool's state and its
        dispatch function (null on one thread or without the pool)."""
        if self.pool_slots is None:
            first = len(self.pointers)
            self._pointer_arg(0)
            self._pointer_arg(0)
            self.pool_slots = (first, first + 1)
        return tuple(self.first_pointer_arg + slot for slot in self.pool_slots)

    def _pointer_arg(self, value: np.ndarray | int) -> int:
        self.pointers.append(value)
        return self.first_pointer_arg + len(self.pointers) - 1

    def plan(
        self, comp: Computation, param: Tree, in_place: dict[Instruction, int]
    ) -> tuple[Tree, list] | None:
        values: dict[Instruction, Tree] = {}
        steps: list = []
        for instr in self.order_of(comp):
            op = instr.opcode
            if op is Opcode.PARAMETER:
                value = param
            elif op is Opcode.GET_TUPLE_ELEMENT:
                value = values[instr.operands[0]][instr.attrs["index"]]
            elif op is Opcode.TUPLE:
                value = tuple(values[o] for o in instr.operands)
            elif op is Opcode.CONSTANT:
                if not isinstance(instr.shape, ArrayShape):
                    return None
                value = BufferRef(
                    self._pointer_arg(np.ascontiguousarray(instr.literal, instr.shape.dtype.numpy))
                )
            elif instr in in_place:
                value = self._slice_update(instr, values, steps)
            elif op is Opcode.DOT:
                value = self._dot(instr, values, steps)
            else:
                value = self._kernel(instr, values, steps)
            if value is None:
                return None
            values[instr] = value
        return values[comp.root], steps

    def _refs(self, instr: Instruction, values: dict) -> list[BufferRef] | None:
        ins = [values[o] for o in instr.operands]
        return ins if all(isinstance(v, BufferRef) for v in ins) else None

    def _kernel(self, instr: Instruction, values: dict, steps: list) -> Tree | None:
        entry = self.kernel_of.get(instr)
        if entry is None:
            return None
        name, info = entry
        ins = self._refs(instr, values)
        if ins is None or (
            info.extent >= 2
            and info.extent * info.elements_per_iteration >= thread_pool.PARALLEL_MIN_ELEMENTS
        ):
            return None  # big kernels run split across cores on the Python path
        outs = [self.arena.take(s.nbytes) for s in info.output_shapes]
        scratch = []
        if info.split:
            scratch = [self.arena.take(info.extent * info.output_shapes[0].dtype.numpy.itemsize)]
        if info.scratch_bytes:  # sort: one region (the driver runs the whole range at once)
            scratch.append(self.arena.take(info.scratch_bytes))
        pool = self._pool_args() if _pooled_kernel(instr, info) else None
        steps.append(KernelCall(name, tuple(ins + outs + scratch), info.extent, info.split, pool))
        self.steps.append((instr, None))
        if isinstance(instr.shape, TupleShape):
            if any(not isinstance(e, ArrayShape) for e in instr.shape.elements):
                return None
            return tuple(outs)
        return outs[0]

    def _dot(self, instr: Instruction, values: dict, steps: list) -> BufferRef | None:
        ins = self._refs(instr, values)
        dtype = gemm_dtype(instr)
        if ins is None or dtype is None:
            return None

        def function_arg() -> int:
            function = blas_functions.gemm(dtype == "f64")
            arg = self._function_args.get(function.address)
            if arg is None:
                arg = self._function_args[function.address] = self._pointer_arg(function.address)
            return arg

        out = self.arena.take(instr.shape.nbytes)
        step = plan_dot(
            instr,
            ins[0],
            ins[1],
            out,
            function_arg,
            f"{self.name}_dot{len(self.steps)}",
            self._pool_args,
        )
        if step is None:
            return None
        steps.append(step)
        small = isinstance(step, SmallDot)
        self.steps.append((instr, "dot (small matmul)" if small else "dot (BLAS)"))
        return out

    def _slice_update(self, instr: Instruction, values: dict, steps: list) -> BufferRef | None:
        ins = self._refs(instr, values)
        if ins is None:
            return None
        operand, update, *starts = instr.operands
        start_specs = tuple(
            (ref, o.shape.dtype.bits, o.shape.dtype.is_signed_integer)
            for ref, o in zip(ins[2:], starts, strict=True)
        )
        steps.append(
            SliceUpdate(
                ins[0],
                ins[1],
                start_specs,
                tuple(operand.shape.dims),
                tuple(update.shape.dims),
                operand.shape.dtype.numpy.itemsize,
            )
        )
        self.steps.append((instr, "dynamic-update-slice (in place)"))
        return ins[0]


def _pooled_kernel(instr: Instruction, info: KernelInfo) -> bool:
    """Whether ``instr``'s kernel runs in two halves on the pool: independent ranges (no split
    reduce, no scratch), two rows at least, and POOL_MIN_TRANSCENDENTALS evaluations in all."""
    if info.split or info.scratch_bytes or info.extent < 2:
        return False
    comp = instr.attrs["calls"] if instr.opcode is Opcode.FUSION else None
    body = comp.instructions if comp is not None else [instr]
    work = sum(
        i.shape.size
        for i in body
        if OP_DEFS[i.opcode].transcendental and isinstance(i.shape, ArrayShape)
    )
    return work >= POOL_MIN_TRANSCENDENTALS


def _tree(shape: Shape, leaves) -> Tree:
    if isinstance(shape, TupleShape):
        return tuple(_tree(s, leaves) for s in shape.elements)
    return next(leaves)


def _leaves(tree: Tree) -> list[BufferRef]:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def _pool_pointers() -> tuple[int, int]:
    """(state, dispatch) of the native pool for dots the driver splits; (0, 0) on one thread
    or where the pool cannot be built: the driver then runs them in one call."""
    workers = worker_count()
    pool = native_pool(workers - 1) if workers > 1 else None
    if pool is None or thread_pool.crowded(pool):
        return 0, 0
    return pool.state, pool.run_address


class NativeWhileThunk:
    """One ctypes call runs the whole loop; the outputs are views of one fresh output block
    (and the input leaves the body passes through)."""

    def __init__(self, native: NativeWhile, driver, ins: list[int], out: int):
        self.driver = driver
        self.state_slot, self.out = ins[0], out
        self.state_shape = native.state_shape
        self.out_specs = [
            (s.dims, s.dtype.numpy, offset)
            for s, offset in zip(native.leaf_shapes, native.output_offsets, strict=True)
        ]
        self.output_bytes = native.output_bytes
        self.pointers = native.pointers  # kept alive: the driver reads them by address
        self.pointer_values = [p if isinstance(p, int) else p.ctypes.data for p in native.pointers]
        self.pool_slots = native.pool_slots
        plan = native.plan
        self.arena_bytes = 0 if plan.arena_arg is None else plan.arena_bytes + ARENA_ALIGN
        n_args = len(native.leaf_shapes) + 2 + len(native.pointers)
        self.pointer_array_type = ctypes.c_void_p * n_args
        # a flat tuple of arrays (every JAX loop's state): its leaves are its elements
        shape = native.state_shape
        self.flat = isinstance(shape, TupleShape) and not any(
            isinstance(e, TupleShape) for e in shape.elements
        )

    def __call__(self, env) -> None:
        state = env[self.state_slot]
        inputs = list(state) if self.flat else _flatten(state)
        for k, a in enumerate(inputs):
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                inputs[k] = np.ascontiguousarray(a)
        block = np.empty(self.output_bytes, np.uint8)
        arena = None
        if self.arena_bytes:
            arena = np.empty(self.arena_bytes, np.uint8)
            base = address(arena)
            arena_address = base + (-base % ARENA_ALIGN)
        else:
            arena_address = None
        values = self.pointer_values
        if self.pool_slots is not None:
            values = list(values)
            values[self.pool_slots[0]], values[self.pool_slots[1]] = _pool_pointers()
        pointers = self.pointer_array_type(
            *[address(a) for a in inputs], address(block), arena_address, *values
        )
        with blas_threads.single_threaded():  # as the dot thunks: one BLAS thread
            self.driver(pointers, 0, 1)
        del arena
        outs = [
            inputs[k] if offset is None else np.ndarray(dims, dtype, block, offset)
            for k, (dims, dtype, offset) in enumerate(self.out_specs)
        ]
        env[self.out] = tuple(outs) if self.flat else _assemble(self.state_shape, iter(outs))


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _assemble(shape: Shape, leaves):
    if isinstance(shape, TupleShape):
        return tuple(_assemble(s, leaves) for s in shape.elements)
    return next(leaves)
