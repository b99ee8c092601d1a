"""The one table of the PJRT C API layout this bridge speaks (API 0.94).

Written from the facts of XLA's ``xla/pjrt/c/pjrt_c_api.h`` at commit 0882740a (129 function
pointers, ``sizeof(PJRT_Api)`` = 1072). Everything else is generated from this file: the ctypes
structures (abi_structs.py) and, at install time, the C header of the trampoline (setup.py runs
``c_header()``), whose static asserts and load-time layout report must agree with ctypes.

This module imports nothing from the package, so setup.py can load it by path.
"""

from __future__ import annotations

API_MAJOR = 0
API_MINOR = 94
API_STRUCT_SIZE = 1072

# Field types: C spelling and (size, alignment) on LP64.
C_TYPES = {
    "size": ("size_t", 8),
    "ptr": ("void*", 8),
    "i32": ("int32_t", 4),
    "i64": ("int64_t", 8),
    "bool": ("_Bool", 1),
    "layout": ("hl_MemoryLayout", 8),  # PJRT_Buffer_MemoryLayout, embedded by value
}

# Structs that are not a function's argument struct. Every one starts with
# struct_size + extension_start, except where "bare" says otherwise.
AUX_STRUCTS = {
    "NamedValue": "name:ptr name_size:size type:i32 value:i64 value_size:size",
    "Program": "code:ptr code_size:size format:ptr format_size:size",
    # The union of Tiled (5 words) and Strides (2 words), then the type tag.
    "MemoryLayout": "u_struct_size:size u_ext:ptr minor_to_major_or_strides:ptr "
    "minor_to_major_size_or_num_strides:size tile_dims:ptr tile_dim_sizes:ptr num_tiles:size "
    "type:i32",
    "ExecuteOptions": "send_callbacks:ptr recv_callbacks:ptr num_send_ops:size num_recv_ops:size "
    "launch_id:i32 non_donatable_input_indices:ptr num_non_donatable_input_indices:size "
    "context:ptr call_location:ptr num_tasks:size task_ids:ptr incarnation_ids:ptr",
}

