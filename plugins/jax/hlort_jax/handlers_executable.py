"""PJRT compile and executables, on one device or on several.

A program over ``num_replicas x num_partitions`` copies (sharded jit, shard_map, pmap: JAX
0.10 lowers pmap to jit of shard_map) compiles for the devices of its device assignment; hlort's
SPMD partitioner turns its shardings into the per-device program. Execute is in
handlers_execute.py.
"""

from __future__ import annotations

import ctypes
import struct

from hlort.errors import InvalidArgument
from hlort.plugin.options import CompileOptions
from hlort_jax import _trampoline, abi_structs, proto_wire
from hlort_jax.bridge_executable import BridgeExecutable
from hlort_jax.device_plan import plan_devices
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import CStrings, pjrt
from hlort_jax.program_import import import_program

_SERIAL_MAGIC = b"HLORTJAX1"
_static = CStrings()


def _compile(client, text, build, header, donated) -> tuple:
    """(hlort Executable, devices) for ``text`` on the devices ``build`` and ``header`` ask."""
    plan = plan_devices(client, build, header)
    options = CompileOptions(
        num_replicas=plan.num_replicas,
        num_partitions=plan.num_partitions,
        device_assignment=plan.assignment,
        donated_arguments=donated,
    )
    backend = client.backend
    if len(plan.devices) == 1:
        return backend.compile(text, backend.wrap_device(plan.devices[0].raw), options), plan
    return backend.compile(text, None, options), plan


@pjrt("Client_Compile")
def client_compile(a) -> None:
    client = HANDLES.get(a.client)
    program = abi_structs.STRUCTS["Program"].from_address(a.program)
    code = ctypes.string_at(program.code, program.code_size)
    fmt = ctypes.string_at(program.format, program.format_size).decode()
    options_bytes = ctypes.string_at(a.compile_options, a.compile_options_size)
    build = proto_wire.read_compile_options(options_bytes)
    imported = import_program(code, fmt)
    header = (imported.num_replicas, imported.num_partitions)
    exe, plan = _compile(client, imported.text, build, header, imported.donated)
    a.executable = HANDLES.new(BridgeExecutable(exe, plan.devices, options_bytes, imported.donated))


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
    a.addressable_devices, a.num_addressable_devices = exe.device_array, len(exe.devices)


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
    data = proto_wire.device_assignment_proto(exe.assignment())
    blob = _trampoline.make_blob(data)
    a.serialized_bytes, a.serialized_bytes_size = blob, len(data)
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
    a.num_replicas = HANDLES.get(a.executable).num_replicas


@pjrt("Executable_NumPartitions")
def executable_num_partitions(a) -> None:
    a.num_partitions = HANDLES.get(a.executable).num_partitions


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
    plan = plan_devices(client, build)
    options = CompileOptions(
        num_replicas=plan.num_replicas,
        num_partitions=plan.num_partitions,
        device_assignment=plan.assignment,
        donated_arguments=donated,
    )
    exe = client.backend.deserialize(data[pos + options_size :], options)
    a.loaded_executable = HANDLES.new(BridgeExecutable(exe, plan.devices, options_bytes, donated))
