"""The CPU compiler: turn an optimized module into a Program of thunks.

Every fusion the emitter supports, and every standalone elementwise, data-movement or reduce
instruction, becomes one LLVM kernel (a module's kernels are optimized and compiled once, in
up to four LLVM modules on several threads, kernel_parts.py, then cached; equal computations
share one, kernel_sharing.py). Dots and
convolutions run as NumPy matmul on the operands (BLAS), fft on pocketfft (numpy.fft),
cholesky on LAPACK (numpy.linalg), triangular-solve on a compiled substitution kernel, and
custom calls as custom_call.py says (the shipped targets natively, a user's target as its own
Python function). While, conditional and call run programs compiled the same way from the
computations they call (control_flow.py; small all-kernel loops as one native driver,
native_while.py). Collectives are host steps that meet the execution's other devices in shared
memory (collective_thunks.py). Anything else, and any fusion the emitter cannot compile yet,
runs as a FALLBACK thunk on the reference interpreter's function for that op: every program
runs from day one, and ``Program.stats()`` says exactly what was compiled and what fell back.
"""

from __future__ import annotations

import importlib
import time
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from hlort.errors import Unimplemented
from hlort.interpreter.registry import function_for_instruction
from hlort.ir.collective_groups import COLLECTIVE_OPCODES
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.fallback_policy import FallbackReport
from hlort.shape import Token, TokenShape, TupleShape
from hlort_cpu import compile_cache
from hlort_cpu.arena import plan_arena
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.kernel_builder import KernelModule, classify
from hlort_cpu.codegen.unsupported_reason import why_not_compiled
from hlort_cpu.control_flow import CONTROL_FLOW_OPS, ProgramSet, program_orders
from hlort_cpu.device_run import DeviceEvaluator
from hlort_cpu.kernel_parts import (
    CONTROL_FLOW,
    MAX_PARTS,
    compile_threads,
    kernel_cost,
    kernel_parts,
    outlined_call,
)
from hlort_cpu.kernel_sharing import share_kernels
from hlort_cpu.slice_copies import SliceCopyThunk, slice_copies
from hlort_cpu.version import PLUGIN_VERSION
from hlort_cpu.view_thunks import VIEW_OPS, view_thunk

if TYPE_CHECKING:  # the thunks are made after the kernels' LLVM compile, which imports them
    from hlort_cpu.thunks import Program  # meanwhile (jit.AFTER_LLVM)

_STRUCTURAL = {Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT}
# Native thunks whose results are always fresh arrays, never views of an input: their inputs
# may live in the program's arena (arena.py). Not custom-call: an alias hands back its input.
_FRESH_RESULTS = {
    Opcode.DOT,
    Opcode.CONVOLUTION,
    Opcode.FFT,
    Opcode.CHOLESKY,
    Opcode.TRIANGULAR_SOLVE,
}
_NATIVE = {  # op -> thunk factory (None when it cannot take that instruction)
    Opcode.DOT: ("hlort_cpu.dot", "dot_thunk"),
    Opcode.CONVOLUTION: ("hlort_cpu.convolution", "convolution_thunk"),
    Opcode.FFT: ("hlort_cpu.fft", "fft_thunk"),
    Opcode.CHOLESKY: ("hlort_cpu.cholesky", "cholesky_thunk"),
    Opcode.TRIANGULAR_SOLVE: ("hlort_cpu.triangular_solve", "triangular_solve_thunk"),
}  # (module, name): imported on first use, not in every process's first compile


def _native_factory(op: Opcode):
    make = _NATIVE.get(op)
    if isinstance(make, tuple):
        make = getattr(importlib.import_module(make[0]), make[1])
        _NATIVE[op] = make
    return make


def wrap_instruction(instr: Instruction) -> Computation:
    """A computation holding just ``instr`` on fresh parameters (a one-op "fusion")."""
    comp = Computation(f"wrapped_{instr.name}")
    params = []
    for i, operand in enumerate(instr.operands):
        params.append(
            comp.add_instruction(
                Instruction(Opcode.PARAMETER, operand.shape, (), name=f"p{i}", parameter_number=i)
            )
        )
    clone = instr.clone_with(operands=params)
    comp.add_instruction(clone)
    comp.set_root(clone)
    return comp


