"""PJRT buffers: from host (four semantics, byte strides), to host, delete, events, sizes."""

from __future__ import annotations

import ctypes
import weakref

import numpy as np

from hlort.errors import ErrorCode, FailedPrecondition, HlortError, InvalidArgument
from hlort.plugin.base import AsyncValue
from hlort.plugin.options import HostBufferSemantics
from hlort_jax import _trampoline, host_layout, pjrt_types
from hlort_jax.bridge_objects import BridgeBuffer
from hlort_jax.handlers_event import new_event
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import pjrt

_SEMANTICS = (
    HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
    HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES,
    HostBufferSemantics.IMMUTABLE_ZERO_COPY,
    HostBufferSemantics.MUTABLE_ZERO_COPY,
)


def new_buffer(raw, device) -> int:
    return HANDLES.new(BridgeBuffer(raw, device))


def live(handle: int) -> BridgeBuffer:
    buffer = HANDLES.get(handle)
    if buffer.raw.is_deleted():
        raise FailedPrecondition(
            f"buffer {buffer.dims} on {buffer.device.debug_string} was deleted or donated"
        )
    return buffer


def _target_device(a):
    if a.memory:
        return HANDLES.get(a.memory).device
    if a.device:
        return HANDLES.get(a.device)
    raise InvalidArgument("PJRT_Client_BufferFromHostBuffer needs a device or a memory")


@pjrt("Client_BufferFromHostBuffer")
def buffer_from_host(a) -> None:
    dtype = pjrt_types.dtype_of(a.type)
    dims = tuple((ctypes.c_int64 * a.num_dims).from_address(a.dims)) if a.num_dims else ()
    itemsize = dtype.numpy.itemsize
    if a.num_byte_strides:
        if a.num_byte_strides != len(dims):
            raise InvalidArgument(f"{a.num_byte_strides} byte strides for rank {len(dims)}")
        strides = tuple((ctypes.c_int64 * a.num_byte_strides).from_address(a.byte_strides))
    else:
        strides = host_layout.dense_strides(dims, itemsize)
    if a.device_layout:
        layout = ctypes.cast(a.device_layout, ctypes.POINTER(host_layout.layout_struct())).contents
        if host_layout.layout_strides(layout, dims, itemsize) != host_layout.dense_strides(
            dims, itemsize
        ):
            raise HlortError(
                "hlort buffers are dense row-major on the device; other device "
                "layouts are not supported",
                ErrorCode.UNIMPLEMENTED,
            )
    semantics = _SEMANTICS[a.host_buffer_semantics]
    device = _target_device(a)
    view = host_layout.host_view(a.data, dims, dtype.numpy, strides)
    # ``data`` may be freed once nothing hlort holds can reach it: the view (and any alias
    # of it a zero-copy buffer or an output keeps) is gone. That covers all four semantics.
    done = AsyncValue("done_with_host_buffer")
    weakref.finalize(view, done.set_result, None)
    raw = device.client.backend.client.buffer_from_host(view, device.raw, semantics)
    del view
    a.done_with_host_buffer = new_event(done)
    a.buffer = HANDLES.new(BridgeBuffer(raw, device))


@pjrt("Buffer_Destroy")
def buffer_destroy(a) -> None:
    buffer = HANDLES.drop(a.buffer)
    if buffer is None:
        return
    _trampoline.forget(a.buffer)
    if buffer.ext_refs == 0:
        buffer.raw.delete()


@pjrt("Buffer_Delete")
def buffer_delete(a) -> None:
    buffer = HANDLES.get(a.buffer)
    buffer.raw.delete()


@pjrt("Buffer_IsDeleted")
def buffer_is_deleted(a) -> None:
    a.is_deleted = HANDLES.get(a.buffer).raw.is_deleted()


@pjrt("Buffer_ElementType")
def buffer_element_type(a) -> None:
    a.type = HANDLES.get(a.buffer).type_code


@pjrt("Buffer_Dimensions")
def buffer_dimensions(a) -> None:
    buffer = HANDLES.get(a.buffer)
    a.dims, a.num_dims = ctypes.addressof(buffer.dims_array), len(buffer.dims)


@pjrt("Buffer_UnpaddedDimensions")
def buffer_unpadded_dimensions(a) -> None:
    buffer = HANDLES.get(a.buffer)
    a.unpadded_dims, a.num_dims = ctypes.addressof(buffer.dims_array), len(buffer.dims)


@pjrt("Buffer_DynamicDimensionIndices")
def buffer_dynamic_dimension_indices(a) -> None:
    a.dynamic_dim_indices, a.num_dynamic_dims = None, 0


@pjrt("Buffer_GetMemoryLayout")
def buffer_get_memory_layout(a) -> None:
    buffer = HANDLES.get(a.buffer)
    layout = a.layout
    layout.struct_size = ctypes.sizeof(layout)
    layout.u_struct_size = 56
    layout.minor_to_major_or_strides = ctypes.addressof(buffer.minor_to_major)
    layout.minor_to_major_size_or_num_strides = len(buffer.dims)
    layout.tile_dims = None
    layout.tile_dim_sizes = None
    layout.num_tiles = 0
    layout.type = 0


