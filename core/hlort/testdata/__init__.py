"""Running StableHLO test corpora (JAX-generated testdata and hand-written interpreter tests)."""

from hlort.testdata import check_targets  # noqa: F401  (registers the check.* targets)
from hlort.testdata.cases import Case, load_cases, op_name, split_cases  # noqa: F401
from hlort.testdata.comparisons import Mismatch, compare, ulp_difference  # noqa: F401
from hlort.testdata.execution import Outcome, run_case, run_file  # noqa: F401
from hlort.testdata.report import Summary  # noqa: F401
from hlort.testdata.scheduler import run_files  # noqa: F401
