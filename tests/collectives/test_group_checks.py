"""Bad groups and pairs are INVALID_ARGUMENT naming the instruction (verifier and compile), and
the modes follow XLA's CollectiveOpGroupMode table."""

from __future__ import annotations

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError
from hlort.ir import collective_groups as G
from hlort.ir.attributes import IotaReplicaGroupList
from hlort.text import parse_module

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""


def module(header: str, line: str, result: str = "f32[4]") -> str:
    return (
        f"HloModule m{header}\n\n{ADD}\nENTRY %main (x: f32[4]) -> {result} {{\n"
        f"  %x = f32[4] parameter(0)\n  ROOT %bad = {result} {line}\n}}\n"
    )


@pytest.mark.parametrize(
    "header, line, result, message",
    [
        (
            "",
            "all-reduce(%x), replica_groups={{0,1},{1,2}}, to_apply=%add",
            "f32[4]",
            "id 1 appears twice in replica_groups",
        ),
        (
            "",
            "all-reduce(%x), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add",
            "f32[4]",
            "use_global_device_ids=true needs a channel_id",
        ),
        (
            "",
            "all-reduce(%x), channel_id=1, replica_groups={}, use_global_device_ids=true, "
            "to_apply=%add",
            "f32[4]",
            "flattened-id mode (use_global_device_ids=true) needs replica_groups",
        ),
        (
            "",
            "all-gather(%x), replica_groups={{0,1},{2}}, dimensions={0}",
            "f32[8]",
            "have different sizes",
        ),
        (
            ", replica_count=2",
            "all-reduce(%x), replica_groups={{0,1,2}}, to_apply=%add",
            "f32[4]",
            "replica id(s) [2] out of range in cross-replica mode",
        ),
        (
            ", replica_count=4",
            "all-reduce(%x), replica_groups={{0,1},{3}}, to_apply=%add",
            "f32[4]",
            "must cover all 4 replica id(s)",
        ),
        (
            ", replica_count=2",
            "collective-permute(%x), source_target_pairs={{0,1},{1,1}}",
            "f32[4]",
            "id 1 appears twice target in source_target_pairs",
        ),
        (
            ", replica_count=2",
            "collective-permute(%x), source_target_pairs={{0,3}}",
            "f32[4]",
            "replica id(s) [3] out of range",
        ),
        (
            ", replica_count=2, num_partitions=2",
            "all-gather(%x), channel_id=1, replica_groups={{0,1}}, dimensions={0}",
            "f32[8]",
            "needs dimension 0 = 16 for groups of 4 (cross-replica-and-partition mode",
        ),
        (
            "",
            "all-gather(%x), replica_groups=[2,2]<=[3], dimensions={0}",
            "f32[8]",
            "the reshape dims must hold 4 ids",
        ),
        (
            ", replica_count=4",
            "reduce-scatter(%x), replica_groups={{0,1,2}}, dimensions={0}, to_apply=%add",
            "f32[1]",
            "does not split into 3 parts",
        ),
    ],
)
def test_bad_groups_are_invalid_argument_naming_the_instruction(header, line, result, message):
    with pytest.raises(HlortError) as info:
        parse_module(module(header, line, result))
    err = info.value
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert " bad: " in err.message, err.message
    assert message in err.message, err.message


def test_compile_checks_groups_against_its_counts():
    text = module("", "all-reduce(%x), replica_groups={{0,1,2,3}}, to_apply=%add")
    interp = hlort.backend("interpreter")
    with pytest.raises(HlortError) as info:
        interp.compile(text, options={"num_replicas": 2})
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "all-reduce bad" in info.value.message and "[2, 3] out of range" in info.value.message
    exe = interp.compile(text, options={"num_replicas": 4})
    outs = exe.execute_sharded([[np.full(4, k, np.float32)] for k in range(4)])
    assert [o[0].numpy().tolist() for o in outs] == [[6.0] * 4] * 4


def test_header_counts_compile_and_disagreeing_options_are_refused():
    text = module(", replica_count=2", "all-reduce(%x), replica_groups={}, to_apply=%add")
    interp = hlort.backend("interpreter")
    assert len(interp.compile(text).devices) == 2
    with pytest.raises(HlortError) as info:
        interp.compile(text, options={"num_replicas": 4})
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "replica_count=2" in info.value.message


def test_one_copy_cannot_run_a_group_naming_another():
    from hlort.interpreter.evaluator import evaluate

    m = parse_module(module("", "all-reduce(%x), replica_groups={{0,1}}, to_apply=%add"))
    with pytest.raises(HlortError) as info:
        evaluate(m, [np.zeros(4, np.float32)])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "1 replica(s) x 1 partition(s)" in info.value.message


@pytest.mark.parametrize(
    "line, mode",
    [
        ("all-reduce(%x), replica_groups={}, to_apply=%add", "cross-replica"),
        (
            "all-reduce(%x), channel_id=1, replica_groups={}, to_apply=%add",
            "cross-replica-and-partition",
        ),
        (
            "all-reduce(%x), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, "
            "to_apply=%add",
            "flattened-id",
        ),
        ("all-to-all(%x), channel_id=1, replica_groups={}, dimensions={0}", "cross-partition"),
        ("collective-permute(%x), source_target_pairs={}", "cross-replica"),
        ("collective-broadcast(%x), channel_id=2, replica_groups={}", "cross-partition"),
    ],
)
def test_modes_follow_channel_and_global_ids(line, mode):
    m = parse_module(module("", line))
    assert G.group_mode(m.entry.root).value == mode


def test_iota_groups_expand_as_xla_reads_them():
    assert IotaReplicaGroupList(2, 4, (8,)).groups() == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert IotaReplicaGroupList(4, 2, (2, 4), (1, 0)).groups() == ((0, 4), (1, 5), (2, 6), (3, 7))
