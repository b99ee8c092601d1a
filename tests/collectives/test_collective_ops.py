"""Every collective x group mode on 2, 4 and 8 interpreter devices against a NumPy model.

Each device runs its own copy (a thread per device) and the copies meet at the execution's
rendezvous; the expectations are computed here from the spec's definition of each mode and op
(tests/collectives/multi_device.py), with literal results for a few cases so the model itself
is pinned down.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from multi_device import attrs_for, model_groups, run, shape_text, values

ADD = """%add (a: {t}[], b: {t}[]) -> {t}[] {{
  %a = {t}[] parameter(0)
  %b = {t}[] parameter(1)
  ROOT %s = {t}[] add(%a, %b)
}}
"""
# not associative nor commutative: pins the fold order (group order, left to right)
AXPY = """%axpy (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %two = s32[] constant(2)
  %b2 = s32[] multiply(%b, %two)
  ROOT %s = s32[] subtract(%a, %b2)
}
"""

# (replicas, partitions, mode, groups): the modes of ops with use_global_device_ids
REDUCING = [
    (2, 1, "cross_replica", []),
    (4, 1, "cross_replica", [[0, 1], [2, 3]]),
    (8, 1, "cross_replica", [[0, 2, 4, 6], [1, 3, 5, 7]]),
    (2, 2, "cross_replica_and_partition", []),
    (2, 4, "cross_replica_and_partition", [[1, 0]]),
    (2, 2, "flattened", [[0, 3], [1, 2]]),
    (1, 8, "flattened", [[7, 6, 5, 4, 3, 2, 1, 0]]),
    (4, 2, "cross_replica", [[3, 1], [0, 2]]),
]
# the modes of ops without it (all-to-all, collective-broadcast, collective-permute)
MOVING = [
    (2, 1, "cross_replica", []),
    (4, 1, "cross_replica", [[2, 3], [0, 1]]),
    (8, 1, "cross_replica", []),
    (2, 2, "cross_partition", []),
    (2, 4, "cross_partition", [[3, 0], [1, 2]]),
    (4, 2, "cross_replica", [[0, 1, 2, 3]]),
]


def _ids(config):
    r, p, mode, groups = config
    return f"{r}x{p}-{mode}-{'g' if groups else 'all'}{len(groups)}"


def _module(header: str, computations: str, param: str, body: str, root_shape: str) -> str:
    return (
        f"HloModule {header}\n\n{computations}\nENTRY %main (x: {param}) -> {root_shape} {{\n"
        f"  %x = {param} parameter(0)\n{body}}}\n"
    )


def _inputs(n, dtype, dims):
    return [[values(dtype, dims, seed=17 + k)] for k in range(n)]


def _groups_of(config):
    r, p, mode, groups = config
    return model_groups(mode, groups, r, p)


def _member(groups, k):
    for g in groups:
        if k in g:
            return g, g.index(k)
    return None, None


DTYPES = [np.float32, np.int32, np.bool_, np.complex64, np.uint8, ml_dtypes.bfloat16]


@pytest.mark.parametrize("config", REDUCING, ids=_ids)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_all_reduce_sums_in_group_order(config, dtype):
    r, p, mode, groups = config
    n = r * p
    dims = (2, 3)
    t = shape_text(dtype, dims).split("[")[0]
    text = _module(
        "m",
        ADD.format(t=t),
        shape_text(dtype, dims),
        f"  ROOT %r = {shape_text(dtype, dims)} all-reduce(%x), {attrs_for(mode, groups)}, "
        f"to_apply=%add\n",
        shape_text(dtype, dims),
    )
    args = _inputs(n, dtype, dims)
    outs = run(text, args, r, p)
    model = _groups_of(config)
    for k in range(n):
        group, _ = _member(model, k)
        add = np.logical_or if np.dtype(dtype) == np.bool_ else np.add
        want = functools.reduce(add, [args[m][0] for m in group])
        np.testing.assert_array_equal(outs[k][0], want.astype(dtype), err_msg=f"copy {k}")


def test_all_reduce_any_reducer_folds_left_to_right_in_group_order():
    text = _module(
        "m, replica_count=4",
        AXPY,
        "s32[3]",
        "  ROOT %r = s32[3] all-reduce(%x), replica_groups={{2,0,3},{1}}, to_apply=%axpy\n",
        "s32[3]",
    )
    args = [[np.array([k, 10 * k, 1], np.int32)] for k in range(4)]
    outs = run(text, args, 4)
    # (v2 - 2 v0) - 2 v3 for the group {2,0,3}; {1} keeps its own value
    want = (args[2][0] - 2 * args[0][0]) - 2 * args[3][0]
    for k in (0, 2, 3):
        np.testing.assert_array_equal(outs[k][0], want)
    np.testing.assert_array_equal(outs[1][0], args[1][0])
    np.testing.assert_array_equal(want, [2 - 0 - 6, 20 - 0 - 60, 1 - 2 - 2])


def test_scalar_and_empty_all_reduce_keep_their_shapes():
    text = _module(
        "m",
        ADD.format(t="f32"),
        "f32[]",
        "  %e = f32[0,3] broadcast(%x), dimensions={}\n"
        "  %s = f32[] all-reduce(%x), replica_groups={}, to_apply=%add\n"
        "  %z = f32[0,3] all-reduce(%e), replica_groups={}, to_apply=%add\n"
        "  ROOT %t = (f32[], f32[0,3]) tuple(%s, %z)\n",
        "(f32[], f32[0,3])",
    )
    outs = run(text, [[np.float32(k + 1)] for k in range(2)], 2)
    for k in range(2):
        assert outs[k][0].shape == () and outs[k][0] == 3.0
        assert outs[k][1].shape == (0, 3)


def test_flattened_groups_literal_2x2():
    text = _module(
        "m, replica_count=2, num_partitions=2",
        ADD.format(t="s32"),
        "s32[]",
        "  ROOT %r = s32[] all-reduce(%x), channel_id=1, replica_groups={{0,3},{1,2}}, "
        "use_global_device_ids=true, to_apply=%add\n",
        "s32[]",
    )
    outs = run(text, [[np.int32(10**k)] for k in range(4)], 2, 2)
    assert [int(o[0]) for o in outs] == [1001, 110, 110, 1001]


def test_cross_replica_and_partition_literal_2x2():
    """Groups of replicas, every partition of them: {0,1} -> all four copies."""
    text = _module(
        "m, replica_count=2, num_partitions=2",
        ADD.format(t="s32"),
        "s32[]",
        "  ROOT %r = s32[] all-reduce(%x), channel_id=1, replica_groups={{0},{1}}, to_apply=%add\n",
        "s32[]",
    )
    outs = run(text, [[np.int32(10**k)] for k in range(4)], 2, 2)
    assert [int(o[0]) for o in outs] == [11, 11, 1100, 1100]


@pytest.mark.parametrize("config", REDUCING, ids=_ids)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64], ids=str)
@pytest.mark.parametrize("dim", [0, 1])
def test_all_gather_and_reduce_scatter(config, dtype, dim):
    r, p, mode, groups = config
    n = r * p
    model = _groups_of(config)
    size = len(model[0])
    dims = [2 * size, 3] if dim == 0 else [3, 2 * size]
    gathered = list(dims)
    gathered[dim] *= size
    scattered = list(dims)
    scattered[dim] //= size
    t = shape_text(dtype, dims).split("[")[0]
    reducer = "or" if np.dtype(dtype) == np.bool_ else "add"
    comp = ADD.format(t=t).replace("add(%a, %b)", f"{reducer}(%a, %b)")
    a = attrs_for(mode, groups)
    text = _module(
        "m",
        comp,
        shape_text(dtype, dims),
        f"  %g = {shape_text(dtype, gathered)} all-gather(%x), {a}, dimensions={{{dim}}}\n"
        f"  %s = {shape_text(dtype, scattered)} reduce-scatter(%x), {a}, dimensions={{{dim}}}, "
        f"to_apply=%add\n"
        f"  ROOT %t = ({shape_text(dtype, gathered)}, {shape_text(dtype, scattered)}) "
        f"tuple(%g, %s)\n",
        f"({shape_text(dtype, gathered)}, {shape_text(dtype, scattered)})",
    )
    args = _inputs(n, dtype, dims)
    outs = run(text, args, r, p)
    for k in range(n):
        group, pos = _member(model, k)
        vals = [args[m][0] for m in group]
        np.testing.assert_array_equal(outs[k][0], np.concatenate(vals, axis=dim))
        add = np.logical_or if np.dtype(dtype) == np.bool_ else np.add
        total = functools.reduce(add, vals).astype(dtype)
        np.testing.assert_array_equal(outs[k][1], np.split(total, size, axis=dim)[pos])


@pytest.mark.parametrize("config", MOVING, ids=_ids)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64], ids=str)
def test_all_to_all_and_collective_broadcast(config, dtype):
    r, p, mode, groups = config
    n = r * p
    model = _groups_of(config)
    size = len(model[0])
    dims = [size * 2, 3]
    s = shape_text(dtype, dims)
    a = attrs_for(mode, groups)
    text = _module(
        "m",
        "",
        s,
        f"  %a = {s} all-to-all(%x), {a}, dimensions={{0}}\n"
        f"  %b = {s} collective-broadcast(%x), {a}\n"
        f"  ROOT %t = ({s}, {s}) tuple(%a, %b)\n",
        f"({s}, {s})",
    )
    args = _inputs(n, dtype, dims)
    outs = run(text, args, r, p)
    for k in range(n):
        group, pos = _member(model, k)
        pieces = [np.split(args[m][0], size, axis=0)[pos] for m in group]
        np.testing.assert_array_equal(outs[k][0], np.concatenate(pieces, axis=0))
        np.testing.assert_array_equal(outs[k][1], args[group[0]][0])


def test_all_to_all_tuple_form():
    s = "s32[2]"
    text = _module(
        "m, replica_count=3",
        "",
        s,
        f"  %y = {s} negate(%x)\n  %z = {s} add(%x, %x)\n"
        f"  ROOT %a = ({s}, {s}, {s}) all-to-all(%x, %y, %z), replica_groups={{{{0,1,2}}}}\n",
        f"({s}, {s}, {s})",
    )
    args = [[np.array([k, k + 10], np.int32)] for k in range(3)]
    outs = run(text, args, 3)
    derived = [[a[0], -a[0], 2 * a[0]] for a in args]
    for k in range(3):
        for j in range(3):  # result j of copy k = operand k of copy j
            np.testing.assert_array_equal(outs[k][j], derived[j][k])


def test_collective_broadcast_leaves_copies_outside_every_group_zero():
    text = _module(
        "m, replica_count=4",
        "",
        "f32[2]",
        "  ROOT %b = f32[2] collective-broadcast(%x), replica_groups={{2,0}}\n",
        "f32[2]",
    )
    outs = run(text, [[np.full(2, k + 1, np.float32)] for k in range(4)], 4)
    assert [o[0].tolist() for o in outs] == [[3, 3], [0, 0], [3, 3], [0, 0]]


@pytest.mark.parametrize(
    "r, p, channel, pairs",
    [
        (2, 1, False, [(0, 1), (1, 0)]),
        (4, 1, False, [(0, 1), (1, 2), (2, 3)]),
        (8, 1, False, [(k, (k + 3) % 8) for k in range(8)]),
        (2, 2, True, [(0, 1)]),
        (2, 4, True, [(3, 0), (0, 3), (1, 1)]),
        (4, 2, False, [(3, 0)]),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64], ids=str)
def test_collective_permute(r, p, channel, pairs, dtype):
    n = r * p
    s = shape_text(dtype, (2, 2))
    text_pairs = ",".join(f"{{{a},{b}}}" for a, b in pairs)
    ch = "channel_id=7, " if channel else ""
    text = _module(
        "m",
        "",
        s,
        f"  %c = {s} collective-permute(%x), {ch}source_target_pairs={{{text_pairs}}}\n"
        f"  %st = ({s}, {s}, u32[], u32[]) collective-permute-start(%c), {ch}"
        f"source_target_pairs={{{text_pairs}}}\n"
        f"  ROOT %d = {s} collective-permute-done(%st)\n",
        s,
    )
    args = _inputs(n, dtype, (2, 2))

    def permute(vals):
        out = [np.zeros_like(v) for v in vals]
        for k in range(n):
            rep, part = divmod(k, p)
            for src, dst in pairs:
                if channel and part == dst:  # partition ids within each replica
                    out[k] = vals[rep * p + src]
                if not channel and rep == dst:  # replica ids within each partition
                    out[k] = vals[src * p + part]
        return out

    want = permute(permute([a[0] for a in args]))
    outs = run(text, args, r, p)
    for k in range(n):
        np.testing.assert_array_equal(outs[k][0], want[k], err_msg=f"copy {k}")


def test_async_pairs_compute_their_collectives():
    s, g = "f32[2,2]", "f32[4,2]"
    text = _module(
        "m, replica_count=2",
        ADD.format(t="f32"),
        s,
        f"  %rs = {s} all-reduce-start(%x), replica_groups={{}}, to_apply=%add\n"
        f"  %rd = {s} all-reduce-done(%rs)\n"
        f"  %gs = ({s}, {g}) all-gather-start(%x), replica_groups={{{{0,1}}}}, dimensions={{0}}\n"
        f"  %gd = {g} all-gather-done(%gs)\n"
        f"  ROOT %t = ({s}, {g}) tuple(%rd, %gd)\n",
        f"({s}, {g})",
    )
    args = _inputs(2, np.float32, (2, 2))
    outs = run(text, args, 2)
    for k in range(2):
        np.testing.assert_array_equal(outs[k][0], args[0][0] + args[1][0])
        np.testing.assert_array_equal(outs[k][1], np.concatenate([args[0][0], args[1][0]]))


def test_replica_and_partition_ids_are_each_copys_own():
    text = (
        "HloModule m, replica_count=2, num_partitions=4\n\nENTRY %main () -> (u32[], u32[]) {\n"
        "  %r = u32[] replica-id()\n  %p = u32[] partition-id()\n"
        "  ROOT %t = (u32[], u32[]) tuple(%r, %p)\n}\n"
    )
    outs = run(text, [[] for _ in range(8)], 2, 4)
    assert [(int(a), int(b)) for a, b in outs] == [divmod(k, 4) for k in range(8)]


def test_collective_in_a_loop_meets_the_same_iteration():
    """Each trip of a while loop is its own step of the rendezvous."""
    text = """HloModule m, replica_count=4

%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}

%cond (s: (s32[], s32[])) -> pred[] {
  %s = (s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %three), direction=LT
}

%body (s: (s32[], s32[])) -> (s32[], s32[]) {
  %s = (s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = s32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %sum = s32[] all-reduce(%v), replica_groups={}, to_apply=%add
  ROOT %t = (s32[], s32[]) tuple(%i1, %sum)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], s32[]) tuple(%zero, %x)
  %w = (s32[], s32[]) while(%init), condition=%cond, body=%body
  ROOT %r = s32[] get-tuple-element(%w), index=1
}
"""
    outs = run(text, [[np.int32(k + 1)] for k in range(4)], 4)
    assert [int(o[0]) for o in outs] == [10 * 16] * 4  # 10, then x4 per further trip
