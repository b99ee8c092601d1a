"""Compiling one program for the devices of every process: each process runs its own copies.

``hlort.distributed.compile(program, options)`` is ``hlort.compile`` for a multi-process run.
The replica and partition counts (options or module header) and the device assignment are
global: ``device_assignment[replica][partition]`` is a global device id (default: the run's
devices in order). Every process compiles the same program and gets an executable whose
``devices`` are its own copies' devices; ``execute_sharded`` takes one argument list per local
device, and its collectives meet the other processes' copies through the MPI transport (the
rendezvous gets the global assignment, this process's devices and the transport).

The copies run on the plugin's executable class with placements for this process's devices
only, so this works for plugins built on ``hlort.plugin.base.SimpleClient`` (the interpreter,
cpu, tpusim, template); another plugin is refused with UNIMPLEMENTED.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from hlort.distributed.initialize import current
from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir import verify_module
from hlort.ir.collective_groups import check_collectives_fit
from hlort.ir.module import Module
from hlort.plugin.base.launch_context import Rendezvous
from hlort.plugin.base.simple_client import SimpleClient
from hlort.plugin.base.simple_executable import Placement
from hlort.plugin.options import CompileOptions
from hlort.runtime.compile import _module_counts, options_from_mapping, run_core_passes
from hlort.runtime.executable import Executable
from hlort.runtime.program import load_program

_classes: dict[type, type] = {}


class _AcrossProcesses:
    """Mixed into the plugin's executable class: the rendezvous spans every process."""

    global_assignment: tuple[tuple[int, ...], ...]

    def runs_inline(self) -> bool:
        """A process with one copy of a program its plugin calls cheap (judged as if it ran
        alone: no loops, small) runs it on the caller's thread when the device's queue is idle,
        as a cheap one-device program does. No other copy here needs to run at the same time,
        and under load the hand-off to the device thread and back costs scheduling delays of
        milliseconds, far more than a small collective. ``execute`` then returns once this
        copy's collectives are done; every process runs the same program, so they meet."""
        if len(self.placements) != 1:
            return False
        real = self.options
        self.options = dataclasses.replace(
            real, num_replicas=1, num_partitions=1, device_assignment=None
        )
        try:
            return super().runs_inline()  # type: ignore[misc]
        finally:
            self.options = real

    def make_rendezvous(self, options):
        run = current()
        return Rendezvous(
            self.global_assignment,
            transport=run.transport,
            key=(self.name, next(self._executions)),
        )


def _distributed_class(base: type) -> type:
    cls = _classes.get(base)
    if cls is None:
        cls = type(f"Distributed{base.__name__}", (_AcrossProcesses, base), {})
        _classes[base] = cls
    return cls


def global_assignment(options: CompileOptions) -> tuple[tuple[int, ...], ...]:
    """The options' device assignment, else the run's first R x P devices in id order."""
    run = current()
    if options.device_assignment is not None:
        for row in options.device_assignment:
            for device_id in row:
                run.table.device(device_id)  # NOT_FOUND naming the run's devices
        return options.device_assignment
    devices = run.devices()
    count = options.num_replicas * options.num_partitions
    if count > len(devices):
        raise InvalidArgument(
            f"the program needs {count} device(s) ({options.num_replicas} replica(s) x "
            f"{options.num_partitions} partition(s)); the run's {run.process_count} process(es) "
            f"have {len(devices)} {run.platform} device(s) in all"
        )
    p = options.num_partitions
    return tuple(
        tuple(devices[r * p + q].id for q in range(p)) for r in range(options.num_replicas)
    )


def compile(
    program: Module | str | bytes | os.PathLike,
    options: CompileOptions | Mapping[str, Any] | None = None,
) -> Executable:
    """Compile ``program`` for the whole run; this process's executable runs its own copies."""
    run = current()
    backend = run.backend
    client = backend.client
    if not isinstance(client, SimpleClient):
        raise Unimplemented(
            f"hlort.distributed.compile runs copies on plugins built on "
            f"hlort.plugin.base.SimpleClient; the {run.platform} plugin's client is "
            f"{type(client).__name__}"
        )
    if options is None:
        options = CompileOptions()
    elif isinstance(options, Mapping):
        options = options_from_mapping(options)
    module, _ = load_program(program)
    options = _module_counts(options, module)
    assignment = global_assignment(options)
    options = dataclasses.replace(options, device_assignment=assignment)
    placements = [
        Placement(client.own_device(run.table.device(d).local.raw), replica, partition)
        for replica, row in enumerate(assignment)
        for partition, d in enumerate(row)
        if run.table.process_of(d) == run.process_index
    ]
    if not placements:
        raise InvalidArgument(
            f"no copy of {module.name} runs on process {run.process_index}: the device "
            f"assignment {[list(r) for r in assignment]} names none of its devices "
            f"{[d.id for d in run.addressable_devices()]}"
        )
    verify_module(module)
    check_collectives_fit(module, options.num_replicas, options.num_partitions)
    optimized = run_core_passes(module.clone(), options, client)
    raw = _distributed_class(client.executable_class)(client, optimized, options, placements)
    raw.global_assignment = assignment
    return DistributedExecutable(raw, backend, optimized, {})


class DistributedExecutable(Executable):
    """This process's share of a multi-process program: ``execute_sharded`` over its devices.

    Never the plugin's one-device host fast path, which launches a copy without the rendezvous
    (its collectives would see one copy instead of the run's)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._host_fast_path = False
