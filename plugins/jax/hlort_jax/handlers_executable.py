"""PJRT compile, executables and execute (with donation), single device.

Multi-device programs (pmap, sharded jit, shard_map: replicas or partitions > 1) are refused
with UNIMPLEMENTED naming what is missing until hlort has collectives and partitioning.
"""

from __future__ import annotations

import ctypes
import struct

from hlort.errors import ErrorCode, HlortError, InvalidArgument
from hlort.plugin.base import all_ready, ready_value
from hlort.plugin.options import CompileOptions, ExecuteOptions
from hlort_jax import _trampoline, abi_structs, proto_wire
from hlort_jax.bridge_executable import BridgeExecutable
from hlort_jax.bridge_objects import BridgeBuffer
from hlort_jax.fast_paths import prime_buffer
from hlort_jax.handlers_event import new_event
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import CStrings, pjrt
from hlort_jax.program_import import import_program

_MULTI_DEVICE = (
    "hlort-jax runs single-device programs only: {what} needs collectives and SPMD "
    "partitioning, which hlort does not have yet; run on one device (no pmap/sharding)"
)
_SERIAL_MAGIC = b"HLORTJAX1"
_static = CStrings()


def _check_single_device(replicas: int, partitions: int) -> None:
    if replicas * partitions != 1:
        what = f"a program with {replicas} replica(s) x {partitions} partition(s)"
        raise HlortError(_MULTI_DEVICE.format(what=what), ErrorCode.UNIMPLEMENTED)


def _device_for(client, build: proto_wire.BuildOptions):
    if build.device_assignment:
        device_id = build.device_assignment[0][0]
        device = client.by_id.get(device_id)
        if device is None:
            raise InvalidArgument(f"{client.platform_name} has no device {device_id}")
        return device
    if build.device_ordinal >= 0:
        return client.devices[build.device_ordinal]
    return client.devices[0]


@pjrt("Client_Compile")
def client_compile(a) -> None:
    client = HANDLES.get(a.client)
    program = abi_structs.STRUCTS["Program"].from_address(a.program)
    code = ctypes.string_at(program.code, program.code_size)
    fmt = ctypes.string_at(program.format, program.format_size).decode()
    options_bytes = ctypes.string_at(a.compile_options, a.compile_options_size)
    build = proto_wire.read_compile_options(options_bytes)
    _check_single_device(build.num_replicas, build.num_partitions)
    imported = import_program(code, fmt)
    _check_single_device(imported.num_replicas, imported.num_partitions)
    device = _device_for(client, build)
    options = CompileOptions(donated_arguments=imported.donated)
    exe = client.backend.compile(imported.text, client.backend.wrap_device(device.raw), options)
    a.executable = HANDLES.new(BridgeExecutable(exe, device, options_bytes, imported.donated))


# -- executables ---------------------------------------------------------------------------
@pjrt("LoadedExecutable_Destroy")
def loaded_destroy(a) -> None:
    HANDLES.drop(a.executable)
    _trampoline.forget(a.executable)


@pjrt("Executable_Destroy")
def executable_destroy(a) -> None:
    HANDLES.drop(a.executable)
    _trampoline.forget(a.executable)


@pjrt("LoadedExecutable_GetExecutable")
def loaded_get_executable(a) -> None:
    a.executable = HANDLES.new(HANDLES.get(a.loaded_executable))


@pjrt("LoadedExecutable_AddressableDevices")
def loaded_addressable_devices(a) -> None:
    exe = HANDLES.get(a.executable)
    a.addressable_devices, a.num_addressable_devices = exe.device_array, 1


@pjrt("LoadedExecutable_Delete")
def loaded_delete(a) -> None:
    HANDLES.get(a.executable).deleted = True


@pjrt("LoadedExecutable_IsDeleted")
def loaded_is_deleted(a) -> None:
    a.is_deleted = HANDLES.get(a.executable).deleted


@pjrt("LoadedExecutable_GetDeviceAssignment")
def loaded_device_assignment(a) -> None:
    """Never fails (jaxlib aborts otherwise)."""
    exe = HANDLES.get(a.executable)
    blob = _trampoline.make_blob(proto_wire.device_assignment_proto([[exe.device.raw.id]]))
    a.serialized_bytes, a.serialized_bytes_size = (
        blob,
        len(proto_wire.device_assignment_proto([[exe.device.raw.id]])),
    )
    a.serialized_device_assignment = blob
    a.serialized_device_assignment_deleter = _trampoline.addresses()["free_blob"]


@pjrt("LoadedExecutable_Fingerprint")
def loaded_fingerprint(a) -> None:
    a.executable_fingerprint, a.executable_fingerprint_size = HANDLES.get(
        a.executable
    ).fingerprint_c()