# (function, argument-struct fields after struct_size/extension_start), in PJRT_Api order.
# An empty field string: the bridge does not implement it (it answers UNIMPLEMENTED) and only
# the function's slot matters.
FUNCTIONS: list[tuple[str, str]] = [
    ("Error_Destroy", "error:ptr"),
    ("Error_Message", "error:ptr message:ptr message_size:size"),
    ("Error_GetCode", "error:ptr code:i32"),
    ("Plugin_Initialize", "-"),
    ("Plugin_Attributes", "attributes:ptr num_attributes:size"),
    ("Event_Destroy", "event:ptr"),
    ("Event_IsReady", "event:ptr is_ready:bool"),
    ("Event_Error", "event:ptr"),
    ("Event_Await", "event:ptr"),
    ("Event_OnReady", "event:ptr callback:ptr user_arg:ptr"),
    (
        "Client_Create",
        "create_options:ptr num_options:size kv_get_callback:ptr "
        "kv_get_user_arg:ptr kv_put_callback:ptr kv_put_user_arg:ptr client:ptr "
        "kv_try_get_callback:ptr kv_try_get_user_arg:ptr",
    ),
    ("Client_Destroy", "client:ptr"),
    ("Client_PlatformName", "client:ptr platform_name:ptr platform_name_size:size"),
    ("Client_ProcessIndex", "client:ptr process_index:i32"),
    ("Client_PlatformVersion", "client:ptr platform_version:ptr platform_version_size:size"),
    ("Client_Devices", "client:ptr devices:ptr num_devices:size"),
    (
        "Client_AddressableDevices",
        "client:ptr addressable_devices:ptr num_addressable_devices:size",
    ),
    ("Client_LookupDevice", "client:ptr id:i32 device:ptr"),
    ("Client_LookupAddressableDevice", "client:ptr local_hardware_id:i32 addressable_device:ptr"),
    (
        "Client_AddressableMemories",
        "client:ptr addressable_memories:ptr num_addressable_memories:size",
    ),
    (
        "Client_Compile",
        "client:ptr program:ptr compile_options:ptr compile_options_size:size executable:ptr",
    ),
    (
        "Client_DefaultDeviceAssignment",
        "client:ptr num_replicas:i32 num_partitions:i32 "
        "default_assignment_size:size default_assignment:ptr",
    ),
    (
        "Client_BufferFromHostBuffer",
        "client:ptr data:ptr type:i32 dims:ptr num_dims:size "
        "byte_strides:ptr num_byte_strides:size host_buffer_semantics:i32 device:ptr memory:ptr "
        "device_layout:ptr done_with_host_buffer:ptr buffer:ptr",
    ),
    ("DeviceDescription_Id", "device_description:ptr id:i32"),
    ("DeviceDescription_ProcessIndex", "device_description:ptr process_index:i32"),
    ("DeviceDescription_Attributes", "device_description:ptr num_attributes:size attributes:ptr"),
    ("DeviceDescription_Kind", "device_description:ptr device_kind:ptr device_kind_size:size"),
    (
        "DeviceDescription_DebugString",
        "device_description:ptr debug_string:ptr debug_string_size:size",
    ),
    ("DeviceDescription_ToString", "device_description:ptr to_string:ptr to_string_size:size"),
    ("Device_GetDescription", "device:ptr device_description:ptr"),
    ("Device_IsAddressable", "device:ptr is_addressable:bool"),
    ("Device_LocalHardwareId", "device:ptr local_hardware_id:i32"),
    ("Device_AddressableMemories", "device:ptr memories:ptr num_memories:size"),
    ("Device_DefaultMemory", "device:ptr memory:ptr"),
    (
        "Device_MemoryStats",
        "device:ptr bytes_in_use:i64 peak_bytes_in_use:i64 "
        "peak_bytes_in_use_is_set:bool num_allocs:i64 num_allocs_is_set:bool "
        "largest_alloc_size:i64 largest_alloc_size_is_set:bool bytes_limit:i64 "
        "bytes_limit_is_set:bool bytes_reserved:i64 bytes_reserved_is_set:bool "
        "peak_bytes_reserved:i64 peak_bytes_reserved_is_set:bool bytes_reservable_limit:i64 "
        "bytes_reservable_limit_is_set:bool largest_free_block_bytes:i64 "
        "largest_free_block_bytes_is_set:bool pool_bytes:i64 pool_bytes_is_set:bool "
        "peak_pool_bytes:i64 peak_pool_bytes_is_set:bool",
    ),
    ("Memory_Id", "memory:ptr id:i32"),
    ("Memory_Kind", "memory:ptr kind:ptr kind_size:size"),
    ("Memory_DebugString", "memory:ptr debug_string:ptr debug_string_size:size"),
    ("Memory_ToString", "memory:ptr to_string:ptr to_string_size:size"),
    ("Memory_AddressableByDevices", "memory:ptr devices:ptr num_devices:size"),
    ("Executable_Destroy", "executable:ptr"),
    ("Executable_Name", "executable:ptr executable_name:ptr executable_name_size:size"),
    ("Executable_NumReplicas", "executable:ptr num_replicas:size"),
    ("Executable_NumPartitions", "executable:ptr num_partitions:size"),
    ("Executable_NumOutputs", "executable:ptr num_outputs:size"),
    ("Executable_SizeOfGeneratedCodeInBytes", "executable:ptr size_in_bytes:i64"),
    ("Executable_GetCostAnalysis", "executable:ptr num_properties:size properties:ptr"),
    (
        "Executable_OutputMemoryKinds",
        "executable:ptr num_outputs:size memory_kinds:ptr memory_kind_sizes:ptr",
    ),
    ("Executable_OptimizedProgram", "executable:ptr program:ptr"),
    (
        "Executable_Serialize",
        "executable:ptr serialized_bytes:ptr serialized_bytes_size:size "
        "serialized_executable:ptr serialized_executable_deleter:ptr",
    ),
    ("LoadedExecutable_Destroy", "executable:ptr"),
    ("LoadedExecutable_GetExecutable", "loaded_executable:ptr executable:ptr"),
    (
        "LoadedExecutable_AddressableDevices",
        "executable:ptr addressable_devices:ptr num_addressable_devices:size",
    ),
    ("LoadedExecutable_Delete", "executable:ptr"),
    ("LoadedExecutable_IsDeleted", "executable:ptr is_deleted:bool"),
    (
        "LoadedExecutable_Execute",
        "executable:ptr options:ptr argument_lists:ptr "
        "num_devices:size num_args:size output_lists:ptr device_complete_events:ptr "
        "execute_device:ptr",
    ),
    (
        "Executable_DeserializeAndLoad",
        "client:ptr serialized_executable:ptr "
        "serialized_executable_size:size loaded_executable:ptr "
        "overridden_serialized_compile_options:ptr "
        "overridden_serialized_compile_options_size:size",
    ),
    (
        "LoadedExecutable_Fingerprint",
        "executable:ptr executable_fingerprint:ptr executable_fingerprint_size:size",
    ),
    ("Buffer_Destroy", "buffer:ptr"),
    ("Buffer_ElementType", "buffer:ptr type:i32"),
    ("Buffer_Dimensions", "buffer:ptr dims:ptr num_dims:size"),
    ("Buffer_UnpaddedDimensions", "buffer:ptr unpadded_dims:ptr num_dims:size"),
    ("Buffer_DynamicDimensionIndices", "buffer:ptr dynamic_dim_indices:ptr num_dynamic_dims:size"),
    ("Buffer_GetMemoryLayout", "buffer:ptr layout:layout"),
    ("Buffer_OnDeviceSizeInBytes", "buffer:ptr on_device_size_in_bytes:size"),
    ("Buffer_Device", "buffer:ptr device:ptr"),
    ("Buffer_Memory", "buffer:ptr memory:ptr"),
    ("Buffer_Delete", "buffer:ptr"),
    ("Buffer_IsDeleted", "buffer:ptr is_deleted:bool"),
    ("Buffer_CopyToDevice", "buffer:ptr dst_device:ptr dst_buffer:ptr"),
    ("Buffer_ToHostBuffer", "src:ptr host_layout:ptr dst:ptr dst_size:size event:ptr"),
    ("Buffer_IsOnCpu", "buffer:ptr is_on_cpu:bool"),
    ("Buffer_ReadyEvent", "buffer:ptr event:ptr"),
    ("Buffer_UnsafePointer", "buffer:ptr buffer_pointer:size"),
    ("Buffer_IncreaseExternalReferenceCount", "buffer:ptr"),
    ("Buffer_DecreaseExternalReferenceCount", "buffer:ptr"),
    ("Buffer_OpaqueDeviceMemoryDataPointer", "buffer:ptr device_memory_ptr:ptr"),
    ("CopyToDeviceStream_Destroy", "stream:ptr"),
    ("CopyToDeviceStream_AddChunk", ""),
    ("CopyToDeviceStream_TotalBytes", ""),
    ("CopyToDeviceStream_GranuleSize", ""),
    ("CopyToDeviceStream_CurrentBytes", ""),
    ("TopologyDescription_Create", ""),
    ("TopologyDescription_Destroy", "topology:ptr"),
    ("TopologyDescription_PlatformName", ""),
    ("TopologyDescription_PlatformVersion", ""),
    ("TopologyDescription_GetDeviceDescriptions", ""),
    ("TopologyDescription_Serialize", ""),
    ("TopologyDescription_Attributes", ""),
    ("Compile", ""),
    ("Executable_OutputElementTypes", "executable:ptr output_types:ptr num_output_types:size"),
    ("Executable_OutputDimensions", "executable:ptr num_outputs:size dims:ptr dim_sizes:ptr"),
    ("Buffer_CopyToMemory", "buffer:ptr dst_memory:ptr dst_buffer:ptr"),
    ("Client_CreateViewOfDeviceBuffer", ""),
    (
        "Executable_Fingerprint",
        "executable:ptr executable_fingerprint:ptr executable_fingerprint_size:size",
    ),
    ("Client_TopologyDescription", ""),
    (
        "Executable_GetCompiledMemoryStats",
        "executable:ptr generated_code_size_in_bytes:i64 "
        "argument_size_in_bytes:i64 output_size_in_bytes:i64 alias_size_in_bytes:i64 "
        "temp_size_in_bytes:i64 host_generated_code_size_in_bytes:i64 "
        "host_argument_size_in_bytes:i64 host_output_size_in_bytes:i64 "
        "host_alias_size_in_bytes:i64 host_temp_size_in_bytes:i64 peak_memory_in_bytes:i64 "
        "total_size_in_bytes:i64",
    ),
    ("Memory_Kind_Id", "memory:ptr kind_id:i32"),
    ("ExecuteContext_Create", ""),
    ("ExecuteContext_Destroy", "context:ptr"),
    ("Buffer_CopyRawToHost", ""),
    ("AsyncHostToDeviceTransferManager_Destroy", "transfer_manager:ptr"),
    ("AsyncHostToDeviceTransferManager_TransferData", ""),
    ("Client_CreateBuffersForAsyncHostToDevice", ""),
    ("AsyncHostToDeviceTransferManager_RetrieveBuffer", ""),
    ("AsyncHostToDeviceTransferManager_Device", ""),
    ("AsyncHostToDeviceTransferManager_BufferCount", ""),
    ("AsyncHostToDeviceTransferManager_BufferSize", ""),
    ("AsyncHostToDeviceTransferManager_SetBufferError", ""),
    ("AsyncHostToDeviceTransferManager_AddMetadata", ""),
    ("Client_DmaMap", ""),
    ("Client_DmaUnmap", ""),
    ("Client_CreateUninitializedBuffer", ""),
    ("Client_UpdateGlobalProcessInfo", ""),
    ("TopologyDescription_Deserialize", ""),
    ("Client_CreateAliasBuffer", ""),
    ("Client_FulfillAliasBuffer", ""),
    (
        "LoadedExecutable_GetDeviceAssignment",
        "executable:ptr serialized_bytes:ptr "
        "serialized_bytes_size:size serialized_device_assignment:ptr "
        "serialized_device_assignment_deleter:ptr",
    ),
    ("Client_CreateErrorBuffer", ""),
    ("AsyncHostToDeviceTransferManager_TransferLiteral", ""),
    ("Buffer_CopyRawToHostFuture", ""),
    ("Device_PoisonExecution", ""),
    ("Device_CreateAsyncTrackingEvent", ""),
    ("AsyncTrackingEvent_Destroy", "event:ptr"),
    (
        "Executable_GetCompileOptions",
        "executable:ptr serialized_bytes:ptr "
        "serialized_bytes_size:size serialized_compile_options:ptr "
        "serialized_compile_options_deleter:ptr",
    ),
    ("Buffer_DonateWithControlDependency", ""),
    ("Event_Create", "event:ptr"),
    ("Event_Set", "event:ptr error_code:i32 error_message:ptr error_message_size:size"),
    (
        "Device_GetAttributes",
        "device:ptr attributes:ptr num_attributes:size "
        "device_attributes:ptr attributes_deleter:ptr",
    ),
]

