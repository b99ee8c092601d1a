"""The code-object check over StableHLO corpora: ``python -m hlort_rocm.corpus_check PATH...``.

For every corpus case the reference interpreter runs (it imports, runs and passes its checks),
the module is compiled for each gfx target with a compile-only client (no GPU; its array
constants made parameters first: the corpus feeds the op under test constants, which the
pipeline would fold into no kernel at all), its kernels' code object is linked, and the code
object is validated with llvm-readelf-19 --notes (target, each kernel's ``.kd`` descriptor,
argument layout, no private segment) and disassembled with llvm-objdump-19. The summary
counts modules, kernels, linked and validated code objects, and lists every op left to the
host (a counted fallback) with how many modules have it.

No AMD GPU is needed or used: this is the "compiles, links and validates" half of the plugin's
verification, the half that can run anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cache

DEFAULT_TARGETS = ("gfx90a", "gfx942")
CHUNK = 16  # cases per validation batch


@dataclass
class CaseResult:
    case: str
    interpreter: str  # "pass", or why the case is not counted
    kernels: dict[str, int] = field(default_factory=dict)  # target -> kernels
    linked: list[str] = field(default_factory=list)  # targets whose code object linked
    validated: list[str] = field(default_factory=list)
    host_ops: list[str] = field(default_factory=list)  # opcodes of host fallbacks
    stack: list[str] = field(default_factory=list)  # "target kernel: N bytes (spills)"
    problems: list[str] = field(default_factory=list)


Pending = list  # (CaseResult, target, GpuProgram): code objects linked, not yet validated


def check_case(case, targets: tuple[str, ...], code_object_version: int,
               pending: Pending) -> CaseResult:  # fmt: skip
    """Compile and link one corpus case for each target (if the interpreter runs it)."""
    from hlort.importers.stablehlo import import_stablehlo
    from hlort.testdata.execution import PASS, run_case

    outcome = run_case(case, "interpreter")
    result = CaseResult(case.id, "pass" if outcome.status == PASS else outcome.status)
    if outcome.status == PASS:
        compile_module(result, lambda: constants_as_parameters(
            import_stablehlo(case.text, case.relpath, collect_checks=True).module),
            targets, code_object_version, pending)  # fmt: skip
    return result


def check_op_case(case, targets: tuple[str, ...], code_object_version: int,
                  pending: Pending) -> CaseResult:  # fmt: skip
    """The same for one conformance-suite op case (its module takes its inputs as parameters)."""
    result = CaseResult(f"op:{case.id}", "pass")
    compile_module(result, case.module.clone, targets, code_object_version, pending)
    return result


def compile_module(result: CaseResult, make_module, targets: tuple[str, ...],
                   code_object_version: int, pending: Pending) -> None:  # fmt: skip
    """Compile a fresh ``make_module()`` per target (which links its code object); record into
    ``result`` and queue each code object for validation."""
    from hlort.errors import HlortError
    from hlort.plugin.options import CompileOptions
    from hlort.runtime.client import Backend
    from hlort_rocm.plugin import RocmPlugin

    plugin = RocmPlugin()
    options = CompileOptions(target_options={"code_object_version": code_object_version})
    for target in targets:
        try:
            exe = Backend(plugin.create_compile_only_client(target), plugin).compile(
                make_module(), None, options)  # fmt: skip
            program = exe.raw.program
        except HlortError as err:
            result.problems.append(f"{target}: compile: {err}")
            continue
        except Exception as err:  # noqa: BLE001 - a crash is a finding, reported per case
            result.problems.append(f"{target}: compile crashed: {type(err).__name__}: {err}")
            continue
        if target == targets[0]:
            result.host_ops = sorted(f.opcode for f in program.fallbacks)
        result.kernels[target] = len(program.kernels)
        if program.kernels:
            result.linked.append(target)
            pending.append((result, target, program))


def validate_pending(pending: Pending, code_object_version: int) -> None:
    """Validate every queued code object in one batch (one readelf, one objdump per target)."""
    from hlort.errors import HlortError
    from hlort_rocm.code_object_check import validate_code_objects
    from hlort_rocm.compiler import code_object_to_check

    # stack use is counted, not refused: spills are legal in big kernels (the seed kernels'
    # tests require none)
    items = [code_object_to_check(p, code_object_version, no_stack=False) for _, _, p in pending]
    try:
        reports = validate_code_objects(items)
    except HlortError:  # one bad file fails a batch: find it one by one
        reports = []
        for item in items:
            try:
                reports.append(validate_code_objects([item])[0])
            except HlortError as err:
                reports.append(err)
    for (result, target, _), report in zip(pending, reports, strict=True):
        if isinstance(report, HlortError):
            result.problems.append(f"{target}: validate: {report}")
        elif report.ok:
            result.validated.append(target)
        else:
            result.problems.append(f"{target}: {'; '.join(report.problems)}")
        if not isinstance(report, HlortError):
            result.stack += [f"{target} {n.name}: {n.private_segment_size} bytes ("
                             f"{n.vgpr_spills} vgpr, {n.sgpr_spills} sgpr spills)"
                             for n in report.kernels.values()
                             if n.private_segment_size or n.uses_dynamic_stack]  # fmt: skip


def constants_as_parameters(module):
    """``module`` with calls inlined and each array constant of its entry (the corpus's inputs)
    turned into a new parameter, as a program on run-time data would have it."""
    from hlort.ir.instruction import Instruction
    from hlort.ir.opcodes import Opcode
    from hlort.passes.call_inlining import CallInliner

    CallInliner().run(module)
    entry = module.entry
    number = len(entry.parameters)
    for instr in list(entry.instructions):
        shape = instr.shape
        if instr.opcode is Opcode.CONSTANT and shape.is_array and shape.rank > 0:
            param = Instruction(Opcode.PARAMETER, shape, name=f"input{number}",
                                parameter_number=number)  # fmt: skip
            entry.add_instruction(param)
            entry.replace_all_uses(instr, param)
            entry.remove_instruction(instr)
            number += 1
    module.attributes.pop("entry_computation_layout", None)
    return module


@cache
def _op_cases(quick: bool) -> list:
    from hlort.testing.op_case import all_cases

    return all_cases(quick=quick)


def check_chunk(cases: list, targets: tuple[str, ...], version: int) -> list[CaseResult]:
    """Compile and link a few cases, then validate all their code objects at once."""
    pending: Pending = []
    results = []
    for case in cases:
        if isinstance(case, tuple):  # ("op", quick, index): op cases hold closures, never pickled
            results.append(check_op_case(_op_cases(case[1])[case[2]], targets, version, pending))
        else:
            results.append(check_case(case, targets, version, pending))
    validate_pending(pending, version)
    return results


def _check_chunk(args) -> list[CaseResult]:
    return check_chunk(*args)


def summarize(results: list[CaseResult], targets: tuple[str, ...]) -> dict:
    counted = [r for r in results if r.interpreter == "pass"]
    host_ops = Counter(op for r in counted for op in set(r.host_ops))
    return {
        "cases": len(results),
        "modules": len(counted),
        "not_run_by_interpreter": len(results) - len(counted),
        "targets": list(targets),
        "kernels": {t: sum(r.kernels.get(t, 0) for r in counted) for t in targets},
        "modules_with_kernels": {t: sum(1 for r in counted if r.kernels.get(t)) for t in targets},
        "linked": {t: sum(1 for r in counted if t in r.linked) for t in targets},
        "validated": {t: sum(1 for r in counted if t in r.validated) for t in targets},
        "modules_all_native": sum(1 for r in counted if not r.host_ops and not r.problems),
        "ops_not_compiled_natively": dict(sorted(host_ops.items())),
        "kernels_using_stack": {t: sum(1 for r in counted for k in r.stack
                                       if k.startswith(f"{t} ")) for t in targets},
        "stack_users": [f"{r.case}: {k}" for r in counted for k in r.stack],
        "problems": [f"{r.case}: {p}" for r in counted for p in r.problems],
    }


def run(
    paths: list[str],
    targets: tuple[str, ...] = DEFAULT_TARGETS,
    jobs: int = 1,
    code_object_version: int = 5,
    limit: int | None = None,
    conformance: str | None = None,
    progress=None,
) -> tuple[dict, list[CaseResult]]:
    """``conformance`` "quick" or "all" adds the conformance suite's op cases; ``progress`` (a
    text file) gets each case's result as a JSON line as soon as its chunk is done."""
    from hlort.testdata.cases import load_cases

    os.environ["HLORT_FALLBACK"] = "allow"  # counted here, not refused: the point is the count
    cases: list = load_cases(paths) if paths else []
    if conformance:
        quick = conformance == "quick"
        cases += [("op", quick, k) for k in range(len(_op_cases(quick)))]
    cases = cases[:limit]
    work = [(cases[k:k + CHUNK], targets, code_object_version)
            for k in range(0, len(cases), CHUNK)]  # fmt: skip
    results: list[CaseResult] = []

    def collect(chunk: list[CaseResult]) -> None:
        results.extend(chunk)
        if progress is not None:
            for r in chunk:
                progress.write(json.dumps(asdict(r)) + "\n")
            progress.flush()
            print(f"corpus_check: {len(results)}/{len(cases)} cases", file=sys.stderr, flush=True)

    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for chunk in pool.map(_check_chunk, work):
                collect(chunk)
    else:
        for w in work:
            collect(_check_chunk(w))
    return summarize(results, targets), results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hlort_rocm.corpus_check",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument("--conformance", choices=["quick", "all"],
                        help="also the conformance suite's op cases (a sample, or all)")
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--code-object-version", type=int, default=5)
    parser.add_argument("--limit", type=int, help="only the first N cases")
    parser.add_argument("--report", metavar="FILE.json", help="write every case's result")
    parser.add_argument("--progress", metavar="FILE.jsonl",
                        help="append each case's result as it is done (and count on stderr)")
    parser.add_argument("--summarize", metavar="FILE.jsonl",
                        help="print the summary of a --progress file and stop")
    args = parser.parse_args(argv)
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
    if args.summarize:
        with open(args.summarize) as f:
            done = [CaseResult(**json.loads(line)) for line in f if line.strip()]
        print(json.dumps(summarize(done, targets), indent=1))
        return 0
    progress = open(args.progress, "a") if args.progress else None  # noqa: SIM115
    try:
        summary, results = run(args.paths, targets, args.jobs, args.code_object_version,
                               args.limit, args.conformance, progress)  # fmt: skip
    finally:
        if progress is not None:
            progress.close()
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"summary": summary, "cases": [asdict(r) for r in results]}, f, indent=1)
    problems = summary.pop("problems")
    print(json.dumps(summary, indent=1))
    for line in problems[:50]:
        print(f"problem: {line}")
    if len(problems) > 50:
        print(f"... {len(problems) - 50} more problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
