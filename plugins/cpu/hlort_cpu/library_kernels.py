"""Library kernels: shape-generic LLVM kernels compiled once per process, like XLA's CPU runtime
functions (``__xla_cpu_runtime_*``), rather than once per module.

A module's own kernels are specialized to its shapes and compiled with it (``compiler.py``).
These take their sizes at run time, so one object serves every program: the triangular-solve
substitutions (f64 / c128, forward / back; ``hlort_cpu.codegen.triangular_solve_kernel``) and
the elementwise Threefry-2x32 of JAX's threefry custom calls
(``hlort_cpu.codegen.threefry_kernel``). All are built into one LLVM module on first use,
kept in the compile cache (memory and disk, keyed like a module's kernels by the emitter's
source digest, this plugin's version, the tuning constants changed at run time and the host
target) and loaded once per set of those constants (``code_settings.memo``).
"""

from __future__ import annotations

from hlort_cpu import compile_cache
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.compiled import KERNEL_CFUNC
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.threefry_kernel import emit_threefry_elementwise
from hlort_cpu.codegen.triangular_solve_kernel import emit_triangular_substitution
from hlort_cpu.version import PLUGIN_VERSION


def substitution_name(is_complex: bool, lower: bool) -> str:
    return f"substitution_{'c128' if is_complex else 'f64'}_{'forward' if lower else 'back'}"


SUBSTITUTIONS = {substitution_name(c, lo): (c, lo) for c in (False, True) for lo in (True, False)}
NAMES = ("threefry2x32", *SUBSTITUTIONS)


def library_kernel(name: str):
    """The ctypes function ``void (ptr* buffers, i64 begin, i64 end)`` of kernel ``name``."""
    return _load()[name]


@code_settings.memo
def _load() -> dict[str, object]:
    engine = jit_engine()
    key = compile_cache.cache_key("library-kernels", PLUGIN_VERSION, engine.key)
    symbols = {name: f"hl{key[:16]}_{name}" for name in NAMES}
    cached = compile_cache.lookup(key)
    if cached is None:
        module = CPU_TARGET.new_module("hlort_cpu_library")
        emit_threefry_elementwise(module, CPU_TARGET, symbols["threefry2x32"])
        for name, (is_complex, lower) in SUBSTITUTIONS.items():
            emit_triangular_substitution(module, CPU_TARGET, symbols[name], is_complex, lower)
        obj = engine.compile_ir(str(module))
        compile_cache.store(key, obj, sorted(symbols.values()))
    else:
        obj = cached[0]
    addresses = engine.load_object(obj, list(symbols.values()))
    return {name: KERNEL_CFUNC(addresses[symbol]) for name, symbol in symbols.items()}
