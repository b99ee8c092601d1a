"""hlort.testdata.compile_check, the GPU plugins' shared corpus check, with a checker on the
host-simulator target: what counts, what is lifted, crashes and verdicts, jobs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from host_simulator import HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program
from hlort.errors import Unimplemented
from hlort.testdata import compile_check
from hlort.testdata.compile_check import Validation

ABS = """// RUN: stablehlo-opt -inline %s | stablehlo-translate --interpret
module @jit_main {
  func.func public @main() -> tensor<SHAPE> {
    %0 = call @inputs() : () -> tensor<SHAPE>
    %1 = call @expected() : () -> tensor<SHAPE>
    %2 = stablehlo.abs %0 : tensor<SHAPE>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<SHAPE>, tensor<SHAPE>) -> ()
    return %2 : tensor<SHAPE>
  }
  func.func private @inputs() -> tensor<SHAPE> {
    %cst = stablehlo.constant dense<INPUT> : tensor<SHAPE>
    return %cst : tensor<SHAPE>
  }
  func.func private @expected() -> tensor<SHAPE> {
    %cst = stablehlo.constant dense<EXPECTED> : tensor<SHAPE>
    return %cst : tensor<SHAPE>
  }
}
"""  # noqa: E501 - one StableHLO op per line


def _abs(shape: str, values: str, expected: str) -> str:
    return ABS.replace("SHAPE", shape).replace("INPUT", values).replace("EXPECTED", expected)


@dataclass
class SimChecker:
    """Compiles for the host simulator; rejects programs of ``reject``, crashes on ``crash``."""

    targets: tuple[str, ...] = ("a", "b")
    crash: str = ""
    reject: str = ""

    def compile(self, module, target, index):
        if target == self.crash:
            raise Unimplemented(f"no {target}")
        return compile_gpu_program(module, HostSimTarget(), kernel_prefix=f"m{index}_")

    def validate(self, programs):
        return [
            Validation(False, ["rejected"])
            if target == self.reject
            else Validation(True, notes=[f"{label} checked"])
            for label, target, _ in programs
        ]


@pytest.fixture
def corpus(tmp_path):
    files = {
        "abs_float32_3.mlir": _abs("3xf32", "[-1.0, 2.0, -3.5]", "[1.0, 2.0, 3.5]"),
        "abs_float32_1.mlir": _abs("1xf32", "[-2.0]", "[2.0]"),  # a 1-element input: lifted
        "abs_float32_scalar.mlir": _abs("f32", "-2.0", "2.0"),  # a scalar stays a constant
        "abs_float32_bad.mlir": _abs("3xf32", "[-1.0, 2.0, -3.5]", "[1.0, 2.0, 3.25]"),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [str(tmp_path / name) for name in files]


def _by_case(results):
    return {r.case.rsplit("/", 1)[-1]: r for r in results}


def test_counts_what_the_interpreter_passes_and_lifts_array_constants(corpus):
    results = compile_check.run(compile_check.work_items(corpus), SimChecker())
    summary = compile_check.summarize(results, ("a", "b"))
    assert (summary["cases"], summary["modules"], summary["not_run_by_interpreter"]) == (4, 3, 1)
    cases = _by_case(results)
    assert cases["abs_float32_bad.mlir"].interpreter == "fail"
    assert cases["abs_float32_3.mlir"].kernels == {"a": 1, "b": 1}
    assert cases["abs_float32_1.mlir"].kernels == {"a": 1, "b": 1}
    assert cases["abs_float32_scalar.mlir"].kernels == {"a": 0, "b": 0}  # folded: no kernel
    assert summary["modules_with_kernels"] == summary["validated"] == {"a": 2, "b": 2}
    assert summary["compiled"] == {"a": 3, "b": 3}
    assert len(summary["notes"]) == 4 and not summary["problems"] and not summary["crashes"]
    assert summary["modules_all_native"] == 3


def test_crashes_and_rejections_are_counted_per_target(corpus):
    results = compile_check.run(
        compile_check.work_items(corpus[:1]), SimChecker(crash="a", reject="b")
    )
    summary = compile_check.summarize(results, ("a", "b"))
    assert summary["compiled"] == {"a": 0, "b": 1}
    assert summary["validated"] == {"a": 0, "b": 0}
    (crash,) = summary["crashes"]
    assert "a: UNIMPLEMENTED: no a" in crash
    assert summary["problems"] == [f"{results[0].case}: b: rejected"]
    assert summary["modules_all_native"] == 0


def test_jobs_and_progress_give_the_same_results(corpus, tmp_path):
    items = compile_check.work_items(corpus)
    alone = compile_check.run(items, SimChecker())
    with open(tmp_path / "progress.jsonl", "w") as progress:
        parallel = compile_check.run(items, SimChecker(), jobs=2, progress=progress)
    assert parallel == alone
    assert compile_check.read_progress(str(tmp_path / "progress.jsonl")) == alone


def test_conformance_cases_are_work_items():
    items = compile_check.work_items([], "quick")
    assert len(items) > 100 and items[0] == ("op", True, 0)
    (result,) = compile_check.run(items[:1], SimChecker(targets=("a",)))
    assert result.case.startswith("op:") and result.interpreter == "pass"
    assert result.compiled == ["a"]
