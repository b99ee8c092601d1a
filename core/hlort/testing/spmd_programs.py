"""Sharded programs of issue 17's must-shows, as modules over global arrays with shardings.

- :func:`mlp_training_step`: one data-parallel SGD step of a 3-layer MLP (forward, mean squared
  error, backward, update) as ONE module: the batch (inputs and targets) is cut over the
  partitions, the weights are replicated. Nothing in it says "all-reduce": the partitioner finds
  that the weight gradients contract over the cut batch dimension and sums them across devices.
- :func:`tensor_parallel_matmul`: ``relu(x @ w1) @ w2`` with ``w1`` cut by columns and ``w2`` by
  rows (Megatron's MLP block): the first dot is column-parallel, the second a contracting split
  that ends in one all-reduce.

Both give the single-device program with ``num_partitions=1`` (:func:`single_device`), and
:func:`mlp_inputs` / :func:`tensor_parallel_inputs` make deterministic arguments.
"""

from __future__ import annotations

import numpy as np

from hlort.builder import Builder
from hlort.ir import attributes as A
from hlort.ir.module import Module
from hlort.ir.sharding import HloSharding
from hlort.shape import array
from hlort.text.sharding_syntax import set_sharding

MLP_SIZES = (16, 12, 10, 4)  # input features, hidden 1, hidden 2, outputs


def _dot(b: Builder, x, y, lhs_contract: int, rhs_contract: int):
    return b.dot_general(x, y, A.DotDimensionNumbers((lhs_contract,), (rhs_contract,)))


def _relu(b: Builder, z):
    zero = b.broadcast(b.constant(np.float32(0)), z.shape.dims, [])
    return b.maximum(z, zero)


def _bias(b: Builder, z, bias):
    return b.add(z, b.broadcast(bias, z.shape.dims, [1]))


def mlp_training_step(
    devices: int = 4, batch: int = 32, sizes=MLP_SIZES, learning_rate: float = 0.1
) -> Module:
    """``(x, y, w1, b1, w2, b2, w3, b3) -> (w1', b1', w2', b2', w3', b3', loss)``."""
    b = Builder("mlp_step")
    add = b.scalar_computation("add", "f32")
    d0, d1, d2, d3 = sizes
    x = b.parameter(array("f32", [batch, d0]), "x")
    y = b.parameter(array("f32", [batch, d3]), "y")
    weights = []
    for n_in, n_out, k in ((d0, d1, 1), (d1, d2, 2), (d2, d3, 3)):
        w = b.parameter(array("f32", [n_in, n_out]), f"w{k}")
        bias = b.parameter(array("f32", [n_out]), f"b{k}")
        weights += [w, bias]
    w1, b1, w2, b2, w3, b3 = weights
    # forward
    h1 = _relu(b, _bias(b, _dot(b, x, w1, 1, 0), b1))
    h2 = _relu(b, _bias(b, _dot(b, h1, w2, 1, 0), b2))
    out = _bias(b, _dot(b, h2, w3, 1, 0), b3)
    err = b.subtract(out, y)
    zero = b.constant(np.float32(0))
    scale = 1.0 / (batch * d3)
    loss = b.multiply(
        b.reduce(b.multiply(err, err), zero, add, [0, 1]), b.constant(np.float32(scale))
    )
    # backward: d loss / d out = 2 (out - y) / (batch * d3)
    d_out = b.multiply(err, b.broadcast(b.constant(np.float32(2 * scale)), err.shape.dims, []))
    grads = _mlp_grads(b, add, x, d_out, h1, h2, w2, w3)
    lr = b.constant(np.float32(learning_rate))
    updated = []
    for p, g in zip(weights, grads, strict=True):
        updated.append(b.subtract(p, b.multiply(g, b.broadcast(lr, g.shape.dims, []))))
    root = b.tuple(updated + [loss])
    module = b.build(root)
    module.config["num_partitions"] = devices
    batch_cut = HloSharding.split(2, 0, range(devices))
    set_sharding(x, batch_cut)
    set_sharding(y, batch_cut)
    for p in weights:
        set_sharding(p, HloSharding.replicate())
    set_sharding(root, HloSharding.tuple_of([HloSharding.replicate()] * (len(weights) + 1)))
    return module


def _mlp_grads(b: Builder, add, x, d_out, h1, h2, w2, w3):
    """Weight and bias gradients, layer 1 first: dW = input^T @ upstream (over the batch),
    db = sum over the batch, upstream through W^T and the ReLU's mask."""
    zero = b.constant(np.float32(0))

    def through_relu(upstream, w, act):
        back = _dot(b, upstream, w, 1, 1)
        mask = b.compare(act, b.broadcast(zero, act.shape.dims, []), "GT")
        return b.select(mask, back, b.broadcast(zero, back.shape.dims, []))

    d_z2 = through_relu(d_out, w3, h2)
    d_z1 = through_relu(d_z2, w2, h1)
    grads = []
    for inp, upstream in ((x, d_z1), (h1, d_z2), (h2, d_out)):
        grads += [_dot(b, inp, upstream, 0, 0), b.reduce(upstream, zero, add, [0])]
    return grads


def tensor_parallel_matmul(devices: int = 2, batch: int = 8, d: int = 16, hidden: int = 32):
    """``relu(x @ w1) @ w2``, ``w1`` cut by columns, ``w2`` by rows, ``x`` and the result
    replicated."""
    b = Builder("tensor_parallel_mlp")
    x = b.parameter(array("f32", [batch, d]), "x")
    w1 = b.parameter(array("f32", [d, hidden]), "w1")
    w2 = b.parameter(array("f32", [hidden, d]), "w2")
    h = _relu(b, _dot(b, x, w1, 1, 0))
    root = _dot(b, h, w2, 1, 0)
    module = b.build(root)
    module.config["num_partitions"] = devices
    set_sharding(x, HloSharding.replicate())
    set_sharding(w1, HloSharding.split(2, 1, range(devices)))
    set_sharding(w2, HloSharding.split(2, 0, range(devices)))
    set_sharding(root, HloSharding.replicate())
    return module


def single_device(module: Module) -> Module:
    """The same program on one device (shardings then mean nothing)."""
    copy = module.clone()
    copy.config["num_partitions"] = 1
    copy.config["num_replicas"] = 1
    return copy


def arguments_for(module: Module, seed: int = 0) -> list[np.ndarray]:
    """Deterministic f32 arguments of the entry's parameter shapes, small weights."""
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal(p.shape.dims) * 0.5).astype(np.float32)
        for p in module.entry.parameters
    ]
