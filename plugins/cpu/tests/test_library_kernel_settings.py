"""Kernels built once per process (small and narrow dots, gemm parts, the runtime library) are
kept per tuning settings (code_settings.memo): a constant changed at run time builds a new
kernel, which computes what the new setting says; the old settings find the old kernel again.

Tolerances, stated: the dots to contraction_tolerance.assert_matches_reference's dot bound
``2 (K + 2) eps sum |a b| + eps |ref|`` (NaN and infinities among the inputs); the triangular
solves to linalg_tolerance.assert_within_tolerance, both against the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from dot_run import run_dot  # noqa: E402
from linalg_tolerance import assert_within_tolerance, run_native  # noqa: E402
from test_triangular_solve_thunk import LABEL, _case  # noqa: E402

from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort_cpu import gemm_part, library_kernels, narrow_dot, small_dot  # noqa: E402
from hlort_cpu.codegen import code_settings, small_gemm, triangular_solve_kernel  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402

MATMUL = Dn((1,), (0,))
SMALL_CASE = ((64, 9), (9, 200), MATMUL)  # k = 9: unrolls of 2 and 4 leave different tails
NARROW_CASE = ((256, 1024), (1024, 10), MATMUL)


def test_memo_keys_arguments_and_settings(monkeypatch):
    calls, unroll = [], small_gemm.K_UNROLL

    @code_settings.memo
    def build(x):
        calls.append((x, small_gemm.K_UNROLL))
        return object()

    first = build(1)
    assert build(1) is first and build(2) is not first
    monkeypatch.setattr(small_gemm, "K_UNROLL", unroll + 2)
    changed = build(1)
    assert changed is not first and build(1) is changed
    monkeypatch.undo()
    assert build(1) is first
    assert calls == [(1, unroll), (2, unroll), (1, unroll + 2)]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_a_changed_unroll_builds_a_new_small_dot_kernel(dtype, monkeypatch):
    g, _ = small_dot.small_dot_gemm(dtype == "f64", (9, 1), (200, 1), 1, 64, 200, 9)
    default = small_dot.small_dot_kernel(g)
    bits = jit_engine().target.vector_bits
    default_ir = small_dot._module_text("P", g, bits)
    monkeypatch.setattr(small_gemm, "K_UNROLL", 4)
    kernel = small_dot.small_dot_kernel(g)
    assert kernel is not default
    assert small_dot._module_text("P", g, bits) != default_ir  # the unroll is read now
    module, args, got, k, stats = run_dot(dtype, SMALL_CASE, True, seed=3)
    assert stats["compiled"] == {"dot (small matmul)": 1}, stats
    assert_matches_reference(module, args, got, k)
    monkeypatch.undo()
    assert small_dot.small_dot_kernel(g) is default


def test_narrow_dot_and_gemm_part_kernels_follow_the_settings(monkeypatch):
    narrow, part = narrow_dot.narrow_kernel(False, 10), gemm_part.part_kernel(False)
    monkeypatch.setattr(small_gemm, "K_UNROLL", 3)
    assert narrow_dot.narrow_kernel(False, 10) is not narrow
    assert part is None or gemm_part.part_kernel(False) is not part
    module, args, got, k, stats = run_dot("f32", NARROW_CASE, True, seed=4)
    assert stats["compiled"] == {"dot (narrow)": 1}, stats
    assert_matches_reference(module, args, got, k)
    monkeypatch.undo()
    assert narrow_dot.narrow_kernel(False, 10) is narrow
    assert gemm_part.part_kernel(False) is part


@pytest.mark.parametrize("block", [16, 7])
def test_a_changed_column_block_builds_new_substitution_kernels(block, monkeypatch):
    """The thunk splits the columns by the block its kernel was built with: 150 columns are
    10 or 22 blocks of the new kernel, not 3 of the old one's."""
    name = library_kernels.substitution_name(False, True)
    default = library_kernels.library_kernel(name)
    monkeypatch.setattr(triangular_solve_kernel, "COLUMN_BLOCK", block)
    assert library_kernels.library_kernel(name) is not default
    for form in [(True, True, False, "NO_TRANSPOSE"), (False, False, True, "ADJOINT")]:
        module, args = _case("f64", (3,), 40, 150, form, 5)
        got, ref = run_native(module, args, LABEL)
        assert_within_tolerance(got, ref, 40)
        assert np.isfinite(np.asarray(ref)).all()
    monkeypatch.undo()
    assert library_kernels.library_kernel(name) is default
