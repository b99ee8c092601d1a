"""XLA:CPU's ``TopK`` custom call in the interpreter (topk_target.py) on the values where a
widened or negated key goes wrong: u64 above 2^63 (a cast to s64 wraps), the s64 minimum (its
negation overflows), and f64 NaNs of both signs with every bit set, next to infinities and
signed zeros. Expected indices are written out by hand (XLA's order: TOTALORDER for floats,
value for integers, ties by lower index)."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.interpreter.evaluator import evaluate
from hlort.text.parser import parse_module


def _top_k(x: np.ndarray, hlo_type: str, k: int):
    n = x.shape[-1]
    module = parse_module(
        f"""HloModule k
ENTRY main {{
  x = {hlo_type}[{n}] parameter(0)
  ROOT r = ({hlo_type}[{k}], s32[{k}]) custom-call(x), custom_call_target="TopK"
}}
"""
    )
    values, indices = evaluate(module, [x])
    return np.asarray(values), np.asarray(indices)


def _f64(bits: int) -> np.float64:
    return np.array([bits], np.uint64).view(np.float64)[0]


@pytest.mark.parametrize(
    "x, hlo_type, k, expected",
    [
        (np.array([2**64 - 1, 1, 2**63, 0, 5], np.uint64), "u64", 3, [0, 2, 4]),
        (np.array([5, -(2**63), 2**63 - 1, -1, 0], np.int64), "s64", 5, [2, 0, 4, 3, 1]),
        (np.array([0, 255, 128, 255], np.uint8), "u8", 2, [1, 3]),
        (np.array([-128, 127, -1, -128], np.int8), "s8", 4, [1, 2, 0, 3]),
        (
            np.array(
                [
                    1.0,
                    _f64(0xFFFFFFFFFFFFFFFF),
                    -np.inf,
                    np.inf,
                    -0.0,
                    0.0,
                    _f64(0x7FFFFFFFFFFFFFFF),
                ],
                np.float64,
            ),
            "f64",
            7,
            [6, 3, 0, 5, 4, 2, 1],  # +NaN, +inf, 1, +0, -0, -inf, -NaN
        ),
    ],
)
def test_top_k_orders_the_extreme_keys(x, hlo_type, k, expected):
    values, indices = _top_k(x, hlo_type, k)
    assert indices.tolist() == expected
    assert values.view(f"u{x.itemsize}").tolist() == x[expected].view(f"u{x.itemsize}").tolist()
