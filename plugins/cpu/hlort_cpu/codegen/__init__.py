"""The CPU's kernel schedules and host runtime over the core's target-neutral LLVM emitter.

Schedules (kernel_builder.py and the kernels it dispatches to) turn fused computations into
``void(ptr buffers, i64 begin, i64 end)`` kernels for the host thread pool; the host runtime
(llvm_start.py, jit.py, compiled.py, runtime_library.py) optimizes them for this CPU and loads
them with MCJIT. Importing this package imports nothing (llvm_start is imported early and must
stay cheap).
"""
