"""The optional synchronous fast path ``Executable.execute_host``: when a plugin implements it,
it must agree with ``execute`` and the reference, and must neither keep nor change the arrays."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.interpreter import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.testing.programs import two_outputs


def _execute_host(exe, arrays):
    try:
        return exe.execute_host(arrays)
    except HlortError as err:
        if err.code is ErrorCode.UNIMPLEMENTED:
            pytest.skip(f"Executable.execute_host is not implemented (optional): {err.message}")
        raise


def test_execute_host_returns_the_callers_own_arrays(hlort_session) -> None:
    exe = hlort_session.compile(two_outputs(4))
    x, y = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int32)
    x0, y0 = x.copy(), y.copy()
    outputs = _execute_host(exe, [x, y])
    assert [o.dtype for o in outputs] == [np.float32, np.int32, np.float32]
    np.testing.assert_array_equal(outputs[0], x0 + x0)
    np.testing.assert_array_equal(outputs[2], x0)
    assert not any(np.may_share_memory(o, a) for o in outputs for a in (x, y)), (
        "execute_host results must not alias the arguments"
    )
    for out in outputs:
        out[...] = 0
    again = _execute_host(exe, [x, y])
    np.testing.assert_array_equal(again[1], y0)
    np.testing.assert_array_equal(x, x0)


def test_execute_host_matches_the_reference_on_a_sample_of_ops(hlort_session) -> None:
    _execute_host(
        hlort_session.compile(two_outputs(2)), [np.zeros(2, np.float32), np.zeros(2, np.int32)]
    )  # skips when absent
    problems = []
    for case in all_cases(quick=True):
        if hlort_session.case_unsupported(case):
            continue
        inputs = case.inputs()
        shapes = [p.shape for p in case.module.entry.parameters]
        expected = flatten_value(evaluate(case.module, unflatten(shapes, inputs)))
        try:
            actual = hlort_session.compile(case.module).execute_host(inputs)
        except HlortError as err:
            problems.append(f"{case.id}: {err}")
            continue
        for k, (got, want) in enumerate(zip(actual, expected, strict=True)):
            tolerance = hlort_session.profile.tolerance_for(case.op, case.dtype)
            message = describe_mismatch(
                np.asarray(got), want, case.kind, tolerance, f"{case.id} output {k}"
            )
            if message:
                problems.append(message)
    assert not problems, f"{len(problems)} case(s) differ through execute_host:\n" + "\n".join(
        problems[:10]
    )
