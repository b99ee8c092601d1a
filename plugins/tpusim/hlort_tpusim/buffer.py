"""Buffers of the tpusim client: the base buffer, plus chip-to-chip copies over the links.

The base :class:`SimpleBuffer` copies between devices through the host. A tpusim buffer copied to
another chip of the same client goes over the modelled inter-chip links instead: the target
chip's HBM is allocated at once (RESOURCE_EXHAUSTED is raised to the caller, not later), and the
copy runs on the target chip's queue once the source is ready.
"""

from __future__ import annotations

from hlort.plugin.api import Buffer, Device
from hlort.plugin.base import SimpleBuffer
from hlort_tpusim.device import TpuSimDevice


class TpuSimBuffer(SimpleBuffer):
    """A :class:`SimpleBuffer` whose ``copy_to_device`` uses the chip links."""

    def copy_to_device(self, device: Device) -> Buffer:
        source = self.device
        if not (
            isinstance(device, TpuSimDevice)
            and device.client is source.client
            and device is not source
        ):
            return retag(super().copy_to_device(device))
        shape = self.shape
        into = device.hbm.allocate(shape)
        storage = self.acquire(f"copy to tpusim:{device.id}")

        def copy():
            try:
                return device.receive_from_chip(source, storage.result(), into)
            except BaseException:
                device.hbm.free(into)
                raise
            finally:
                self.release()

        try:
            value = device.queue.enqueue(
                copy, f"copy {self._name} to tpusim:{device.id} over ICI", waits_for=[storage]
            )
        except BaseException:
            self.release()
            device.hbm.free(into)
            raise
        return retag(SimpleBuffer(device, shape, value))


def retag(buffer: Buffer) -> Buffer:
    """Make a base-class buffer created by the base helpers a :class:`TpuSimBuffer`."""
    if type(buffer) is SimpleBuffer:
        buffer.__class__ = TpuSimBuffer
    return buffer
