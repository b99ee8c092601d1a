"""The StableHLO testdata corpus on cpu: one file per op, with constant folding disabled so the
compiled kernels (not the compile-time interpreter) compute the results. Skipped when the corpus
is not checked out (``$HLORT_STABLEHLO_TESTDATA``, else ``<repo>/../shared/stablehlo-testdata``, as
tests/testdata/corpus_sample.py looks for it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

_SHARED = Path(__file__).resolve().parents[3].parent / "shared"
_ROOT = os.environ.get("HLORT_STABLEHLO_TESTDATA") or str(_SHARED / "stablehlo-testdata")
CORPUS = os.path.join(_ROOT, "testdata")
_TYPE = re.compile(r"_(bfloat16|complex|float|int|uint|bool|shape|dtypes|dim|lhs|rhs|operand).*")


def _one_per_op() -> list[str]:
    seen, files = set(), []
    for name in sorted(os.listdir(CORPUS)):
        if not name.endswith(".mlir"):
            continue
        op = _TYPE.sub("", name[: -len(".mlir")])
        if op not in seen:
            seen.add(op)
            files.append(os.path.join(CORPUS, name))
    return files


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="stablehlo testdata corpus not present")
def test_corpus_sample_unfolded_matches_interpreter(tmp_path, monkeypatch):
    """With HLORT_FALLBACK=error (the suite's default): a program with an instruction on the
    interpreter fails to run on cpu, so it would pass on the interpreter only and the lists
    differ. The f16/bf16 argmax and random.categorical reductions, which the interpreter folds
    in a tree, compile natively in that order (hlort_cpu/codegen/tree_fold.py)."""
    from hlort.passes.constant_folding import ConstantFolding
    from hlort.testdata.execution import FAIL, PASS
    from hlort.testdata_runner import run_testdata
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    compile_cache.clear_memory()
    monkeypatch.setattr(ConstantFolding, "run", lambda self, module: False)
    files = _one_per_op()
    cpu = run_testdata(files, "cpu", jobs=0)
    interp = run_testdata(files, "interpreter", jobs=0)
    failed = [o.line() for o in cpu.outcomes if o.status == FAIL]
    assert not failed, "\n".join(failed)
    passed = lambda s: sorted(o.id for o in s.outcomes if o.status == PASS)  # noqa: E731
    assert passed(cpu) == passed(interp) and len(passed(cpu)) > 100
