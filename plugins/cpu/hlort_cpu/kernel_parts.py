"""How a module's kernels are split into LLVM modules that compile on several threads at once
(codegen/parallel_compile.py): LLVM is ~70% of a model's compile, one kernel at a time.

The split depends on the program alone, never on this machine's cores, so a program gets the
same parts, and the same object code, everywhere (a part inlines the internal math helpers its
own kernels use, which a different split could decide differently). Up to :data:`MAX_PARTS`
parts, balanced by an estimate of each kernel's LLVM cost (its computation's instruction count
plus a fixed cost for its loops and launch code), largest first into the lightest part. A
module with a while stays whole: a native while driver calls its kernels directly, so it must
sit in their module.

Threads: as many as this process may run on, at most one per part, at most
``HLORT_CPU_COMPILE_THREADS`` when set (``1`` compiles the parts one after another), else at
most ``HLORT_CPU_THREADS`` (the threads a user lets hlort's kernels use).
"""

from __future__ import annotations

import os

from hlort.errors import InvalidArgument
from hlort_cpu.thread_pool import cores_available, worker_count

MAX_PARTS = 4
KERNEL_BASE_COST = 12  # instructions' worth: a kernel's loops, bounds and launch code
THREADS_ENV = "HLORT_CPU_COMPILE_THREADS"


def kernel_parts(costs: list[int], whole: bool = False) -> list[list[int]]:
    """Indexes of ``costs`` (one estimate per kernel) grouped into parts, each in index order;
    one part when ``whole`` or when there are fewer than two kernels."""
    count = 1 if whole else min(MAX_PARTS, len(costs))
    if count <= 1:
        return [list(range(len(costs)))]
    parts: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for k in sorted(range(len(costs)), key=lambda k: (-costs[k], k)):
        lightest = loads.index(min(loads))
        parts[lightest].append(k)
        loads[lightest] += costs[k]
    return [sorted(p) for p in parts if p]


def kernel_cost(comp) -> int:
    """The LLVM cost estimate of the kernel of computation ``comp``."""
    return KERNEL_BASE_COST + len(comp.instructions)


def compile_threads(parts: int) -> int:
    """Threads to compile ``parts`` parts on (module docstring)."""
    limit = os.environ.get(THREADS_ENV)
    if not limit:
        return max(1, min(worker_count(), parts))  # worker_count: cores, or HLORT_CPU_THREADS
    try:
        cap = int(limit)
    except ValueError:
        cap = 0
    if cap < 1:
        raise InvalidArgument(
            f"{THREADS_ENV}={limit!r} is not a positive integer; set it to the number of "
            "threads kernels may compile on (1: one at a time) or unset it"
        )
    return max(1, min(cores_available(), cap, parts))
