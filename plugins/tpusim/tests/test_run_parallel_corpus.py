"""The StableHLO corpus's interpreter.run_parallel tests as real executions on tpusim chips (a
5-chip machine: the largest grid has 5 processes; skipped when the corpus is not checked out)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hlort.runtime.selection import backend_for_client
from hlort.testing.run_parallel_corpus import cases, parts, run_case
from hlort_tpusim.plugin import TpuSimPlugin

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "stablehlo-testdata" / "tests"
CASES = cases(CORPUS)


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


@pytest.fixture(scope="module")
def chips():
    client = TpuSimPlugin().create_client({"num_chips": 5})
    yield backend_for_client(client)
    client.close()


@pytest.mark.skipif(
    not CASES, reason="the StableHLO corpus (../shared/stablehlo-testdata) is absent"
)
@pytest.mark.parametrize("text", [t for _, t in CASES], ids=[i for i, _ in CASES])
def test_run_parallel_on_tpusim_chips(chips, text):
    results = run_case(chips, text)
    assert results
    for name, got, want in results:
        np.testing.assert_array_equal(got, want.reshape(got.shape), err_msg=name)


def test_five_chips_hold_every_grid():
    if not CORPUS.exists():
        pytest.skip("the StableHLO corpus (../shared/stablehlo-testdata) is absent")
    assert max(parts(t).replicas * parts(t).partitions for _, t in CASES) <= 5
