"""The arena allocator: alignment, reuse, coalescing and running out of memory."""

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort_template.arena import ALIGNMENT, Arena


def test_blocks_are_aligned_and_disjoint():
    arena = Arena(4096)
    blocks = [arena.allocate(n) for n in (1, 100, 0, 64)]
    assert all(b.offset % ALIGNMENT == 0 for b in blocks)
    spans = sorted((b.offset, b.offset + b.size) for b in blocks)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))


def test_free_coalesces_so_the_whole_arena_is_reusable():
    arena = Arena(1024)
    blocks = [arena.allocate(256) for _ in range(4)]
    with pytest.raises(HlortError) as info:
        arena.allocate(1)
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    for b in (blocks[1], blocks[3], blocks[0], blocks[2]):
        arena.free(b)
    assert arena.bytes_free() == 1024
    assert arena.allocate(1024).offset == 0


def test_write_and_read_copy_bytes():
    arena = Arena(1024)
    block = arena.allocate(24)
    data = np.arange(6, dtype=np.float32)
    arena.write(block, data)
    data[:] = -1  # the arena holds its own copy
    out = arena.read(block, np.dtype(np.float32), (2, 3))
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))
    out[:] = 7  # and read returns a copy
    np.testing.assert_array_equal(arena.read(block, np.dtype(np.float32), (6,)), np.arange(6))
