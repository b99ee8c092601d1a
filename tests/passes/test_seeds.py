"""The seed programs through the whole pipeline: fusion counts and bytes moved, as promised."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import examples
from hlort.interpreter import evaluate
from hlort.ir import FusionKind
from hlort.ir.opcodes import Opcode
from hlort.passes import assign_buffers, cost_analysis, run_default_pipeline


def optimized(h, module):
    before = module.clone()
    report = run_default_pipeline(module, verify=True)
    assert report.changed
    h.check_same_results(before, module)
    again = run_default_pipeline(module, verify=True)
    assert again.changed_passes() == [], again.summary()
    return before


def entry_opcodes(module):
    skip = (Opcode.PARAMETER, Opcode.GET_TUPLE_ELEMENT, Opcode.TUPLE)
    return sorted(i.opcode.value for i in module.entry.instructions if i.opcode not in skip)


@pytest.mark.parametrize("n", [1024, 4096])
def test_reduce_sum_fma_is_one_fusion_reading_each_input_once(h, n):
    module, reference = examples.reduce_sum_fma(n)
    before = optimized(h, module)
    assert entry_opcodes(module) == ["fusion"]
    assert module.entry.root.attrs["kind"] is FusionKind.INPUT
    cost_before, cost_after = cost_analysis(before), cost_analysis(module)
    assert cost_after.bytes_read == 3 * n * 4
    assert cost_after.bytes_written == 4
    # unfused: multiply (8n read, 4n written), add (8n, 4n), reduce (4n + 4, 4)
    assert cost_before.bytes_accessed == 28 * n + 8
    assert cost_before.bytes_accessed / cost_after.bytes_accessed > 2.3
    assert cost_after.flops == cost_before.flops == 3 * n
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    np.testing.assert_allclose(evaluate(module, args), reference(*args), rtol=1e-4)


def test_softmax_relu_matmul_is_the_dot_and_two_fusions(h):
    m, k, n = 16, 8, 32
    module, _ = examples.softmax_relu_matmul(m, k, n)
    before = optimized(h, module)
    assert entry_opcodes(module) == ["dot", "fusion", "fusion"]
    cost_before, cost_after = cost_analysis(before), cost_analysis(module)
    mn = m * n * 4
    # fused: the dot, one kernel reading its result once (writing exp and the row sums), and
    # the divide reading exp and the sums
    assert cost_after.bytes_accessed < cost_before.bytes_accessed / 3.5
    assert cost_after.bytes_written == mn + (mn + m * 4) + mn
    assert cost_after.transcendentals == cost_before.transcendentals == m * n


def test_layernorm_is_two_fusions(h):
    rows, cols = 32, 64
    module, _ = examples.layernorm(rows, cols)
    before = optimized(h, module)
    assert entry_opcodes(module) == ["fusion", "fusion"]
    cost_before, cost_after = cost_analysis(before), cost_analysis(module)
    x = rows * cols * 4
    # one kernel reads x for both reductions, one reads it again to normalize
    assert cost_after.bytes_read == 2 * x + 2 * cols * 4 + 2 * rows * 4
    assert cost_after.bytes_written == x + 2 * rows * 4
    assert cost_before.bytes_accessed / cost_after.bytes_accessed > 6
    assert assign_buffers(module).peak_bytes < assign_buffers(before).peak_bytes
