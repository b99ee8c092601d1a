"""LLVM for the host, started once per process, on a background thread when asked early.

Loading llvmlite's shared library, initialising the native target, creating the target machine
and MCJIT, and LLVM's one-time set-up on the first optimized and emitted module cost a process
tens of milliseconds before its first kernel compiles (``import llvmlite.binding`` alone is
~27 ms of thread CPU in a fresh process: Python that holds the GIL, but for the ~5 ms dlopen),
so a backend asks for it as soon as its client starts (:func:`start_in_background`): when a
core is idle it then overlaps the Python imports of the compiler, and :func:`host_llvm` waits
only for what is left (never for the warm-up compile, which has its own target machine and
LLVM context). The warm-up's optimization and emission run without llvmlite's process-wide
lock (unlocked_llvm.py: its own context and target machine make that safe), so a first
``compile_ir`` that starts while the warm-up is inside LLVM does not wait for it. A fork
waits for a start under way to finish (warm-up included), and the child forgets the thread: a
child has only the forking thread (``os.register_at_fork`` below).

This module sits outside the ``hlort.codegen.llvm`` package on purpose: importing that package
loads every emitter, which is what the background start runs in parallel with.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import pathlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

_LOCK = threading.Lock()
_THREAD: threading.Thread | None = None
_HOST: HostLlvm | None = None
_ERROR: BaseException | None = None
_CREATED = threading.Event()  # set once the background start made _HOST (or failed)
_FORKED_MID_START = False  # a fork came from the start thread itself (not joined)
WARM_UP_SYMBOL = "hlort_llvm_warm_up"

# A loop like the emitter's kernels (vectorized, with a call of an intrinsic): optimizing and
# emitting it once does LLVM's lazy one-time work outside the first real compile.
_WARM_UP_IR = f"""
declare float @llvm.fma.f32(float, float, float)

