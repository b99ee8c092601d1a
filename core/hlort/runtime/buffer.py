"""The user-facing buffer: an array on a device, convertible with ``np.asarray``.

Results of executables called with buffers come back as buffers, so data stays on the device
between calls, and at once: the work runs asynchronously and ``block_until_ready()`` (on a
buffer, or :func:`block_until_ready` on any nest of them) waits for it, raising its error.
``numpy()`` (or ``np.asarray``) waits for the data and copies it to the host. Where the memory
is host-visible (the cpu and interpreter backends), ``np.asarray(buf, copy=False)`` and
``np.from_dlpack(buf)`` (``__dlpack__``) lend the memory itself, read-only, without a copy.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import FailedPrecondition
from hlort.plugin import api
from hlort.plugin.base.buffer import SimpleBuffer
from hlort.runtime.device import Device
from hlort.shape import ArrayShape


class Buffer:
    __slots__ = ("raw", "device")

    def __init__(self, raw: api.Buffer, device: Device):
        self.raw = raw
        self.device = device

    @property
    def hlo_shape(self) -> ArrayShape:
        return self.raw.shape

    @property
    def shape(self) -> tuple[int, ...]:
        """NumPy-style dims."""
        return self.raw.shape.dims

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype (ml_dtypes' for bfloat16 and float8)."""
        return self.raw.shape.dtype.numpy

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.raw.shape.nbytes

    def _check_alive(self, action: str) -> None:
        if self.raw.is_deleted():
            raise FailedPrecondition(
                f"cannot {action} buffer {self.raw.name}: it was deleted or donated to an "
                f"execution and can no longer be used; transfer the data again (hlort.device_put)"
            )

    def on_device_size_in_bytes(self) -> int:
        self._check_alive("get the size of")
        return self.raw.on_device_size_in_bytes()

    def is_ready(self) -> bool:
        return self.raw.ready_event().is_ready()

    def block_until_ready(self, timeout: float | None = None) -> Buffer:
        """Wait for the producing work; raises its error if it failed, FAILED_PRECONDITION
        if the buffer was deleted or donated (as JAX's ``block_until_ready`` does)."""
        self._check_alive("wait for")
        self.raw.ready_event().wait(timeout)
        return self

    def numpy(self) -> np.ndarray:
        """A host copy of the data (waits for it)."""
        return self.raw.to_host().result()

    def host_visible(self) -> bool:
        """Whether the buffer's memory is host memory that can be lent without a copy."""
        return isinstance(self.raw, SimpleBuffer) and self.raw.device.host_memory

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """A host copy; with ``copy=False`` (NumPy 2) the memory itself, read-only, where it is
        host-visible (ValueError otherwise, as NumPy's protocol asks)."""
        if copy is False:
            if not self.host_visible():
                raise ValueError(
                    f"buffer {self.raw.name} is not in host-visible memory: it cannot be read "
                    f"without a copy; call np.asarray(buffer) without copy=False"
                )
            view = self.raw.host_view()
            if dtype is not None and np.dtype(dtype) != view.dtype:
                raise ValueError(f"viewing {self.raw.name} as {dtype} needs a copy")
            return view
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of host-visible memory (waits for the data). Consumers that speak
        DLPack >= 1.0 get it read-only; older ones get a writeable alias (do not write)."""
        if not self.host_visible():
            raise BufferError(
                f"buffer {self.raw.name} is not in host-visible memory; copy it to the host "
                f"first (np.asarray(buffer))"
            )
        if copy:
            return self.numpy().__dlpack__(max_version=max_version)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        view = self.raw.host_view(writeable=not versioned)
        if versioned:
            return view.__dlpack__(max_version=max_version, dl_device=dl_device)
        return view.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        if not self.host_visible():
            raise BufferError(f"buffer {self.raw.name} is not in host-visible memory")
        return (1, 0)  # kDLCPU

    def copy_to(self, device: Device) -> Buffer:
        """The same data on another device (of any backend)."""
        if device.backend is self.device.backend:
            return Buffer(self.raw.copy_to_device(device.raw), device)
        return device.backend.device_put(self.numpy(), device)

    def delete(self) -> None:
        self.raw.delete()

    def is_deleted(self) -> bool:
        return self.raw.is_deleted()

    def __repr__(self) -> str:
        return f"Buffer({self.raw.shape} on {self.device})"


def block_until_ready(value):
    """Wait for every buffer in ``value`` (a buffer, or tuples, lists and dict values of them,
    as an executable returns); raises the first error; returns ``value`` (like JAX's)."""
    if isinstance(value, Buffer):
        value.block_until_ready()
    elif isinstance(value, (tuple, list)):
        for item in value:
            block_until_ready(item)
    elif isinstance(value, dict):
        for item in value.values():
            block_until_ready(item)
    return value
