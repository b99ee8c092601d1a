"""The JIT: host target machine, LLVM's new pass manager at O3 (no unroller), MCJIT, object code.

One :class:`JitEngine` per process owns an MCJIT execution engine for the host (its triple, CPU
name and every feature the CPU reports, AVX-512 included). ``compile_ir`` optimizes a module of
kernels, emits host object code and loads it; ``load_object`` loads object code a cache stored
earlier, skipping LLVM entirely. Symbols must be unique per process, so callers prefix kernel
names with a content hash. llvmlite is imported here, lazily, never by ``import hlort``; the
target machine and MCJIT come from ``hlort_cpu.codegen.llvm_start`` (made once per process, often on
a background thread while the plugin imports its compiler).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading

from hlort_cpu.codegen.llvm_start import host_llvm, machine_for, optimize_module
from hlort_cpu.codegen.object_symbols import object_symbols

_LOCK = threading.Lock()
_DEFINE = re.compile(r"^(define [^\n{]*)$", re.MULTILINE)
_ENGINE: JitEngine | None = None

# What a process's first compile imports after its kernels' LLVM compile: the object loader,
# the executable's cost estimate, the thunks (and step groups) the program is made of, and
# (with a cache to store into) the HLO printer and json, which the executable cache's entry is
# written with.
# LLVM optimizes and emits with the GIL released, so a helper thread imports them meanwhile
# instead of the compile afterwards (~3 ms of a fresh process's softmax compile;
# plugins/cpu/tests/test_first_compile_imports.py checks that each is still imported after
# LLVM).
AFTER_LLVM = ("hlort_cpu.codegen.compiled", "hlort.plugin.base.cost_estimate", "hlort_cpu.thunks")
AFTER_LLVM_WITH_CACHE = ("hlort.text.printer", "json")
_PREFETCH: threading.Thread | None = None
_prefetch_started = False
_PREFETCH_LOCK = threading.Lock()


class HostTarget:
    """The host CPU code is built for (a plain class, not a dataclass: see ObjectSymbols)."""

    __slots__ = ("triple", "cpu", "features")

    def __init__(self, triple: str, cpu: str, features: str):
        self.triple = triple
        self.cpu = cpu
        self.features = features

    def __repr__(self) -> str:
        return f"HostTarget({self.triple!r}, {self.cpu!r}, {self.features!r})"

    @property
    def key(self) -> str:
        """What a cache entry depends on: the same object code runs only on the same target."""
        import llvmlite

        return f"{self.triple}|{self.cpu}|{self.features}|llvmlite-{llvmlite.__version__}"

    @property
    def vector_bits(self) -> int:
        if "+avx512f" in self.features:
            return 512
        if "+avx2" in self.features or "+avx" in self.features:
            return 256
        return 128


class JitEngine:
    """Optimizes and loads LLVM modules into this process; thread-safe."""

    def __init__(self, opt_level: int = 3):
        host = host_llvm(opt_level)  # llvm_start.py: often already made in the background
        self.host = host
        self.llvm = host.llvm
        self.target = HostTarget(host.triple, host.cpu, host.features)
        self.machine = host.machine
        self.engine = host.engine
        self.opt_level = host.opt_level  # the shared host's: made at the first request's level
        self._lock = threading.Lock()
        self._compile_lock = threading.RLock()  # the runtime library compiles under _lock
        self._objects: list = []  # keep object files alive while their code may run
        self._defined: set[str] = set()  # global symbols of the objects loaded so far
        self._library_loaded = False
        self._quick_machine = None  # codegen at -O0 (compile_ir_quickly), made on first use

    @property
    def key(self) -> str:
        """What an object this engine emits depends on: the host target and the opt level."""
        return f"{self.target.key}|O{self.opt_level}"

    def optimize(self, module) -> None:
        """The host pipeline (llvm_start.optimize_module: O3, vectorizers, no unroller)."""
        optimize_module(self.host, module)

    def with_vector_width(self, ir_text: str) -> str:
        """Ask the vectorizers for the host's full vector width on every function.

        LLVM prefers 256-bit vectors on AVX-512 CPUs by default (older chips lowered their clock
        for 512-bit code); our kernels are long, dense loops where zmm registers win (measured:
        softmax, GELU and elementwise chains 1.3-1.5x faster on this host).
        """
        bits = self.target.vector_bits
        if bits < 512:
            return ir_text
        return _DEFINE.sub(rf'\1 "prefer-vector-width"="{bits}"', ir_text)

    def compile_ir(self, ir_text: str) -> bytes:
        """Parse, verify, optimize and emit object code for ``ir_text``; returns the object.

        One compile at a time: modules live in LLVM's global context and share one target
        machine, neither of which LLVM lets two threads use at once."""
        llvm = self.llvm
        with self._compile_lock:
            module = llvm.parse_assembly(self.with_vector_width(ir_text))
            module.triple = self.target.triple
            module.data_layout = str(self.machine.target_data)
            module.verify()
            optimize_module(self.host, module, alongside=_prefetch_once)
            return self.machine.emit_object(module)

    def compile_ir_parts(self, texts: list[str], threads: int) -> list[bytes]:
        """The object code of each module of ``texts``, compiled on up to ``threads`` threads
        at once (parallel_compile.py; one text compiles as :meth:`compile_ir` does)."""
        if len(texts) == 1:
            return [self.compile_ir(texts[0])]
        from hlort_cpu.codegen.parallel_compile import compile_parts

        _prefetch_once()
        return compile_parts(self.host, [self.with_vector_width(t) for t in texts], threads)

    def compile_ir_quickly(self, ir_text: str) -> bytes:
        """Object code for runtime code that is no numeric loop (the native pool's worker and
        dispatcher: atomics, futex calls, spin loops): SROA, instcombine and CFG clean-up, then
        LLVM's fast instruction selector. No vectorizer has work there, and O3 made the pool's
        350 lines a process's slowest compile, paid by its first execute (42 ms: optimize 28,
        emit 14; this way 7 ms on the same host)."""
        llvm = self.llvm
        with self._compile_lock:
            if self._quick_machine is None:
                host = self.host
                self._quick_machine = machine_for(llvm, host.triple, host.cpu, host.features, 0)
            machine = self._quick_machine
            module = llvm.parse_assembly(ir_text)
            module.triple = self.target.triple
            module.data_layout = str(machine.target_data)
            module.verify()
            builder = llvm.create_pass_builder(
                machine, llvm.create_pipeline_tuning_options(speed_level=1)
            )
            passes = llvm.create_new_module_pass_manager()
            passes.add_sroa_pass()
            passes.add_instruction_combine_pass()
            passes.add_simplify_cfg_pass()
            passes.run(module, builder)
            return machine.emit_object(module)

    def optimized_ir(self, ir_text: str) -> str:
        """The optimized IR text (for artifacts and tests that check vectorization)."""
        with self._compile_lock:
            module = self.llvm.parse_assembly(self.with_vector_width(ir_text))
            module.triple = self.target.triple
            module.data_layout = str(self.machine.target_data)
            self.optimize(module)
            return str(module)

    def load_object(self, obj: bytes | list[bytes], symbols: list[str]) -> dict[str, int]:
        """Load object code (one object, or a module's parts together) and return the address
        of each symbol.

        Every symbol the object needs is resolved before MCJIT sees it (MCJIT aborts the process
        on an unresolved one): from objects loaded earlier, from the process (libm, libc), or
        from the runtime library of compiler-rt helpers (compiled on first need). A symbol none
        of them has raises INTERNAL naming it, and the object is not loaded. An object whose
        symbol table is not read (not ELF64 little-endian) is not checked: the runtime library
        is then loaded before it, so at least its helpers resolve.
        """
        llvm = self.llvm
        objects = obj if isinstance(obj, list) else [obj]
        with self._lock:
            tables = [object_symbols(o) for o in objects]
            if all(t is not None for t in tables):  # the parts of a module may call each other
                own = frozenset().union(*(t.defined for t in tables))
                self._resolve(frozenset().union(*(t.undefined for t in tables)) - own)
            elif not self._library_loaded:
                self._load_runtime_library()
            for o in objects:  # only once every part's symbols resolve: all or none is loaded
                ref = llvm.ObjectFileRef.from_data(o)
                self.engine.add_object_file(ref)
                self._objects.append(ref)
            self.engine.finalize_object()
            for table in tables:
                if table is not None:
                    self._defined |= table.defined
            out = {}
            for name in symbols:
                addr = self.engine.get_function_address(name)
                if not addr:
                    from hlort.errors import Internal

                    raise Internal(f"JIT: symbol {name} not found after loading object code")
                out[name] = addr
            return out

    def _resolve(self, needed: frozenset[str]) -> None:
        """Make every name in ``needed`` resolvable, or raise INTERNAL naming the missing ones."""
        llvm = self.llvm
        missing = sorted(
            n for n in needed if n not in self._defined and not llvm.address_of_symbol(n)
        )
        if not missing:
            return
        from hlort_cpu.codegen.runtime_library import helper_names  # only when needed

        if not self._library_loaded and any(n in helper_names() for n in missing):
            self._load_runtime_library()
            missing = [n for n in missing if n not in self._defined]
        if missing:
            from hlort.errors import Internal

            raise Internal(
                f"JIT: the compiled code calls {', '.join(missing)}, which neither this "
                "process nor hlort's runtime library defines; the object was not loaded (report "
                "it with the module: the code generator needs to avoid or provide that call)"
            )

    def _load_runtime_library(self) -> None:
        """Compile and load compiler-rt's helpers (runtime_library.py); caller holds the lock."""
        from hlort_cpu.codegen.runtime_library import helper_names, library_ir

        obj = self.compile_ir(library_ir())
        table = object_symbols(obj)
        self.engine.add_object_file(self.llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()
        self._library_loaded = True
        if table is not None:
            self._defined |= table.defined
        else:  # not ELF: trust the library's own list
            self._defined |= helper_names()


def _prefetch_once() -> None:
    """Start importing :data:`AFTER_LLVM` on a helper thread, once per process (only what is
    not imported yet; nothing when all is)."""
    global _prefetch_started
    with _PREFETCH_LOCK:  # two first compiles at once (parallel parts need no compile lock)
        if _prefetch_started:
            return
        _prefetch_started = True
    _start_prefetch()


def _start_prefetch() -> None:
    global _PREFETCH
    from hlort.plugin.base.cache_dir import cache_enabled

    names = AFTER_LLVM + (AFTER_LLVM_WITH_CACHE if cache_enabled() else ())
    names = tuple(n for n in names if n not in sys.modules)
    if names:
        _PREFETCH = threading.Thread(
            target=_import_all, args=(names,), name="hlort-prefetch", daemon=True
        )
        _PREFETCH.start()


def _import_all(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - the compile imports it itself and reports
            continue


def _join_prefetch_before_fork() -> None:
    """A child gets only the forking thread: an import under way on the helper would leave its
    module lock held for ever there, so a fork waits for the helper (a few ms at most)."""
    thread = _PREFETCH
    if thread is not None and thread is not threading.current_thread():
        thread.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_join_prefetch_before_fork)


def jit_engine() -> JitEngine:
    """The process-wide engine (created on first use)."""
    global _ENGINE
    if _ENGINE is None:
        with _LOCK:
            if _ENGINE is None:
                _ENGINE = JitEngine()
    return _ENGINE
