"""SimpleExecutable: execute, donation, serialization and fingerprints; a plugin adds ``launch``.

``execute`` validates every argument before anything runs, takes holds on (or donations of) the
argument buffers, creates pending output buffers and enqueues one job per device on the
device's work queue, so it returns before the work is done (a program the plugin calls cheap,
:meth:`SimpleExecutable.runs_inline`, runs on the caller's thread when the queue is idle and the
inputs are ready: no thread hand-off for microseconds of work). The job waits for the inputs,
calls the plugin's :meth:`launch` with their storage, fixes aliasing (an output that *is* an
input's storage is duplicated unless the input was donated) and completes the outputs, or fails
them all with the launch's error.
"""

from __future__ import annotations

import abc
import functools
import itertools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.errors import Internal, InvalidArgument, ResourceExhausted, Unimplemented
from hlort.lazy_dataclass import dataclass
from hlort.plugin.api import Buffer, Event, Executable, Future
from hlort.plugin.base.buffer import SimpleBuffer, hold_arguments, release_holds
from hlort.plugin.base.events import AsyncValue, ElementOf
from hlort.plugin.base.fallback_policy import FallbackRecord
from hlort.plugin.base.hlo_text import parse_printed_hlo, print_hlo
from hlort.plugin.base.launch_context import LaunchContext, Rendezvous
from hlort.plugin.base.memory_overlap import owner_key, shares
from hlort.plugin.base.serialization import FrameHeader, frame_executable
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS, CompileOptions, ExecuteOptions
from hlort.sha256 import sha256
from hlort.shape import ArrayShape, Shape

if TYPE_CHECKING:
    from hlort.ir.module import Module
    from hlort.plugin.base.simple_client import SimpleClient
    from hlort.plugin.base.simple_device import SimpleDevice


_MULTI_DEVICE_ENQUEUE = threading.Lock()


