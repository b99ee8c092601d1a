"""The global device list of a multi-process run: every process's devices, numbered once.

Each process describes its addressable devices (:class:`LocalDeviceInfo`); after an all-gather
every process holds the same list of descriptions and numbers them the same way: process 0's
devices first, in their local order, then process 1's, and so on, so device ``i`` means the same
device on every process (as PJRT's global device ids do). A device of another process is listed
with ``is_addressable=False``: it can be named in replica groups and device assignments, but no
buffer can be placed on it here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hlort.errors import InvalidArgument, NotFound


@dataclass(frozen=True)
class LocalDeviceInfo:
    """What one process tells the others about one of its devices."""

    platform: str
    local_id: int  # the device's id in its own process's backend ("cpu:1" -> 1)
    kind: str
    local_hardware_id: int

    def to_wire(self) -> tuple:
        return (self.platform, self.local_id, self.kind, self.local_hardware_id)

    @classmethod
    def from_wire(cls, item: Sequence[Any]) -> LocalDeviceInfo:
        platform, local_id, kind, hardware_id = item
        return cls(str(platform), int(local_id), str(kind), int(hardware_id))


@dataclass(frozen=True)
class GlobalDevice:
    """One device of the whole run, as every process sees it.

    ``local`` is the runtime device (``hlort.Device``) for devices of this process, else None.
    """

    id: int
    process_index: int
    platform: str
    kind: str
    local_id: int
    local_hardware_id: int
    is_addressable: bool
    local: Any = None

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __repr__(self) -> str:
        where = "here" if self.is_addressable else "remote"
        return (
            f"GlobalDevice({self}, process {self.process_index}, "
            f"local {self.platform}:{self.local_id}, {where})"
        )


class GlobalDeviceTable:
    """The numbering, identical on every process; ``own`` is this process's index."""

    def __init__(self, per_process: Sequence[Sequence[LocalDeviceInfo]], own: int):
        if not 0 <= own < len(per_process):
            raise InvalidArgument(f"process index {own} outside 0..{len(per_process) - 1}")
        platforms = {info.platform for infos in per_process for info in infos}
        if len(platforms) > 1:
            listing = "; ".join(
                f"process {i}: {sorted({d.platform for d in infos})}"
                for i, infos in enumerate(per_process)
            )
            raise InvalidArgument(
                f"processes chose different platforms ({listing}); pass the same platform= to "
                "hlort.distributed.initialize() on every process (or set HLORT_PLATFORMS)"
            )
        self.process_index = own
        self.process_count = len(per_process)
        devices: list[GlobalDevice] = []
        self._offsets: list[int] = []
        for process, infos in enumerate(per_process):
            self._offsets.append(len(devices))
            for info in infos:
                devices.append(
                    GlobalDevice(
                        id=len(devices),
                        process_index=process,
                        platform=info.platform,
                        kind=info.kind,
                        local_id=info.local_id,
                        local_hardware_id=info.local_hardware_id,
                        is_addressable=process == own,
                    )
                )
        self._devices = devices

    def devices(self) -> list[GlobalDevice]:
        """Every device of the run, by global id."""
        return list(self._devices)

    def addressable_devices(self) -> list[GlobalDevice]:
        """This process's devices, by global id."""
        return [d for d in self._devices if d.is_addressable]

    def device(self, device_id: int) -> GlobalDevice:
        if not 0 <= device_id < len(self._devices):
            raise NotFound(
                f"the run has no device {device_id}: its {self.process_count} process(es) have "
                f"devices 0..{len(self._devices) - 1}"
            )
        return self._devices[device_id]

    def process_of(self, device_id: int) -> int:
        """The process that owns global device ``device_id``."""
        return self.device(device_id).process_index

    def devices_of(self, process: int) -> list[GlobalDevice]:
        return [d for d in self._devices if d.process_index == process]

    def global_id(self, process: int, local_id: int) -> int:
        """The global id of ``process``'s device whose local id is ``local_id``."""
        for device in self.devices_of(process):
            if device.local_id == local_id:
                return device.id
        raise NotFound(f"process {process} has no device with local id {local_id}")

    def with_local(self, local_devices: dict[int, Any]) -> GlobalDeviceTable:
        """Attach this process's runtime devices (local id -> hlort.Device) to its entries."""
        for i, device in enumerate(self._devices):
            if device.is_addressable:
                self._devices[i] = replace(device, local=local_devices[device.local_id])
        return self
