"""The pipeline on real programs: a sample of the StableHLO corpus (JAX's test programs), when
the shared checkout has it. Same results bit for bit (NaN-aware), valid, and idempotent."""

from __future__ import annotations

from pathlib import Path

import pytest

from hlort.importers.stablehlo import import_stablehlo
from hlort.interpreter import evaluate
from hlort.passes import run_default_pipeline

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "stablehlo-testdata" / "testdata"
SAMPLE = sorted(CORPUS.glob("*.mlir"))[::40] if CORPUS.is_dir() else []


@pytest.mark.skipif(not SAMPLE, reason="the StableHLO corpus is not checked out next to the repo")
@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.stem)
def test_corpus_program(h, path):
    module = import_stablehlo(path.read_text(), path.name).module
    args = h.make_inputs(module, 0)
    expected = evaluate(module, args)
    run_default_pipeline(module, verify=True)
    assert h.same_bits(expected, evaluate(module, args))
    assert run_default_pipeline(module, verify=True).changed_passes() == []
