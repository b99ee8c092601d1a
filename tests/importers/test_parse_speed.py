"""Parsing is fast: a synthetic 1 MB program, mostly hex blobs as JAX writes them, parses and
imports well under a second."""

from __future__ import annotations

import time

import numpy as np

from hlort.importers.stablehlo import import_stablehlo, parse_mlir


def synthetic_program(target_bytes: int = 1 << 20) -> str:
    rng = np.random.default_rng(0)
    lines = [
        "module @jit_big attributes {mhlo.num_partitions = 1 : i32} {",
        '  func.func public @main() -> (tensor<64x64xf32> {jax.result_info = ""}) {',
    ]
    acc = "%c0"
    lines.append(f"    {acc} = stablehlo.constant dense<0.000000e+00> : tensor<64x64xf32>")
    i = 0
    while sum(len(line) for line in lines) < target_bytes:
        blob = rng.standard_normal((64, 64)).astype(np.float32).tobytes().hex().upper()
        lines.append(f'    %b{i} = stablehlo.constant dense<"0x{blob}"> : tensor<64x64xf32>')
        values = ", ".join(f"{v:.6e}" for v in rng.standard_normal(64))
        lines.append(f"    %l{i} = stablehlo.constant dense<[{values}]> : tensor<64xf32>")
        lines.append(
            f"    %r{i} = stablehlo.broadcast_in_dim %l{i}, dims = [1] : "
            f"(tensor<64xf32>) -> tensor<64x64xf32>"
        )
        lines.append(f"    %m{i} = stablehlo.multiply %b{i}, %r{i} : tensor<64x64xf32>")
        lines.append(f"    %a{i} = stablehlo.add {acc}, %m{i} : tensor<64x64xf32>")
        acc = f"%a{i}"
        i += 1
    lines += [f"    return {acc} : tensor<64x64xf32>", "  }", "}"]
    return "\n".join(lines) + "\n"


def test_one_megabyte_parses_well_under_a_second():
    text = synthetic_program()
    assert len(text) >= 1 << 20
    start = time.perf_counter()
    module = parse_mlir(text, "big.mlir")
    parse_seconds = time.perf_counter() - start
    assert len(module.functions["main"].body.blocks[0].ops) > 100
    assert parse_seconds < 1.0, f"parsing 1 MB took {parse_seconds:.2f} s"
    start = time.perf_counter()
    import_stablehlo(text, "big.mlir")
    assert time.perf_counter() - start < 3.0
