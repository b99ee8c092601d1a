"""The StableHLO corpus's interpreter.run_parallel tests as real executions on 2-5 virtual cpu
devices (skipped when the corpus is not checked out)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hlort.runtime.selection import backend_for_client  # noqa: E402
from hlort.testing.run_parallel_corpus import cases, parts, run_case  # noqa: E402
from hlort_cpu.plugin import CpuPlugin  # noqa: E402

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "stablehlo-testdata" / "tests"
CASES = cases(CORPUS)


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


@pytest.fixture(scope="module")
def cpu():
    client = CpuPlugin().create_client({"device_count": 5})
    yield backend_for_client(client)
    client.close()


@pytest.mark.skipif(
    not CASES, reason="the StableHLO corpus (../shared/stablehlo-testdata) is absent"
)
@pytest.mark.parametrize("text", [t for _, t in CASES], ids=[i for i, _ in CASES])
def test_run_parallel_on_cpu_devices(cpu, text):
    results = run_case(cpu, text)
    assert results
    for name, got, want in results:
        np.testing.assert_array_equal(got, want.reshape(got.shape), err_msg=name)


def test_the_corpus_cases_are_found():
    if not CORPUS.exists():
        pytest.skip("the StableHLO corpus (../shared/stablehlo-testdata) is absent")
    assert len(CASES) >= 30
    assert max(parts(t).replicas * parts(t).partitions for _, t in CASES) <= 5
