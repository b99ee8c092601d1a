"""Compiling kernel modules to callable kernels, and running them on NumPy arrays.

``compile_kernel_module`` turns a :class:`KernelModule` into object code and loads it;
:class:`CompiledKernel` wraps one entry point as a ctypes function (ctypes releases the GIL
during the call, so threads run kernels truly in parallel).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from hlort_cpu.codegen.fusion_kernel import KernelInfo
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.kernel_builder import KernelModule

KERNEL_CFUNC = ctypes.CFUNCTYPE(
    None, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int64
)


class CompiledKernel:
    """One loaded entry point (a plain class: making a dataclass compiles Python source, which
    a process's first compile paid)."""

    def __init__(self, info: KernelInfo, address: int):
        self.info = info
        self.address = address
        self.fn = KERNEL_CFUNC(self.address)
        n = self.info.num_inputs + len(self.info.output_shapes) + int(self.info.split)
        n += int(self.info.scratch_bytes > 0)
        self.pointer_array_type = ctypes.c_void_p * n

    def pointers(self, arrays: Sequence[np.ndarray]):
        return self.pointer_array_type(*[a.ctypes.data for a in arrays])

    def run_range(self, pointers, begin: int, end: int) -> None:
        self.fn(pointers, begin, end)

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Run on whole arrays (tests, one thread); returns fresh outputs."""
        outs = [np.empty(s.dims, s.dtype.numpy) for s in self.info.output_shapes]
        arrays = [np.ascontiguousarray(a) for a in inputs] + outs
        if self.info.split:
            arrays.append(np.empty(self.info.extent, outs[0].dtype))
        if self.info.scratch_bytes:
            arrays.append(np.empty(self.info.scratch_bytes, np.uint8))
        if self.info.extent:
            self.fn(self.pointers(arrays), 0, self.info.extent)
        if self.info.split:
            self.fn(self.pointers(arrays), self.info.extent, self.info.extent + 1)
        return outs


def compile_kernel_module(km: KernelModule) -> tuple[bytes, dict[str, CompiledKernel]]:
    """Optimize, emit object code, load it; returns (object code, kernels by name)."""
    engine = jit_engine()
    obj = engine.compile_ir(km.ir_text())
    return obj, load_kernels(obj, km.kernels)


def load_kernels(obj: bytes, infos: Sequence[KernelInfo]) -> dict[str, CompiledKernel]:
    engine = jit_engine()
    addresses = engine.load_object(obj, [k.name for k in infos])
    return {k.name: CompiledKernel(k, addresses[k.name]) for k in infos}


def load_entry_points(obj: bytes | list[bytes], infos: Sequence) -> dict[str, object]:
    """Load object code once (one object, or a module's parts: kernel_parts.py): a
    CompiledKernel per KernelInfo, a ctypes function per while driver
    (while_driver.DriverInfo)."""
    addresses = jit_engine().load_object(obj, [info.name for info in infos])
    return {
        info.name: CompiledKernel(info, addresses[info.name])
        if isinstance(info, KernelInfo)
        else KERNEL_CFUNC(addresses[info.name])
        for info in infos
    }
