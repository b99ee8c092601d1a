"""Cross-process exchange over MPI: the transport a LaunchContext uses for remote participants.

``exchange(key, local, group)`` is the one primitive: every process owning devices of ``group``
contributes the arrays of its devices, and each gets back the arrays of every device of the
group. The collective's meaning (sum, concatenation, a permutation...) is applied afterwards to
those values, by the same NumPy code that serves devices of one process, so a collective means
the same whether it crosses processes or not.

Contract:

* One call per (key, group) per participating process; calls are thread-safe, so the device
  threads of one launch may run exchanges of different groups at once.
* ``group`` holds global device ids (:mod:`hlort.distributed.global_devices`); ``local`` must
  hold exactly this process's devices of the group.
* Bounded: when a participant does not arrive within ``timeout_s`` (``HLORT_COLLECTIVE_TIMEOUT``,
  default 60 s), DEADLINE_EXCEEDED names the processes and devices that are missing. Never a
  hang, except inside an MPI transfer that has already started (a peer that dies mid-message
  makes the MPI job abort instead).

Each process sends one message to each peer (:mod:`hlort.distributed.wire_format`) with an MPI
tag derived from (key, group); a receiver takes messages by matched probe, and one that belongs
to another exchange of the same tag is kept in a mailbox for that exchange.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

from hlort.distributed import wire_format
from hlort.distributed.process_env import import_mpi
from hlort.errors import ErrorCode, HlortError, Internal, InvalidArgument

DEFAULT_TIMEOUT_S = 60.0


def collective_timeout_s(explicit: float | None = None) -> float:
    """``explicit``, else ``HLORT_COLLECTIVE_TIMEOUT`` (seconds), else 60."""
    if explicit is not None:
        return float(explicit)
    text = os.environ.get("HLORT_COLLECTIVE_TIMEOUT")
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise InvalidArgument(
            f"HLORT_COLLECTIVE_TIMEOUT={text!r} is not a number of seconds (e.g. 30 or 0.5)"
        ) from None
    if value <= 0:
        raise InvalidArgument(f"HLORT_COLLECTIVE_TIMEOUT={text!r} must be positive")
    return value


def deadline_exceeded(message: str) -> HlortError:
    return HlortError(message, ErrorCode.DEADLINE_EXCEEDED)


class _Backoff:
    """Polls a few hundred times with only a yield, then sleeps up to 1 ms between polls."""

    def __init__(self):
        self.polls = 0

    def wait(self) -> None:
        self.polls += 1
        if self.polls < 200:
            time.sleep(0)
        else:
            time.sleep(min(1e-3, 1e-5 * 2 ** min(self.polls - 200, 7)))


class MpiTransport:
    """:class:`CrossProcessTransport` over an mpi4py communicator.

    ``process_of`` maps a global device id to the rank that owns it (the global device table's
    :meth:`~hlort.distributed.global_devices.GlobalDeviceTable.process_of`).
    """

    def __init__(self, comm, process_of: Callable[[int], int]):
        self._mpi = import_mpi()
        self.comm = comm
        self.process_index: int = comm.Get_rank()
        self.process_count: int = comm.Get_size()
        self._process_of = process_of
        self._tag_ub = int(comm.Get_attr(self._mpi.TAG_UB))
        self._mailbox: dict[tuple[int, str], list[dict[int, np.ndarray]]] = {}
        self._mailbox_lock = threading.Lock()
        multiple = self._mpi.Query_thread() >= self._mpi.THREAD_MULTIPLE
        self._mpi_lock = contextlib.nullcontext() if multiple else threading.Lock()
        self._abandoned: list = []  # sends of timed-out exchanges: their buffers must stay alive

    def process_of(self, device_id: int) -> int:
        return self._process_of(device_id)

    # -- the primitive ---------------------------------------------------------------------------
    def exchange(
        self,
        key: Hashable,
        local: Mapping[int, np.ndarray],
        group: Sequence[int],
        *,
        timeout_s: float | None = None,
    ) -> dict[int, np.ndarray]:
        """Every device of ``group``'s array, from ``local`` here and from the other processes."""
        group = [int(d) for d in group]
        owners = {d: self.process_of(d) for d in group}
        mine = sorted(d for d, p in owners.items() if p == self.process_index)
        if sorted(local) != mine:
            raise InvalidArgument(
                f"exchange {key!r} over devices {group}: process {self.process_index} owns "
                f"devices {mine} of the group but contributed {sorted(local)}"
            )
        peers = sorted({p for p in owners.values() if p != self.process_index})
        if not peers:
            return {d: local[d] for d in group}
        timeout = collective_timeout_s(timeout_s)
        deadline = time.monotonic() + timeout
        text = wire_format.key_text((key, tuple(group)))
        tag = 1 + zlib.crc32(text.encode()) % (self._tag_ub - 1)
        outgoing = wire_format.encode(text, local)
        datatype = self._datatype(outgoing)
        MPI = self._mpi
        with self._mpi_lock:
            sends = [self.comm.Isend([MPI.BOTTOM, 1, datatype], dest=p, tag=tag) for p in peers]
        try:
            received = self._receive(peers, tag, text, owners, deadline, key, group, timeout)
            self._wait_sends(sends, peers, deadline, key, group, timeout)
        except BaseException:
            self._abandoned.append((sends, outgoing, datatype))
            raise
        with self._mpi_lock:
            datatype.Free()
        return {
            d: local[d] if owners[d] == self.process_index else received[owners[d]][d]
            for d in group
        }

    # -- pieces -------------------------------------------------------------------------------
    def _datatype(self, outgoing: wire_format.Outgoing):
        """An MPI type over the blocks' own memory (absolute addresses): sent without packing."""
        MPI = self._mpi
        blocks = [b for b in outgoing.blocks if b.data.nbytes]
        with self._mpi_lock:
            datatype = MPI.BYTE.Create_hindexed(
                [b.data.nbytes for b in blocks], [MPI.Get_address(b.data) for b in blocks]
            )
            datatype.Commit()
        return datatype

    def _receive(self, peers, tag, text, owners, deadline, key, group, timeout):
        received: dict[int, dict[int, np.ndarray]] = {}
        pending = list(peers)
        backoff = _Backoff()
        while pending:
            for peer in list(pending):
                arrays = self._take(peer, text)
                if arrays is None:
                    arrays = self._poll(peer, tag, text)
                if arrays is None:
                    continue
                expected = sorted(d for d, p in owners.items() if p == peer)
                if sorted(arrays) != expected:
                    raise Internal(
                        f"exchange over devices {group}: process {peer} sent devices "
                        f"{sorted(arrays)}, expected {expected} (do the processes agree on the "
                        "global device list? call hlort.distributed.initialize() on all of them)"
                    )
                received[peer] = arrays
                pending.remove(peer)
            if not pending:
                break
            if time.monotonic() > deadline:
                missing = ", ".join(
                    f"process {p} (devices {sorted(d for d, o in owners.items() if o == p)})"
                    for p in pending
                )
                raise deadline_exceeded(
                    f"collective {key!r} over devices {group} on process {self.process_index}: "
                    f"{missing} did not "
                    f"arrive within {timeout:g} s. Every process must run the same program with "
                    "the same collectives in the same order; for a slow start raise "
                    "HLORT_COLLECTIVE_TIMEOUT (seconds)"
                )
            backoff.wait()
        return received

    def _take(self, peer: int, text: str):
        with self._mailbox_lock:
            queue = self._mailbox.get((peer, text))
            if not queue:
                return None
            arrays = queue.pop(0)
            if not queue:
                del self._mailbox[(peer, text)]
            return arrays

    def _poll(self, peer: int, tag: int, text: str):
        """One matched probe for ``peer``'s message with ``tag``: ours, or filed for another."""
        MPI = self._mpi
        status = MPI.Status()
        with self._mpi_lock:
            message = self.comm.Improbe(source=peer, tag=tag, status=status)
        if message is None:
            return None
        buffer = np.empty(status.Get_count(MPI.BYTE), np.uint8)
        with self._mpi_lock:
            message.Recv([buffer, MPI.BYTE])
        incoming = wire_format.decode(buffer, f"process {peer}")
        if incoming.key == text:
            return incoming.arrays
        with self._mailbox_lock:  # another exchange whose tag collides with ours: keep it
            self._mailbox.setdefault((peer, incoming.key), []).append(incoming.arrays)
        return None

    def _wait_sends(self, sends, peers, deadline, key, group, timeout):
        MPI = self._mpi
        backoff = _Backoff()
        while True:
            with self._mpi_lock:
                done = MPI.Request.Testall(sends)
            if done:
                return
            if time.monotonic() > deadline:
                raise deadline_exceeded(
                    f"collective {key!r} over devices {group} on process {self.process_index}: "
                    f"processes {peers} did not take this process's data within {timeout:g} s "
                    "(raise HLORT_COLLECTIVE_TIMEOUT for a slow peer)"
                )
            backoff.wait()

    # -- process-level helpers (start-up) ------------------------------------------------------
    def barrier(self, timeout_s: float | None = None, what: str = "barrier") -> None:
        """Wait until every process arrives; DEADLINE_EXCEEDED instead of a hang."""
        timeout = collective_timeout_s(timeout_s)
        deadline = time.monotonic() + timeout
        with self._mpi_lock:
            request = self.comm.Ibarrier()
        backoff = _Backoff()
        while True:
            with self._mpi_lock:
                if request.Test():
                    return
            if time.monotonic() > deadline:
                raise deadline_exceeded(
                    f"{what}: not every one of the {self.process_count} processes arrived within "
                    f"{timeout:g} s (this is process {self.process_index}); start all ranks with "
                    "the same program, or raise HLORT_COLLECTIVE_TIMEOUT"
                )
            backoff.wait()

    def allgather_object(self, obj, timeout_s: float | None = None, what: str = "allgather"):
        """Every process's ``obj`` (picklable, small), in rank order; bounded by a barrier."""
        self.barrier(timeout_s, what)
        with self._mpi_lock:
            return self.comm.allgather(obj)
