"""The default optimization pipeline and the compile summary ``hlort compile --dump-dir`` writes.

Order: the plugin's ``before`` passes; dimension-size lowering (bounded dynamism to static ops);
sub-byte bitcast expansion (s4/u4 packing as integer ops);
the SPMD partitioner (a module of several partitions becomes the per-device program; nothing
happens otherwise); call inlining; a fixed-point group of tuple simplification, algebraic
simplification, constant folding, CSE and DCE; a fixed-point group of instruction fusion and
multi-output fusion under the plugin's :class:`FusionPolicy` (a merge can leave a producer with a
single user, which instruction fusion then takes); the simplification group again (merging
fusions exposes tuple round trips and chains inside fused computations; running it here keeps
the pipeline idempotent); the plugin's ``after`` passes; scheduling last, so whatever the plugin
did is scheduled too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hlort.errors import InvalidArgument
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.log import lazy_logger
from hlort.passes.algebraic_simplifier import AlgebraicSimplifier
from hlort.passes.buffer_assignment import assign_buffers
from hlort.passes.call_inlining import CallInliner
from hlort.passes.causal_attention import CausalAttentionBlocking
from hlort.passes.constant_folding import ConstantFolding
from hlort.passes.cost_analysis import cost_analysis
from hlort.passes.cse import CommonSubexpressionElimination
from hlort.passes.dce import DeadCodeElimination
from hlort.passes.dimension_size_lowering import DimensionSizeLowering
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.instruction_fusion import InstructionFusion
from hlort.passes.multi_output_fusion import MultiOutputFusion
from hlort.passes.pass_base import Pass
from hlort.passes.pipeline import FixedPoint, Pipeline, PipelineReport
from hlort.passes.scheduling import Scheduler
from hlort.passes.spmd_pass import SpmdPartitioner, write_spmd_report
from hlort.passes.sub_byte_bitcast import SubByteBitcastExpansion
from hlort.passes.tuple_simplification import TupleSimplifier

LOGGER = lazy_logger("hlort.passes")
SUMMARY_FILE = "summary.txt"
SUMMARY_JSON = "summary.json"


def simplification_passes() -> list[Pass]:
    return [
        TupleSimplifier(),
        AlgebraicSimplifier(),
        ConstantFolding(),
        CommonSubexpressionElimination(),
        DeadCodeElimination(),
    ]


def default_passes(
    policy: FusionPolicy | None = None,
    before: Sequence[Pass] = (),
    after: Sequence[Pass] = (),
    disabled: Sequence[str] = (),
) -> list[Pass]:
    """The pipeline as a list, for callers that want to inspect or edit it. ``disabled`` names
    passes or groups to leave out (``"fusion"``, ``"simplify"``, ``"cse"`` inside every group,
    ``"simplify.cse"`` inside one); a name that is none of them is INVALID_ARGUMENT naming
    the known ones (a typo must not leave the pass running)."""
    policy = policy or FusionPolicy()
    passes = [
        *before,
        DimensionSizeLowering(),
        SubByteBitcastExpansion(),
        SpmdPartitioner(),
        CallInliner(),
        FixedPoint(simplification_passes(), name="simplify"),
        CausalAttentionBlocking(),
        FixedPoint([InstructionFusion(policy), MultiOutputFusion(policy)], name="fusion"),
        FixedPoint(simplification_passes(), name="simplify-fused"),
        *after,
        Scheduler(),
    ]
    return _without(passes, set(disabled)) if disabled else passes


def pass_names(passes: Sequence[Pass], prefix: str = "") -> list[str]:
    """Every name ``disabled`` accepts for ``passes``: groups, inner passes, ``group.pass``."""
    names: list[str] = []
    for p in passes:
        names.append(prefix + p.name)
        if isinstance(p, FixedPoint):
            inner = pass_names(p.passes, prefix + p.name + ".")
            names += inner + [n.rsplit(".", 1)[-1] for n in inner]
    return list(dict.fromkeys(names))


def _without(passes: list[Pass], disabled: set[str]) -> list[Pass]:
    known = set(pass_names(passes))
    unknown = sorted(disabled - known)
    if unknown:
        raise InvalidArgument(
            f"cannot disable pass(es) {unknown}: no such pass in the pipeline; known: "
            f"{', '.join(sorted(known))}"
        )
    return _filter(passes, disabled, "")


def _filter(passes: list[Pass], disabled: set[str], prefix: str) -> list[Pass]:
    kept: list[Pass] = []
    for p in passes:
        if p.name in disabled or prefix + p.name in disabled:
            LOGGER.debug("pass %s disabled by the compile options", prefix + p.name)
            continue
        if isinstance(p, FixedPoint):
            inner = _filter(p.passes, disabled, prefix + p.name + ".")
            if len(inner) != len(p.passes):
                p = FixedPoint(inner, p.max_iterations, name=p.name)
        kept.append(p)
    return kept


def run_default_pipeline(
    module: Module,
    *,
    policy: FusionPolicy | None = None,
    verify: bool = False,
    dump_dir: str | None = None,
    before: Sequence[Pass] = (),
    after: Sequence[Pass] = (),
    disabled: Sequence[str] = (),
) -> PipelineReport:
    """Optimize ``module`` in place (callers clone first). With ``dump_dir``, the module after
    every pass and a before/after summary (:func:`write_compile_summary`) are written there."""
    original = module.clone() if dump_dir else None
    passes = default_passes(policy, before, after, disabled)
    pipeline = Pipeline(passes, verify=verify, dump_dir=dump_dir)
    report = pipeline.run(module)
    if dump_dir and original is not None:
        write_compile_summary(original, module, dump_dir, report)
        write_spmd_report(passes, dump_dir)
    return report


def module_statistics(module: Module) -> dict[str, int]:
    """Instruction and fusion counts, bytes moved (cost analysis), peak memory (buffers)."""
    cost = cost_analysis(module)
    buffers = assign_buffers(module)
    entry = module.entry
    return {
        "instructions": module.instruction_count(),
        "entry_instructions": len(entry.instructions),
        "fusions": sum(1 for i in entry.instructions if i.opcode is Opcode.FUSION),
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_moved": cost.bytes_accessed,
        "peak_bytes": buffers.peak_bytes,
        "arena_bytes": buffers.arena_size,
    }


def write_compile_summary(
    before_module: Module, after_module: Module, dump_dir: str, report: PipelineReport | None = None
) -> str:
    """Write ``summary.txt`` (and ``summary.json``) comparing the module before and after the
    pipeline; returns the text."""
    before = module_statistics(before_module)
    after = module_statistics(after_module)
    lines = [f"module {after_module.name}", f"{'':<20} {'before':>14} {'after':>14} {'ratio':>8}"]
    for key in before:
        ratio = f"{before[key] / after[key]:.2f}" if after[key] else "-"
        lines.append(f"{key:<20} {before[key]:>14} {after[key]:>14} {ratio:>8}")
    if report is not None:
        lines += ["", report.summary()]
    text = "\n".join(lines) + "\n"
    os.makedirs(dump_dir, exist_ok=True)
    with open(os.path.join(dump_dir, SUMMARY_FILE), "w") as f:
        f.write(text)
    import json  # only with a dump directory

    with open(os.path.join(dump_dir, SUMMARY_JSON), "w") as f:
        json.dump({"module": after_module.name, "before": before, "after": after}, f, indent=2)
    return text
