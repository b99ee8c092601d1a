"""StableHLO collectives import as real collective ops and run on N devices.

The StableHLO corpus's ``interpreter.run_parallel`` tests are run here a second way: the
process function is imported on its own (its collectives become hlort collectives), compiled
for the grid's replicas x partitions and run on that many interpreter devices, each with its
process's inputs; the results must equal the file's ``check.expect_eq_const`` values. (The
``hlort testdata`` runner imports the same files with the grid flattened into one program.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.importers.stablehlo import import_stablehlo, parse_stablehlo
from hlort.ir.opcodes import Opcode
from hlort.testing.run_parallel_corpus import FILES, cases, parts, run_case

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "stablehlo-testdata" / "tests"
CASES = cases(CORPUS)


@pytest.mark.skipif(not CASES, reason="no StableHLO corpus at ../shared/stablehlo-testdata")
@pytest.mark.parametrize("text", [t for _, t in CASES], ids=[i for i, _ in CASES])
def test_corpus_run_parallel_as_a_real_multi_device_execution(text):
    program = import_stablehlo(text, entry=parts(text).grid[0][0]).module
    kinds = {i.opcode for c in program.computations for i in c.instructions}
    assert not kinds & {Opcode.CONCATENATE} or Opcode.ALL_GATHER in kinds  # real ops, not flattened
    checked = run_case(hlort.backend("interpreter"), text)
    assert checked
    for name, got, want in checked:
        np.testing.assert_array_equal(got, want.reshape(got.shape), err_msg=name)


def test_every_collective_file_has_cases():
    if not CASES:
        pytest.skip("no StableHLO corpus at ../shared/stablehlo-testdata")
    assert {i.rsplit("-", 1)[0] for i, _ in CASES} == set(FILES)
    assert len(CASES) >= 30


JAX_STYLE = """module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32}
{
  func.func public @main(%arg0: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1,
        type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = "stablehlo.all_to_all"(%arg0) {split_dimension = 1 : i64, concat_dimension = 0 : i64,
        split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>}
        : (tensor<2x4xf32>) -> tensor<4x2xf32>
    return %0, %2 : tensor<2x4xf32>, tensor<4x2xf32>
  }
}
"""


def test_jax_style_module_imports_counts_and_collectives():
    module = parse_stablehlo(JAX_STYLE)
    assert module.config == {"num_replicas": 1, "num_partitions": 2}
    ops = [i.opcode for i in module.entry.instructions]
    assert Opcode.ALL_REDUCE in ops and Opcode.ALL_TO_ALL in ops
    root = module.entry.root.operands[0]
    assert root.attrs["channel_id"] == 1 and root.attrs["use_global_device_ids"] is True
    exe = hlort.backend("interpreter").compile(module)  # 2 partitions from the header
    xs = [np.arange(8, dtype=np.float32).reshape(2, 4) + 100 * d for d in range(2)]
    outs = exe.execute_sharded([[x] for x in xs])
    for d in range(2):
        np.testing.assert_array_equal(outs[d][0].numpy(), xs[0] + xs[1])
        # split the columns in 2, concatenate the received pieces along rows
        want = np.concatenate([np.split(x, 2, axis=1)[d] for x in xs], axis=0)
        np.testing.assert_array_equal(outs[d][1].numpy(), want)


def test_host_transfers_outside_run_parallel_are_unimplemented():
    text = """func.func @main(%x: tensor<2xf32>, %t: !stablehlo.token) -> !stablehlo.token {
  %0 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>,
      is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %0 : !stablehlo.token
}"""
    with pytest.raises(hlort.HlortError) as info:
        parse_stablehlo(text)
    assert info.value.code.name == "UNIMPLEMENTED"
    assert "send" in info.value.message and "outside interpreter.run_parallel" in info.value.message
