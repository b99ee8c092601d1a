"""Writes the shape-polymorphic test programs: ``jax.export`` with a symbolic batch dimension.

    .venv/bin/pip install "jax[cpu]==0.10.2"
    .venv/bin/python tests/polymorphic/generate.py

Each program is exported once with batch dimension ``b`` symbolic; ``programs/NAME/module.mlir``
is ``Exported.mlir_module()`` (entry ``@main`` with ``?`` dims, ``shape_assertion`` custom calls,
the body in ``@_wrapped_jax_export_main`` taking ``b`` as a ``jax.global_constant`` argument).
For every batch size of :data:`BATCHES`, ``inputs_bN.npz`` (``arg0..``) and ``expected_bN.npz``
(``out0..``: JAX's CPU results of the exported program, ``Exported.call``) are written, so the
tests (test_polymorphic_programs.py) need no JAX. Seeded: running it again writes the same files.
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
BATCHES = (1, 7, 64)


def mlp_batch(x, w1, b1, w2):
    """A classifier head over a batch of b rows: dense + gelu, dense, log-softmax, each row's
    argmax and its position in the batch (iota over b), and the batch mean."""
    import jax
    import jax.numpy as jnp

    h = jax.nn.gelu(x @ w1 + b1)
    logits = h @ w2
    logp = jax.nn.log_softmax(logits, axis=-1)
    rows = jnp.arange(x.shape[0], dtype=jnp.float32)[:, None]
    best = jnp.argmax(logp, axis=-1)
    return logp + rows * 1e-3 - jnp.mean(logits), best


def _inputs(b: int) -> list[np.ndarray]:
    rng = np.random.default_rng(b)
    w = np.random.default_rng(1000)
    return [
        rng.standard_normal((b, 12)).astype(np.float32),
        (w.standard_normal((12, 32)) / 4).astype(np.float32),
        w.standard_normal((32,)).astype(np.float32),
        (w.standard_normal((32, 5)) / 4).astype(np.float32),
    ]


def main() -> None:
    import jax
    import jax.numpy as jnp
    from jax import export

    (b,) = export.symbolic_shape("b")
    specs = [
        jax.ShapeDtypeStruct((b, 12), jnp.float32),
        jax.ShapeDtypeStruct((12, 32), jnp.float32),
        jax.ShapeDtypeStruct((32,), jnp.float32),
        jax.ShapeDtypeStruct((32, 5), jnp.float32),
    ]
    exported = export.export(jax.jit(mlp_batch), platforms=["cpu"])(*specs)
    out_dir = os.path.join(HERE, "mlp_batch")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "module.mlir"), "w") as f:
        f.write(exported.mlir_module())
    for batch in BATCHES:
        args = _inputs(batch)
        outs = jax.tree_util.tree_leaves(exported.call(*args))
        np.savez(
            os.path.join(out_dir, f"inputs_b{batch}.npz"),
            **{f"arg{i}": a for i, a in enumerate(args)},
        )
        np.savez(
            os.path.join(out_dir, f"expected_b{batch}.npz"),
            **{f"out{i}": np.asarray(o) for i, o in enumerate(outs)},
        )
    print(f"wrote {out_dir}")


if __name__ == "__main__":
    main()
