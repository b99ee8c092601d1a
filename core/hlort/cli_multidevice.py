"""``hlort run`` for a module whose header asks for several replicas or partitions.

The module runs on that many devices of the platform at once (never on one with its shardings
ignored). Inputs and outputs are the global arrays, as ``jax.jit`` takes and returns them:
each argument is cut into the tiles its parameter sharding names, and each output put together
from its tiles (:mod:`hlort.runtime.sharded_call`). The report lists the devices that ran it.
"""

from __future__ import annotations

import argparse
import time

from hlort.errors import InvalidArgument

_MORE_DEVICES = {
    "cpu": "HLORT_CPU_DEVICES=N starts N virtual cpu devices",
    "interpreter": "HLORT_INTERPRETER_DEVICES=N starts N interpreter devices",
}


def copies(module) -> int:
    return int(module.config.get("num_replicas", 1)) * int(module.config.get("num_partitions", 1))


def require_devices(backend, module) -> None:
    """INVALID_ARGUMENT naming the counts and how to start more devices, before compiling."""
    replicas = int(module.config.get("num_replicas", 1))
    partitions = int(module.config.get("num_partitions", 1))
    have = len(backend.devices())
    if have < replicas * partitions:
        hint = _MORE_DEVICES.get(backend.platform, "see `hlort devices` for platforms with more")
        raise InvalidArgument(
            f"{module.name} needs {replicas * partitions} devices ({replicas} replica(s) x "
            f"{partitions} partition(s)) but {backend.platform} has {have}; {hint}"
        )


def run_on_devices(args: argparse.Namespace, module, fmt: str, options=None):
    """Compile and run; returns (report, global outputs, executable, transfer-in seconds,
    transfer-out seconds) for ``hlort run`` to print."""
    import hlort
    from hlort.cli_run_report import run_report, timed_repeats
    from hlort.runtime.npz_io import read_inputs, write_outputs
    from hlort.runtime.sample_inputs import random_inputs
    from hlort.runtime.sharded_call import compile_sharded

    replicas = int(module.config.get("num_replicas", 1))
    partitions = int(module.config.get("num_partitions", 1))
    needed = replicas * partitions
    if args.device is not None:
        raise InvalidArgument(
            f"--device picks one device, but {module.name} runs on {needed} ({replicas} "
            f"replica(s) x {partitions} partition(s)); leave --device out"
        )
    backend = hlort.backend(args.platform)
    require_devices(backend, module)
    start = time.perf_counter()
    sharded = compile_sharded(backend, module, options)
    compile_s = time.perf_counter() - start
    shapes = sharded.input_shapes
    inputs = read_inputs(args.inputs, shapes) if args.inputs else random_inputs(shapes, seed=0)
    start = time.perf_counter()
    per_device = sharded.shard_arguments(inputs)
    buffers = [
        [backend.device_put(a, device) for a in arrays]
        for device, arrays in zip(sharded.devices, per_device, strict=True)
    ]
    for row in buffers:
        for b in row:
            b.block_until_ready()
    transfer_in_s = time.perf_counter() - start
    outputs: list = []  # the last call's rows, one per device (empty rows for no outputs)

    def call() -> list:
        outputs[:] = sharded.exe.execute_sharded(buffers)
        return [out for row in outputs for out in row]

    _, times = timed_repeats(call, args.repeat)
    start = time.perf_counter()
    results = sharded.assemble([[out.numpy() for out in row] for row in outputs])
    transfer_out_s = time.perf_counter() - start
    if args.output:
        write_outputs(args.output, results)
    report = run_report(
        module=module,
        fmt=fmt,
        platform=backend.platform,
        devices=[str(d) for d in sharded.devices],
        input_shapes=shapes,
        output_shapes=sharded.output_shapes,
        inputs_source=args.inputs or "random (seed 0)",
        compile_s=compile_s,
        times=times,
        output_file=args.output,
        extra={"num_replicas": replicas, "num_partitions": partitions},
    )
    return report, results, sharded.exe, transfer_in_s, transfer_out_s
