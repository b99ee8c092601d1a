"""Real framework programs (``programs/``, written by ``generate.py``) on every backend.

Each program is what JAX 0.10.2, flax, optax or equinox lowers a model, a training step, a
``jax.random`` sampler or a ``jnp.linalg`` routine to; ``expected.npz`` is JAX's CPU result.
Every program runs on the interpreter, cpu and tpusim, from its StableHLO and, where there is
one, its HLO text, and each output is compared with JAX's:

- integer and boolean outputs (random bits, permutations, indices, pivots): exactly;
- floating outputs on the interpreter and cpu: every element within ``16 eps`` of the output's
  largest magnitude (``eps`` of its type: 1.9e-6 relative for f32). hlort rounds differently
  from XLA:CPU (summation order, its own exp/log/erf, linear algebra in f64 where JAX's LAPACK
  works in f32); the largest difference seen on this corpus is 4 eps;
- floating outputs on tpusim of programs containing a dot or convolution: within ``3e-2`` of
  the output's largest magnitude. tpusim's DEFAULT dot precision is bf16 inputs with f32
  accumulation (as a TPU's), so each operand carries up to half a bf16 ulp (2^-9) of relative
  error and an Adam step's normalization amplifies it; the largest seen is 7e-3. tpusim programs
  without dots keep the interpreter's tolerance.

Eigen- and singular vectors are unique only up to sign (phase), so the linalg programs return
sign-free views of them (|v|, v diag(w) v^H); JAX's TPU lowerings (``*_tpu_lowering``) are
compared with the same function's CPU results. Two correct LAPACKs (JAX's own and SciPy's, which
the cpu plugin calls in the call's precision when SciPy is installed) agree on eigen- and
singular vectors only to about eps x ||A|| / gap (Davis-Kahan: the smallest gap between the
input's eigen- or singular values), so those programs' tolerance is multiplied by that
conditioning of their input (47 for ``linalg_eigh``, where SciPy's f32 syevd differs from
JAX's by 26 eps).

On cpu the test also asserts the executable's interpreter FALLBACK count
(``stats()["fallback_count"]``): zero, except for the programs in ``CPU_FALLBACKS`` (none today).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import hlort
from hlort.errors import HlortError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PROGRAMS = sorted(d for d in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, d)))
PLATFORMS = ("interpreter", "cpu", "tpusim")
ULPS = 16
BF16_DOT_TOLERANCE = 3e-2

CPU_FALLBACKS: dict[str, tuple[int, str]] = {}  # name -> (count, why); none today
CPU_FALLBACKS_HLO: dict[str, int] = {}  # the HLO route's counts where they differ

XFAIL: dict[tuple[str, str], str] = {}  # (name, platform) -> why it fails today; none


def _routes(name: str) -> list[str]:
    return [f for f in ("module.mlir", "module.hlo") if os.path.exists(os.path.join(HERE, name, f))]


def _cases():
    for name in PROGRAMS:
        for route in _routes(name):
            for platform in PLATFORMS:
                reason = XFAIL.get((name, platform))
                marks = (
                    []
                    if reason is None
                    else [
                        pytest.mark.xfail(
                            reason=reason, strict=True, raises=(HlortError, TypeError)
                        )
                    ]
                )
                yield pytest.param(
                    name,
                    route,
                    platform,
                    marks=marks,
                    id=f"{name}-{route.split('.')[1]}-{platform}",
                )


def _load(path: str, prefix: str) -> list[np.ndarray]:
    with np.load(path) as data:
        return [data[f"{prefix}{i}"] for i in range(len(data.files))]


def _has_contraction(text: str) -> bool:
    return any(op in text for op in ("dot_general", "convolution", " dot(", " convolution("))


def vector_conditioning(name: str, args: list[np.ndarray]) -> float:
    """``||A|| / gap`` of an eigh or svd program's input (1 for every other program)."""
    if not name.startswith(("linalg_eigh", "linalg_svd")) or not args:
        return 1.0
    a = args[0].astype(np.complex128)
    if name.startswith("linalg_eigh"):
        values = np.linalg.eigvalsh(a)
    else:
        values = np.linalg.svd(a, compute_uv=False)
    values = np.sort(values, axis=-1)
    gap = float(np.min(np.diff(values, axis=-1), initial=np.inf))
    size = float(np.max(np.abs(values), initial=0.0))
    return max(1.0, size / gap) if gap > 0 else 1.0


def assert_matches(got: np.ndarray, want: np.ndarray, relative: float | None, what: str) -> None:
    """See the module docstring; ``relative`` None means ``ULPS`` eps of the output's type."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{what}: {got.dtype}{list(got.shape)} but JAX gives {want.dtype}{list(want.shape)}"
    )
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    if want.size == 0:
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    if relative is None:
        relative = ULPS * float(np.finfo(want.dtype).eps)
    scale = float(np.max(np.abs(want[~nan]), initial=0.0)) or 1.0
    error = float(
        np.max(
            np.abs(got[~nan].astype(np.complex128) - want[~nan].astype(np.complex128)), initial=0.0
        )
    )
    assert error <= relative * scale, (
        f"{what}: max |hlort - jax| = {error:.3g} > {relative:.2g} x {scale:.3g}"
    )


@pytest.mark.parametrize("name, route, platform", list(_cases()))
def test_program_matches_jax(name, route, platform, monkeypatch):
    folder = os.path.join(HERE, name)
    text = open(os.path.join(folder, route)).read()
    args = _load(os.path.join(folder, "inputs.npz"), "arg")
    expected = _load(os.path.join(folder, "expected.npz"), "out")
    fallbacks = CPU_FALLBACKS.get(name, (0, ""))[0]
    if route == "module.hlo":
        fallbacks = CPU_FALLBACKS_HLO.get(name, fallbacks)
    monkeypatch.setenv("HLORT_FALLBACK", "allow" if fallbacks else "error")
    exe = hlort.compile(text, platform)
    if platform == "cpu":
        stats = exe.raw.stats()
        assert stats["fallback_count"] == fallbacks, (
            f"{name}: {stats['fallback_count']} interpreter fallbacks {stats['fallback']}, "
            f"expected {fallbacks}"
        )
    outs = exe(*args)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    assert len(outs) == len(expected), f"{name}: {len(outs)} outputs, JAX gives {len(expected)}"
    loose = platform == "tpusim" and _has_contraction(text)
    conditioning = vector_conditioning(name, args)
    for i, (got, want) in enumerate(zip(outs, expected, strict=True)):
        eps = float(np.finfo(want.dtype).eps) if want.dtype.kind in "fc" else 0.0
        relative = BF16_DOT_TOLERANCE if loose else ULPS * eps * conditioning
        assert_matches(got, want, relative, f"{name} ({route}, {platform}) out{i}")


def test_corpus_is_small_and_complete():
    """Every program has inputs and JAX's results, and the whole corpus stays small."""
    total = 0
    for name in PROGRAMS:
        files = os.listdir(os.path.join(HERE, name))
        assert {"module.mlir", "inputs.npz", "expected.npz"} <= set(files), name
        total += sum(os.path.getsize(os.path.join(HERE, name, f)) for f in files)
    assert len(PROGRAMS) >= 40 and total < 2_000_000, (len(PROGRAMS), total)
