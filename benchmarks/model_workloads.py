"""Model workloads, written in plain JAX as models write them: causal attention, an MLP training
step (value_and_grad + SGD), a small CNN forward with BatchNorm, a pre-LN Transformer block, an
LSTM over a ``lax.scan`` and an AdamW training step. They have no builder-made module: without
jax they are skipped. Parameters are flat positional arguments so a lowering's parameters are
the inputs.
"""

from __future__ import annotations

import numpy as np
from workloads import Arg, Workload

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:
    jax = jnp = lax = None


def _causal_attention(q, k, v, batch_dims: str):
    """softmax(q k^T / sqrt(d) + causal mask) v; ``batch_dims`` are the einsum's leading
    letters (heads, or batch and heads)."""
    seq, d = q.shape[-2], q.shape[-1]
    scores = jnp.einsum(f"{batch_dims}qd,{batch_dims}kd->{batch_dims}qk", q, k) / np.sqrt(d)
    mask = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    return jnp.einsum(
        f"{batch_dims}qk,{batch_dims}kd->{batch_dims}qd", jax.nn.softmax(scores, axis=-1), v
    )


def attention(heads, seq, d):
    return Workload(
        f"causal attention h{heads} s{seq} d{d}",
        lambda q, k, v: _causal_attention(q, k, v, "h"),
        [Arg((heads, seq, d))] * 3,
        kind="model",
        seed=10,
    )


def _dense_layers(x, flat):
    """relu(x @ w + b) per (w, b) pair of ``flat``, no relu after the last."""
    pairs = list(zip(flat[::2], flat[1::2], strict=True))
    for i, (w, b) in enumerate(pairs):
        x = x @ w + b
        if i < len(pairs) - 1:
            x = jax.nn.relu(x)
    return x


def _cross_entropy(logits, labels):
    one_hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    return -jnp.mean(jnp.sum(one_hot * jax.nn.log_softmax(logits), axis=-1))


def _dense_args(sizes):
    out = []
    for fan_in, fan_out in zip(sizes, sizes[1:], strict=False):
        out += [Arg((fan_in, fan_out), scale=fan_in**-0.5), Arg((fan_out,), scale=0.1)]
    return out


def mlp_train_step(batch, sizes, lr=0.01):
    def step(x, labels, *params):
        loss_fn = lambda p: _cross_entropy(_dense_layers(x, p), labels)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return (loss, *(p - lr * g for p, g in zip(params, grads, strict=True)))

    args = [Arg((batch, sizes[0])), Arg((batch,), "int32", high=sizes[-1])] + _dense_args(sizes)
    name = f"MLP train step (SGD) {batch}x" + "-".join(map(str, sizes))
    return Workload(name, step, args, kind="model", seed=11)


