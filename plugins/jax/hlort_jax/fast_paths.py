"""Getters the trampoline answers from C after the first call, per handle.

An answer qualifies when it never changes for the life of its handle (a buffer's element
type and dimensions, a device's description...). Handles are never reused, and destroying a
buffer or executable drops its cached answers (``_trampoline.forget``).
"""

from __future__ import annotations

from hlort_jax import _trampoline, abi_table
from hlort_jax.abi_structs import STRUCTS

# function -> (handle field, first output field, last output field)
CACHED_GETTERS = {
    "Buffer_ElementType": ("buffer", "type", "type"),
    "Buffer_Dimensions": ("buffer", "dims", "num_dims"),
    "Buffer_UnpaddedDimensions": ("buffer", "unpadded_dims", "num_dims"),
    "Buffer_DynamicDimensionIndices": ("buffer", "dynamic_dim_indices", "num_dynamic_dims"),
    "Buffer_Device": ("buffer", "device", "device"),
    "Buffer_Memory": ("buffer", "memory", "memory"),
    "Buffer_IsOnCpu": ("buffer", "is_on_cpu", "is_on_cpu"),
    "Device_GetDescription": ("device", "device_description", "device_description"),
    "Device_IsAddressable": ("device", "is_addressable", "is_addressable"),
    "Device_LocalHardwareId": ("device", "local_hardware_id", "local_hardware_id"),
    "Device_DefaultMemory": ("device", "memory", "memory"),
    "Device_AddressableMemories": ("device", "memories", "num_memories"),
    "DeviceDescription_Id": ("device_description", "id", "id"),
    "DeviceDescription_ProcessIndex": ("device_description", "process_index", "process_index"),
    "DeviceDescription_Kind": ("device_description", "device_kind", "device_kind_size"),
    "Memory_Kind": ("memory", "kind", "kind_size"),
    "Memory_Id": ("memory", "id", "id"),
    "Executable_NumOutputs": ("executable", "num_outputs", "num_outputs"),
    "Executable_NumReplicas": ("executable", "num_replicas", "num_replicas"),
    "Executable_NumPartitions": ("executable", "num_partitions", "num_partitions"),
    "Executable_Name": ("executable", "executable_name", "executable_name_size"),
    "LoadedExecutable_AddressableDevices": (
        "executable",
        "addressable_devices",
        "num_addressable_devices",
    ),
    "Client_PlatformName": ("client", "platform_name", "platform_name_size"),
    "Client_ProcessIndex": ("client", "process_index", "process_index"),
}


def declare_cached_getters() -> None:
    for function, (handle, first, last) in CACHED_GETTERS.items():
        cls = STRUCTS[f"{function}_Args"]
        start = getattr(cls, first).offset
        end = getattr(cls, last).offset + getattr(cls, last).size
        _trampoline.set_cacheable(
            abi_table.INDEX[function], getattr(cls, handle).offset, start, end - start
        )


_BUFFER_DEVICE = abi_table.INDEX["Buffer_Device"]
_BUFFER_MEMORY = abi_table.INDEX["Buffer_Memory"]


def prime_buffer(handle: int, device_answer: bytes, memory_answer: bytes) -> None:
    """Answer a new buffer's Buffer_Device / Buffer_Memory from C from its first call on."""
    _trampoline.prime(_BUFFER_DEVICE, handle, device_answer)
    _trampoline.prime(_BUFFER_MEMORY, handle, memory_answer)
