"""SimpleBuffer: the buffer lifecycle (ready event, holds, delete, donation) done once for all.

A buffer's storage arrives asynchronously (an :class:`AsyncValue` completed by a transfer or a
launch). Work that reads the storage takes a *hold*; ``delete()`` marks the buffer dead at once
but frees the storage only when the last hold is released, so queued work never sees freed
memory. Donation waits for the holds to go, then hands the storage to an execution: the buffer
is dead from then on and the execution decides whether to free the storage or reuse it for an
output. Any use of a dead buffer raises FAILED_PRECONDITION naming the buffer and what killed it.

On a host-memory device, :meth:`SimpleBuffer.host_view` lends the storage itself as a NumPy
array (``__dlpack__``, ``np.asarray(buf, copy=False)``): the view is an *external reference*
that holds the buffer until it is garbage collected, so ``delete()`` frees nothing under it, and
donating a buffer with a live view is FAILED_PRECONDITION (as PJRT refuses donation of a buffer
with external references): the execution would overwrite memory someone is reading.

Donation's wait for the holds is bounded: after ``HLORT_DONATE_TIMEOUT`` seconds (default 120)
it raises DEADLINE_EXCEEDED naming the buffer and the holds left, and the buffer stays alive
(a read queued behind work that never finishes must not hang the caller forever).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    Unimplemented,
)
from hlort.plugin.api import Buffer, Device, Event, Future, unimplemented
from hlort.plugin.base.events import ready_value
from hlort.shape import ArrayShape

if TYPE_CHECKING:
    from hlort.plugin.base.simple_device import SimpleDevice

_ids = itertools.count()
# Every buffer's hold count is guarded by this one condition: its critical sections are a few
# integer updates and never take another lock, and a step makes one buffer per output, where a
# Condition of its own cost ~2.8 us each (a quarter of a buffer's life). A donation waiting for
# its holds re-checks its own count when any buffer's last hold goes. An execution takes and
# releases the holds of all its arguments under one acquisition of the lock.
_HOLDS_LOCK = threading.Lock()
_HOLDS = threading.Condition(_HOLDS_LOCK)
DONATE_TIMEOUT_ENV = "HLORT_DONATE_TIMEOUT"
DEFAULT_DONATE_TIMEOUT_S = 120.0


def donate_timeout_s() -> float:
    """``HLORT_DONATE_TIMEOUT`` (seconds, > 0; ``inf``: no bound) or 120: how long a donation
    waits for the reads queued before it to release the buffer."""
    raw = os.environ.get(DONATE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_DONATE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also NaN
        raise InvalidArgument(
            f"{DONATE_TIMEOUT_ENV}={raw!r} must be a number of seconds > 0 (e.g. 120 or 0.5)"
        )
    return value


class SimpleBuffer(Buffer):
    """A buffer on a :class:`SimpleDevice` whose storage is produced by ``storage``.

    ``tracked``: the device already counts the storage's bytes (``track_allocs`` of a
    launch's outputs, one lock for all); else the buffer counts them itself.
    """

    def __init__(
        self,
        device: SimpleDevice,
        shape: ArrayShape,
        storage: Future,
        name: str | None = None,
        *,
        tracked: bool = False,
    ):
        self._device = device
        self._shape = shape
        self._storage = storage
        self._name = name or f"buffer#{next(_ids)}"
        self._cond = _HOLDS
        self._holds = 0
        self._external = 0  # live host views (each is also a hold)
        self._dead_reason: str | None = None
        if not tracked:
            device.track_alloc(shape.nbytes)
        # Present until the storage is freed or donated; popped once (atomic under the GIL)
        # by whichever of delete, the last hold's release and garbage collection comes first.
        self._owns_storage = True

    def _free_storage(self) -> None:
        """Free the storage unless it was freed already or donated."""
        if self.__dict__.pop("_owns_storage", False):
            self._device.release_storage(self._storage, self._shape.nbytes)

    def __del__(self, _finalizing=sys.is_finalizing) -> None:
        # The garbage collector may run this inside a plugin call that holds its lock: hand the
        # storage to the device, which frees it at its next storage call (never lock here).
        # Nothing at all during interpreter shutdown (the plugin's driver may be gone).
        if self.__dict__.pop("_owns_storage", False) and not _finalizing():
            self._device.defer_free(self._storage, self._shape.nbytes)

    # -- description ---------------------------------------------------------------------------
    @property
    def shape(self) -> ArrayShape:
        return self._shape

    @property
    def device(self) -> SimpleDevice:
        return self._device

    @property
    def name(self) -> str:
        where = f"{self._device.client.platform_name}:{self._device.id}"
        return f"{self._name} ({self._shape} on {where})"

    def ready_event(self) -> Event:
        return self._storage

    def is_deleted(self) -> bool:
        return self._dead_reason is not None

    def _dead_error(self, action: str) -> FailedPrecondition:
        """``action`` says what was attempted (``"copy to host"``, ``"pass to 'f' as argument
        0"``); the message names the buffer, what happened to it and the fix."""
        return FailedPrecondition(f"cannot {action}: buffer {self.name} {self._dead_reason}")

    # -- holds ---------------------------------------------------------------------------------
    def acquire(self, action: str) -> Future:
        """Take a hold for work that reads the storage; pair with :meth:`release`."""
        with self._cond:
            if self._dead_reason is not None:
                raise self._dead_error(action)
            self._holds += 1
        return self._storage

    def release(self) -> None:
        with self._cond:
            self._holds -= 1
            last = self._holds == 0
            if last:
                self._cond.notify_all()
        if last and self._dead_reason is not None:
            self._free_storage()  # no-op after donation

    def donate(self, consumer: str, timeout_s: float | None = None) -> Future:
        """Give the storage to ``consumer`` (an execution); the buffer is dead from now on.

        Waits until work already holding the buffer (reads queued before) has released it, so
        the consumer may write to the storage; the consumer then frees it (``device.free``,
        ``device.track_free``) unless it keeps it as an output. Do not call from an event
        callback: the holds may belong to work queued behind it. The wait is bounded by
        ``timeout_s`` (default :func:`donate_timeout_s`): past it DEADLINE_EXCEEDED, and the
        buffer is left alive and undonated.
        """
        timeout = donate_timeout_s() if timeout_s is None else float(timeout_s)
        self._device.drain_deferred()  # host views collected since count as gone
        # inf (or any huge number) is no bound: threading's waits overflow past TIMEOUT_MAX
        wait_s = None if timeout >= threading.TIMEOUT_MAX else timeout
        with self._cond:
            if self._dead_reason is not None:
                raise self._dead_error(f"donate to {consumer}")
            if self._external:
                raise FailedPrecondition(
                    f"cannot donate buffer {self.name} to {consumer}: {self._external} host "
                    f"view(s) of its memory (np.asarray(..., copy=False) / DLPack) are alive; "
                    f"drop them first, or list the argument in "
                    f"ExecuteOptions.non_donatable_input_indices"
                )
            if not self._cond.wait_for(lambda: self._holds == 0, wait_s):
                raise DeadlineExceeded(
                    f"cannot donate buffer {self.name} to {consumer}: {self._holds} read(s) "
                    f"queued before the donation still hold it after {timeout:g} s (is the "
                    f"work they wait for stuck, or was this called from an event callback?); "
                    f"wait for that work first, list the argument in "
                    f"ExecuteOptions.non_donatable_input_indices, or raise "
                    f"{DONATE_TIMEOUT_ENV} (seconds)"
                )
            if self._dead_reason is not None:  # deleted or donated while we waited
                raise self._dead_error(f"donate to {consumer}")
            self._dead_reason = (
                f"was donated to {consumer} and can no longer be used; pass a new buffer, or "
                f"list the argument in ExecuteOptions.non_donatable_input_indices"
            )
            self.__dict__.pop("_owns_storage", None)
        return self._storage

    def delete(self) -> None:
        with self._cond:
            if self._dead_reason is not None:
                return
            self._dead_reason = (
                "was deleted and can no longer be used; transfer the data again "
                "(buffer_from_host / hlort.device_put)"
            )
            free_now = self._holds == 0
        if free_now:
            self._free_storage()

    # -- data movement -------------------------------------------------------------------------
    def to_host(self) -> Future[np.ndarray]:
        storage = self.acquire("copy to host")
        device, shape = self._device, self._shape
        if device.host_memory and storage.is_ready():
            try:
                host = device.copy_out(storage.result(), shape)
                return ready_value(host, f"{self._name} to host")
            finally:
                self.release()

        def copy_out() -> np.ndarray:
            try:
                return device.copy_out(storage.result(), shape)
            finally:
                self.release()

        return device.queue.enqueue(copy_out, f"copy {self._name} to host", waits_for=[storage])

    def copy_to_device(self, device: Device) -> Buffer:
        from hlort.plugin.base.simple_device import SimpleDevice

        if device is self._device:
            target = self._device
        elif isinstance(device, SimpleDevice) and device.client is self._device.client:
            target = device
        else:
            raise unimplemented(self, "Buffer.copy_to_device to another client's device")
        if self._dead_reason is not None:  # else to_host would say "cannot copy to host"
            raise self._dead_error(f"copy to {target.client.platform_name}:{target.id}")
        host = self.to_host()
        shape = self._shape
        storage = target.queue.enqueue(
            lambda: target.storage_from_host(host.result(), shape, owned=True),
            f"copy {self._name} to {target.client.platform_name}:{target.id}",
            waits_for=[host],
        )
        return SimpleBuffer(target, shape, storage)

    def host_view(self, writeable: bool = False) -> np.ndarray:
        """The storage itself as an array (no copy), once ready; only where the device keeps
        storage in host memory (else UNIMPLEMENTED). The view holds the buffer alive until it
        is garbage collected. ``writeable`` is for DLPack consumers that cannot take read-only
        memory: writing through it changes the buffer."""
        if not self._device.host_memory:
            raise Unimplemented(
                f"buffer {self.name} is in device memory, not host-visible; copy it to the host "
                f"with np.asarray(buffer) or buffer.to_host()"
            )
        storage = self.acquire("lend a host view of")
        try:
            array = storage.result()
        except BaseException:
            self.release()
            raise
        view = array.view()
        view.flags.writeable = writeable and array.flags.writeable
        with self._cond:
            self._external += 1
        # the view's finalizer takes no lock: the device drops the hold at its next call
        weakref.finalize(view, self._device.defer_call, self._drop_external).atexit = False
        return view

    def _drop_external(self) -> None:
        with self._cond:
            self._external -= 1
        self.release()

    def storage_now(self) -> Any:
        """The storage, waiting for it; for plugin code that already holds the buffer."""
        return self._storage.result()


def hold_arguments(
    buffers: Sequence[SimpleBuffer], donated: Collection[int], action: Callable[[int], str]
) -> list[Future]:
    """Take a hold on every buffer whose index is not in ``donated`` (those the caller donates
    next), all or none, under one acquisition of the lock; returns every buffer's storage.
    The first dead buffer, in order, donated or not, raises FAILED_PRECONDITION saying
    ``action(index)`` was attempted."""
    with _HOLDS_LOCK:
        for index, buf in enumerate(buffers):
            if buf._dead_reason is not None:
                raise buf._dead_error(action(index))
        for index, buf in enumerate(buffers):
            if index not in donated:
                buf._holds += 1
    return [buf._storage for buf in buffers]


def release_holds(buffers: Sequence[SimpleBuffer]) -> None:
    """:meth:`SimpleBuffer.release` of each (a buffer listed twice is released twice), under
    one acquisition of the lock."""
    to_free = []
    with _HOLDS_LOCK:
        any_last = False
        for buf in buffers:
            buf._holds -= 1
            if buf._holds == 0:
                any_last = True
                if buf._dead_reason is not None:
                    to_free.append(buf)
        if any_last:
            _HOLDS.notify_all()
    for buf in to_free:
        buf._free_storage()