@pjrt("Executable_Fingerprint")
def executable_fingerprint(a) -> None:
    a.executable_fingerprint, a.executable_fingerprint_size = HANDLES.get(
        a.executable
    ).fingerprint_c()


@pjrt("Executable_Name")
def executable_name(a) -> None:
    a.executable_name, a.executable_name_size = HANDLES.get(a.executable).name_c


@pjrt("Executable_NumReplicas")
def executable_num_replicas(a) -> None:
    a.num_replicas = 1


@pjrt("Executable_NumPartitions")
def executable_num_partitions(a) -> None:
    a.num_partitions = 1


@pjrt("Executable_NumOutputs")
def executable_num_outputs(a) -> None:
    a.num_outputs = HANDLES.get(a.executable).num_outputs


@pjrt("Executable_SizeOfGeneratedCodeInBytes")
def executable_code_size(a) -> None:
    a.size_in_bytes = 0


@pjrt("Executable_OutputElementTypes")
def executable_output_types(a) -> None:
    exe = HANDLES.get(a.executable)
    a.output_types, a.num_output_types = exe.type_array, exe.num_outputs


@pjrt("Executable_OutputDimensions")
def executable_output_dimensions(a) -> None:
    exe = HANDLES.get(a.executable)
    a.num_outputs, a.dims, a.dim_sizes = exe.num_outputs, exe.dims_array, exe.dim_sizes_array


@pjrt("Executable_OutputMemoryKinds")
def executable_output_memory_kinds(a) -> None:
    exe = HANDLES.get(a.executable)
    a.num_outputs, a.memory_kinds = exe.num_outputs, exe.kinds_array
    a.memory_kind_sizes = exe.kind_sizes_array


@pjrt("Executable_GetCompiledMemoryStats")
def executable_memory_stats(a) -> None:
    stats = HANDLES.get(a.executable).raw.compiled_memory_stats()
    for name in (
        "generated_code_size_in_bytes",
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "temp_size_in_bytes",
    ):
        setattr(a, name, int(getattr(stats, name, 0) or 0))
    # jaxlib reads every field; hlort executables keep nothing in host memory of their own
    # beyond the device's (host offloading does not exist here), so the host_* sizes are 0.
    for name in (
        "host_generated_code_size_in_bytes",
        "host_argument_size_in_bytes",
        "host_output_size_in_bytes",
        "host_alias_size_in_bytes",
        "host_temp_size_in_bytes",
    ):
        setattr(a, name, 0)
    a.peak_memory_in_bytes = (
        a.argument_size_in_bytes + a.output_size_in_bytes + (a.temp_size_in_bytes)
    )
    a.total_size_in_bytes = a.peak_memory_in_bytes


@pjrt("Executable_GetCostAnalysis")
def executable_cost_analysis(a) -> None:
    exe = HANDLES.get(a.executable)
    if exe._cost is None:
        costs = {k: float(v) for k, v in exe.raw.cost_analysis().items()}
        cls = abi_structs.STRUCTS["NamedValue"]
        arr = (cls * max(1, len(costs)))()
        for item, (name, value) in zip(arr, costs.items(), strict=False):
            item.struct_size = abi_structs.struct_size("NamedValue")
            item.name, item.name_size = exe.c.put(name)
            item.type = 3
            item.value = struct.unpack("<i", struct.pack("<f", value))[0]
            item.value_size = 1
        exe.c.hold(arr)
        exe._cost = (ctypes.addressof(arr), len(costs))
    a.properties, a.num_properties = exe._cost


_HLO_WITH_CONFIG = _static.put("hlo_with_config")


def _optimized_program(exe: BridgeExecutable) -> bytes:
    """The optimized (partitioned) module as xla.HloModuleProtoWithConfig, made once."""
    data = getattr(exe, "_optimized_program", None)
    if data is None:
        from hlort.ir.sharding import HloSharding
        from hlort.text.hlo_proto_writer import hlo_module_proto_with_config_bytes, spmd_shardings

        module = exe.exe.module
        params, output = spmd_shardings(module)
        if output is not None and not output.is_tuple:  # jaxlib splits a tuple per output
            output = HloSharding.tuple_of([output])
        data = hlo_module_proto_with_config_bytes(
            module, parameter_shardings=params, output_sharding=output
        )
        exe._optimized_program = data
    return data


@pjrt("Executable_OptimizedProgram")
def executable_optimized_program(a) -> None:
    """PJRT's two calls: with ``code`` NULL it asks the size, then passes a buffer that large.
    The format is "hlo_with_config", the one jaxlib's C API client parses (HloModuleProto
    with its config: as_text(), hlo_modules(), a sharded program's in/out shardings)."""
    data = _optimized_program(HANDLES.get(a.executable))
    program = abi_structs.STRUCTS["Program"].from_address(a.program)
    program.format, program.format_size = _HLO_WITH_CONFIG
    if program.code:
        if program.code_size < len(data):
            raise InvalidArgument(
                f"PJRT_Executable_OptimizedProgram: a {program.code_size}-byte buffer for a "
                f"{len(data)}-byte program; call first with code=NULL to get the size"
            )
        ctypes.memmove(program.code, data, len(data))
    program.code_size = len(data)


