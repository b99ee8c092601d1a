"""HloModule: named computations, one of them the entry."""

from __future__ import annotations

import re

from hlort.errors import InvalidArgument, NotFound
from hlort.ir.computation import Computation, callees_first
from hlort.ir.instruction import Instruction
from hlort.ir.stack_frames import StackFrameIndex

_SUFFIX = re.compile(r"^(.*?)(\.\d+)?$")


class Module:
    """A program: computations in definition order (callees before callers), ``entry`` last.

    ``attributes`` keeps the header's attributes (``entry_computation_layout``, ``is_scheduled``,
    ``input_output_alias``...) as raw text for printing; ``config`` holds the ones hlort
    interprets (``num_replicas``, ``num_partitions``).
    """

    def __init__(self, name: str = "module"):
        self.name = name
        self.computations: list[Computation] = []
        self.entry: Computation | None = None
        self.attributes: dict[str, str] = {}
        self.config: dict[str, object] = {"num_replicas": 1, "num_partitions": 1}
        self.stack_frames: StackFrameIndex | None = None  # an XLA dump's tables (stack_frames.py)
        self._names: set[str] = set()
        self._counters: dict[str, int] = {}

    # -- names --------------------------------------------------------------------------------
    def unique_name(self, wanted: str) -> str:
        """``wanted`` if unused in this module, else ``base.N`` with the next free N."""
        if wanted not in self._names:
            self._names.add(wanted)
            return wanted
        base = _SUFFIX.match(wanted).group(1) or "v"
        n = self._counters.get(base, 0)
        while True:
            n += 1
            candidate = f"{base}.{n}"
            if candidate not in self._names:
                self._counters[base] = n
                self._names.add(candidate)
                return candidate

    def rename_all(self) -> None:
        """Recompute the set of used names (after passes replaced many instructions)."""
        self._names = {c.name for c in self.computations}
        for comp in self.computations:
            for instr in comp.instructions:
                self._names.add(instr.name)

    # -- computations -------------------------------------------------------------------------
    def add_computation(self, comp: Computation, entry: bool = False) -> Computation:
        if comp.parent is not None and comp.parent is not self:
            raise InvalidArgument(f"computation {comp.name} already belongs to another module")
        comp.parent = self
        comp.name = self.unique_name(comp.name)
        for instr in comp.instructions:
            instr.name = self.unique_name(instr.name)
        self.computations.append(comp)
        if entry:
            self.entry = comp
        return comp

    def computation(self, name: str) -> Computation:
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise NotFound(f"module {self.name} has no computation named {name!r}")

    def remove_computation(self, comp: Computation) -> None:
        if comp is self.entry:
            raise InvalidArgument("cannot remove the entry computation")
        self.computations = [c for c in self.computations if c is not comp]
        comp.parent = None

    def reachable_computations(self) -> list[Computation]:
        """Computations reachable from the entry, callees before callers."""
        return callees_first([self.entry] if self.entry is not None else [])

    def sort_computations(self) -> None:
        """Order computations callees first, entry last; unreachable ones kept before it."""
        reachable = self.reachable_computations()
        reached = set(reachable)
        self.computations = [c for c in self.computations if c not in reached] + reachable

    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    # -- copies and identity ------------------------------------------------------------------
    def clone(self, name: str | None = None) -> Module:
        """A deep copy: new computations and instructions, same names, literals shared."""
        new = Module(name or self.name)
        new.attributes = dict(self.attributes)
        new.config = dict(self.config)
        new.stack_frames = self.stack_frames  # read-only after parsing: shared
        comp_map: dict[Computation, Computation] = {}
        for comp in self.computations:
            copy = Computation(comp.name)
            copy.is_fusion_computation = comp.is_fusion_computation
            comp_map[comp] = copy
        for comp in self.computations:
            copy = comp_map[comp]
            instr_map: dict[Instruction, Instruction] = {}
            for instr in comp.post_order():
                attrs = {}
                for key, value in instr.attrs.items():
                    if isinstance(value, Computation):
                        value = comp_map.get(value, value)
                    elif (
                        isinstance(value, (list, tuple))
                        and value
                        and isinstance(value[0], Computation)
                    ):
                        value = tuple(comp_map.get(v, v) for v in value)
                    attrs[key] = value
                clone = instr.clone_with(
                    operands=[instr_map[o] for o in instr.operands], attrs=attrs
                )
                instr_map[instr] = clone
                clone.parent = copy
                copy.instructions.append(clone)
            if comp.root is not None:
                copy.root = instr_map[comp.root]
            copy.parent = new
            new.computations.append(copy)
        new.entry = comp_map[self.entry] if self.entry is not None else None
        new.rename_all()
        return new

    def fingerprint(self) -> str:
        """SHA-256 of a canonical walk of the program (hlort.ir.fingerprint): equal programs,
        equal fingerprints; names and metadata do not count."""
        from hlort.ir.fingerprint import module_fingerprint

        return module_fingerprint(self)

    def __repr__(self) -> str:
        return f"<Module {self.name}: {len(self.computations)} computations>"
