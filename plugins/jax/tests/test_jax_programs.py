"""JAX programs on every hlort platform, compared with JAX's own CPU backend."""

import numpy as np
import pytest
from jax_platforms import PLATFORMS, device, jax  # skips the module without jax

jnp = jax.numpy
# f32 programs of a few ops: hlort and XLA differ by rounding of the transcendental functions.
RTOL, ATOL = 2e-6, 2e-6


def on(platform, fn, *args):
    with jax.default_device(device(platform)):
        out = fn(*args)
    with jax.default_device(jax.devices("cpu")[0]):
        want = fn(*args)
    return out, want


def assert_same(out, want, rtol=RTOL, atol=ATOL):
    for o, w in zip(jax.tree.leaves(out), jax.tree.leaves(want), strict=True):
        assert o.dtype == w.dtype and o.shape == w.shape
        np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=rtol, atol=atol)


X = np.array([[0.5, -1.25, 2.0], [np.inf, -0.0, 3.5]], np.float32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_devices_and_device_put(platform):
    d = device(platform)
    assert d.platform == platform
    x = jax.device_put(X, d)
    assert x.devices() == {d}
    np.testing.assert_array_equal(np.asarray(x), X)
    strided = np.arange(24, dtype=np.int32).reshape(4, 6)[::2, ::-3]
    np.testing.assert_array_equal(np.asarray(jax.device_put(strided, d)), strided)
    np.testing.assert_array_equal(np.asarray(jax.device_put(np.float16(-0.0), d)), -0.0)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_jit(platform):
    fn = jax.jit(lambda x: jnp.tanh(x) * 2 + jnp.sum(x[:, :2] ** 2))
    assert_same(*on(platform, fn, np.nan_to_num(X, posinf=7.0)))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_grad_and_vmap(platform):
    def loss(w, x):
        return jnp.mean(jnp.sin(x @ w) ** 2)

    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    x = np.linspace(0, 2, 12, dtype=np.float32).reshape(4, 3)
    # tpusim's DEFAULT matmul precision is bf16 (like a TPU): ask for f32 passes.
    with jax.default_matmul_precision("highest"):
        assert_same(*on(platform, jax.jit(jax.grad(loss)), w, x), rtol=1e-5, atol=1e-6)
        per_row = jax.vmap(lambda r: jnp.dot(r, r) - r.max())
        assert_same(*on(platform, per_row, x))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scan_and_while(platform):
    def cumulative(xs):
        return jax.lax.scan(lambda c, v: (c * 0.5 + v, c), 0.0, xs)

    assert_same(*on(platform, cumulative, np.arange(7, dtype=np.float32)))
    count = jax.jit(
        lambda n: jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2), (0, 1))
    )
    assert_same(*on(platform, count, 10))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_prng_matches_jax(platform):
    # One threefry program (each costs seconds to load: it unrolls to ~10k instructions).
    out, want = on(platform, lambda seed: jax.random.bits(jax.random.key(seed), (6,)), 7)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))  # bits: exact


@pytest.mark.parametrize("platform", PLATFORMS)
def test_donation_consumes_the_argument(platform):
    with jax.default_device(device(platform)):
        step = jax.jit(lambda a, b: (a * 2 + b, b), donate_argnums=0)
        a, b = jnp.arange(4.0), jnp.ones(4)
        out, same_b = step(a, b)
        assert a.is_deleted() and not b.is_deleted()
        np.testing.assert_array_equal(np.asarray(out), [1, 3, 5, 7])
        with pytest.raises(RuntimeError, match="deleted|donated"):
            np.asarray(a)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dtypes_round_trip(platform):
    d = device(platform)
    for dtype in (
        np.bool_,
        np.int8,
        np.uint16,
        np.int64,
        np.float16,
        jnp.bfloat16,
        np.float64,
        np.complex64,
    ):
        with jax.enable_x64(dtype in (np.int64, np.float64)):
            x = np.array([[1, 0], [3, 2]]).astype(dtype)
            got = np.asarray(jax.jit(lambda v: v)(jax.device_put(x, d)))
            np.testing.assert_array_equal(got, x)
            assert got.dtype == x.dtype


@pytest.mark.parametrize("platform", ["hlort_interpreter", "hlort_cpu"])
def test_unsafe_pointer_on_host_memory_backends(platform):
    d = device(platform)
    x = jax.device_put(np.zeros(5, np.float32), d)
    y = jax.device_put(np.ones(5, np.float32), d)
    assert x.unsafe_buffer_pointer() == x.unsafe_buffer_pointer() != 0
    assert x.unsafe_buffer_pointer() != y.unsafe_buffer_pointer()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_platform_dependent_branches_by_platform_name(platform):
    # JAX picks a lax.platform_dependent branch by the lowering platform's name: hlort_* runs its
    # own-name branch, else `default`, never `cpu=` (which may hold XLA:CPU custom calls).
    lax = jax.lax
    x = np.array([0.0, -0.0, 1.5, np.inf, np.nan], np.float32)
    own = jax.jit(
        lambda v: lax.platform_dependent(v, cpu=jnp.sin, default=jnp.tanh, **{platform: jnp.cos})
    )
    other = jax.jit(lambda v: lax.platform_dependent(v, cpu=jnp.sin, default=jnp.tanh))
    with jax.default_device(device(platform)):
        got_own, got_other = np.asarray(own(x)), np.asarray(other(x))
    with np.errstate(invalid="ignore"):  # cos(inf) is NaN, as on the device
        np.testing.assert_allclose(got_own, np.cos(x), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got_other, np.tanh(x), rtol=RTOL, atol=ATOL)
