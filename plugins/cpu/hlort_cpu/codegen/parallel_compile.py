"""A module's kernels compiled as several LLVM modules on several threads at once, as XLA:CPU
splits its codegen (``xla_cpu_parallel_codegen_split_count``).

LLVM compiles modules concurrently when each thread has an LLVMContext and a TargetMachine of
its own (LLVM's threading rule); what keeps llvmlite to one thread is the process-wide lock it
takes around every call into libllvmlite. So each part here is parsed into a context of its own
and gets a target machine of its own, made and set up with llvmlite's lock as usual; only its
two long calls, the optimization pipeline and the object emission (nearly all of a part's time),
are made without the lock (unlocked_llvm.py): they touch nothing but that part's module, context
and machine. The pipeline and target are the JIT's (llvm_start.kernel_pipeline), so a part's
object is the one a one-thread compile of the same text gives (test_parallel_compile.py checks
the bytes).
"""

from __future__ import annotations

import os
import threading

from hlort_cpu.codegen import unlocked_llvm
from hlort_cpu.codegen.llvm_start import HostLlvm, kernel_pipeline, machine_for

_RUNNING = threading.RLock()  # held while part threads run, and across a fork (see below)
_SPARE: list = []  # target machines of finished parts, for the next parts (one host per process)
_SPARE_LOCK = threading.Lock()


def compile_parts(host: HostLlvm, texts: list[str], threads: int) -> list[bytes]:
    """The object code of each of ``texts`` (LLVM IR modules), in order, compiled on up to
    ``threads`` threads (the caller's included). The first error stops the parts not started
    yet and is raised once every part thread has finished, an interrupt on the caller too:
    no thread is left inside LLVM."""
    objects: list[bytes | None] = [None] * len(texts)
    errors: list[Exception | None] = [None] * len(texts)
    todo = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # largest first
    claim = threading.Lock()

    def stop() -> None:
        with claim:
            todo.clear()

    def work() -> None:
        while True:
            with claim:
                if not todo:
                    return
                i = todo.pop(0)
            try:
                objects[i] = _compile_alone(host, texts[i])
            except Exception as err:  # noqa: BLE001 - raised below, on the caller
                errors[i] = err
                stop()

    helpers = [
        threading.Thread(target=work, name=f"hlort-llvm-part-{k}", daemon=True)
        for k in range(min(threads, len(texts)) - 1)
    ]
    with _RUNNING:
        try:
            for t in helpers:
                t.start()
            work()
        finally:  # an interrupt here too: start no more parts, wait for those under way
            stop()
            _join(helpers)
    for err in errors:
        if err is not None:
            raise err
    return objects  # type: ignore[return-value]


def _join(threads: list[threading.Thread]) -> None:
    """Join every started thread, even if an interrupt arrives while waiting (then raised)."""
    interrupted: BaseException | None = None
    for t in threads:
        while t.ident is not None and t.is_alive():
            try:
                t.join()
            except BaseException as err:  # noqa: BLE001 - KeyboardInterrupt: re-raised below
                interrupted = interrupted or err
    if interrupted is not None:
        raise interrupted


def _compile_alone(host: HostLlvm, text: str) -> bytes:
    llvm = host.llvm
    context = llvm.create_context()
    machine = _take_machine(host)
    module = llvm.parse_assembly(text, context=context)
    try:
        module.triple = host.triple
        module.data_layout = str(machine.target_data)
        module.verify()
        passes, builder = kernel_pipeline(llvm, machine, host.opt_level)
        unlocked_llvm.run_passes(llvm, passes, module, builder)
        return unlocked_llvm.emit_object(llvm, machine, module)
    finally:
        module.close()  # before its context goes
        _give_back(machine)


def _take_machine(host: HostLlvm):
    """A target machine no other thread uses (one a part used before, or a new one: its
    subtarget is made on first use, ~1.7 ms of a small part's compile, so they are kept)."""
    with _SPARE_LOCK:
        if _SPARE:
            return _SPARE.pop()
    return machine_for(host.llvm, host.triple, host.cpu, host.features, host.opt_level)


def _give_back(machine) -> None:
    with _SPARE_LOCK:
        if len(_SPARE) < 8:
            _SPARE.append(machine)


def _before_fork() -> None:
    _RUNNING.acquire()


def _after_fork_in_parent() -> None:
    _RUNNING.release()


def _after_fork_in_child() -> None:
    """The child has no part threads: fresh locks (the parent's were held across the fork)."""
    global _RUNNING, _SPARE_LOCK
    _RUNNING = threading.RLock()
    _SPARE_LOCK = threading.Lock()


# A fork waits for part threads under way (a child gets only the forking thread: threads inside
# LLVM would leave llvmlite's lock or LLVM's own state held there) and holds the lock until it
# is done, so no compile starts parts between the wait and the fork. Re-entrant: a thread that
# forks inside compile_parts (a signal handler) does not wait for itself.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
