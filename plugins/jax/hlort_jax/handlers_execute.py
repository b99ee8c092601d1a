"""PJRT_LoadedExecutable_Execute: one argument list per device in, one output list and one
completion event per device out.

jaxlib passes ``argument_lists[num_devices][num_args]`` in the order of
``LoadedExecutable_AddressableDevices`` and preallocated ``output_lists[num_devices]``; the
devices run at once (hlort's multi-device execute: their collectives meet in a rendezvous), and
each device's completion event is its own outputs' readiness. ``execute_device`` (portable
executables) must name the compiled device.
"""

from __future__ import annotations

import ctypes

from hlort.errors import ErrorCode, HlortError, InvalidArgument
from hlort.plugin.base import all_ready, ready_value
from hlort.plugin.options import ExecuteOptions
from hlort_jax import abi_structs
from hlort_jax.bridge_objects import BridgeBuffer
from hlort_jax.fast_paths import prime_buffer
from hlort_jax.handlers_event import new_event
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import pjrt

_EXECUTE_OPTIONS = abi_structs.STRUCTS["ExecuteOptions"]
_ptr_at = ctypes.c_void_p.from_address
_DEFAULT = ExecuteOptions()


def _options(address: int | None) -> ExecuteOptions:
    if not address:
        return _DEFAULT
    opts = _EXECUTE_OPTIONS.from_address(address)
    if not opts.num_non_donatable_input_indices:
        return _DEFAULT
    keep = (ctypes.c_int64 * opts.num_non_donatable_input_indices).from_address(
        opts.non_donatable_input_indices
    )
    return ExecuteOptions(non_donatable_input_indices=frozenset(keep))


def _check_devices(exe, a) -> None:
    count = len(exe.devices)
    if a.num_devices != count:
        raise InvalidArgument(
            f"PJRT_LoadedExecutable_Execute: {exe.raw.name} runs on {count} device(s) "
            f"({exe.num_replicas} replica(s) x {exe.num_partitions} partition(s)); got "
            f"{a.num_devices} argument list(s)"
        )
    if a.execute_device and HANDLES.get(a.execute_device) is not exe.device:
        raise HlortError(
            "PJRT_LoadedExecutable_Execute on a device other than the compiled one is not "
            "supported by hlort-jax; compile for that device",
            ErrorCode.UNIMPLEMENTED,
        )


def _completion(outputs):
    events = [o.ready_event() for o in outputs]
    if len(events) == 1:
        return events[0]
    return all_ready(events) if events else ready_value(None)


@pjrt("LoadedExecutable_Execute")
def loaded_execute(a) -> None:
    exe = HANDLES.get(a.executable)
    if a.num_devices != 1 or a.execute_device:
        _check_devices(exe, a)
    if a.num_devices == 1:
        return _execute_one(exe, a)
    get = HANDLES.get
    num_args = a.num_args
    lists = (ctypes.c_void_p * a.num_devices).from_address(a.argument_lists) if num_args else ()
    raws = []
    for k in range(a.num_devices):
        if num_args:
            handles = (ctypes.c_void_p * num_args).from_address(lists[k])
            raws.append([get(h).raw for h in handles])
        else:
            raws.append([])
    results = exe.raw.execute(raws, _options(a.options))
    new = HANDLES.new
    out_lists = (ctypes.c_void_p * a.num_devices).from_address(a.output_lists)
    events = (
        (ctypes.c_void_p * a.num_devices).from_address(a.device_complete_events)
        if a.device_complete_events
        else None
    )
    for k, (device, outputs) in enumerate(zip(exe.devices, results, strict=True)):
        if outputs:
            slots = (ctypes.c_void_p * len(outputs)).from_address(out_lists[k])
            device_answer, memory_answer = device.answers
            for i, out in enumerate(outputs):
                handle = slots[i] = new(BridgeBuffer(out, device))
                prime_buffer(handle, device_answer, memory_answer)
        if events is not None:
            events[k] = new_event(_completion(outputs))


def _execute_one(exe, a) -> None:
    """The one-device call (the dispatch hot path: no per-device arrays)."""
    get = HANDLES.get
    num_args = a.num_args
    if num_args:
        handles = (ctypes.c_void_p * num_args).from_address(_ptr_at(a.argument_lists).value)
        raws = [get(h).raw for h in handles]
    else:
        raws = []
    outputs = exe.raw.execute([raws], _options(a.options))[0]
    device = exe.device
    new = HANDLES.new
    if outputs:
        slots = (ctypes.c_void_p * len(outputs)).from_address(_ptr_at(a.output_lists).value)
        device_answer, memory_answer = device.answers
        for i, out in enumerate(outputs):
            handle = slots[i] = new(BridgeBuffer(out, device))
            prime_buffer(handle, device_answer, memory_answer)
    if a.device_complete_events:
        _ptr_at(a.device_complete_events).value = new_event(_completion(outputs))