define void @{WARM_UP_SYMBOL}(ptr %buffers, i64 %begin, i64 %end) nounwind {{
entry:
  %pa = load ptr, ptr %buffers
  %gb = getelementptr ptr, ptr %buffers, i64 1
  %pb = load ptr, ptr %gb
  %go = getelementptr ptr, ptr %buffers, i64 2
  %po = load ptr, ptr %go
  %nonempty = icmp slt i64 %begin, %end
  br i1 %nonempty, label %loop, label %done
loop:
  %i = phi i64 [%begin, %entry], [%next, %loop]
  %ea = getelementptr inbounds float, ptr %pa, i64 %i
  %a = load float, ptr %ea
  %eb = getelementptr inbounds float, ptr %pb, i64 %i
  %b = load float, ptr %eb
  %m = call float @llvm.fma.f32(float %a, float %b, float 1.0)
  %c = fcmp olt float %m, 0.0
  %r = select i1 %c, float 0.0, float %m
  %eo = getelementptr inbounds float, ptr %po, i64 %i
  store float %r, ptr %eo
  %next = add nsw i64 %i, 1
  %more = icmp slt i64 %next, %end
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


class HostLlvm:
    """The process's LLVM objects for the host CPU (a plain class: making a dataclass compiles
    Python source, which a process's first compile paid)."""

    def __init__(self, llvm, triple, cpu, features, machine, engine, opt_level: int):
        self.llvm: Any = llvm  # llvmlite.binding
        self.triple: str = triple
        self.cpu: str = cpu
        self.features: str = features
        self.machine: Any = machine  # TargetMachine
        self.engine: Any = engine  # MCJIT ExecutionEngine
        self.opt_level = opt_level


def optimize_module(host: HostLlvm, module, alongside: Callable[[], object] | None = None) -> None:
    """O3 with loop and SLP vectorization (the new pass manager's default pipeline), without
    LLVM's loop unroller: the emitters ask for interleaved vector iterations themselves
    (``llvm.loop.interleave.count``), and unrolling the vectorized loops on top of that only
    made code to generate (measured on every ``make bench`` program: optimize + emit 32% less
    CPU time summed, 2783 -> 1882 ms; softmax [256,1024] 68 -> 53 ms; object code up to 5x
    smaller; kernel times unchanged within noise, A/B in one process). Loops that carry
    ``llvm.loop.unroll.*`` metadata are still unrolled as it says. ``alongside`` is called
    just before the pipeline runs (jit.py starts a helper thread there)."""
    passes, builder = kernel_pipeline(host.llvm, host.machine, host.opt_level)
    if alongside is not None:  # right before the long call that releases the GIL
        alongside()
    passes.run(module, builder)


def kernel_pipeline(llvm, machine, opt_level: int):
    """(module pass manager, pass builder) of :func:`optimize_module`'s pipeline for
    ``machine``; run as ``passes.run(module, builder)``."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pto.loop_interleaving = True
    builder = llvm.create_pass_builder(machine, pto)
    return builder.getModulePassManager(), builder


def machine_for(llvm, triple: str, cpu: str, features: str, opt_level: int):
    """A JIT target machine for the host (``opt_level``: LLVM's code generation level)."""
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu,
        features=features,
        opt=opt_level,
        reloc="default",
        codemodel="jitdefault",
        jit=True,
    )


def _import_binding():
    """``llvmlite.binding``, imported without ``importlib.resources`` when llvmlite is a plain
    directory: its ffi.py imports that module only to find the shared library next to itself
    (``as_file(files(package) / name)``), and ``importlib.resources`` pulls in tempfile, shutil,
    random, bz2, lzma and zipfile, none of which a compile uses (~5.5 ms of CPU in a fresh
    process). While llvmlite imports, ``sys.modules`` holds a stand-in whose ``files`` and
    ``as_file`` give that directory's path; any other name (or a package that is not a
    directory) loads and uses the real module. The stand-in leaves ``sys.modules`` afterwards:
    a later ``import importlib.resources`` gets the real one."""
    name = "importlib.resources"
    if name in sys.modules or "llvmlite.binding" in sys.modules:
        import llvmlite.binding as llvm

        return llvm
    shim = _resources_shim(name)
    sys.modules[name] = shim
    try:
        import llvmlite.binding as llvm
    finally:
        if sys.modules.get(name) is shim:
            del sys.modules[name]
    return llvm


def _resources_shim(name: str) -> types.ModuleType:
    def real():
        if sys.modules.get(name) is shim:
            del sys.modules[name]
        return importlib.import_module(name)

    def files(package):
        spec = importlib.util.find_spec(package) if isinstance(package, str) else None
        places = list(spec.submodule_search_locations or ()) if spec is not None else []
        if len(places) == 1 and os.path.isdir(places[0]):
            return pathlib.Path(places[0])
        return real().files(package)

    def as_file(path):
        if isinstance(path, pathlib.Path):
            return contextlib.nullcontext(path)
        return real().as_file(path)

    def __getattr__(attr):  # noqa: N807 - PEP 562 module attribute hook
        return getattr(real(), attr)

    shim = types.ModuleType(name, "hlort_cpu.codegen.llvm_start's importlib.resources stand-in")
    shim.files, shim.as_file, shim.__getattr__ = files, as_file, __getattr__
    # a submodule another thread imports meanwhile (importlib.resources.abc) is the real one
    shim.__path__ = [os.path.join(os.path.dirname(importlib.__file__), "resources")]
    return shim


def _create(opt_level: int) -> HostLlvm:
    llvm = _import_binding()

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    machine = machine_for(llvm, triple, cpu, features, opt_level)
    backing = llvm.parse_assembly("")
    backing.triple = triple
    engine = llvm.create_mcjit_compiler(backing, machine)
    # MCJIT's first finalize generates code for the (empty) backing module: do it here.
    engine.finalize_object()
    return HostLlvm(llvm, triple, cpu, features, machine, engine, opt_level)


def _warm_up(host: HostLlvm) -> None:
    """Optimize and emit a kernel-like loop once, with a target machine and an LLVM context of
    its own, its long calls without llvmlite's lock (unlocked_llvm.py), so it runs beside the
    first real compile without making it wait: LLVM's lazy one-time set-up (pass registries,
    the subtarget's tables) then is done when the first kernel compiles."""
    from hlort_cpu.codegen import unlocked_llvm

    llvm = host.llvm
    machine = machine_for(llvm, host.triple, host.cpu, host.features, host.opt_level)
    module = llvm.parse_assembly(_WARM_UP_IR, context=llvm.create_context())
    module.triple = host.triple
    module.data_layout = str(machine.target_data)
    passes, builder = kernel_pipeline(llvm, machine, host.opt_level)
    unlocked_llvm.run_passes(llvm, passes, module, builder)
    unlocked_llvm.emit_object(llvm, machine, module)
    module.close()


def _background(opt_level: int) -> None:
    global _HOST, _ERROR
    try:
        host = _create(opt_level)
    except BaseException as err:  # noqa: BLE001 - host_llvm retries in the caller and raises
        _ERROR = err
        _CREATED.set()
        return
    _HOST = host
    _CREATED.set()
    try:
        _warm_up(host)
    except Exception:  # noqa: BLE001, S110 - an optimisation only; real compiles report errors
        pass


def spare_core() -> bool:
    """Whether a core is idle (1-minute load average below the core count minus one): only
    then does a background start overlap anything; on a saturated machine it only competes
    with the imports for the CPU and the GIL (measured: slower)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        return (os.cpu_count() or 1) > 1
    return load < (os.cpu_count() or 1) - 1


def _before_fork() -> None:
    """Let a running start (warm-up included) finish before the process forks: a child gets only
    the forking thread, so a start still under way would leave it an event never set and LLVM's
    internal locks possibly held."""
    global _FORKED_MID_START
    thread = _THREAD
    if thread is not None and thread is not threading.current_thread():
        thread.join()
    _FORKED_MID_START = thread is not None and thread.is_alive()


def _after_fork_in_child() -> None:
    """The child has no start thread: forget it, with fresh locks; keep a finished host LLVM,
    drop one whose start had not finished (it is made again on first use)."""
    global _THREAD, _LOCK, _CREATED, _HOST
    if _FORKED_MID_START:
        _HOST = None
    _THREAD = None
    _LOCK = threading.Lock()
    _CREATED = threading.Event()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def start_in_background(opt_level: int = 3, *, force: bool = False) -> bool:
    """Begin creating the host LLVM on a daemon thread when a core is spare (or ``force``),
    unless it exists or is under way; returns whether a background start is running."""
    global _THREAD
    with _LOCK:
        if _THREAD is None and _HOST is None and (force or spare_core()):
            _THREAD = threading.Thread(
                target=_background, args=(opt_level,), name="hlort-llvm-start", daemon=True
            )
            _THREAD.start()
        return _THREAD is not None


def host_llvm(opt_level: int = 3) -> HostLlvm:
    """The process's host LLVM: the background start's (waited for, not its warm-up), else
    made now."""
    global _HOST, _ERROR
    if _THREAD is not None:
        _CREATED.wait()
    with _LOCK:
        if _ERROR is not None:  # the background start failed: try again here, raising here
            _ERROR = None
            _HOST = None
        if _HOST is None:
            _HOST = _create(opt_level)
        return _HOST
