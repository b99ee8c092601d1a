"""Cost analysis: flops per op family, transcendentals, bytes, and fusions' external bytes."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import ConvDimensionNumbers, DotDimensionNumbers
from hlort.ir.attributes import window_from_sizes
from hlort.passes import InstructionFusion, cost_analysis


def test_dot_is_two_m_n_k():
    b = Builder("dot")
    a = b.parameter(shape.array("f32", [3, 5, 7]))
    w = b.parameter(shape.array("f32", [3, 7, 11]))
    d = b.dot_general(a, w, DotDimensionNumbers((2,), (1,), (0,), (0,)))
    module = b.build(d)
    cost = cost_analysis(module)[d]
    assert cost.flops == 2 * 3 * 5 * 11 * 7
    assert cost.bytes_read == (3 * 5 * 7 + 3 * 7 * 11) * 4
    assert cost.bytes_written == 3 * 5 * 11 * 4


def test_convolution_counts_window_and_features():
    b = Builder("conv")
    x = b.parameter(shape.array("f32", [2, 10, 3]))  # b0f
    k = b.parameter(shape.array("f32", [3, 3, 4]))  # 0io
    dn = ConvDimensionNumbers(0, 2, (1,), 1, 2, (0,), 0, 2, (1,))
    conv = b.convolution(x, k, window_from_sizes([3]), dn)
    module = b.build(conv)
    assert conv.shape.dims == (2, 8, 4)
    assert cost_analysis(module)[conv].flops == 2 * (2 * 8 * 4) * (3 * 3)


def test_elementwise_transcendental_and_reduce():
    b = Builder("mix")
    x = b.parameter(shape.array("f32", [10, 20]))
    e = b.exp(x)
    s = b.add(e, x)
    r = b.reduce(s, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [1])
    module = b.build(r)
    cost = cost_analysis(module)
    assert cost[e].transcendentals == 200 and cost[e].flops == 0
    assert cost[s].flops == 200
    assert cost[r].flops == 200
    assert cost.transcendentals == 200 and cost.flops == 400
    assert cost.bytes_read == 800 + 1600 + 800 + 4
    assert cost.bytes_written == 800 + 800 + 40
    assert "total" in cost.report()


def test_fusion_counts_only_external_bytes_and_all_inner_flops():
    b = Builder("fused")
    x = b.parameter(shape.array("f32", [64]))
    y = b.tanh(b.multiply(b.add(x, x), b.broadcast(b.constant(np.float32(3)), [64], [])))
    module = b.build(y)
    before = cost_analysis(module)
    InstructionFusion().run(module)
    after = cost_analysis(module)
    assert after.bytes_read == 64 * 4 and after.bytes_written == 64 * 4
    assert after.flops == before.flops == 128
    assert after.transcendentals == before.transcendentals == 64
    assert before.bytes_accessed > after.bytes_accessed


def test_slices_read_what_they_keep():
    b = Builder("slice")
    x = b.parameter(shape.array("f32", [100]))
    s = b.slice(x, [10], [20])
    module = b.build(s)
    assert cost_analysis(module)[s].bytes_read == 40
