"""Which device's part of an execution the current thread runs: replica, partition, device id
and the launch context holding the execution's rendezvous.

One compiled Program serves every device of an executable, and the devices run it at the same
time on their own threads, so what differs per device cannot live in the program or its shared
evaluator. ``Program.run`` enters a :class:`DeviceRun` for the thread running it; replica-id,
partition-id, the collectives' host steps and interpreter functions (through
:class:`DeviceEvaluator`) read it there. Nested programs (loop bodies, branches) run on the
same thread and see the same run.
"""

from __future__ import annotations

import threading
from typing import Any

from hlort.interpreter.evaluator import Evaluator


class DeviceRun:
    """One device's share of one execution. ``context`` is the launch's
    :class:`~hlort.plugin.base.launch_context.LaunchContext` (its rendezvous is where the
    collectives meet); None outside a launch (``execute_host``): the program runs as one copy.
    Immutable; a plain class, not a frozen dataclass, whose six generated methods' source every
    process's first compile compiled."""

    __slots__ = ("replica", "partition", "device_id", "context")

    def __init__(self, replica: int = 0, partition: int = 0, device_id: int = 0, context=None):
        _set = object.__setattr__
        _set(self, "replica", replica)
        _set(self, "partition", partition)
        _set(self, "device_id", device_id)
        _set(self, "context", context)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: DeviceRun is frozen")

    def __repr__(self) -> str:
        return (
            f"DeviceRun(replica={self.replica}, partition={self.partition}, "
            f"device_id={self.device_id}, context={self.context!r})"
        )

    @classmethod
    def of_launch(cls, ctx) -> DeviceRun:
        return cls(ctx.replica, ctx.partition, ctx.device_id, ctx)


SINGLE = DeviceRun()
_local = threading.local()


def current() -> DeviceRun:
    """The run the calling thread is inside; outside any, the single-device run."""
    return getattr(_local, "run", SINGLE)


class entered:  # noqa: N801 - used as a function: ``with entered(run):``
    """Make ``run`` the calling thread's run for the duration (re-entrant). A class, not a
    generator context manager: every launch enters one (a few microseconds less)."""

    __slots__ = ("run", "previous")

    def __init__(self, run: DeviceRun):
        self.run = run

    def __enter__(self) -> None:
        self.previous = getattr(_local, "run", SINGLE)
        _local.run = self.run

    def __exit__(self, *exc_info) -> None:
        _local.run = self.previous


class DeviceEvaluator(Evaluator):
    """The evaluator behind FALLBACK thunks: its replica and partition ids, and the peers a
    collective it evaluates meets, are the current thread's run's, so concurrent devices
    sharing one evaluator each see their own."""

    def __init__(self) -> None:
        super().__init__(check_shapes=False)

    @property
    def replica_id(self) -> int:  # type: ignore[override]
        return current().replica

    @replica_id.setter
    def replica_id(self, value: int) -> None:
        if value != current().replica:
            raise AttributeError("a cpu program's replica id is its device run's (device_run)")

    @property
    def partition_id(self) -> int:  # type: ignore[override]
        return current().partition

    @partition_id.setter
    def partition_id(self, value: int) -> None:
        if value != current().partition:
            raise AttributeError("a cpu program's partition id is its device run's (device_run)")

    @property
    def peers(self):  # type: ignore[override]
        ctx = current().context
        if ctx is None:
            return None
        from hlort.plugin.base.collectives import peers_for

        return peers_for(ctx)

    @peers.setter
    def peers(self, value) -> None:
        if value is not None:
            raise AttributeError("a cpu program's peers are its device run's (device_run)")
