"""The benchmark workloads: each an hlort module, a NumPy eager function, a JAX function, inputs
and the bytes it must move at least (for the bandwidth floor of memory-bound ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hlort import Builder, examples, shape


@dataclass
class Workload:
    name: str
    module: object
    numpy_fn: Callable
    jax_fn: Callable | None
    inputs: list
    min_bytes: int | None = None  # set for memory-bound workloads


def _c(b, value, dims):
    return b.broadcast(b.constant(np.float32(value)), dims, [])


def reduce_sum_fma(n):
    module, ref = examples.reduce_sum_fma(n)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    return Workload(f"reduce_sum(x+y*z) 2^{n.bit_length() - 1}", module,
                    lambda x, y, z: np.sum(x + y * z), lambda x, y, z: (x + y * z).sum(), xs,
                    3 * 4 * n)  # fmt: skip


def _softmax_module(rows, cols):
    b = Builder("softmax")
    x = b.parameter(shape.array("f32", [rows, cols]))
    mx = b.reduce(x, b.constant(np.float32(-np.inf)), b.scalar_computation("maximum", "f32"), [1])
    e = b.exp(b.subtract(x, b.broadcast(mx, [rows, cols], [0])))
    s = b.reduce(e, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [1])
    return b.build(b.divide(e, b.broadcast(s, [rows, cols], [0])))


def softmax(rows, cols):
    def np_fn(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def jax_fn(x):
        import jax

        return jax.nn.softmax(x, axis=1)

    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    return Workload(f"softmax [{rows},{cols}]", _softmax_module(rows, cols), np_fn, jax_fn, [x],
                    2 * 4 * rows * cols)  # fmt: skip


def matmul_softmax(n):
    module, ref = examples.softmax_relu_matmul(n, n, n)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((n, n)).astype(np.float32) / np.float32(np.sqrt(n)),
            rng.standard_normal((n, n)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32)]  # fmt: skip

    def jax_fn(a, w, bias):
        import jax
        import jax.numpy as jnp

        return jax.nn.softmax(jnp.maximum(a @ w + bias, 0), axis=1)

    return Workload(f"matmul+bias+relu+softmax {n}", module, ref, jax_fn, args)


def layernorm(rows, cols):
    module, ref = examples.layernorm(rows, cols)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((rows, cols)).astype(np.float32),
            rng.standard_normal(cols).astype(np.float32),
            rng.standard_normal(cols).astype(np.float32)]  # fmt: skip

    def jax_fn(x, g, b):
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        import jax.numpy as jnp

        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    return Workload(f"layernorm [{rows},{cols}]", module, ref, jax_fn, args, 2 * 4 * rows * cols)


def gelu(n):
    b = Builder("gelu")
    x = b.parameter(shape.array("f32", [n]))
    inner = b.multiply(_c(b, 0.7978845608, [n]),
                       b.add(x, b.multiply(_c(b, 0.044715, [n]), b.multiply(x, b.multiply(x, x)))))
    out = b.multiply(b.multiply(_c(b, 0.5, [n]), x), b.add(_c(b, 1.0, [n]), b.tanh(inner)))

    def np_fn(x):
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def jax_fn(x):
        import jax.numpy as jnp

        return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    return Workload(f"gelu(tanh) 2^{n.bit_length() - 1}", b.build(out), np_fn, jax_fn, [x], 8 * n)


def chain8(n):
    b = Builder("chain8")
    x = b.parameter(shape.array("f32", [n]))
    y = b.parameter(shape.array("f32", [n]))
    v = b.add(x, y)
    v = b.multiply(v, x)
    v = b.subtract(v, y)
    v = b.maximum(v, _c(b, 0.0, [n]))
    v = b.multiply(v, _c(b, 1.5, [n]))
    v = b.add(v, _c(b, 2.0, [n]))
    v = b.divide(v, _c(b, 3.0, [n]))
    v = b.minimum(v, _c(b, 10.0, [n]))

    def np_fn(x, y):
        v = np.maximum((x + y) * x - y, 0) * np.float32(1.5) + np.float32(2)
        return np.minimum(v / np.float32(3), np.float32(10))

    def jax_fn(x, y):
        import jax.numpy as jnp

        v = jnp.maximum((x + y) * x - y, 0) * 1.5 + 2
        return jnp.minimum(v / 3, 10.0)

    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    return Workload(f"8-op chain 2^{n.bit_length() - 1}", b.build(v), np_fn, jax_fn, xs, 12 * n)


def transpose(n):
    b = Builder("transpose")
    x = b.parameter(shape.array("f32", [n, n]))
    x_np = np.random.default_rng(6).standard_normal((n, n)).astype(np.float32)
    return Workload(f"transpose [{n},{n}]", b.build(b.transpose(x, [1, 0])),
                    lambda x: np.ascontiguousarray(x.T), lambda x: x.T, [x_np],
                    8 * n * n)  # fmt: skip


def row_broadcast(n):
    b = Builder("rowadd")
    x = b.parameter(shape.array("f32", [n, n]))
    r = b.parameter(shape.array("f32", [n]))
    rng = np.random.default_rng(7)
    args = [rng.standard_normal((n, n)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32)]
    return Workload(f"x[{n},{n}] + row[{n}]", b.build(b.add(x, b.broadcast(r, [n, n], [1]))),
                    lambda x, r: x + r, lambda x, r: x + r, args, 8 * n * n)  # fmt: skip


def mlp(batch=256):
    b = Builder("mlp")
    sizes = [784, 1024, 1024, 10]
    x = b.parameter(shape.array("f32", [batch, sizes[0]]))
    ws = [b.parameter(shape.array("f32", [sizes[i], sizes[i + 1]])) for i in range(3)]
    h = x
    for i, w in enumerate(ws):
        h = b.dot(h, w)
        if i < 2:
            h = b.maximum(h, _c(b, 0.0, [batch, sizes[i + 1]]))
    rng = np.random.default_rng(8)
    args = [rng.standard_normal((batch, 784)).astype(np.float32)] + [
        (rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])).astype(np.float32)
        for i in range(3)]  # fmt: skip

    def np_fn(x, w0, w1, w2):
        return np.maximum(np.maximum(x @ w0, 0) @ w1, 0) @ w2

    def jax_fn(x, w0, w1, w2):
        import jax.numpy as jnp

        return jnp.maximum(jnp.maximum(x @ w0, 0) @ w1, 0) @ w2

    return Workload("MLP 256x784-1024-1024-10", b.build(h), np_fn, jax_fn, args)


def all_workloads(quick: bool = False) -> list[Workload]:
    big = 1 << (20 if quick else 24)
    out = [reduce_sum_fma(1 << 16), reduce_sum_fma(1 << 20)]
    if not quick:
        out.append(reduce_sum_fma(1 << 24))
    out += [softmax(4096, 1024), softmax(256, 1024), matmul_softmax(512)]
    if not quick:
        out.append(matmul_softmax(2048))
    out += [layernorm(4096, 1024), gelu(big), mlp(), chain8(big), transpose(4096),
            row_broadcast(4096)]
    return out