@functools.cache
def host_memory_bytes() -> int:
    """The physical memory of this machine (an upper bound on any host allocation); asked once
    per process (it is checked on every execute)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no bound known
        return 1 << 62


@dataclass(frozen=True)
class Placement:
    """Where one copy of the program runs: a device and its replica and partition numbers."""

    device: SimpleDevice
    replica: int = 0
    partition: int = 0


@dataclass(frozen=True)
class AsyncLaunch:
    """What an asynchronous ``launch`` returns instead of finished storage (GPU streams).

    ``outputs`` is the storage of each flat output, already allocated, with the work that fills
    it enqueued on the device; ``completion()`` is called once the base has enqueued what it adds
    (a copy for an output that aliases a kept input) and returns the event that fires when all of
    that work has finished. The output buffers become ready, the argument holds are released and
    donated storage is freed only then; the event's error fails every output.
    """

    outputs: Sequence[Any]
    completion: Callable[[], Event]


def flatten_array_shapes(shape: Shape, what: str) -> list[ArrayShape]:
    """Leaves of ``shape`` in depth-first order; tokens are not allowed at the boundary."""
    leaves = shape.leaf_shapes()
    for leaf in leaves:
        if not isinstance(leaf, ArrayShape):
            raise Unimplemented(f"{what} of type {leaf} at the executable boundary")
    return leaves  # type: ignore[return-value]


class SimpleExecutable(Executable):
    """Subclass and implement :meth:`launch`; optionally :meth:`compile` and the payload pair."""

    def __init__(
        self,
        client: SimpleClient,
        module: Module,
        options: CompileOptions,
        placements: Sequence[Placement],
    ):
        self.client = client
        self.module = module
        self.options = options
        self.placements = list(placements)
        entry = module.entry
        self._parameter_shapes: list[ArrayShape] = []
        for param in entry.parameters:
            self._parameter_shapes += flatten_array_shapes(param.shape, f"parameter {param.name}")
        self._output_shapes = flatten_array_shapes(entry.result_shape, "the result")
        self._output_sizes = tuple(s.nbytes for s in self._output_shapes)
        self._output_bytes = sum(self._output_sizes)
        self._output_names = [f"{self.name}.out{k}" for k in range(len(self._output_shapes))]
        for index in options.donated_arguments:
            if index >= len(self._parameter_shapes):
                raise InvalidArgument(
                    f"donated_arguments lists {index}, but {self.name} takes "
                    f"{len(self._parameter_shapes)} argument(s)"
                )
        self._donated = list(options.donated_arguments)  # never changed (execute reads it)
        self._default_contexts: dict[int, LaunchContext] = {}
        self._output_labels: dict[int, str] = {}  # per device id
        self._fingerprint: str | None = None
        self._hlo_text: bytes | None = None  # serialize_payload's, printed once
        self._executions = itertools.count()
        self.compile()
        self._inline = self.runs_inline()

    # -- hooks for the plugin ------------------------------------------------------------------
    def compile(self) -> None:
        """Translate ``self.module`` once (codegen); raise UNIMPLEMENTED for unsupported ops."""

    @abc.abstractmethod
    def launch(self, device: SimpleDevice, arguments: list[Any], ctx: LaunchContext) -> Sequence:
        """Run on ``device`` (called on its work-queue thread, one launch at a time per device).

        ``arguments`` is the storage of each flattened argument; return the storage of each
        flattened output (NumPy arrays when ``device.host_memory``). Returning an argument's
        storage is allowed: the base copies it unless that argument was donated. A device that
        runs work asynchronously returns an :class:`AsyncLaunch` instead of finished storage.
        """

    def make_rendezvous(self, options: ExecuteOptions) -> Rendezvous | None:
        """The meeting point of one execution's devices (collectives); None for a program of
        one copy (one replica, one partition), whose collectives have no peers. A multi-process
        plugin overrides it to add the global assignment, its local devices and a transport."""
        if self.options.num_replicas * self.options.num_partitions == 1:
            return None
        grid = [[0] * self.options.num_partitions for _ in range(self.options.num_replicas)]
        for p in self.placements:
            grid[p.replica][p.partition] = p.device.id
        return Rendezvous(grid, key=(self.name, next(self._executions)))

    def runs_inline(self) -> bool:
        """Whether a launch is cheap enough to run on the calling thread when the device's
        queue is idle and every input is ready (asked once, at compile). Default False: every
        launch goes through the queue. A host-memory plugin says True for small programs
        without loops, where the hand-off to the queue's thread would cost more than the work."""
        return False

    def fallbacks(self) -> list[FallbackRecord]:
        """The instructions this executable runs on the reference interpreter, with reasons
        (fallback_policy.py); a plugin with such a fallback overrides this. The CLI prints them."""
        return []

    def serialize_payload(self) -> bytes:
        """What ``serialize`` stores; by default the HLO text of the module (recompiled on load),
        printed once: the fingerprint, the executable cache's store and the cpu plugin's module
        key each ask for it during a first compile."""
        if self._hlo_text is None:
            self._hlo_text = print_hlo(self.module).encode()
        return self._hlo_text

    @classmethod
    def module_from_payload(cls, payload: bytes, header: FrameHeader) -> Module:
        """Inverse of :meth:`serialize_payload` (the client then compiles the module again)."""
        return parse_printed_hlo(payload.decode(), source_name=f"<serialized {header.name}>")

    # -- Executable ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.module.name

    def addressable_devices(self) -> list[SimpleDevice]:
        return [p.device for p in self.placements]

    @property
    def num_replicas(self) -> int:
        return self.options.num_replicas

    @property
    def num_partitions(self) -> int:
        return self.options.num_partitions

    @property
    def parameter_shapes(self) -> list[ArrayShape]:
        return list(self._parameter_shapes)

    @property
    def output_shapes(self) -> list[ArrayShape]:
        return list(self._output_shapes)

    @property
    def result_shape(self) -> Shape:
        return self.module.entry.result_shape

    def donated_argument_indices(self) -> tuple[int, ...]:
        return self.options.donated_arguments

    def optimized_module(self) -> Module:
        return self.module

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            import json  # not at import: a first compile's key and compile need no json

            payload = self.serialize_payload()
            digest = sha256(expect=len(payload))
            for part in (
                self.client.platform_name,
                self.client.platform_version,
                json.dumps(self.options.to_dict(), sort_keys=True),
            ):
                digest.update(part.encode() + b"\0")
            digest.update(payload)
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def serialize(self) -> bytes:
        header = FrameHeader(
            platform=self.client.platform_name,
            platform_version=self.client.platform_version,
            fingerprint=self.fingerprint(),
            name=self.name,
            metadata={"compile_options": self.options.to_dict()},
        )
        return frame_executable(header, self.serialize_payload())

    # -- execution -----------------------------------------------------------------------------
    def execute(
        self,
        arguments: Sequence[Sequence[Buffer]],
        options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS,
    ) -> list[list[Buffer]]:
        if len(arguments) != len(self.placements):
            raise InvalidArgument(
                f"{self.name} runs on {len(self.placements)} device(s) and needs one argument "
                f"list per device, got {len(arguments)}"
            )
        if options.non_donatable_input_indices:
            donate = [
                i
                for i in self.options.donated_arguments
                if i not in options.non_donatable_input_indices
            ]
        else:
            donate = self._donated
        for placement, args in zip(self.placements, arguments, strict=True):
            self._check_arguments(placement.device, args)
            _check_donated_once(self.name, args, donate)
            if placement.device.host_memory:
                self.check_outputs_fit_in_host_memory()
        # every device's launch runs on its own work queue, so the copies run concurrently and
        # meet at one rendezvous in their collectives
        rendezvous = self.make_rendezvous(options)
        if len(self.placements) == 1:
            args = list(arguments[0])
            return [self._execute_on(self.placements[0], args, donate, options, rendezvous)]
        # One multi-device execution's launches are enqueued together: two executions enqueued
        # from two threads in interleaved orders (A then B on one queue, B then A on another)
        # would each wait in a collective for a device busy with the other.
        # A copy that cannot start (an argument deleted since the checks) aborts the rendezvous,
        # so the copies already enqueued give up at their first collective instead of holding
        # their devices until the collective timeout.
        outputs: list[list[Buffer]] = []
        with _MULTI_DEVICE_ENQUEUE:
            for placement, args in zip(self.placements, arguments, strict=True):
                try:
                    outputs.append(
                        self._execute_on(placement, list(args), donate, options, rendezvous)
                    )
                except BaseException as exc:
                    flat = placement.replica * self.options.num_partitions + placement.partition
                    rendezvous.abort(rendezvous.device_of(flat), exc)
                    raise
        return outputs

    def check_outputs_fit_in_host_memory(self) -> None:
        """RESOURCE_EXHAUSTED naming the bytes, before anything is allocated, when the outputs
        alone are more than the host's physical memory (NumPy would raise a raw MemoryError,
        or a ValueError past 2^63 bytes)."""
        if self._output_bytes > host_memory_bytes():
            need, have = self._output_bytes, host_memory_bytes()
            raise ResourceExhausted(
                f"{self.name}: its outputs need {need:,} bytes, more than this host's "
                f"{have:,} bytes of memory; shrink the output shapes"
            )

    def _check_arguments(self, device: SimpleDevice, args: Sequence[Buffer]) -> None:
        if len(args) == len(self._parameter_shapes):
            for buf, shape in zip(args, self._parameter_shapes, strict=True):
                # the common case, without formatting anything (every execute asks)
                if not (
                    isinstance(buf, SimpleBuffer)
                    and buf._device is device
                    and (buf._shape is shape or buf._shape == shape)
                ):
                    break
            else:
                return
        where = f"{device.client.platform_name}:{device.id}"
        if len(args) != len(self._parameter_shapes):
            raise InvalidArgument(
                f"{self.name} takes {len(self._parameter_shapes)} argument(s) on {where}, "
                f"got {len(args)}"
            )
        for i, (buf, shape) in enumerate(zip(args, self._parameter_shapes, strict=True)):
            if not isinstance(buf, SimpleBuffer):
                raise InvalidArgument(
                    f"argument {i} of {self.name} must be a buffer of this client, got "
                    f"{type(buf).__name__}; create it with client.buffer_from_host"
                )
            if buf.shape != shape:
                raise InvalidArgument(
                    f"argument {i} of {self.name} must be {shape}, got buffer {buf.name}"
                )
            if buf.device is not device:
                raise InvalidArgument(
                    f"argument {i} of {self.name} for {where} is on another device: {buf.name}; "
                    f"copy it to {where} first (hlort: buffer.copy_to(device); plugin API: "
                    f"Buffer.copy_to_device)"
                )

    def _launch_context(
        self, placement: Placement, options: ExecuteOptions, rendezvous: Rendezvous | None
    ) -> LaunchContext:
        """The context of ``placement``'s launch; with the default options and no rendezvous
        it is the same every time (immutable), so it is made once."""
        cacheable = rendezvous is None and options is DEFAULT_EXECUTE_OPTIONS
        if cacheable:
            ctx = self._default_contexts.get(id(placement))
            if ctx is not None:
                return ctx
        flat = placement.replica * self.options.num_partitions + placement.partition
        ctx = LaunchContext(  # device_id: the rendezvous' (global) id of this copy's device
            placement.replica,
            placement.partition,
            options.launch_id,
            options,
            device_id=placement.device.id if rendezvous is None else rendezvous.device_of(flat),
            rendezvous=rendezvous,
        )
        if cacheable:
            self._default_contexts[id(placement)] = ctx  # placements live as long as self
        return ctx

    def _attempted_with_argument(self, i: int, donate: list[int]) -> str:
        """What an execution was doing with argument ``i`` (for a dead buffer's error)."""
        if i in donate:
            return f"donate to execution of {self.name!r} (argument {i})"
        return f"pass as argument {i} to {self.name!r}"

    def _execute_on(
        self,
        placement: Placement,
        args: list[SimpleBuffer],
        donate: list[int],
        options: ExecuteOptions,
        rendezvous: Rendezvous | None = None,
    ) -> list[Buffer]:
        device = placement.device
        # one event completes every output: the list of their storage
        label = self._output_labels.get(device.id)
        if label is None:
            label = f"output of {self.name!r} on {device.client.platform_name}:{device.id}"
            self._output_labels[device.id] = label
        done: AsyncValue = AsyncValue(label)
        held: list[SimpleBuffer] = []
        donated: list[tuple[SimpleBuffer, Future]] = []

        def abandon(exc: BaseException) -> None:
            if held:
                release_holds(held)
            if not done.is_ready():
                done.set_error(exc)

        try:
            device.track_allocs(self._output_sizes)
            outputs: list[Buffer] = [
                SimpleBuffer(device, shape, ElementOf(done, k), name, tracked=True)
                for k, (shape, name) in enumerate(
                    zip(self._output_shapes, self._output_names, strict=True)
                )
            ]
            values = hold_arguments(
                args, donate, lambda i: self._attempted_with_argument(i, donate)
            )
            held = [buf for i, buf in enumerate(args) if i not in donate]
            for i in donate:
                donated.append(
                    (args[i], args[i].donate(f"execution of {self.name!r} (argument {i})"))
                )
        except BaseException as exc:
            abandon(exc)
            _free_donated(device, donated, set())
            raise
        ctx = self._launch_context(placement, options, rendezvous)
        donated_ids = {id(buf) for buf, _ in donated}

        def finish(results: list, kept: set[int]) -> None:
            _free_donated(device, donated, kept)
            if held:
                release_holds(held)
            done.set_result(results)

        def fail(exc: BaseException, storages: list, results: list) -> None:
            """The outputs never become buffers: free their storage (not the inputs', which
            their buffers or the donation free) and every donated input, then fail the
            outputs (so their memory is back by the time a waiter sees the error)."""
            inputs = {id(s) for s in storages}
            for storage in results:
                if id(storage) not in inputs:
                    inputs.add(id(storage))
                    device.free(storage)
            _free_donated(device, donated, set())
            abandon(exc)

        def run() -> None:
            kept: set[int] = set()
            storages: list = []
            results: list = []
            try:
                storages = [v.result() for v in values]
                launched = self.launch(device, storages, ctx)
                deferred = launched if isinstance(launched, AsyncLaunch) else None
                results = list(deferred.outputs if deferred is not None else launched)
                results = self._fix_outputs(device, results, storages, args, donated_ids, kept)
                if deferred is not None:
                    done = deferred.completion()
            except BaseException as exc:
                if rendezvous is not None:  # peers waiting for this device give up now
                    rendezvous.abort(device.id, exc)
                fail(exc, storages, results)
                raise
            if deferred is None:
                finish(results, kept)
                return

            def on_done(error) -> None:
                if error is None:
                    finish(results, kept)
                    return
                fail(error, storages, results)

            done.on_ready(on_done)

        started: list[bool] = []

        def run_here() -> None:
            started.append(True)
            try:
                run()
            except Exception:  # noqa: BLE001 - the error is on the outputs' events already
                pass

        try:
            inline = self._inline and all(v.is_ready() for v in values)
            if not (inline and device.queue.run_inline_if_idle(run_here)):
                device.queue.enqueue(run, f"launch of {self.name!r}")
        except BaseException as exc:
            if started:  # interrupted inside run(): it failed the outputs itself
                raise
            abandon(exc)
            _free_donated(device, donated, set())
            raise
        return outputs

    def _fix_outputs(
        self,
        device: SimpleDevice,
        results: list,
        inputs: list,
        args: list[SimpleBuffer],
        donated_ids: set[int],
        kept: set[int],
    ) -> list:
        if len(results) != len(self._output_shapes):
            raise Internal(
                f"plugin bug: launch of {self.name} returned {len(results)} output(s), expected "
                f"{len(self._output_shapes)}"
            )
        donated_inputs = [id(buf) in donated_ids for buf in args]
        by_memory = device.host_memory
        # memory owner -> (input index, or -1 for an earlier output; storage)
        owners: dict[int, list[tuple[int, Any]]] = {}
        for j, storage in enumerate(inputs):
            owners.setdefault(owner_key(storage, by_memory), []).append((j, storage))
        fixed: list = []
        for k, (storage, shape) in enumerate(zip(results, self._output_shapes, strict=True)):
            if by_memory:
                storage = _check_host_output(storage, shape, k, self.name)
            key = owner_key(storage, by_memory)
            same = owners.get(key)
            if same:
                overlaps = [j for j, other in same if shares(other, storage, by_memory)]
                if any(j < 0 or not donated_inputs[j] for j in overlaps):
                    storage = device.duplicate(storage, shape)
                    key = owner_key(storage, by_memory)
                else:
                    kept.update(id(inputs[j]) for j in overlaps)
            owners.setdefault(key, []).append((-1, storage))
            fixed.append(storage)
        return fixed


