"""Writes the JAX-lowered RNN scans test_native_while_dots.py runs (needs jax; the .mlir files
are committed so the tests run without it): ``python plugins/cpu/tests/rnn_scans/generate.py``.

An LSTM and a GRU cell under ``lax.scan`` (7 steps, batch 3, hidden 5), f32 and f64, as
``jax.jit(f).lower(...).as_text()`` prints them: a while whose body holds two dots per step.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

SEQ, BATCH, HIDDEN = 7, 3, 5


def lstm(xs, h0, c0, w, u, bias):
    def cell(carry, x):
        h, c = carry
        z = x @ w + h @ u + bias
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    (h, c), ys = jax.lax.scan(cell, (h0, c0), xs)
    return ys, h, c


def gru(xs, h0, w, u, bias):
    def cell(h, x):
        zx, zh = x @ w + bias, h @ u
        rx, ux, nx = jnp.split(zx, 3, axis=-1)
        rh, uh, nh = jnp.split(zh, 3, axis=-1)
        r, z = jax.nn.sigmoid(rx + rh), jax.nn.sigmoid(ux + uh)
        h = (1 - z) * jnp.tanh(nx + r * nh) + z * h
        return h, h

    h, ys = jax.lax.scan(cell, h0, xs)
    return ys, h


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for dtype in (np.float32, np.float64):
        x = np.zeros((SEQ, BATCH, HIDDEN), dtype)
        h = np.zeros((BATCH, HIDDEN), dtype)
        specs = {
            "lstm": (
                lstm,
                [
                    x,
                    h,
                    h,
                    np.zeros((HIDDEN, 4 * HIDDEN), dtype),
                    np.zeros((HIDDEN, 4 * HIDDEN), dtype),
                    np.zeros(4 * HIDDEN, dtype),
                ],
            ),
            "gru": (
                gru,
                [
                    x,
                    h,
                    np.zeros((HIDDEN, 3 * HIDDEN), dtype),
                    np.zeros((HIDDEN, 3 * HIDDEN), dtype),
                    np.zeros(3 * HIDDEN, dtype),
                ],
            ),
        }
        for name, (fn, args) in specs.items():
            text = jax.jit(fn).lower(*args).as_text()
            path = os.path.join(here, f"{name}_scan_{np.dtype(dtype).name}.mlir")
            with open(path, "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