def _kernel_candidate(instr: Instruction) -> tuple[Computation | None, str | None]:
    """The computation to compile as ``instr``'s kernel, or None and why not (None when
    ``instr`` is no kernel candidate at all: structural, control flow, a native thunk's op)."""
    if instr.opcode in _STRUCTURAL:
        return None, None
    if instr.opcode is Opcode.FUSION:
        comp = instr.attrs["calls"]
    elif instr.opcode is Opcode.CONVOLUTION:  # a direct kernel, else the im2col thunk
        comp = wrap_instruction(instr)
        return (comp, None) if classify(comp) is not None else (None, None)
    elif instr.is_elementwise or instr.opcode in (
        Opcode.BROADCAST,
        Opcode.RESHAPE,
        Opcode.TRANSPOSE,
        Opcode.SLICE,
        Opcode.PAD,
        Opcode.CONCATENATE,
        Opcode.REVERSE,
        Opcode.IOTA,
        Opcode.DYNAMIC_SLICE,
        Opcode.DYNAMIC_UPDATE_SLICE,
        Opcode.REDUCE,
        Opcode.BITCAST_CONVERT,
        Opcode.GATHER,
        Opcode.SCATTER,
        Opcode.REDUCE_WINDOW,
        Opcode.SELECT_AND_SCATTER,
        Opcode.SORT,
        Opcode.TOPK,
        Opcode.RNG_BIT_GENERATOR,
    ):
        if not all(o.shape.is_array for o in instr.operands) or not instr.shape.leaf_shapes():
            return None, "its operands are not all arrays, or it has no array result"
        comp = wrap_instruction(instr)
    else:
        return None, None
    try:
        if classify(comp) is not None:
            return comp, None
    except Unimplemented as err:
        return None, err.message
    return None, why_not_compiled(comp)


def compile_program(module: Module) -> Program:
    start = time.perf_counter()
    # the entry and what its control flow calls, each in its execution order
    orders = program_orders(module.entry, Computation.execution_order)
    copies = slice_copies(orders[module.entry][1])  # NumPy copies, not kernels
    candidates = [
        (instr, *_kernel_candidate(instr))
        for _, order in orders.values()
        for instr in order
        if instr not in copies
    ]
    to_compile = [(instr, comp) for instr, comp, _ in candidates if comp is not None]
    not_kernels = {instr: why for instr, _, why in candidates if why is not None}
    entry = set(orders[module.entry][1])
    to_compile, owners, offsets = share_kernels(to_compile, entry, wrap_instruction)
    report = FallbackReport("cpu", module.name)
    engine = jit_engine()
    key = compile_cache.cache_key(module.fingerprint(), PLUGIN_VERSION, engine.key)
    names = [f"hk{key[:16]}_{k}" for k in owners]  # the kernel each candidate runs
    ir_texts: list[str] = []
    cached = compile_cache.lookup(key, parts=True) if to_compile else None
    cache_hit = cached is not None
    natives: dict = {}
    if to_compile and cached is None:
        cached, natives, ir_texts = _compile_kernels(module, orders, names, to_compile, owners, key)
    elif cached is not None:
        natives = _plan_whiles(orders, names, to_compile, cached[1], f"hk{key[:16]}")
    kernels = {}
    if cached is not None:
        kernels = _loaded_kernels(key, cached)
    by_instr = {instr: kernels[name] for name, (instr, _) in zip(names, to_compile, strict=True)}
    drivers_by_while = {k: (n, kernels[n.plan.name]) for k, n in natives.items()}
    build = partial(_build, not_kernels=not_kernels, report=report, copies=copies, offsets=offsets)
    programs = ProgramSet(orders, by_instr, drivers_by_while, DeviceEvaluator(), build, _label)
    program = programs.program(module.entry)
    report.apply()  # HLORT_FALLBACK: raise, warn once, or allow
    program.fallback_records = list(report.records)
    program.constant_arrays = programs.constant_arrays()
    program.temp_bytes = sum(p.arena.size for p in programs.built() if p.arena is not None)
    program.code_bytes = _code_bytes(cached[0]) if cached is not None else 0
    program.ir_texts = ir_texts
    program.ir_text = "\n".join(ir_texts) if ir_texts else None
    program.cache_hit = cache_hit
    program.compile_seconds = time.perf_counter() - start
    return program


