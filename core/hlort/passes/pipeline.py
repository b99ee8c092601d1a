"""The pass pipeline: a list of passes run in order, with optional dumps, timing and verification.

``hlort compile --dump-dir D`` and ``CompileOptions(dump_dir=...)`` write the module after every
pass as ``NN-<pass>.hlo`` (inside a fixed-point group, after every inner pass that changed it, as
``NN-<group>.<pass>.hlo``); ``verify=True`` (on in tests) runs the verifier after each pass that
changed the module, so a broken rewrite is reported by the pass that made it. The cycle check
(one visit per instruction) runs after every changed pass even without ``verify``: a cycle would
make the next pass's graph walk fail far from the pass that made it, so it is INTERNAL naming
the pass and the instructions on the cycle.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import field

from hlort.errors import ErrorCode, HlortError, Internal
from hlort.ir.module import Module
from hlort.ir.verifier import check_acyclic, verify_module
from hlort.lazy_dataclass import dataclass
from hlort.log import lazy_logger
from hlort.passes.pass_base import Pass

LOGGER = lazy_logger("hlort.passes")


@dataclass
class PassRecord:
    name: str
    changed: bool
    seconds: float
    instructions: int
    children: list[PassRecord] = field(default_factory=list)  # a fixed-point group's runs

    def flatten(self) -> list[PassRecord]:
        out = [self]
        for child in self.children:
            out.extend(child.flatten())
        return out


@dataclass
class PipelineReport:
    records: list[PassRecord] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def all_records(self) -> list[PassRecord]:
        """Every record, fixed-point groups followed by their inner runs."""
        out: list[PassRecord] = []
        for r in self.records:
            out.extend(r.flatten())
        return out

    def changed_passes(self) -> list[str]:
        return [r.name for r in self.all_records() if r.changed]

    def seconds_by_pass(self) -> dict[str, float]:
        """Total seconds per pass name (inner runs of groups included, groups excluded)."""
        out: dict[str, float] = {}
        for r in self.all_records():
            if not r.children:
                out[r.name] = out.get(r.name, 0.0) + r.seconds
        return out

    def summary(self) -> str:
        lines = [f"{'pass':<40} {'changed':>7} {'ms':>9} {'instrs':>7}"]
        for top in self.records:
            for depth, r in _walk(top, 0):
                name = "  " * depth + r.name
                lines.append(
                    f"{name:<40} {str(r.changed):>7} {r.seconds * 1e3:9.2f} {r.instructions:>7}"
                )
        lines.append(f"{'total':<40} {str(self.changed):>7} {self.seconds * 1e3:9.2f}")
        return "\n".join(lines)


def _walk(record: PassRecord, depth: int):
    yield depth, record
    for child in record.children:
        yield from _walk(child, depth + 1)


class FixedPoint(Pass):
    """Run a group of passes repeatedly until none changes the module (or ``max_iterations``).

    Inside a :class:`Pipeline` each inner pass is timed, verified and dumped like a top-level
    one; ``last_records`` keeps the inner records of the latest run.
    """

    name = "fixed-point"

    def __init__(self, passes: list[Pass], max_iterations: int = 8, name: str | None = None):
        self.passes = list(passes)
        self.max_iterations = max_iterations
        if name:
            self.name = name
        self.last_records: list = []

    def run(self, module: Module) -> bool:
        return Pipeline([self]).run(module).changed


class Pipeline:
    """Runs ``passes`` in order; see the module docstring for ``verify`` and ``dump_dir``."""

    def __init__(self, passes: list[Pass], verify: bool = False, dump_dir: str | None = None):
        self.passes = list(passes)
        self.verify = verify
        self.dump_dir = dump_dir
        self._dump_index = 0

    def run(self, module: Module) -> PipelineReport:
        report = PipelineReport()
        if self.dump_dir:
            os.makedirs(self.dump_dir, exist_ok=True)
            self._dump(module, "input")
        for p in self.passes:
            report.records.append(self._run_pass(p, module, prefix=""))
        return report

    def _run_pass(self, p: Pass, module: Module, prefix: str) -> PassRecord:
        if isinstance(p, FixedPoint):
            return self._run_fixed_point(p, module, prefix)
        start = time.perf_counter()
        try:
            changed = bool(p.run(module))
        except HlortError as err:
            if err.code is ErrorCode.INTERNAL and not err.message.startswith("pass "):
                raise Internal(
                    f"pass {p.name} failed on module {module.name}: {err.message}"
                ) from err
            raise
        except Exception as err:  # a pass bug must name the pass
            raise Internal(f"pass {p.name} failed on module {module.name}: {err!r}") from err
        elapsed = time.perf_counter() - start
        record = PassRecord(prefix + p.name, changed, elapsed, module.instruction_count())
        LOGGER.debug(
            "pass %s on %s: %s, %d instructions, %.2f ms",
            record.name,
            module.name,
            "changed" if changed else "no change",
            record.instructions,
            elapsed * 1e3,
        )
        if changed:
            try:
                verify_module(module) if self.verify else check_acyclic(module)
            except HlortError as err:
                raise Internal(f"pass {p.name} produced an invalid module: {err.message}") from err
        if self.dump_dir and (changed or not prefix):
            self._dump(module, prefix + p.name)
        return record

    def _run_fixed_point(self, group: FixedPoint, module: Module, prefix: str) -> PassRecord:
        start = time.perf_counter()
        children: list[PassRecord] = []
        changed_any = False
        for _ in range(group.max_iterations):
            changed = False
            for p in group.passes:
                record = self._run_pass(p, module, prefix + group.name + ".")
                children.append(record)
                changed |= record.changed
            if not changed:
                break
            changed_any = True
        group.last_records = children
        elapsed = time.perf_counter() - start
        record = PassRecord(
            prefix + group.name, changed_any, elapsed, module.instruction_count(), children
        )
        if self.dump_dir and not prefix:
            self._dump(module, group.name)
        return record

    def _dump(self, module: Module, label: str) -> None:
        from hlort.text.printer import print_module  # dumps only: the printer loads on use

        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
        path = os.path.join(self.dump_dir, f"{self._dump_index:02d}-{safe}.hlo")
        self._dump_index += 1
        with open(path, "w") as f:
            f.write(print_module(module))
