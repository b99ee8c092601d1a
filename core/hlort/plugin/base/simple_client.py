"""SimpleClient and SimplePlugin: the rest of a plugin, written once.

A plugin built on these writes four small classes::

    class MyDevice(SimpleDevice):          # optional: real device memory
        def allocate(self, shape): ...
        def copy_in(self, storage, array): ...
        def copy_out(self, storage, shape): ...

    class MyExecutable(SimpleExecutable):
        def compile(self): ...             # codegen for self.module, once
        def launch(self, device, arguments, ctx): ...

    class MyClient(SimpleClient):
        executable_class = MyExecutable
        def create_devices(self): return [MyDevice(self, 0, "my-chip")]

    class MyPlugin(SimplePlugin):
        name, api_version, priority, client_class = "mine", (1, 0), 10, MyClient

Placement (device assignment), buffer creation under the four host-buffer semantics,
serialization and deserialization come from here.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hlort.errors import InvalidArgument, NotFound
from hlort.plugin.api import Buffer, Client, Device, MemorySpace, Plugin
from hlort.plugin.base.host_buffer import transfer_to_device
from hlort.plugin.base.serialization import unframe_executable
from hlort.plugin.base.simple_device import SimpleDevice
from hlort.plugin.base.simple_executable import Placement, SimpleExecutable
from hlort.plugin.capabilities import Capabilities
from hlort.plugin.options import CompileOptions, HostBufferSemantics


class SimpleClient(Client):
    """A client over a fixed list of :class:`SimpleDevice` objects.

    ``platform_name`` defaults to the plugin's ``name`` and ``platform_version`` to its
    ``attributes()["version"]``.
    """

    executable_class: ClassVar[type[SimpleExecutable]]

    def __init__(
        self,
        plugin: Plugin | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        platform_name: str | None = None,
    ):
        self.plugin = plugin
        self.client_options = dict(options or {})
        self._platform_name = platform_name or getattr(plugin, "name", None) or "simple"
        self._devices: list[SimpleDevice] = list(self.create_devices())
        ids = [d.id for d in self._devices]
        if len(set(ids)) != len(ids):
            raise InvalidArgument(f"{self._platform_name}: device ids {ids} are not unique")
        self._closed = False

    @abc.abstractmethod
    def create_devices(self) -> Sequence[SimpleDevice]:
        """The devices of this client, created once at start."""

    # -- identity ------------------------------------------------------------------------------
    @property
    def platform_name(self) -> str:
        return self._platform_name

    @property
    def platform_version(self) -> str:
        if self.plugin is None:
            return "unknown"
        return str(self.plugin.attributes().get("version", "unknown"))

    def devices(self) -> list[SimpleDevice]:
        return list(self._devices)

    def own_device(self, device: Device) -> SimpleDevice:
        """``device`` if it belongs to this client; INVALID_ARGUMENT otherwise."""
        if isinstance(device, SimpleDevice) and device.client is self:
            return device
        raise InvalidArgument(
            f"device {device!r} does not belong to the {self.platform_name} client; use one of "
            f"{[f'{self.platform_name}:{d.id}' for d in self._devices]}"
        )

    # -- compilation ---------------------------------------------------------------------------
    def resolve_placements(self, options: CompileOptions) -> list[Placement]:
        """One placement per (replica, partition), from the assignment or the first devices."""
        count = options.num_replicas * options.num_partitions
        assignment = options.device_assignment
        if assignment is None:
            devices = self.addressable_devices()
            if count > len(devices):
                raise InvalidArgument(
                    f"the program needs {count} device(s) ({options.num_replicas} replica(s) x "
                    f"{options.num_partitions} partition(s)); {self.platform_name} has "
                    f"{len(devices)}"
                )
            assignment = tuple(
                tuple(
                    devices[r * options.num_partitions + p].id
                    for p in range(options.num_partitions)
                )
                for r in range(options.num_replicas)
            )
        placements = []
        for replica, row in enumerate(assignment):
            for partition, device_id in enumerate(row):
                try:
                    device = self.lookup_device(device_id)
                except NotFound as err:
                    raise InvalidArgument(f"device_assignment: {err.message}") from None
                placements.append(Placement(self.own_device(device), replica, partition))
        return placements

    def compile(self, module, options: CompileOptions) -> SimpleExecutable:
        return self.executable_class(self, module, options, self.resolve_placements(options))

    def deserialize_executable(
        self, data: bytes, options: CompileOptions | None = None
    ) -> SimpleExecutable:
        header, payload = unframe_executable(data, platform=self.platform_name)
        if options is None:
            options = CompileOptions.from_dict(header.metadata.get("compile_options", {}))
        module = self.executable_class.module_from_payload(payload, header)
        executable = self.compile(module, options)
        executable._fingerprint = header.fingerprint
        return executable

    # -- buffers -------------------------------------------------------------------------------
    def buffer_from_host(
        self,
        array: np.ndarray,
        device: Device,
        semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        *,
        memory_space: MemorySpace | None = None,
    ) -> Buffer:
        target = self.own_device(device)
        if memory_space is not None and memory_space not in target.memory_spaces():
            raise InvalidArgument(
                f"memory space {memory_space!r} is not addressable by {self.platform_name}:"
                f"{target.id}"
            )
        return transfer_to_device(target, array, semantics)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for device in self._devices:
            device.queue.close()
        for device in self._devices:  # after the queues: their last work may drop buffers
            device.drain_deferred()


class SimplePlugin(Plugin):
    """A plugin whose client is ``client_class(self, options)``."""

    client_class: ClassVar[type[SimpleClient]]

    def capabilities(self) -> Capabilities:
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
        )

    def create_client(self, options: Mapping[str, Any] | None = None) -> SimpleClient:
        return self.client_class(self, options)
