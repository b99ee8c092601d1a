"""A plugin on the base classes whose device memory is not NumPy: storage is a bytearray.

It computes with the reference interpreter (converting storage to arrays around each launch)
and, like a young backend, lacks an op: ``dot`` is UNIMPLEMENTED at compile time.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import Unimplemented
from hlort.ir.opcodes import Opcode
from hlort.plugin.base import SimpleClient, SimpleDevice, SimplePlugin
from hlort.plugin.interpreter_backend import InterpreterExecutable


class FakeDevice(SimpleDevice):
    host_memory = False

    def allocate(self, shape):
        return bytearray(shape.nbytes)

    def copy_in(self, storage, array):
        storage[:] = np.ascontiguousarray(array).tobytes()

    def copy_out(self, storage, shape):
        flat = np.frombuffer(bytes(storage), dtype=shape.dtype.numpy)
        return flat.reshape(shape.dims).copy()


class FakeExecutable(InterpreterExecutable):
    def compile(self):
        for comp in self.module.computations:
            for instr in comp.instructions:
                if instr.opcode is Opcode.DOT:
                    raise Unimplemented(f"fakegood has no kernel for dot ({instr.name})")
        super().compile()

    def launch(self, device, arguments, ctx):
        shapes = self.parameter_shapes
        arrays = [device.copy_out(s, shape) for s, shape in zip(arguments, shapes, strict=True)]
        results = super().launch(device, arrays, ctx)
        outputs = []
        for value, shape in zip(results, self.output_shapes, strict=True):
            storage = device.allocate(shape)
            device.copy_in(storage, value)
            outputs.append(storage)
        return outputs


class FakeClient(SimpleClient):
    executable_class = FakeExecutable

    def create_devices(self):
        return [FakeDevice(self, i, "fake-chip", attributes={"cores": 4}) for i in range(2)]


class FakeGoodPlugin(SimplePlugin):
    name = "fakegood"
    api_version = (1, 0)
    priority = 10
    client_class = FakeClient

    def attributes(self):
        return {"version": "0.1.0", "vendor": "hlort tests"}
