"""Every conformance op's kernels compile to PTX that ptxas accepts for sm_80 and sm_90, with no
spills, and every host fallback is an op documented as having no GPU kernel yet (the quick
sample of the suite: every op, a few dtypes). Skipped with the reason when there is no ptxas."""

import importlib.util
import sys
from pathlib import Path

import pytest

from hlort.codegen.gpu.compiler import HOST_FALLBACK_OPS, PARTLY_NATIVE_OPS
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
def summary():
    tool = _tool()
    return tool.check_modules(tool.conformance_modules(quick=True), ("sm_80", "sm_90"))


def test_every_case_compiles_and_ptxas_accepts_it(summary):
    assert summary.crashed == []
    assert summary.compiled == summary.modules > 100
    assert summary.rejected == []
    assert summary.accepted == {"sm_80": summary.with_kernels, "sm_90": summary.with_kernels}
    assert summary.with_kernels > 0.6 * summary.modules


def test_no_kernel_spills(summary):
    assert summary.spilling == []


def test_fallbacks_are_only_the_documented_host_ops(summary):
    allowed = HOST_FALLBACK_OPS | PARTLY_NATIVE_OPS
    unexpected = {label: ops for label, ops in summary.fallbacks_by_label.items()
                  if set(ops) - allowed}  # fmt: skip
    assert unexpected == {}
    native = [label for label in summary.fallbacks_by_label
              if label.split("-")[0] in ("exponential", "transpose", "gather", "multiply")]
    assert native and all(not summary.fallbacks_by_label[label] for label in native)
