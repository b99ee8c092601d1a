"""Seed programs built with the builder: the demo, the pass tests and the benchmarks share them.

Each returns a verified :class:`~hlort.ir.Module` whose entry takes float arrays and a NumPy
function computing the same thing, so callers can check results.
"""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers, Module


def reduce_sum_fma(n: int, dtype: str = "f32") -> tuple[Module, callable]:
    """``reduce_sum(x + y * z)`` over a vector of ``n``: one fused kernel on a good backend."""
    b = Builder("reduce_sum_fma")
    vec = shape.array(dtype, [n])
    x, y, z = (b.parameter(vec, name) for name in ("x", "y", "z"))
    total = b.add(x, b.multiply(y, z))
    zero = b.constant(np.zeros((), vec.dtype.numpy))
    out = b.reduce(total, zero, b.scalar_computation("add", dtype), [0])
    return b.build(out), lambda x, y, z: np.sum(x + y * z, dtype=x.dtype)


def _row_reduce(b: Builder, x, opcode: str, init: float):
    rows, cols = x.shape.dims
    dt = x.shape.dtype
    k = b.constant(np.array(init, dt.numpy))
    return b.reduce(x, k, b.scalar_computation(opcode, dt), [1])


def softmax_relu_matmul(m: int, k: int, n: int, dtype: str = "f32") -> tuple[Module, callable]:
    """``softmax(relu(a @ w + bias))`` along rows: a dot plus fused elementwise/reduce passes."""
    b = Builder("softmax_relu_matmul")
    a = b.parameter(shape.array(dtype, [m, k]), "a")
    w = b.parameter(shape.array(dtype, [k, n]), "w")
    bias = b.parameter(shape.array(dtype, [n]), "bias")
    dt = a.shape.dtype
    mm = b.dot_general(a, w, DotDimensionNumbers((1,), (0,)))
    biased = b.add(mm, b.broadcast(bias, [m, n], [1]))
    zero = b.broadcast(b.constant(np.zeros((), dt.numpy)), [m, n], [])
    relu = b.maximum(biased, zero)
    row_max = _row_reduce(b, relu, "maximum", -np.inf)
    shifted = b.subtract(relu, b.broadcast(row_max, [m, n], [0]))
    e = b.exp(shifted)
    row_sum = _row_reduce(b, e, "add", 0.0)
    out = b.divide(e, b.broadcast(row_sum, [m, n], [0]))

    def reference(a, w, bias):
        r = np.maximum(a @ w + bias, 0)
        e = np.exp(r - r.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(a.dtype)

    return b.build(out), reference


def layernorm(rows: int, cols: int, eps: float = 1e-5, dtype: str = "f32"):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` along rows."""
    b = Builder("layernorm")
    x = b.parameter(shape.array(dtype, [rows, cols]), "x")
    gamma = b.parameter(shape.array(dtype, [cols]), "gamma")
    beta = b.parameter(shape.array(dtype, [cols]), "beta")
    dt = x.shape.dtype
    inv_n = b.broadcast(b.constant(np.array(1.0 / cols, dt.numpy)), [rows], [])
    mean = b.multiply(_row_reduce(b, x, "add", 0.0), inv_n)
    centered = b.subtract(x, b.broadcast(mean, [rows, cols], [0]))
    var = b.multiply(_row_reduce(b, b.multiply(centered, centered), "add", 0.0), inv_n)
    eps_b = b.broadcast(b.constant(np.array(eps, dt.numpy)), [rows], [])
    inv_std = b.rsqrt(b.add(var, eps_b))
    normed = b.multiply(centered, b.broadcast(inv_std, [rows, cols], [0]))
    out = b.add(
        b.multiply(normed, b.broadcast(gamma, [rows, cols], [1])),
        b.broadcast(beta, [rows, cols], [1]),
    )

    def reference(x, gamma, beta):
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        return ((x - mu) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)

    return b.build(out), reference
