"""Writes the real-program corpus: programs as JAX, flax, optax and equinox lower them.

    .venv/bin/pip install "jax[cpu]==0.10.2" flax optax equinox
    .venv/bin/python tests/real_programs/generate.py [NAME ...]

For each program, a folder ``programs/NAME`` with ``module.mlir`` (``jax.jit(f).lower(*args)
.as_text()``), ``module.hlo`` where the HLO route is worth testing too, ``inputs.npz``
(``arg0..``: the flattened arguments) and ``expected.npz`` (``out0..``: JAX's CPU results,
flattened). Shapes are small so the committed corpus stays well under a megabyte; the test
(``test_real_programs.py``) needs none of these libraries. Everything is seeded: running it
again writes the same programs (up to JAX's version).
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _normal(shape, seed=0, dtype=np.float32):
    return _rng(seed).standard_normal(shape).astype(dtype)


def _spd(n, seed=0, batch=(), dtype=np.float32):
    a = _rng(seed).standard_normal((*batch, n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _rng(seed + 1).standard_normal((*batch, n, n))
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return spd.astype(dtype)


def programs():
    """name -> (function, args, write_hlo, lowering_platforms or None)."""
    import jax
    import jax.numpy as jnp

    out = {}

    def add(name, fn, *args, hlo=False, platforms=None, x64=False):
        out[name] = (fn, args, hlo, platforms, x64)

    # -- numerics of everyday layers --------------------------------------------------------
    x = _normal((3, 10))
    add("log_softmax", jax.nn.log_softmax, x)
    add("softmax", jax.nn.softmax, x)
    add("logsumexp", lambda v: jax.nn.logsumexp(v, axis=-1), x)
    add("gelu", jax.nn.gelu, _normal((4, 8), 1))
    add(
        "cross_entropy",
        lambda logits, labels: (
            -jnp.mean(jnp.sum(jax.nn.one_hot(labels, 10) * jax.nn.log_softmax(logits), -1))
        ),
        _normal((6, 10), 2),
        np.array([1, 3, 0, 9, 4, 4], np.int32),
    )
    q, k, v = _normal((2, 6, 8), 3), _normal((2, 6, 8), 4), _normal((2, 6, 8), 5)

    def attention(q, k, v):
        scores = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(8.0).astype(np.float32)
        mask = jnp.tril(jnp.ones((6, 6), bool))
        scores = jnp.where(mask, scores, -1e9)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores), v)

    add("causal_attention", attention, q, k, v)
    add("cumsum", lambda v: jnp.cumsum(v, axis=1), _normal((4, 7), 6))
    add("sort", lambda v: jnp.sort(v, axis=-1), _normal((3, 9), 7))
    add("argsort", lambda v: jnp.argsort(v, axis=-1), _normal((3, 9), 8))
    add("top_k", lambda v: jax.lax.top_k(v, 3), _normal((4, 9), 9))
    add(
        "layer_norm_jnp",
        lambda v: (v - v.mean(-1, keepdims=True)) / jnp.sqrt(v.var(-1, keepdims=True) + 1e-5),
        _normal((5, 16), 10),
    )

    # -- jax.random --------------------------------------------------------------------------
    key = np.asarray(jax.random.PRNGKey(42))
    add("random_normal", lambda k: jax.random.normal(k, (4, 5)), key)
    add("random_uniform", lambda k: jax.random.uniform(k, (4, 5)), key)
    add("random_gamma", lambda k: jax.random.gamma(k, 2.5, (3,)), key, hlo=True)
    add(
        "random_categorical",
        lambda k, logits: jax.random.categorical(k, logits),
        key,
        _normal((4, 6), 11),
    )
    add("random_permutation", lambda k: jax.random.permutation(k, 10), key)
    add("random_bernoulli", lambda k: jax.random.bernoulli(k, 0.3, (6, 4)), key)

    # -- jnp.linalg (LAPACK custom calls on CPU) -----------------------------------------------
    a = _spd(4, 12)
    g = _normal((4, 4), 13) + 4 * np.eye(4, dtype=np.float32)
    add("linalg_cholesky", jnp.linalg.cholesky, a, hlo=True)
    add("linalg_cholesky_batched", jnp.linalg.cholesky, _spd(3, 14, (2,)))
    add("linalg_qr", jnp.linalg.qr, _normal((5, 3), 15))
    add("linalg_qr_complete", lambda m: jnp.linalg.qr(m, mode="complete"), _normal((4, 3), 16))

    def eigh(m):
        w, vecs = jnp.linalg.eigh(m)
        return w, (vecs * w) @ vecs.T, jnp.abs(vecs)  # sign-free views of the vectors

    add("linalg_eigh", eigh, a)

    def eigh_c(m):
        w, vecs = jnp.linalg.eigh(m)
        return w, (vecs * w) @ jnp.conj(vecs.T), jnp.abs(vecs)

    add("linalg_eigh_complex", eigh_c, _spd(3, 17, dtype=np.complex64))

    def svd(m):
        u, s, vt = jnp.linalg.svd(m, full_matrices=False)
        return s, (u * s) @ vt, jnp.abs(u), jnp.abs(vt)

    add("linalg_svd", svd, _normal((5, 3), 18))

    def svd_gesvd(m):
        from jax._src.lax.linalg import SvdAlgorithm

        u, s, vt = jax.lax.linalg.svd(m, full_matrices=False, algorithm=SvdAlgorithm.QR)
        return s, (u * s) @ vt, jnp.abs(u), jnp.abs(vt)

    add("linalg_svd_gesvd", svd_gesvd, _normal((5, 3), 28))
    add("linalg_svd_values", lambda m: jnp.linalg.svd(m, compute_uv=False), _normal((4, 4), 19))
    add("linalg_solve", jnp.linalg.solve, g, _normal((4, 2), 20))
    add("linalg_inv", jnp.linalg.inv, g)
    add("linalg_det", jnp.linalg.det, g)
    add("linalg_slogdet", jnp.linalg.slogdet, _normal((4, 4), 21))
    add(
        "linalg_triangular_solve",
        lambda t, b: jax.scipy.linalg.solve_triangular(t, b, lower=True),
        np.tril(g) + 0,
        _normal((4, 3), 22),
    )
    add("linalg_lu", jax.scipy.linalg.lu, g)
    add(
        "linalg_solve_f64",
        jnp.linalg.solve,
        g.astype(np.float64),
        _normal((4, 2), 23, np.float64),
        x64=True,
    )
    add(
        "linalg_qr_c128",
        jnp.linalg.qr,
        (_normal((4, 3), 24) + 1j * _normal((4, 3), 25)).astype(np.complex128),
        x64=True,
    )

    _nonsymmetric_linalg(add)

    def eigh_tpu(m):
        w, vecs = jnp.linalg.eigh(m)
        return w, (vecs * w) @ vecs.T

    add("linalg_eigh_tpu_lowering", eigh_tpu, _spd(3, 26), platforms=("tpu",))
    add("linalg_svd_tpu_lowering", svd, _normal((4, 4), 27), platforms=("tpu",))
    _framework_programs(add)
    return out


def _nonsymmetric(seed, dtype=np.float32, batch=()):
    """S D S^-1 with S near orthogonal and D's eigenvalues well apart (a conjugate pair for a
    real D): eigen- and Schur vectors well conditioned, so two LAPACKs agree to a few eps."""
    rng = _rng(seed)
    d = np.zeros((4, 4))
    d[:2, :2] = [[1.0, 2.0], [-2.0, 1.0]]
    d[2, 2], d[3, 3] = 4.0, -3.0
    d += np.triu(0.3 * rng.standard_normal((4, 4)), 2)
    q = np.linalg.qr(rng.standard_normal((*batch, 4, 4)))[0]
    s = q + 0.1 * rng.standard_normal((*batch, 4, 4))
    a = s @ d @ np.linalg.inv(s)
    if np.dtype(dtype).kind == "c":
        a = a + 0.5j * np.diag([1.0, -1.0, 2.0, 0.5])
    return a.astype(dtype)


def _nonsymmetric_linalg(add):
    """geev, gees, gehrd, sytrd/hetrd and gtsv programs, returning what is unique: eigenvalues,
    |eigenvectors| (LAPACK's normalisation fixes them up to a sign), the Schur form's diagonal
    and Q T Q^H, and the Hessenberg and tridiagonal reductions (deterministic reflectors)."""
    import jax
    import jax.numpy as jnp

    def eig(m):
        w, v = jnp.linalg.eig(m)
        return w, jnp.abs(v)

    add("linalg_eig", eig, _nonsymmetric(40))
    add("linalg_eig_c128", eig, _nonsymmetric(41, np.complex128), x64=True)
    add("linalg_eigvals_batched", jnp.linalg.eigvals, _nonsymmetric(42, np.float64, (2,)), x64=True)

    def schur(m):  # a real 2x2 block's rotation is free, so only these are unique
        t, q = jax.scipy.linalg.schur(m)
        return jnp.diagonal(t, axis1=-2, axis2=-1), q @ t @ jnp.conj(jnp.swapaxes(q, -1, -2))

    def schur_complex(m):  # Q's columns carry a free phase each: |T| is unique
        t, q = jax.scipy.linalg.schur(m)
        return (
            jnp.diagonal(t, axis1=-2, axis2=-1),
            q @ t @ jnp.conj(jnp.swapaxes(q, -1, -2)),
            jnp.abs(t),
        )

    add("linalg_eig_c64_batched", eig, _nonsymmetric(56, np.complex64, (2,)))
    add("linalg_eig_empty_batch", eig, np.zeros((0, 3, 3), np.float32))
    add("linalg_schur", schur, _nonsymmetric(43))
    add("linalg_schur_f64_batched", schur, _nonsymmetric(57, np.float64, (2,)), x64=True)
    add("linalg_schur_0x0", schur, np.zeros((0, 0), np.float64), x64=True)
    add("linalg_schur_c64", schur_complex, _nonsymmetric(44, np.complex64))
    add(
        "linalg_hessenberg",
        lambda m: jax.scipy.linalg.hessenberg(m, calc_q=True),
        _normal((4, 4), 45, np.float64),
        x64=True,
    )
    add(
        "linalg_hessenberg_c64_batched",
        lambda m: jax.scipy.linalg.hessenberg(m, calc_q=True),
        (_normal((2, 3, 3), 58) + 1j * _normal((2, 3, 3), 59)).astype(np.complex64),
    )
    add("linalg_tridiagonal", jax.lax.linalg.tridiagonal, _spd(4, 46))
    add(
        "linalg_tridiagonal_f64_batched",
        jax.lax.linalg.tridiagonal,
        _spd(4, 60, (2,), np.float64),
        x64=True,
    )
    add(
        "linalg_tridiagonal_upper_c128",
        lambda m: jax.lax.linalg.tridiagonal(m, lower=False),
        _spd(4, 47, dtype=np.complex128),
        x64=True,
    )
    dl, du = _normal((2, 5), 48), _normal((2, 5), 49)
    d = (4 + np.abs(_normal((2, 5), 50))).astype(np.float32)
    add(
        "linalg_tridiagonal_solve",
        jax.lax.linalg.tridiagonal_solve,
        dl,
        d,
        du,
        _normal((2, 5, 3), 51),
    )
    empty = np.zeros((0, 4), np.float32)
    add(
        "linalg_tridiagonal_solve_empty_batch",
        jax.lax.linalg.tridiagonal_solve,
        empty,
        empty,
        empty,
        np.zeros((0, 4, 2), np.float32),
    )
    c = (_normal((5,), 52) + 1j * _normal((5,), 53)).astype(np.complex128)
    add(
        "linalg_tridiagonal_solve_c128",
        jax.lax.linalg.tridiagonal_solve,
        c,
        c + 4,
        np.conj(c),
        (_normal((5, 2), 54) + 1j * _normal((5, 2), 55)).astype(np.complex128),
        x64=True,
    )


def _framework_programs(add):
    """flax, equinox and optax programs (skipped, with a note, when a library is missing)."""
    import jax
    import jax.numpy as jnp

    try:
        import flax.linen as nn
        import optax
    except ImportError as err:
        print(f"skipping flax/optax programs: {err}", file=sys.stderr)
        return

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, v):
            v = nn.relu(nn.Dense(32)(v))
            return nn.Dense(10)(v)

    x = _normal((8, 16), 30)
    labels = np.array([1, 0, 3, 9, 2, 2, 7, 5], np.int32)
    mlp = MLP()
    params = mlp.init(jax.random.PRNGKey(0), x)
    add("flax_mlp", mlp.apply, params, x)

    def loss(p, v, y):
        logits = mlp.apply(p, v)
        return -jnp.mean(jnp.sum(jax.nn.one_hot(y, 10) * jax.nn.log_softmax(logits), -1))

    add("flax_mlp_value_and_grad", jax.value_and_grad(loss), params, x, labels)

    def step(optimizer):
        def run(p, state, v, y):
            value, grads = jax.value_and_grad(loss)(p, v, y)
            updates, state = optimizer.update(grads, state, p)
            return optax.apply_updates(p, updates), state, value

        return run

    for name, optimizer in [
        ("optax_sgd_step", optax.sgd(0.1)),
        ("optax_adam_step", optax.adam(1e-3)),
        ("optax_adam_clip_step", optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))),
        (
            "optax_adamw_clip_step",
            optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=1e-2)),
        ),
    ]:
        add(
            name,
            step(optimizer),
            params,
            optimizer.init(params),
            x,
            labels,
            hlo=name == "optax_adam_clip_step",
        )

    class CNN(nn.Module):
        train: bool

        @nn.compact
        def __call__(self, v):
            v = nn.Conv(8, (3, 3))(v)
            v = nn.BatchNorm(use_running_average=not self.train)(v)
            v = nn.relu(v)
            v = nn.avg_pool(v, (2, 2), (2, 2))
            return nn.Dense(10)(v.reshape((v.shape[0], -1)))

    images = _normal((2, 8, 8, 3), 31)
    cnn_vars = CNN(train=False).init(jax.random.PRNGKey(1), images)
    add("flax_cnn_batchnorm_eval", CNN(train=False).apply, cnn_vars, images)
    add(
        "flax_cnn_batchnorm_train",
        lambda variables, v: CNN(train=True).apply(variables, v, mutable=["batch_stats"]),
        cnn_vars,
        images,
    )

    class Block(nn.Module):
        @nn.compact
        def __call__(self, v):
            h = nn.LayerNorm()(v)
            v = v + nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=16)(h, h)
            h = nn.LayerNorm()(v)
            return v + nn.Dense(16)(nn.gelu(nn.Dense(32)(h)))

    tokens = _normal((2, 6, 16), 32)
    block = Block()
    add("flax_transformer_block", block.apply, block.init(jax.random.PRNGKey(2), tokens), tokens)
    sequence = _normal((2, 5, 4), 33)
    for name, cell in (("flax_lstm_scan", nn.LSTMCell(8)), ("flax_gru_scan", nn.GRUCell(8))):
        rnn = nn.RNN(cell)
        add(name, rnn.apply, rnn.init(jax.random.PRNGKey(3), sequence), sequence)
    try:
        import equinox as eqx
    except ImportError as err:
        print(f"skipping equinox programs: {err}", file=sys.stderr)
        return
    model = eqx.nn.MLP(6, 3, 12, 2, key=jax.random.PRNGKey(4))
    arrays, static = eqx.partition(model, eqx.is_array)
    add(
        "equinox_mlp", lambda p, v: jax.vmap(eqx.combine(p, static))(v), arrays, _normal((5, 6), 34)
    )


def _write(name, fn, args, hlo, platforms, x64) -> None:
    import contextlib

    import jax

    folder = os.path.join(HERE, name)
    os.makedirs(folder, exist_ok=True)
    context = jax.enable_x64(True) if x64 else contextlib.nullcontext()
    with context:
        jitted = jax.jit(fn)
        if platforms:
            lowered = jitted.trace(*args).lower(lowering_platforms=platforms)
            expected = jax.jit(fn)(*args)
        else:
            lowered = jitted.lower(*args)
            expected = jitted(*args)
        with open(os.path.join(folder, "module.mlir"), "w") as f:
            f.write(lowered.as_text())
        if hlo:
            with open(os.path.join(folder, "module.hlo"), "w") as f:
                f.write(lowered.compiler_ir("hlo").as_hlo_text())
    leaves = jax.tree_util.tree_leaves(args)
    np.savez(
        os.path.join(folder, "inputs.npz"),
        **{f"arg{i}": np.asarray(v) for i, v in enumerate(leaves)},
    )
    outs = jax.tree_util.tree_leaves(expected)
    np.savez(
        os.path.join(folder, "expected.npz"),
        **{f"out{i}": np.asarray(v) for i, v in enumerate(outs)},
    )


def main(names: list[str]) -> None:
    import jax

    print(f"jax {jax.__version__}", file=sys.stderr)
    table = programs()
    for name, (fn, args, hlo, platforms, x64) in table.items():
        if names and name not in names:
            continue
        _write(name, fn, args, hlo, platforms, x64)
        print(name, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
