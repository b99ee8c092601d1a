"""The StableHLO corpus's ``interpreter.run_parallel`` tests as real multi-device executions.

Each such test calls one process function on a grid of replicas x partitions. Here the function
is imported on its own (its collectives become hlort collectives), compiled for the grid and run
on that many devices of any plugin client, each device with its process's inputs; the results
are compared with the test's ``check.expect_eq_const`` values. Backends use it to check their
collectives against the corpus (tests/collectives; plugins' own tests with their clients).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlort.importers.stablehlo import import_stablehlo, parse_mlir
from hlort.ir.module import Module
from hlort.plugin import api
from hlort.plugin.options import CompileOptions
from hlort.runtime.compile import run_core_passes

COLLECTIVE_FILES = (
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_broadcast",
    "collective_permute",
    "collective_reduce",
    "reduce_scatter",
    "replica_id",
    "partition_id",
)
"""The corpus files (tests/interpret/NAME.mlir) whose run_parallel grids run one function."""


@dataclass
class ParallelCase:
    """One run_parallel test: the program, the grid, each copy's inputs, the expected outputs
    (index into the copies' outputs flattened in copy order -> array)."""

    program: Module
    replicas: int
    partitions: int
    inputs: list[list[np.ndarray]]
    expected: dict[int, np.ndarray]

    @property
    def copies(self) -> int:
        return self.replicas * self.partitions


def corpus_cases(corpus_tests: Path) -> list[tuple[str, str]]:
    """``(id, module text)`` of every run_parallel test in the collective files under
    ``corpus_tests`` (the corpus's ``tests`` directory); empty when it is absent."""
    out = []
    for name in COLLECTIVE_FILES:
        path = Path(corpus_tests) / "interpret" / f"{name}.mlir"
        if not path.exists():
            continue
        for k, text in enumerate(path.read_text().split("// -----")):
            if "interpreter.run_parallel" in text:
                out.append((f"{name}-{k}", text))
    return out


def parallel_case(text: str) -> ParallelCase:
    """Read one module's run_parallel test (inputs must be constants of @main)."""
    main = parse_mlir(text).functions["main"]
    constants, expected_by_name = {}, {}
    run = None
    for op in main.body.blocks[0].ops:
        if op.name == "stablehlo.constant":
            constants[op.results[0]] = np.asarray(op.attrs["value"].value)
        elif op.name == "interpreter.run_parallel":
            run = op
        elif op.name == "check.expect_eq_const":
            expected_by_name[op.operands[0]] = np.asarray(op.attrs["value"].value)
    if run is None:
        raise ValueError("no interpreter.run_parallel in @main")
    grid = [[p.name for p in row] for row in run.attrs["programs"]]
    replicas, partitions = len(grid), len(grid[0])
    program = import_stablehlo(text, entry=grid[0][0]).module
    params = [p.shape for p in program.entry.parameters]
    flat_inputs = [constants[o] for o in run.operands]
    n = replicas * partitions
    per = len(flat_inputs) // n
    inputs = []
    for k in range(n):
        mine = flat_inputs[k * per : (k + 1) * per]
        inputs.append(
            [a.astype(s.dtype.numpy).reshape(s.dims) for a, s in zip(mine, params, strict=True)]
        )
    position = {name: i for i, name in enumerate(run.results)}
    expected = {position[name]: value for name, value in expected_by_name.items()}
    return ParallelCase(program, replicas, partitions, inputs, expected)


def run_case(client: api.Client, case: ParallelCase) -> list[np.ndarray]:
    """Compile (core passes, then the plugin) for the case's grid, run copy k on the client's
    device k; returns every copy's outputs, flattened in copy order."""
    options = CompileOptions(num_replicas=case.replicas, num_partitions=case.partitions)
    module = run_core_passes(case.program.clone(), options, client)
    exe = client.compile(module, options)
    devices = exe.addressable_devices()
    args = [
        [client.buffer_from_host(a, device) for a in inputs]
        for device, inputs in zip(devices, case.inputs, strict=True)
    ]
    outputs = exe.execute(args)
    return [o.to_host().result(120) for per_copy in outputs for o in per_copy]


def check_case(client: api.Client, case: ParallelCase) -> None:
    """AssertionError naming the output when a result differs from the test's expectation."""
    got = run_case(client, case)
    assert case.expected, "the test checks nothing"
    for index, want in case.expected.items():
        value = got[index]
        np.testing.assert_array_equal(
            value, want.astype(value.dtype).reshape(value.shape), err_msg=f"output {index}"
        )