@pjrt("Executable_Serialize")
def executable_serialize(a) -> None:
    exe = HANDLES.get(a.executable)
    header = struct.pack("<II", len(exe.compile_options), len(exe.donated))
    donated = struct.pack(f"<{len(exe.donated)}I", *exe.donated)
    data = _SERIAL_MAGIC + header + donated + exe.compile_options + exe.raw.serialize()
    blob = _trampoline.make_blob(data)
    a.serialized_bytes, a.serialized_bytes_size = blob, len(data)
    a.serialized_executable = blob
    a.serialized_executable_deleter = _trampoline.addresses()["free_blob"]


@pjrt("Executable_GetCompileOptions")
def executable_compile_options(a) -> None:
    data = HANDLES.get(a.executable).compile_options
    blob = _trampoline.make_blob(data)
    a.serialized_bytes, a.serialized_bytes_size = blob, len(data)
    a.serialized_compile_options = blob
    a.serialized_compile_options_deleter = _trampoline.addresses()["free_blob"]


@pjrt("Executable_DeserializeAndLoad")
def executable_deserialize(a) -> None:
    client = HANDLES.get(a.client)
    data = ctypes.string_at(a.serialized_executable, a.serialized_executable_size)
    if not data.startswith(_SERIAL_MAGIC):
        raise InvalidArgument("not an executable serialized by hlort-jax")
    pos = len(_SERIAL_MAGIC)
    options_size, num_donated = struct.unpack_from("<II", data, pos)
    pos += 8
    donated = struct.unpack_from(f"<{num_donated}I", data, pos)
    pos += 4 * num_donated
    options_bytes = data[pos : pos + options_size]
    if a.overridden_serialized_compile_options:
        options_bytes = ctypes.string_at(
            a.overridden_serialized_compile_options, a.overridden_serialized_compile_options_size
        )
    build = proto_wire.read_compile_options(options_bytes)
    device = _device_for(client, build)
    exe = client.backend.deserialize(
        data[pos + options_size :], CompileOptions(donated_arguments=donated)
    )
    a.loaded_executable = HANDLES.new(BridgeExecutable(exe, device, options_bytes, donated))


# -- execute -------------------------------------------------------------------------------
_EXECUTE_OPTIONS = abi_structs.STRUCTS["ExecuteOptions"]
_ptr_at = ctypes.c_void_p.from_address
_DEFAULT = ExecuteOptions()


@pjrt("LoadedExecutable_Execute")
def loaded_execute(a) -> None:
    exe = HANDLES.get(a.executable)
    if a.num_devices != 1:
        what = f"an execution over {a.num_devices} devices"
        raise HlortError(_MULTI_DEVICE.format(what=what), ErrorCode.UNIMPLEMENTED)
    if a.execute_device and HANDLES.get(a.execute_device) is not exe.device:
        raise HlortError(
            "PJRT_LoadedExecutable_Execute on a device other than the compiled one is not "
            "supported by hlort-jax; compile for that device",
            ErrorCode.UNIMPLEMENTED,
        )
    get = HANDLES.get
    num_args = a.num_args
    if num_args:
        handles = (ctypes.c_void_p * num_args).from_address(_ptr_at(a.argument_lists).value)
        raws = [get(h).raw for h in handles]
    else:
        raws = []
    options = _DEFAULT
    if a.options:
        opts = _EXECUTE_OPTIONS.from_address(a.options)
        if opts.num_non_donatable_input_indices:
            keep = (ctypes.c_int64 * opts.num_non_donatable_input_indices).from_address(
                opts.non_donatable_input_indices
            )
            options = ExecuteOptions(non_donatable_input_indices=frozenset(keep))
    outputs = exe.raw.execute([raws], options)[0]
    device = exe.device
    new = HANDLES.new
    if outputs:
        slots = (ctypes.c_void_p * len(outputs)).from_address(_ptr_at(a.output_lists).value)
        device_answer, memory_answer = device.answers
        for i, out in enumerate(outputs):
            handle = slots[i] = new(BridgeBuffer(out, device))
            prime_buffer(handle, device_answer, memory_answer)
    if a.device_complete_events:
        events = [o.ready_event() for o in outputs]
        event = (
            events[0] if len(events) == 1 else (all_ready(events) if events else ready_value(None))
        )
        _ptr_at(a.device_complete_events).value = new_event(event)
