"""The StableHLO test suite's ``check.*`` custom-call targets, registered on import.

``check.expect_eq``, ``check.expect_almost_eq``, ``check.expect_close`` and ``check.eq`` are the
assertions used throughout the StableHLO testdata corpus, compared as the testdata runner compares
(:mod:`hlort.testdata.comparisons`); a failed expectation raises :class:`ExpectationFailed`. They
belong to the corpus runner, not the IR: :mod:`hlort.testdata` imports this module, and so does
whatever runs corpus programs without it (the conformance suite, ``hlort run``).
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.errors import ErrorCode, HlortError
from hlort.ir.custom_calls import register_custom_call, require_operand_count, target_name
from hlort.ir.shape_inference import ShapeQuery
from hlort.shape import Shape, TupleShape, scalar
from hlort.testdata.comparisons import elements_match

# StableHLO's interpreter uses these for the custom-call forms of its checks.
ALMOST_EQ_TOLERANCE = 1e-3
CLOSE_MAX_ULP = 3


class ExpectationFailed(HlortError):
    """A ``check.expect_*`` custom call found the program's result differs from the expected one."""

    default_code = ErrorCode.FAILED_PRECONDITION


def _pair_shape(result: Shape):
    def rule(q: ShapeQuery) -> Shape:
        require_operand_count(q, 2)
        actual, expected = q.array(0), q.array(1)
        if actual != expected:
            q.fail(
                f"target {target_name(q)!r} compares two values of one shape; got actual {actual} "
                f"and expected {expected}"
            )
        return result

    return rule


def _report(instr, ok: np.ndarray, actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    if ok.all():
        return
    bad = np.argwhere(~ok)
    shown = []
    for index in bad[:5]:
        at = tuple(int(i) for i in index)
        shown.append(
            f"at {list(at)}: actual {actual[at].item()!r}, expected {expected[at].item()!r}"
        )
    raise ExpectationFailed(
        f"{instr.name} ({instr.attrs['custom_call_target']}): {len(bad)} of {ok.size} element(s) "
        f"of {instr.operands[0].shape} differ {what}; " + "; ".join(shown)
    )


def _expect_eq(ev, instr, actual, expected):
    ok = elements_match("eq", actual, expected)
    _report(instr, np.asarray(ok), actual, expected, "(exact comparison)")
    return ()


def _expect_almost_eq(ev, instr, actual, expected):
    ok = elements_match("almost_eq", actual, expected, tolerance=ALMOST_EQ_TOLERANCE)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {ALMOST_EQ_TOLERANCE}")
    return ()


def _expect_close(ev, instr, actual, expected):
    ok = elements_match("close", actual, expected, max_ulp=CLOSE_MAX_ULP)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {CLOSE_MAX_ULP} ULP")
    return ()


def _check_eq(ev, instr, actual, expected):
    ok = elements_match("almost_eq", actual, expected, tolerance=1e-4)
    return np.array(bool(np.all(ok)))


def _register_all() -> None:
    empty = TupleShape(())
    register_custom_call(
        "check.expect_eq", _pair_shape(empty), _expect_eq, description="assert actual == expected"
    )
    register_custom_call(
        "check.expect_almost_eq",
        _pair_shape(empty),
        _expect_almost_eq,
        description=f"assert |actual - expected| <= {ALMOST_EQ_TOLERANCE}",
    )
    register_custom_call(
        "check.expect_close",
        _pair_shape(empty),
        _expect_close,
        description=f"assert within {CLOSE_MAX_ULP} ULP",
    )
    register_custom_call(
        "check.eq",
        _pair_shape(scalar(dtypes.PRED)),
        _check_eq,
        description="pred[]: whether actual == expected",
    )


_register_all()
