"""The user-facing buffer: an array on a device, convertible with ``np.asarray``.

Results of executables called with buffers come back as buffers, so data stays on the device
between calls; ``numpy()`` (or ``np.asarray``) waits for the data and copies it to the host.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import FailedPrecondition
from hlort.plugin import api
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

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

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
