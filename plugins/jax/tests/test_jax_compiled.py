"""What JAX asks of a compiled hlort executable besides running it: costs, memory, serialization."""

import numpy as np
import pytest
from jax_platforms import PLATFORMS, device, jax  # skips the module without jax

jnp = jax.numpy


def _compiled(platform):
    d = device(platform)
    x = jax.device_put(np.linspace(-2, 2, 8 * 16, dtype=np.float32).reshape(8, 16), d)
    w = jax.device_put(np.linspace(1, -1, 16 * 4, dtype=np.float32).reshape(16, 4), d)
    fn = jax.jit(lambda x, w: jnp.sum(jnp.tanh(x @ w), axis=0))
    return fn.lower(x, w).compile(), (x, w)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cost_analysis_counts_the_program(platform):
    compiled, _ = _compiled(platform)
    cost = compiled.cost_analysis()
    # dot 8x16x4 is 1024 flops (2 per multiply-add), tanh on 32 values, a 32-value sum.
    assert cost["flops"] >= 2 * 8 * 16 * 4
    assert cost["transcendentals"] == 8 * 4
    assert cost["bytes accessed"] >= 4 * (8 * 16 + 16 * 4 + 4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_memory_analysis_has_no_garbage_fields(platform):
    stats = jax.jit(lambda x: x * 2).lower(np.zeros((3, 5), np.float32)).compile()
    stats = stats.memory_analysis()
    assert stats.argument_size_in_bytes == 60 and stats.output_size_in_bytes == 60
    for name in ("generated_code", "argument", "output", "alias", "temp"):
        assert getattr(stats, f"host_{name}_size_in_bytes") == 0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_serialized_executable_loads_and_runs(platform):
    from jax.experimental import serialize_executable

    compiled, args = _compiled(platform)
    payload, in_tree, out_tree = serialize_executable.serialize(compiled)
    # JAX runs a loaded executable on every device of the backend unless told which (tpusim has 4).
    loaded = serialize_executable.deserialize_and_load(
        payload, in_tree, out_tree, backend=platform, execution_devices=[device(platform)]
    )
    np.testing.assert_array_equal(np.asarray(loaded(*args)), np.asarray(compiled(*args)))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_linalg_that_jax_lowers_only_per_platform(platform):
    # eigh has no platform-independent lowering in JAX (svd reaches it too): hlort platforms
    # lower it as JAX's CPU (LAPACK's syevd) or TPU (Eigh) does.
    a = np.array([[4.0, 1.0, -2.0], [1.0, 3.0, 0.5], [-2.0, 0.5, 5.0]], np.float32)
    d = device(platform)
    with jax.default_matmul_precision("highest"):
        values = jax.jit(lambda m: jnp.linalg.eigh(m)[0])(jax.device_put(a, d))
        singular = jax.jit(lambda m: jnp.linalg.svd(m)[1])(jax.device_put(a, d))
    want = np.linalg.eigvalsh(a.astype(np.float64))
    np.testing.assert_allclose(np.asarray(values), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.sort(np.asarray(singular)), np.sort(np.abs(want)), rtol=1e-5)


@pytest.mark.parametrize("platform", ["hlort_interpreter", "hlort_cpu"])
def test_nonsymmetric_linalg_lowers_like_cpu(platform):
    # eig, schur, hessenberg, tridiagonal and tridiagonal_solve lower to LAPACK's geev, gees,
    # gehrd, sytrd and gtsv on the platforms that lower like CPU (JAX's TPU has no rule for the
    # first four, so tpusim, lowering like TPU, raises JAX's NotImplementedError for them).
    a = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.5], [0.3, 0.0, 4.0]], np.float32)
    d = device(platform)
    x = jax.device_put(a, d)
    w = np.asarray(jax.jit(lambda m: jnp.linalg.eig(m)[0])(x))
    want = np.linalg.eigvals(a.astype(np.float64))
    assert np.abs(w[:, None] - want[None, :]).min(1).max() < 1e-5
    t, q = (np.asarray(v) for v in jax.jit(jax.scipy.linalg.schur)(x))
    np.testing.assert_allclose(q @ t @ q.T, a, atol=1e-5)
    h, p = (
        np.asarray(v) for v in jax.jit(lambda m: jax.scipy.linalg.hessenberg(m, calc_q=True))(x)
    )
    np.testing.assert_allclose(p @ h @ p.T, a, atol=1e-5)
    diagonal = np.asarray(jax.jit(lambda m: jax.lax.linalg.tridiagonal(m + m.T)[1])(x))
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(np.diag(diagonal))), np.sort(diagonal))
    lower, main, upper = np.array([0, 1, 1], np.float32), np.full(3, 4, np.float32), np.ones(3)
    rhs = np.arange(6, dtype=np.float32).reshape(3, 2)
    args = [jax.device_put(v.astype(np.float32), d) for v in (lower, main, upper, rhs)]
    got = np.asarray(jax.jit(jax.lax.linalg.tridiagonal_solve)(*args))
    dense = np.diag(main) + np.diag(lower[1:], -1) + np.diag(upper[:-1], 1)
    np.testing.assert_allclose(got, np.linalg.solve(dense, rhs), rtol=1e-5)