def _compile_kernels(module: Module, orders, names, to_compile, owners, key: str):
    """Emit the kernels (and native while drivers), compile them, in parts on several threads
    where kernel_parts.py splits the module, and store the object code: (the cache entry, the
    native whiles, each part's IR text)."""
    entry = set(orders[module.entry][1])
    # only the entry's kernel thunks promise buffers that never overlap (a native while
    # driver updates its state in place)
    outside = {owners[k] for k, (instr, _) in enumerate(to_compile) if instr not in entry}
    own = [k for k in range(len(to_compile)) if owners[k] == k]  # the others share a kernel
    threads = compile_threads(MAX_PARTS)
    comps = [to_compile[k][1] for k in own]
    together = [
        CONTROL_FLOW if k in outside else outlined_call(c) for k, c in zip(own, comps, strict=True)
    ]
    parts = kernel_parts([kernel_cost(c) for c in comps], together, whole=threads < 2)
    modules = []
    for p, part in enumerate(parts):
        km = KernelModule(f"{module.name}_kernels" + (f"_{p}" if len(parts) > 1 else ""))
        for j in part:
            k = own[j]
            km.add(names[k], to_compile[k][1], noalias=k not in outside)
        modules.append(km)
    infos = [info for km in modules for info in km.kernels]
    natives = _plan_whiles(orders, names, to_compile, infos, f"hk{key[:16]}")
    drivers = []
    if natives:  # into the part of the kernels control flow runs, which the drivers call
        from hlort_cpu.codegen.while_driver import emit_while_driver

        loops = next((p for p, part in enumerate(parts) if any(own[j] in outside for j in part)), 0)
        km = modules[loops]
        drivers = [emit_while_driver(km.module, km.target, n.plan) for n in natives.values()]
    texts = [km.ir_text() for km in modules]
    objects = jit_engine().compile_ir_parts(texts, min(threads, len(texts)))
    obj = objects[0] if len(objects) == 1 else objects
    entry_infos = [*infos, *drivers]
    compile_cache.store(key, obj, entry_infos)
    return (obj, entry_infos), natives, texts


def _code_bytes(obj: bytes | list[bytes]) -> int:
    return sum(map(len, obj)) if isinstance(obj, list) else len(obj)


def _plan_whiles(orders, names, to_compile, infos, prefix) -> dict:
    """native_while.py's plans; that module (BLAS, the small-gemm emitter) is imported only
    for a module that has a while."""
    if not any(i.opcode is Opcode.WHILE for _, order in orders.values() for i in order):
        return {}
    from hlort_cpu.native_while import plan_native_whiles

    return plan_native_whiles(orders, names, to_compile, infos, prefix)


_loaded: dict[str, dict] = {}


def _loaded_kernels(key: str, cached) -> dict:
    """Load object code once per process (symbols are unique per cache key)."""
    kernels = _loaded.get(key)
    if kernels is None:
        obj, infos = cached
        from hlort_cpu.codegen.compiled import load_entry_points

        kernels = load_entry_points(obj, infos)
        _loaded[key] = kernels
    return kernels


