"""Shared fixtures of the pass tests: inputs with edge values, NaN-aware bitwise comparison,
running a pass list with verification, golden HLO text comparison."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hlort import dtypes
from hlort.interpreter import evaluate
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.pipeline import Pipeline
from hlort.shape import ArrayShape, TupleShape
from hlort.testing.values import mixed
from hlort.text.parser import parse_module
from hlort.text.printer import print_instruction, print_module


def make_inputs(module: Module, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)

    def value(shape):
        if isinstance(shape, TupleShape):
            return tuple(value(e) for e in shape.elements)
        assert isinstance(shape, ArrayShape)
        return mixed(shape.dtype, shape.dims, rng)

    return [value(p.shape) for p in module.entry.parameters]


def same_bits(a, b) -> bool:
    """Equal bit for bit, except that any NaN equals any NaN (payloads may differ)."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_bits, a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if dtypes.from_numpy(a.dtype).is_floating_or_complex:
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        nan_a, nan_b = np.isnan(a.astype(wide)), np.isnan(b.astype(wide))
        if not np.array_equal(nan_a, nan_b):
            return False
        a = np.where(nan_a, np.zeros((), a.dtype), a)
        b = np.where(nan_b, np.zeros((), b.dtype), b)
    return a.tobytes() == b.tobytes()


def check_same_results(before: Module, after: Module, seeds=(0, 1, 2)) -> None:
    for seed in seeds:
        args = make_inputs(before, seed)
        expected = evaluate(before, args)
        actual = evaluate(after, args)
        assert same_bits(expected, actual), f"results differ for seed {seed}"


def run_passes(module: Module, passes) -> bool:
    """Run ``passes`` with verification; returns whether anything changed."""
    return Pipeline(list(passes), verify=True).run(module).changed


def canonical_text(module: Module) -> str:
    """The module's text with instructions in operand-first order from each root and every name
    replaced by its position: equal programs print equal, whatever their names and list order."""
    comps: list = []

    def visit_comp(comp) -> None:
        if comp in comps:
            return
        comps.append(comp)
        for instr in _order(comp):
            for callee in instr.called_computations():
                visit_comp(callee)

    visit_comp(module.entry)
    names = {c.name: f"comp{n}" for n, c in enumerate(comps)}
    blocks = []
    for comp in comps:
        order = _order(comp)
        local = dict(names)
        local.update({i.name: f"v{n}" for n, i in enumerate(order)})
        lines = [f"{names[comp.name]} fusion={comp.is_fusion_computation}"]
        for instr in order:
            text = print_instruction(instr, include_metadata=False)
            text = re.sub(
                r"%([\w.\-]+)", lambda m, names=local: "%" + names.get(m.group(1), m.group(1)), text
            )
            lines.append(("ROOT " if instr is comp.root else "") + text)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _order(comp) -> list:
    params = comp.parameters
    seen = {id(p) for p in params}
    order = list(params)
    starts = [comp.root] + [i for i in comp.instructions if i is not comp.root]
    for start in starts:
        stack = [(start, 0)]
        while stack:
            node, k = stack.pop()
            if id(node) in seen:
                continue
            if k < len(node.operands):
                stack.append((node, k + 1))
                stack.append((node.operands[k], 0))
            else:
                seen.add(id(node))
                order.append(node)
    return order


def assert_golden(actual: Module, expected_text: str) -> None:
    expected = canonical_text(parse_module(expected_text))
    got = canonical_text(actual)
    assert got == expected, (
        f"--- actual ---\n{print_module(actual)}\n--- canonical actual ---\n{got}\n"
        f"--- canonical expected ---\n{expected}"
    )


def count(module: Module, opcode: Opcode, comp=None) -> int:
    comp = comp or module.entry
    return sum(1 for i in comp.instructions if i.opcode is opcode)


def rewrite_checked(text: str, passes, expected: str | None = None, changes: bool = True):
    """Runs ``passes`` on the parsed ``text``: asserts whether they changed it, the golden text
    (when given), unchanged results on edge-value inputs and that a second run changes nothing."""
    module = parse_module(text)
    before = module.clone()
    assert run_passes(module, passes) == changes
    if expected is not None:
        assert_golden(module, expected)
    check_same_results(before, module)
    assert not run_passes(module, passes), "a second run changed the module"
    return module


class PassHelpers:
    rewrite_checked = staticmethod(rewrite_checked)
    make_inputs = staticmethod(make_inputs)
    same_bits = staticmethod(same_bits)
    check_same_results = staticmethod(check_same_results)
    run_passes = staticmethod(run_passes)
    assert_golden = staticmethod(assert_golden)
    count = staticmethod(count)


@pytest.fixture
def h() -> type[PassHelpers]:
    return PassHelpers
