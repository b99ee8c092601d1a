"""The HBM allocator: real placement, coalescing, fragmentation, RESOURCE_EXHAUSTED."""

from __future__ import annotations

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.shape import array
from hlort_tpusim.hbm_allocator import HbmAllocator


def test_placement_is_aligned_and_disjoint():
    hbm = HbmAllocator(1 << 20, alignment=512)
    a = hbm.allocate(array("f32", [100]))  # 400 bytes -> one 512-byte granule
    b = hbm.allocate(array("f32", [300]))  # 1200 -> 1536
    assert (a.offset, a.nbytes) == (0, 512)
    assert (b.offset, b.nbytes) == (512, 1536)
    assert hbm.bytes_in_use == 2048


def test_free_coalesces_neighbours():
    hbm = HbmAllocator(4096, alignment=512)
    blocks = [hbm.allocate(array("u8", [1024])) for _ in range(4)]
    hbm.free(blocks[1])
    hbm.free(blocks[2])
    assert hbm.fragments == 1 and hbm.largest_free_block == 2048
    big = hbm.allocate(array("u8", [2048]))
    assert big.offset == 1024


def test_fragmentation_makes_a_large_request_fail_with_free_bytes_named():
    hbm = HbmAllocator(4096, alignment=512, name="tpusim:0 HBM")
    blocks = [hbm.allocate(array("u8", [1024])) for _ in range(4)]
    hbm.free(blocks[0])
    hbm.free(blocks[2])
    assert hbm.bytes_free == 2048
    with pytest.raises(HlortError) as info:
        hbm.allocate(array("u8", [2048]))
    err = info.value
    assert err.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "2048 bytes" in err.message and "2048 of 4096 bytes free" in err.message
    assert "largest 1024" in err.message
    assert blocks[1].data.size == 1024  # untouched


def test_best_fit_prefers_the_tightest_hole():
    hbm = HbmAllocator(8192, alignment=512)
    a, b, c, d = (hbm.allocate(array("u8", [n])) for n in (2048, 512, 1024, 512))
    hbm.free(a)  # 2048 hole at 0
    hbm.free(c)  # 1024 hole at 2560
    e = hbm.allocate(array("u8", [1000]))
    assert e.offset == c.offset
    assert b.offset == 2048 and d.offset == 3584


def test_double_free_is_rejected():
    hbm = HbmAllocator(4096)
    a = hbm.allocate(array("f32", [4]))
    hbm.free(a)
    with pytest.raises(HlortError):
        hbm.free(a)
