"""PJRT plugin, client, device, device-description and memory functions."""

from __future__ import annotations

import ctypes

from hlort.errors import InvalidArgument, NotFound
from hlort_jax import abi_structs, client_options, device_count
from hlort_jax.bridge_objects import MEMORY_KIND_ID, BridgeClient
from hlort_jax.device_plan import too_few_devices
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import CStrings, pjrt

_static = CStrings()


def _named_values(values: dict) -> tuple[int, int]:
    """A PJRT_NamedValue array (process lifetime) for {name: int | str | bool | list[int]}."""
    cls = abi_structs.STRUCTS["NamedValue"]
    arr = (cls * max(1, len(values)))()
    for item, (name, value) in zip(arr, values.items(), strict=False):
        item.struct_size = abi_structs.struct_size("NamedValue")
        item.name, item.name_size = _static.put(name)
        if isinstance(value, bool):
            item.type, item.value, item.value_size = 4, int(value), 1
        elif isinstance(value, int):
            item.type, item.value, item.value_size = 1, value, 1
        elif isinstance(value, str):
            address, size = _static.put(value)
            item.type, item.value, item.value_size = 0, address, size
        else:
            item.type = 2
            item.value = _static.array(ctypes.c_int64, value)
            item.value_size = len(value)
    _static.hold(arr)
    return ctypes.addressof(arr), len(values)


_plugin_attributes: tuple[int, int] | None = None


@pjrt("Plugin_Initialize")
def plugin_initialize(address: int) -> None:
    return None


@pjrt("Plugin_Attributes")
def plugin_attributes(a) -> None:
    global _plugin_attributes
    if _plugin_attributes is None:
        from jaxlib.mlir.dialects import stablehlo

        def version(text: str) -> list[int]:
            return [int(p) for p in text.split(".")]

        _plugin_attributes = _named_values(
            {
                "stablehlo_current_version": version(stablehlo.get_current_version()),
                "stablehlo_minimum_version": version(stablehlo.get_minimum_version()),
                "xla_version": 2,
            }
        )
    a.attributes, a.num_attributes = _plugin_attributes


@pjrt("Client_Create")
def client_create(a) -> None:
    options = client_options.read_named_values(a.create_options, a.num_options)
    name = options.get("hlort_backend")
    if not isinstance(name, str):
        raise InvalidArgument("PJRT_Client_Create needs the create option hlort_backend=<name>")
    device_count.check_single_process(options)
    backend = device_count.backend_with(name, options)
    client = BridgeClient(backend, options.get("platform_name") or f"hlort_{name}")
    a.client = client.handle


@pjrt("Client_Destroy")
def client_destroy(a) -> None:
    HANDLES.drop(a.client)


@pjrt("Client_PlatformName")
def client_platform_name(a) -> None:
    a.platform_name, a.platform_name_size = HANDLES.get(a.client).name_c


@pjrt("Client_ProcessIndex")
def client_process_index(a) -> None:
    a.process_index = 0


@pjrt("Client_PlatformVersion")
def client_platform_version(a) -> None:
    a.platform_version, a.platform_version_size = HANDLES.get(a.client).version_c


@pjrt("Client_Devices")
def client_devices(a) -> None:
    client = HANDLES.get(a.client)
    a.devices, a.num_devices = client.device_array, len(client.devices)


@pjrt("Client_AddressableDevices")
def client_addressable_devices(a) -> None:
    client = HANDLES.get(a.client)
    a.addressable_devices, a.num_addressable_devices = client.device_array, len(client.devices)


@pjrt("Client_LookupDevice")
def client_lookup_device(a) -> None:
    client = HANDLES.get(a.client)
    device = client.by_id.get(a.id)
    if device is None:
        raise NotFound(f"{client.platform_name} has no device with id {a.id}")
    a.device = device.handle


@pjrt("Client_LookupAddressableDevice")
def client_lookup_addressable_device(a) -> None:
    client = HANDLES.get(a.client)
    for device in client.devices:
        if device.raw.local_hardware_id == a.local_hardware_id:
            a.addressable_device = device.handle
            return
    raise NotFound(f"{client.platform_name} has no local hardware id {a.local_hardware_id}")


@pjrt("Client_AddressableMemories")
def client_addressable_memories(a) -> None:
    client = HANDLES.get(a.client)
    a.addressable_memories, a.num_addressable_memories = client.memory_array, len(client.devices)


