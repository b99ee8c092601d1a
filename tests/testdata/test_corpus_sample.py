"""Regression gate: a fixed sample of the StableHLO testdata corpus must keep its outcomes.

The sample (``sample_expected.txt``, ~300 files) runs on the interpreter with 2 workers. A case
that got worse (pass -> unsupported or fail, unsupported -> fail) fails the test; one that got
better only warns, asking for ``tests/testdata/make_sample.py`` to be rerun. Without the corpus
(``<repo>/../shared/stablehlo-testdata``) the test is skipped.
"""

from __future__ import annotations

import warnings

import pytest
from corpus_sample import RANK, corpus_root, read_expected, run_sample

ROOT = corpus_root()
pytestmark = pytest.mark.skipif(
    ROOT is None,
    reason="StableHLO testdata corpus not found at <repo>/../shared/stablehlo-testdata "
    "(or $HLORT_STABLEHLO_TESTDATA)",
)


def test_sample_outcomes_do_not_regress():
    expected = read_expected()
    assert len(expected) >= 250, "the sample list is unexpectedly short"
    missing = [r for r in expected if not (ROOT / r).exists()]
    assert not missing, f"sample files missing from the corpus: {missing[:5]}"
    results = run_sample(ROOT, sorted(expected))
    messages = run_sample.messages
    regressions, improvements = [], []
    for relpath, want in expected.items():
        got = results.get(relpath, [])
        if len(got) != len(want):
            regressions.append(f"{relpath}: {len(got)} cases, expected {len(want)}")
            continue
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if RANK[g] < RANK[w]:
                regressions.append(f"{relpath} case {i}: {w} -> {g}: {messages[relpath][i]}")
            elif RANK[g] > RANK[w]:
                improvements.append(f"{relpath} case {i}: {w} -> {g}")
    if improvements:
        warnings.warn(
            f"{len(improvements)} sample case(s) improved (e.g. {improvements[0]}); "
            "rerun tests/testdata/make_sample.py",
            stacklevel=1,
        )
    assert not regressions, "\n".join(regressions[:30])
