"""HloComputation: a dataflow graph of instructions with parameters and one root."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from hlort.errors import InvalidArgument
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.ir.traversal import post_order_from
from hlort.shape import Shape

if TYPE_CHECKING:
    from hlort.ir.module import Module


class Computation:
    """Instructions are kept in insertion order; :meth:`post_order` gives a topological order.

    A computation belongs to at most one module (``parent``); names of instructions are unique
    within the module, which renames on insertion when needed.
    """

    def __init__(self, name: str):
        self.name = name
        self.instructions: list[Instruction] = []
        self.root: Instruction | None = None
        self.parent: Module | None = None
        self.is_fusion_computation = False

    # -- building -----------------------------------------------------------------------------
    def add_instruction(self, instr: Instruction) -> Instruction:
        if instr.parent is not None and instr.parent is not self:
            raise InvalidArgument(
                f"{instr.name} already belongs to computation {instr.parent.name}"
            )
        instr.parent = self
        if self.parent is not None:
            instr.name = self.parent.unique_name(instr.name)
        self.instructions.append(instr)
        return instr

    def set_root(self, instr: Instruction) -> None:
        if instr.parent is not self:
            raise InvalidArgument(f"root {instr.name} is not in computation {self.name}")
        self.root = instr

    def remove_instruction(self, instr: Instruction) -> None:
        """Remove an instruction that nothing uses any more."""
        if instr is self.root:
            raise InvalidArgument(f"cannot remove root {instr.name} of {self.name}")
        self.instructions = [i for i in self.instructions if i is not instr]
        instr.parent = None

    def replace_all_uses(self, old: Instruction, new: Instruction) -> None:
        """Point every user of ``old`` (and the root, if it is ``old``) at ``new``."""
        for instr in self.instructions:
            if any(op is old for op in instr.operands):
                instr.replace_operand(old, new)
        if self.root is old:
            self.root = new

    # -- queries ------------------------------------------------------------------------------
    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode is Opcode.PARAMETER]
        return sorted(params, key=lambda p: p.parameter_number)

    @property
    def parameter_shapes(self) -> list[Shape]:
        return [p.shape for p in self.parameters]

    @property
    def result_shape(self) -> Shape:
        assert self.root is not None, f"computation {self.name} has no root"
        return self.root.shape

    def users(self) -> dict[Instruction, list[Instruction]]:
        """Map each instruction to the list of its users (one entry per use)."""
        out: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
        for instr in self.instructions:
            for op in instr.operands:
                out.setdefault(op, []).append(instr)
        return out

    def post_order(self) -> list[Instruction]:
        """All instructions, operands before users; stable w.r.t. insertion order.

        Dead instructions are included (DCE removes them), so passes see everything. A cycle
        (only a broken rewrite makes one) is INTERNAL naming its instructions.
        """
        return post_order_from(self.instructions, f"computation {self.name}")

    def reachable_from_root(self) -> list[Instruction]:
        """Instructions the root depends on, in post order."""
        return self.reachable_from([self.root] if self.root is not None else [])

    def reachable_from(self, roots: Iterable[Instruction]) -> list[Instruction]:
        """``roots`` and every instruction they depend on, in post order."""
        live: set[Instruction] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            if node in live:
                continue
            live.add(node)
            stack.extend(node.operands)
        return [i for i in self.post_order() if i in live]

    def execution_order(self, effects: SideEffects | None = None) -> list[Instruction]:
        """What runs when this computation runs, operands before users (post order): the root,
        every parameter (the signature), every instruction with a side effect (directly or
        through a computation it calls: an unused while loop whose body has one), and all they
        need. DCE keeps exactly these; the interpreter and every backend run exactly these.

        Computed afresh on every call (one walk; ``effects`` caches called computations' answers
        across calls), because a computation is mutable; a caller that runs it many times keeps
        the order only while nothing can change it (the interpreter: during one evaluation).
        """
        effects = effects if effects is not None else SideEffects()
        roots = [self.root] if self.root is not None else []
        roots += [i for i in self.instructions if i.opcode is Opcode.PARAMETER or effects.of(i)]
        return self.reachable_from(roots)

    def called_computations(self) -> list[Computation]:
        seen: dict[Computation, None] = {}  # insertion-ordered set
        for instr in self.instructions:
            for comp in instr.called_computations():
                seen.setdefault(comp)
        return list(seen)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def find(self, name: str) -> Instruction:
        for instr in self.instructions:
            if instr.name == name:
                return instr
        raise InvalidArgument(f"no instruction named {name!r} in computation {self.name}")

    def instructions_with(self, opcode: Opcode) -> list[Instruction]:
        return [i for i in self.instructions if i.opcode is opcode]

    def __repr__(self) -> str:
        return f"<Computation {self.name}: {len(self.instructions)} instructions>"


def callees_first(
    roots: Iterable[Computation],
    callees: Callable[[Computation], Iterable[Computation]] | None = None,
) -> list[Computation]:
    """``roots`` and the computations they reach through ``callees`` (default: every called
    computation), each once and after all of its callees: a depth-first post order, roots in
    the order given."""
    follow = callees or Computation.called_computations
    order: list[Computation] = []
    seen: set[Computation] = set()

    def visit(comp: Computation) -> None:
        if comp in seen:
            return
        seen.add(comp)
        for callee in follow(comp):
            visit(callee)
        order.append(comp)

    for root in roots:
        visit(root)
    return order


def make_parameters(comp: Computation, shapes: Iterable[Shape], prefix: str = "p") -> list:
    """Add parameters 0..n-1 with the given shapes to ``comp``; returns them."""
    out = []
    for i, shape in enumerate(shapes):
        out.append(
            comp.add_instruction(
                Instruction(Opcode.PARAMETER, shape, (), name=f"{prefix}{i}", parameter_number=i)
            )
        )
    return out
