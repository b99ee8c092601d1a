"""The two long LLVM calls of a compile, made without llvmlite's process-wide lock.

llvmlite takes one lock around every call into libllvmlite, so two threads never compile at
once. LLVM itself only asks that a thread's modules live in an LLVMContext of its own and be
compiled by a TargetMachine of its own: a caller that made both for itself (a part of
parallel_compile.py, llvm_start's warm-up) may run the optimization pipeline and the object
emission, nearly all of a compile's time, without the lock; every other call keeps it. Where
llvmlite's functions no longer expose their ctypes function (``_cfn``, an internal), these take
the lock like any call: still correct, one compile at a time.
"""

from __future__ import annotations

import ctypes


def run_passes(llvm, passes, module, builder) -> None:
    """``passes.run(module, builder)`` without the lock (``module`` in the caller's context)."""
    _unlocked(llvm, "LLVMPY_RunNewModulePassManager")(passes, module, builder)


def emit_object(llvm, machine, module) -> bytes:
    """``machine.emit_object(module)`` with the emission made without the lock."""
    ffi = llvm.ffi
    with ffi.OutputString() as message:
        buffer = _unlocked(llvm, "LLVMPY_TargetMachineEmitToMemory")(machine, module, 1, message)
        if not buffer:
            raise RuntimeError(str(message))
    try:
        start, size = ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer)
        return ctypes.string_at(start, size)
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def _unlocked(llvm, name: str):
    wrapper = getattr(llvm.ffi.lib, name)
    return getattr(wrapper, "_cfn", wrapper)