@pjrt("Client_DefaultDeviceAssignment")
def client_default_device_assignment(a) -> None:
    client = HANDLES.get(a.client)
    needed = a.num_replicas * a.num_partitions
    if needed > len(client.devices):
        raise too_few_devices(client, a.num_replicas, a.num_partitions)
    out = (ctypes.c_int * needed).from_address(a.default_assignment)
    for i in range(needed):
        out[i] = client.devices[i].raw.id


# -- device descriptions -------------------------------------------------------------------
_no_attributes = _named_values({})


@pjrt("DeviceDescription_Id")
def description_id(a) -> None:
    a.id = HANDLES.get(a.device_description).device.raw.id


@pjrt("DeviceDescription_ProcessIndex")
def description_process_index(a) -> None:
    a.process_index = 0


@pjrt("DeviceDescription_Attributes")
def description_attributes(a) -> None:
    a.attributes, a.num_attributes = _no_attributes[0], 0


@pjrt("DeviceDescription_Kind")
def description_kind(a) -> None:
    a.device_kind, a.device_kind_size = HANDLES.get(a.device_description).device.kind


@pjrt("DeviceDescription_DebugString")
def description_debug_string(a) -> None:
    a.debug_string, a.debug_string_size = HANDLES.get(a.device_description).device.debug_string


@pjrt("DeviceDescription_ToString")
def description_to_string(a) -> None:
    a.to_string, a.to_string_size = HANDLES.get(a.device_description).device.to_string


# -- devices -------------------------------------------------------------------------------
@pjrt("Device_GetDescription")
def device_get_description(a) -> None:
    a.device_description = HANDLES.get(a.device).description.handle


@pjrt("Device_IsAddressable")
def device_is_addressable(a) -> None:
    a.is_addressable = True


@pjrt("Device_LocalHardwareId")
def device_local_hardware_id(a) -> None:
    a.local_hardware_id = HANDLES.get(a.device).raw.local_hardware_id


@pjrt("Device_AddressableMemories")
def device_addressable_memories(a) -> None:
    a.memories, a.num_memories = HANDLES.get(a.device).memory_array, 1


@pjrt("Device_DefaultMemory")
def device_default_memory(a) -> None:
    a.memory = HANDLES.get(a.device).memory.handle


@pjrt("Device_MemoryStats")
def device_memory_stats(a) -> None:
    stats = HANDLES.get(a.device).raw.memory_stats()
    a.bytes_in_use = int(getattr(stats, "bytes_in_use", 0) or 0)
    peak = getattr(stats, "peak_bytes_in_use", None)
    if peak is not None:
        a.peak_bytes_in_use, a.peak_bytes_in_use_is_set = int(peak), True
    limit = getattr(stats, "bytes_limit", None)
    if limit is not None:
        a.bytes_limit, a.bytes_limit_is_set = int(limit), True


@pjrt("Device_GetAttributes")
def device_get_attributes(a) -> None:
    """Never fails (jaxlib aborts otherwise): no attributes, a no-op deleter."""
    from hlort_jax import _trampoline

    a.attributes, a.num_attributes = _no_attributes[0], 0
    a.device_attributes = None
    a.attributes_deleter = _trampoline.addresses()["no_op_deleter"]


# -- memories ------------------------------------------------------------------------------
@pjrt("Memory_Id")
def memory_id(a) -> None:
    a.id = HANDLES.get(a.memory).id


@pjrt("Memory_Kind")
def memory_kind(a) -> None:
    a.kind, a.kind_size = HANDLES.get(a.memory).kind


@pjrt("Memory_Kind_Id")
def memory_kind_id(a) -> None:
    a.kind_id = MEMORY_KIND_ID


@pjrt("Memory_DebugString")
def memory_debug_string(a) -> None:
    a.debug_string, a.debug_string_size = HANDLES.get(a.memory).debug_string


@pjrt("Memory_ToString")
def memory_to_string(a) -> None:
    a.to_string, a.to_string_size = HANDLES.get(a.memory).to_string


@pjrt("Memory_AddressableByDevices")
def memory_addressable_by_devices(a) -> None:
    a.devices, a.num_devices = HANDLES.get(a.memory).devices_array, 1