@pjrt("Buffer_OnDeviceSizeInBytes")
def buffer_on_device_size(a) -> None:
    a.on_device_size_in_bytes = live(a.buffer).raw.on_device_size_in_bytes()


@pjrt("Buffer_Device")
def buffer_device(a) -> None:
    a.device = HANDLES.get(a.buffer).device.handle


@pjrt("Buffer_Memory")
def buffer_memory(a) -> None:
    a.memory = HANDLES.get(a.buffer).device.memory.handle


@pjrt("Buffer_IsOnCpu")
def buffer_is_on_cpu(a) -> None:
    a.is_on_cpu = False


@pjrt("Buffer_ReadyEvent")
def buffer_ready_event(a) -> None:
    buffer = HANDLES.get(a.buffer)
    if buffer.raw.is_deleted():
        failed = AsyncValue("deleted buffer")
        failed.set_error(FailedPrecondition("the buffer was deleted or donated"))
        a.event = new_event(failed)
    else:
        a.event = new_event(buffer.raw.ready_event())


@pjrt("Buffer_ToHostBuffer")
def buffer_to_host(a) -> None:
    buffer = live(a.src)
    dtype = buffer.raw.dtype.numpy
    dims = buffer.dims
    if a.host_layout:
        layout = ctypes.cast(a.host_layout, ctypes.POINTER(host_layout.layout_struct())).contents
        strides = host_layout.layout_strides(layout, dims, dtype.itemsize)
    else:
        strides = host_layout.dense_strides(dims, dtype.itemsize)
    needed = int(np.prod(dims, dtype=np.int64)) * int(dtype.itemsize)
    if not a.dst:
        a.dst_size = needed
        return
    if a.dst_size < needed and not a.host_layout:
        raise InvalidArgument(f"dst_size {a.dst_size} < {needed} bytes needed")
    target = host_layout.host_view(a.dst, dims, dtype, strides)
    future = buffer.raw.to_host()
    done = AsyncValue("PJRT_Buffer_ToHostBuffer")

    def copy(error) -> None:
        if error is not None:
            done.set_error(error)
            return
        try:
            np.copyto(target, future.result())
        except HlortError as err:
            done.set_error(err)
            return
        done.set_result(None)

    future.on_ready(copy)
    a.event = new_event(done)


@pjrt("Buffer_CopyToDevice")
def buffer_copy_to_device(a) -> None:
    buffer = live(a.buffer)
    target = HANDLES.get(a.dst_device)
    _copy(a, buffer, target)


@pjrt("Buffer_CopyToMemory")
def buffer_copy_to_memory(a) -> None:
    buffer = live(a.buffer)
    target = HANDLES.get(a.dst_memory).device
    _copy(a, buffer, target)


def _copy(a, buffer: BridgeBuffer, target) -> None:
    if target.client is not buffer.device.client:
        raise InvalidArgument("copies between hlort-jax clients go through the host")
    a.dst_buffer = HANDLES.new(BridgeBuffer(buffer.raw.copy_to_device(target.raw), target))


@pjrt("Buffer_IncreaseExternalReferenceCount")
def buffer_increase_ref(a) -> None:
    buffer = live(a.buffer)
    with buffer.lock:
        buffer.ext_refs += 1


@pjrt("Buffer_DecreaseExternalReferenceCount")
def buffer_decrease_ref(a) -> None:
    buffer = HANDLES.get(a.buffer)
    with buffer.lock:
        if buffer.ext_refs == 0:
            raise FailedPrecondition("external reference count is already zero")
        buffer.ext_refs -= 1


def _host_storage(buffer: BridgeBuffer) -> np.ndarray:
    """The NumPy storage of a buffer on a host-memory device (cpu, interpreter)."""
    raw = buffer.raw
    storage_now = getattr(raw, "storage_now", None)
    if storage_now is None or not getattr(raw.device, "host_memory", False):
        raise HlortError(
            f"{buffer.device.platform} keeps buffers outside host memory: no pointer to give "
            f"(PJRT_Buffer_UnsafePointer works on host-memory backends)",
            ErrorCode.UNIMPLEMENTED,
        )
    array = storage_now()
    if not isinstance(array, np.ndarray):
        raise HlortError(
            f"{buffer.device.platform} storage is not a host array", ErrorCode.UNIMPLEMENTED
        )
    return array


@pjrt("Buffer_UnsafePointer")
def buffer_unsafe_pointer(a) -> None:
    a.buffer_pointer = _host_storage(live(a.buffer)).ctypes.data


@pjrt("Buffer_OpaqueDeviceMemoryDataPointer")
def buffer_device_memory_pointer(a) -> None:
    a.device_memory_ptr = _host_storage(live(a.buffer)).ctypes.data
