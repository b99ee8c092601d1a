"""Multi-device JAX programs, each run on JAX's CPU and on an hlort platform, 4 devices each.

    python multi_device_cases.py hlort_cpu      # one JSON line per case on stdout

Run in a process of its own (test_multi_device.py starts it) because the device counts are
fixed when JAX starts its backends: ``jax_num_cpu_devices=4`` here, HLORT_CPU_DEVICES=4 /
HLORT_INTERPRETER_DEVICES=4 from the parent (tpusim has 4 chips). Each case returns a pytree
of arrays; the line says whether hlort's values match JAX's CPU within tolerance, and whether
the output shardings are JAX's CPU's (jax.Array.sharding, equivalent for the array's rank).
"""

from __future__ import annotations

import json
import sys
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

N = 4
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def mesh(platform, shape=(N,), names=("x",)):
    return Mesh(np.array(jax.devices(platform)[:N]).reshape(shape), names)


def put(platform, array, spec, m=None):
    return jax.device_put(array, NamedSharding(m or mesh(platform), spec))


X = np.arange(64, dtype=np.float32).reshape(16, 4) / 8
W = (np.arange(16, dtype=np.float32).reshape(4, 4) - 7) / 10


@case
def device_put_each(p):
    devices = jax.devices(p)
    out = []
    for i, d in enumerate(devices[:N]):
        y = jax.device_put(X + i, d)
        assert y.devices() == {d}, (y.devices(), d)
        out.append(y * 2)
    return out


@case
def jit_data_parallel(p):
    return jax.jit(lambda a: (jnp.sin(a) * 2).sum(1))(put(p, X, P("x")))


@case
def jit_tensor_parallel_matmul(p):
    m = mesh(p, (2, 2), ("d", "m"))
    x, w1, w2 = put(p, X, P("d", None), m), put(p, W, P(None, "m"), m), put(p, W, P("m", None), m)
    return jax.jit(lambda a, b, c: jnp.tanh(a @ b) @ c)(x, w1, w2)


@case
def jit_contracting_split(p):
    m = mesh(p)
    return jax.jit(lambda a, b: a @ b)(put(p, X, P(None, "x"), m), put(p, W, P("x", None), m))


@case
def jit_with_sharding_constraint(p):
    m = mesh(p)
    f = jax.jit(lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(m, P(None, "x"))) + 1)
    return f(put(p, X, P("x"), m))


@case
def jit_out_shardings_replicated(p):
    m = mesh(p)
    f = jax.jit(lambda a: a.sum(0), out_shardings=NamedSharding(m, P()))
    return f(put(p, X, P("x"), m))


@case
def jit_several_outputs_and_donation(p):
    m = mesh(p)
    f = jax.jit(lambda a, b: (a + b, (a * b).max(), a.T), donate_argnums=(0,))
    return f(put(p, X, P("x"), m), put(p, X, P("x"), m))


X_SPEC = P("x")


@case
def jit_serialize_round_trip(p):
    from jax.experimental.serialize_executable import deserialize_and_load, serialize

    x = put(p, X, P("x"))
    compiled = jax.jit(lambda a: a * 3 + a.sum(0)).lower(x).compile()
    payload, in_tree, out_tree = serialize(compiled)
    loaded = deserialize_and_load(
        payload, in_tree, out_tree, backend=p, execution_devices=jax.devices(p)[:N]
    )
    return loaded(x)


def smap(p, body, in_specs=X_SPEC, out_specs=X_SPEC, m=None, **kw):
    return jax.shard_map(body, mesh=m or mesh(p), in_specs=in_specs, out_specs=out_specs, **kw)


@case
def shard_map_psum(p):
    return jax.jit(smap(p, lambda a: lax.psum(a, "x"), out_specs=P()))(X)


@case
def shard_map_all_gather(p):
    body = lambda a: lax.all_gather(a, "x", tiled=True)  # noqa: E731
    return jax.jit(smap(p, body, out_specs=P(), check_vma=False))(X)


@case
def shard_map_ppermute(p):
    return jax.jit(smap(p, lambda a: lax.ppermute(a, "x", [(i, (i + 1) % N) for i in range(N)])))(X)


@case
def shard_map_all_to_all(p):
    return jax.jit(smap(p, lambda a: lax.all_to_all(a, "x", 1, 1, tiled=True)))(X)


@case
def shard_map_psum_scatter(p):
    return jax.jit(smap(p, lambda a: lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True)))(X)


@case
def shard_map_2d_mesh_one_axis(p):
    m = mesh(p, (2, 2), ("a", "b"))
    body = lambda x: lax.psum(x, "b") * (lax.axis_index("a") + 1)  # noqa: E731
    return jax.jit(smap(p, body, in_specs=P("a", "b"), out_specs=P("a", None), m=m))(X)


@case
def shard_map_eager_experimental(p):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from jax.experimental.shard_map import shard_map
    f = shard_map(lambda a: lax.pmax(a, "x"), mesh=mesh(p), in_specs=P("x"), out_specs=P())
    return f(X)


