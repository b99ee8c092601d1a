"""A GpuClient on the fake driver, with a reference "compiler", for testing the shared runtime.

The compiler makes a GpuProgram of one KernelLaunch whose kernel (a Python function the fake
driver calls) evaluates the whole module on the reference interpreter, reading and writing the
fake device memory through the launch's pointer arguments. Client options choose other plans:
``plan="host_fallback"`` (the module as one counted HostFallback step), ``plan="gemm"`` (a
row-major ``dot`` as a LibraryCall run by a NumPy "library"), ``plan="gpu_compiler"`` (the real
GPU compiler, for modules it compiles without kernels: copies, launch ids, host steps). This
tests the runtime's plumbing: transfers, events, slots, donation, serialization. It does not
test GPU kernels.
"""

from __future__ import annotations

import numpy as np
from fake_gpu_driver import FakeGpuDriver

from hlort.codegen.gpu.program import (
    BufferSlot,
    GemmSpec,
    GpuProgram,
    HostFallback,
    KernelInfo,
    KernelLaunch,
    LibraryCall,
)
from hlort.interpreter.evaluator import evaluate
from hlort.ir.module_codec import decode_module, encode_module
from hlort.plugin.base.fallback_policy import FallbackReport
from hlort.plugin.base.gpu_client import CompileOnlyGpuClient, GpuClient, GpuPlugin
from hlort.plugin.base.simple_executable import flatten_array_shapes
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.shape import ArrayShape, TupleShape


def reference_kernel(driver: FakeGpuDriver, module_handle, pointers: list[int]) -> None:
    module = decode_module(module_handle.image)
    entry = module.entry
    leaves: list[ArrayShape] = []
    for param in entry.parameters:
        leaves += flatten_array_shapes(param.shape, "parameter")
    args = [
        driver.array(p, s.dtype.numpy, s.dims).copy()
        for p, s in zip(pointers, leaves, strict=False)
    ]
    result = evaluate(module, unflatten([p.shape for p in entry.parameters], args))
    outs = flatten_array_shapes(entry.result_shape, "result")
    for pointer, shape, value in zip(
        pointers[len(leaves) :], outs, flatten_value(result), strict=True
    ):
        if shape.nbytes:
            driver.array(pointer, shape.dtype.numpy, shape.dims)[...] = value


class FakeCompiler:
    """compile_program for the fake clients (see the module docstring)."""

    client_options: dict

    def compile_program(self, module, options, target: str) -> GpuProgram:
        if self.client_options.get("plan") == "gpu_compiler":  # kernel-free modules only
            from hlort.codegen.gpu.compiler import compile_gpu_program
            from hlort_cuda.nvptx_target import NvptxTarget

            program = compile_gpu_program(module, NvptxTarget(target), host_loops=True)
            assert not program.kernels, "the fake driver runs no compiled kernel"
            return program
        entry = module.entry
        params: list[ArrayShape] = []
        for param in entry.parameters:
            params += flatten_array_shapes(param.shape, "parameter")
        outs = flatten_array_shapes(entry.result_shape, "result")
        slots = [
            BufferSlot(k, "parameter", s.nbytes, 256, s.dtype.name, s.dims, parameter_number=k)
            for k, s in enumerate(params)
        ]
        donation: dict[int, int] = {}
        outputs: list[int] = []
        for k, shape in enumerate(outs):
            donor = next(
                (p for p in options.donated_arguments if p not in donation and params[p] == shape),
                None,
            )
            if donor is not None:
                donation[donor] = k
                outputs.append(donor)
                continue
            slots.append(
                BufferSlot(
                    len(slots), "output", shape.nbytes, 256, shape.dtype.name, shape.dims, offset=0
                )
            )
            outputs.append(len(slots) - 1)
        args = tuple(range(len(params))) + tuple(outputs)
        plan = self.client_options.get("plan", "reference")
        kernels = [KernelInfo("reference", "reference", len(args))]
        if plan == "host_fallback":
            steps = [
                HostFallback(
                    entry.root.name,
                    entry.root.opcode.value,
                    "fake plan",
                    encode_module(module),
                    args[: len(params)],
                    tuple(outputs),
                )
            ]
            kernels = []
        elif plan == "gemm":
            (m, k), (_, n) = params[0].dims, params[1].dims
            dt = params[0].dtype.name
            steps = [LibraryCall("gemm", (0, 1, outputs[0]), GemmSpec(m, n, k, 1, dt, dt, dt))]
            kernels = []
        else:
            steps = [KernelLaunch("reference", (1, 1, 1), (1, 1, 1), 0, args)]
        report = FallbackReport("fakegpu", module.name)
        for step in steps:
            if isinstance(step, HostFallback):
                report.add(step.instruction, step.opcode, step.reason)
        report.apply()
        return GpuProgram(
            module.name,
            target,
            "fake",
            "fake",
            "; fake",
            encode_module(module),
            kernels,
            slots,
            steps,
            list(range(len(params))),
            outputs,
            isinstance(entry.result_shape, TupleShape),
            0,
            donation,
        )

    def library_runner(self, program):
        if self.client_options.get("no_library"):
            return None

        def run(device, call, blocks):
            spec, driver = call.gemm, device.driver
            a, b, c = blocks
            dt = _np(spec.dtype_a)

            def op() -> None:
                x = driver.array(a.pointer, dt, (spec.m, spec.k))
                y = driver.array(b.pointer, dt, (spec.k, spec.n))
                driver.array(c.pointer, _np(spec.dtype_c), (spec.m, spec.n))[...] = x @ y

            driver._enqueue(device.stream, op)

        return run


def _np(name: str) -> np.dtype:
    from hlort import dtypes

    return dtypes.from_hlo_name(name).numpy


class FakeGpuClient(FakeCompiler, GpuClient):
    def create_driver(self, options):
        driver = options.get("driver") or FakeGpuDriver(
            devices=options.get("devices", 1),
            memory=options.get("memory", 64 << 20),
            arch=options.get("arch", "sm_90"),
        )
        driver.kernels.setdefault("reference", reference_kernel)
        return driver


class FakeCompileOnlyClient(FakeCompiler, CompileOnlyGpuClient):
    pass


class FakeGpuPlugin(GpuPlugin):
    name = "fakegpu"
    api_version = (1, 0)
    client_class = FakeGpuClient
    compile_only_client_class = FakeCompileOnlyClient
