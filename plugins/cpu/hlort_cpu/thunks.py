"""Thunks: the steps of a compiled program, and the Program that runs them.

A Program is a flat list of callables over a slot environment, built once at compile time, so a
call does no per-op Python work beyond invoking each step. Kernel thunks allocate their outputs,
pass pointers to the kernel and split large kernels across cores.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.shape import Token, TokenShape, TupleShape
from hlort_cpu.arena import ArenaPlan
from hlort_cpu.array_address import address
from hlort_cpu.chunk_scratch import chunk_scratch
from hlort_cpu.device_run import SINGLE, DeviceRun, current, entered
from hlort_cpu.host_pool import POOL_MIN_BYTES, host_pool
from hlort_cpu.split_ranges import split_reduce_ranges
from hlort_cpu.step_groups import KERNEL, group_steps
from hlort_cpu.thread_pool import FILL_MIN_ELEMENTS, PARALLEL_MIN_ELEMENTS, chunks, run_chunks

_ALIGN = 64  # a kernel's scratch region starts on its own cache line


def _allocator(dims: tuple[int, ...], dtype: np.dtype, pool):
    """A fresh output: NumPy's for small arrays (malloc reuses them), the host pool's else."""
    small = math.prod(dims) * dtype.itemsize < POOL_MIN_BYTES
    return partial(np.empty, dims, dtype) if small else partial(pool.empty, dims, dtype)


class KernelThunk:
    """Run one compiled kernel. Its output is the arena view the program put in its slot, else
    a fresh array (a tuple of them for a tuple-shaped fusion). ``fill``: it reads at most
    scalars (a constant fill, an iota), so it splits across cores only from FILL_MIN_ELEMENTS.
    ``offset``: bytes added to the first input's address (a slice run by the kernel of the same
    slice from the origin, kernel_sharing.py)."""

    group_kind = KERNEL  # may run beside other steps (step_groups.py)

    def __init__(
        self,
        kernel,
        ins: list[int],
        out: int,
        is_tuple: bool,
        fill: bool = False,
        offset: int = 0,
    ):
        self.kernel = kernel
        self.offset = offset
        self.ins = ins
        self.out = out
        self.is_tuple = is_tuple
        info = kernel.info
        self.shapes = [(tuple(s.dims), np.dtype(s.dtype.numpy)) for s in info.output_shapes]
        self.pool = host_pool()
        least = FILL_MIN_ELEMENTS if fill else PARALLEL_MIN_ELEMENTS
        if info.split:  # many small ranges: a thread that runs ahead claims more
            self.ranges = split_reduce_ranges(info.extent, info.elements_per_iteration)
        else:
            self.ranges = chunks(info.extent, info.elements_per_iteration, least)
        self.fn = kernel.fn
        self.ptr_type = kernel.pointer_array_type
        self.empty = info.extent == 0
        self.split = info.split  # split full reduce: scratch partials, then combine
        self.scratch_bytes = info.scratch_bytes  # sort: a scratch region per chunk, last
        # One chunk, no scratch: the common small kernel (one output, or a fresh tuple of
        # them: an optimizer's update), called without the general path's lists and checks
        # (a few microseconds matter for tiny programs).
        self.simple = (
            (len(self.shapes) == 1 or is_tuple)
            and len(self.ranges) == 1
            and not self.empty
            and not self.split
            and not self.scratch_bytes
            and not offset
        )
        self.begin, self.end = self.ranges[0]
        self.work = info.extent * info.elements_per_iteration
        dims, dtype = self.shapes[0] if self.shapes else ((), np.dtype(np.uint8))
        self.new_output = _allocator(dims, dtype, self.pool)
        self.new_outputs = [_allocator(d, t, self.pool) for d, t in self.shapes]

    def __call__(self, env) -> None:
        given = env[self.out]  # an arena view, or None
        if self.simple:
            arrays = [env[i] for i in self.ins]
            if all(a.flags.c_contiguous for a in arrays):
                if not self.is_tuple:
                    out = self.new_output() if given is None else given
                    table = self.ptr_type(*[address(a) for a in arrays], address(out))
                    self.fn(table, self.begin, self.end)
                    env[self.out] = out
                    return
                if given is None:
                    outs = [new() for new in self.new_outputs]
                    arrays += outs
                    self.fn(self.ptr_type(*[address(a) for a in arrays]), self.begin, self.end)
                    env[self.out] = tuple(outs)
                    return
        if self.empty:
            outs = [new() for new in self.new_outputs] if given is None else [given]
            env[self.out] = tuple(outs) if self.is_tuple else outs[0]
            return
        ptrs, _keep = self._operands(env, given)
        run_chunks(self.fn, ptrs, self.ranges)
        if self.split:
            self.fn(ptrs, self.ranges[-1][1], self.ranges[-1][1] + 1)

    def _operands(self, env, given):
        """The pointer table (one per range for per-chunk scratch) and what it points at,
        with the outputs put in their slot."""
        outs = [new() for new in self.new_outputs] if given is None else [given]
        arrays = [env[i] for i in self.ins]
        for k, a in enumerate(arrays):
            if not a.flags.c_contiguous:
                arrays[k] = np.ascontiguousarray(a)
        extra = [np.empty(self.ranges[-1][1], outs[0].dtype)] if self.split else []
        addresses = [address(a) for a in arrays]
        if self.offset:
            addresses[0] += self.offset
        addresses += [address(o) for o in outs]
        addresses += [address(e) for e in extra]
        keep = (arrays, outs, extra)
        if self.scratch_bytes and len(self.ranges) == 1:  # one region, last in the table
            memory = np.empty(self.scratch_bytes + _ALIGN, np.uint8)
            start = address(memory)
            addresses.append(start + -start % _ALIGN)
            keep = (keep, memory)
        ptrs = self.ptr_type(*addresses)
        if self.scratch_bytes and len(self.ranges) > 1:
            ptrs, memory = chunk_scratch(self.ptr_type, ptrs, self.ranges, self.scratch_bytes)
            keep = (keep, memory)
        env[self.out] = tuple(outs) if self.is_tuple else outs[0]
        return ptrs, keep

    @property
    def groupable(self) -> bool:
        """Whether :meth:`native_parts` can run it (a split reduce needs a second pass)."""
        return not self.empty and not self.split

    def native_parts(self, env, whole: bool = False):
        """For a step group (step_groups.py): (kernel, pointer tables, ranges, what to keep
        alive), the outputs already in their slot. ``whole`` is for dots; a kernel keeps its
        ranges."""
        ptrs, keep = self._operands(env, env[self.out])
        return self.fn, ptrs, self.ranges, keep


class FallbackThunk:
    """FALLBACK: one op on the reference interpreter (counted in Program.stats())."""

    def __init__(self, evaluator, fn, instr: Instruction, ins: list[int], out: int):
        self.evaluator, self.fn, self.instr, self.ins, self.out = evaluator, fn, instr, ins, out

    def __call__(self, env) -> None:
        env[self.out] = self.fn(self.evaluator, self.instr, *[env[i] for i in self.ins])


class FusionFallbackThunk:
    """FALLBACK: a fusion the emitter cannot compile yet, run by the interpreter."""

    def __init__(self, evaluator, comp, ins: list[int], out: int):
        self.evaluator, self.comp, self.ins, self.out = evaluator, comp, ins, out

    def __call__(self, env) -> None:
        env[self.out] = self.evaluator.call(self.comp, [env[i] for i in self.ins])


class Program:
    def __init__(
        self,
        steps,
        n_slots,
        params,
        root,
        constants,
        compiled,
        fallback,
        evaluator,
        releases=None,
        arena: ArenaPlan | None = None,
    ):
        self.steps = steps
        self.arena = arena  # where temporaries live (arena.py); None: no temporary qualifies
        # (step, slots read for the last time by it): dropped right after, so memory is reused
        schedule = list(zip(steps, releases or [()] * len(steps), strict=True))
        arena_slots = {p[0] for p in arena.placements} if arena is not None else set()
        self.schedule = group_steps(schedule, arena_slots)
        self.n_slots = n_slots
        self.params = params
        self.root = root
        self.constants = constants
        self.compiled = compiled
        self.fallback = fallback
        self.evaluator = evaluator
        self.ir_text: str | None = None  # every part's LLVM IR, one after another
        self.ir_texts: list[str] = []  # the LLVM module of each part (kernel_parts.py)
        self.fallback_records: list = []  # FallbackRecord of each FALLBACK (compiler.py)
        self.cache_hit = False
        self.compile_seconds = 0.0
        self.temp_bytes = 0  # arenas of this program and the programs it calls (compiler.py)
        self.code_bytes = 0  # object code of the module's kernels
        self._simple_params = all(not isinstance(s, (TupleShape, TokenShape)) for _, s in params)
        # constants of this and every nested program: an output may be one of them
        self.constant_arrays = [value for _, value in constants]

    def call(self, values) -> object:
        """Run as a called computation (loop body, branch): one value per parameter, tuples
        as they are; returns the root's value unflattened."""
        env: list = [None] * self.n_slots
        for k, value in self.constants:
            env[k] = value
        for (k, _), value in zip(self.params, values, strict=True):
            env[k] = value
        self._steps(env)
        return env[self.root]

    def _steps(self, env: list) -> None:
        arena = self.arena
        if arena is None:
            for step, dead in self.schedule:
                step(env)
                for k in dead:
                    env[k] = None
            return
        views = arena.take()
        for k, view in views:
            env[k] = view
        try:
            for step, dead in self.schedule:
                step(env)
                for k in dead:
                    env[k] = None
        finally:
            arena.give(views)

    def run(self, arguments: list, run: DeviceRun = SINGLE) -> list:
        """Run as the entry of one device's launch; ``run`` says which device's part (replica,
        partition, the execution's rendezvous), for this thread only (device_run.py)."""
        env: list = [None] * self.n_slots
        for k, value in self.constants:
            env[k] = value
        if self._simple_params:
            for (k, _), value in zip(self.params, arguments, strict=True):
                env[k] = value
        else:
            it = iter(arguments)
            for k, shape in self.params:
                env[k] = _take(shape, it)
        if run is SINGLE and current() is SINGLE:
            self._steps(env)
        else:
            with entered(run):
                self._steps(env)
        return _flatten(env[self.root])

    def stats(self) -> dict[str, object]:
        return {
            "compiled": dict(self.compiled),
            "fallback": dict(self.fallback),
            "compiled_count": sum(self.compiled.values()),
            "fallback_count": sum(self.fallback.values()),
            "fallback_reasons": [str(r) for r in self.fallback_records],
            "cache_hit": self.cache_hit,
            "compile_seconds": self.compile_seconds,
        }

    def artifacts(self) -> dict[str, str]:
        out = {"stats.txt": "\n".join(f"{k}: {v}" for k, v in self.stats().items()) + "\n"}
        if len(self.ir_texts) == 1:
            out["kernels.ll"] = self.ir_texts[0]
        else:  # one LLVM module a file: llc and opt read them
            for i, text in enumerate(self.ir_texts):
                out[f"kernels.{i}.ll"] = text
        return out


def _take(shape, it):
    if isinstance(shape, TupleShape):
        return tuple(_take(s, it) for s in shape.elements)
    if isinstance(shape, TokenShape):
        return Token()
    return next(it)


def _flatten(value) -> list:
    if isinstance(value, tuple):
        out: list = []
        for v in value:
            out += _flatten(v)
        return out
    if isinstance(value, Token):
        return []
    return [value]
