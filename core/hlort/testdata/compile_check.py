"""The offline GPU compile check over corpora: every module compiled and validated per target.

The target-neutral half of the GPU plugins' "compiles without a GPU" checks (the CUDA tool
``plugins/cuda/tools/ptx_corpus_check.py``, the ROCm tool ``plugins/rocm/tools/
code_object_check.py``): it walks the StableHLO corpus cases the reference interpreter runs
and/or the conformance suite's op cases, prepares each module as a GPU plugin would see it
(calls inlined, the corpus's array constants made parameters: the corpus feeds the op under
test constants, which the pipeline would fold into no kernel at all; then the default pipeline
with ``gpu_pass_options``' policy), and hands it to a :class:`TargetChecker`, the plugin's
part: compile one prepared module for one target, and validate a batch of compiled programs
(ptxas; the linker, readelf and objdump). Here: chunks in parallel processes, progress lines,
the per-case records and the counted summary.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Protocol

from hlort.codegen.gpu.program import GpuProgram
from hlort.ir.module import Module

CHUNK = 16  # cases per validation batch


@dataclass
class Validation:
    """A checker's verdict on one program: ``notes`` are counted findings that do not fail it
    (a kernel's spills or stack use)."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class TargetChecker(Protocol):
    """What a GPU plugin's tool supplies (picklable: it travels to the worker processes)."""

    targets: tuple[str, ...]

    def compile(self, module: Module, target: str, index: int) -> GpuProgram:
        """Compile the prepared (optimized) ``module`` for ``target``; ``index`` is unique per
        module of a run (e.g. for kernel names that must not collide in one batch)."""

    def validate(self, programs: list[tuple[str, str, GpuProgram]]) -> list[Validation]:
        """Validate every ``(label, target, program)`` (each has kernels), in order."""


@dataclass
class CaseResult:
    case: str
    interpreter: str  # "pass", or why the case is not counted
    kernels: dict[str, int] = field(default_factory=dict)  # target -> kernels
    compiled: list[str] = field(default_factory=list)  # targets it compiled for
    validated: list[str] = field(default_factory=list)  # targets whose program passed
    host_ops: list[str] = field(default_factory=list)  # host fallbacks' opcodes (first target)
    fallback_reasons: dict[str, str] = field(default_factory=dict)  # opcode -> a reason
    schedules: list[str] = field(default_factory=list)  # kernel schedules (first target)
    notes: list[str] = field(default_factory=list)  # "target: note" (spills, stack use)
    crashes: list[str] = field(default_factory=list)  # "target: compile error"
    problems: list[str] = field(default_factory=list)  # "target: why validation failed"


def constants_as_parameters(module: Module) -> Module:
    """``module`` with calls inlined and each array constant of its entry (the corpus's inputs)
    turned into a new parameter, as a program on run-time data would have it."""
    from hlort.ir.instruction import Instruction
    from hlort.ir.opcodes import Opcode
    from hlort.passes.call_inlining import CallInliner

    CallInliner().run(module)  # JAX's modules keep their inputs in called functions
    entry = module.entry
    number = len(entry.parameters)
    for instr in list(entry.instructions):
        shape = instr.shape
        if instr.opcode is Opcode.CONSTANT and shape.is_array and shape.rank > 0:
            param = Instruction(
                Opcode.PARAMETER, shape, name=f"input{number}", parameter_number=number
            )
            entry.add_instruction(param)
            entry.replace_all_uses(instr, param)
            entry.remove_instruction(instr)
            number += 1
    module.attributes.pop("entry_computation_layout", None)
    return module


def optimize(module: Module) -> Module:
    """``module`` (in place) through verification and the pipeline a GPU plugin asks for."""
    from hlort.codegen.gpu.compiler import gpu_pass_options
    from hlort.ir.verifier import verify_module
    from hlort.passes.default_pipeline import run_default_pipeline

    verify_module(module)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    return module


@cache
def _op_cases(quick: bool) -> list:
    from hlort.testing.op_case import all_cases

    return all_cases(quick=quick)


def prepare(item, interpret: bool = True, lift: bool = True) -> tuple[str, str, Module | None]:
    """A work item -> (label, "pass" or why it is not counted, its optimized module or None).
    Corpus cases count when the interpreter runs them and passes their checks (``interpret``)
    or, without, when they import; op cases (``("op", quick, index)``) always count."""
    from hlort.importers.stablehlo import import_stablehlo
    from hlort.testdata.execution import PASS, run_case

    if isinstance(item, tuple):  # op cases hold closures, never pickled: sent by index
        case = _op_cases(item[1])[item[2]]
        return f"op:{case.id}", PASS, optimize(case.module.clone())
    if item.skipped:
        return item.id, "skipped", None
    if interpret:
        status = run_case(item, "interpreter").status
        if status != PASS:
            return item.id, status, None
    try:
        module = import_stablehlo(item.text, item.relpath, collect_checks=True).module
    except Exception as err:  # noqa: BLE001 - not a module that imports: not counted
        return item.id, f"import: {type(err).__name__}", None
    return item.id, PASS, optimize(constants_as_parameters(module) if lift else module)


def _crash(err: Exception) -> str:
    from hlort.errors import HlortError

    if isinstance(err, HlortError):
        return f"{err.code.name}: {err.message}"[:300]
    return f"{type(err).__name__}: {err}"[:300]


def check_one(
    item,
    index: int,
    checker: TargetChecker,
    pending: list,
    interpret: bool = True,
    lift: bool = True,
) -> CaseResult:
    """Prepare one work item and compile it for every target; programs with kernels are
    queued in ``pending`` for validation."""
    try:
        label, status, module = prepare(item, interpret, lift)
    except Exception as err:  # noqa: BLE001 - a pipeline crash is a finding, reported per case
        label = f"op:{_op_cases(item[1])[item[2]].id}" if isinstance(item, tuple) else item.id
        result = CaseResult(label, "pass")
        result.crashes += [f"{t}: {_crash(err)}" for t in checker.targets]
        return result
    result = CaseResult(label, status)
    if module is None:
        return result
    for target in checker.targets:
        try:
            program = checker.compile(module.clone(), target, index)
            program.check()
        except Exception as err:  # noqa: BLE001 - a compiler crash is reported, never raised
            result.crashes.append(f"{target}: {_crash(err)}")
            continue
        result.compiled.append(target)
        result.kernels[target] = len(program.kernels)
        if len(result.compiled) == 1:  # fallbacks and schedules are the same for every target
            result.host_ops = sorted(f.opcode for f in program.fallbacks)
            for f in program.fallbacks:
                result.fallback_reasons.setdefault(f.opcode, f.reason)
            result.schedules = [k.schedule for k in program.kernels]
        if program.kernels:
            pending.append((result, target, program))
    return result


def check_chunk(
    items: list, start: int, checker: TargetChecker, interpret: bool = True, lift: bool = True
) -> list[CaseResult]:
    """Compile a few work items, then validate all their programs in one batch."""
    pending: list = []
    results = [
        check_one(item, start + k, checker, pending, interpret, lift)
        for k, item in enumerate(items)
    ]
    if pending:
        verdicts = checker.validate([(r.case, t, p) for r, t, p in pending])
        for (result, target, _), verdict in zip(pending, verdicts, strict=True):
            if verdict.ok:
                result.validated.append(target)
            result.problems += [f"{target}: {p}" for p in verdict.problems]
            result.notes += [f"{target}: {n}" for n in verdict.notes]
    return results


def _check_chunk(args) -> list[CaseResult]:
    return check_chunk(*args)


def work_items(paths: list[str], conformance: str | None = None) -> list:
    """The corpus cases under ``paths`` and, with ``conformance`` "quick" or
    "all", the conformance suite's op cases (as ``("op", quick, index)``)."""
    from hlort.testdata.cases import load_cases

    items: list = load_cases(paths) if paths else []
    if conformance:
        quick = conformance == "quick"
        items += [("op", quick, k) for k in range(len(_op_cases(quick)))]
    return items


def run(
    items: list,
    checker: TargetChecker,
    jobs: int = 1,
    progress=None,
    interpret: bool = True,
    lift: bool = True,
    name: str = "compile_check",
) -> list[CaseResult]:
    """Check every work item (``work_items``) with ``checker``, ``jobs`` processes at a time;
    ``progress`` (a text file) gets each case's result as a JSON line as soon as its chunk is
    done, and stderr a count."""
    work = [
        (items[k : k + CHUNK], k, checker, interpret, lift) for k in range(0, len(items), CHUNK)
    ]
    results: list[CaseResult] = []

    def collect(chunk: list[CaseResult]) -> None:
        results.extend(chunk)
        if progress is not None:
            for r in chunk:
                progress.write(json.dumps(asdict(r)) + "\n")
            progress.flush()
            print(f"{name}: {len(results)}/{len(items)} cases", file=sys.stderr, flush=True)

    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for chunk in pool.map(_check_chunk, work):
                collect(chunk)
    else:
        for w in work:
            collect(_check_chunk(w))
    return results


def summarize(results: list[CaseResult], targets: tuple[str, ...]) -> dict:
    """The counts over the cases that count (the interpreter ran them, or op cases)."""
    counted = [r for r in results if r.interpreter == "pass"]
    instructions = Counter(op for r in counted for op in r.host_ops)
    reasons: dict[str, str] = {}
    for r in counted:
        for op, reason in r.fallback_reasons.items():
            reasons.setdefault(op, reason)
    return {
        "cases": len(results),
        "modules": len(counted),
        "not_run_by_interpreter": len(results) - len(counted),
        "targets": list(targets),
        "compiled": {t: sum(1 for r in counted if t in r.compiled) for t in targets},
        "kernels": {t: sum(r.kernels.get(t, 0) for r in counted) for t in targets},
        "modules_with_kernels": {t: sum(1 for r in counted if r.kernels.get(t)) for t in targets},
        "validated": {t: sum(1 for r in counted if t in r.validated) for t in targets},
        "schedules": dict(sorted(Counter(s for r in counted for s in r.schedules).items())),
        "modules_all_native": sum(
            1 for r in counted if not r.host_ops and not r.problems and not r.crashes
        ),
        "ops_not_compiled_natively": dict(
            sorted(Counter(op for r in counted for op in set(r.host_ops)).items())
        ),
        "host_fallback_instructions": dict(instructions.most_common()),
        "modules_with_host_fallbacks": sum(1 for r in counted if r.host_ops),
        "fallback_reasons": {op: reasons[op] for op in instructions},
        "notes": [f"{r.case}: {n}" for r in counted for n in r.notes],
        "crashes": [f"{r.case}: {c}" for r in counted for c in r.crashes],
        "problems": [f"{r.case}: {p}" for r in counted for p in r.problems],
    }


def read_progress(path: str) -> list[CaseResult]:
    """The case results a ``progress`` file holds (to summarize a run that stopped)."""
    with open(path) as f:
        return [CaseResult(**json.loads(line)) for line in f if line.strip()]


def write_report(path: str, summary: dict, results: list[CaseResult]) -> None:
    with open(path, "w") as f:
        json.dump({"summary": summary, "cases": [asdict(r) for r in results]}, f, indent=1)
