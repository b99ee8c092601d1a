"""The StableHLO test-suite assertions (``check.*`` ops and ``@check.*`` custom calls).

They are comparisons, not computation: the importer strips them, makes their operands extra
outputs of the entry computation, and describes each as a :class:`CheckSpec` that a test runner
evaluates after execution (see :mod:`hlort.testdata.comparisons`).
"""

from __future__ import annotations

import numpy as np

from hlort.lazy_dataclass import dataclass

# op or custom-call target -> the comparison it asks for
CHECK_OPS = {
    "check.expect_eq": "eq",
    "check.expect_eq_const": "eq",
    "check.expect_almost_eq": "almost_eq",
    "check.expect_almost_eq_const": "almost_eq",
    "check.expect_close": "close",
    "check.eq": "eq",
    "check.almost_eq": "almost_eq",
    "check.expect_serialized_eq": "eq",
}
CHECK_TARGETS = {
    "check.expect_eq": "eq",
    "check.expect_almost_eq": "almost_eq",
    "check.expect_close": "close",
    "check.eq": "almost_eq",  # exact for integers (the comparison is exact for them)
}
# StableHLO's interpreter: the check *ops* default to tolerance 1e-4 and ULPs [0, 3]; the
# custom-call spellings JAX writes use tolerance 1e-3 and ULPs [0, 3].
OP_TOLERANCE = 1e-4
CALL_TOLERANCE = 1e-3
DEFAULT_MIN_ULP = 0
DEFAULT_MAX_ULP = 3


@dataclass
class CheckSpec:
    """One assertion: output ``actual`` of the entry's result tuple compared with output
    ``expected`` (or with the constant ``expected_value``)."""

    kind: str  # "eq" | "almost_eq" | "close"
    actual: int
    expected: int | None = None
    expected_value: np.ndarray | None = None
    tolerance: float = OP_TOLERANCE
    min_ulp: int = DEFAULT_MIN_ULP
    max_ulp: int = DEFAULT_MAX_ULP
    line: int = 0
    op: str = ""

    def describe(self) -> str:
        return f"{self.op} at line {self.line}"
