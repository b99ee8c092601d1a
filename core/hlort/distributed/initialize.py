"""``hlort.distributed.initialize()``: join the processes of an MPI run into one set of devices.

Every process calls it once, with the same platform. It starts MPI (mpi4py, imported here and
nowhere earlier), starts this process's backend, tells every other process which devices it
has, and builds the global device list (:mod:`hlort.distributed.global_devices`) and the MPI
transport collectives use to reach devices of other processes. Bounded: a process that never
calls it makes the others fail with DEADLINE_EXCEEDED instead of hanging.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hlort.distributed.global_devices import GlobalDevice, GlobalDeviceTable, LocalDeviceInfo
from hlort.distributed.process_env import import_mpi, launcher_info
from hlort.distributed.transport import MpiTransport
from hlort.errors import FailedPrecondition, NotFound


@dataclass(frozen=True)
class DistributedRun:
    """What ``initialize`` formed: this process's place, the devices, the transport."""

    process_index: int
    process_count: int
    platform: str
    table: GlobalDeviceTable
    transport: MpiTransport
    backend: Any  # hlort.runtime.Backend of this process

    def devices(self) -> list[GlobalDevice]:
        return self.table.devices()

    def addressable_devices(self) -> list[GlobalDevice]:
        return self.table.addressable_devices()


_run: DistributedRun | None = None
_lock = threading.Lock()


def initialize(
    platform: str | None = None, *, comm=None, timeout_s: float | None = None
) -> DistributedRun:
    """Join this process to the run (idempotent for the same platform).

    ``platform``: the backend every process uses (default: the default backend, which must then
    be the same everywhere). ``comm``: an mpi4py communicator (default ``MPI.COMM_WORLD``); hlort
    works on a duplicate of it, so its messages never mix with the caller's. ``timeout_s``
    bounds the start-up exchange (default ``HLORT_COLLECTIVE_TIMEOUT`` or 60 s).
    """
    global _run
    with _lock:
        if _run is not None:
            if platform is not None and platform != _run.platform:
                raise FailedPrecondition(
                    f"hlort.distributed is already initialized on platform {_run.platform}; "
                    f"it cannot switch to {platform} in the same process"
                )
            return _run
        MPI = import_mpi()
        world = MPI.COMM_WORLD if comm is None else comm
        _check_launcher(world)
        comm = world.Dup()
        from hlort.runtime import selection

        backend = selection.backend(platform)
        local = backend.devices()
        infos = [
            LocalDeviceInfo(backend.platform, d.id, d.kind, d.local_hardware_id) for d in local
        ]
        holder: dict[str, GlobalDeviceTable] = {}
        transport = MpiTransport(comm, lambda device_id: holder["table"].process_of(device_id))
        gathered = transport.allgather_object(
            [i.to_wire() for i in infos], timeout_s, what="hlort.distributed.initialize"
        )
        per_process = [[LocalDeviceInfo.from_wire(x) for x in items] for items in gathered]
        table = GlobalDeviceTable(per_process, transport.process_index)
        table.with_local({d.id: d for d in local})
        holder["table"] = table
        # not set_cross_process_transport(): a process-wide transport would make every plain
        # hlort.compile here read its local device ids as global ones; hd.compile passes it
        _run = DistributedRun(
            transport.process_index,
            transport.process_count,
            backend.platform,
            table,
            transport,
            backend,
        )
        return _run


def _check_launcher(comm) -> None:
    """A launcher that started N ranks while MPI sees another number: two MPIs are mixed."""
    info = launcher_info()
    if info is not None and info.size is not None and info.size != comm.Get_size():
        raise FailedPrecondition(
            f"the launcher started {info.size} processes ({info.variable}) but MPI sees "
            f"{comm.Get_size()}: the mpirun used is not the one of the MPI library mpi4py "
            "loaded; start with the mpirun installed beside this Python (the Open MPI wheel's)"
        )


def current() -> DistributedRun:
    """The run ``initialize`` formed; FAILED_PRECONDITION before it was called."""
    if _run is None:
        raise FailedPrecondition(
            "hlort.distributed is not initialized: call hlort.distributed.initialize() on every "
            "process first (under mpirun)"
        )
    return _run


def is_initialized() -> bool:
    return _run is not None


def process_index() -> int:
    """This process's index (its MPI rank); 0 before ``initialize``."""
    return _run.process_index if _run is not None else 0


def process_count() -> int:
    return _run.process_count if _run is not None else 1


def devices() -> list[GlobalDevice]:
    """Every device of the run (PJRT's ``Client.devices()``), by global id."""
    return current().devices()


def addressable_devices() -> list[GlobalDevice]:
    """This process's devices (PJRT's ``Client.addressable_devices()``), by global id."""
    return current().addressable_devices()


def device(device_id: int) -> GlobalDevice:
    return current().table.device(device_id)


def local_device(device_id: int):
    """The runtime ``hlort.Device`` of global device ``device_id``; it must be this process's."""
    entry = device(device_id)
    if not entry.is_addressable:
        raise NotFound(
            f"device {device_id} belongs to process {entry.process_index}, not to this process "
            f"({process_index()}): only its own process can place buffers on it"
        )
    return entry.local
