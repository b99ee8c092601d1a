"""Programs a wider sample of JAX's own lax tests (JAX_NUM_GENERATED_CASES=4 and 10) found
wrong on hlort, each checked on every hlort platform against JAX's CPU backend; written here
from the finding, not copied from JAX's tests."""

import numpy as np
import pytest
from jax_platforms import PLATFORMS, device, jax  # skips the module without jax

jnp = jax.numpy
lax = jax.lax


def on(platform, fn, *args):
    """``fn(*args)`` on ``platform`` and on JAX's CPU backend."""
    with jax.default_device(device(platform)):
        out = fn(*args)
    with jax.default_device(jax.devices("cpu")[0]):
        want = fn(*args)
    return out, want


INTEGER_INTO_FLOAT = [
    (np.int8, np.float32),
    (np.int8, jnp.bfloat16),
    (np.int16, np.float16),
    (np.int32, np.float32),
]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype, preferred", INTEGER_INTO_FLOAT)
def test_integer_contractions_into_a_float_preferred_type(platform, dtype, preferred):
    """lax.conv / lax.dot with integer operands and preferred_element_type=float were rejected
    by the shape rule (testConvPreferredElement); XLA converts the operands to float."""
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 5, (2, 3, 9, 10)).astype(dtype)
    k = rng.integers(-5, 5, (4, 3, 4, 5)).astype(dtype)
    w = rng.integers(-5, 5, (90, 7)).astype(dtype)

    def fn(x, k, w):
        conv = lax.conv(x, k, (1, 1), "VALID", preferred_element_type=preferred)
        dot = lax.dot(x.reshape(6, 90), w, preferred_element_type=preferred)
        return conv, dot

    with jax.default_matmul_precision("highest"):
        out, want = on(platform, jax.jit(fn), x, k, w)
    for o, w in zip(out, want, strict=True):
        assert o.dtype == w.dtype == np.dtype(preferred)
        # small integer sums: exact in f32, rounded once to the result type on both sides
        np.testing.assert_array_equal(np.asarray(o, np.float64), np.asarray(w, np.float64))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_split_into_empty_pieces_and_its_gradient(platform):
    """lax.split of an empty array into empty pieces: its transpose concatenates empty
    cotangents, and the cpu plugin's concatenate kernel had no operand to read
    (testSplitGrad with sizes [0, 0, 0]: INTERNAL, an AttributeError in the plugin)."""
    x = np.zeros((0, 3), np.float16)

    def fn(x):
        pieces, vjp = jax.vjp(lambda x: lax.split(x, (0, 0, 0), 0), x)
        return pieces, vjp(pieces)[0], lax.concatenate([x, x, x], 0)

    out, want = on(platform, jax.jit(fn), x)
    for o, w in zip(jax.tree.leaves(out), jax.tree.leaves(want), strict=True):
        assert o.dtype == w.dtype and o.shape == w.shape
