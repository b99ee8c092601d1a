"""Run a GpuProgram's steps on one device: kernels, library calls, copies, host fallbacks.

The program (hlort.codegen.gpu.program) is plain data; this module is what executes it. Per
device, the target binary is loaded once, its kernels looked up and the constant slots uploaded
(:class:`LoadedProgram`). Per launch, every temp and output slot gets its own block from the
caching allocator (the program's arena offsets are not needed: cached blocks make separate
allocations cheap, and outputs must be freeable one by one as buffers), the steps are enqueued on
the device's stream in order (a host loop or branch first reads its predicate or selector back),
temps go back to the cache (stream order keeps that safe) and the output blocks are returned. A
host fallback synchronizes the stream, copies its operands out, runs the instruction on the
reference interpreter and copies the results back. A replica-id or partition-id (LaunchId) is
byte memsets of the launch context's number into its slot, on the stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.codegen.gpu.program import (
    Copy,
    GpuProgram,
    HostBranch,
    HostFallback,
    HostLoop,
    KernelLaunch,
    LaunchId,
    LibraryCall,
    every_step,
)
from hlort.errors import HlortError, Internal, InvalidArgument, NotFound, Unimplemented
from hlort.plugin.base.gpu_allocator import DeviceBlock
from hlort.plugin.base.gpu_device import GpuDevice
from hlort.plugin.base.gpu_driver import Handle
from hlort.plugin.base.launch_context import LaunchContext
from hlort.shape import ArrayShape

LibraryRunner = Callable[[GpuDevice, LibraryCall, Sequence[DeviceBlock]], None]
"""Runs one library call (``gemm``) on a device's stream, given the blocks of its slots."""


@dataclass
class LoadedProgram:
    """A program made ready on one device: module handle, kernels, constant blocks."""

    device: GpuDevice
    module: Handle
    functions: dict[str, Handle]
    constants: dict[int, DeviceBlock] = field(default_factory=dict)


def slot_shape(program: GpuProgram, slot_id: int) -> ArrayShape:
    slot = program.slot(slot_id)
    return ArrayShape(dtypes.from_hlo_name(slot.dtype), tuple(slot.dims))


def check_program_for_device(program: GpuProgram, device: GpuDevice) -> None:
    """INVALID_ARGUMENT when the program was built for another target or exceeds the device's
    launch limits (a blob is untrusted input: every launch is checked before anything runs)."""
    props = device.properties
    if program.target != props.arch:
        raise InvalidArgument(
            f"GPU program {program.name!r} was compiled for {program.target}, but "
            f"{device.where} ({props.name}) is {props.arch}; compile the module again for this "
            f"device (or pass --target {props.arch} when compiling ahead of time)"
        )
    names = {k.name for k in program.kernels}
    for step in every_step(program.steps):
        if not isinstance(step, KernelLaunch):
            continue
        if step.kernel not in names:
            raise InvalidArgument(
                f"GPU program {program.name!r} launches {step.kernel!r}, "
                f"which its kernel list lacks; recompile it"
            )
        threads = step.block[0] * step.block[1] * step.block[2]
        if threads > props.max_threads_per_block or min(step.block + step.grid) < 1:
            raise InvalidArgument(
                f"GPU program {program.name!r}: kernel {step.kernel} launches grid {step.grid} "
                f"x block {step.block}; {device.where} allows at most "
                f"{props.max_threads_per_block} threads per block; recompile it for this device"
            )
        if step.shared_bytes > props.max_shared_memory_per_block:
            raise InvalidArgument(
                f"GPU program {program.name!r}: kernel {step.kernel} asks for "
                f"{step.shared_bytes} bytes of shared memory; {device.where} has "
                f"{props.max_shared_memory_per_block}; recompile it for this device"
            )


def u32_byte_runs(value: int) -> list[tuple[int, int, int]]:
    """``value`` as a little-endian u32 in (offset, byte, count) runs of equal bytes: the byte
    memsets that write it on the stream (no host buffer to keep alive, no synchronize; a
    replica number below 256 is two runs)."""
    if not 0 <= value < 1 << 32:
        raise InvalidArgument(f"replica or partition number {value} does not fit a u32")
    runs: list[tuple[int, int, int]] = []
    for k, byte in enumerate(value.to_bytes(4, "little")):
        if runs and runs[-1][1] == byte:
            runs[-1] = (runs[-1][0], byte, runs[-1][2] + 1)
        else:
            runs.append((k, byte, 1))
    return runs


