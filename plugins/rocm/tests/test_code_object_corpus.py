"""The code-object check (plugins/rocm/tools/code_object_check.py, a tool beside the plugin
package) over a sample of the StableHLO corpus; the whole corpus runs with ``make rocm-corpus``
and its counts are in docs/rocm-plugin.md."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "stablehlo-testdata"


def _tool():
    path = Path(__file__).resolve().parents[1] / "tools" / "code_object_check.py"
    spec = importlib.util.spec_from_file_location("code_object_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("code_object_check", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_corpus_sample_links_and_validates(llvm19_tools):
    if not CORPUS.is_dir():
        pytest.skip("no ../shared/stablehlo-testdata corpus next to the repository")
    paths = [
        CORPUS / "testdata" / f
        for f in ("abs_float32_20_20.mlir", "cumsum_float32_8_9.mlir", "transpose_float32_2_3.mlir")
    ]
    paths = [str(p) for p in paths if p.exists()]
    summary, results = _tool().run(paths)
    assert summary["modules"] == len(paths) > 0, json.dumps(summary)
    assert summary["modules_with_kernels"] == summary["validated"], summary["problems"]
    assert summary["validated"]["gfx942"] >= 1
    assert not summary["problems"] and not summary["crashes"]
