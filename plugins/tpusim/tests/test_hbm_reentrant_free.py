"""A buffer's finalizer can run (the garbage collector) in the middle of an allocate or free of
the same thread and free its block: the allocator must not wait for itself (a plain Lock hung
the conformance suite's eight-thread test), and the block is freed once that operation is done."""

import threading

import numpy as np

from hlort import dtypes
from hlort.shape import ArrayShape
from hlort_tpusim import hbm_allocator
from hlort_tpusim.hbm_allocator import HbmAllocator

SHAPE = ArrayShape(dtypes.F32, (256,))  # 1024 bytes: two 512-byte granules


def _in_thread(fn):
    errors: list[BaseException] = []

    def body():
        try:
            fn()
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the allocator deadlocked on a re-entrant free"
    assert not errors, errors


def test_a_free_from_inside_allocate_waits_for_it_and_then_happens(monkeypatch):
    hbm = HbmAllocator(8 * 1024)
    victim = hbm.allocate(SHAPE, "dropped")
    real_zeros = np.zeros
    calls = []

    def zeros_that_collect(*args, **kwargs):  # as if the GC ran a finalizer right here
        if not calls:
            calls.append(1)
            hbm.free(victim)
            assert not victim.freed  # pending: allocate is mid-update
        return real_zeros(*args, **kwargs)

    monkeypatch.setattr(hbm_allocator.np, "zeros", zeros_that_collect)
    _in_thread(lambda: hbm.allocate(SHAPE, "new"))
    monkeypatch.undo()
    assert victim.freed
    assert hbm.bytes_in_use == hbm.rounded(SHAPE.nbytes)
    assert [a.label for a in hbm.live_allocations()] == ["new"]


def test_a_free_from_inside_free_is_done_after_it():
    hbm = HbmAllocator(8 * 1024)
    first, second = hbm.allocate(SHAPE), hbm.allocate(SHAPE)
    coalesce = hbm._coalesce

    def coalesce_then_collect(index):
        coalesce(index)
        if not second.freed and second.uid in hbm._live:
            hbm.free(second)  # a finalizer during the first free

    hbm._coalesce = coalesce_then_collect
    _in_thread(lambda: hbm.free(first))
    assert first.freed and second.freed
    assert hbm.bytes_in_use == 0 and hbm.fragments == 1
