"""Independent steps of a program run side by side on the cores, as XLA's thunk executor runs
thunks whose operands are ready.

A training step's backward pass has dots that do not depend on each other (``dx = dy w^T`` and
``dw = x^T dy`` of one layer). Run one after the other, each big one is split across the
cores, and a split gemm of 64 rows ran only ~1.3x faster than whole (each part packs its
operands again); side by side, each dot runs whole on its own core. So at build time
:func:`group_steps` moves a step up beside an earlier one when it reads nothing made in between
(and keeps a group of at least two big steps: one big step beside small ones is better split
alone), and a :class:`StepGroup` runs their native chunks (a kernel's ranges, a dot's gemm
calls) in one dispatch of the native pool: the caller takes the first chunk, the worker the
next free one, and on a loaded machine the caller may run them all (spin_pool_ir.py, and
thread_pool.crowded), so a busy core costs nothing but the lost overlap.

What may move: a kernel or dot (each writes only its own slot: fresh memory or an arena view)
past other kernels, dots and tuple / get-tuple-element steps; any other step (control flow,
collectives, fallbacks, views) is a barrier. A moved step's result must not live in the arena:
buffer assignment placed it for its own position, and moved earlier it could share bytes with a
value that is live in between. Its inputs are live from before the group to its old position, so
no step in between overwrites them; the slots it releases are still released at its old position
(a no-op step keeps that place). Results are each step's own (a dot in a group of two dots is
one single-threaded gemm instead of split parts: bits within the usual dot tolerance, the same
on every call); the grouping depends only on the program, so runs are deterministic.
"""

from __future__ import annotations

import ctypes
import functools

from hlort_cpu.spin_pool import native_pool
from hlort_cpu.thread_pool import crowded, worker_count

HEAVY_PRODUCTS = 1 << 20  # a dot this big is split across cores when run alone
HEAVY_ELEMENTS = 1 << 16  # a kernel this big too (thread_pool.PARALLEL_MIN_ELEMENTS)
LIGHT_ELEMENTS = 1 << 12  # smaller kernels are not worth moving beside others
WINDOW = 16  # steps looked ahead for partners of a step
MAX_MEMBERS = 4
BALANCE = 1.3  # whole dots: the biggest at most this times its even share of the dot work

# what a step says it is (its ``group_kind``): a dot or kernel with native chunks, or a step
# that only names parts of values (tuple, get-tuple-element); any other step is a barrier
DOT, KERNEL, NAMING = "dot", "kernel", "naming"
_VOID_P, _I64 = ctypes.c_void_p, ctypes.c_int64
_IR = """
define void @NAME(ptr %record, i64 %begin, i64 %end) {
entry:
  %fn = load ptr, ptr %record, align 8
  %tp = getelementptr inbounds ptr, ptr %record, i64 1
  %table = load ptr, ptr %tp, align 8
  call void %fn(ptr %table, i64 %begin, i64 %end)
  ret void
}
"""


@functools.cache
def trampoline():
    """``void(ptr record, i64 begin, i64 end)`` calling ``record[0](record[1], begin, end)``:
    one pool dispatch runs chunks of different kernels."""
    from hlort_cpu.codegen.compiled import KERNEL_CFUNC
    from hlort_cpu.native_function import native_function

    address = native_function("step-group", "step_group", lambda name: _IR.replace("NAME", name))
    return KERNEL_CFUNC(address)


def _address(fn) -> int:
    return ctypes.cast(fn, _VOID_P).value


class StepGroup:
    """Steps that read nothing of each other, run as one dispatch of their native chunks.
    ``whole``: the dots run as one gemm each (two or more heavy dots side by side)."""

    def __init__(self, members: list, whole: bool):
        # dots first (their chunks are the longest), then kernels, the most work first: the
        # caller takes the first chunk and whoever is free the next
        self.members = sorted(members, key=lambda m: (m.group_kind != DOT, -m.work))
        self.whole = whole
        self.has_dot = any(m.group_kind == DOT for m in members)
        self.label = (
            "step group ("
            + ", ".join(getattr(m, "label", type(m).__name__) for m in self.members)
            + ")"
        )

    def __call__(self, env) -> None:
        fns, tables, bounds, keep = [], [], [], []
        for member in self.members:
            fn, table, ranges, alive = member.native_parts(env, self.whole)
            keep.append(alive)
            for k, (begin, end) in enumerate(ranges):
                fns.append(fn)
                tables.append(table[k] if isinstance(table, list) else table)
                bounds += (begin, end)
        if not fns:
            return
        if self.has_dot:
            from hlort_cpu import blas_threads  # only groups with a dot (ctypes BLAS look-ups)

            with blas_threads.single_threaded():
                _run(fns, tables, bounds)
            for member, alive in zip(self.members, keep, strict=True):
                if member.group_kind == DOT:
                    member.finish_parts(alive)  # a transposed dot's copy back (dot.py)
        else:
            _run(fns, tables, bounds)


