"""Write JAX's own lowerings (``jax.jit(f).lower(*args).as_text()``) of the workloads the cpu
tests compile: softmax, log-softmax, logsumexp, layernorm, causal attention and an MLP forward,
in f32 and bf16. Needs jax; the files it wrote are committed, so the tests run without it.

    python plugins/cpu/tests/jax_programs/generate.py [OUT_DIR] [--large]

``--large`` writes the benchmark sizes instead (softmax/layernorm [4096, 1024], attention with
8 heads, seq 512, d 64, an MLP of batch 256): for measuring, not for committing.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp


def layernorm(x, gamma, beta):
    mean = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta


def causal_attention(q, k, v):
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    n = scores.shape[-1]
    scores = jnp.where(jnp.tril(jnp.ones((n, n), bool)), scores, -jnp.inf)
    return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(scores, -1), v)


def mlp(x, w1, b1, w2, b2):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def programs(large: bool):
    rows, cols = (4096, 1024) if large else (8, 32)
    heads, seq, d = (8, 512, 64) if large else (8, 16, 8)
    batch, n_in, hidden, n_out = (256, 512, 1024, 256) if large else (4, 16, 32, 8)

    def z(*dims):
        return lambda dt: jnp.zeros(dims, dt)

    return {
        "softmax": (lambda x: jax.nn.softmax(x, -1), [z(rows, cols)]),
        "log_softmax": (lambda x: jax.nn.log_softmax(x, -1), [z(rows, cols)]),
        "logsumexp": (lambda x: jax.nn.logsumexp(x, -1), [z(rows, cols)]),
        "layernorm": (layernorm, [z(rows, cols), z(cols), z(cols)]),
        "attention": (causal_attention, [z(heads, seq, d)] * 3),
        "mlp": (mlp, [z(batch, n_in), z(n_in, hidden), z(hidden), z(hidden, n_out), z(n_out)]),
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    for name, (fn, makers) in programs("--large" in sys.argv).items():
        for dt, tag in ((jnp.float32, "f32"), (jnp.bfloat16, "bf16")):
            text = jax.jit(fn).lower(*[m(dt) for m in makers]).as_text()
            with open(os.path.join(out, f"{name}_{tag}.mlir"), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
