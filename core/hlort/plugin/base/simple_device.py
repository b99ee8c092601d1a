"""SimpleDevice: a device with a work queue, memory accounting and four storage hooks.

A plugin subclasses it and overrides, at most, ``allocate``, ``free``, ``copy_in`` and
``copy_out``. "Storage" is whatever the plugin uses for a buffer's memory (a device pointer, a
handle); the base never looks inside it. The defaults keep storage in host memory as C-contiguous
NumPy arrays, which is all a CPU-like backend needs (``host_memory = True`` lets the base adopt
private host copies as storage and skip a copy).

A finalizer never calls a storage hook. The garbage collector runs a dropped buffer's
``__del__`` wherever this thread happens to be, possibly inside an ``allocate``, ``free`` or
``memory_stats`` that holds the plugin's lock: taking that lock again deadlocks the thread on
itself (a ``Lock``) or changes the allocator's state in the middle of an update (an ``RLock``).
So a finalizer only appends the storage to the device's lock-free queue (:meth:`defer_free`;
``deque.append`` is atomic under the GIL), and the device frees what is queued at the start of
its next ``allocate``, ``free``, ``memory_stats``, ``track_alloc(s)`` and at the client's close
(:meth:`drain_deferred`), with no lock held. A subclass's overrides of those three hooks drain
first too (``__init_subclass__`` wraps them), so a plugin gets this without writing anything.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hlort.errors import ResourceExhausted
from hlort.log import lazy_logger
from hlort.plugin.api import AttributeValue, Device, Future, MemorySpace
from hlort.plugin.base.work_queue import WorkQueue
from hlort.plugin.capabilities import MemoryStats
from hlort.shape import ArrayShape

if TYPE_CHECKING:
    from hlort.plugin.base.simple_client import SimpleClient

LOGGER = lazy_logger("hlort.plugin")
# the storage hooks a subclass may override that free what finalizers queued before they run
DRAINING_HOOKS = ("allocate", "free", "memory_stats")


def _drains_first(hook: Callable) -> Callable:
    """``hook``, run after the device frees what finalizers queued (see the module's doc)."""

    @functools.wraps(hook)
    def draining(self, *args, **kwargs):
        if self._deferred:
            self.drain_deferred()
        return hook(self, *args, **kwargs)

    draining.drains_first = True
    return draining


class SimpleMemorySpace(MemorySpace):
    """A memory space attached to a fixed list of devices."""

    def __init__(self, space_id: int, kind: str, devices: Sequence[Device]):
        self._id = space_id
        self._kind = kind
        self._devices = list(devices)

    @property
    def id(self) -> int:
        return self._id

    @property
    def kind(self) -> str:
        return self._kind

    def devices(self) -> Sequence[Device]:
        return list(self._devices)


class SimpleDevice(Device):
    """Owns one :class:`WorkQueue`; every transfer and launch on it runs there, in order.

    ``host_memory``: storage is a C-contiguous NumPy array of the buffer's dtype and dims.
    ``supports_zero_copy``: with host memory, the zero-copy host-buffer semantics may alias the
    caller's array instead of copying it. ``bytes_limit`` makes allocation beyond it fail with
    RESOURCE_EXHAUSTED.
    """

    host_memory: ClassVar[bool] = True
    supports_zero_copy: ClassVar[bool] = True
    # no class overrides ``free``: a finalizer need not keep ready storage for the drain
    frees_nothing: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in DRAINING_HOOKS:
            hook = cls.__dict__.get(name)
            if hook is not None and not getattr(hook, "drains_first", False):
                setattr(cls, name, _drains_first(hook))
        cls.frees_nothing = cls.free is SimpleDevice.free

    def __init__(
        self,
        client: SimpleClient,
        device_id: int,
        kind: str,
        *,
        local_hardware_id: int | None = None,
        bytes_limit: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        synchronous: bool = False,
    ):
        self.client = client
        self._id = device_id
        self._kind = kind
        self._local_hardware_id = device_id if local_hardware_id is None else local_hardware_id
        self._attributes = dict(attributes or {})
        self.bytes_limit = bytes_limit
        self.queue = WorkQueue(f"{client.platform_name}:{device_id}", synchronous=synchronous)
        self._memory_space = SimpleMemorySpace(device_id, "device", [self])
        self._stats_lock = threading.Lock()
        self._bytes_in_use = 0
        self._peak_bytes = 0
        self._num_allocs = 0
        self._largest_alloc = 0
        # (storage future or None, nbytes) or a callable, appended by finalizers (defer_free)
        self._deferred: deque = deque()

    # -- identity -----------------------------------------------------------------------------
    @property
    def id(self) -> int:
        return self._id

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def local_hardware_id(self) -> int:
        return self._local_hardware_id

    def attributes(self) -> Mapping[str, AttributeValue]:
        return dict(self._attributes)

    def default_memory_space(self) -> MemorySpace:
        return self._memory_space

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.client.platform_name}:{self.id} {self.kind}>"

    # -- storage hooks (override for real device memory) --------------------------------------
    def allocate(self, shape: ArrayShape) -> Any:
        """New, uninitialized storage for an array of ``shape``."""
        if self._deferred:
            self.drain_deferred()
        return np.empty(shape.dims, dtype=shape.dtype.numpy)

    def free(self, storage: Any) -> None:
        """Release storage. Called once, after every use of it finished; never from a
        finalizer (those go through :meth:`defer_free`)."""
        if self._deferred:
            self.drain_deferred()

    def copy_in(self, storage: Any, array: np.ndarray) -> None:
        """Fill ``storage`` from a C-contiguous host array of the same shape and dtype."""
        np.copyto(storage, array, casting="no")

    def copy_out(self, storage: Any, shape: ArrayShape) -> np.ndarray:
        """A new host array holding the contents of ``storage`` (never a view of it)."""
        return np.array(storage, copy=True, order="C")

    def duplicate(self, storage: Any, shape: ArrayShape) -> Any:
        """New storage with the same contents (used when an output aliases an input)."""
        if self.host_memory:
            return np.array(storage, copy=True, order="C")
        new = self.allocate(shape)
        self.copy_in(new, self.copy_out(storage, shape))
        return new

    # -- used by the base classes --------------------------------------------------------------
    def storage_from_host(self, array: np.ndarray, shape: ArrayShape, owned: bool) -> Any:
        """Storage holding ``array``; ``owned`` means the array is a private copy we may adopt."""
        if self.host_memory and owned:
            return array
        storage = self.allocate(shape)
        self.copy_in(storage, np.asarray(array, order="C"))  # 0-d stays 0-d
        return storage

    def release_storage(self, storage: Future, nbytes: int) -> None:
        """Free ``storage`` once it exists and stop counting its ``nbytes``; not from a
        finalizer (:meth:`defer_free`)."""
        if storage.is_ready():  # the common case, without a callback
            try:
                if storage.error() is None:
                    self.free(storage.result())
            finally:
                self.track_free(nbytes)
            return

        def free(error) -> None:
            try:
                if error is None:
                    self.free(storage.result())
            finally:
                self.track_free(nbytes)

        storage.on_ready(free)

    # -- what finalizers may do ----------------------------------------------------------------
    def defer_free(self, storage: Future, nbytes: int) -> None:
        """:meth:`release_storage` later, at the device's next storage call; takes no lock,
        so safe from ``__del__`` wherever the garbage collector runs it."""
        if self.frees_nothing and storage.is_ready():
            storage = None  # only the byte count is left to do: let the memory go now
        self._deferred.append((storage, nbytes))

    def defer_call(self, action: Callable[[], None]) -> None:
        """Run ``action`` at the device's next storage call (a finalizer's work that takes a
        lock); takes no lock itself."""
        self._deferred.append(action)

    def drain_deferred(self) -> None:
        """Free (and run) what finalizers queued. Called with no plugin lock held: at the start
        of ``allocate``, ``free``, ``memory_stats``, ``track_alloc(s)``, a donation and the
        client's close. A failure is a plugin bug; it is logged and the rest still drains."""
        deferred = self._deferred
        if not deferred:
            return
        items = []
        while deferred:  # take them all first: a free that drains again finds none
            try:
                items.append(deferred.popleft())
            except IndexError:  # another thread took the last one
                break
        freed = 0
        for item in items:
            try:
                if type(item) is not tuple:
                    item()
                    continue
                storage, nbytes = item
                if storage is None:
                    freed += nbytes
                elif storage.is_ready():
                    freed += nbytes
                    if storage.error() is None:
                        self.free(storage.result())
                else:
                    self.release_storage(storage, nbytes)
            except Exception:  # noqa: BLE001 - the other items must still be freed
                LOGGER.exception("%r: freeing a garbage-collected buffer failed", self)
        if freed:
            self.track_free(freed)

    # -- accounting ----------------------------------------------------------------------------
    def track_alloc(self, nbytes: int) -> None:
        self.track_allocs((nbytes,))

    def track_allocs(self, sizes: Sequence[int]) -> None:
        """Count allocations of ``sizes`` bytes (a launch's outputs: one lock for all), all
        or none: RESOURCE_EXHAUSTED when together they would pass ``bytes_limit``."""
        if self._deferred:  # the bytes of dropped buffers come back before the limit check
            self.drain_deferred()
        total = sum(sizes)
        with self._stats_lock:
            if self.bytes_limit is not None and self._bytes_in_use + total > self.bytes_limit:
                raise ResourceExhausted(
                    f"{self.client.platform_name}:{self.id}: allocating {total} bytes would "
                    f"exceed the limit of {self.bytes_limit} ({self._bytes_in_use} in use); "
                    f"delete buffers you no longer need"
                )
            self._bytes_in_use += total
            self._num_allocs += len(sizes)
            self._peak_bytes = max(self._peak_bytes, self._bytes_in_use)
            if sizes:
                self._largest_alloc = max(self._largest_alloc, max(sizes))

    def track_free(self, nbytes: int) -> None:
        with self._stats_lock:
            self._bytes_in_use -= nbytes

    def memory_stats(self) -> MemoryStats:
        if self._deferred:
            self.drain_deferred()
        with self._stats_lock:
            return MemoryStats(
                bytes_in_use=self._bytes_in_use,
                peak_bytes_in_use=self._peak_bytes,
                num_allocs=self._num_allocs,
                bytes_limit=self.bytes_limit,
                largest_alloc_size=self._largest_alloc,
            )
