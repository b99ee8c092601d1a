"""The pass framework: records, fixed points, verification, dumps, plugin passes, summary."""

from __future__ import annotations

import json
import os

import pytest

from hlort import examples
from hlort.errors import Internal
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes import (
    FixedPoint,
    FusionPolicy,
    Pass,
    Pipeline,
    default_passes,
    run_default_pipeline,
    write_compile_summary,
)
from hlort.shape import array


class CountDown(Pass):
    """Changes the module ``n`` times, then reports no change."""

    name = "count-down"

    def __init__(self, n: int):
        self.n = n
        self.calls = 0

    def run(self, module: Module) -> bool:
        self.calls += 1
        if self.n:
            self.n -= 1
            return True
        return False


class BreakShapes(Pass):
    name = "break-shapes"

    def run(self, module: Module) -> bool:
        module.entry.root.shape = array("f32", [12345])
        return True


class Crash(Pass):
    name = "crash"

    def run(self, module: Module) -> bool:
        raise ZeroDivisionError("boom")


def seed() -> Module:
    return examples.reduce_sum_fma(8)[0]


def test_records_and_fixed_point():
    inner = CountDown(2)
    report = Pipeline([FixedPoint([inner], name="group"), CountDown(0)]).run(seed())
    group, last = report.records
    assert group.name == "group" and group.changed and not last.changed
    assert [c.changed for c in group.children] == [True, True, False]
    assert inner.calls == 3
    assert report.changed_passes() == ["group", "group.count-down", "group.count-down"]
    assert all(r.seconds >= 0 for r in report.all_records())
    assert "group.count-down" in report.summary()


def test_fixed_point_stops_at_max_iterations():
    inner = CountDown(100)
    FixedPoint([inner], max_iterations=3).run(seed())
    assert inner.calls == 3


def test_verify_names_the_pass_that_broke_the_module():
    with pytest.raises(Internal, match="break-shapes"):
        Pipeline([BreakShapes()], verify=True).run(seed())
    Pipeline([BreakShapes()], verify=False).run(seed())  # verification is opt-in


def test_pass_crash_is_reported_with_its_name():
    with pytest.raises(Internal, match="pass crash failed"):
        Pipeline([Crash()]).run(seed())


def test_plugin_passes_run_before_and_after_the_core_ones():
    seen = []

    class Probe(Pass):
        def __init__(self, label):
            self.name = label

        def run(self, module):
            seen.append(
                (self.name, sum(i.opcode is Opcode.FUSION for i in module.entry.instructions))
            )
            return False

    report = run_default_pipeline(
        seed(), before=[Probe("plugin-before")], after=[Probe("plugin-after")], verify=True
    )
    assert seen == [("plugin-before", 0), ("plugin-after", 1)]
    names = [r.name for r in report.records]
    assert names[0] == "plugin-before" and names[-2:] == ["plugin-after", "scheduling"]


def test_policy_reaches_the_fusion_passes():
    passes = default_passes(FusionPolicy(epilogue_fusion=True, max_operands=7))
    (group,) = [p for p in passes if p.name == "fusion"]
    fusion_passes = [p for p in group.passes if hasattr(p, "policy")]
    assert len(fusion_passes) == 2
    assert all(p.policy.epilogue_fusion and p.policy.max_operands == 7 for p in fusion_passes)


def test_dump_dir_gets_every_pass_and_a_summary(tmp_path):
    module, _ = examples.layernorm(4, 8)
    report = run_default_pipeline(module, dump_dir=str(tmp_path), verify=True)
    files = sorted(os.listdir(tmp_path))
    hlo = [f for f in files if f.endswith(".hlo")]
    assert hlo[0] == "00-input.hlo"
    assert [f[:2] for f in hlo] == [f"{n:02d}" for n in range(len(hlo))]
    for record in report.records:
        assert any(f.endswith(f"-{record.name}.hlo") for f in hlo), record.name
    assert any(".dce" in f or ".cse" in f for f in hlo)  # inner passes that changed something
    summary = (tmp_path / "summary.txt").read_text()
    for key in ("instructions", "fusions", "bytes_moved", "peak_bytes"):
        assert key in summary
    stats = json.loads((tmp_path / "summary.json").read_text())
    assert stats["before"]["fusions"] == 0 and stats["after"]["fusions"] == 2
    assert stats["after"]["bytes_moved"] < stats["before"]["bytes_moved"]
    last = (tmp_path / hlo[-1]).read_text()
    assert "fusion(" in last and "is_scheduled=true" in last


def test_write_compile_summary_directly(tmp_path):
    before, _ = examples.reduce_sum_fma(256)
    after = before.clone()
    run_default_pipeline(after)
    text = write_compile_summary(before, after, str(tmp_path / "out"))
    line = next(x for x in text.splitlines() if x.startswith("bytes_moved"))
    assert line.split()[1:3] == [str(28 * 256 + 8), str(12 * 256 + 4)]
