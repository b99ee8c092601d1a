"""The code-object check over StableHLO corpora: ``python plugins/rocm/tools/code_object_check.py
PATH...``.

For every corpus case the reference interpreter runs (it imports, runs and passes its checks)
and/or the conformance suite's op cases, the module is prepared by the core's shared GPU
compile check (``hlort.testdata.compile_check``: array constants made parameters, then the GPU
pipeline) and, here, compiled for each gfx target as the compile-only client does (no GPU),
its kernels' code object linked, and the code object validated with llvm-readelf-19 --notes
(target, each kernel's ``.kd`` descriptor, argument layout; stack use counted) and disassembled
with llvm-objdump-19. The summary counts modules, kernels, linked and validated code objects,
and lists every op left to the host (a counted fallback) with how many modules have it.

A tool beside the plugin, not in it: the walk drives the importer, the pipeline and the
conformance cases, which the plugin package may not import (tests/architecture: the plugin
surface). No AMD GPU is needed or used: this is the "compiles, links and validates" half of the
plugin's verification, the half that can run anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from hlort.codegen.gpu.program import GpuProgram
from hlort.errors import HlortError
from hlort.ir.module import Module
from hlort.plugin.options import CompileOptions
from hlort.testdata import compile_check
from hlort.testdata.compile_check import Validation
from hlort_rocm.code_object_check import validate_code_objects
from hlort_rocm.compiler import code_object_to_check, compile_rocm_program

DEFAULT_TARGETS = ("gfx90a", "gfx942")


@dataclass
class CodeObjectChecker:
    """compile_check's TargetChecker for AMDGPU: a linked code object per gfx target, checked
    by readelf and objdump."""

    targets: tuple[str, ...] = DEFAULT_TARGETS
    code_object_version: int = 5

    def compile(self, module: Module, target: str, index: int) -> GpuProgram:
        options = CompileOptions(target_options={"code_object_version": self.code_object_version})
        # as the compile-only client: gemm calls kept for the machine that runs the program;
        # host fallbacks are listed in the program, counted here (only an executable applies
        # HLORT_FALLBACK to them)
        return compile_rocm_program(module, options, target, gemm_library=True)

    def validate(self, programs: list[tuple[str, str, GpuProgram]]) -> list[Validation]:
        """One readelf, one objdump per batch; a batch that fails is checked one by one."""
        # stack use is counted, not refused: spills are legal in big kernels (the seed kernels'
        # tests require none)
        items = [
            code_object_to_check(p, self.code_object_version, no_stack=False)
            for _, _, p in programs
        ]
        try:
            reports = validate_code_objects(items)
        except HlortError:  # one bad file fails a batch: find it one by one
            reports = []
            for item in items:
                try:
                    reports.append(validate_code_objects([item])[0])
                except HlortError as err:
                    reports.append(err)
        verdicts = []
        for report in reports:
            if isinstance(report, HlortError):
                verdicts.append(Validation(False, [f"validate: {report}"]))
                continue
            stack = [
                f"{n.name}: {n.private_segment_size} bytes ({n.vgpr_spills} vgpr, "
                f"{n.sgpr_spills} sgpr spills)"
                for n in report.kernels.values()
                if n.private_segment_size or n.uses_dynamic_stack
            ]
            verdicts.append(Validation(report.ok, list(report.problems), stack))
        return verdicts


def in_code_object_words(summary: dict) -> dict:
    """The shared summary in this check's words (linked: a code object with kernels)."""
    targets = summary["targets"]
    return {
        "cases": summary["cases"],
        "modules": summary["modules"],
        "not_run_by_interpreter": summary["not_run_by_interpreter"],
        "targets": targets,
        "kernels": summary["kernels"],
        "modules_with_kernels": summary["modules_with_kernels"],
        "linked": summary["modules_with_kernels"],
        "validated": summary["validated"],
        "modules_all_native": summary["modules_all_native"],
        "ops_not_compiled_natively": summary["ops_not_compiled_natively"],
        "kernels_using_stack": {
            t: sum(1 for n in summary["notes"] if f": {t}: " in n) for t in targets
        },
        "stack_users": summary["notes"],
        "problems": summary["crashes"] + summary["problems"],
    }


def run(
    paths: list[str],
    targets: tuple[str, ...] = DEFAULT_TARGETS,
    jobs: int = 1,
    code_object_version: int = 5,
    limit: int | None = None,
    conformance: str | None = None,
    progress=None,
) -> tuple[dict, list[compile_check.CaseResult]]:
    """``conformance`` "quick" or "all" adds the conformance suite's op cases; ``progress`` (a
    text file) gets each case's result as a JSON line as soon as its chunk is done."""
    items = compile_check.work_items(paths, conformance)[:limit]
    results = compile_check.run(
        items,
        CodeObjectChecker(targets, code_object_version),
        jobs,
        progress,
        name="code_object_check",
    )
    return compile_check.summarize(results, targets), results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="code_object_check.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument(
        "--conformance",
        choices=["quick", "all"],
        help="also the conformance suite's op cases (a sample, or all)",
    )
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--code-object-version", type=int, default=5)
    parser.add_argument("--limit", type=int, help="only the first N cases")
    parser.add_argument("--report", metavar="FILE.json", help="write every case's result")
    parser.add_argument(
        "--progress",
        metavar="FILE.jsonl",
        help="append each case's result as it is done (and count on stderr)",
    )
    parser.add_argument(
        "--summarize", metavar="FILE.jsonl", help="print the summary of a --progress file and stop"
    )
    args = parser.parse_args(argv)
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
    if args.summarize:
        done = compile_check.read_progress(args.summarize)
        print(json.dumps(in_code_object_words(compile_check.summarize(done, targets)), indent=1))
        return 0
    progress = open(args.progress, "a") if args.progress else None  # noqa: SIM115
    try:
        summary, results = run(
            args.paths,
            targets,
            args.jobs,
            args.code_object_version,
            args.limit,
            args.conformance,
            progress,
        )
    finally:
        if progress is not None:
            progress.close()
    if args.report:
        compile_check.write_report(args.report, summary, results)
    words = in_code_object_words(summary)
    problems = words.pop("problems")
    print(json.dumps(words, indent=1))
    for line in problems[:50]:
        print(f"problem: {line}")
    if len(problems) > 50:
        print(f"... {len(problems) - 50} more problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
