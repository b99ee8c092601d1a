"""Parse speed of HLO text: a ~1 MB module and a 200k-element constant (goal: well under 1 s).

``--quick``: a tenth of the sizes, one run (the CI smoke test)."""

from __future__ import annotations

import sys
import time

import numpy as np

from hlort import Builder
from hlort.text import parse_module, print_module


def _big_module(n: int) -> str:
    lines = [
        "HloModule big",
        "",
        "ENTRY %main (p: f32[128,256]) -> f32[128,256] {",
        "  %p = f32[128,256]{1,0} parameter(0)",
    ]
    prev = "p"
    for i in range(n):
        lines.append(
            f"  %add.{i} = f32[128,256]{{1,0}} add(f32[128,256]{{1,0}} %{prev}, f32[128,256]{{1,0}}"
            f' %p), metadata={{op_name="jit(f)/add" source_file="/tmp/model.py" source_line={i}}}'
        )
        prev = f"add.{i}"
    lines[-1] = "  ROOT" + lines[-1][1:]
    return "\n".join(lines) + "\n}\n"


def _time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    quick = "--quick" in sys.argv
    scale, repeat = (10, 1) if quick else (1, 3)
    text = _big_module(5800 // scale)
    t = _time(lambda: parse_module(text), repeat)
    print(f"HLO module, {len(text) / 1e6:.2f} MB: parse {t:.3f} s")
    b = Builder("main")
    values = np.random.default_rng(0).standard_normal(200_000 // scale).astype(np.float32)
    const_text = print_module(b.build(b.constant(values)))
    t = _time(lambda: parse_module(const_text, verify=False), repeat)
    print(
        f"{values.size // 1000}k-element f32 constant ({len(const_text) / 1e6:.2f} MB): "
        f"parse {t:.3f} s"
    )


if __name__ == "__main__":
    main()
