"""One small hand-written LLVM IR function, compiled once per process, its object code kept in
the compile cache (so a fresh process loads it instead of running LLVM): the gemm-part kernel,
the narrow-dot kernel and the step-group trampoline are each one such function."""

from __future__ import annotations

from collections.abc import Callable

from hlort.sha256 import sha256


def native_function(kind: str, suffix: str, ir_of: Callable[[str], str]) -> int:
    """The address of the function ``ir_of(name)`` defines under ``name``. The cache key is
    ``kind`` and a digest of the text made with a placeholder name, so different text never
    shares a key and the symbol stays unique per key."""
    from hlort_cpu import compile_cache
    from hlort_cpu.codegen.jit import jit_engine
    from hlort_cpu.version import PLUGIN_VERSION

    engine = jit_engine()
    digest = sha256(ir_of("P").encode()).hexdigest()[:16]
    key = compile_cache.cache_key(f"{kind}-{digest}", PLUGIN_VERSION, engine.key)
    name = f"hl{key[:16]}_{suffix}"
    cached = compile_cache.lookup(key)
    if cached is None:
        obj = engine.compile_ir(ir_of(name))
        compile_cache.store(key, obj, [name])
    else:
        obj = cached[0]
    return engine.load_object(obj, [name])[name]
