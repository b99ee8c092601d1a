"""GPU buffers: asynchronous host-to-device transfers and device-to-device (peer) copies.

A transfer allocates device memory at once (so running out of memory is RESOURCE_EXHAUSTED in
the caller, not later), enqueues the copy on the device's stream from the work queue, and the
buffer is ready when the stream event after the copy fires. A copy to another GPU of the same
client goes device to device on the target's stream (peer access when the driver has it; the
driver stages through the host otherwise), after the source is ready.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import InvalidArgument
from hlort.plugin.api import Buffer, Device
from hlort.plugin.base.buffer import SimpleBuffer
from hlort.plugin.base.events import AsyncValue
from hlort.plugin.base.gpu_device import GpuDevice
from hlort.plugin.base.host_buffer import host_array_shape
from hlort.plugin.options import HostBufferSemantics

_READ_LATER = HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES


class GpuBuffer(SimpleBuffer):
    """A :class:`SimpleBuffer` on a :class:`GpuDevice` whose device copies stay on the GPUs."""

    def copy_to_device(self, device: Device) -> Buffer:
        source = self.device
        if not (
            isinstance(device, GpuDevice)
            and isinstance(source, GpuDevice)
            and device.client is source.client
            and device is not source
        ):
            return as_gpu_buffer(super().copy_to_device(device))
        shape = self.shape
        block = device.allocate(shape)
        storage = self.acquire(f"copy to {device.where}")
        value: AsyncValue = AsyncValue(f"copy {self._name} from {source.where} to {device.where}")

        def copy() -> None:
            src = storage.result()
            if block.nbytes:
                device.driver.copy_peer_async(
                    block.pointer,
                    device.ordinal,
                    src.pointer,
                    source.ordinal,
                    block.nbytes,
                    device.stream,
                )
            device.after_stream(value, block)

        def on_done(error) -> None:
            self.release()
            if error is not None:
                device.free(block)

        value.on_ready(on_done)
        _enqueue_into(device, copy, value, f"copy {self._name} to {device.where}", [storage])
        return GpuBuffer(device, shape, value)


def as_gpu_buffer(buffer: Buffer) -> Buffer:
    """Make a base-class buffer made by the base helpers (execute's outputs) a GpuBuffer."""
    if type(buffer) is SimpleBuffer:
        buffer.__class__ = GpuBuffer
    return buffer


def transfer_to_gpu(
    device: GpuDevice, array: object, semantics: HostBufferSemantics, name: str | None = None
) -> GpuBuffer:
    """A buffer on ``device`` holding ``array``; device memory is never host memory, so the
    zero-copy semantics copy (PJRT does the same); IMMUTABLE_UNTIL_TRANSFER_COMPLETES reads the
    caller's array on the queue without a staging copy."""
    if not isinstance(semantics, HostBufferSemantics):
        raise InvalidArgument(
            f"host buffer semantics must be a HostBufferSemantics, got {semantics!r}"
        )
    array, shape = host_array_shape(array)
    if semantics is _READ_LATER and array.flags.c_contiguous:
        host = array
    else:
        host = np.array(array, copy=True, order="C")
    block = device.allocate(shape)
    value: AsyncValue = AsyncValue(f"host-to-device transfer of {shape} to {device.where}")

    def transfer() -> None:
        device.copy_in(block, host)
        device.after_stream(value, block, keep_alive=host)

    value.on_ready(lambda error: device.free(block) if error is not None else None)
    _enqueue_into(device, transfer, value, value.description)
    return GpuBuffer(device, shape, value, name)


def _enqueue_into(device: GpuDevice, fn, value: AsyncValue, what: str, waits_for=()) -> None:
    """Run ``fn`` on the device's queue; its failure (or a failed dependency) fails ``value``."""
    try:
        job = device.queue.enqueue(fn, what, waits_for=waits_for)
    except BaseException as exc:
        value.set_error(exc)
        raise
    job.on_ready(lambda error: value.set_error(error) if error is not None else None)
