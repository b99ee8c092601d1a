"""Dispatch cost of ``jit(x + 1)`` on f32[4]: through hlort-jax vs JAX's CPU vs hlort's own.

    python benchmarks/jax_dispatch.py [--platform hlort_cpu] [--calls 2000] [--quick]

Per-call microseconds (median of 7 rounds) for: the jitted function on the hlort platform
through the PJRT bridge, the same on JAX's own CPU, and hlort.Executable called with an
hlort buffer on the same backend. Goal (issue 13): <= 100 us on hlort_cpu.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

_PROGRAM = """module @m {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %one = stablehlo.constant dense<1.0> : tensor<4xf32>
    %0 = stablehlo.add %x, %one : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"""


def per_call_us(fn, calls: int, rounds: int = 7) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="hlort_cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="20 calls x 1 round (a smoke run)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else 7
    if args.quick:
        args.calls = 20
    try:
        import jax
        import numpy as np
    except ImportError:
        print("jax is not installed: pip install hlort-jax")
        return 2
    import hlort

    results = {}
    for label, device in (
        ("bridge", jax.devices(args.platform)[0]),
        ("jax-cpu", jax.devices("cpu")[0]),
    ):
        x = jax.device_put(np.arange(4, dtype=np.float32), device)
        f = jax.jit(lambda v: v + 1)
        f(x).block_until_ready()
        results[f"{label} (async)"] = per_call_us(lambda f=f, x=x: f(x), args.calls, rounds)
        results[f"{label} (blocking)"] = per_call_us(
            lambda f=f, x=x: f(x).block_until_ready(), args.calls, rounds
        )
    backend = args.platform.removeprefix("hlort_")
    exe = hlort.compile(_PROGRAM, backend)
    buf = hlort.device_put(np.arange(4, dtype=np.float32), backend)
    exe(buf)
    results["hlort.Executable (buffer)"] = per_call_us(lambda: exe(buf), args.calls, rounds)
    print(f"jit(x + 1) on f32[4], {args.calls} calls x {rounds} rounds, median us per call")
    for name, us in results.items():
        print(f"  {name:<28} {us:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
