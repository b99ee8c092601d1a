"""Rank check of communicator creation for two device groups whose crc32s collide
(tests/distributed/rank_program.py runs it): created at once from two threads over the same
processes, they must get different creation tags (the same tag lets MPI match one group's
creation messages with the other's) and both reduce right."""

from __future__ import annotations

import threading
import zlib

import numpy as np
from rank_helpers import _rank_size, run_threads

# device ids 4k + r belong to process r % P (P = 2 or 4): both groups span every process
COLLIDING = ((173128, 173129, 11862, 250287), (179956, 179957, 59658, 339051))


class _RecordingComm:
    """The transport's communicator, noting the tag of each ``Create_group``."""

    def __init__(self, comm, tags: list):
        self._comm, self._tags = comm, tags

    def Create_group(self, members, tag):  # noqa: N802 - mpi4py's name
        self._tags.append(tag)
        return self._comm.Create_group(members, tag)

    def __getattr__(self, name):
        return getattr(self._comm, name)


def check_colliding_groups(out: dict) -> None:
    from hlort.distributed.transport import MpiTransport

    MPI, rank, size = _rank_size()
    a, b = COLLIDING
    assert zlib.crc32(repr(a).encode()) == zlib.crc32(repr(b).encode())
    transport = MpiTransport(MPI.COMM_WORLD.Dup(), lambda d: d % size)
    tags: list = []
    transport.comm = _RecordingComm(transport.comm, tags)
    results: dict = {}
    errors: list = []

    def reduce(group):
        mine = [d for d in group if d % size == rank]
        try:
            value = np.full(5, float(sum(mine)) + len(group), np.float64)
            got = transport.all_reduce(("colliding", group), value, "sum", group, timeout_s=30)
            results[group] = bool(np.array_equal(got, np.full(5, sum(group) + size * len(group))))
        except Exception as err:  # reported: the test asserts on it
            errors.append(f"{group}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=reduce, args=(g,)) for g in COLLIDING]
    run_threads(threads, out, errors)
    out["results"] = [results.get(g) for g in COLLIDING]
    out["tags"] = sorted(tags)
