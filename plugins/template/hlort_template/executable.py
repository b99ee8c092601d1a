"""TemplateExecutable: compile once, launch many times.

:class:`~hlort.plugin.base.SimpleExecutable` handles the contract: argument checks, donation,
output buffers and their events, serialization (the payload is the module's HLO text; loading
compiles it again), fingerprints. The plugin writes two methods:

``compile()``  runs once, in ``Client.compile``: turn ``self.module`` into a Program.
``launch()``   runs on the device's work queue for every execution: read the arguments out of
               device memory, run the steps, write the outputs into new device memory.

On N devices every device's launch runs at once on its own work queue; a collective step meets
the other devices through ``ctx`` (the execution's rendezvous) with
:func:`~hlort.plugin.base.collectives.collective_result`, which gives the interpreter's bits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.interpreter.evaluator import Evaluator
from hlort.plugin.base import LaunchContext, SimpleExecutable
from hlort.plugin.base.collectives import collective_result, peers_for
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort_template.compiler import Program, compile_module
from hlort_template.device import TemplateDevice


class TemplateExecutable(SimpleExecutable):
    program: Program

    def compile(self) -> None:
        self.program = compile_module(self.module)  # UNIMPLEMENTED for an op we cannot run
        self._entry_shapes = [p.shape for p in self.module.entry.parameters]

    def launch(self, device: TemplateDevice, arguments: list, ctx: LaunchContext) -> list:
        # 1. device memory -> values (a real backend passes the device pointers to its kernels)
        shapes = self.parameter_shapes
        arrays = [
            device.copy_out(block, shape) for block, shape in zip(arguments, shapes, strict=True)
        ]
        params = unflatten(self._entry_shapes, arrays)  # tuple-shaped parameters take leaves
        # 2. run the steps; the evaluator runs nested computations and knows replica/partition
        # (and, for collectives inside loop bodies, this device's peers)
        evaluator = Evaluator(
            check_shapes=False,
            replica_id=ctx.replica,
            partition_id=ctx.partition,
            peers=peers_for(ctx),
        )
        values: list[Any] = [None] * self.program.slot_count
        for number, slot in enumerate(self.program.parameter_slots):
            values[slot] = params[number]
        for step in self.program.steps:
            inputs = [values[i] for i in step.operands]
            if step.collective:  # a host step: the values meet the other devices' at ctx
                values[step.output] = collective_result(step.instruction, inputs, ctx, evaluator)
            else:
                values[step.output] = step.kernel(evaluator, step.instruction, *inputs)
        # 3. results -> new device memory, one block per flattened output
        outputs = []
        for value, shape in zip(
            flatten_value(values[self.program.result_slot]), self.output_shapes, strict=True
        ):
            block = device.allocate(shape)
            device.copy_in(block, value)
            outputs.append(block)
        return outputs

    def artifacts(self) -> Mapping[str, str | bytes]:
        return {"program.txt": self.program.listing()}
