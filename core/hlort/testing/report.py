"""The conformance report: every test's outcome, and the op x element-type table, as JSON and
Markdown (``--hlort-report FILE`` writes both: ``FILE.json`` and ``FILE.md``).

Outcomes: ``pass``, ``fail``, ``error`` (the test could not run), ``unsupported`` (skipped: the
profile or capabilities say so), ``xfail`` (an expected failure that failed) and ``xpass`` (an
expected failure that passed; a failure of the run with ``--hlort-strict``). A table cell is
the worst outcome among the cases of that op and element type.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OUTCOMES = ("pass", "fail", "error", "unsupported", "xfail", "xpass")
_WORST_FIRST = ("error", "fail", "xpass", "xfail", "unsupported", "pass")
_CELL = {
    "pass": "pass",
    "fail": "**FAIL**",
    "error": "**ERROR**",
    "unsupported": "unsup",
    "xfail": "xfail",
    "xpass": "XPASS",
}


@dataclass
class OutcomeRecord:
    nodeid: str
    name: str
    outcome: str
    message: str = ""
    op: str | None = None
    dtype: str | None = None
    seconds: float = 0.0


@dataclass
class ConformanceReport:
    platform: str
    info: dict[str, Any] = field(default_factory=dict)
    records: dict[str, OutcomeRecord] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def add(self, record: OutcomeRecord) -> None:
        """Keep one record per test; a later phase's failure (teardown) overrides a pass."""
        old = self.records.get(record.nodeid)
        if old is None or _WORST_FIRST.index(record.outcome) < _WORST_FIRST.index(old.outcome):
            if old is not None:
                record.seconds += old.seconds
            self.records[record.nodeid] = record
        else:
            old.seconds += record.seconds

    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for record in self.records.values():
            counts[record.outcome] += 1
        return counts

    def op_table(self) -> dict[str, dict[str, str]]:
        """``{op: {dtype: worst outcome}}`` over the op cases."""
        table: dict[str, dict[str, str]] = {}
        for r in self.records.values():
            if r.op is None or r.dtype is None:
                continue
            row = table.setdefault(r.op, {})
            old = row.get(r.dtype)
            if old is None or _WORST_FIRST.index(r.outcome) < _WORST_FIRST.index(old):
                row[r.dtype] = r.outcome
        return table

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            **self.info,
            "seconds": round(time.time() - self.started, 3),
            "summary": self.summary(),
            "ops": self.op_table(),
            "tests": [asdict(r) for r in self.records.values()],
        }

    def to_markdown(self) -> str:
        from hlort import dtypes

        summary = self.summary()
        lines = [f"# Conformance report: `{self.platform}`", ""]
        for key, value in self.info.items():
            lines.append(f"- {key.replace('_', ' ')}: {value}")
        lines.append("- outcomes: " + ", ".join(f"{v} {k}" for k, v in summary.items()))
        lines += ["", "## API and runtime", "", "| test | outcome | note |", "|---|---|---|"]
        for r in self.records.values():
            if r.op is None:
                lines.append(f"| `{r.name}` | {_CELL[r.outcome]} | {_first_line(r.message)} |")
        table = self.op_table()
        if table:
            names = [d.name for d in dtypes.ALL_DTYPES]
            used = [n for n in names if any(n in row for row in table.values())]
            extra = sorted({d for row in table.values() for d in row} - set(names))
            columns = used + extra
            lines += [
                "",
                "## Ops x element types",
                "",
                "Cells: the worst outcome over the op's cases for that input type; "
                "blank: the op does not take that type.",
                "",
                "| op | " + " | ".join(columns) + " |",
                "|---|" + "---|" * len(columns),
            ]
            for op, row in table.items():
                cells = [_CELL.get(row.get(c, ""), "") for c in columns]
                lines.append(f"| {op} | " + " | ".join(cells) + " |")
        bad = [r for r in self.records.values() if r.outcome in ("fail", "error", "xpass")]
        if bad:
            lines += ["", "## Failures", ""]
            for r in bad:
                lines += [f"### `{r.name}` ({r.outcome})", "", "```", r.message.strip(), "```", ""]
        return "\n".join(lines).rstrip() + "\n"

    def write(self, path: str | Path) -> tuple[Path, Path]:
        """Write ``<path>.json`` and ``<path>.md`` (a .json or .md suffix on ``path`` is reused)."""
        base = Path(path)
        if base.suffix in (".json", ".md"):
            base = base.with_suffix("")
        base.parent.mkdir(parents=True, exist_ok=True)
        json_path, md_path = base.with_name(base.name + ".json"), base.with_name(base.name + ".md")
        json_path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        md_path.write_text(self.to_markdown())
        return json_path, md_path


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = line.replace("|", "\\|")
    return line if len(line) <= 160 else line[:157] + "..."
