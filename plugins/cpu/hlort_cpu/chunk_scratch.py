"""Per-thread scratch for kernels that need working memory (sort: records and histograms).

A kernel with ``KernelInfo.scratch_bytes`` takes one more buffer, last in its table, and reuses
it for every outer iteration of its range. Each chunk of the range runs on its own thread, so
each gets its own table whose last entry points at its own region of one allocation (NumPy's, so
running out of memory raises MemoryError instead of crashing a kernel).
"""

from __future__ import annotations

import numpy as np

_ALIGN = 64  # regions start on their own cache lines


def chunk_scratch(ptr_type, table, ranges: list[tuple[int, int]], scratch_bytes: int):
    """(one pointer table per range, the allocation to keep alive while the kernel runs)."""
    stride = -(-scratch_bytes // _ALIGN) * _ALIGN
    memory = np.empty(stride * len(ranges) + _ALIGN, np.uint8)
    start = -memory.ctypes.data % _ALIGN + memory.ctypes.data
    tables = []
    for k in range(len(ranges)):
        copy = ptr_type(*table)
        copy[len(copy) - 1] = start + k * stride
        tables.append(copy)
    return tables, memory
