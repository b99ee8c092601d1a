"""Where the devices of one execution meet: :class:`Rendezvous`, and the per-device
:class:`LaunchContext` that ``SimpleExecutable.launch`` receives.

``SimpleExecutable.execute`` over N devices makes one :class:`Rendezvous` for that execution
and gives every device's launch a :class:`LaunchContext` holding it. A collective on a device
calls :meth:`Rendezvous.exchange` (all members of a group contribute; each gets every value in
group order) or :meth:`Rendezvous.send_receive` (collective-permute's pairs). A wait never
hangs: after ``timeout_s`` (``HLORT_COLLECTIVE_TIMEOUT`` seconds, default 60) it raises
DEADLINE_EXCEEDED naming the device ids that did not arrive; when a device's program fails,
:meth:`Rendezvous.abort` wakes every waiter with ABORTED naming that device.

Devices of other processes (multi-host) are reached through a :class:`CrossProcessTransport`
(hlort.distributed implements it over MPI and registers it with
:func:`set_cross_process_transport`): the rendezvous gathers the values of its own devices, the
last of them to arrive hands them to the transport (one array at a time), and the transport
returns the whole group's values.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import field
from typing import Any, Protocol

import numpy as np

from hlort.errors import Aborted, DeadlineExceeded, FailedPrecondition, HlortError, InvalidArgument
from hlort.lazy_dataclass import dataclass
from hlort.plugin.options import ExecuteOptions

Values = tuple[np.ndarray, ...]
TIMEOUT_ENV = "HLORT_COLLECTIVE_TIMEOUT"
DEFAULT_TIMEOUT_S = 60.0


def collective_timeout_s() -> float:
    """``HLORT_COLLECTIVE_TIMEOUT`` (seconds, > 0) or 60."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InvalidArgument(f"{TIMEOUT_ENV}={raw!r} must be a number of seconds > 0")
    return value


class CrossProcessTransport(Protocol):
    """Moves collective values between processes (hlort.distributed's MPI transport).

    Device ids are global. Keys are tuples of ints and strings, equal on every process for the
    same collective step (``rendezvous.key + (instruction name, step, ...)``).
    """

    process_index: int  # this process's rank

    def process_of(self, device_id: int) -> int:
        """The process (rank) owning global device ``device_id``."""
        ...

    def exchange(
        self,
        key: tuple,
        local: dict[int, np.ndarray],
        group: Sequence[int],
        *,
        timeout_s: float | None = None,
    ) -> dict[int, np.ndarray]:
        """``local`` holds the values of this process's members of ``group`` (all of them);
        return every member's value. Called once per (key, group) per process, possibly from
        several threads at once for different groups."""
        ...


_TRANSPORT: CrossProcessTransport | None = None


def set_cross_process_transport(transport: CrossProcessTransport | None) -> None:
    """The process-wide transport a :class:`Rendezvous` uses when none is passed
    (``hlort.distributed.initialize()`` sets it; None removes it)."""
    global _TRANSPORT
    _TRANSPORT = transport


def cross_process_transport() -> CrossProcessTransport | None:
    return _TRANSPORT


class _Slot:
    __slots__ = ("values", "result", "error", "readers", "leader_busy")

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.result: dict[int, Any] | None = None
        self.error: BaseException | None = None
        self.readers = 0
        self.leader_busy = False


