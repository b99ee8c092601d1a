"""The user-facing executable: call it with NumPy arrays or with buffers.

``exe(x, y)`` with arrays transfers them, runs, waits and returns NumPy arrays; with buffers
(all arguments) it returns buffers at once and the data stays on the device. A tuple result
comes back as a tuple (flattened depth first). Nothing is verified or recompiled per call: the
only per-call checks are each argument's dims and dtype.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.errors import HlortError, InvalidArgument
from hlort.ir.module import Module
from hlort.ir.sharding import HloSharding
from hlort.plugin import api
from hlort.plugin.base.events import as_hlort_error
from hlort.plugin.base.hlo_text import print_hlo
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS, ExecuteOptions, HostBufferSemantics
from hlort.runtime.buffer import Buffer
from hlort.runtime.device import Device
from hlort.shape import ArrayShape, Shape, TupleShape

if TYPE_CHECKING:
    from hlort.runtime.client import Backend

_UNTIL_DONE = HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES


class Executable:
    """A compiled program on one backend; thread-safe to call from many threads."""

    def __init__(
        self,
        raw: api.Executable,
        backend: Backend,
        module: Module | None = None,
        timings: Mapping[str, float] | None = None,
    ):
        self.raw = raw
        self.backend = backend
        self._module = module
        self.timings: dict[str, float] = dict(timings or {})
        self.devices: list[Device] = [backend.wrap_device(d) for d in raw.addressable_devices()]
        self.input_shapes: list[ArrayShape] = list(raw.parameter_shapes)
        self.output_shapes: list[ArrayShape] = list(raw.output_shapes)
        self.result_shape: Shape = raw.result_shape
        self._tuple_result = isinstance(self.result_shape, TupleShape)
        self._specs = [(s.dims, s.dtype.numpy) for s in self.input_shapes]
        overrides = type(raw).execute_host is not api.Executable.execute_host
        self._host_fast_path = overrides and len(self.devices) == 1

    # -- description ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.raw.name

    @property
    def device(self) -> Device:
        return self.devices[0]

    @property
    def module(self) -> Module:
        """The optimized module: the backend's own, else the one the core passes produced."""
        try:
            return self.raw.optimized_module()
        except HlortError:
            if self._module is None:
                raise
            return self._module

    def as_text(self) -> str:
        """The optimized module as HLO text."""
        return print_hlo(self.module)

    def fingerprint(self) -> str:
        return self.raw.fingerprint()

    def serialize(self) -> bytes:
        return self.raw.serialize()

    def shardings(self) -> tuple[list[HloSharding], list[HloSharding]]:
        """(one sharding per parameter, one per flat output) over the partitions: the layouts
        the SPMD partitioner recorded in the optimized module (``spmd_parameters_shardings``,
        ``spmd_output_sharding``), replicated where it recorded none (one device)."""
        from hlort.passes.spmd_partitioner import output_sharding, parameter_shardings

        module = self.module
        replicated = HloSharding.replicate()
        params = parameter_shardings(module) or [replicated] * len(self.input_shapes)
        out = output_sharding(module)
        outs = [replicated] * len(self.output_shapes) if out is None else _flat(out)
        if len(params) != len(self.input_shapes) or len(outs) != len(self.output_shapes):
            raise InvalidArgument(
                f"{self.name}: the module's spmd shardings describe {len(params)} parameter(s) "
                f"and {len(outs)} output(s); it has {len(self.input_shapes)} and "
                f"{len(self.output_shapes)}"
            )
        return params, outs

    def cost_analysis(self) -> Mapping[str, float]:
        return self.raw.cost_analysis()

    def compiled_memory_stats(self):
        return self.raw.compiled_memory_stats()

    def artifacts(self) -> Mapping[str, str | bytes]:
        return self.raw.artifacts()

    def __repr__(self) -> str:
        return f"Executable({self.name} on {', '.join(map(str, self.devices))})"

    # -- execution -----------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        """Run on the executable's device; arrays in -> arrays out, buffers in -> buffers out."""
        if self._host_fast_path:
            arrays = self._host_arrays(args)
            if arrays is not None:
                try:
                    results = self.raw.execute_host(arrays)
                except MemoryError as exc:
                    raise as_hlort_error(exc, f"{self.name} on {self.devices[0]}") from exc
                return tuple(results) if self._tuple_result else results[0]
        if args and all(isinstance(a, Buffer) for a in args):
            outputs = self.execute(args)
            return tuple(outputs) if self._tuple_result else outputs[0]
        return self._call_with_arrays(args)

    def execute(
        self,
        args: Sequence[Buffer | Any],
        options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS,
    ) -> list[Buffer]:
        """Run on a single-device executable; returns the flattened outputs as buffers."""
        self._single_device()
        self._check_count(args)
        raws = [self._to_raw(i, a) for i, a in enumerate(args)]
        device = self.devices[0]
        return [Buffer(out, device) for out in self.raw.execute([raws], options)[0]]

    def execute_sharded(
        self,
        args_per_device: Sequence[Sequence[Buffer | Any]],
        options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS,
    ) -> list[list[Buffer]]:
        """Run on every device (one argument list per device, in ``devices`` order)."""
        if len(args_per_device) != len(self.devices):
            raise InvalidArgument(
                f"{self.name} runs on {len(self.devices)} device(s); got "
                f"{len(args_per_device)} argument list(s)"
            )
        raws = []
        for device, args in zip(self.devices, args_per_device, strict=True):
            self._check_count(args)
            raws.append([self._to_raw(i, a, device) for i, a in enumerate(args)])
        results = self.raw.execute(raws, options)
        return [
            [Buffer(out, device) for out in outs]
            for device, outs in zip(self.devices, results, strict=True)
        ]

    def _host_arrays(self, args: Sequence[Any]) -> list[np.ndarray] | None:
        """The arguments as checked arrays for the host fast path, or None when one is a
        buffer (one pass: this is the whole per-call overhead of a tiny program)."""
        if len(args) != len(self._specs):
            self._check_count(args)
        arrays = []
        for i, (arg, (dims, dtype)) in enumerate(zip(args, self._specs, strict=True)):
            if type(arg) is np.ndarray and arg.shape == dims and arg.dtype == dtype:
                arrays.append(arg)
            elif isinstance(arg, Buffer):
                return None
            else:
                arrays.append(self._check_array(i, arg))
        return arrays

    def _call_with_arrays(self, args: Sequence[Any]) -> Any:
        self._single_device()
        self._check_count(args)
        device = self.devices[0]
        client = self.backend.client
        temporaries: list[api.Buffer] = []
        raws: list[api.Buffer] = []
        outputs: list[api.Buffer] = []
        try:
            for i, arg in enumerate(args):
                if isinstance(arg, Buffer):
                    raws.append(arg.raw)
                    continue
                array = self._check_array(i, arg)
                raw = client.buffer_from_host(array, device.raw, _UNTIL_DONE)
                temporaries.append(raw)
                raws.append(raw)
            outputs = self.raw.execute([raws])[0]
            futures = [out.to_host() for out in outputs]
            results = [f.result() for f in futures]
        finally:
            for raw in temporaries:
                try:
                    raw.ready_event().wait()  # the caller's array may be read until then
                except HlortError:
                    pass
                raw.delete()
            for out in outputs:
                out.delete()
        return tuple(results) if self._tuple_result else results[0]

    def _to_raw(self, index: int, arg: Any, device: Device | None = None) -> api.Buffer:
        if isinstance(arg, Buffer):
            return arg.raw
        device = device or self.devices[0]
        array = self._check_array(index, arg)
        return self.backend.client.buffer_from_host(array, device.raw)

    def _check_array(self, index: int, arg: Any) -> np.ndarray:
        dims, dtype = self._specs[index]
        if isinstance(arg, np.ndarray):
            array = arg
        else:
            try:
                array = np.asarray(arg, dtype=dtype)
            except (TypeError, ValueError, OverflowError) as err:
                raise InvalidArgument(
                    f"argument {index} of {self.name} cannot be converted to "
                    f"{self.input_shapes[index]}: {err}"
                ) from None
        if array.dtype != dtype and array.dtype.newbyteorder("=") == dtype:
            array = array.astype(dtype)  # the other byte order: same values, converted
        if array.shape != dims or array.dtype != dtype:
            raise InvalidArgument(
                f"argument {index} of {self.name} must be {self.input_shapes[index]} "
                f"(numpy {dtype.name}{list(dims)}), got {array.dtype.name}{list(array.shape)}; "
                f"convert it with np.asarray(x, dtype=...).reshape(...)"
            )
        return array

    def _check_count(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.input_shapes):
            shapes = ", ".join(str(s) for s in self.input_shapes) or "none"
            raise InvalidArgument(
                f"{self.name} takes {len(self.input_shapes)} argument(s) ({shapes}), "
                f"got {len(args)}"
            )

    def _single_device(self) -> None:
        if len(self.devices) != 1:
            raise InvalidArgument(
                f"{self.name} runs on {len(self.devices)} devices; use execute_sharded with one "
                f"argument list per device"
            )


def _flat(s: HloSharding) -> list[HloSharding]:
    return [x for e in s.elements for x in _flat(e)] if s.is_tuple else [s]