def cnn_forward(batch, hw, channels=(16, 32), classes=10):
    """conv -> BatchNorm (batch statistics, as in training) -> relu -> strided conv -> relu ->
    max pool -> dense."""
    c1, c2 = channels
    dn = ("NHWC", "HWIO", "NHWC")

    def forward(x, k1, b1, gamma, beta, k2, b2, w, b):
        h = lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn) + b1
        mean = h.mean(axis=(0, 1, 2))
        var = ((h - mean) ** 2).mean(axis=(0, 1, 2))
        h = jax.nn.relu((h - mean) * lax.rsqrt(var + 1e-5) * gamma + beta)
        h = jax.nn.relu(lax.conv_general_dilated(h, k2, (2, 2), "SAME", dimension_numbers=dn) + b2)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return h.reshape(batch, -1) @ w + b

    flat = (hw // 4) * (hw // 4) * c2
    args = [
        Arg((batch, hw, hw, 3)),
        Arg((3, 3, 3, c1), scale=27**-0.5),
        Arg((c1,), scale=0.1),
        Arg((c1,), value=1.0),
        Arg((c1,), scale=0.1),
        Arg((3, 3, c1, c2), scale=(9 * c1) ** -0.5),
        Arg((c2,), scale=0.1),
        Arg((flat, classes), scale=flat**-0.5),
        Arg((classes,), scale=0.1),
    ]
    return Workload(
        f"CNN forward {batch}x{hw}x{hw}x3 conv{c1}-bn-conv{c2}-pool-dense",
        forward,
        args,
        kind="model",
        seed=12,
    )


def _layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * g + b


def transformer_block(batch, seq, d, heads, hidden):
    dh = d // heads

    def block(x, g1, be1, wqkv, wo, g2, be2, w1, b1, w2, b2):
        h = _layer_norm(x, g1, be1) @ wqkv
        q, k, v = (
            t.reshape(batch, seq, heads, dh).transpose(0, 2, 1, 3) for t in jnp.split(h, 3, axis=-1)
        )
        o = _causal_attention(q, k, v, "bh").transpose(0, 2, 1, 3).reshape(batch, seq, d)
        x = x + o @ wo
        return x + jax.nn.gelu(_layer_norm(x, g2, be2) @ w1 + b1) @ w2 + b2

    ln = [Arg((d,), value=1.0), Arg((d,), scale=0.1)]
    args = (
        [Arg((batch, seq, d))]
        + ln
        + [Arg((d, 3 * d), scale=d**-0.5), Arg((d, d), scale=d**-0.5)]
        + ln
        + [
            Arg((d, hidden), scale=d**-0.5),
            Arg((hidden,), scale=0.1),
            Arg((hidden, d), scale=hidden**-0.5),
            Arg((d,), scale=0.1),
        ]
    )
    return Workload(
        f"Transformer block b{batch} s{seq} d{d} h{heads} mlp{hidden}",
        block,
        args,
        kind="model",
        seed=13,
    )


def lstm_scan(steps, batch, features, hidden):
    def run(xs, wx, wh, b, h0, c0):
        def cell(carry, x):
            h, c = carry
            i, f, g, o = jnp.split(x @ wx + h @ wh + b, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        (h, c), hs = lax.scan(cell, (h0, c0), xs)
        return hs, h, c

    args = [
        Arg((steps, batch, features)),
        Arg((features, 4 * hidden), scale=features**-0.5),
        Arg((hidden, 4 * hidden), scale=hidden**-0.5),
        Arg((4 * hidden,), scale=0.1),
        Arg((batch, hidden), scale=0.1),
        Arg((batch, hidden), scale=0.1),
    ]
    return Workload(
        f"LSTM scan T{steps} b{batch} in{features} h{hidden}", run, args, kind="model", seed=14
    )


def adamw_train_step(batch, sizes, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    """LayerNorm -> dense+relu stack -> cross-entropy; one AdamW update of every parameter."""
    n_dense = 2 * (len(sizes) - 1)

    def step(x, labels, count, *state):
        n = 2 + n_dense
        params, mus, nus = state[:n], state[n : 2 * n], state[2 * n :]

        def loss_fn(p):
            return _cross_entropy(_dense_layers(_layer_norm(x, p[0], p[1]), p[2:]), labels)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        t = count + 1
        new_p, new_m, new_v = [], [], []
        for p, g, m, v in zip(params, grads, mus, nus, strict=True):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            update = (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps) + wd * p
            new_p.append(p - lr * update)
            new_m.append(m)
            new_v.append(v)
        return (loss, t, *new_p, *new_m, *new_v)

    params = [Arg((sizes[0],), value=1.0), Arg((sizes[0],), scale=0.1)] + _dense_args(sizes)
    mus = [Arg(a.shape, scale=1e-3) for a in params]
    nus = [Arg(a.shape, scale=1e-6, positive=True) for a in params]
    args = (
        [Arg((batch, sizes[0])), Arg((batch,), "int32", high=sizes[-1]), Arg((), value=3.0)]
        + params
        + mus
        + nus
    )
    name = f"AdamW train step LN+{batch}x" + "-".join(map(str, sizes))
    return Workload(name, step, args, kind="model", seed=15)


def model_workloads(quick: bool = False) -> list[Workload]:
    if quick:
        return [
            attention(2, 16, 8),
            mlp_train_step(8, [16, 32, 10]),
            cnn_forward(2, 8, (4, 8)),
            transformer_block(2, 8, 16, 2, 32),
            lstm_scan(4, 2, 8, 16),
            adamw_train_step(8, [16, 32, 10]),
        ]
    return [
        attention(8, 512, 64),
        mlp_train_step(128, [784, 512, 512, 10]),
        cnn_forward(16, 32),
        transformer_block(4, 128, 256, 4, 1024),
        lstm_scan(64, 16, 32, 128),
        adamw_train_step(64, [256, 512, 10]),
    ]