class Rendezvous:
    """The meeting point of the devices of one execution.

    ``device_assignment[replica][partition]`` is a global device id; ``local_device_ids`` are
    the ones this process runs (default: all); groups with other ids need ``transport``.
    ``key`` distinguishes executions for the transport (equal on every process for the same
    execution). One instance serves one execution: steps are counted per device and
    instruction, so a collective in a loop meets its peers' same iteration.
    """

    def __init__(
        self,
        device_assignment: Sequence[Sequence[int]],
        *,
        local_device_ids: Sequence[int] | None = None,
        timeout_s: float | None = None,
        transport: CrossProcessTransport | None = None,
        key: tuple = (),
    ):
        self.device_assignment = tuple(tuple(int(d) for d in row) for row in device_assignment)
        self.num_replicas = len(self.device_assignment)
        self.num_partitions = len(self.device_assignment[0]) if self.device_assignment else 0
        self.device_ids = [d for row in self.device_assignment for d in row]
        self.transport = transport if transport is not None else cross_process_transport()
        if local_device_ids is None:
            t = self.transport
            local_device_ids = (
                self.device_ids
                if t is None
                else [d for d in self.device_ids if t.process_of(d) == t.process_index]
            )
        self.local_device_ids = frozenset(local_device_ids)
        self._timeout_s = None if timeout_s is None else float(timeout_s)
        self.key = tuple(key)
        self._flat = {d: i for i, d in enumerate(self.device_ids)}
        self._cond = threading.Condition()
        self._slots: dict[Hashable, _Slot] = {}
        self._steps: dict[tuple[int, str], int] = {}
        self._abort: tuple[int, BaseException] | None = None

    @property
    def timeout_s(self) -> float:
        """Seconds a device waits for its peers (read from the environment at the first wait,
        so executions without collectives never depend on it)."""
        if self._timeout_s is None:
            self._timeout_s = collective_timeout_s()
        return self._timeout_s

    # -- ids -----------------------------------------------------------------------------------
    def device_of(self, flat_id: int) -> int:
        """The device id running copy ``flat_id`` (replica * num_partitions + partition)."""
        return self.device_ids[flat_id]

    def flat_id_of(self, device_id: int) -> int:
        return self._flat[device_id]

    def next_step(self, device_id: int, name: str) -> int:
        """How many times ``device_id`` met collective ``name`` before (0, 1, ...)."""
        with self._cond:
            step = self._steps.get((device_id, name), 0)
            self._steps[(device_id, name)] = step + 1
            return step

    # -- meeting ---------------------------------------------------------------------------
    def exchange(self, key: tuple, device_id: int, value: Any, group: Sequence[int]) -> list:
        """``device_id`` contributes ``value`` under ``key``; returns the values of every
        device of ``group`` (device ids, holding ``device_id``) in group order."""
        group = tuple(int(d) for d in group)
        result = self._meet(("exchange", key, group), key, device_id, value, group, None)
        return [result[d] for d in group]

    def all_reduce(
        self,
        key: tuple,
        device_id: int,
        value: Values,
        group: Sequence[int],
        reducer,
        empty=None,
    ) -> Values:
        """A native all-reduce (``reducer``: :class:`~hlort.plugin.base.native_reduce.
        NativeReducer`) of ``value`` (a tuple of arrays) over ``group``, which reaches other
        processes: this process's members' values are folded here in group order, then the
        transport reduces that across processes with MPI's own Allreduce (MPI's order). Every
        member gets its own arrays (from ``empty(shape, dtype)``, default ``np.empty``: a
        backend may pass its pool of warm pages)."""
        group = tuple(int(d) for d in group)
        empty = np.empty if empty is None else empty
        local = [d for d in group if d in self.local_device_ids]

        def lead(values: dict[int, Any]) -> dict:
            out = []
            for k in range(len(values[local[0]])):
                parts = [np.asarray(values[d][k]) for d in local]
                total = empty(parts[0].shape, parts[0].dtype)
                send = parts[0] if len(parts) == 1 else reducer.fold_into(parts, total)
                out.append(
                    self.transport.all_reduce(  # type: ignore[union-attr]
                        self.key + key + (k,),
                        total,
                        reducer.name,
                        group,
                        timeout_s=self.timeout_s,
                        send=send if send is not total else None,
                    )
                )
            return {"total": tuple(out)}

        result = self._meet(("all-reduce", key, group), key, device_id, value, group, lead)
        total = result["total"]
        if device_id == local[0]:
            return total
        copies = tuple(empty(a.shape, a.dtype) for a in total)
        for c, a in zip(copies, total, strict=True):
            np.copyto(c, a)
        return copies

    def all_to_all(
        self, key: tuple, device_id: int, pieces: Sequence[np.ndarray], group: Sequence[int]
    ) -> list[np.ndarray]:
        """``pieces[i]`` (contiguous, one shape and type for every member and i) goes to member
        ``group[i]`` only; returns the pieces every member sent ``device_id``, in group order.
        The group reaches other processes: the transport's ``all_to_all`` moves them."""
        group = tuple(int(d) for d in group)

        def lead(values: dict[int, Any]) -> dict:
            return self.transport.all_to_all(  # type: ignore[union-attr]
                self.key + key, values, group, timeout_s=self.timeout_s
            )

        return self._meet(("all-to-all", key, group), key, device_id, pieces, group, lead)[
            device_id
        ]

    def _meet(self, slot_key, key, device_id: int, value, group: tuple, lead) -> dict:
        """The meeting of one collective step: every member of ``group`` in this process
        contributes; when the group reaches other processes the last local member to arrive
        runs ``lead`` (default: :meth:`_remote_exchange`) on the local values and everyone gets
        its result; otherwise the result is every member's value."""
        if device_id not in group:
            raise InvalidArgument(f"device {device_id} is not in its group {list(group)}")
        local = [d for d in group if d in self.local_device_ids]
        remote = [d for d in group if d not in self.local_device_ids]
        if remote and self.transport is None:
            raise FailedPrecondition(
                f"collective {_what(key)}: devices {remote} of group {list(group)} are not in "
                f"this process and no cross-process transport is set (hlort.distributed)"
            )
        if remote and len(local) == 1:  # nobody here to meet: lead at once
            self._check_abort(key)
            values = {device_id: value}
            return self._remote_exchange(key, values, group) if lead is None else lead(values)
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            slot = self._slots.setdefault(slot_key, _Slot())
            slot.values[device_id] = value
            self._cond.notify_all()
            if remote and len(slot.values) == len(local) and not slot.leader_busy:
                slot.leader_busy = True
                self._cond.release()
                try:
                    try:
                        values = dict(slot.values)
                        if lead is None:
                            all_values = self._remote_exchange(key, values, group)
                        else:
                            all_values = lead(values)
                    except BaseException as exc:  # the other local members see it too
                        all_values, slot.error = None, exc
                finally:
                    self._cond.acquire()
                slot.result = all_values
                self._cond.notify_all()
            elif not remote and len(slot.values) == len(group):
                slot.result = dict(slot.values)
                self._cond.notify_all()
            while slot.result is None and slot.error is None:
                self._check_abort(key)
                left = deadline - time.monotonic()
                if left <= 0:
                    arrived = sorted(slot.values)
                    missing = [d for d in (local if remote else group) if d not in slot.values]
                    if remote and not missing:
                        missing = remote
                    raise DeadlineExceeded(
                        f"collective {_what(key)}: device(s) {missing} of group {list(group)} "
                        f"did not arrive within {self.timeout_s:g} s ({TIMEOUT_ENV}); "
                        f"device(s) {arrived} did. A device that skips the collective (a "
                        f"data-dependent branch), runs another program or never starts causes "
                        f"this"
                    )
                self._cond.wait(left)
            if slot.error is not None:
                raise slot.error
            result = slot.result
            slot.readers += 1
            if slot.readers == len(local):
                del self._slots[slot_key]
        return result

    def _remote_exchange(self, key: tuple, local: dict[int, Any], group: tuple) -> dict:
        """Through the transport, one array at a time (values are tuples of arrays): MPI's
        all-gather when the transport has one (a compiled collective's values have one shape
        and type on every member), else its keyed exchange."""
        count = len(next(iter(local.values())))
        move = getattr(self.transport, "all_gather", None) or self.transport.exchange  # type: ignore[union-attr]
        parts: list[dict[int, np.ndarray]] = []
        for k in range(count):
            mine = {d: np.require(v[k], requirements="C") for d, v in local.items()}
            parts.append(move(self.key + key + (k,), mine, group, timeout_s=self.timeout_s))
        return {d: tuple(part[d] for part in parts) for d in group}

    def send_receive(
        self,
        key: tuple,
        device_id: int,
        value: Any,
        send_to: int | None,
        receive_from: int | None,
    ) -> Any | None:
        """Post ``value`` for ``send_to`` (if any) and wait for what ``receive_from`` posted
        for ``device_id`` (None when ``receive_from`` is None).

        A pair with a device of another process is an :meth:`exchange` of the pair's two
        values; a device's remote pairs run in one global order (by (source, target)), so two
        processes sending to each other never wait for each other crosswise.
        """
        received = None
        remote_pairs = []
        if send_to is not None:
            if send_to in self.local_device_ids:
                with self._cond:
                    slot = self._slots.setdefault(("pair", key, device_id, send_to), _Slot())
                    slot.result = {device_id: value}
                    self._cond.notify_all()
            else:
                remote_pairs.append((device_id, send_to))
        if receive_from is not None and receive_from not in self.local_device_ids:
            remote_pairs.append((receive_from, device_id))
        for pair in sorted(remote_pairs):
            if self.transport is None:
                other = pair[1] if pair[0] == device_id else pair[0]
                self._need_transport(key, other)
            got = self.exchange(key + pair, device_id, value, pair)
            if pair[1] == device_id:
                received = got[0]
        if receive_from is None or receive_from not in self.local_device_ids:
            return received
        slot_key = ("pair", key, receive_from, device_id)
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            while True:
                slot = self._slots.get(slot_key)
                if slot is not None and slot.result is not None:
                    del self._slots[slot_key]
                    return slot.result[receive_from]
                self._check_abort(key)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeadlineExceeded(
                        f"collective {_what(key)}: device(s) [{receive_from}] did not arrive "
                        f"within {self.timeout_s:g} s ({TIMEOUT_ENV}) to send to device "
                        f"{device_id}"
                    )
                self._cond.wait(left)

    def abort(self, device_id: int, error: BaseException) -> None:
        """Device ``device_id`` failed: every device waiting here raises ABORTED naming it."""
        with self._cond:
            if self._abort is None:
                self._abort = (device_id, error)
            self._cond.notify_all()

    def _check_abort(self, key: tuple) -> None:
        if self._abort is not None:
            device_id, error = self._abort
            text = error.message if isinstance(error, HlortError) else repr(error)
            raise Aborted(
                f"collective {_what(key)} gave up: device {device_id} failed before reaching "
                f"it: {text}"
            )

    def _need_transport(self, key: tuple, device_id: int) -> None:
        if self.transport is None:
            raise FailedPrecondition(
                f"collective {_what(key)}: device {device_id} is not in this process and no "
                f"cross-process transport is set (hlort.distributed)"
            )


def _what(key: tuple) -> str:
    if len(key) == 2:
        return f"{key[0]} (step {key[1]})"
    return str(key)


@dataclass(frozen=True)
class LaunchContext:
    """What ``launch`` may need besides the device and the argument storage.

    ``replica``/``partition`` are this copy's numbers (replica-id, partition-id);
    ``device_id`` is the global id of the device it runs on; ``rendezvous`` is the meeting
    point of this execution's devices (None for a one-device execution without collectives
    peers: :func:`hlort.plugin.base.collectives.collective_result` then runs it as one copy).
    """

    replica: int
    partition: int
    launch_id: int
    options: ExecuteOptions
    device_id: int = 0
    rendezvous: Rendezvous | None = field(default=None, compare=False)

    @property
    def num_replicas(self) -> int:
        return self.rendezvous.num_replicas if self.rendezvous is not None else 1

    @property
    def num_partitions(self) -> int:
        return self.rendezvous.num_partitions if self.rendezvous is not None else 1

    @property
    def flat_id(self) -> int:
        return self.replica * self.num_partitions + self.partition
