"""The target-neutral LLVM emitter (llvmlite), shared by the LLVM backends (cpu, cuda, rocm).

A backend describes its target with a ``TargetSpec`` (target_spec.py), makes its kernels through
the kernel ABI (kernel_abi.py) and asks the element layer for values: ``FusedEmitter``
(fused_emitter.py) gives any instruction of a fused computation at an index, built from the
elemental ops (elemental.py), the math (float_math*.py, complex_*.py, float8.py), the index maps
and gather. Loop schedules, launch and runtimes are the backends' own (the CPU's live in
``hlort_cpu.codegen``). Import the modules themselves; this package re-exports nothing, so
importing one module loads only what it needs.
"""
