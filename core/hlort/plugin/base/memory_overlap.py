"""Which storages an output may share memory with: found by memory owner, in one dict lookup.

An execution must copy an output that shares memory with a kept input (or a constant, or an
earlier output), since the caller owns every output. Asking ``np.may_share_memory`` of every
(output, input) pair costs a few hundred calls per step of a training loop (20 outputs x 21
inputs), more than the rest of the dispatch. Memory that a program hands back as an output
is either fresh or derived from an input or a constant through NumPy views, and a view's
``base`` chain leads to the object owning the memory: so only storages with the same owner
can overlap, and ``np.may_share_memory`` (bounds, as before) decides among those few.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np


def memory_owner(storage: Any) -> Any:
    """The object at the end of ``storage``'s chain of views: the array owning the memory,
    or the foreign object (a pool block, bytes, an exporter behind a memoryview) it came
    from. Anything that is not an array or a memoryview is its own owner."""
    while True:
        if isinstance(storage, np.ndarray):
            base = storage.base
            if base is None:
                return storage
            storage = base
        elif isinstance(storage, memoryview):
            storage = storage.obj
        else:
            return storage


def owner_key(storage: Any, by_memory: bool = True) -> int:
    """What storages that may overlap have in common: the id of the memory owner (an array
    owning its memory, most outputs, is its own: no walk); with ``by_memory=False`` (device
    memory, not host arrays) the storage's own id, as only the same object overlaps there."""
    if not by_memory or getattr(storage, "base", 0) is None:
        return id(storage)
    return id(memory_owner(storage))


def shares(a: Any, b: Any, by_memory: bool = True) -> bool:
    """Whether two storages with the same :func:`owner_key` may share memory."""
    if a is b:
        return True
    return (
        by_memory
        and isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and np.may_share_memory(a, b)
    )


OwnerMap = Mapping[int, tuple]  # id(memory owner) -> the arrays with that owner


def owner_map(arrays: Iterable[np.ndarray]) -> dict[int, tuple]:
    """``arrays`` by memory owner (for :func:`unshared_outputs`; build it once for arrays that
    live as long as its use, such as a program's constants)."""
    owners: dict[int, tuple] = {}
    for array in arrays:
        key = id(array if array.base is None else memory_owner(array))
        owners[key] = owners.get(key, ()) + (array,)
    return owners


def unshared_outputs(
    outputs: Sequence[np.ndarray], arguments: Sequence[np.ndarray], fixed: OwnerMap
) -> list[np.ndarray]:
    """``outputs``, each that may share memory with an argument, an array of ``fixed`` (see
    :func:`owner_map`) or an earlier output replaced by a copy: arrays the caller owns. One
    function, inlined loops: the synchronous fast path of a tiny program calls it every time."""
    owners = dict(fixed)
    for array in arguments:
        key = id(array if array.base is None else memory_owner(array))
        owners[key] = owners.get(key, ()) + (array,)
    results: list[np.ndarray] = []
    for out in outputs:
        key = id(out if out.base is None else memory_owner(out))
        same = owners.get(key)
        if same and any(shares(other, out) for other in same):
            out = out.copy()
            key = id(out)
            same = None
        owners[key] = (same or ()) + (out,)
        results.append(out)
    return results
