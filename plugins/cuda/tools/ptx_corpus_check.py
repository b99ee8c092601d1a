"""Offline PTX check of whole corpora: compile every module for NVPTX and assemble it with ptxas.

``python plugins/cuda/tools/ptx_corpus_check.py [PATH...] [--conformance] [--arch sm_80,sm_90]``

A tool beside the plugin, not in it: it drives the importer, the pipeline and the conformance
cases, which the plugin package itself may not import (tests/architecture: the plugin surface).

For the StableHLO corpus (``../shared/stablehlo-testdata``: every ``.mlir`` file or ``// -----``
case the reference interpreter runs; ``--no-interpret`` counts what imports instead; the array
constants those modules compute on become parameters, else constant folding leaves no kernel,
``--keep-constants`` compiles them as they are) and/or the conformance suite's cases, each
module goes through the GPU pipeline and compiler for every
architecture, and its PTX through ``ptxas -v``. Printed: modules seen / compiled, kernels, PTX
files accepted per architecture (the rejected ones listed with ptxas's first error), kernels that
spill, and the host-fallback instructions by opcode, each counted. Exit status 1 when ptxas
rejected anything or a compile crashed, 0 otherwise. No GPU is needed.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.errors import HlortError
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.default_pipeline import run_default_pipeline
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas_many

DEFAULT_ARCHS = ("sm_80", "sm_90")


@dataclass
class CheckSummary:
    archs: tuple[str, ...]
    modules: int = 0
    compiled: int = 0
    kernels: int = 0
    with_kernels: int = 0
    accepted: dict[str, int] = field(default_factory=dict)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # label, arch, error
    spilling: list[tuple[str, str, str]] = field(default_factory=list)  # label, arch, kernel
    crashed: list[tuple[str, str]] = field(default_factory=list)
    fallbacks: collections.Counter = field(default_factory=collections.Counter)
    fallback_reasons: dict[str, str] = field(default_factory=dict)
    schedules: collections.Counter = field(default_factory=collections.Counter)
    fallbacks_by_label: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.rejected and not self.crashed

    def to_text(self) -> str:
        by_schedule = ", ".join(f"{k} {v}" for k, v in sorted(self.schedules.items()))
        lines = [f"modules: {self.modules} seen, {self.compiled} compiled, {self.with_kernels} "
                 f"with kernels; kernels: {self.kernels} ({by_schedule})"]  # fmt: skip
        for arch in self.archs:
            lines.append(f"ptxas -arch={arch}: {self.accepted.get(arch, 0)}/{self.with_kernels} "
                         "PTX modules accepted")  # fmt: skip
        lines.append(f"kernels spilling: {len(self.spilling)}")
        lines += [f"  SPILL {label} {arch} {kernel}" for label, arch, kernel in self.spilling[:20]]
        lines += [f"  REJECTED {label} {arch}: {err}" for label, arch, err in self.rejected[:20]]
        lines += [f"  CRASHED {label}: {err}" for label, err in self.crashed[:20]]
        total = sum(self.fallbacks.values())
        where = sum(1 for v in self.fallbacks_by_label.values() if v)
        lines.append(f"host-fallback instructions: {total} in {where} modules")
        for op, n in self.fallbacks.most_common():
            lines.append(f"  {op:<24} {n:>5}  e.g. {self.fallback_reasons[op]}")
        return "\n".join(lines) + "\n"


def check_modules(modules: Iterable[tuple[str, Module]], archs=DEFAULT_ARCHS,
                  ptxas: str | None = None, host_loops: bool = False) -> CheckSummary:  # fmt: skip
    """Compile each (label, module) for every arch (the module is optimized in a copy) and
    assemble the PTX with ptxas; ``host_loops``: while loops as HostLoop steps."""
    summary = CheckSummary(tuple(archs))
    targets = {arch: NvptxTarget(arch) for arch in archs}
    ptx: dict[str, dict[str, bytes]] = {arch: {} for arch in archs}
    policy = gpu_pass_options().policy
    for n, (label, module) in enumerate(modules):
        summary.modules += 1
        try:
            optimized = module.clone()
            run_default_pipeline(optimized, policy=policy)
            programs = {arch: compile_gpu_program(optimized, t,
                                                  kernel_prefix=f"m{n}_",
                                                  host_loops=host_loops)
                        for arch, t in targets.items()}  # fmt: skip
        except HlortError as err:
            summary.crashed.append((label, f"{err.code.name}: {err.message}"[:300]))
            continue
        except Exception as err:  # noqa: BLE001 - a compiler crash is reported, never raised
            summary.crashed.append((label, f"{type(err).__name__}: {err}"[:300]))
            continue
        summary.compiled += 1
        first = next(iter(programs.values()))
        summary.kernels += len(first.kernels)
        summary.schedules.update(k.schedule for k in first.kernels)
        summary.fallbacks_by_label[label] = [f.opcode for f in first.fallbacks]
        for f in first.fallbacks:
            summary.fallbacks[f.opcode] += 1
            summary.fallback_reasons.setdefault(f.opcode, f.reason)
        if first.kernels:
            summary.with_kernels += 1
            for arch, program in programs.items():
                ptx[arch][label] = program.binary
    for arch in archs:
        results = run_ptxas_many(ptx[arch], arch, ptxas) if ptx[arch] else {}
        for label, result in results.items():
            if result.accepted:
                summary.accepted[arch] = summary.accepted.get(arch, 0) + 1
                summary.spilling += [(label, arch, k) for k in result.spilling()]
            else:
                error = next((ln for ln in result.log.splitlines() if "error" in ln.lower()),
                             result.log.strip()[:200])  # fmt: skip
                summary.rejected.append((label, arch, error))
    return summary


def lift_constants(module: Module) -> Module:
    """A copy whose entry takes its array constants as parameters: a corpus module computes on
    constants and would fold to one, so lifting them is what makes it a module of kernels."""
    from hlort.passes.call_inlining import CallInliner

    lifted = module.clone()
    CallInliner().run(lifted)  # JAX's modules keep their inputs in called functions
    entry = lifted.entry
    number = len(entry.parameters)
    for instr in list(entry.instructions):
        if instr.opcode is Opcode.CONSTANT and instr.shape.is_array and instr.shape.size > 1:
            param = entry.add_instruction(Instruction(Opcode.PARAMETER, instr.shape, (),
                                                      name=f"lifted{number}",
                                                      parameter_number=number))  # fmt: skip
            number += 1
            entry.replace_all_uses(instr, param)
            entry.remove_instruction(instr)
    return lifted


def conformance_modules(quick: bool = False) -> Iterable[tuple[str, Module]]:
    from hlort.testing.op_case import all_cases

    for case in all_cases(quick=quick):
        yield case.id, case.module


def corpus_modules(paths: list[str], interpret: bool = True,
                   lift: bool = True) -> Iterable[tuple[str, Module]]:  # fmt: skip
    """The corpus cases that import (and, with ``interpret``, that the interpreter runs), their
    constants lifted to parameters unless ``lift`` is False."""
    from hlort.importers.stablehlo import import_stablehlo
    from hlort.interpreter import evaluate
    from hlort.testdata.cases import load_cases
    from hlort.testdata.execution import sample_arguments

    for case in load_cases(paths):
        if case.skipped:
            continue
        try:
            module = import_stablehlo(case.text, case.relpath, collect_checks=True).module
            if interpret:
                evaluate(module, sample_arguments([p.shape for p in module.entry.parameters]))
        except Exception:  # noqa: BLE001 - not a module the interpreter runs: not counted
            continue
        yield case.id, lift_constants(module) if lift else module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ptx_corpus_check.py",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("paths", nargs="*", help="StableHLO .mlir files or directories")
    parser.add_argument("--conformance", action="store_true", help="the conformance cases too")
    parser.add_argument("--quick", action="store_true", help="the conformance quick sample")
    parser.add_argument("--arch", default=",".join(DEFAULT_ARCHS), help="e.g. sm_80,sm_90")
    parser.add_argument("--no-interpret", action="store_true",
                        help="count every corpus case that imports, run or not")
    parser.add_argument("--keep-constants", action="store_true",
                        help="compile corpus modules as they are (most fold to constants)")
    parser.add_argument("--host-loops", action="store_true",
                        help="compile while loops as host loops with device bodies")
    parser.add_argument("--limit", type=int, default=0, help="at most this many modules")
    args = parser.parse_args(argv)
    if not args.paths and not args.conformance:
        parser.error("give corpus paths, --conformance, or both")
    exe = find_ptxas()
    if exe is None:
        print(f"hlort: error: FAILED_PRECONDITION: {missing_ptxas_reason()}", file=sys.stderr)
        return 3
    start = time.perf_counter()

    def modules():
        if args.conformance:
            yield from conformance_modules(args.quick)
        if args.paths:
            yield from corpus_modules(args.paths, not args.no_interpret, not args.keep_constants)

    stream = modules()
    if args.limit:
        stream = (m for _, m in zip(range(args.limit), stream, strict=False))
    archs = tuple(a.strip() for a in args.arch.split(","))
    summary = check_modules(stream, archs, exe, args.host_loops)
    print(summary.to_text(), end="")
    print(f"ptxas: {exe}; {time.perf_counter() - start:.0f} s")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
