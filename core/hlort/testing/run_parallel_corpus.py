"""The StableHLO corpus's ``interpreter.run_parallel`` tests as real N-device executions on any
backend.

Each such test calls ``interpreter.run_parallel`` with a grid of process functions (replicas x
partitions) on constants, then checks the results with ``check.expect_eq_const``. Here the
process function is imported on its own (its collectives become hlort collectives), compiled for
the grid on the given runtime backend, and run with each process's inputs on its own device;
:func:`run_case` returns each checked result with its expected value. tests/collectives runs
the same programs on interpreter devices; the cpu and tpusim plugins' tests run them on theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlort.importers.stablehlo import import_stablehlo, parse_mlir
from hlort.runtime.compile import compile_on

FILES = (
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


@dataclass(frozen=True)
class RunParallel:
    grid: list[list[str]]  # [replica][partition] -> process function name
    inputs: list[np.ndarray]  # every process's operands, process after process
    expected: dict[object, np.ndarray]  # result value -> its expected constant
    results: dict[object, int]  # result value -> its index among run_parallel's results

    @property
    def replicas(self) -> int:
        return len(self.grid)

    @property
    def partitions(self) -> int:
        return len(self.grid[0])


def cases(corpus_tests: Path) -> list[tuple[str, str]]:
    """(id, text) of every run_parallel test in the corpus's ``interpret`` folder (ids like
    ``all_reduce-2``); empty when the corpus is not there."""
    out = []
    for name in FILES:
        path = Path(corpus_tests) / "interpret" / f"{name}.mlir"
        if not path.exists():
            continue
        for k, text in enumerate(path.read_text().split("// -----")):
            if "interpreter.run_parallel" in text:
                out.append((f"{name}-{k}", text))
    return out


def parts(text: str) -> RunParallel:
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
    return RunParallel(grid, [constants[o] for o in run.operands], expected, results)


def run_case(backend, text: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(result name, got, expected) for every checked result of the test ``text``, run on
    ``backend`` (a runtime Backend with at least replicas x partitions devices)."""
    rp = parts(text)
    n = rp.replicas * rp.partitions
    program = import_stablehlo(text, entry=rp.grid[0][0]).module
    exe = compile_on(
        backend, program, options={"num_replicas": rp.replicas, "num_partitions": rp.partitions}
    )
    per = len(rp.inputs) // n
    shapes = [p.shape for p in program.entry.parameters]
    args = [
        [
            a.astype(s.dtype.numpy)
            for a, s in zip(rp.inputs[k * per : (k + 1) * per], shapes, strict=True)
        ]
        for k in range(n)
    ]
    flat = [o.numpy() for outs in exe.execute_sharded(args) for o in outs]
    return [
        (str(name), flat[rp.results[name]], want.astype(flat[rp.results[name]].dtype))
        for name, want in rp.expected.items()
    ]
