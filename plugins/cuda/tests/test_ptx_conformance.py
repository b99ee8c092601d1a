"""Every conformance op's kernels compile to PTX that ptxas accepts for sm_80 and sm_90, with no
spills, and every host fallback is an op documented as having no GPU kernel yet (the quick
sample of the suite: every op, a few dtypes). Skipped with the reason when there is no ptxas."""

import importlib.util
import sys
from pathlib import Path

import pytest

from hlort.codegen.gpu.compiler import HOST_FALLBACK_OPS, PARTLY_NATIVE_OPS
from hlort.testdata import compile_check
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason


def _tool():
    """plugins/cuda/tools/ptx_corpus_check.py (a tool beside the plugin package)."""
    path = Path(__file__).resolve().parents[1] / "tools" / "ptx_corpus_check.py"
    spec = importlib.util.spec_from_file_location("ptx_corpus_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ptx_corpus_check", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pytestmark = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


@pytest.fixture(scope="module")
def checked():
    checker = _tool().PtxChecker(("sm_80", "sm_90"))
    results = compile_check.run(compile_check.work_items([], "quick"), checker)
    return compile_check.summarize(results, checker.targets), results


def test_every_case_compiles_and_ptxas_accepts_it(checked):
    summary, _ = checked
    assert summary["crashes"] == []
    assert summary["modules"] > 100
    assert summary["compiled"] == {"sm_80": summary["modules"], "sm_90": summary["modules"]}
    assert summary["problems"] == []
    assert summary["validated"] == summary["modules_with_kernels"]
    assert summary["modules_with_kernels"]["sm_80"] > 0.6 * summary["modules"]


def test_no_kernel_spills(checked):
    assert checked[0]["notes"] == []


def test_fallbacks_are_only_the_documented_host_ops(checked):
    allowed = HOST_FALLBACK_OPS | PARTLY_NATIVE_OPS
    fallbacks = {r.case.removeprefix("op:"): r.host_ops for r in checked[1]}
    unexpected = {label: ops for label, ops in fallbacks.items() if set(ops) - allowed}
    assert unexpected == {}
    native = [
        label
        for label in fallbacks
        if label.split("-")[0] in ("exponential", "transpose", "gather", "multiply")
    ]
    assert native and all(not fallbacks[label] for label in native)
