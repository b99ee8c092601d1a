"""How a module's kernels are split into LLVM modules that compile on several threads at once
(codegen/parallel_compile.py): LLVM is ~70% of a model's compile, one kernel at a time.

Up to :data:`MAX_PARTS` parts of at least :data:`MIN_PART_COST` each, balanced by an estimate of
each kernel's LLVM cost (its computation's instruction count plus a fixed cost for its loops
and launch code), largest first into the lightest part. A part costs a module of its own (its
pipeline, its copies of the math tables): a small module parted took 15-30% more CPU, so a
module of less than twice :data:`MIN_PART_COST` compiles whole (the model workloads' modules
estimate 150-520). Kernels that call the same outlined math function (f64 pow,
outlined_math.py: one long body per module, with vector copies) share a part, which then
compiles that body once, and its cost counts once. The kernels that control flow runs (a
while's condition and body, a conditional's branches) share a part too: a native while driver
calls them directly, so it must sit in their module. With fewer than two compile threads the
module compiles whole: parts would only add their fixed costs.

The split depends on the program alone once two threads compile, so a program gets the same
parts on any such machine; whole or in parts, a kernel computes the same bits (each kernel is
its own function and the outlined bodies are noinline; test_parallel_compile.py compares).

Threads: as many as this process may run on, at most one per part, at most
``HLORT_CPU_COMPILE_THREADS`` when set (``1`` compiles the module whole), else at most
``HLORT_CPU_THREADS`` (the threads a user lets hlort's kernels use).
"""

from __future__ import annotations

import os

from hlort import dtypes
from hlort.errors import InvalidArgument
from hlort.ir.opcodes import Opcode
from hlort_cpu.thread_pool import cores_available

MAX_PARTS = 4
MIN_PART_COST = 40  # estimated cost a part must have: two or three small kernels
KERNEL_BASE_COST = 12  # instructions' worth: a kernel's loops, bounds and launch code
POW_F64 = "hlort_pow_f64"  # pow_f64.FUNCTION_NAME
HELPER_COSTS = {POW_F64: 150}  # instructions' worth of an outlined body and its vector copies
CONTROL_FLOW = "control flow"  # the unit of the kernels control flow runs
THREADS_ENV = "HLORT_CPU_COMPILE_THREADS"


def kernel_parts(
    costs: list[int], together: list[str | None] | None = None, whole: bool = False
) -> list[list[int]]:
    """Indexes of ``costs`` (one estimate per kernel) grouped into parts, each in index order;
    kernels with the same ``together`` key share a part (an outlined function they call, or
    :data:`CONTROL_FLOW`). One part when ``whole`` or when there is one unit to place."""
    together = together or [None] * len(costs)
    units: dict[object, list[int]] = {}
    for k, key in enumerate(together):
        units.setdefault(k if key is None else key, []).append(k)

    def cost(members: list[int]) -> int:
        return HELPER_COSTS.get(together[members[0]], 0) + sum(costs[k] for k in members)

    total = sum(cost(m) for m in units.values())
    count = 1 if whole else min(MAX_PARTS, len(units), total // MIN_PART_COST)
    if count <= 1:
        return [list(range(len(costs)))]

    parts: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for members in sorted(units.values(), key=lambda m: (-cost(m), m[0])):
        lightest = loads.index(min(loads))
        parts[lightest] += members
        loads[lightest] += cost(members)
    return [sorted(p) for p in parts if p]


def kernel_cost(comp) -> int:
    """The LLVM cost estimate of the kernel of computation ``comp``."""
    return KERNEL_BASE_COST + len(comp.instructions)


def outlined_call(comp) -> str | None:
    """The outlined math function the kernel of ``comp`` calls (f64 pow, pow_f64.py), if any."""
    for instr in _instructions(comp):
        if instr.opcode is Opcode.POWER and getattr(instr.shape, "dtype", None) == dtypes.F64:
            return POW_F64
    return None


def _instructions(comp):
    for instr in comp.instructions:
        yield instr
        for value in instr.attrs.values():  # a reduce's or a sort's scalar computation
            if hasattr(value, "instructions"):
                yield from _instructions(value)


def compile_threads(parts: int) -> int:
    """Threads to compile ``parts`` parts on (module docstring)."""
    cores = cores_available()
    for env in (THREADS_ENV, "HLORT_CPU_THREADS"):
        limit = os.environ.get(env)
        if limit:
            return max(1, min(cores, _positive(env, limit), parts))
    return max(1, min(cores, parts))


def _positive(env: str, value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise InvalidArgument(
            f"{env}={value!r} is not a positive integer; set it to a number of threads "
            "(1: one at a time) or unset it"
        )
    return count