def _check_donated_once(name: str, args: Sequence[Buffer], donate: list[int]) -> None:
    """INVALID_ARGUMENT when a donated argument's buffer is also passed as another argument of
    the same call (PJRT refuses it too): the donation would wait forever for the hold this very
    call takes on the other argument, or kill the buffer before that argument reads it."""
    for i in donate:
        for j, other in enumerate(args):
            if j != i and other is args[i]:
                raise InvalidArgument(
                    f"argument {i} of {name} is donated, but the same buffer "
                    f"{args[i].name} is also argument {j}; pass a copy for one of them, or "
                    f"list {i} in ExecuteOptions.non_donatable_input_indices"
                )


def _check_host_output(storage: Any, shape: ArrayShape, k: int, name: str) -> np.ndarray:
    if (
        not isinstance(storage, np.ndarray)
        or storage.shape != shape.dims
        or storage.dtype != shape.dtype.numpy
    ):
        got = (
            f"{storage.dtype}{list(storage.shape)}"
            if isinstance(storage, np.ndarray)
            else type(storage).__name__
        )
        raise Internal(f"plugin bug: launch of {name} gave {got} for output {k}, expected {shape}")
    if not storage.flags.c_contiguous:
        storage = np.ascontiguousarray(storage)
    return storage


def _free_donated(
    device: SimpleDevice, donated: list[tuple[SimpleBuffer, AsyncValue]], kept: set[int]
) -> None:
    """Free donated storage not reused as an output; its byte count moves either way."""
    for buf, value in donated:

        def free(error, value=value, nbytes=buf.shape.nbytes) -> None:
            try:
                if error is None and id(value.result()) not in kept:
                    device.free(value.result())
            finally:
                device.track_free(nbytes)

        value.on_ready(free)