NUM_FUNCTIONS = 129

# Functions of PJRT extensions the trampoline chains on PJRT_Api.extension_start, as slots
# after the 129 API functions. The Shardings extension (pjrt_c_api_shardings_extension.h,
# PJRT_Extension_Type_Shardings = 19, added in API 0.91; a PJRT_Extension_Base of 24 bytes then
# the two function pointers: 40 bytes) is how jaxlib's C-API client asks an executable for its
# parameter and output shardings (serialized xla.OpSharding protos, owned by the executable).
SHARDINGS_EXTENSION_TYPE = 19
SHARDINGS_EXTENSION_SIZE = 40
EXTENSION_FUNCTIONS: list[tuple[str, str]] = [
    (
        "Shardings_ParameterShardings",
        "executable:ptr num_parameters:size shardings:ptr sharding_sizes:ptr",
    ),
    (
        "Shardings_OutputShardings",
        "executable:ptr num_outputs:size shardings:ptr sharding_sizes:ptr",
    ),
]
SLOTS = FUNCTIONS + EXTENSION_FUNCTIONS  # what the trampoline's handler table holds
NUM_SLOTS = NUM_FUNCTIONS + len(EXTENSION_FUNCTIONS)
INDEX = {name: i for i, (name, _) in enumerate(SLOTS)}

