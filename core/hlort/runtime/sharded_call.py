"""Global arrays in, global arrays out, for a program that runs on several devices.

``jax.jit`` with shardings takes and returns whole (global) arrays; the devices each see their
tile. :func:`compile_sharded` compiles a module whose header asks for ``num_partitions`` x
``num_replicas`` copies on that many devices of a backend (the SPMD partitioner turns a module
with shardings into the per-device program); calling the result cuts each argument into the
tiles its parameter sharding names, runs every device at once
(:meth:`Executable.execute_sharded`) and puts each output together from the tiles of its output
sharding. Devices run in the device assignment's order: copy ``(replica r, partition p)`` is
device ``r * num_partitions + p``; every replica gets the same arguments and the outputs are
replica 0's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hlort.errors import InvalidArgument
from hlort.ir.module import Module
from hlort.ir.sharding import HloSharding
from hlort.plugin.options import CompileOptions
from hlort.runtime.device import Device
from hlort.runtime.executable import Executable
from hlort.runtime.program import load_program
from hlort.shape import ArrayShape, TupleShape


def device_counts(module: Module) -> tuple[int, int]:
    """(replicas, partitions) the module's header asks for."""
    return int(module.config.get("num_replicas", 1)), int(module.config.get("num_partitions", 1))


def compile_sharded(
    backend,
    program: Module | str | bytes | os.PathLike,
    options: CompileOptions | Mapping[str, Any] | None = None,
) -> ShardedExecutable:
    """Compile ``program`` for all the devices its header asks for on ``backend``."""
    module, _fmt = load_program(program)
    exe = backend.compile(module, None, options)  # compile takes the header's counts
    return ShardedExecutable(exe)


class ShardedExecutable:
    """An executable over several devices, called with and returning global arrays."""

    def __init__(self, exe: Executable):
        self.exe = exe
        module = exe.module
        self.replicas, self.partitions = device_counts(module)
        if len(exe.devices) != self.replicas * self.partitions:
            raise InvalidArgument(
                f"{exe.name} runs on {len(exe.devices)} device(s), but its module asks for "
                f"{self.replicas} replica(s) x {self.partitions} partition(s)"
            )
        self.parameter_shardings, self.output_shardings = exe.shardings()
        self.input_shapes = [
            _global(s, sh) for s, sh in zip(exe.input_shapes, self.parameter_shardings, strict=True)
        ]
        self.output_shapes = [
            _global(s, sh) for s, sh in zip(exe.output_shapes, self.output_shardings, strict=True)
        ]

    @property
    def devices(self) -> list[Device]:
        return list(self.exe.devices)

    @property
    def name(self) -> str:
        return self.exe.name

    def shard_arguments(self, arrays: Sequence[Any]) -> list[list[np.ndarray]]:
        """One argument list per device: each global array cut to that device's tile."""
        if len(arrays) != len(self.input_shapes):
            shapes = ", ".join(map(str, self.input_shapes)) or "none"
            raise InvalidArgument(
                f"{self.name} takes {len(self.input_shapes)} argument(s) ({shapes}), got "
                f"{len(arrays)}"
            )
        checked = [
            _check(i, a, s) for i, (a, s) in enumerate(zip(arrays, self.input_shapes, strict=True))
        ]
        per_device = []
        for k in range(len(self.exe.devices)):
            partition = k % self.partitions
            per_device.append(
                [
                    np.array(a[sh.tile_slices(a.shape, partition)], order="C")
                    for a, sh in zip(checked, self.parameter_shardings, strict=True)
                ]
            )
        return per_device

    def assemble(self, per_device: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
        """The global outputs from replica 0's tiles."""
        outputs = []
        for i, (shape, sharding) in enumerate(
            zip(self.output_shapes, self.output_shardings, strict=True)
        ):
            if not sharding.is_tiled:
                outputs.append(np.asarray(per_device[0][i]))
                continue
            whole = np.empty(shape.dims, shape.dtype.numpy)
            for p in range(self.partitions):
                whole[sharding.tile_slices(shape.dims, p)] = per_device[p][i]
            outputs.append(whole)
        return outputs

    def run(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        """Flat global outputs."""
        buffers = self.exe.execute_sharded(self.shard_arguments(arrays))
        return self.assemble([[b.numpy() for b in outs] for outs in buffers])

    def __call__(self, *arrays: Any) -> Any:
        outputs = self.run(arrays)
        return tuple(outputs) if isinstance(self.exe.result_shape, TupleShape) else outputs[0]


def _global(local: ArrayShape, sharding: HloSharding) -> ArrayShape:
    if not sharding.is_tiled:
        return local
    dims = tuple(d * t for d, t in zip(local.dims, sharding.tile_counts, strict=True))
    return ArrayShape(local.dtype, dims)


def _check(index: int, value: Any, shape: ArrayShape) -> np.ndarray:
    array = np.asarray(value)
    if array.shape != tuple(shape.dims) or array.dtype != shape.dtype.numpy:
        raise InvalidArgument(
            f"argument {index} must be the global array {shape} (numpy "
            f"{shape.dtype.numpy.name}{list(shape.dims)}), got {array.dtype.name}"
            f"{list(array.shape)}"
        )
    return array