@case
def pmap_psum(p):
    return jax.pmap(lambda a: lax.psum(a, "i"), axis_name="i", devices=jax.devices(p)[:N])(X[:N])


@case
def pmap_scan_of_psum(p):  # testIssue804's program
    f = lambda xs: lax.scan(lambda c, x: (c + lax.psum(x, "i"), c), 0.0, xs)  # noqa: E731
    return jax.pmap(f, axis_name="i", devices=jax.devices(p)[:N])(jnp.ones((N, 4)))


@case
def pmap_inside_fori_loop(p):  # test_while_loop_of_pmap's program
    devices = jax.devices(p)[:N]

    def body(i, x):
        return jax.pmap(lambda z: lax.psum(jnp.sin(z), "i"), axis_name="i", devices=devices)(x) + x

    return lax.fori_loop(0, 3, body, jnp.ones(N))


def _mlp_params():
    rng = np.random.default_rng(0)
    sizes = [(4, 16), (16, 16), (16, 3)]
    return [
        (rng.normal(size=s).astype(np.float32) * 0.5, np.zeros(s[1], np.float32)) for s in sizes
    ]


def _loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jnp.tanh(h)
    return jnp.mean((h - y) ** 2)


def _sgd(params, grads, lr=0.1):
    return jax.tree.map(lambda w, g: w - lr * g, params, grads)


def _batch():
    rng = np.random.default_rng(1)
    return rng.normal(size=(32, 4)).astype(np.float32), rng.normal(size=(32, 3)).astype(np.float32)


def _one_device_step(p):
    d = jax.devices(p)[0]

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        return loss, _sgd(params, grads)

    x, y = _batch()
    return step(jax.device_put(_mlp_params(), d), jax.device_put(x, d), jax.device_put(y, d))


@case
def mlp_step_sharded_jit(p):
    m = mesh(p)
    x, y = _batch()
    replicated = NamedSharding(m, P())
    params = jax.device_put(_mlp_params(), replicated)

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        return loss, _sgd(params, grads)

    out = step(params, put(p, x, P("x"), m), put(p, y, P("x"), m))
    _close(out, _one_device_step(p))  # 4 devices == 1 device on the same platform
    return out


@case
def mlp_step_pmap_pmean(p):
    x, y = _batch()

    def step(params, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        grads = lax.pmean(grads, "i")
        return lax.pmean(loss, "i"), _sgd(params, grads)

    replicated = jax.tree.map(lambda a: np.stack([a] * N), _mlp_params())
    f = jax.pmap(step, axis_name="i", devices=jax.devices(p)[:N])
    loss, params = f(replicated, x.reshape(N, -1, 4), y.reshape(N, -1, 3))
    one_loss, one_params = _one_device_step(p)
    _close((loss[0], jax.tree.map(lambda a: a[0], params)), (one_loss, one_params))
    return loss, params


# Cases that must fail on hlort with this message (run on the hlort platform only).
ERROR_CASES = {}


def error_case(message):
    def register(fn):
        ERROR_CASES[fn.__name__] = (fn, message)
        return fn

    return register


@error_case("UNIMPLEMENTED: .*only fully manual shard_map is supported")
def partially_manual_shard_map(p):
    m = mesh(p, (2, 2), ("a", "b"))
    body = lambda x: lax.psum(x, "a")  # noqa: E731
    f = smap(p, body, in_specs=P("a"), out_specs=P(), m=m, axis_names={"a"})
    return jax.jit(f)(X)


def _close(got, want, rtol=1e-5, atol=1e-6) -> float:
    worst = 0.0
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        if g.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
    return worst


def _layouts(tree) -> list[str]:
    """Each output's sharding as XLA HloSharding text (device ids: both platforms' are 0..3)."""
    return [str(a.sharding._to_xla_hlo_sharding(a.ndim)) for a in jax.tree.leaves(tree)]


def run(platform: str, names: list[str]) -> None:
    for name in names:
        line = {"case": name}
        if name in ERROR_CASES:
            fn, line["expected_error"] = ERROR_CASES[name]
            try:
                jax.block_until_ready(fn(platform))
                line["error"] = None
            except Exception as err:  # noqa: BLE001
                line["error"] = f"{type(err).__name__}: {err}"[:3000]
            print(json.dumps(line), flush=True)
            continue
        try:
            want = CASES[name]("cpu")
            got = CASES[name](platform)
            line["max_abs_err"] = _close(got, want)
            line["shardings"], line["cpu_shardings"] = _layouts(got), _layouts(want)
            line["ok"] = True
        except Exception as err:  # noqa: BLE001 - reported to the parent test
            line.update(ok=False, error=f"{type(err).__name__}: {err}"[:3000])
            line["traceback"] = traceback.format_exc()[-3000:]
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    jax.config.update("jax_num_cpu_devices", N)
    if sys.argv[1] == "hlort_tpusim":  # its DEFAULT dot precision is bf16, like a TPU's
        jax.config.update("jax_default_matmul_precision", "highest")
    run(sys.argv[1], sys.argv[2:] or [*CASES, *ERROR_CASES])
