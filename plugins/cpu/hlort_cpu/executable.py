"""CpuExecutable: compile the module into a thunk program once; launch runs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hlort.errors import HlortError
from hlort.ir.opcodes import Opcode
from hlort.plugin.base import LaunchContext, SimpleDevice, SimpleExecutable
from hlort.plugin.base.memory_overlap import owner_map, unshared_outputs
from hlort.plugin.capabilities import CompiledMemoryStats
from hlort_cpu import compile_cache
from hlort_cpu.compiler import compile_program
from hlort_cpu.device_run import DeviceRun
from hlort_cpu.version import PLUGIN_VERSION

# A launch this small costs less than handing it to the device's queue thread (~20 us).
_INLINE_MAX_BYTES = 1 << 16
_INLINE_MAX_FLOPS = 1 << 16
_MAY_RUN_LONG = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CUSTOM_CALL})


class CpuExecutable(SimpleExecutable):
    _constant_owners: dict | None = None  # the program's constants by memory owner, once

    def compile(self) -> None:
        self.program = compile_program(self.module)

    def serialize(self) -> bytes:
        """The framed HLO text; the module itself goes to the compile cache under that text,
        so even the first process to load the executable skips the parser."""
        data = super().serialize()
        if not getattr(self, "_module_cached", False):
            key = compile_cache.module_key(self.serialize_payload(), PLUGIN_VERSION)
            compile_cache.store_module(key, self.module)
            self._module_cached = True
        return data

    @classmethod
    def module_from_payload(cls, payload: bytes, header):
        """The serialized HLO text's module; parsed once, then taken from the compile cache
        (the parser and its first-use setup cost a new process milliseconds)."""
        key = compile_cache.module_key(payload, PLUGIN_VERSION)
        module = compile_cache.lookup_module(key)
        if module is None:
            module = super().module_from_payload(payload, header)
            compile_cache.store_module(key, module)
        return module

    def runs_inline(self) -> bool:
        """Small straight-line programs run on the caller's thread when the queue is idle (as
        XLA's CPU client runs cheap computations inline); the rest run on the queue's thread,
        so ``exe(buffers)`` returns before they finish. Collectives need every device's thread."""
        if self.options.num_replicas * self.options.num_partitions > 1:
            return False
        for comp in self.module.computations:
            if any(i.opcode in _MAY_RUN_LONG for i in comp.instructions):
                return False
        try:
            cost = self.cost_analysis()
        except HlortError:  # an op the cost model does not know: not known to be cheap
            return False
        work = cost["flops"] + cost["transcendentals"]
        return cost["bytes accessed"] <= _INLINE_MAX_BYTES and work <= _INLINE_MAX_FLOPS

    def launch(self, device: SimpleDevice, arguments: list, ctx: LaunchContext) -> list:
        return self.program.run(arguments, DeviceRun.of_launch(ctx))

    def execute_host(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """NumPy in, NumPy out on the calling thread: no buffers, no queue handoff.

        CPU device memory is host memory, so the program runs on the caller's arrays directly;
        an output that may share memory with an input, a constant or an earlier output is
        copied so the caller owns every result, each its own.
        """
        self.check_outputs_fit_in_host_memory()
        outputs = self.program.run(arrays)  # reads, never keeps nor changes, the sequence
        constants = self._constant_owners
        if constants is None:
            constants = self._constant_owners = owner_map(self.program.constant_arrays)
        return unshared_outputs(outputs, arrays, constants)

    def cost_analysis(self) -> Mapping[str, float]:
        from hlort.plugin.base.cost_estimate import estimate_cost

        return estimate_cost(self.module)

    def compiled_memory_stats(self) -> CompiledMemoryStats:
        """Temporaries are the programs' arenas (buffer assignment's peak, arena.py)."""
        return CompiledMemoryStats(
            argument_size_in_bytes=sum(s.nbytes for s in self.parameter_shapes),
            output_size_in_bytes=sum(s.nbytes for s in self.output_shapes),
            temp_size_in_bytes=self.program.temp_bytes,
            generated_code_size_in_bytes=self.program.code_bytes,
        )

    def artifacts(self) -> Mapping[str, str | bytes]:
        return self.program.artifacts()

    def fallbacks(self):
        """Each FALLBACK thunk's instruction and reason (HLORT_FALLBACK decides at compile)."""
        return list(self.program.fallback_records)

    def stats(self) -> dict[str, object]:
        """Compiled vs interpreted instructions (see Program.stats)."""
        return self.program.stats()
