"""Offline PTX check of whole corpora: compile every module for NVPTX and assemble it with ptxas.

``python plugins/cuda/tools/ptx_corpus_check.py [PATH...] [--conformance] [--arch sm_80,sm_90]``

A tool beside the plugin, not in it: the walk, the module preparation and the counts are the
core's shared GPU compile check (``hlort.testdata.compile_check``), which drives the importer,
the pipeline and the conformance cases the plugin package itself may not import
(tests/architecture: the plugin surface). This file is the CUDA part: compile one prepared
module for one architecture with the plugin's NVPTX target, and assemble a batch of PTX files
with ``ptxas -v``.

For the StableHLO corpus (``../shared/stablehlo-testdata``: every ``.mlir`` file or ``// -----``
case the reference interpreter runs and passes; ``--no-interpret`` counts what imports instead;
the array constants those modules compute on become parameters, else constant folding leaves no
kernel, ``--keep-constants`` compiles them as they are) and/or the conformance suite's cases.
Printed: modules seen / compiled, kernels, PTX files accepted per architecture (the rejected
ones listed with ptxas's first error), kernels that spill, and the host-fallback instructions by
opcode, each counted. Exit status 1 when ptxas rejected anything or a compile crashed, 0
otherwise. No GPU is needed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from hlort.codegen.gpu.compiler import compile_gpu_program
from hlort.codegen.gpu.program import GpuProgram
from hlort.ir.module import Module
from hlort.testdata import compile_check
from hlort.testdata.compile_check import Validation
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas_many

DEFAULT_ARCHS = ("sm_80", "sm_90")


@dataclass
class PtxChecker:
    """compile_check's TargetChecker for NVPTX: PTX per architecture, accepted by ptxas."""

    targets: tuple[str, ...] = DEFAULT_ARCHS
    ptxas: str | None = None
    host_loops: bool = False  # while loops as HostLoop steps (device bodies)

    def compile(self, module: Module, target: str, index: int) -> GpuProgram:
        return compile_gpu_program(
            module, NvptxTarget(target), kernel_prefix=f"m{index}_", host_loops=self.host_loops
        )

    def validate(self, programs: list[tuple[str, str, GpuProgram]]) -> list[Validation]:
        verdicts: list[Validation | None] = [None] * len(programs)
        for arch in dict.fromkeys(t for _, t, _ in programs):
            mine = [k for k, (_, t, _) in enumerate(programs) if t == arch]
            results = run_ptxas_many(
                {str(k): programs[k][2].binary for k in mine}, arch, self.ptxas
            )
            for k in mine:
                result = results[str(k)]
                if result.accepted:
                    verdicts[k] = Validation(
                        True, notes=[f"spills in {kernel}" for kernel in result.spilling()]
                    )
                else:
                    error = next(
                        (ln for ln in result.log.splitlines() if "error" in ln.lower()),
                        result.log.strip()[:200],
                    )
                    verdicts[k] = Validation(False, [f"ptxas: {error}"])
        return verdicts


def to_text(summary: dict) -> str:
    """The summary in ptxas's words."""
    with_kernels = summary["modules_with_kernels"]
    first = summary["targets"][0]
    by_schedule = ", ".join(f"{k} {v}" for k, v in summary["schedules"].items())
    lines = [
        f"modules: {summary['modules']} seen, {summary['compiled'][first]} compiled, "
        f"{with_kernels[first]} with kernels; kernels: {summary['kernels'][first]} "
        f"({by_schedule})"
    ]
    for arch in summary["targets"]:
        lines.append(
            f"ptxas -arch={arch}: {summary['validated'][arch]}/{with_kernels[arch]} "
            "PTX modules accepted"
        )
    lines.append(f"kernels spilling: {len(summary['notes'])}")
    lines += [f"  SPILL {note}" for note in summary["notes"][:20]]
    lines += [f"  REJECTED {problem}" for problem in summary["problems"][:20]]
    lines += [f"  CRASHED {crash}" for crash in summary["crashes"][:20]]
    fallbacks = summary["host_fallback_instructions"]
    lines.append(
        f"host-fallback instructions: {sum(fallbacks.values())} in "
        f"{summary['modules_with_host_fallbacks']} modules"
    )
    for op, n in fallbacks.items():
        lines.append(f"  {op:<24} {n:>5}  e.g. {summary['fallback_reasons'][op]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ptx_corpus_check.py", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="StableHLO .mlir files or directories")
    parser.add_argument("--conformance", action="store_true", help="the conformance cases too")
    parser.add_argument("--quick", action="store_true", help="the conformance quick sample")
    parser.add_argument("--arch", default=",".join(DEFAULT_ARCHS), help="e.g. sm_80,sm_90")
    parser.add_argument(
        "--no-interpret",
        action="store_true",
        help="count every corpus case that imports, run or not",
    )
    parser.add_argument(
        "--keep-constants",
        action="store_true",
        help="compile corpus modules as they are (most fold to constants)",
    )
    parser.add_argument(
        "--host-loops",
        action="store_true",
        help="compile while loops as host loops with device bodies",
    )
    parser.add_argument("--limit", type=int, default=0, help="at most this many cases")
    parser.add_argument("--jobs", type=int, default=1, help="processes compiling at once")
    parser.add_argument("--report", metavar="FILE.json", help="write every case's result")
    parser.add_argument(
        "--progress",
        metavar="FILE.jsonl",
        help="append each case's result as it is done (and count on stderr)",
    )
    args = parser.parse_args(argv)
    if not args.paths and not args.conformance:
        parser.error("give corpus paths, --conformance, or both")
    exe = find_ptxas()
    if exe is None:
        print(f"hlort: error: FAILED_PRECONDITION: {missing_ptxas_reason()}", file=sys.stderr)
        return 3
    start = time.perf_counter()
    conformance = ("quick" if args.quick else "all") if args.conformance else None
    items = compile_check.work_items(args.paths, conformance)
    if args.limit:
        items = items[: args.limit]
    archs = tuple(a.strip() for a in args.arch.split(",") if a.strip())
    checker = PtxChecker(archs, exe, args.host_loops)
    progress = open(args.progress, "a") if args.progress else None  # noqa: SIM115
    try:
        results = compile_check.run(
            items,
            checker,
            args.jobs,
            progress,
            interpret=not args.no_interpret,
            lift=not args.keep_constants,
            name="ptx_corpus_check",
        )
    finally:
        if progress is not None:
            progress.close()
    summary = compile_check.summarize(results, archs)
    if args.report:
        compile_check.write_report(args.report, summary, results)
    print(to_text(summary), end="")
    print(f"ptxas: {exe}; {time.perf_counter() - start:.0f} s")
    return 0 if not summary["problems"] and not summary["crashes"] else 1


if __name__ == "__main__":
    sys.exit(main())
