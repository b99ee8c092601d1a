"""Regenerates the optimized XLA dumps beside this file (needs jax; the tests do not).

    pip install "jax[cpu]==0.10.2" && python tests/text/xla_dumps/generate.py

Each program is compiled by XLA:CPU; ``NAME.hlo`` is ``jax.jit(f).lower(*args).compile()
.as_text()`` (stack-frame tables, metadata, scheduled, layouts, XLA's fusions) and ``NAME.npz``
holds the arguments (``arg0``...) and what XLA computed (``out0``...).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")
HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(19)


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def mlp(x, w, b):
    return jnp.tanh(x @ w + b).sum()


def loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: c * 1.5 + i, x)


def cond_sort(x):
    return jax.lax.cond(x.sum() > 0, jnp.sort, lambda y: -y, x)


def inner(x):
    return jnp.sin(x) * 2


def middle(x):
    return inner(x) + 1


def nested_calls(x):
    a = middle(x)
    b = jnp.cos(x)
    c = inner(b)
    return (a + c).sum()


def top_k(x):
    return jax.lax.top_k(x, 4)  # XLA:CPU keeps a TopK custom call


_TIES = np.array(
    [[1, np.nan, 3, 3, -np.inf, -0.0, 0.0], [5, 4, 3, 2, 1, 0, -1], [2, 2, 2, 2, 2, 2, 2]],
    np.float32,
)

PROGRAMS = {
    "softmax": (softmax, [_f32(4, 8)]),
    "mlp": (mlp, [_f32(4, 8), _f32(8, 16), _f32(16)]),
    "loop": (loop, [_f32(3)]),
    "cond_sort": (cond_sort, [np.abs(_f32(6))]),
    "nested_calls": (nested_calls, [_f32(4)]),
    "top_k": (top_k, [_TIES]),
}


def main() -> None:
    for name, (fn, args) in PROGRAMS.items():
        jitted = jax.jit(fn)
        text = jitted.lower(*args).compile().as_text()
        (HERE / f"{name}.hlo").write_text(text.replace(str(HERE) + "/", ""))
        outs = jax.tree_util.tree_leaves(jitted(*args))
        arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        arrays.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        np.savez(HERE / f"{name}.npz", **arrays)
        print(f"{name}: {len(text)} characters")


if __name__ == "__main__":
    main()
