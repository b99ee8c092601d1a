"""How a split full reduce's chunk iterations (split_reduce.py) are cut into pool ranges.

Threads claim ranges one at a time (spin_pool_ir.py), so a dispatch ends when its slowest range
does. One static half per thread made a 2^24 reduce wait for whichever core ran slower (a
neighbour's load on its L3 or its sibling, a worker that woke late, a preempted one): here each
thread's share is cut into RANGES_PER_WORKER ranges and a thread that runs ahead claims more.
Every chunk writes its own partial and the combine folds them in chunk order, so how chunks are
grouped into ranges, and which thread runs them, never changes the bits.
"""

from __future__ import annotations

from hlort_cpu.thread_pool import Ranges, chunks, split

RANGES_PER_WORKER = 16  # 2^24 f32 on two threads: 32 ranges of 8 chunks (~0.2 ms each)
MIN_RANGE_CHUNKS = 4  # fewer chunks a range and the claims and calls start to count


def split_reduce_ranges(parts: int, chunk_elements: int) -> Ranges:
    """Ranges over the ``parts`` chunks of ``chunk_elements`` (one range where one thread runs)."""
    base = chunks(parts, chunk_elements)
    if len(base) == 1:
        return base
    wanted = min(len(base) * RANGES_PER_WORKER, parts // MIN_RANGE_CHUNKS)
    return split(parts, max(len(base), wanted))