def _run(fns: list, tables: list, bounds: list) -> None:
    n = len(fns)
    pool = native_pool(worker_count() - 1) if n > 1 else None
    if pool is None or crowded(pool):  # one after the other on this thread (thread_pool.py)
        for k in range(n):
            fns[k](tables[k], bounds[2 * k], bounds[2 * k + 1])
        return
    records = (_VOID_P * (2 * n))()
    for k in range(n):
        records[2 * k] = _address(fns[k])
        records[2 * k + 1] = ctypes.addressof(tables[k])
    base = ctypes.addressof(records)
    pointers = (_VOID_P * n)(*[base + 16 * k for k in range(n)])
    pool.run(trampoline(), None, pointers, (_I64 * (2 * n))(*bounds), n)


def _kind(step) -> str | None:
    return getattr(step, "group_kind", None)


def _heavy(step) -> bool:
    return step.work >= (HEAVY_PRODUCTS if step.group_kind == DOT else HEAVY_ELEMENTS)


def _movable(step) -> bool:
    """A step that may join a group: a dot or kernel with native chunks, not too small."""
    kind = _kind(step)
    if kind == DOT:
        return step.groupable
    return kind == KERNEL and step.groupable and step.work >= LIGHT_ELEMENTS


def _whole(group: list) -> bool:
    """Whether the group's dots run whole, one per core: there are as many heavy dots as
    worker threads and none is much more work than its share (a big dot beside a small one
    is better split, as it runs alone)."""
    works = [s.work for s in group if s.group_kind == DOT and _heavy(s)]
    workers = worker_count()
    return len(works) >= workers and max(works) * workers <= BALANCE * sum(works)


def _noop(env) -> None:
    return None


def group_steps(schedule: list, arena_slots: set[int]) -> list:
    """``schedule`` ((step, released slots) pairs) with independent movable steps grouped:
    each movable step takes up to MAX_MEMBERS - 1 later partners from the next WINDOW steps
    that read nothing made from it on, and the group runs where the first one was; a group
    is kept when it has two heavy members; then a dot and the row kernel right after it that
    reads it row by row become one step (dot_epilogue.py). Unchanged with one worker thread."""
    if worker_count() < 2:
        return schedule
    out = list(schedule)
    taken: set[int] = set()
    for i, (first, _) in enumerate(schedule):
        if i in taken or not _movable(first):
            continue
        members, made = [i], {first.out}
        for j in range(i + 1, min(len(schedule), i + 1 + WINDOW)):
            step = schedule[j][0]
            if _kind(step) is None:
                break  # it may write more than its own slot: nothing moves past it
            if (
                j not in taken
                and _movable(step)
                and step.out not in arena_slots
                and not made.intersection(step.ins)
            ):
                members.append(j)
                if len(members) == MAX_MEMBERS:
                    break
            if j not in taken:  # a taken step runs earlier, in the group it moved to
                made.add(step.out)
        group = [schedule[k][0] for k in members]
        if sum(_heavy(s) for s in group) < 2:
            continue  # one big step beside small ones: it splits across the cores alone
        out[i] = (StepGroup(group, _whole(group)), schedule[i][1])
        for k in members[1:]:
            out[k] = (_noop, schedule[k][1])
        taken.update(members)
    if not any(_kind(step) == DOT for step, _ in out):
        return out  # (dot_epilogue.py is imported only for a program with a dot)
    from hlort_cpu.dot_epilogue import chain_epilogues

    return chain_epilogues(out)