# Calls jaxlib treats as infallible (it aborts the process when they fail): the trampoline
# answers success for them even when Python cannot run (shutdown) or raises.
NEVER_FAIL = frozenset(name for name, _ in FUNCTIONS if name.endswith("_Destroy")) | {
    "Device_GetAttributes",
    "LoadedExecutable_GetDeviceAssignment",
}


def parse_fields(spec: str) -> list[tuple[str, str]]:
    """``"a:ptr b:size"`` -> [("a", "ptr"), ("b", "size")]; ``"-"`` is no field."""
    if spec in ("", "-"):
        return []
    return [tuple(item.split(":")) for item in spec.split()]  # type: ignore[misc]


def implemented_structs() -> dict[str, list[tuple[str, str]]]:
    """Every struct with a declared layout: argument structs (``X_Args``) and the others."""
    out = {f"{name}_Args": parse_fields(spec) for name, spec in SLOTS if spec}
    out.update({name: parse_fields(spec) for name, spec in AUX_STRUCTS.items()})
    return out


def c_header() -> str:
    """The trampoline's C declarations, generated from this table (written at build time)."""
    if len(FUNCTIONS) != NUM_FUNCTIONS:
        raise ValueError(f"{len(FUNCTIONS)} functions in the table, expected {NUM_FUNCTIONS}")
    lines = [
        "/* Generated by hlort_jax/abi_table.py at build time: do not edit. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        f"#define HL_API_MAJOR {API_MAJOR}",
        f"#define HL_API_MINOR {API_MINOR}",
        f"#define HL_NUM_FUNCTIONS {NUM_FUNCTIONS}",
        f"#define HL_NUM_SLOTS {NUM_SLOTS}",
        f"#define HL_SHARDINGS_EXTENSION_TYPE {SHARDINGS_EXTENSION_TYPE}",
        f"#define HL_SHARDINGS_EXTENSION_SIZE {SHARDINGS_EXTENSION_SIZE}",
        f"#define HL_SLOT_SHARDINGS_PARAMETERS {INDEX['Shardings_ParameterShardings']}",
        f"#define HL_SLOT_SHARDINGS_OUTPUTS {INDEX['Shardings_OutputShardings']}",
        f"#define HL_API_STRUCT_SIZE {API_STRUCT_SIZE}",
    ]
    structs = implemented_structs()
    order = ["MemoryLayout"] + [s for s in structs if s != "MemoryLayout"]
    for name in order:
        lines.append("typedef struct {")
        lines.append("  size_t struct_size;")
        lines.append("  void* extension_start;")
        for field, kind in structs[name]:
            lines.append(f"  {C_TYPES[kind][0]} {field};")
        lines.append(f"}} hl_{name};")
    never = ", ".join("1" if n in NEVER_FAIL else "0" for n, _ in SLOTS)
    lines.append(f"static const unsigned char HL_NEVER_FAIL[HL_NUM_SLOTS] = {{{never}}};")
    names = ", ".join(f'"{n}"' for n, _ in SLOTS)
    lines.append(f"static const char* const HL_FUNCTION_NAMES[HL_NUM_SLOTS] = {{{names}}};")
    # The layout report: (struct name, field name, offset) rows plus (struct, "<size>", sizeof).
    rows = []
    for name in order:
        rows.append(f'{{"{name}", "<size>", sizeof(hl_{name})}}')
        for field, _ in [("struct_size", ""), ("extension_start", "")] + structs[name]:
            rows.append(f'{{"{name}", "{field}", offsetof(hl_{name}, {field})}}')
    lines.append("typedef struct { const char* s; const char* f; size_t v; } hl_layout_row;")
    lines.append("static const hl_layout_row HL_LAYOUT[] = {")
    lines.append(",\n".join("  " + r for r in rows))
    lines.append("};")
    return "\n".join(lines) + "\n"
