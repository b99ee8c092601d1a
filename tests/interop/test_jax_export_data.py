"""JAX's export back-compatibility data (programs JAX serialized over the years, with inputs and
XLA's outputs; in the jax wheel, ``jax._src.internal_test_util.export_back_compat_test_data``)
run on hlort, read in place. They hold forms JAX no longer emits: TPU's 2023 tuple-returning
``Qr``, shard_map arguments with locations, dynamic ops as custom calls (``dynamic_top_k``).

Compared per output with XLA's: integers exactly, floats within 50 eps of the output type times
max |XLA's output|; eigh's eigenvectors are not (the data's matrix has repeated eigenvalues, so
any basis of each eigenspace is right), its eigenvalues are; likewise eig's left and right
vectors and the Schur form and vectors (the data's matrix, ``arange(16)`` as 4 x 4, has a
double eigenvalue 0: ``tests/ops/test_lapack_nonsymmetric.py`` checks their invariants). The
programs hlort does not run must fail with an HlortError that names the cause, listed in
UNSUPPORTED with the reason.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hlort
from hlort.errors import HlortError

pytest.importorskip("jax", reason="the data ships in the jax wheel")
DATA = "jax._src.internal_test_util.export_back_compat_test_data"

RUNS = [  # data module, the outputs not compared (not unique)
    ("cpu_cholesky_lapack_potrf", ()),
    ("cpu_lu_lapack_getrf", ()),
    ("cpu_qr_lapack_geqrf", ()),
    ("cpu_svd_lapack_gesdd", ()),
    ("cpu_triangular_solve_blas_trsm", ()),
    ("cpu_eigh_lapack_syev", (0,)),
    ("cpu_eig_lapack_geev", (1, 2)),
    ("cpu_schur_lapack_gees", (0, 1)),
    ("cpu_hessenberg_lapack_gehrd", ()),
    ("cpu_tridiagonal_lapack_sytrd_hetrd", ()),
    ("tpu_Qr", ()),
    ("stablehlo_dynamic_top_k", ()),
    ("stablehlo_dynamic_rng_bit_generator", ()),
    ("annotate_data_placement", ()),
]
UNSUPPORTED = {  # data module: what the error must say (hlort has no such target or devices)
    "tpu_Lu": "'LuDecomposition' is not registered",
    "tpu_ApproxTopK": "'ApproxTopK' is not registered",
    "shardy_sharding_ops_with_different_meshes": "the program needs 2 device(s)",
    "stablehlo_dynamic_approx_top_k": "shape refinement has no rule",
    "tpu_stablehlo_dynamic_reduce_window": "shape refinement has no rule",
}


def _entries(name: str):
    module = importlib.import_module(f"{DATA}.{name}")
    for attr in sorted(a for a in dir(module) if a.startswith("data_")):
        data = getattr(module, attr)
        if "mlir_module_text" in data:
            yield f"{attr}", data
        else:
            for key, entry in data.items():
                yield f"{attr}[{key}]", entry


def _close(got, want, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = float(np.max(np.abs(want), initial=0.0)) or 1.0
    error = float(np.max(np.abs(got.astype(complex) - want.astype(complex)), initial=0.0))
    assert error <= 50 * float(np.finfo(want.dtype).eps) * scale, f"{what}: {error:.3g}"


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize(("name", "unique_not"), RUNS, ids=[r[0] for r in RUNS])
def test_export_data_runs_as_xla_ran_it(name, unique_not, platform, monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    for tag, entry in _entries(name):
        outs = hlort.compile(entry["mlir_module_text"], platform)(*entry["inputs"])
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        want = entry["expected_outputs"]
        assert len(outs) == len(want), tag
        for i, (got, expected) in enumerate(zip(outs, want, strict=True)):
            if i not in unique_not:
                _close(got, expected, f"{name}.{tag} out{i}")


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_what_hlort_does_not_run_is_a_clear_error(name):
    tag, entry = next(_entries(name))
    with pytest.raises(HlortError) as info:
        hlort.compile(entry["mlir_module_text"], "cpu")(*entry["inputs"])
    assert UNSUPPORTED[name] in info.value.message, (tag, info.value.message)
