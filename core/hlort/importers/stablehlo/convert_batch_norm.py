"""batch_norm_inference / batch_norm_training / batch_norm_grad, decomposed as StableHLO's spec
defines them (HLO has no batch-norm ops): per-feature statistics are reductions over every other
dimension, broadcast back along ``feature_index``; the result is rounded once per elementwise op,
in the operand's type.
"""

from __future__ import annotations

import numpy as np

from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.hlo_math import E, sqrt
from hlort.ir.opcodes import Opcode


def _along_feature(cx: OpContext, v: E, like: E, feature: int) -> E:
    return E(cx.b, cx.b.broadcast(v.i, like.dims, [feature]))


def _feature_sum(cx: OpContext, x: E, feature: int) -> E:
    dims = [d for d in range(len(x.dims)) if d != feature]
    zero = cx.b.constant(np.zeros((), x.dtype.numpy))
    add = cx.b.scalar_computation(Opcode.ADD, x.dtype)
    return E(cx.b, cx.b.reduce(x.i, zero, add, dims))


def _count(x: E, feature: int, like: E) -> E:
    n = 1
    for d, size in enumerate(x.dims):
        if d != feature:
            n *= size
    return like.const(float(n))


@converter("stablehlo.batch_norm_inference")
def _inference(cx: OpContext):
    x, scale, offset, mean, variance = (E(cx.b, o) for o in cx.operands)
    f = cx.int("feature_index")
    eps = cx.attr("epsilon")

    def b(v: E) -> E:
        return _along_feature(cx, v, x, f)

    return [(b(scale) * (x - b(mean)) / sqrt(b(variance) + float(eps)) + b(offset)).i]


@converter("stablehlo.batch_norm_training")
def _training(cx: OpContext):
    x, scale, offset = (E(cx.b, o) for o in cx.operands)
    f = cx.int("feature_index")
    eps = float(cx.attr("epsilon"))
    n = _count(x, f, scale)
    mean = _feature_sum(cx, x, f) / n
    centered = x - _along_feature(cx, mean, x, f)
    variance = _feature_sum(cx, centered * centered, f) / n

    def b(v: E) -> E:
        return _along_feature(cx, v, x, f)

    out = b(scale) * centered / sqrt(b(variance) + eps) + b(offset)
    return [out.i, mean.i, variance.i]


@converter("stablehlo.batch_norm_grad")
def _grad(cx: OpContext):
    x, scale, mean, variance, grad = (E(cx.b, o) for o in cx.operands)
    f = cx.int("feature_index")
    eps = float(cx.attr("epsilon"))
    n = _count(x, f, scale)

    def b(v: E) -> E:
        return _along_feature(cx, v, x, f)

    stddev = sqrt(variance + eps)
    norm = (x - b(mean)) / b(stddev)
    grad_offset = _feature_sum(cx, grad, f)
    grad_scale = _feature_sum(cx, grad * norm, f)
    grad_operand = b(scale / stddev) * (grad - b(grad_offset / n) - norm * b(grad_scale / n))
    return [grad_operand.i, grad_scale.i, grad_offset.i]
