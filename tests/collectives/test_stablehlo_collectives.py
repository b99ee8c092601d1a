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
from hlort.importers.stablehlo import import_stablehlo, parse_mlir, parse_stablehlo
from hlort.ir.opcodes import Opcode

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "stablehlo-testdata" / "tests"
FILES = [
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_broadcast",
    "collective_permute",
    "collective_reduce",
    "reduce_scatter",
    "replica_id",
    "partition_id",
]


def _cases():
    out = []
    for name in FILES:
        path = CORPUS / "interpret" / f"{name}.mlir"
        if not path.exists():
            continue
        for k, text in enumerate(path.read_text().split("// -----")):
            if "interpreter.run_parallel" in text:
                out.append(pytest.param(text, id=f"{name}-{k}"))
    return out


def _run_parallel_parts(text: str):
    mlir = parse_mlir(text)
    main = mlir.functions["main"]
    constants, expected = {}, {}
    run = None
    for op in main.body.blocks[0].ops:
        if op.name == "stablehlo.constant":
            constants[op.results[0]] = np.asarray(op.attrs["value"].value)
        elif op.name == "interpreter.run_parallel":
            run = op
        elif op.name == "check.expect_eq_const":
            expected[op.operands[0]] = np.asarray(op.attrs["value"].value)
    grid = [[p.name for p in row] for row in run.attrs["programs"]]
    results = {name: i for i, name in enumerate(run.results)}
    return grid, [constants[o] for o in run.operands], expected, results


@pytest.mark.parametrize("text", _cases())
def test_corpus_run_parallel_as_a_real_multi_device_execution(text):
    grid, inputs, expected, results = _run_parallel_parts(text)
    replicas, partitions = len(grid), len(grid[0])
    n = replicas * partitions
    program = import_stablehlo(text, entry=grid[0][0]).module
    kinds = {i.opcode for c in program.computations for i in c.instructions}
    assert not kinds & {Opcode.CONCATENATE} or Opcode.ALL_GATHER in kinds  # real ops, not flattened
    exe = hlort.backend("interpreter").compile(
        program, options={"num_replicas": replicas, "num_partitions": partitions}
    )
    per = len(inputs) // n
    args = [inputs[k * per : (k + 1) * per] for k in range(n)]
    params = [p.shape for p in program.entry.parameters]
    args = [[a.astype(s.dtype.numpy) for a, s in zip(row, params, strict=True)] for row in args]
    outs = exe.execute_sharded(args)
    flat = [o.numpy() for per_device in outs for o in per_device]
    assert expected
    for name, want in expected.items():
        got = flat[results[name]]
        np.testing.assert_array_equal(got, want.astype(got.dtype).reshape(got.shape), err_msg=name)


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
