"""Scheduling: a topological, memory-aware, deterministic order recorded on the module."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir.side_effects import SideEffects
from hlort.passes import Scheduler, assign_buffers
from hlort.passes.scheduling import schedule_computation
from hlort.text.parser import parse_module
from hlort.text.printer import print_module


def is_topological(comp) -> bool:
    seen = set()
    for instr in comp.instructions:
        if any(id(o) not in seen for o in instr.operands):
            return False
        seen.add(id(instr))
    return True


def _two_branches(n: int = 1024):
    """Two independent chains that each end in a small reduction. Depth-first evaluation keeps
    one big temporary alive at a time; the builder's order interleaves them."""
    b = Builder("branches")
    x = b.parameter(shape.array("f32", [n]))
    zero = b.constant(np.float32(0))
    add = b.scalar_computation("add", "f32")
    a1 = b.exp(x)
    c1 = b.log(x)
    a2 = b.negate(a1)
    c2 = b.negate(c1)
    ra = b.reduce(a2, zero, add, [0])
    rc = b.reduce(c2, zero, add, [0])
    return b.build(b.add(ra, rc))


def test_schedule_is_topological_and_lowers_peak(h):
    module = _two_branches()
    naive = assign_buffers(module).peak_bytes
    before = module.clone()
    assert h.run_passes(module, [Scheduler()])
    assert module.attributes["is_scheduled"] == "true"
    assert is_topological(module.entry)
    assert assign_buffers(module).peak_bytes < naive
    h.check_same_results(before, module)


def test_idempotent_and_deterministic(h):
    module = _two_branches()
    h.run_passes(module, [Scheduler()])
    order = [i.name for i in module.entry.instructions]
    assert not h.run_passes(module, [Scheduler()])
    again = _two_branches()
    Scheduler().run(again)
    assert [i.name for i in again.entry.instructions] == order


def test_printed_order_is_the_schedule(h):
    module = _two_branches()
    Scheduler().run(module)
    text = print_module(module)
    positions = [text.index(f"%{i.name} = ") for i in module.entry.instructions]
    assert positions == sorted(positions)
    assert "is_scheduled=true" in text.splitlines()[0]


def test_side_effects_keep_their_order():
    module = parse_module("""
HloModule effects
ENTRY %main (x: f32[1024], y: f32[4]) -> f32[4] {
  %x = f32[1024] parameter(0)
  %y = f32[4] parameter(1)
  %first = f32[4] custom-call(f32[4] %y), custom_call_target="log",
    custom_call_has_side_effect=true
  %big = f32[1024] exponential(f32[1024] %x)
  %second = f32[1024] custom-call(f32[1024] %big), custom_call_target="log",
    custom_call_has_side_effect=true
  %third = f32[4] custom-call(f32[4] %y), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %r = f32[4] negate(f32[4] %y)
}
""")
    order = [i.name for i in schedule_computation(module.entry, SideEffects())]
    assert order.index("first") < order.index("second") < order.index("third")


def test_golden_order():
    """Depth first along the branch that frees memory: each big temporary dies before the next
    one is made, whatever order the text gave."""
    module = parse_module("""
HloModule order
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[256]) -> f32[] {
  %x = f32[256] parameter(0)
  %z = f32[] constant(0)
  %e1 = f32[256] exponential(f32[256] %x)
  %e2 = f32[256] log(f32[256] %x)
  %e3 = f32[256] sine(f32[256] %x)
  %r1 = f32[] reduce(f32[256] %e1, f32[] %z), dimensions={0}, to_apply=%add
  %r2 = f32[] reduce(f32[256] %e2, f32[] %z), dimensions={0}, to_apply=%add
  %r3 = f32[] reduce(f32[256] %e3, f32[] %z), dimensions={0}, to_apply=%add
  %s = f32[] add(f32[] %r1, f32[] %r2)
  ROOT %t = f32[] add(f32[] %s, f32[] %r3)
}
""")
    Scheduler().run(module)
    assert [i.name for i in module.entry.instructions] == [
        "x",
        "z",
        "e1",
        "r1",
        "e2",
        "r2",
        "s.1",
        "e3",
        "r3",
        "t",
    ]
