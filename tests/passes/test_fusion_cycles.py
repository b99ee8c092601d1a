"""No pass leaves a cycle, and a cycle left anyway is a clear INTERNAL, never an endless walk.

The module below has the shape of the one ``jax.random.gamma`` lowers to (a ``while`` whose init
tuple is computed by a fusion that shares an input with a fusion reading an earlier value, and a
fusion after the loop that shares another input with that earlier value). Multi-output fusion
once merged the two pairs in one round: the first merge moved the earlier value behind the
loop, and the second, judged on the positions from before it, then made the loop's init depend
on the loop's own result.
"""

from __future__ import annotations

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.interpreter import evaluate
from hlort.ir.computation import Computation, make_parameters
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.traversal import find_cycle
from hlort.ir.verifier import check_acyclic, verify_module
from hlort.passes import MultiOutputFusion
from hlort.passes.pass_base import Pass
from hlort.passes.pipeline import Pipeline
from hlort.passes.use_graph import graph_order
from hlort.shape import scalar
from hlort.text.parser import parse_module

LOOP_AFTER_SIBLINGS = """
HloModule loop_after_siblings

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  c = (f32[8]) parameter(0)
  ROOT no = pred[] constant(false)
}

body {
  t = (f32[8]) parameter(0)
  v = f32[8] get-tuple-element(t), index=0
  twice = f32[8] add(v, v)
  ROOT next = (f32[8]) tuple(twice)
}

reads_early {
  e = f32[4] parameter(0)
  x = f32[8] parameter(1)
  both = f32[8] concatenate(e, e), dimensions={0}
  ROOT sum = f32[8] add(both, x)
}

feeds_loop {
  x = f32[8] parameter(0)
  ROOT n = f32[8] negate(x)
}

reads_loop {
  m = f32[4,8] parameter(0)
  w = f32[8] parameter(1)
  wb = f32[4,8] broadcast(w), dimensions={1}
  prod = f32[4,8] multiply(m, wb)
  zero = f32[] constant(0)
  ROOT r = f32[4] reduce(prod, zero), dimensions={1}, to_apply=add
}

ENTRY main {
  mat = f32[4,8] parameter(0)
  vec = f32[8] parameter(1)
  zero_e = f32[] constant(0)
  early = f32[4] reduce(mat, zero_e), dimensions={1}, to_apply=add
  first = f32[8] fusion(early, vec), kind=kLoop, calls=reads_early
  init_value = f32[8] fusion(vec), kind=kLoop, calls=feeds_loop
  init = (f32[8]) tuple(init_value)
  loop = (f32[8]) while(init), condition=cond, body=body
  out = f32[8] get-tuple-element(loop), index=0
  late = f32[4] fusion(mat, out), kind=kInput, calls=reads_loop
  ROOT result = (f32[8], f32[4]) tuple(first, late)
}
"""


def _inputs():
    import numpy as np

    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((4, 8)).astype(np.float32),
        rng.standard_normal(8).astype(np.float32),
    ]


def test_the_module_is_ordered_as_the_failure_needs():
    """The siblings over ``mat`` come first in graph order, and ``first`` precedes ``init_value``:
    the order in which the old pass made the cycle."""
    module = parse_module(LOOP_AFTER_SIBLINGS)
    names = [i.name for i in graph_order(module.entry)]
    assert names.index("mat") < names.index("vec")
    assert names.index("first") < names.index("init_value") < names.index("late")


def test_multi_output_fusion_leaves_no_cycle():
    module = parse_module(LOOP_AFTER_SIBLINGS)
    expected = evaluate(module, _inputs())
    MultiOutputFusion().run(module)
    assert find_cycle(module.entry.instructions) is None
    verify_module(module)
    actual = evaluate(module, _inputs())
    for want, got in zip(expected, actual, strict=True):
        assert want.tobytes() == got.tobytes()
    fusions = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    merged = [f for f in fusions if f.shape.is_tuple]
    assert merged, "the independent siblings over mat should still merge"


def _cyclic_module() -> tuple[Module, Instruction, Instruction]:
    comp = Computation("entry")
    (p,) = make_parameters(comp, [scalar("f32")])
    a = comp.add_instruction(Instruction(Opcode.NEGATE, scalar("f32"), (p,), name="a"))
    b = comp.add_instruction(Instruction(Opcode.EXP, scalar("f32"), (a,), name="b"))
    comp.set_root(b)
    module = Module("cyclic")
    module.add_computation(comp, entry=True)
    return module, a, b


class _MakesACycle(Pass):
    """A deliberately wrong pass: ``a`` reads ``b``, which reads ``a``."""

    name = "makes-a-cycle"

    def run(self, module: Module) -> bool:
        a = module.entry.find("a")
        a.operands = [module.entry.find("b")]
        return True


@pytest.mark.parametrize("verify", [False, True])
def test_pipeline_names_the_pass_and_the_cycle(verify):
    module, _, _ = _cyclic_module()
    with pytest.raises(HlortError) as info:
        Pipeline([_MakesACycle()], verify=verify).run(module)
    assert info.value.code is ErrorCode.INTERNAL
    message = info.value.message
    assert "makes-a-cycle" in message and "cycle" in message
    assert "a (negate)" in message and "b (exponential)" in message


def test_walks_on_a_cyclic_graph_stop_with_internal():
    module, a, b = _cyclic_module()
    a.operands = [b]
    for walk in (module.entry.post_order, lambda: graph_order(module.entry)):
        with pytest.raises(HlortError) as info:
            walk()
        assert info.value.code is ErrorCode.INTERNAL
        assert "a (negate) -> b (exponential) -> a (negate)" in info.value.message or (
            "b (exponential) -> a (negate) -> b (exponential)" in info.value.message
        )
    with pytest.raises(HlortError) as info:
        check_acyclic(module)
    assert info.value.code is ErrorCode.INTERNAL and "entry" in info.value.message


def test_a_long_cycle_is_found_without_growing():
    """A 20000-instruction ring: found in one pass over it (the old walk pushed forever)."""
    comp = Computation("ring")
    (p,) = make_parameters(comp, [scalar("f32")])
    chain = [p]
    for k in range(20000):
        chain.append(
            comp.add_instruction(
                Instruction(Opcode.NEGATE, scalar("f32"), (chain[-1],), name=f"n{k}")
            )
        )
    comp.set_root(chain[-1])
    chain[1].operands = [chain[-1]]
    cycle = find_cycle(comp.instructions)
    assert cycle is not None and len(cycle) == 20000
