"""Helpers: run an HLO module on N interpreter devices and a NumPy model of the groups."""

from __future__ import annotations

import numpy as np

from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.plugin.options import CompileOptions
from hlort.text import parse_module

_CLIENTS: dict[int, object] = {}


def client(n: int):
    if n not in _CLIENTS:
        _CLIENTS[n] = InterpreterPlugin(device_count=n).create_client()
    return _CLIENTS[n]


def run(text: str, args_per_device: list[list[np.ndarray]], replicas: int, partitions: int = 1):
    """Compile ``text`` for ``replicas x partitions`` and run copy k (flattened id) on device k;
    returns the host outputs of each copy (a list per copy)."""
    n = replicas * partitions
    c = client(n)
    module = parse_module(text)
    exe = c.compile(module, CompileOptions(num_replicas=replicas, num_partitions=partitions))
    devices = c.devices()
    bufs = [
        [c.buffer_from_host(np.asarray(a), devices[k]) for a in args]
        for k, args in enumerate(args_per_device)
    ]
    outs = exe.execute(bufs)
    return [[o.to_host().result(60) for o in per] for per in outs]


def model_groups(mode: str, groups, replicas: int, partitions: int) -> list[list[int]]:
    """The participant groups (flattened ids) written out from the StableHLO spec's loops."""
    P = partitions
    if mode == "flattened":
        return [list(g) for g in groups]
    if mode == "cross_partition":
        gs = groups or [list(range(partitions))]
        return [[r * P + p for p in g] for r in range(replicas) for g in gs]
    gs = groups or [list(range(replicas))]
    if mode == "cross_replica":
        return [[r * P + p for r in g] for p in range(partitions) for g in gs]
    out = []
    for g in gs:  # cross_replica_and_partition
        out.append([r * P + p for p in range(partitions) for r in g])
    return out


def attrs_for(mode: str, groups) -> str:
    text = "replica_groups={" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    if mode == "cross_replica":
        return text
    if mode == "flattened":
        return "channel_id=1, " + text + ", use_global_device_ids=true"
    return "channel_id=1, " + text  # cross-partition (no such attr) or cross-replica-and-partition


def hlo_type(dtype: np.dtype) -> str:
    return {
        "float32": "f32",
        "int32": "s32",
        "bool": "pred",
        "complex64": "c64",
        "uint8": "u8",
        "bfloat16": "bf16",
        "float64": "f64",
    }[np.dtype(dtype).name]


def shape_text(dtype, dims) -> str:
    return f"{hlo_type(dtype)}[{','.join(map(str, dims))}]"


def values(dtype, dims, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, dims).astype(bool)
    if dt.kind in "iu":
        return rng.integers(-50 if dt.kind == "i" else 0, 50, dims).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dt)
    return rng.standard_normal(dims).astype(dt)
