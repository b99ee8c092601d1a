"""Shape-polymorphic test cases (entry arguments with ``?`` dims): refined for a sample shape.

The corpus's ``testdata/dynamic`` files are JAX's polymorphic exports that only test
serialization: they carry no inputs and no checks. Each is refined with every ``?`` dimension
set to a sample size (the first of :data:`SAMPLE_SIZES` under which the program's shapes agree;
its dimension arguments take the same size), verified, and run on sample inputs. On a platform
other than the interpreter its outputs must match the interpreter's on the same inputs
(``almost_eq`` within :data:`CROSS_CHECK_TOLERANCE`), so a compiled run is checked, not only run.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import InvalidArgument
from hlort.importers.stablehlo import polymorphic
from hlort.importers.stablehlo.convert_module import ImportResult
from hlort.ir.verifier import verify_module
from hlort.testdata.cases import Case
from hlort.testdata.comparisons import compare

SAMPLE_SIZES = (3, 4, 2, 5, 1)
CROSS_CHECK_TOLERANCE = 1e-4  # absolute, almost_eq: the corpus's own default for float checks


def import_polymorphic(case: Case) -> tuple[ImportResult, str] | None:
    """The case refined for a sample shape and verified, with a note saying how; None when the
    case's entry is not polymorphic (imported as usual)."""
    if not polymorphic.maybe_polymorphic(case.text):
        return None
    mlir = polymorphic.parse(case.text, case.relpath)
    sig = polymorphic.signature(mlir)
    if not sig.polymorphic:
        return None
    first: InvalidArgument | None = None
    for size in SAMPLE_SIZES:
        try:
            refined = polymorphic.refine_stablehlo(
                mlir,
                polymorphic.sample_shapes(sig, size),
                source_name=case.relpath,
                collect_checks=True,
            )
        except InvalidArgument as err:  # shapes that disagree at this size: try another
            first = first or err
            continue
        verify_module(refined.result.module)
        dims = f", dimension arguments {list(refined.dim_values.values())}" if sig.dim_args else ""
        return refined.result, f"refined with '?' = {size}{dims}, verified"
    assert first is not None
    raise first


def cross_check(module, args: list, actual: list, expected: list, platform: str) -> str | None:
    """A problem when ``actual`` (the entry's outputs on ``platform``) differ from ``expected``
    (the interpreter's on the same ``args``), else None."""
    if platform == "interpreter":
        return None
    for i, (a, e) in enumerate(zip(_leaves(actual), _leaves(expected), strict=True)):
        problem = compare("almost_eq", np.asarray(a), np.asarray(e), CROSS_CHECK_TOLERANCE)
        if problem is not None:
            return f"output {i} differs from the interpreter's: {problem}"
    return None


def _leaves(values) -> list:
    out = []
    for v in values:
        if isinstance(v, (tuple, list)):
            out.extend(_leaves(v))
        elif v is not None:
            out.append(v)
    return out
