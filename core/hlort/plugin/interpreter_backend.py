"""The built-in ``interpreter`` platform: the reference interpreter behind the plugin API.

It is always available (lowest priority, so any real backend wins the default) and doubles as
the smallest complete example of the :mod:`hlort.plugin.base` classes: storage is host memory,
``compile`` only checks that every op can be evaluated, and ``launch`` runs the evaluator.
Buffers are private copies, never views of the caller's arrays (no zero-copy), and the
serialized form is the HLO text of the module.

Discovery imports this module in every process (the built-in platform is always registered), so
the interpreter itself, the reference fallback and the cost estimate are imported by the methods
that use them: a process compiling for another platform never loads them for this one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir.opcodes import Opcode
from hlort.plugin.api import AttributeValue
from hlort.plugin.base import (
    LaunchContext,
    SimpleClient,
    SimpleDevice,
    SimpleExecutable,
    SimplePlugin,
)
from hlort.plugin.capabilities import Capabilities, CompiledMemoryStats
from hlort.plugin.versioning import API_VERSION
from hlort.shape import Shape

PLATFORM = "interpreter"
INTERPRETER_PRIORITY = -1000
_STRUCTURAL = {Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT}


class InterpreterDevice(SimpleDevice):
    supports_zero_copy = False  # copies, never views of caller arrays


class InterpreterExecutable(SimpleExecutable):
    def compile(self) -> None:
        from hlort.plugin.base.reference_fallback import reference_function

        missing: set[str] = set()
        for comp in self.module.computations:
            for instr in comp.instructions:
                if instr.opcode is Opcode.PARAMETER:
                    continue
                if reference_function(instr) is None:
                    missing.add(instr.opcode.value)
        if missing:
            raise Unimplemented(
                f"the interpreter platform cannot run {self.name}: no interpreter function for "
                f"{', '.join(sorted(missing))}"
            )
        self._entry_shapes = [p.shape for p in self.module.entry.parameters]

    def launch(self, device: SimpleDevice, arguments: list, ctx: LaunchContext) -> list:
        # One evaluator per launch: it carries this copy's replica/partition ids and its peers
        # (the execution's rendezvous), and each device's launch runs on its own thread.
        from hlort.interpreter.evaluator import Evaluator
        from hlort.plugin.base.collectives import peers_for
        from hlort.plugin.base.value_flattening import flatten_value, unflatten

        evaluator = Evaluator(
            replica_id=ctx.replica, partition_id=ctx.partition, peers=peers_for(ctx)
        )
        result = evaluator.run(self.module, unflatten(self._entry_shapes, arguments))
        return flatten_value(result)

    def cost_analysis(self) -> Mapping[str, float]:
        from hlort.plugin.base.cost_estimate import estimate_cost

        return estimate_cost(self.module)

    def compiled_memory_stats(self) -> CompiledMemoryStats:
        entry = self.module.entry
        temp = sum(
            _nbytes(i.shape)
            for comp in self.module.computations
            for i in comp.instructions
            if i.opcode is not Opcode.PARAMETER and i is not entry.root
        )
        return CompiledMemoryStats(
            argument_size_in_bytes=sum(s.nbytes for s in self.parameter_shapes),
            output_size_in_bytes=sum(s.nbytes for s in self.output_shapes),
            temp_size_in_bytes=temp,
        )

    def artifacts(self) -> Mapping[str, str | bytes]:
        """The interpreter's "binary" is the module itself."""
        return {"interpreted.hlo": self.serialize_payload().decode()}


def _nbytes(shape: Shape) -> int:
    return int(getattr(shape, "nbytes", 0))


DEVICES_ENV = "HLORT_INTERPRETER_DEVICES"
DEFAULT_DEVICES = 8


def default_device_count() -> int:
    """``HLORT_INTERPRETER_DEVICES`` or 8: enough for the multi-device tests and programs of
    up to 8 replicas x partitions; an idle interpreter device costs one idle thread at most."""
    raw = os.environ.get(DEVICES_ENV, "").strip()
    if not raw:
        return DEFAULT_DEVICES
    if not raw.isdigit() or int(raw) < 1:
        raise InvalidArgument(f"{DEVICES_ENV}={raw!r} must be a device count >= 1")
    return int(raw)


class InterpreterClient(SimpleClient):
    executable_class = InterpreterExecutable

    def create_devices(self) -> list[SimpleDevice]:
        default = getattr(self.plugin, "device_count", None) or default_device_count()
        count = int(self.client_options.get("device_count", default))
        return [InterpreterDevice(self, i, "interpreter") for i in range(count)]


class InterpreterPlugin(SimplePlugin):
    """``InterpreterPlugin(device_count=2)`` gives a client with two interpreter devices;
    without a count, ``HLORT_INTERPRETER_DEVICES`` or 8 (client option ``device_count`` too).
    Every device runs its copy of a program on its own thread, collectives meeting at the
    execution's rendezvous (docs/collectives.md)."""

    name = PLATFORM
    api_version = API_VERSION
    priority = INTERPRETER_PRIORITY
    client_class = InterpreterClient

    def __init__(self, device_count: int | None = None):
        self.device_count = device_count

    def attributes(self) -> Mapping[str, AttributeValue]:
        from hlort.version import __version__

        return {"version": __version__, "vendor": "hlort", "description": "reference interpreter"}

    def capabilities(self) -> Capabilities:
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
            cost_analysis=True,
            compiled_memory_stats=True,
            artifacts=True,
            multi_device=(self.device_count or default_device_count()) > 1,
        )
