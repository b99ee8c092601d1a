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

Each process sends each peer a header and then each of its arrays, or one message with the
arrays inside when they are small (:mod:`hlort.distributed.wire_format`), with an MPI tag
derived from (key, group); headers and arrays use separate communicators. A receiver takes a
header by matched probe and posts the receives of the arrays that follow it at once; a header
of another exchange with the same tag is received the same way and its arrays are kept in a
mailbox for that exchange.
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
from hlort.distributed.group_collectives import GroupCollectives
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
    """Polls without pause for the first 2 ms (a peer that is nearly there costs no sleep
    latency), then sleeps between polls, growing to 1 ms (a peer that is still compiling does
    not cost this process a core)."""

    SPIN_S = 20e-3

    def __init__(self):
        self.started = time.monotonic()
        self.sleep_s = 1e-5

    def wait(self) -> None:
        if time.monotonic() - self.started < self.SPIN_S:
            return  # keep the core: a yield on a busy machine can cost a whole time slice
        else:
            time.sleep(self.sleep_s)
            self.sleep_s = min(1e-3, self.sleep_s * 2)


class MpiTransport:
    """:class:`CrossProcessTransport` over an mpi4py communicator.

    ``process_of`` maps a global device id to the rank that owns it (the global device table's
    :meth:`~hlort.distributed.global_devices.GlobalDeviceTable.process_of`). ``thread_multiple``
    (default: whether MPI gave MPI_THREAD_MULTIPLE): False serializes every MPI call behind one
    lock and makes the group collectives use the keyed exchange (group_collectives).
    """

    def __init__(
        self, comm, process_of: Callable[[int], int], *, thread_multiple: bool | None = None
    ):
        self._mpi = import_mpi()
        self.comm = comm
        self.process_index: int = comm.Get_rank()
        self.process_count: int = comm.Get_size()
        self._process_of = process_of
        self._tag_ub = int(comm.Get_attr(self._mpi.TAG_UB))
        self._mailbox: dict[tuple[int, str], list[dict[int, np.ndarray]]] = {}
        self._mailbox_lock = threading.Lock()
        if thread_multiple is None:  # an explicit False: tests of a SERIALIZED-only MPI
            thread_multiple = self._mpi.Query_thread() >= self._mpi.THREAD_MULTIPLE
        multiple = self.thread_multiple = bool(thread_multiple)
        self._mpi_lock = contextlib.nullcontext() if multiple else threading.Lock()
        # headers travel on ``comm``, arrays on a duplicate: two matching spaces, so a thread
        # probing for headers never takes an array message
        self._data = comm.Dup()
        self._post_lock = threading.Lock()  # a header and its arrays are posted together
        self._match_lock = threading.Lock()  # a matched header's receives are posted together
        self._abandoned: list = []  # sends of timed-out exchanges: their buffers must stay alive
        self._groups = GroupCollectives(self)

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
        arrays = {d: wire_format.contiguous(local[d]) for d in mine}
        header = wire_format.encode_header(text, arrays)
        carried = wire_format.inline(arrays)  # small arrays ride in the header message
        MPI = self._mpi
        with self._post_lock, self._mpi_lock:
            sends = []
            for peer in peers:
                sends.append(self.comm.Isend([header, MPI.BYTE], dest=peer, tag=tag))
                sends += [
                    self._data.Isend([wire_format.as_bytes(a), MPI.BYTE], dest=peer, tag=tag)
                    for a in arrays.values()
                    if a.nbytes and not carried
                ]
        try:
            received = self._receive(peers, tag, text, owners, deadline, key, group, timeout)
            self._wait_all(sends, deadline, f"processes {peers} to take this process's data")
        except BaseException:
            self._abandoned.append((sends, header, arrays))
            raise
        return {
            d: local[d] if owners[d] == self.process_index else received[owners[d]][d]
            for d in group
        }

    def _mine_and_peers(self, key, local, group) -> tuple[list[int], list[int]]:
        owners = {d: self.process_of(d) for d in group}
        mine = sorted(d for d, p in owners.items() if p == self.process_index)
        if sorted(local) != mine:
            raise InvalidArgument(
                f"exchange {key!r} over devices {list(group)}: process {self.process_index} "
                f"owns devices {mine} of the group but contributed {sorted(local)}"
            )
        return mine, sorted({p for p in owners.values() if p != self.process_index})

    # -- MPI's own collectives (static shapes: group_collectives) -----------------------------
    def all_reduce(
        self,
        key: Hashable,
        array: np.ndarray,
        op: str,
        group: Sequence[int],
        *,
        timeout_s: float | None = None,
        send: np.ndarray | None = None,
    ) -> np.ndarray:
        """Reduce ``array`` (this process's combined value of its devices of ``group``;
        contiguous and writable) in place with MPI's ``Iallreduce`` (``op``: sum, prod, max,
        min) across the group's processes; returns it. Every process passes the same shape.
        ``send``: this process's value, read by MPI, with the result written to ``array``."""
        group = [int(d) for d in group]
        if all(self.process_of(d) == self.process_index for d in group):
            if send is not None:
                np.copyto(array, send)
            return array
        return self._groups.all_reduce(
            key, array, op, group, collective_timeout_s(timeout_s), send=send
        )

    def all_gather(
        self,
        key: Hashable,
        local: Mapping[int, np.ndarray],
        group: Sequence[int],
        *,
        timeout_s: float | None = None,
    ) -> dict[int, np.ndarray]:
        """:meth:`exchange` for values of one shape and type on every device (a compiled
        collective's): one MPI ``Iallgatherv`` instead of keyed messages to every peer."""
        group = [int(d) for d in group]
        mine, peers = self._mine_and_peers(key, local, group)
        if not peers:
            return {d: local[d] for d in group}
        arrays = {d: wire_format.contiguous(local[d]) for d in mine}
        first = arrays[mine[0]]
        if any(a.shape != first.shape or a.dtype != first.dtype for a in arrays.values()):
            return self.exchange(key, local, group, timeout_s=timeout_s)
        return self._groups.all_gather(key, arrays, group, collective_timeout_s(timeout_s))

    def all_to_all(
        self,
        key: Hashable,
        local: Mapping[int, Sequence[np.ndarray]],
        group: Sequence[int],
        *,
        timeout_s: float | None = None,
    ) -> dict[int, list[np.ndarray]]:
        """``local[d][i]`` goes to device ``group[i]`` (every piece of one shape and type, as a
        compiled all-to-all's are); returns, per local device, what every member of the group
        sent it, in group order. One MPI ``Ialltoallv``: each piece crosses once."""
        group = [int(d) for d in group]
        mine, peers = self._mine_and_peers(key, local, group)
        if not peers:
            position = {d: i for i, d in enumerate(group)}
            return {d: [local[j][position[d]] for j in group] for d in mine}
        return self._groups.all_to_all(key, local, group, collective_timeout_s(timeout_s))

    # -- pieces -------------------------------------------------------------------------------
    def _receive(self, peers, tag, text, owners, deadline, key, group, timeout):
        received: dict[int, dict[int, np.ndarray]] = {}
        pending = list(peers)
        backoff = _Backoff()
        while pending:
            for peer in list(pending):
                arrays = self._take(peer, text)
                if arrays is None:
                    arrays = self._poll(peer, tag, text, deadline)
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

    def _poll(self, peer: int, tag: int, text: str, deadline: float):
        """One matched probe for ``peer``'s header with ``tag``; then its arrays. Returns ours,
        or None (nothing yet, or another exchange's message, which is filed for it)."""
        MPI = self._mpi
        status = MPI.Status()
        with self._match_lock, self._mpi_lock:
            message = self.comm.Improbe(source=peer, tag=tag, status=status)
            if message is None:
                return None
            data = np.empty(status.Get_count(MPI.BYTE), np.uint8)
            message.Recv([data, MPI.BYTE])
            header = wire_format.decode_header(data, f"process {peer}")
            if header.inline is not None:
                arrays, receives = header.inline, []
            else:
                arrays = wire_format.allocate(header)
                receives = [
                    self._data.Irecv([wire_format.as_bytes(a), MPI.BYTE], source=peer, tag=tag)
                    for a in arrays.values()
                    if a.nbytes
                ]
        self._wait_all(receives, deadline, f"the arrays of process {peer} for {header.key}")
        if header.key == text:
            return arrays
        with self._mailbox_lock:  # another exchange whose tag collides with ours: keep it
            self._mailbox.setdefault((peer, header.key), []).append(arrays)
        return None

    def _wait_all(self, requests, deadline: float, what: str) -> None:
        """Wait for requests whose peer is known to be in the exchange (it sent its header):
        poll without sleeping, since a large message progresses only while MPI is called."""
        MPI = self._mpi
        while True:
            with self._mpi_lock:
                if MPI.Request.Testall(requests):
                    return
            if time.monotonic() > deadline:
                raise deadline_exceeded(
                    f"process {self.process_index} waited for {what} past the collective "
                    "timeout (raise HLORT_COLLECTIVE_TIMEOUT for a slow peer)"
                )
            time.sleep(0)

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
