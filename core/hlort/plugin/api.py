"""The plugin API: the stable contract between the hlort core and a hardware backend.

Modelled on the PJRT C API, in Python. A backend ships a :class:`Plugin`; the core asks it for a
:class:`Client`, which owns :class:`Device` objects, turns an optimized, verified HLO
:class:`~hlort.ir.Module` into an :class:`Executable`, and moves arrays into :class:`Buffer`
objects. Work is asynchronous: transfers and launches return at once and completion is observed
through :class:`Event` objects.

Versioning: see :mod:`hlort.plugin.versioning`. Abstract methods are required; every other method
has a body that either gives a sensible default or raises ``Unimplemented`` naming the feature, so
adding a method in a minor release never breaks an existing plugin. Errors crossing the boundary
are :class:`~hlort.errors.HlortError` with PJRT's codes. The :mod:`hlort.plugin.base` package
implements most of this for a plugin; docs/plugin-api.md describes every method.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from hlort.dtypes import DType
from hlort.errors import HlortError, NotFound, Unimplemented
from hlort.plugin.capabilities import (
    Capabilities,
    CompiledMemoryStats,
    MemoryStats,
    ProbeResult,
)
from hlort.plugin.options import (
    DEFAULT_EXECUTE_OPTIONS,
    CompileOptions,
    DebugOptions,
    ExecuteOptions,
    HostBufferSemantics,
)
from hlort.plugin.versioning import API_VERSION, MIN_SUPPORTED_MINOR
from hlort.shape import ArrayShape, Shape

if TYPE_CHECKING:
    import numpy as np

    from hlort.ir.module import Module
    from hlort.passes.pass_options import PassOptions
    from hlort.plugin.conformance_profile import ConformanceProfile

__all__ = [
    "API_VERSION",
    "MIN_SUPPORTED_MINOR",
    "AttributeValue",
    "Buffer",
    "Capabilities",
    "Client",
    "CompileOptions",
    "CompiledMemoryStats",
    "DebugOptions",
    "Device",
    "Event",
    "ExecuteOptions",
    "Executable",
    "Future",
    "HostBufferSemantics",
    "MemorySpace",
    "MemoryStats",
    "Plugin",
    "ProbeResult",
    "unimplemented",
]

T = TypeVar("T")
AttributeValue = str | int | float | bool


def unimplemented(owner: object, feature: str) -> Unimplemented:
    """The error an optional method raises: names the feature and who lacks it."""
    who = getattr(owner, "platform_name", None) or type(owner).__name__
    return Unimplemented(f"{feature} is not implemented by {who}")


# -- events -------------------------------------------------------------------------------------
class Event(abc.ABC):
    """Completion of asynchronous work (PJRT_Event). Once ready it never changes.

    A failed operation makes its event ready *with an error*: ``wait`` raises it, ``error``
    returns it, and callbacks receive it, so the waiter always learns why.
    """

    @abc.abstractmethod
    def is_ready(self) -> bool:
        """True once the work finished, successfully or not. Never blocks."""

    @abc.abstractmethod
    def wait(self, timeout: float | None = None) -> None:
        """Block until ready; raise the work's error, or DEADLINE_EXCEEDED after ``timeout``."""

    @abc.abstractmethod
    def error(self) -> HlortError | None:
        """The failure once ready (None on success or while pending)."""

    @abc.abstractmethod
    def on_ready(self, callback: Callable[[HlortError | None], None]) -> None:
        """Call ``callback(error_or_None)`` once ready; at once (in this thread) if already ready.

        Callbacks may run on a plugin's worker thread: they must be short and must not block
        on work queued behind the event.
        """


class Future(Event, Generic[T]):
    """An event that also carries a value (``Buffer.to_host`` returns one)."""

    @abc.abstractmethod
    def result(self, timeout: float | None = None) -> T:
        """Wait, then return the value or raise the error."""