class ProgramRunner:
    """Executes one :class:`GpuProgram` on any device of a client; thread-safe."""

    def __init__(self, program: GpuProgram, library: LibraryRunner | None):
        self.program = program
        self.library = library
        self._loaded: dict[int, LoadedProgram] = {}
        self._lock = threading.Lock()
        calls = [s for s in every_step(program.steps) if isinstance(s, LibraryCall)]
        if library is None and calls:
            routines = sorted({s.routine for s in calls})
            raise Unimplemented(
                f"GPU program {program.name!r} calls library routine(s) {routines}, which this "
                f"installation cannot run (no vendor library found); install the vendor "
                f"library package the plugin names in its README"
            )

    # -- per device ----------------------------------------------------------------------------
    def loaded_on(self, device: GpuDevice) -> LoadedProgram:
        with self._lock:
            loaded = self._loaded.get(device.id)
            if loaded is None:
                loaded = self._load(device)
                self._loaded[device.id] = loaded
            return loaded

    def _load(self, device: GpuDevice) -> LoadedProgram:
        program, driver = self.program, device.driver
        module = driver.module_load(device.ordinal, program.binary) if program.kernels else None
        functions: dict[str, Handle] = {}
        for info in program.kernels:
            try:
                functions[info.name] = driver.function(module, info.name)
            except NotFound:
                raise InvalidArgument(
                    f"GPU program {program.name!r}: its binary has no kernel "
                    f"{info.name!r}; recompile it"
                ) from None
        loaded = LoadedProgram(device, module, functions)
        for slot in program.slots:
            if slot.kind != "constant":
                continue
            data = np.frombuffer(slot.constant or b"", np.uint8)
            if data.size != slot.size:
                raise InvalidArgument(
                    f"GPU program {program.name!r}: constant slot {slot.id} "
                    f"holds {data.size} bytes, declares {slot.size}"
                )
            block = device.allocate_bytes(slot.size)
            device.copy_in(block, data)
            loaded.constants[slot.id] = block
        device.synchronize()  # the constants' host bytes are program data; wait, then done
        return loaded

    def unload(self) -> None:
        """Free the constant blocks and unload the module on every device it was loaded on,
        on the device's work queue after the launches queued before it, once the stream has
        finished them (a launch still queued or on the stream uses the module and the
        constants). A launch queued later loads the program again."""
        with self._lock:
            devices = [item.device for item in self._loaded.values()]
        for device in devices:
            try:
                device.queue.enqueue(
                    lambda device=device: self._unload_from(device),
                    f"unload of {self.program.name!r}",
                )
            except HlortError:
                pass  # the client is closed: its streams, context and modules are gone

    def _unload_from(self, device: GpuDevice) -> None:
        with self._lock:
            item = self._loaded.pop(device.id, None)
        if item is None:
            return
        device.synchronize()
        for block in item.constants.values():
            device.free(block)
        if item.module is not None:
            device.driver.module_unload(item.module)

    # -- per launch ----------------------------------------------------------------------------
    def run(
        self,
        device: GpuDevice,
        arguments: Sequence[DeviceBlock],
        donated: set[int],
        ctx: LaunchContext | None = None,
    ) -> list[DeviceBlock]:
        """Enqueue the program on ``device`` with the argument blocks; returns the output blocks.
        ``ctx`` (the launch's) gives host steps this copy's replica/partition ids and peers.

        ``donated`` are the flat argument numbers whose blocks this launch may write; a program
        compiled to write a parameter in place (``donation``) gets a private copy of one that
        this call keeps.
        """
        program, loaded = self.program, self.loaded_on(device)
        storage: dict[int, DeviceBlock] = dict(loaded.constants)
        fresh: list[DeviceBlock] = []
        for number, slot_id in enumerate(program.parameters):
            block = arguments[number]
            if number in program.donation and number not in donated:
                block = device.duplicate(block, slot_shape(program, slot_id))
                fresh.append(block)
            storage[slot_id] = block
        try:
            for slot in program.slots:
                if slot.kind in ("temp", "output") and slot.id not in storage:
                    block = device.allocate_bytes(slot.size)
                    storage[slot.id] = block
                    fresh.append(block)
            for step in program.steps:
                self._run_step(device, loaded, step, storage, ctx)
        except BaseException:
            for block in fresh:
                device.free(block)
            raise
        outputs = [storage[s] for s in program.outputs]
        kept = {id(b) for b in outputs}
        for block in fresh:
            if id(block) not in kept:
                device.free(block)
        return outputs

    def _run_step(
        self,
        device: GpuDevice,
        loaded: LoadedProgram,
        step: Any,
        storage: dict[int, DeviceBlock],
        ctx: LaunchContext | None = None,
    ) -> None:
        driver = device.driver
        if isinstance(step, KernelLaunch):
            pointers = [storage[s].pointer for s in step.args]
            driver.launch(
                loaded.functions[step.kernel],
                step.grid,
                step.block,
                step.shared_bytes,
                device.stream,
                pointers,
            )
        elif isinstance(step, LibraryCall):
            assert self.library is not None  # checked in __init__
            self.library(device, step, [storage[s] for s in step.args])
        elif isinstance(step, Copy):
            self._copy(device, step, storage)
        elif isinstance(step, HostFallback):
            self._host_fallback(device, step, storage, ctx)
        elif isinstance(step, HostLoop):
            self._host_loop(device, loaded, step, storage, ctx)
        elif isinstance(step, HostBranch):
            self._host_branch(device, loaded, step, storage, ctx)
        elif isinstance(step, LaunchId):
            replica, partition = (ctx.replica, ctx.partition) if ctx is not None else (0, 0)
            pointer = storage[step.dst].pointer
            for offset, byte, count in u32_byte_runs(step.value(replica, partition)):
                driver.memset_async(pointer + offset, byte, count, device.stream)
        else:
            raise InvalidArgument(f"GPU program {self.program.name!r}: unknown step {step!r}")

    def _copy(self, device: GpuDevice, step: Copy, storage: dict[int, DeviceBlock]) -> None:
        src, dst = storage[step.src], storage[step.dst]
        if step.src_offset + step.size > src.nbytes or step.dst_offset + step.size > dst.nbytes:
            raise InvalidArgument(
                f"GPU program {self.program.name!r}: copy {step} runs past its "
                f"slots ({src.nbytes} and {dst.nbytes} bytes)"
            )
        if step.size:
            device.driver.copy_d2d_async(
                dst.pointer + step.dst_offset,
                src.pointer + step.src_offset,
                step.size,
                device.stream,
            )

    def _host_loop(
        self,
        device: GpuDevice,
        loaded: LoadedProgram,
        loop: HostLoop,
        storage: dict[int, DeviceBlock],
        ctx: LaunchContext | None = None,
    ) -> None:
        """A while loop driven from the host: its condition's pred byte is read back (one
        stream synchronize per iteration); the body and update steps are enqueued as usual."""
        for copy in loop.init:
            self._copy(device, copy, storage)
        flag = np.zeros(1, np.uint8)
        while True:
            for step in loop.condition:
                self._run_step(device, loaded, step, storage, ctx)
            device.driver.copy_d2h_async(flag, storage[loop.predicate].pointer, device.stream)
            device.synchronize()
            if not flag[0]:
                return
            for step in loop.body:
                self._run_step(device, loaded, step, storage, ctx)
            for copy in loop.update:
                self._copy(device, copy, storage)

    def _host_branch(
        self,
        device: GpuDevice,
        loaded: LoadedProgram,
        branch: HostBranch,
        storage: dict[int, DeviceBlock],
        ctx: LaunchContext | None = None,
    ) -> None:
        """A conditional chosen on the host: the selector (a pred byte or an s32) is read back
        (one stream synchronize), then the chosen branch's steps are enqueued as usual."""
        raw = np.zeros(1 if branch.selector_dtype == "pred" else 4, np.uint8)
        device.driver.copy_d2h_async(raw, storage[branch.selector].pointer, device.stream)
        device.synchronize()
        for step in branch.branches[branch.branch_index(raw.tobytes())]:
            self._run_step(device, loaded, step, storage, ctx)

    def _host_fallback(
        self,
        device: GpuDevice,
        step: HostFallback,
        storage: dict[int, DeviceBlock],
        ctx: LaunchContext | None = None,
    ) -> None:
        from hlort.interpreter.evaluator import evaluate
        from hlort.ir.module_codec import decode_module
        from hlort.plugin.base.collectives import peers_for
        from hlort.plugin.base.value_flattening import flatten_value

        program = self.program
        inputs = [device.copy_out(storage[s], slot_shape(program, s)) for s in step.inputs]
        ids = {}
        if ctx is not None:  # replica-id, partition-id and collectives see this copy
            ids = dict(replica_id=ctx.replica, partition_id=ctx.partition, peers=peers_for(ctx))
        result = evaluate(decode_module(step.module), inputs, **ids)
        leaves = flatten_value(result)
        if len(leaves) != len(step.outputs):
            raise InvalidArgument(
                f"GPU program {program.name!r}: host step {step.instruction} "
                f"gave {len(leaves)} result(s), expected "
                f"{len(step.outputs)}"
            )
        staged = []
        for value, slot_id in zip(leaves, step.outputs, strict=True):
            shape = slot_shape(program, slot_id)
            host = np.ascontiguousarray(np.asarray(value, dtype=shape.dtype.numpy))
            if host.size != shape.size:
                raise Internal(
                    f"GPU program {program.name!r}: host step {step.instruction} gave "
                    f"{host.size} elements for a slot of shape {shape}; this is a bug in the "
                    "program's slot table or the interpreter: please report it"
                )
            device.copy_in(storage[slot_id], host.reshape(shape.dims))
            staged.append(host)
        device.synchronize()  # the staged results must outlive their copies
