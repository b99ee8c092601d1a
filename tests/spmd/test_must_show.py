"""Issue 17's must-shows on the interpreter's devices (the oracle):

- a tensor-parallel matmul (w1 cut by columns, w2 by rows) partitioned automatically from the
  shardings: one all-reduce, no all-gather, the single-device result;
- one data-parallel SGD step of a 3-layer MLP as ONE sharded module on 4 devices: the
  partitioner inserts the gradient all-reduces, and the step matches the single-device step.

Tolerance: f32 sums in another order (partial sums per device, then the all-reduce): rtol 1e-5,
atol 1e-6 on values of order 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort.passes.spmd_pass import SpmdPartitioner
from hlort.runtime.sharded_call import compile_sharded
from hlort.testing.spmd_programs import (
    arguments_for,
    mlp_training_step,
    single_device,
    tensor_parallel_matmul,
)

RTOL, ATOL = 1e-5, 1e-6


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _collectives(module):
    partitioned = module.clone()
    partitioner = SpmdPartitioner()
    partitioner.run(partitioned)
    ops = [i.opcode.value for i in partitioned.entry.instructions]
    return {k: ops.count(k) for k in ("all-reduce", "all-gather")}, partitioner.last_report


@pytest.mark.parametrize("devices", [2, 4])
def test_tensor_parallel_matmul(interpreter, devices):
    module = tensor_parallel_matmul(devices)
    counts, report = _collectives(module)
    assert counts == {"all-reduce": 1, "all-gather": 0}
    assert report.replicated == []
    args = arguments_for(module, seed=devices)
    want = interpreter.compile(single_device(module))(*args)
    sharded = compile_sharded(interpreter, module)
    assert [str(d) for d in sharded.devices] == [f"interpreter:{i}" for i in range(devices)]
    got = sharded(*args)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_mlp_data_parallel_training_step(interpreter):
    module = mlp_training_step(devices=4, batch=32)
    counts, report = _collectives(module)
    # 3 weight + 3 bias gradients and the loss are summed over the batch's devices
    assert counts == {"all-reduce": 7, "all-gather": 0}
    assert report.replicated == []
    args = arguments_for(module, seed=3)
    want = _as_tuple(interpreter.compile(single_device(module))(*args))
    sharded = compile_sharded(interpreter, module)
    assert len(sharded.devices) == 4
    got = _as_tuple(sharded(*args))
    assert len(got) == len(want) == 7
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    # the step did something: the weights moved
    assert not np.allclose(got[0], args[2])


def test_jax_lowered_mlp_training_step(interpreter):
    """The same step as JAX lowers it (jax.jit of value_and_grad + SGD, in_shardings cutting the
    batch over a 4-device mesh, Shardy attributes): imported, partitioned, run on 4 devices."""
    from pathlib import Path

    from hlort.importers.stablehlo.importer import parse_stablehlo

    text = (Path(__file__).parent / "samples" / "jax_mlp_step_sdy.mlir").read_text()
    module = parse_stablehlo(text, "jax_mlp_step_sdy.mlir")
    counts, report = _collectives(module)
    assert counts == {"all-reduce": 7, "all-gather": 0} and report.replicated == []
    args = arguments_for(module, seed=2)
    want = _as_tuple(interpreter.compile(single_device(module))(*args))
    got = _as_tuple(compile_sharded(interpreter, module)(*args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_replicas_times_partitions(interpreter):
    """2 replicas x 2 partitions on 4 devices: collectives stay inside each replica (flattened
    ids, one group per replica), both replicas compute the same step."""
    module = mlp_training_step(devices=2, batch=16)
    module.config["num_replicas"] = 2
    args = arguments_for(module, seed=1)
    want = _as_tuple(interpreter.compile(single_device(module))(*args))
    sharded = compile_sharded(interpreter, module)
    assert (sharded.replicas, sharded.partitions, len(sharded.devices)) == (2, 2, 4)
    rows = sharded.exe.execute_sharded(sharded.shard_arguments(args))
    outs = [[b.numpy() for b in row] for row in rows]
    for k in (0, 1):  # device r * 2 + p: replica 1 mirrors replica 0
        for a, b in zip(outs[k], outs[2 + k], strict=True):
            np.testing.assert_array_equal(a, b)
    for g, w in zip(sharded.assemble(outs), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_jax_lowered_softmax_classifier_step_on_a_2d_mesh(interpreter):
    """JAX's jit of a softmax cross-entropy SGD step on a 2x2 (data, model) mesh: weights cut
    by columns over "model", the batch over "data" (one-hot through iota, log-softmax's max and
    sum reductions across the cut class dimension)."""
    from pathlib import Path

    from hlort.importers.stablehlo.importer import parse_stablehlo

    path = Path(__file__).parent / "samples" / "jax_softmax_step_2d_sdy.mlir"
    module = parse_stablehlo(path.read_text(), path.name)
    _, report = _collectives(module)
    assert report.replicated == []
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal((6, 8)).astype(np.float32),
        rng.standard_normal((8, 6)).astype(np.float32),
        rng.integers(0, 8, 8).astype(np.int32),
    ]
    want = _as_tuple(interpreter.compile(single_device(module))(*args))
    got = _as_tuple(compile_sharded(interpreter, module)(*args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("dim", [0, 1])
def test_tensor_parallel_matmul_with_a_cut_result_uses_reduce_scatter(interpreter, dim):
    """When the result is wanted cut along the devices that summed it, each device receives
    only its tile of the sum: one reduce-scatter, no all-reduce."""
    from hlort.ir.sharding import HloSharding
    from hlort.text.sharding_syntax import set_sharding

    module = tensor_parallel_matmul(4)
    set_sharding(module.entry.root, HloSharding.split(2, dim, range(4)))
    partitioned = module.clone()
    SpmdPartitioner().run(partitioned)
    ops = [i.opcode.value for i in partitioned.entry.instructions]
    assert ops.count("reduce-scatter") == 1 and "all-reduce" not in ops
    args = arguments_for(module, seed=dim)
    want = interpreter.compile(single_device(module))(*args)
    got = compile_sharded(interpreter, module)(*args)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
