"""A deliberately broken plugin, ``broken``, for testing the conformance suite itself.

Loaded with ``pytest -p conformance_fakes`` (this directory on PYTHONPATH): importing it
registers the plugin in the default registry. It is the interpreter with four bugs and a
profile that declares some of them:

- ``add`` of f32 is off by one part in 1024 (undeclared: must fail with a clear message);
- ``multiply`` of f32 likewise (declared an expected failure: xfail);
- ``sort`` raises UNIMPLEMENTED (undeclared: must fail, suggesting to declare it);
- ``to_host`` of a deleted buffer still works (undeclared: use-after-delete must fail).

``fft`` and serialization are declared unsupported; ``subtract`` of s32 is declared an expected
failure although it works (an unexpected pass). ``HLORT_BROKEN_PROFILE_TYPO=1`` adds an entry
that matches nothing.
"""

from __future__ import annotations

import os

import numpy as np

from hlort.errors import Unimplemented
from hlort.ir.opcodes import Opcode
from hlort.plugin.base import ready_value
from hlort.plugin.base.buffer import SimpleBuffer
from hlort.plugin.conformance_profile import ConformanceProfile
from hlort.plugin.interpreter_backend import (
    InterpreterClient,
    InterpreterExecutable,
    InterpreterPlugin,
)
from hlort.plugin.registry import register_plugin


class LeakyBuffer(SimpleBuffer):
    """Forgets to check for deletion in to_host."""

    def to_host(self):
        return ready_value(self.device.copy_out(self._storage.result(), self.shape))


class BrokenExecutable(InterpreterExecutable):
    def compile(self) -> None:
        for comp in self.module.computations:
            for instr in comp.instructions:
                if instr.opcode in (Opcode.SORT, Opcode.FFT):
                    raise Unimplemented(f"broken has no kernel for {instr.opcode.value}")
        super().compile()

    def launch(self, device, arguments, ctx):
        results = super().launch(device, arguments, ctx)
        root = self.module.entry.root
        if root.opcode in (Opcode.ADD, Opcode.MULTIPLY) and root.shape.dtype.name == "f32":
            results = [r * np.float32(1 + 2**-10) for r in results]
        return results


class BrokenClient(InterpreterClient):
    executable_class = BrokenExecutable

    def buffer_from_host(self, array, device, semantics=None, *, memory_space=None):
        kwargs = {} if semantics is None else {"semantics": semantics}
        buf = super().buffer_from_host(array, device, **kwargs)
        buf.__class__ = LeakyBuffer
        return buf


class BrokenPlugin(InterpreterPlugin):
    name = "broken"
    priority = -5000
    client_class = BrokenClient

    def conformance_profile(self) -> ConformanceProfile:
        unsupported = {"op:fft": "no FFT unit", "feature:serialization": "not yet"}
        if os.environ.get("HLORT_BROKEN_PROFILE_TYPO"):
            unsupported["op:no-such-op"] = "a typo"
        return ConformanceProfile(
            unsupported=unsupported,
            expected_failures={
                "test_op[multiply-f32-*]": "multiply rounding bug #1",
                "test_op[subtract-s32-edges]": "declared, but it works",
            },
        )


register_plugin(BrokenPlugin())