# -- memory and devices ------------------------------------------------------------------------
class MemorySpace(abc.ABC):
    """A memory a buffer can live in (PJRT_Memory): device memory, pinned host memory..."""

    @property
    @abc.abstractmethod
    def id(self) -> int:
        """Unique within the client."""

    @property
    @abc.abstractmethod
    def kind(self) -> str:
        """``"device"``, ``"pinned_host"``, ``"unpinned_host"`` or a vendor name."""

    @abc.abstractmethod
    def devices(self) -> Sequence[Device]:
        """Devices that can address this memory."""

    def __repr__(self) -> str:
        return f"<MemorySpace {self.id} {self.kind}>"


class Device(abc.ABC):
    """One device of a client (PJRT_Device)."""

    @property
    @abc.abstractmethod
    def id(self) -> int:
        """Unique among the client's devices; what ``"platform:N"`` and ``--device N`` name."""

    @property
    @abc.abstractmethod
    def kind(self) -> str:
        """Vendor's description of the hardware (``"interpreter"``, ``"H100"``...)."""

    @property
    def local_hardware_id(self) -> int:
        """The id the driver uses for it on this host; defaults to ``id``."""
        return self.id

    @property
    def process_index(self) -> int:
        return 0

    @property
    def is_addressable(self) -> bool:
        """Whether this process can place buffers on it (False for remote devices)."""
        return True

    def attributes(self) -> Mapping[str, AttributeValue]:
        """Vendor facts (core count, clock...), shown by ``hlort devices``."""
        return {}

    def memory_spaces(self) -> Sequence[MemorySpace]:
        """Memories this device can address; by default only its default memory space."""
        return [self.default_memory_space()]

    def default_memory_space(self) -> MemorySpace:
        raise unimplemented(self, "Device.default_memory_space")

    def memory_stats(self) -> MemoryStats:
        """Allocator statistics (optional)."""
        raise unimplemented(self, "Device.memory_stats")

    def __repr__(self) -> str:
        return f"<Device {self.id} {self.kind}>"


# -- buffers ------------------------------------------------------------------------------------
class Buffer(abc.ABC):
    """An array on a device (PJRT_Buffer). Immutable once ready, except through donation.

    After ``delete()`` or after being donated to an execution, every use raises
    FAILED_PRECONDITION naming the buffer; ``is_deleted()`` stays callable.
    """

    @property
    @abc.abstractmethod
    def shape(self) -> ArrayShape:
        """Element type and dims (never a tuple: PJRT results are flattened)."""

    @property
    def dtype(self) -> DType:
        return self.shape.dtype

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape.dims

    @property
    @abc.abstractmethod
    def device(self) -> Device:
        """Where the data lives."""

    @property
    def name(self) -> str:
        """What error messages call this buffer."""
        return f"{self.shape} on device {self.device.id}"

    def memory_space(self) -> MemorySpace:
        return self.device.default_memory_space()

    @abc.abstractmethod
    def ready_event(self) -> Event:
        """Ready when the data is on the device (or failed with the producer's error)."""

    @abc.abstractmethod
    def to_host(self) -> Future[np.ndarray]:
        """Start copying to a new host array (a copy, never a view of device storage)."""

    @abc.abstractmethod
    def delete(self) -> None:
        """Release device memory once pending work on it ends. Idempotent."""

    @abc.abstractmethod
    def is_deleted(self) -> bool:
        """True after ``delete()`` or donation."""

    def on_device_size_in_bytes(self) -> int:
        """Bytes of device memory held; defaults to the dense size."""
        return self.shape.nbytes

    def copy_to_device(self, device: Device) -> Buffer:
        """A new buffer on ``device`` with the same contents (optional)."""
        raise unimplemented(self, "Buffer.copy_to_device")

    def __repr__(self) -> str:
        return f"<Buffer {self.name}>"


