"""What the rank programs share: the synthetic device numbering, test values, and the
tolerance of MPI-reduced float sums (imported by rank_program.py and rank_checks_mpi.py)."""

from __future__ import annotations

import numpy as np

DEVICES_PER_RANK = 2  # of the synthetic device numbering the transport checks use


def _rank_size():
    from hlort.distributed.process_env import import_mpi

    MPI = import_mpi()
    return MPI, MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()


def _value(device_id: int, shape=(3, 4), dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(1000 + device_id)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def _synthetic_transport():
    """A transport over a duplicate of COMM_WORLD where rank r owns devices 2r and 2r+1."""
    from hlort.distributed.transport import MpiTransport

    MPI, rank, size = _rank_size()
    return MpiTransport(MPI.COMM_WORLD.Dup(), lambda d: d // DEVICES_PER_RANK), rank, size


def mine_of(rank: int) -> list[int]:
    return [rank * DEVICES_PER_RANK + i for i in range(DEVICES_PER_RANK)]


def _within_fold(got: np.ndarray, arrays: list[np.ndarray]) -> bool:
    """``got`` is the group-order fold of ``arrays`` within ``2 (n-1) eps * sum|x|`` (MPI's
    order across processes: the tolerance hlort.plugin.base.collectives states)."""
    fold = arrays[0].astype(arrays[0].dtype, copy=True)
    for a in arrays[1:]:
        fold = fold + a
    eps = np.finfo(fold.dtype).eps
    bound = 2 * (len(arrays) - 1) * eps * np.sum(np.abs(np.stack(arrays)), axis=0)
    return bool(got.dtype == fold.dtype and np.all(np.abs(got - fold) <= bound))


def _digest(array: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def run_threads(threads: list, out: dict, errors: list) -> None:
    """Start ``threads``, wait for them (bounded), and report how many still run and the
    errors they collected (the tests assert none)."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    out["threads_alive"] = sum(t.is_alive() for t in threads)
    out["errors"] = errors
