"""``make demo``: the main job end to end, on whatever backends this machine has.

It lists the backends, then takes the seed programs (``reduce_sum(x + y*z)`` and
``softmax(relu(matmul + bias))``), prints their HLO, shows what the core passes make of them,
compiles them for the default backend, runs them and checks the results against NumPy.
"""

from __future__ import annotations

import time

import numpy as np

import hlort
from hlort import examples
from hlort.ir import Opcode
from hlort.text.printer import print_module


def _rule(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 76 - len(title)))


def _fusions(module) -> int:
    return sum(len(c.instructions_with(Opcode.FUSION)) for c in module.computations)


def show_backends() -> None:
    _rule("backends")
    errors = hlort.backend_errors()
    for name in hlort.backends():
        devs = ", ".join(str(d) for d in hlort.devices(name))
        print(f"  {name:<12} ok           {devs}")
    for name, why in errors.items():
        print(f"  {name:<12} unavailable  {why}")
    print(f"  default backend: {hlort.default_backend()}")


def run_program(title: str, module, reference, inputs) -> None:
    _rule(title)
    print(print_module(module))
    start = time.perf_counter()
    exe = hlort.compile(module)
    compile_s = time.perf_counter() - start
    optimized = exe.module
    if optimized is not module:
        print(
            f"-- after the core passes: {optimized.instruction_count()} instructions, "
            f"{_fusions(optimized)} fusion(s)"
        )
        print(print_module(optimized))
    start = time.perf_counter()
    got = exe(*inputs)
    run_s = time.perf_counter() - start
    want = reference(*inputs)
    err = float(np.max(np.abs(np.asarray(got, np.float64) - want))) if np.size(want) else 0.0
    status = "matches NumPy" if np.allclose(got, want, rtol=1e-4, atol=1e-5) else "MISMATCH"
    print(
        f"-- {exe.backend.platform}: compile {compile_s * 1e3:.1f} ms, run {run_s * 1e3:.2f} ms, "
        f"max |error| {err:.2e}: {status}"
    )
    if status != "matches NumPy":
        raise SystemExit(1)


def main() -> None:
    show_backends()
    rng = np.random.default_rng(0)
    n = 1 << 16
    module, ref = examples.reduce_sum_fma(n)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    run_program("reduce_sum(x + y*z)", module, ref, xs)

    module, ref = examples.softmax_relu_matmul(64, 128, 32)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(64, 128), (128, 32), (32,)]]
    run_program("softmax(relu(matmul + bias))", module, ref, args)


if __name__ == "__main__":
    main()