# -- executables --------------------------------------------------------------------------------
class Executable(abc.ABC):
    """A compiled program loaded on one or more devices (PJRT_LoadedExecutable).

    Parameters and results are flat lists of arrays: a tuple-shaped entry parameter takes its
    leaves in order, and a tuple root yields one output buffer per leaf, depth first.
    ``execute`` is thread-safe: several threads may launch one executable at once.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The module's name."""

    @abc.abstractmethod
    def addressable_devices(self) -> Sequence[Device]:
        """The devices ``execute`` takes argument lists for, in order."""

    @property
    def num_replicas(self) -> int:
        return 1

    @property
    def num_partitions(self) -> int:
        return 1

    @property
    @abc.abstractmethod
    def parameter_shapes(self) -> Sequence[ArrayShape]:
        """The flattened argument shapes ``execute`` expects per device."""

    @property
    @abc.abstractmethod
    def output_shapes(self) -> Sequence[ArrayShape]:
        """The flattened result shapes ``execute`` returns per device."""

    @property
    def output_dtypes(self) -> list[DType]:
        return [s.dtype for s in self.output_shapes]

    @property
    def result_shape(self) -> Shape:
        """The entry computation's root shape (a tuple when there are several outputs)."""
        shapes = list(self.output_shapes)
        if len(shapes) == 1:
            return shapes[0]
        from hlort.shape import TupleShape

        return TupleShape(tuple(shapes))

    def donated_argument_indices(self) -> tuple[int, ...]:
        """Flat argument indices whose buffers ``execute`` consumes."""
        return ()

    @abc.abstractmethod
    def execute(
        self,
        arguments: Sequence[Sequence[Buffer]],
        options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS,
    ) -> list[list[Buffer]]:
        """Launch on every addressable device; one argument list per device, in order.

        Returns at once with one output list per device; outputs become ready (or fail with
        the launch's error) later. Arguments must be on their device with exactly
        ``parameter_shapes``; anything else is INVALID_ARGUMENT before anything is launched.
        """

    def execute_host(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run synchronously on the first device with host arrays in and out (optional).

        The fast path for ``exe(numpy_arrays)``: a backend whose device memory is host memory
        (CPU) can skip buffer objects and the work-queue handoff and dispatch in microseconds.
        Arrays are already checked against ``parameter_shapes``; the returned arrays belong to
        the caller. Backends without such a path leave the default, and the runtime falls back
        to buffers + ``execute``.
        """
        raise unimplemented(self, "Executable.execute_host")

    def fingerprint(self) -> str:
        """Stable identity of the compiled program (optional): same input, same fingerprint."""
        raise unimplemented(self, "Executable.fingerprint")

    def serialize(self) -> bytes:
        """Bytes ``Client.deserialize_executable`` turns back into this executable (optional)."""
        raise unimplemented(self, "Executable.serialize")

    def cost_analysis(self) -> Mapping[str, float]:
        """Estimated ``flops``, ``transcendentals``, ``bytes accessed``... (optional)."""
        raise unimplemented(self, "Executable.cost_analysis")

    def compiled_memory_stats(self) -> CompiledMemoryStats:
        """Memory one launch needs (optional)."""
        raise unimplemented(self, "Executable.compiled_memory_stats")

    def optimized_module(self) -> Module:
        """The module after the backend's own passes (optional; ``hlort compile`` prints it)."""
        raise unimplemented(self, "Executable.optimized_module")

    def artifacts(self) -> Mapping[str, str | bytes]:
        """Backend artifacts by file name (LLVM IR, PTX...) for ``--dump-dir`` (optional)."""
        raise unimplemented(self, "Executable.artifacts")

    def delete(self) -> None:
        """Release device resources; later ``execute`` calls may fail. Optional no-op."""
        return None

    def __repr__(self) -> str:
        return f"<Executable {self.name}>"


# -- client and plugin --------------------------------------------------------------------------
class Client(abc.ABC):
    """A started backend (PJRT_Client): owns devices, compiles, creates buffers."""

    @property
    @abc.abstractmethod
    def platform_name(self) -> str:
        """Equals the plugin's ``name``."""

    @property
    def platform_version(self) -> str:
        """Driver/runtime version text."""
        return "unknown"

    @property
    def process_index(self) -> int:
        return 0

    @abc.abstractmethod
    def devices(self) -> Sequence[Device]:
        """All devices, addressable or not, ordered by id."""

    def addressable_devices(self) -> Sequence[Device]:
        return [d for d in self.devices() if d.is_addressable]

    def lookup_device(self, device_id: int) -> Device:
        """The device whose ``id`` is ``device_id``; NOT_FOUND lists the valid ids."""
        for device in self.devices():
            if device.id == device_id:
                return device
        ids = ", ".join(str(d.id) for d in self.devices()) or "none"
        raise NotFound(f"{self.platform_name} has no device {device_id}; its devices: {ids}")

    def lookup_addressable_device(self, local_hardware_id: int) -> Device:
        for device in self.addressable_devices():
            if device.local_hardware_id == local_hardware_id:
                return device
        raise NotFound(
            f"{self.platform_name} has no addressable device with local hardware id "
            f"{local_hardware_id}"
        )

    def memory_spaces(self) -> Sequence[MemorySpace]:
        """Every memory space of every addressable device, without duplicates."""
        seen: dict[int, MemorySpace] = {}
        for device in self.addressable_devices():
            for space in device.memory_spaces():
                seen.setdefault(space.id, space)
        return list(seen.values())

    def pass_options(self) -> PassOptions:
        """The fusion policy and extra passes this backend wants from the core pipeline.

        The core runs its pipeline with these before ``compile``; the default is the core's
        default policy and no extra passes. Called once per compile, so it may read options.
        """
        from hlort.passes.pass_options import PassOptions

        return PassOptions()

    @abc.abstractmethod
    def compile(self, module: Module, options: CompileOptions) -> Executable:
        """Compile a verified, core-optimized module. UNIMPLEMENTED names an unsupported op."""

    def deserialize_executable(
        self, data: bytes, options: CompileOptions | None = None
    ) -> Executable:
        """Load what ``Executable.serialize`` produced (optional)."""
        raise unimplemented(self, "Client.deserialize_executable")

    @abc.abstractmethod
    def buffer_from_host(
        self,
        array: np.ndarray,
        device: Device,
        semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        *,
        memory_space: MemorySpace | None = None,
    ) -> Buffer:
        """Start a host-to-device transfer of ``array``, honouring ``semantics``."""

    def close(self) -> None:
        """Release the backend (stop worker threads...). Optional; idempotent."""
        return None

    def __repr__(self) -> str:
        return f"<Client {self.platform_name}>"


class Plugin(abc.ABC):
    """What an entry point of group ``hlort.plugins`` provides (an instance, class or factory).

    Subclasses set ``name`` (the platform, as in ``"name:0"`` and ``HLORT_PLATFORMS``),
    ``api_version`` (the API they target; required, never inherited from the core) and
    ``priority`` (higher is preferred as the default backend; the interpreter is -1000).
    Constructing a plugin and calling ``probe`` must be cheap: heavy imports (llvmlite, CUDA
    bindings) belong in ``create_client``.
    """

    name: ClassVar[str]
    api_version: ClassVar[tuple[int, int]]
    priority: ClassVar[int] = 0

    def probe(self) -> ProbeResult:
        """Whether a client could start here, without starting one."""
        return ProbeResult.ok()

    def attributes(self) -> Mapping[str, AttributeValue]:
        """Facts about the plugin (``version``, ``vendor``...), shown by ``hlort devices``."""
        return {}

    def capabilities(self) -> Capabilities:
        """Optional features supported; the conformance suite reads this."""
        return Capabilities()

    def conformance_profile(self) -> ConformanceProfile:
        """What the conformance suite skips, expects to fail or compares looser (optional).

        See :mod:`hlort.plugin.conformance_profile`; the default declares nothing.
        """
        from hlort.plugin.conformance_profile import ConformanceProfile

        return ConformanceProfile()

    @abc.abstractmethod
    def create_client(self, options: Mapping[str, Any] | None = None) -> Client:
        """Start the backend. Failures raise HlortError (UNAVAILABLE with the reason and fix)."""

    def create_compile_only_client(
        self, target: str, options: Mapping[str, Any] | None = None
    ) -> Client:
        """A client that compiles for the named ``target`` (``"sm_90"``) without its hardware
        (PJRT's compile-only client): ``hlort compile --target``. Optional; added in API 1.0
        as an additive method (its default raises UNIMPLEMENTED naming the feature)."""
        raise Unimplemented(
            f"the {getattr(self, 'name', type(self).__name__)} plugin cannot "
            f"compile ahead of time for a named target (--target {target})"
        )

    def __repr__(self) -> str:
        return f"<Plugin {getattr(self, 'name', type(self).__name__)}>"
