"""Compile-time budget of the core pipeline: how long each pass takes on big modules.

Run ``python benchmarks/compile_time.py [--instructions N] [--repeat R]``. It builds modules of
about N instructions (default 2,000) out of the seed programs' patterns (layernorm, matmul with a
bias, softmax, long elementwise chains), runs ``run_default_pipeline`` on a fresh clone R times
and prints the best total time (wall clock, and CPU time, which a busy machine does not inflate)
and the time per pass. The budget is one second for 2,000
instructions; this script prints, it does not assert (timing tests are flaky on shared CI).
``--quick``: 200 instructions, one run (the CI smoke test; no budget verdict).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers, Module
from hlort.passes import run_default_pipeline


def _row_reduce(b: Builder, x, opcode: str, init: float):
    dt = x.shape.dtype
    return b.reduce(x, b.constant(np.array(init, dt.numpy)), b.scalar_computation(opcode, dt), [1])


def _layer(b: Builder, x, w, gamma, beta, rows: int, cols: int):
    """layernorm -> matmul + bias -> relu -> softmax -> a residual chain: about 60 instructions."""
    inv_n = b.broadcast(b.constant(np.float32(1.0 / cols)), [rows], [])
    mean = b.multiply(_row_reduce(b, x, "add", 0.0), inv_n)
    centered = b.subtract(x, b.broadcast(mean, [rows, cols], [0]))
    var = b.multiply(_row_reduce(b, b.multiply(centered, centered), "add", 0.0), inv_n)
    eps = b.broadcast(b.constant(np.float32(1e-5)), [rows], [])
    inv_std = b.rsqrt(b.add(var, eps))
    normed = b.multiply(centered, b.broadcast(inv_std, [rows, cols], [0]))
    h = b.add(
        b.multiply(normed, b.broadcast(gamma, [rows, cols], [1])),
        b.broadcast(beta, [rows, cols], [1]),
    )
    mm = b.dot_general(h, w, DotDimensionNumbers((1,), (0,)))
    relu = b.maximum(
        b.add(mm, b.broadcast(beta, [rows, cols], [1])),
        b.broadcast(b.constant(np.float32(0)), [rows, cols], []),
    )
    row_max = _row_reduce(b, relu, "maximum", -np.inf)
    e = b.exp(b.subtract(relu, b.broadcast(row_max, [rows, cols], [0])))
    soft = b.divide(e, b.broadcast(_row_reduce(b, e, "add", 0.0), [rows, cols], [0]))
    y = b.add(x, soft)
    for k in range(8):
        scale = b.broadcast(b.constant(np.float32(1.0 + k / 16)), [rows, cols], [])
        y = b.tanh(b.add(b.multiply(y, scale), b.negate(b.negate(x))))
        y = b.reshape(b.reshape(y, [rows * cols]), [rows, cols])
    return y


def big_module(instructions: int = 2000, rows: int = 8, cols: int = 16) -> Module:
    """A module of at least ``instructions`` instructions, stacking layers like a transformer."""
    b = Builder("compile_time")
    x = b.parameter(shape.array("f32", [rows, cols]), "x")
    w = b.parameter(shape.array("f32", [cols, cols]), "w")
    gamma = b.parameter(shape.array("f32", [cols]), "gamma")
    beta = b.parameter(shape.array("f32", [cols]), "beta")
    while b.module.instruction_count() + len(b.computation.instructions) < instructions:
        x = _layer(b, x, w, gamma, beta, rows, cols)
    return b.build(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 instructions, one run (CI)")
    args = parser.parse_args()
    if args.quick:
        args.instructions, args.repeat = 200, 1
    module = big_module(args.instructions)
    print(
        f"module: {module.instruction_count()} instructions in "
        f"{len(module.computations)} computations"
    )
    best = None
    for _ in range(args.repeat):
        work = module.clone()
        start, cpu_start = time.perf_counter(), time.process_time()
        report = run_default_pipeline(work)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        if best is None or elapsed < best[0]:
            best = (elapsed, cpu, report, work)
    elapsed, cpu, report, work = best
    fusions = sum(1 for i in work.entry.instructions if i.opcode.value == "fusion")
    print(
        f"pipeline: {elapsed * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms cpu "
        f"(best of {args.repeat}); after: {work.instruction_count()} instructions, "
        f"{fusions} fusions"
    )
    for name, seconds in sorted(report.seconds_by_pass().items(), key=lambda kv: -kv[1]):
        print(f"  {name:<36} {seconds * 1e3:9.2f} ms")
    if not args.quick:
        budget = args.instructions / 2000
        print(
            f"budget: {budget * 1e3:.0f} ms for {args.instructions} instructions -> "
            + ("OK" if cpu < budget else "OVER")
        )


if __name__ == "__main__":
    main()
