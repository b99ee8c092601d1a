"""MPI's own collectives over the processes of one device group: ``Iallreduce``,
``Iallgatherv`` and ``Ialltoallv`` straight on contiguous host memory.

:meth:`MpiTransport.exchange` sends every value to every peer as keyed messages, which is
general (any shapes, a mismatch is recognised) but moves ``(P-1) * B`` per process for an
all-reduce and pays a JSON header per exchange. The collectives of a compiled program have
static shapes, so they can use MPI's algorithms instead (Open MPI picks ring / recursive
doubling / shared-memory ones by size), which move about ``2 (P-1)/P * B``:

* every device group gets its own communicator (its processes in rank order), made at the
  group's first collective after two bounded keyed rounds. Round one: everyone is here (a
  process that never arrives is DEADLINE_EXCEEDED naming it). Round two: each process says
  whether it passed round one or gave up on it; a process that gives up says so before it
  raises, so a late one (arriving after the others gave up) reads that and is
  DEADLINE_EXCEEDED naming them, instead of blocking in ``MPI_Comm_create_group`` for peers
  that never come. The blocking creation is entered only when every process of the group said
  it passed, so it never waits for one that gave up. Round two also carries the creation's tag,
  which concurrent creations over shared processes must not share (MPI could match one group's
  creation messages with another's): the group's lowest process hands it out from its own
  share of the tag space, ``rank * (TAG_UB + 1) // P + k`` for the k-th group it leads, so no
  two groups of the run ever get the same tag. A group whose creation failed is retired
  (ABORTED after: messages of the attempt are still in flight). One communicator per group,
  not per process set: two groups over the same processes run from different device threads
  at once, and MPI matches collectives on a communicator by order;
* without ``MPI_THREAD_MULTIPLE`` (an MPI library that gives only SERIALIZED) no communicator
  is made at all: a blocking creation would have to hold the serialization lock while it waits
  for its peers, and two groups created in opposite orders on two processes would then wait
  for each other forever. The collectives take the keyed exchange instead (order-independent,
  bounded, ``(P-1) x B`` per process), with the same results on every process;
* the operations are nonblocking and polled against the collective deadline. A timed-out one
  cannot be cancelled (MPI has no cancel for collectives): its buffers are kept alive, and the
  group's communicator is retired, so a later collective over it raises ABORTED at once
  instead of matching the late peer's stale call.

Processes must issue a group's collectives in the same order, as in any MPI program (every rank
runs the same compiled program). Shapes and types are checked, not trusted: before each MPI
collective the processes reduce a 64-bit hash of what they pass (the collective, its op, the
element type and dims of their parts) with a 16-byte ``Iallreduce`` (max of ``h`` and of
``-h``: equal everywhere only when every hash is); when they differ, every process sees it,
the signatures travel by the keyed exchange, and every process raises INVALID_ARGUMENT naming
each process's, instead of MPI reading or writing past a buffer (garbage, a crash or a hang).
Counts are bytes in a C int: one process's part of one collective must stay below 2 GiB.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence

import numpy as np

from hlort.errors import (
    Aborted,
    ErrorCode,
    HlortError,
    Internal,
    InvalidArgument,
    ResourceExhausted,
)

SPIN_S = 20e-3
_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class GroupCollectives:
    """The per-group communicators of one :class:`~hlort.distributed.transport.MpiTransport`."""

    def __init__(self, transport) -> None:
        self._t = transport
        self._mpi = transport._mpi
        self._comms: dict[tuple[int, ...], object] = {}
        self._retired: dict[tuple[int, ...], str] = {}
        self._locks: dict[tuple[int, ...], threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._led = 0  # groups whose creation tag this process handed out (it is their lowest)
        self._abandoned: list = []  # timed-out requests and their buffers: MPI may still write
        self._ops = {
            "sum": self._mpi.SUM,
            "prod": self._mpi.PROD,
            "max": self._mpi.MAX,
            "min": self._mpi.MIN,
        }

    # -- communicators -------------------------------------------------------------------------
    def communicator(self, group: Sequence[int], timeout_s: float, key=None):
        """The communicator of device group ``group`` (made on first use, collectively), or
        None where MPI is not thread-multiple (the caller takes the keyed exchange)."""
        if not self._t.thread_multiple:
            return None
        group = tuple(int(d) for d in group)
        comm = self._comms.get(group)
        if comm is not None:
            return comm
        with self._locks_lock:
            lock = self._locks.setdefault(group, threading.Lock())
        with lock:
            comm = self._comms.get(group)
            if comm is not None:
                return comm
            if group in self._retired:
                raise Aborted(self._retired[group])
            comm = self._create(group, timeout_s, key)
            self._comms[group] = comm
            return comm

    def _create(self, group: tuple[int, ...], timeout_s: float, key):
        """Two bounded keyed rounds, then the blocking ``MPI_Comm_create_group``, entered only
        when every process of the group has said it will enter it (module docstring)."""
        t = self._t
        mine = [d for d in group if t.process_of(d) == t.process_index]
        empty = {d: np.zeros(0, np.uint8) for d in mine}
        decision = ("hlort.distributed.group.decision", group)
        try:  # round one: everyone is here (bounded, names the missing)
            t.exchange(("hlort.distributed.group", group), empty, group, timeout_s=timeout_s)
        except HlortError as err:
            if err.code is ErrorCode.DEADLINE_EXCEEDED:  # tell the late: this one gave up
                self._retire(group, key, "its first collective timed out")
                with contextlib.suppress(HlortError):  # posted; the late peer receives it
                    t.exchange(
                        decision, {d: np.zeros(1, np.uint8) for d in mine}, group, timeout_s=1e-3
                    )
            raise
        # round two: every process says "I passed round one" (1) or "I gave up on it" (0).
        # Every process that sent round one sends one of them within its own timeout, so
        # this waits for decisions, not for arrivals: bounded by about one more timeout
        processes = sorted({t.process_of(d) for d in group})
        passed = {d: np.ones(1, np.int64) for d in mine}
        if t.process_index == processes[0]:
            passed[mine[0]] = np.array([1, self._allocate_tag(group)], np.int64)
        try:
            said = t.exchange(decision, passed, group, timeout_s=2 * timeout_s + 1)
        except HlortError as err:
            if err.code is not ErrorCode.DEADLINE_EXCEEDED:
                raise
            self._retire(group, key, "agreeing to create its communicator timed out")
            raise
        gave_up = sorted({t.process_of(d) for d, v in said.items() if v.size and not v[0]})
        if gave_up:
            self._retire(group, key, f"processes {gave_up} gave up on its first collective")
            raise HlortError(
                f"collective {key!r} over devices {list(group)} on process {t.process_index}: "
                f"process(es) {gave_up} reached this group's first collective earlier and gave "
                "up on it (their DEADLINE_EXCEEDED names this process as missing), so its MPI "
                "communicator cannot be made. Every process must run the same program with "
                "the same collectives in the same order; for a slow start raise "
                "HLORT_COLLECTIVE_TIMEOUT (seconds); restart the job",
                ErrorCode.DEADLINE_EXCEEDED,
            )
        tag = int(said[next(d for d in group if t.process_of(d) == processes[0])][1])
        members = t.comm.Get_group().Incl(processes)
        try:  # every process of the group said it comes: blocking, but not for long
            return t.comm.Create_group(members, tag)
        finally:
            members.Free()

    def _allocate_tag(self, group: tuple[int, ...]) -> int:
        """The creation tag of a group this process is the lowest of (module docstring)."""
        t = self._t
        share = (t._tag_ub + 1) // t.process_count
        with self._locks_lock:
            k, self._led = self._led, self._led + 1
        if k >= share:
            raise ResourceExhausted(
                f"collectives over devices {list(group)}: process {t.process_index} is the "
                f"lowest process of {k + 1} device groups, and MPI's tag space (TAG_UB "
                f"{t._tag_ub}) gives each process {share}; use fewer distinct replica groups"
            )
        return t.process_index * share + k

    def _retire(self, group: tuple[int, ...], key, why: str) -> None:
        self._retired[group] = (
            f"collectives over devices {list(group)} are unusable in this run: {why} "
            f"({key!r}), and MPI cannot take back what was sent; restart the job"
        )

    # -- the keyed exchange, where MPI is not thread-multiple ----------------------------------
    def _first_members(self, group: Sequence[int]) -> tuple[list[int], list[int]]:
        """This process's members of ``group`` and each process's first member, in order."""
        t = self._t
        mine = [d for d in group if t.process_of(d) == t.process_index]
        firsts: dict[int, int] = {}
        for d in group:
            firsts.setdefault(t.process_of(d), d)
        return mine, [firsts[p] for p in sorted(firsts)]

    def _exchange_reduce(self, key, array, op, group, timeout_s, send) -> np.ndarray:
        """All-reduce by the keyed exchange: each process sends its value under its first
        member, and every process folds them in process order (the same bits everywhere)."""
        mine, firsts = self._first_members(group)
        local = {d: np.zeros(0, array.dtype) for d in mine}
        local[mine[0]] = array if send is None else send
        got = self._t.exchange(key, local, group, timeout_s=timeout_s)
        values = [got[d] for d in firsts]
        if any(v.shape != array.shape or v.dtype != array.dtype for v in values):
            listed = ", ".join(
                f"process {self._t.process_of(d)}: {v.dtype}{list(v.shape)}"
                for d, v in zip(firsts, values, strict=True)
            )
            raise InvalidArgument(
                f"all_reduce {key!r} over devices {list(group)}: the processes passed different "
                f"shapes or types ({listed}); every process must pass the same"
            )
        combine = _UFUNCS[op]
        total = values[0].copy()  # not into ``array`` yet: it is one of the values
        for v in values[1:]:
            combine(total, v, out=total)
        np.copyto(array, total)
        return array

    def _exchange_all_to_all(self, key, local, group, timeout_s) -> dict[int, list[np.ndarray]]:
        """All-to-all by the keyed exchange: each member's pieces travel stacked, whole."""
        position = {d: i for i, d in enumerate(group)}
        stacked = {j: np.stack([np.asarray(p) for p in pieces]) for j, pieces in local.items()}
        got = self._t.exchange(key, stacked, group, timeout_s=timeout_s)
        self._check_received("all_to_all", key, group, {j: got[j][0] for j in group})
        return {i: [got[j][position[i]] for j in group] for i in local}

    # -- collectives ---------------------------------------------------------------------------
    def all_reduce(
        self,
        key,
        array: np.ndarray,
        op: str,
        group: Sequence[int],
        timeout_s: float,
        send: np.ndarray | None = None,
    ) -> np.ndarray:
        """Reduce ``array`` (contiguous, writable: this process's combined value) in place
        across the processes of ``group``; MPI's order, the same result on every process.
        With ``send`` (this process's value, contiguous, of ``array``'s shape and type) MPI
        reads it and writes the result into ``array``: no copy into ``array`` first."""
        if op not in self._ops:
            raise Internal(f"no MPI reduction for {op!r} (known: {', '.join(self._ops)})")
        deadline = time.monotonic() + timeout_s
        if send is not None and (send.shape != array.shape or send.dtype != array.dtype):
            raise Internal(
                f"all_reduce {key!r}: send {send.dtype}{list(send.shape)} is not "
                f"the result's {array.dtype}{list(array.shape)}"
            )
        comm = self.communicator(group, timeout_s, key)
        if comm is None:
            return self._exchange_reduce(key, array, op, group, timeout_s, send)

        def start(private: bool):
            if array.size == 0:
                return None
            given = array if send is None else send
            source = given.copy() if private else self._mpi.IN_PLACE if send is None else send
            result = np.empty_like(array) if private else array
            with self._t._mpi_lock:
                return comm.Iallreduce(source, result, self._ops[op]), (source, result, given)

        said = f"all_reduce {op} {_kind(array)}"
        started = self._agree_then_start(comm, said, key, group, deadline, timeout_s, start)
        if started is not None:
            self._wait(*started, group, deadline, timeout_s, key)
        return array

    def all_gather(
        self,
        key,
        local: Mapping[int, np.ndarray],
        group: Sequence[int],
        timeout_s: float,
    ) -> dict[int, np.ndarray]:
        """Every device of ``group``'s array, given this process's (all of one shape and
        type, as every member's is: a compiled collective's operands have static shapes)."""
        t = self._t
        group = tuple(int(d) for d in group)
        first = next(iter(local.values()))
        shape, dtype, nbytes = first.shape, first.dtype, first.nbytes
        deadline = time.monotonic() + timeout_s
        comm = self.communicator(group, timeout_s, key)
        if comm is None:
            got = t.exchange(key, local, group, timeout_s=timeout_s)
            self._check_received("all_gather", key, group, got)
            return got
        processes = sorted({t.process_of(d) for d in group})
        by_process = {p: sorted(d for d in group if t.process_of(d) == p) for p in processes}
        order = [d for p in processes for d in by_process[p]]
        slot = {d: i for i, d in enumerate(order)}
        received = np.empty(len(order) * nbytes, np.uint8)
        counts = [len(by_process[p]) * nbytes for p in processes]
        displacements = [slot[by_process[p][0]] * nbytes for p in processes]
        mine = by_process[t.process_index]
        MPI = self._mpi

        def start(private: bool):
            if not nbytes:
                return None
            into = np.empty_like(received) if private else received
            if len(mine) == 1:
                data = local[mine[0]].reshape(-1).view(np.uint8)
                send = [data.copy() if private else data, MPI.BYTE]
            else:  # in place: the local arrays go to their slots first (the one copy)
                for d in mine:
                    at = slot[d] * nbytes
                    into[at : at + nbytes] = local[d].reshape(-1).view(np.uint8)
                send = MPI.IN_PLACE
            with t._mpi_lock:
                request = comm.Iallgatherv(send, [into, (counts, displacements), MPI.BYTE])
            return request, (into, send, local)

        said = f"all_gather {_kind(first)} on {len(local)} device(s)"
        started = self._agree_then_start(comm, said, key, group, deadline, timeout_s, start)
        if started is not None:
            self._wait(*started, group, deadline, timeout_s, key)
        out = {}
        for d in group:
            if d in local:
                out[d] = local[d]
            else:
                at = slot[d] * nbytes
                out[d] = received[at : at + nbytes].view(dtype).reshape(shape)
        return out

    def all_to_all(
        self,
        key,
        local: Mapping[int, Sequence[np.ndarray]],
        group: Sequence[int],
        timeout_s: float,
    ) -> dict[int, list[np.ndarray]]:
        """``local[j][i]``, this process's member j's piece for member ``group[i]``, to that
        member's process only (one ``Ialltoallv``, packed by destination); returns per local
        member the pieces of every member, in group order."""
        t = self._t
        group = tuple(int(d) for d in group)
        first = next(iter(local.values()))[0]
        shape, dtype, nbytes = first.shape, first.dtype, first.nbytes
        deadline = time.monotonic() + timeout_s
        comm = self.communicator(group, timeout_s, key)
        if comm is None:
            return self._exchange_all_to_all(key, local, group, timeout_s)
        position = {d: i for i, d in enumerate(group)}
        processes = sorted({t.process_of(d) for d in group})
        members = {p: [d for d in group if t.process_of(d) == p] for p in processes}
        mine = members[t.process_index]
        # send: per destination process q, per member i of q, per local member j: j's piece i
        send_counts = [len(members[q]) * len(mine) * nbytes for q in processes]
        recv_counts = [len(mine) * len(members[q]) * nbytes for q in processes]
        send = np.empty(sum(send_counts), np.uint8)
        received = np.empty(sum(recv_counts), np.uint8)
        at = 0
        for q in processes:
            for i in members[q]:
                for j in mine:
                    send[at : at + nbytes] = local[j][position[i]].reshape(-1).view(np.uint8)
                    at += nbytes
        MPI = self._mpi
        displacements = [sum(send_counts[:k]) for k in range(len(processes))]
        received_at = [sum(recv_counts[:k]) for k in range(len(processes))]

        def start(private: bool):  # both buffers are this call's own already
            if not nbytes:
                return None
            with t._mpi_lock:
                request = comm.Ialltoallv(
                    [send, (send_counts, displacements), MPI.BYTE],
                    [received, (recv_counts, received_at), MPI.BYTE],
                )
            return request, (send, received)

        kinds = sorted({_kind(p) for pieces in local.values() for p in pieces})
        counts = sorted({len(pieces) for pieces in local.values()})
        said = f"all_to_all {' '.join(kinds)} in {'/'.join(map(str, counts))} piece(s)"
        started = self._agree_then_start(comm, said, key, group, deadline, timeout_s, start)
        if started is not None:
            self._wait(*started, group, deadline, timeout_s, key)
        out: dict[int, list[np.ndarray]] = {i: [None] * len(group) for i in mine}  # type: ignore[misc]
        at = 0
        for q in processes:  # from process q: per local member i, per member j of q
            for i in mine:
                for j in members[q]:
                    piece = received[at : at + nbytes].view(dtype).reshape(shape)
                    out[i][position[j]] = piece
                    at += nbytes
        return out

    def _agree_then_start(self, comm, said: str, key, group, deadline, timeout_s, start):
        """``start(False)`` (the collective's request and buffers, or None for no data) once
        every process of the group passes the same ``said`` (module docstring: one 16-byte
        Iallreduce); INVALID_ARGUMENT naming each process's on every process if not.

        A check that times out still starts the collective, on private copies
        (``start(True)``, abandoned with the check): a late peer whose check then agrees
        completes both, as it would complete an abandoned collective, and the caller's arrays
        are never written after its error. A late peer whose check disagrees finds nobody to
        tell (its keyed exchange times out) and retires the group."""
        h = int.from_bytes(hashlib.blake2b(said.encode(), digest_size=8).digest(), "little")
        h >>= 2  # -h must fit in an int64
        both = np.array([h, -h], np.int64)
        with self._t._mpi_lock:
            request = comm.Iallreduce(self._mpi.IN_PLACE, both, self._mpi.MAX)
        try:
            self._wait(request, (both,), group, deadline, timeout_s, key)
        except HlortError as err:
            if err.code is ErrorCode.DEADLINE_EXCEEDED:
                self._abandoned.append(start(True))
            raise
        if both[0] == -both[1]:  # the largest hash is the smallest: all are one
            return start(False)
        t = self._t
        mine, firsts = self._first_members(group)
        local = {d: np.zeros(0, np.uint8) for d in mine}
        local[mine[0]] = np.frombuffer(said.encode(), np.uint8)
        try:
            got = t.exchange(
                ("hlort.distributed.signature", key), local, group, timeout_s=timeout_s
            )
        except HlortError as err:
            if err.code is ErrorCode.DEADLINE_EXCEEDED:  # its peers gave up on this collective
                self._retire(
                    tuple(group), key, "processes disagreed on a collective after a timeout"
                )
                self._comms.pop(tuple(group), None)
            raise
        listed = "; ".join(
            f"process {t.process_of(d)}: {got[d].tobytes().decode()}" for d in firsts
        )
        raise _mismatch(key, group, listed)

    def _check_received(self, what: str, key, group, got: Mapping[int, np.ndarray]) -> None:
        """The keyed exchange's check: every process holds every member's array, so all of
        them see a mismatch and raise the same INVALID_ARGUMENT."""
        kinds: dict[int, set[str]] = {}
        for d in group:
            kinds.setdefault(self._t.process_of(d), set()).add(_kind(got[d]))
        if len({k for ks in kinds.values() for k in ks}) > 1:
            listed = "; ".join(
                f"process {p}: {what} {' '.join(sorted(k))}" for p, k in kinds.items()
            )
            raise _mismatch(key, group, listed)

    def _wait(self, request, buffers, group, deadline: float, timeout_s: float, key) -> None:
        """Poll ``request`` until done; past the deadline retire the group (module docstring)."""
        MPI = self._mpi
        lock = self._t._mpi_lock
        # poll without yielding first, as the transport's _Backoff does: on a busy machine a
        # yield can cost a whole scheduler slice (measured here: ~6 ms per sleep(0) at load
        # 10). Then yield between polls, never sleep: a large transfer progresses only while
        # MPI is called
        spin_until = time.monotonic() + SPIN_S
        while True:
            try:
                with lock:
                    if request.Test():
                        return
            except MPI.Exception as err:
                raise Internal(
                    f"MPI failed collective {key!r} over devices {list(group)}: {err} (do "
                    "all processes run the same program, with the same shapes?)"
                ) from None
            now = time.monotonic()
            if now > deadline:
                message = (
                    f"collective {key!r} over devices {list(group)} on process "
                    f"{self._t.process_index}: not every process of the group arrived within "
                    f"{timeout_s:g} s (MPI's collectives cannot tell which). Every process must "
                    "run the same program with the same collectives in the same order; for a "
                    "slow start raise HLORT_COLLECTIVE_TIMEOUT (seconds)"
                )
                group = tuple(group)
                self._retired[group] = (
                    f"collectives over devices {list(group)} are unusable in this run: an "
                    f"earlier one timed out ({key!r}), and MPI cannot cancel it; restart the job"
                )
                self._comms.pop(group, None)
                self._abandoned.append((request, buffers))
                raise HlortError(message, ErrorCode.DEADLINE_EXCEEDED)
            if now > spin_until:
                time.sleep(0)


def _kind(array: np.ndarray) -> str:
    """``f32[3,4]``-like text of an operand, for the agreement check and its message."""
    from hlort import dtypes

    return f"{dtypes.from_numpy(array.dtype).name}[{','.join(map(str, array.shape))}]"


def _mismatch(key, group, listed: str) -> InvalidArgument:
    return InvalidArgument(
        f"collective {key!r} over devices {list(group)}: the processes passed different "
        f"operands ({listed}); every process must run the same program, with the same "
        "element types and shapes in each collective"
    )
