"""The benchmark's kernel workloads: each a JAX function (what both sides run when jax is
installed), its inputs, a NumPy eager version, and the builder-made hlort module that stands in
for JAX's lowering when jax is absent. Model workloads (attention, training steps, CNN,
Transformer block, LSTM, AdamW) are in model_workloads.py and need jax: without it they are
listed but skipped.

Inputs are described, not stored (``Arg``): JAX lowers from shapes alone, so a run can lower
and compile every program before it allocates the large inputs, and each row's inputs live only
while that row is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hlort import Builder, examples, shape

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # the builder modules stand in; model workloads are left out
    jax = jnp = None


@dataclass(frozen=True)
class Arg:
    """One input: its shape and dtype and how its values are drawn (seeded)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    scale: float = 1.0  # normal(0, scale); integer args draw uniformly from [0, high)
    high: int = 0
    positive: bool = False  # |normal| (second moments, variances)
    value: float | None = None  # a constant fill (a step counter)

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.value is not None:
            return np.full(self.shape, self.value, self.dtype)
        if np.issubdtype(np.dtype(self.dtype), np.integer):
            return rng.integers(0, self.high, self.shape).astype(self.dtype)
        x = rng.standard_normal(self.shape) * self.scale
        return (np.abs(x) if self.positive else x).astype(self.dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Workload:
    """``jax_fn`` takes the inputs as flat positional arrays (pytrees flattened by the caller)
    and returns an array or a tuple of arrays, so its lowering's parameters are ``args``."""

    name: str
    jax_fn: Callable
    args: list[Arg]
    numpy_fn: Callable | None = None
    builder: Callable[[], object] | None = None  # the module used when jax is absent
    min_bytes: int | None = None  # compulsory traffic of a memory-bound workload
    kind: str = "kernel"  # "kernel" | "model"
    seed: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)  # "bandwidth-goal", "matmul-alone" ...

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [a.make(rng) for a in self.args]


def _c(b, value, dims):
    return b.broadcast(b.constant(np.float32(value)), dims, [])


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}"


def reduce_sum_fma(n):
    return Workload(
        f"reduce_sum(x+y*z) {_pow2(n)}",
        lambda x, y, z: jnp.sum(x + y * z),
        [Arg((n,))] * 3,
        lambda x, y, z: np.sum(x + y * z),
        lambda: examples.reduce_sum_fma(n)[0],
        3 * 4 * n,
        seed=0,
    )


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

    return Workload(
        f"softmax [{rows},{cols}]",
        lambda x: jax.nn.softmax(x, axis=1),
        [Arg((rows, cols))],
        np_fn,
        lambda: _softmax_module(rows, cols),
        2 * 4 * rows * cols,
        seed=1,
        tags=("bandwidth-goal",),
    )


def matmul_softmax(n):
    def jax_fn(a, w, bias):
        return jax.nn.softmax(jnp.maximum(a @ w + bias, 0), axis=1)

    module, ref = examples.softmax_relu_matmul(n, n, n)
    return Workload(
        f"matmul+bias+relu+softmax {n}",
        jax_fn,
        [Arg((n, n), scale=1 / np.sqrt(n)), Arg((n, n)), Arg((n,))],
        ref,
        lambda: module,
        seed=2,
        tags=(f"seed-matmul-{n}",),
    )


def _matmul_module(n):
    b = Builder("matmul")
    a = b.parameter(shape.array("f32", [n, n]))
    w = b.parameter(shape.array("f32", [n, n]))
    return b.build(b.dot(a, w))


def matmul(n):
    """The matmul of ``matmul_softmax(n)`` alone: the goal compares the two."""
    return Workload(
        f"matmul {n} (alone)",
        lambda a, w: a @ w,
        [Arg((n, n), scale=1 / np.sqrt(n)), Arg((n, n))],
        lambda a, w: a @ w,
        lambda: _matmul_module(n),
        seed=2,
        tags=(f"matmul-alone-{n}",),
    )


def layernorm(rows, cols):
    def jax_fn(x, g, b):
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    module, ref = examples.layernorm(rows, cols)
    return Workload(
        f"layernorm [{rows},{cols}]",
        jax_fn,
        [Arg((rows, cols)), Arg((cols,)), Arg((cols,))],
        ref,
        lambda: module,
        2 * 4 * rows * cols,
        seed=3,
        tags=("bandwidth-goal",),
    )


def _gelu_module(n):
    b = Builder("gelu")
    x = b.parameter(shape.array("f32", [n]))
    inner = b.multiply(
        _c(b, 0.7978845608, [n]),
        b.add(x, b.multiply(_c(b, 0.044715, [n]), b.multiply(x, b.multiply(x, x)))),
    )
    return b.build(
        b.multiply(b.multiply(_c(b, 0.5, [n]), x), b.add(_c(b, 1.0, [n]), b.tanh(inner)))
    )


