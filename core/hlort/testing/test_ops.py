"""Every op of the op table over its element types, against the reference interpreter.

Cases come from :mod:`hlort.testing.op_case` (one generator per op; ``--hlort-quick`` samples
two element types per op). Each runs through ``compile`` -> ``buffer_from_host`` -> ``execute``
-> ``to_host`` on the platform and is compared with ``hlort.evaluate``: bitwise for integers,
pred and data movement, within the stated tolerance for float arithmetic.
"""

from __future__ import annotations

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.interpreter import evaluate
from hlort.plugin.base.hlo_text import print_hlo
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import default_tolerance, describe_mismatch
from hlort.testing.op_case import OpCase, all_cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = all_cases(quick=bool(metafunc.config.getoption("hlort_quick", default=False)))
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])


def _context(case: OpCase, inputs) -> str:
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in inputs) or "none"
    text = print_hlo(case.module)
    return f"inputs: {shapes} (seeded by the case id)\nmodule:\n{text}"


def test_op(case: OpCase, hlort_session) -> None:
    reason = hlort_session.case_unsupported(case)
    if reason:
        pytest.skip(reason)
    inputs = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, inputs)))
    platform = hlort_session.platform
    try:
        executable = hlort_session.compile(case.module)
        actual = hlort_session.run(executable, inputs)
    except HlortError as err:
        if err.code is ErrorCode.UNIMPLEMENTED:
            pytest.fail(
                f"{platform} raised UNIMPLEMENTED for {case.id}: {err.message}\nIf the backend "
                f"does not support this, declare it in its conformance_profile(): "
                f"unsupported={{'op:{case.op}:{case.dtype}': 'why'}} (or 'op:{case.op}')",
                pytrace=False,
            )
        raise
    assert len(actual) == len(expected), (
        f"{case.id}: {platform} returned {len(actual)} output(s), the reference "
        f"{len(expected)}\n{_context(case, inputs)}"
    )
    problems = []
    for k, (got, want) in enumerate(zip(actual, expected, strict=True)):
        tolerance = hlort_session.profile.tolerance_for(case.op, case.dtype)
        if tolerance is None and want.dtype.kind in "fcV":
            from hlort import dtypes

            tolerance = default_tolerance(case.kind, dtypes.from_numpy(want.dtype))
        message = describe_mismatch(got, want, case.kind, tolerance, f"output {k}")
        if message:
            problems.append(message)
    if problems:
        pytest.fail(
            f"{case.id} on {platform} differs from the reference interpreter:\n"
            + "\n".join(problems)
            + "\n"
            + _context(case, inputs),
            pytrace=False,
        )
