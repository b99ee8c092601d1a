"""Summaries and reports of a corpus run: counts by status, a table by op, the failures with
their first mismatch, and the unsupported features. Reports are text, or JSON when the file name
ends in ``.json``."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hlort.testdata.execution import FAIL, PASS, SKIPPED, UNSUPPORTED, Outcome

STATUSES = (PASS, FAIL, UNSUPPORTED, SKIPPED)


@dataclass
class Summary:
    outcomes: list[Outcome]
    platform: str = "interpreter"
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    by_op: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counts = {s: 0 for s in STATUSES}
        table: dict[str, dict[str, int]] = defaultdict(lambda: {s: 0 for s in STATUSES})
        for o in self.outcomes:
            self.counts[o.status] = self.counts.get(o.status, 0) + 1
            table[o.op][o.status] += 1
        self.by_op = dict(sorted(table.items()))

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def runnable(self) -> int:
        return len(self.outcomes) - self.counts[SKIPPED]

    @property
    def pass_rate(self) -> float:
        return self.counts[PASS] / self.runnable if self.runnable else 1.0

    def unsupported_features(self) -> Counter:
        """How many cases each unsupported feature accounts for (messages, locations removed)."""
        return Counter(_feature(o.message) for o in self.outcomes if o.status == UNSUPPORTED)

    def headline(self) -> str:
        c = self.counts
        return (
            f"{len(self.outcomes)} cases: {c[PASS]} pass, {c[FAIL]} fail, "
            f"{c[UNSUPPORTED]} unsupported, {c[SKIPPED]} skipped "
            f"({100 * self.pass_rate:.1f}% of runnable pass) on {self.platform} "
            f"in {self.seconds:.1f} s"
        )

    def to_text(self, failures: int | None = None) -> str:
        lines = [self.headline(), "", "by op:                               pass  fail unsup  skip"]
        for op, row in self.by_op.items():
            lines.append(f"  {op:<34}" + "".join(f"{row[s]:>6}" for s in STATUSES))
        shown = self.failed if failures is None else self.failed[:failures]
        if shown:
            lines += ["", f"failures ({len(self.failed)}):"]
            lines += [f"  {o.id}: {o.message}" for o in shown]
        features = self.unsupported_features()
        if features:
            lines += ["", "unsupported features:"]
            lines += [f"  {n:>5}  {feat}" for feat, n in features.most_common()]
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps(
            {
                "platform": self.platform,
                "seconds": round(self.seconds, 3),
                "counts": self.counts,
                "pass_rate": self.pass_rate,
                "by_op": self.by_op,
                "unsupported_features": dict(self.unsupported_features()),
                "cases": [asdict(o) for o in self.outcomes],
            },
            indent=1,
        )

    def write(self, path: str) -> None:
        text = self.to_json() if path.endswith(".json") else self.to_text()
        Path(path).write_text(text)


_LOCATION = re.compile(r"^[^:\s]+\.mlir(?:#\d+)?(?::\d+){0,2}:\s*")


def _feature(message: str) -> str:
    """``file.mlir:12:5: stablehlo.foo: quantized type ...`` -> the feature, without place."""
    text = _LOCATION.sub("", message)
    text = re.sub(r"tensor<[^>]*>+", "tensor<...>", text)
    text = re.sub(r"%[\w#.]+", "%v", text)
    return text[:140]
