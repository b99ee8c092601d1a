"""memory_overlap: finding the storages an output may share memory with, by memory owner."""

import numpy as np
import pytest

from hlort.plugin.base.memory_overlap import (
    memory_owner,
    owner_key,
    owner_map,
    shares,
    unshared_outputs,
)


class _ForeignBlock:
    """Memory exported through the array interface, as the cpu plugin's host pool does."""

    def __init__(self, nbytes: int):
        self.raw = np.zeros(nbytes, np.uint8)
        self.__array_interface__ = {
            "data": (self.raw.ctypes.data, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


def _views_of(array: np.ndarray) -> list[np.ndarray]:
    return [
        array,
        array.reshape(-1),
        array[1:],
        array[::2],
        array.T,
        array.view(np.int32),
        array[..., :1],
        np.ndarray(array.shape, array.dtype, array, 0),
    ]


def test_views_lead_to_the_owner() -> None:
    owner = np.zeros((4, 6), np.float32)
    for view in _views_of(owner):
        assert memory_owner(view) is owner
    block = _ForeignBlock(64)
    pooled = np.asarray(block).view(np.float32).reshape(4, 4)
    assert memory_owner(pooled[1:].T) is block
    data = bytearray(32)
    assert memory_owner(np.frombuffer(memoryview(data), np.float32)[2:]) is data
    token = object()
    assert memory_owner(token) is token


def test_overlaps_agree_with_may_share_memory_on_views() -> None:
    rng = np.random.default_rng(0)
    owners = [np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32)]
    block = np.asarray(_ForeignBlock(96)).view(np.float32).reshape(4, 6)
    candidates = [v for o in [*owners, block] for v in _views_of(o)]
    candidates += [owners[0][:2], owners[0][2:], np.zeros(3), np.zeros(0, np.float32)]
    for _ in range(50):
        stored = [candidates[i] for i in rng.choice(len(candidates), 5, replace=False)]
        query = candidates[rng.integers(len(candidates))]
        want = [j for j, s in enumerate(stored) if s is query or np.may_share_memory(s, query)]
        assert _overlapping(stored, query) == want


def _overlapping(stored, query, by_memory=True) -> list[int]:
    key = owner_key(query, by_memory)
    return [
        j
        for j, s in enumerate(stored)
        if owner_key(s, by_memory) == key and shares(s, query, by_memory)
    ]


def test_disjoint_parts_of_one_owner_do_not_overlap() -> None:
    owner = np.arange(10.0)
    assert _overlapping([owner[:5]], owner[5:]) == []
    assert _overlapping([owner[:5]], owner[4:6]) == [0]


@pytest.mark.parametrize("by_memory", [True, False])
def test_device_storage_overlaps_only_itself(by_memory: bool) -> None:
    handle, other = object(), object()
    array = np.zeros(3)
    stored = [handle, array]
    assert _overlapping(stored, handle, by_memory) == [0]
    assert _overlapping(stored, other, by_memory) == []
    assert _overlapping(stored, array[1:], by_memory) == ([1] if by_memory else [])
    assert _overlapping(stored, array, by_memory) == [1]


def test_unshared_outputs_copy_what_shares_memory_and_keep_the_rest() -> None:
    arg = np.arange(6.0)
    constant = np.ones(3)
    fresh, other = np.zeros(4), np.zeros(2)
    outputs = [fresh[1:], arg[2:], constant, fresh, other, other, np.zeros(0)]
    results = unshared_outputs(outputs, [arg], owner_map([constant]))
    assert results[0] is outputs[0] and results[4] is other and results[6] is outputs[6]
    for k in (1, 2, 3, 5):  # a view of the argument, the constant, a view's owner, a repeat
        assert results[k] is not outputs[k]
        np.testing.assert_array_equal(results[k], outputs[k])
    for i, a in enumerate(results):
        assert not np.may_share_memory(a, arg) and not np.may_share_memory(a, constant)
        assert not any(np.may_share_memory(a, b) for b in results[:i])
