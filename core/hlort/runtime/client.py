"""The user-facing backend: one started plugin client, with devices, compile and device_put.

``hlort.backend("cpu")`` returns one of these. It wraps the plugin's
:class:`~hlort.plugin.api.Client` and keeps one :class:`Device` wrapper per plugin device, so
devices compare equal across calls.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from hlort.errors import InvalidArgument
from hlort.ir.module import Module
from hlort.plugin import api
from hlort.plugin.base.cache_dir import cache_enabled
from hlort.plugin.base.source_digest import core_source_digest
from hlort.plugin.options import CompileOptions, HostBufferSemantics
from hlort.runtime.buffer import Buffer
from hlort.runtime.device import Device


class Backend:
    def __init__(self, client: api.Client, plugin: api.Plugin | None = None):
        self.client = client
        self.plugin = plugin
        self._devices: dict[int, Device] = {}
        self._lock = threading.Lock()
        if cache_enabled():
            core_source_digest()  # once per process, at start-up rather than in the first compile

    @property
    def platform(self) -> str:
        return self.client.platform_name

    @property
    def platform_version(self) -> str:
        return self.client.platform_version

    def capabilities(self) -> api.Capabilities:
        return self.plugin.capabilities() if self.plugin is not None else api.Capabilities()

    # -- devices -------------------------------------------------------------------------------
    def wrap_device(self, raw: api.Device) -> Device:
        with self._lock:
            device = self._devices.get(id(raw))
            if device is None or device.raw is not raw:
                device = Device(self, raw)
                self._devices[id(raw)] = device
            return device

    def devices(self) -> list[Device]:
        """Addressable devices, by id."""
        return [self.wrap_device(d) for d in self.client.addressable_devices()]

    def device(self, device_id: int | None = None) -> Device:
        """The device with ``device_id``, or the first addressable one."""
        if device_id is None:
            devices = self.devices()
            if not devices:
                raise InvalidArgument(f"backend {self.platform} has no addressable device")
            return devices[0]
        return self.wrap_device(self.client.lookup_device(device_id))

    def own(self, device: Device | None) -> Device:
        if device is None:
            return self.device()
        if device.backend is not self:
            raise InvalidArgument(f"device {device} does not belong to backend {self.platform}")
        return device

    # -- work ----------------------------------------------------------------------------------
    def compile(
        self,
        program: Module | str | bytes | os.PathLike,
        device: Device | None = None,
        options: CompileOptions | Mapping[str, Any] | None = None,
    ):
        """Compile for this backend (on ``device``, else its first device)."""
        from hlort.runtime.compile import compile_on

        return compile_on(self, program, self.own(device) if device else None, options)

    def deserialize(self, data: bytes, options: CompileOptions | None = None):
        """Load an executable that ``Executable.serialize()`` produced on this platform."""
        from hlort.runtime.executable import Executable

        return Executable(self.client.deserialize_executable(data, options), self)

    def device_put(
        self,
        array: Any,
        device: Device | None = None,
        semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
    ) -> Buffer:
        """Copy a host array to ``device`` (the default: the caller may reuse the array)."""
        device = self.own(device)
        if isinstance(array, Buffer):
            return array.copy_to(device)
        raw = self.client.buffer_from_host(np.asarray(array), device.raw, semantics)
        return Buffer(raw, device)

    def __repr__(self) -> str:
        return f"Backend({self.platform}, {len(self.client.addressable_devices())} device(s))"
