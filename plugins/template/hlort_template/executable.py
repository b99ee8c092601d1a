"""TemplateExecutable: compile once, launch many times.

:class:`~hlort.plugin.base.SimpleExecutable` handles the contract: argument checks, donation,
output buffers and their events, serialization (the payload is the module's HLO text; loading
compiles it again), fingerprints. The plugin writes two methods:

``compile()``  runs once, in ``Client.compile``: turn ``self.module`` into a Program.
``launch()``   runs on the device's work queue for every execution. It is *asynchronous*, as
               a GPU launch is: it allocates the outputs, enqueues the work on the device's
               compute stream and returns an :class:`~hlort.plugin.base.AsyncLaunch` at
               once; the base makes the outputs ready (and releases the inputs) when the
               stream's completion event fires, or fails them with the stream's error. The
               work queue is free for the next transfer or launch meanwhile. A backend
               whose launches are synchronous returns the output storage list instead.

On N devices every device's launch runs at once on its own work queue; a collective step meets
the other devices through ``ctx`` (the execution's rendezvous) with
:func:`~hlort.plugin.base.collectives.collective_result`, which gives the interpreter's bits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.interpreter.evaluator import Evaluator
from hlort.plugin.base import AsyncLaunch, LaunchContext, SimpleExecutable
from hlort.plugin.base.collectives import collective_result, peers_for
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort_template.compiler import Program, compile_module
from hlort_template.device import TemplateDevice


class TemplateExecutable(SimpleExecutable):
    program: Program

    def compile(self) -> None:
        self.program = compile_module(self.module)  # UNIMPLEMENTED for an op we cannot run
        self._entry_shapes = [p.shape for p in self.module.entry.parameters]

    def launch(self, device: TemplateDevice, arguments: list, ctx: LaunchContext) -> AsyncLaunch:
        # 1. allocate the outputs now: running out of device memory fails this execution here
        outputs = [device.allocate(shape) for shape in self.output_shapes]
        # 2. enqueue the kernels on the compute stream (a real backend: cuLaunchKernel on a
        #    CUstream) and return; the argument blocks stay held until the work completes
        done = device.stream.enqueue(
            lambda: self._run_steps(device, arguments, outputs, ctx), f"run {self.name}"
        )
        # 3. the completion event (a real backend: an event recorded on the stream)
        return AsyncLaunch(outputs, completion=lambda: done)

    def _run_steps(self, device: TemplateDevice, arguments: list, outputs: list, ctx) -> None:
        """On the compute stream: read the arguments out of device memory, run the steps,
        write the results into the output blocks (a real backend's kernels do this)."""
        shapes = self.parameter_shapes
        arrays = [
            device.copy_out(block, shape) for block, shape in zip(arguments, shapes, strict=True)
        ]
        params = unflatten(self._entry_shapes, arrays)  # tuple-shaped parameters take leaves
        # the evaluator runs nested computations and knows replica/partition (and, for
        # collectives inside loop bodies, this device's peers)
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
        results = flatten_value(values[self.program.result_slot])
        for block, value in zip(outputs, results, strict=True):
            device.copy_in(block, value)

    def artifacts(self) -> Mapping[str, str | bytes]:
        return {"program.txt": self.program.listing()}