def gelu(n):
    def np_fn(x):
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def jax_fn(x):
        return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    return Workload(
        f"gelu(tanh) {_pow2(n)}", jax_fn, [Arg((n,))], np_fn, lambda: _gelu_module(n), 8 * n, seed=4
    )


def _chain8_module(n):
    b = Builder("chain8")
    x = b.parameter(shape.array("f32", [n]))
    y = b.parameter(shape.array("f32", [n]))
    v = b.subtract(b.multiply(b.add(x, y), x), y)
    v = b.add(b.multiply(b.maximum(v, _c(b, 0.0, [n])), _c(b, 1.5, [n])), _c(b, 2.0, [n]))
    return b.build(b.minimum(b.divide(v, _c(b, 3.0, [n])), _c(b, 10.0, [n])))


def chain8(n):
    def np_fn(x, y):
        v = np.maximum((x + y) * x - y, 0) * np.float32(1.5) + np.float32(2)
        return np.minimum(v / np.float32(3), np.float32(10))

    def jax_fn(x, y):
        v = jnp.maximum((x + y) * x - y, 0) * 1.5 + 2
        return jnp.minimum(v / 3, 10.0)

    return Workload(
        f"8-op chain {_pow2(n)}",
        jax_fn,
        [Arg((n,))] * 2,
        np_fn,
        lambda: _chain8_module(n),
        12 * n,
        seed=5,
    )


def _transpose_module(n):
    b = Builder("transpose")
    return b.build(b.transpose(b.parameter(shape.array("f32", [n, n])), [1, 0]))


def transpose(n):
    return Workload(
        f"transpose [{n},{n}]",
        lambda x: x.T,
        [Arg((n, n))],
        lambda x: np.ascontiguousarray(x.T),
        lambda: _transpose_module(n),
        8 * n * n,
        seed=6,
    )


def _row_broadcast_module(n):
    b = Builder("rowadd")
    x = b.parameter(shape.array("f32", [n, n]))
    r = b.parameter(shape.array("f32", [n]))
    return b.build(b.add(x, b.broadcast(r, [n, n], [1])))


def row_broadcast(n):
    return Workload(
        f"x[{n},{n}] + row[{n}]",
        lambda x, r: x + r,
        [Arg((n, n)), Arg((n,))],
        lambda x, r: x + r,
        lambda: _row_broadcast_module(n),
        8 * n * n,
        seed=7,
    )


def _mlp_module(batch, sizes):
    b = Builder("mlp")
    h = b.parameter(shape.array("f32", [batch, sizes[0]]))
    ws = [b.parameter(shape.array("f32", [sizes[i], sizes[i + 1]])) for i in range(3)]
    for i, w in enumerate(ws):
        h = b.dot(h, w)
        if i < 2:
            h = b.maximum(h, _c(b, 0.0, [batch, sizes[i + 1]]))
    return b.build(h)


def mlp(batch, sizes):
    def np_fn(x, w0, w1, w2):
        return np.maximum(np.maximum(x @ w0, 0) @ w1, 0) @ w2

    def jax_fn(x, w0, w1, w2):
        return jnp.maximum(jnp.maximum(x @ w0, 0) @ w1, 0) @ w2

    args = [Arg((batch, sizes[0]))] + [
        Arg((sizes[i], sizes[i + 1]), scale=sizes[i] ** -0.5) for i in range(3)
    ]
    name = f"MLP {batch}x" + "-".join(map(str, sizes))
    return Workload(name, jax_fn, args, np_fn, lambda: _mlp_module(batch, sizes), seed=8)


def kernel_workloads(quick: bool = False) -> list[Workload]:
    """The suite's kernels, with the seed's matmul+softmax next to the matmul alone."""
    if quick:  # tiny sizes: the CI smoke test runs every row in seconds
        return [
            reduce_sum_fma(1 << 10),
            softmax(64, 128),
            matmul_softmax(32),
            matmul(32),
            layernorm(64, 128),
            gelu(1 << 10),
            chain8(1 << 10),
            transpose(64),
            row_broadcast(64),
            mlp(8, [32, 64, 64, 10]),
        ]
    big = 1 << 24
    return [
        reduce_sum_fma(1 << 16),
        reduce_sum_fma(1 << 20),
        reduce_sum_fma(big),
        softmax(4096, 1024),
        softmax(256, 1024),
        matmul_softmax(512),
        matmul(512),
        matmul_softmax(2048),
        matmul(2048),
        layernorm(4096, 1024),
        gelu(big),
        mlp(256, [784, 1024, 1024, 10]),
        chain8(big),
        transpose(4096),
        row_broadcast(4096),
    ]


def all_workloads(quick: bool = False) -> list[Workload]:
    """Kernels, then the model workloads (listed without jax too: their rows say skipped)."""
    from model_workloads import model_workloads

    return kernel_workloads(quick) + model_workloads(quick)
