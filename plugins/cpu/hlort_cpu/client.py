"""CpuClient: the host's virtual devices (one unless HLORT_CPU_DEVICES or the client option
``device_count`` asks for more); compile goes through the CPU compiler."""

from __future__ import annotations

import os

from hlort.errors import HlortError
from hlort.ir.computation import Computation
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_options import PassOptions
from hlort.plugin.base import SimpleClient, SimpleDevice
from hlort_cpu import compile_cache
from hlort_cpu.executable import CpuExecutable
from hlort_cpu.virtual_devices import device_count


def emits_one_kernel(comp: Computation) -> bool:
    """Whether the compiler would turn fused computation ``comp`` into one LLVM kernel."""
    from hlort_cpu.codegen.kernel_builder import classify

    try:
        return classify(comp) is not None
    except HlortError:
        return False


class CpuClient(SimpleClient):
    executable_class = CpuExecutable

    def pass_options(self) -> PassOptions:
        """Row epilogues join their reductions: the row fusion emitter keeps a row in cache. The
        fusion passes make only fusions the emitter compiles as one kernel (a fusion it could not
        compile would run on the interpreter as a whole)."""
        return PassOptions(policy=FusionPolicy(row_epilogue_fusion=True, can_emit=emits_one_kernel))

    def create_devices(self) -> list[SimpleDevice]:
        from hlort_cpu.codegen.jit import jit_engine

        target = jit_engine().target
        if compile_cache.enabled():
            compile_cache.code_digest()  # once per process, with the JIT, not in the first compile
        attrs = {"cpu": target.cpu, "cores": os.cpu_count() or 1, "vector_bits": target.vector_bits}
        count = device_count(self.client_options)
        # launches run on each device queue's thread: execute returns before the work is done,
        # and the devices of one execution run concurrently (cheap one-device programs run
        # inline when the queue is idle: CpuExecutable.runs_inline)
        return [
            SimpleDevice(self, i, f"cpu ({target.cpu})", local_hardware_id=i, attributes=attrs)
            for i in range(count)
        ]
