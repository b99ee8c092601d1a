"""Host-to-device transfers under PJRT's four host-buffer semantics, for any SimpleDevice.

=================================== ======================================================
IMMUTABLE_ONLY_DURING_CALL          copy now (a private staging copy), transfer in the queue
IMMUTABLE_UNTIL_TRANSFER_COMPLETES  no staging copy: the queue reads the caller's array later;
                                    the caller keeps it unchanged until the buffer is ready
                                    (host-memory devices copy at once: a memcpy is cheaper
                                    than a trip through the queue)
IMMUTABLE_ZERO_COPY                 alias the array read-only when the device keeps storage in
                                    host memory and the array is dense and aligned; else copy
MUTABLE_ZERO_COPY                   alias the array writable under the same conditions
=================================== ======================================================

Falling back to a copy when aliasing is impossible is what PJRT does too; the contract is about
what the *caller* may do with the array, which a copy always satisfies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hlort import dtypes
from hlort.errors import InvalidArgument
from hlort.plugin.base.buffer import SimpleBuffer
from hlort.plugin.base.events import AsyncValue, ready_value
from hlort.plugin.options import HostBufferSemantics
from hlort.shape import ArrayShape

if TYPE_CHECKING:
    from hlort.plugin.base.simple_device import SimpleDevice

_ALIGNMENT = 16


def host_array_shape(array: object) -> tuple[np.ndarray, ArrayShape]:
    """``array`` as an ndarray and its hlort shape; INVALID_ARGUMENT for unknown dtypes."""
    if not isinstance(array, np.ndarray):
        array = np.asarray(array)
    if not array.dtype.isnative and array.dtype.byteorder not in ("|", "="):
        array = array.astype(array.dtype.newbyteorder("="))  # same values, this machine's order
    return array, ArrayShape(dtypes.from_numpy(array.dtype), array.shape)


def can_alias(array: np.ndarray) -> bool:
    """Dense, aligned, native byte order: usable as storage without a copy."""
    return (
        array.flags.c_contiguous
        and array.flags.aligned
        and array.ctypes.data % _ALIGNMENT == 0
        and array.dtype.isnative
    )


def transfer_to_device(
    device: SimpleDevice,
    array: object,
    semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
    name: str | None = None,
) -> SimpleBuffer:
    """Create a buffer on ``device`` from a host array, honouring ``semantics``."""
    array, shape = host_array_shape(array)
    if not isinstance(semantics, HostBufferSemantics):
        raise InvalidArgument(
            f"host buffer semantics must be a HostBufferSemantics, got {semantics!r}"
        )
    label = f"host-to-device transfer of {shape} to {device.client.platform_name}:{device.id}"
    storage: AsyncValue
    zero_copy = semantics in (
        HostBufferSemantics.IMMUTABLE_ZERO_COPY,
        HostBufferSemantics.MUTABLE_ZERO_COPY,
    )
    if zero_copy and device.host_memory and device.supports_zero_copy and can_alias(array):
        if semantics is HostBufferSemantics.IMMUTABLE_ZERO_COPY:
            view = array.view()
            view.flags.writeable = False
            storage = ready_value(view, label)
        else:
            storage = ready_value(array, label)
    elif (
        semantics is HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES
        and not device.host_memory
    ):
        source = array

        def transfer_later() -> object:
            return device.storage_from_host(source, shape, owned=False)

        storage = device.queue.enqueue(transfer_later, label)
    else:
        staged = np.array(array, copy=True, order="C")
        if device.host_memory:
            storage = ready_value(staged, label)
        else:
            storage = device.queue.enqueue(
                lambda: device.storage_from_host(staged, shape, owned=True), label
            )
    return SimpleBuffer(device, shape, storage, name)
