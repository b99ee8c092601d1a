"""Runs hlort's HloModuleProtos on JAX's own CPU backend (XLA), one JSON line per program.

    python tests/interop/xla_cpu_runner.py cases|programs

Run by test_hlo_proto_execution.py in a subprocess: XLA aborts the process on some inputs it
does not support (a pre-fused module's CHECK failure), which must not take pytest down. Each
proto goes through jaxlib's HLO -> StableHLO conversion and XLA:CPU's compiler.

- ``cases``: two cases per op of the conformance suite's quick sample. Each proto runs beside
  XLA's parse of hlort's HLO text (XLA's own encoder) on the same inputs; the outputs must be
  bitwise equal.
- ``programs``: the real programs, optimized by hlort (fusion passes off: XLA:CPU compiles
  only unfused HLO), run on their inputs; results go back to the test, which compares them with
  JAX's expected outputs.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "real_programs", "programs")

# Conformance ops (or op-dtype pairs) XLA:CPU cannot run from a proto, and why (the protos
# themselves are checked by test_hlo_proto_xla.py).
CPU_CANNOT = {
    "bitcast": "XLA:CPU rejects a bitcast before its own layout assignment",
    "collective-broadcast": "XLA:CPU has no collective-broadcast thunk",
    "set-dimension-size": "jaxlib's HLO -> StableHLO conversion drops bounded dynamism",
    "get-dimension-size": "jaxlib's HLO -> StableHLO conversion drops bounded dynamism",
    "cbrt-c64": "XLA:CPU has no complex cbrt",
    "cbrt-c128": "XLA:CPU has no complex cbrt",
}


def _setup():
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax._src import xla_bridge
    from jax._src.lax import linalg
    from jax._src.lib import xla_client

    linalg.initialize_lapack()  # jaxlib's LAPACK kernels call through pointers set here
    backend = xla_bridge.get_backend("cpu")
    device = jax.devices("cpu")[0]

    def run(proto: bytes, args):
        code = xla_client._xla.mlir.hlo_to_stablehlo(proto)
        exe = backend.compile_and_load(
            code, xla_client.DeviceList((device,)), xla_client.CompileOptions()
        )
        out = exe.execute_sharded([jax.device_put(a, device) for a in args])
        return [np.asarray(x[0]) for x in out.disassemble_into_single_device_arrays()]

    return run


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def cases() -> None:
    from jaxlib import _hlo

    from hlort.testing.op_case import all_cases
    from hlort.text.hlo_proto_writer import hlo_module_proto_bytes
    from hlort.text.printer import print_module

    run = _setup()
    per_op: dict[str, int] = {}
    for case in all_cases(quick=True):
        per_op[case.op] = per_op.get(case.op, 0) + 1
        if per_op[case.op] > 2:  # two per op (two XLA compiles each) keeps this under a minute
            continue
        module = case.module
        row = {"id": case.id}
        cannot = CPU_CANNOT.get(case.op) or CPU_CANNOT.get(f"{case.op}-{case.dtype}")
        if cannot:
            row["skip"] = cannot
        elif module.config.get("num_replicas", 1) * module.config.get("num_partitions", 1) > 1:
            row["skip"] = "needs several devices"
        else:
            proto = hlo_module_proto_bytes(module)
            reference = _hlo.hlo_module_from_text(print_module(module))
            reference_proto = reference.as_serialized_hlo_module_proto()
            ours = _hlo.XlaComputation(proto).as_hlo_text(print_large_constants=True)
            theirs = _hlo.XlaComputation(reference_proto).as_hlo_text(print_large_constants=True)
            if ours != theirs:
                row["skip"] = "XLA's text parser misreads a constant of it (the reference)"
            else:
                inputs = case.inputs()
                try:
                    got, want = run(proto, inputs), run(reference_proto, inputs)
                except Exception as err:  # noqa: BLE001 - reported to the test
                    row["error"] = str(err).splitlines()[0][:300]
                else:
                    row["same"] = len(got) == len(want) and all(
                        _same_bits(a, b) for a, b in zip(got, want, strict=True)
                    )
        print(json.dumps(row), flush=True)


def programs() -> None:
    import hlort
    from hlort.text.hlo_proto_writer import hlo_module_proto_bytes

    run = _setup()
    os.environ["HLORT_FALLBACK"] = "allow"
    options = {"disable_passes": "instruction-fusion,multi-output-fusion"}
    for name in sorted(os.listdir(REAL)):
        for route in ("module.mlir", "module.hlo"):
            path = os.path.join(REAL, name, route)
            if not os.path.exists(path):
                continue
            row = {"name": name, "route": route}
            module = hlort.compile(open(path).read(), "interpreter", options=options).module
            # custom calls keep their operand and result layouts through import (as XLA's
            # operand_layout_constraints and result layouts), so the MLIR route runs too
            with np.load(os.path.join(REAL, name, "inputs.npz")) as data:
                args = [data[f"arg{i}"] for i in range(len(data.files))]
            try:
                outs = run(hlo_module_proto_bytes(module), args)
            except Exception as err:  # noqa: BLE001 - reported to the test
                row["error"] = str(err).splitlines()[0][:300]
            else:
                out_path = os.path.join(sys.argv[2], f"{name}-{route}.npz")
                np.savez(out_path, **{f"out{i}": o for i, o in enumerate(outs)})
                row["outputs"] = out_path
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    {"cases": cases, "programs": programs}[sys.argv[1]]()
