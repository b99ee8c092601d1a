"""Complex dots on the cpu plugin's BLAS path (K > ORDERED_COMPLEX_MAX_K) whose rows and columns
hold an infinity while their other products overflow: exactly the interpreter's in-order sum.

Products ``h (1 + i) * h (1 + i) = 0 + 2 h^2 i``: in order the real sum is 0 and the imaginary
one overflows, while the four real gemms that repair an infinite row or column make
``ar @ br - ai @ bi`` = inf - inf. Before ``complex_specials.may_overflow`` the rows holding an
infinity came out ``NaN + inf i`` where the interpreter has ``inf + inf i``, and a row whose
finite sums overflow to -inf before its +inf product (NaN in order) came out +inf.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")
from dot_run import dot_module  # noqa: E402

import hlort  # noqa: E402
from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402


def _operands(dtype, m: int, k: int, n: int):
    h = np.sqrt(np.finfo(dtype).max / 64)  # h^2 K overflows, 2 h^2 does not
    a = np.full((m, k), h * (1 + 1j), dtype)
    b = np.full((k, n), h * (1 + 1j), dtype)
    a[0, 0] = np.inf  # met first: inf + inf i
    a[1, k - 1] = np.inf  # met last
    b[:, 2] = -h  # finite real sums overflow to -inf ...
    b[0, 2] = b[k - 1, 2] = h  # ... +inf first in row 0 (inf), last in row 1 (NaN)
    b[5, 3] = complex(0, np.inf)  # an infinite column
    return a, b


@pytest.mark.parametrize("dims", [(4, 128, 4), (40, 300, 24)], ids=str)
@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_special_rows_with_overflowing_products_match_the_interpreter(dtype, dims, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE", "0")
    m, k, n = dims
    module = dot_module(dtype, (m, k), (k, n), Dn((1,), (0,)))
    a, b = _operands(np.complex64 if dtype == "c64" else np.complex128, m, k, n)
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(a, b))
    assert exe.raw.stats()["compiled"] == {"dot (BLAS)": 1}
    want = np.asarray(hlort.evaluate(module, [a, b]))
    assert np.isposinf(want[0, 0].real) and np.isposinf(want[0, 2].real)
    assert np.isnan(want[1, 2].real)
    np.testing.assert_array_equal(got, want)  # every element overflows or is special
