"""The cyclic collector is paused inside a compile and restored after (collection_pause.py):
enabled again when it was enabled, left disabled when the program disabled it, restored when
the compile raises, and only by the last of nested or concurrent pauses."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.errors import HlortError
from hlort.passes import collection_pause
from hlort.passes.collection_pause import collection_paused


@pytest.fixture(autouse=True)
def _restore_gc():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def _module():
    b = Builder("plus_one")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.add(x, b.broadcast(b.constant(np.float32(1)), [4], [])))


def test_a_compile_runs_with_the_collector_paused(monkeypatch):
    seen = []
    import hlort.runtime.compile as compile_module

    real = compile_module.verify_module
    monkeypatch.setattr(
        compile_module, "verify_module", lambda m: (seen.append(gc.isenabled()), real(m))
    )
    monkeypatch.setenv("HLORT_CACHE", "0")
    gc.enable()
    exe = hlort.compile(_module(), "interpreter")
    assert seen == [False]
    assert gc.isenabled()
    np.testing.assert_array_equal(exe(np.zeros(4, np.float32)), np.ones(4, np.float32))


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    collection_paused(lambda: None)()
    assert not gc.isenabled()


def test_the_collector_is_restored_when_the_call_raises():
    gc.enable()

    @collection_paused
    def fail():
        assert not gc.isenabled()
        raise HlortError("boom")

    with pytest.raises(HlortError):
        fail()
    assert gc.isenabled()


def test_only_the_last_of_concurrent_pauses_enables_it_again():
    gc.enable()
    inside, release = threading.Event(), threading.Event()
    states = []

    @collection_paused
    def long_one():
        inside.set()
        release.wait(10)

    thread = threading.Thread(target=long_one)
    thread.start()
    assert inside.wait(10)
    collection_paused(lambda: None)()  # a short compile ends while the long one runs
    states.append(gc.isenabled())
    release.set()
    thread.join(10)
    states.append(gc.isenabled())
    assert states == [False, True]
    assert collection_pause._depth == 0
