"""The partitioner on programs that need no communication: each device's program, run alone on
the reference interpreter with its partition id, computes its tile of the single-device result
(bitwise: the same ops on the same elements)."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import InvalidArgument
from hlort.interpreter.evaluator import Evaluator
from hlort.ir.verifier import verify_module
from hlort.passes.spmd_partitioner import output_sharding, parameter_shardings
from hlort.passes.spmd_pass import SpmdPartitioner
from hlort.text.parser import parse_module

ROW_PARALLEL = """HloModule rows, num_partitions=4

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]0,1,2,3}
  w = f32[4,6] parameter(1)
  b = f32[6] parameter(2)
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,6] broadcast(b), dimensions={1}
  s = f32[8,6] add(d, bb)
  r = f32[8,2,3] reshape(s)
  t = f32[2,3,8] transpose(r), dimensions={1,2,0}
  c = f32[] constant(-inf)
  m = f32[2,8] reduce(t, c), dimensions={1}, to_apply=max
  ROOT o = f32[2,8] tanh(m)
}
"""


def test_row_parallel_chain_needs_no_collectives_and_matches_bitwise():
    module = parse_module(ROW_PARALLEL)
    reference = module.clone()
    partitioner = SpmdPartitioner()
    assert partitioner.run(module)
    verify_module(module)
    assert not partitioner.run(module)  # idempotent
    opcodes = {i.opcode.value for i in module.entry.instructions}
    assert not opcodes & {"all-gather", "all-reduce"}
    assert [s.to_text() for s in parameter_shardings(module)] == [
        "{devices=[4,1]0,1,2,3}",
        "{replicated}",
        "{replicated}",
    ]
    assert output_sharding(module).tile_counts == (1, 4)
    assert partitioner.last_report.replicated == []
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    want = Evaluator().run(reference, [x, w, b])
    for p in range(4):
        got = Evaluator(partition_id=p).run(module, [x[2 * p : 2 * p + 2], w, b])
        np.testing.assert_array_equal(got, want[:, 2 * p : 2 * p + 2])


def test_one_partition_is_left_alone():
    module = parse_module(ROW_PARALLEL.replace("num_partitions=4", "num_partitions=1"))
    assert not SpmdPartitioner().run(module)


@pytest.mark.parametrize(
    "sharding, message",
    [
        ("{devices=[2,1]0,1}", "must name each of the 4 partition"),
        ("{devices=[4,1,1]0,1,2,3}", "tiles 3 dimension"),
    ],
)
def test_bad_parameter_shardings_are_invalid_argument(sharding, message):
    text = (
        "HloModule m, num_partitions=4\nENTRY e {\n  x = f32[8,4] parameter(0), sharding="
        + sharding
        + "\n  ROOT y = f32[8,4] negate(x)\n}\n"
    )
    with pytest.raises(InvalidArgument, match=message):
        SpmdPartitioner().run(parse_module(text))
