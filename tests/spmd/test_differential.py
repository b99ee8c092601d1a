"""Differential tests of the partitioner: generated programs x shardings on N interpreter devices
give the single-device result.

Every program below is partitioned under shardings drawn (seeded) from all the ways to cut its
parameters and its result over 2 or 4 devices (replicated, one dimension cut, two dimensions cut,
cut with a replicated subgroup, a permuted device order). Programs that only move data must match
bitwise; programs that sum (reduce, dot, convolution) within rtol 1e-5 / atol 1e-5 of f32 values of
order 1 (partial sums per device, then an all-reduce, add in another order). Cases the partitioner
runs replicated (sort along a cut dimension...) must still match and must say why.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from hlort.ir.sharding import HloSharding
from hlort.passes.spmd_pass import SpmdPartitioner
from hlort.runtime.sharded_call import compile_sharded
from hlort.testing.spmd_programs import single_device
from hlort.text.parser import parse_module
from hlort.text.sharding_syntax import parse_sharding

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
MAX = (
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] maximum(a, b)\n}\n"
)
LT = (
    "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=LT\n}\n"
)

# name -> (computations, params [(shape dims, dtype)], body using p0.., result dims, exact?)
PROGRAMS = {
    "elementwise": (
        "",
        [((8, 4),), ((8, 4),)],
        "n = f32[8,4] negate(p0)\n  ROOT r = f32[8,4] multiply(n, p1)",
        (8, 4),
        True,
    ),
    "broadcast": (
        "",
        [((4,),), ((8, 4),)],
        "b = f32[8,4] broadcast(p0), dimensions={1}\n  ROOT r = f32[8,4] subtract(b, p1)",
        (8, 4),
        True,
    ),
    "clamp-scalar-bounds": (
        "",
        [((8, 4),)],
        "lo = f32[] constant(-0.5)\n  hi = f32[] constant(0.5)\n"
        "  ROOT r = f32[8,4] clamp(lo, p0, hi)",
        (8, 4),
        True,
    ),
    "reduce-window": (
        MAX,
        [((8, 6),)],
        "z = f32[] constant(-inf)\n"
        "  ROOT r = f32[8,3] reduce-window(p0, z), window={size=1x2 stride=1x2}, to_apply=max",
        (8, 3),
        True,
    ),
    "dynamic-slice": (
        "",
        [((8, 6),), ((), "s32")],
        "z = s32[] constant(0)\n  ROOT r = f32[8,3] dynamic-slice(p0, z, p1), "
        "dynamic_slice_sizes={8,3}",
        (8, 3),
        True,
    ),
    "dynamic-update-slice": (
        "",
        [((8, 6),), ((8, 2),), ((), "s32")],
        "z = s32[] constant(0)\n  ROOT r = f32[8,6] dynamic-update-slice(p0, p1, z, p2)",
        (8, 6),
        True,
    ),
    "sort-other-dim": (
        LT,
        [((8, 4),)],
        "ROOT r = f32[8,4] sort(p0), dimensions={1}, to_apply=lt",
        (8, 4),
        True,
    ),
    "transpose": (
        "",
        [((8, 4),)],
        "ROOT r = f32[4,8] transpose(p0), dimensions={1,0}",
        (4, 8),
        True,
    ),
    "reshape-split": ("", [((8, 4),)], "ROOT r = f32[2,4,4] reshape(p0)", (2, 4, 4), True),
    "reshape-merge": ("", [((4, 2, 4),)], "ROOT r = f32[8,4] reshape(p0)", (8, 4), True),
    "reduce-sum-0": (
        ADD,
        [((8, 4),)],
        "z = f32[] constant(0)\n  ROOT r = f32[4] reduce(p0, z), dimensions={0}, to_apply=add",
        (4,),
        False,
    ),
    "reduce-sum-all": (
        ADD,
        [((8, 4),)],
        "z = f32[] constant(0)\n  ROOT r = f32[] reduce(p0, z), dimensions={0,1}, to_apply=add",
        (),
        False,
    ),
    "reduce-max-1": (
        MAX,
        [((8, 4),)],
        "z = f32[] constant(-inf)\n  ROOT r = f32[8] reduce(p0, z), dimensions={1}, to_apply=max",
        (8,),
        True,
    ),
    "reduce-init-not-identity": (
        ADD,
        [((8, 4),)],
        "z = f32[] constant(1)\n  ROOT r = f32[4] reduce(p0, z), dimensions={0}, to_apply=add",
        (4,),
        False,
    ),
    "dot": (
        "",
        [((8, 4),), ((4, 6),)],
        "ROOT r = f32[8,6] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        (8, 6),
        False,
    ),
    "dot-batch": (
        "",
        [((2, 8, 4),), ((2, 4, 4),)],
        "ROOT r = f32[2,8,4] dot(p0, p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
        "rhs_batch_dims={0}, rhs_contracting_dims={1}",
        (2, 8, 4),
        False,
    ),
    "dot-transposed": (
        "",
        [((4, 8),), ((6, 4),)],
        "ROOT r = f32[8,6] dot(p0, p1), lhs_contracting_dims={0}, rhs_contracting_dims={1}",
        (8, 6),
        False,
    ),
    "convolution": (
        "",
        [((4, 6, 6, 2),), ((3, 3, 2, 4),)],
        "ROOT r = f32[4,6,6,4] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
        "dim_labels=b01f_01io->b01f",
        (4, 6, 6, 4),
        False,
    ),
    "gather": (
        "",
        [((10, 4),), ((8, 1), "s32")],
        "ROOT r = f32[8,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}",
        (8, 4),
        True,
    ),
    "concatenate": (
        "",
        [((8, 4),), ((8, 4),)],
        "ROOT r = f32[8,8] concatenate(p0, p1), dimensions={1}",
        (8, 8),
        True,
    ),
    "slice": ("", [((8, 8),)], "ROOT r = f32[8,4] slice(p0), slice={[0:8], [2:6]}", (8, 4), True),
    "pad": (
        "",
        [((8, 4),)],
        "z = f32[] constant(0)\n  ROOT r = f32[8,8] pad(p0, z), padding=0_0x2_2",
        (8, 8),
        True,
    ),
    "reverse": ("", [((8, 4),)], "ROOT r = f32[8,4] reverse(p0), dimensions={0}", (8, 4), True),
    "sort": (
        LT,
        [((8, 4),)],
        "ROOT r = f32[8,4] sort(p0), dimensions={0}, to_apply=lt",
        (8, 4),
        True,
    ),
    "scatter-batched": (
        ADD,
        [((4, 6),), ((4, 2, 1), "s32"), ((4, 2),)],
        "ROOT r = f32[4,6] scatter(p0, p1, p2), update_window_dims={}, "
        "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, "
        "input_batching_dims={0}, scatter_indices_batching_dims={0}, to_apply=add",
        (4, 6),
        False,
    ),
}


def _shardings(rank: int, devices: int) -> list[HloSharding]:
    """Every way to lay out a value of ``rank`` over ``devices`` this test draws from."""
    out = [HloSharding.replicate()]
    ids = np.arange(devices)
    for dim in range(rank):
        out.append(HloSharding.split(rank, dim, ids))
        out.append(HloSharding.split(rank, dim, ids[::-1]))  # another device order
        if devices == 4:
            out.append(HloSharding.split(rank, dim, ids, replicas=2))
    if devices == 4:
        for a, b in itertools.combinations(range(rank), 2):
            shape = [1] * rank
            shape[a] = shape[b] = 2
            out.append(HloSharding.tiled(ids.reshape(shape)))
            out.append(HloSharding.tiled(ids.reshape(2, 2).T.reshape(shape)))
    return out


def _module_text(name: str, devices: int, shardings: list[HloSharding], result: HloSharding):
    comps, params, body, dims, _ = PROGRAMS[name]
    lines = []
    for i, (spec, s) in enumerate(zip(params, shardings, strict=True)):
        dtype = spec[1] if len(spec) > 1 else "f32"
        shape = ",".join(map(str, spec[0]))
        lines.append(f"p{i} = {dtype}[{shape}] parameter({i}), sharding={s}")
    body = body.replace("ROOT r =", "ROOT r =", 1)
    last = body.rsplit("\n", 1)
    tail = last[-1] + f", sharding={result}"
    body = (last[0] + "\n  " + tail) if len(last) == 2 else tail
    return (
        f"HloModule {name.replace('-', '_')}, num_partitions={devices}\n\n{comps}\n"
        "ENTRY e {\n  " + "\n  ".join(lines) + "\n  " + body + "\n}\n"
    )


def _cases():
    rng = random.Random(17)
    cases = []
    for name, (_, params, _, dims, _) in PROGRAMS.items():
        for devices in (2, 4):
            pools = [_shardings(len(spec[0]), devices) for spec in params]
            results = _shardings(len(dims), devices)
            for k in range(3):
                chosen = [rng.choice(pool) for pool in pools]
                result = rng.choice(results) if k else HloSharding.replicate()
                cases.append(
                    pytest.param(name, devices, chosen, result, id=f"{name}-{devices}-{k}")
                )
    return cases


def _arguments(name: str, seed: int):
    rng = np.random.default_rng(seed)
    args = []
    for spec in PROGRAMS[name][1]:
        dims = spec[0]
        if len(spec) > 1:  # indices: in range of the operand's indexed dimension
            axis = 1 if name.startswith(("scatter", "dynamic")) else 0
            bound = PROGRAMS[name][1][0][0][axis]
            args.append(rng.integers(0, bound, dims).astype(np.int32))
        else:
            args.append(rng.standard_normal(dims).astype(np.float32))
    return args


@pytest.mark.parametrize("name, devices, shardings, result", _cases())
def test_partitioned_matches_single_device(interpreter, name, devices, shardings, result):
    text = _module_text(name, devices, shardings, result)
    module = parse_module(text)
    args = _arguments(name, seed=len(text))
    want = interpreter.compile(single_device(module))(*args)
    sharded = compile_sharded(interpreter, module)
    got = sharded(*args)
    if PROGRAMS[name][4]:
        np.testing.assert_array_equal(got, want, err_msg=text)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=text)


@pytest.mark.parametrize(
    "name, sharding, reason",
    [
        ("sort", "{devices=[4,1]0,1,2,3}", "rearranges dimension(s) [0]"),
        (
            "dynamic-slice",
            "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
            "slices dimension(s) [1]",
        ),
        ("reverse", "{devices=[4,1]0,1,2,3}", "rearranges dimension(s) [0]"),
        ("reduce-init-not-identity", "{devices=[4,1]0,1,2,3}", "not the reducer's identity"),
        ("reshape-split", "{devices=[4,1]0,1,2,3}", "splits or merges dimension 0"),
    ],
)
def test_what_cannot_be_partitioned_is_replicated_with_a_reason(name, sharding, reason):
    rest = [HloSharding.replicate()] * (len(PROGRAMS[name][1]) - 1)
    text = _module_text(name, 4, [parse_sharding(sharding), *rest], HloSharding.replicate())
    module = parse_module(text)
    partitioner = SpmdPartitioner()
    partitioner.run(module)
    reasons = [why for _, _, why in partitioner.last_report.replicated]
    assert any(reason in why for why in reasons), reasons
    assert reason in partitioner.last_report.text()