def _build(
    comp: Computation,
    order: list[Instruction],
    programs: ProgramSet,
    *,
    not_kernels: dict[Instruction, str],
    report: FallbackReport,
    copies: set[Instruction],
    offsets: dict[Instruction, int],
) -> Program:
    """The program of one computation (the entry or one that control flow calls); every
    instruction it runs on the interpreter goes into ``report`` with the reason."""
    from hlort_cpu.thunks import FallbackThunk, FusionFallbackThunk, KernelThunk, Program

    kernels, evaluator = programs.kernels, programs.evaluator
    compiled, fallback = programs.compiled, programs.fallback
    slot = {instr: k for k, instr in enumerate(order)}
    steps = []
    constants: list[tuple[int, object]] = []
    step_inputs: list[list[int]] = []  # the slots each step reads
    step_kinds: dict[Instruction, str] = {}  # which values may live in the arena (arena.py)

    def add(step) -> None:
        steps.append(step)
        step_inputs.append(ins)

    for instr in order:
        op = instr.opcode
        out = slot[instr]
        ins = [slot[o] for o in instr.operands]
        if op is Opcode.PARAMETER:
            continue
        if op is Opcode.CONSTANT:
            constants.append((out, instr.literal))
            continue
        if op is Opcode.TUPLE:
            add(_tuple_step(out, ins))
            continue
        if op is Opcode.GET_TUPLE_ELEMENT:
            add(_gte_step(out, ins[0], instr.attrs["index"]))
            continue
        if op in CONTROL_FLOW_OPS:
            add(programs.control_flow_thunk(instr, ins, out))
            continue
        if op in COLLECTIVE_OPCODES:
            from hlort_cpu.collective_thunks import CollectiveThunk

            thunk = CollectiveThunk(instr, ins, out, evaluator)
            add(thunk)
            compiled[thunk.label] += 1
            continue
        kernel = kernels.get(instr)
        if kernel is not None:
            fill = all(o.shape.is_array and o.shape.size <= 1 for o in instr.operands)
            is_tuple = isinstance(instr.shape, TupleShape)
            thunk = KernelThunk(kernel, ins, out, is_tuple, fill, offsets.get(instr, 0))
            thunk.fusion = instr.attrs["calls"] if op is Opcode.FUSION else None  # dot_epilogue
            add(thunk)
            compiled[_label(instr)] += 1
            if len(kernel.info.output_shapes) == 1:  # the arena gives one output buffer
                step_kinds[instr] = "kernel"
            continue
        if instr in copies:  # slice_copies.py
            thunk = SliceCopyThunk(instr, ins, out)
            add(thunk)
            compiled[thunk.label] += 1
            step_kinds[instr] = "kernel"  # writes the output it is given, never a view
            continue
        if op in VIEW_OPS:
            thunk = view_thunk(instr, ins, out)
            if thunk is not None:
                add(thunk)
                compiled[thunk.label] += 1
                continue
        make = _native_factory(op)
        if make is not None or op is Opcode.CUSTOM_CALL:
            thunk = (
                make(instr, ins, out)
                if make is not None
                else _custom_call_thunk(instr, ins, out, evaluator)
            )
            if thunk is not None:
                add(thunk)
                compiled[thunk.label] += 1
                if op in _FRESH_RESULTS:
                    step_kinds[instr] = "reader"
                continue
        if op is Opcode.FUSION:
            add(FusionFallbackThunk(evaluator, instr.attrs["calls"], ins, out))
            fallback[_label(instr)] += 1
            report.add(instr.name, _label(instr), not_kernels.get(instr, "no kernel"))
            continue
        fn = function_for_instruction(instr)
        if fn is None:
            raise Unimplemented(
                f"cpu: no kernel and no interpreter function for {op.value} ({instr.name})"
            )
        add(FallbackThunk(evaluator, fn, instr, ins, out))
        fallback[op.value] += 1
        report.add(instr.name, op.value, _why_interpreted(instr, not_kernels.get(instr)))
    params = [(slot[p], p.shape) for p in comp.parameters if p in slot]
    root = slot[comp.root]
    releases = _releases(step_inputs, root)
    return Program(
        steps,
        len(order),
        params,
        root,
        constants,
        compiled,
        fallback,
        evaluator,
        releases=releases,
        arena=plan_arena(comp, order, slot, step_kinds),
    )


def _custom_call_thunk(instr, ins, out, evaluator):
    from hlort_cpu.custom_call import custom_call_thunk  # LAPACK, library kernels: on first use

    return custom_call_thunk(instr, ins, out, evaluator)


def _why_interpreted(instr: Instruction, not_a_kernel: str | None) -> str:
    """Why a non-fusion instruction runs on the interpreter (FallbackThunk)."""
    if not_a_kernel is not None:
        return not_a_kernel
    types = ", ".join(str(o.shape) for o in instr.operands)
    if instr.opcode in _NATIVE or instr.opcode is Opcode.CUSTOM_CALL or instr.opcode in VIEW_OPS:
        return f"the native {instr.opcode.value} thunk does not take ({types}) -> {instr.shape}"
    return f"the cpu plugin has no kernel or native thunk for {instr.opcode.value}"


def _releases(step_inputs: list[list[int]], root: int) -> list[tuple[int, ...]]:
    """For each step, the slots it reads for the last time: the program drops them right
    after, so a dead value's memory goes back to the pool for later steps of the same call
    (the memory high-water mark follows liveness, as the core's buffer assignment plans)."""
    last: dict[int, int] = {}
    for k, ins in enumerate(step_inputs):
        for i in ins:
            last[i] = k
    out: list[list[int]] = [[] for _ in step_inputs]
    for i, k in last.items():
        if i != root:
            out[k].append(i)
    return [tuple(sorted(r)) for r in out]


def _label(instr: Instruction) -> str:
    if instr.opcode is not Opcode.FUSION:
        return instr.opcode.value
    kind = instr.attrs.get("kind")
    return f"fusion({getattr(kind, 'value', kind)})"


def _tuple_step(out: int, ins: list[int]):
    def step(env):
        env[out] = tuple(env[i] for i in ins)

    return _naming(step, ins, out)


def _gte_step(out: int, src: int, index: int):
    def step(env):
        env[out] = env[src][index]

    return _naming(step, [src], out)


def _naming(step, ins: list[int], out: int):
    """A step that only names values: other steps may move past it (step_groups.py)."""
    from hlort_cpu.step_groups import NAMING

    step.group_kind, step.ins, step.out = NAMING, ins, out
    return step


__all__ = ["compile_program", "np", "Token", "TokenShape"]
