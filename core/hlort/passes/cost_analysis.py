"""Cost analysis: flops, transcendentals and bytes moved, per instruction and per module.

The model is XLA's HloCostAnalysis, simplified. Elementwise ops cost one flop per output element
(or one transcendental, for exp, log, tanh...). A dot costs 2*M*N*K (twice the output elements
times the contracted size), a convolution twice the output elements times the kernel window and
input features per group, a reduce one reducer application (its scalar ops) per input element,
a reduce-window one per output element and window element. Bytes read are the operands' sizes
and bytes written the result's; parameters, constants, tuples and get-tuple-element move nothing
(constants are counted where they are read). A fusion moves only its external operands and
outputs, and does the flops of everything inside: that is why fusion lowers bytes moved. A
while, conditional or call adds its computations' costs once (trip counts are unknown).
"""

from __future__ import annotations

import math
from dataclasses import field

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass
from hlort.passes.scheduling import shape_bytes
from hlort.shape import ArrayShape

FREE = frozenset(
    {
        Opcode.PARAMETER,
        Opcode.CONSTANT,
        Opcode.TUPLE,
        Opcode.GET_TUPLE_ELEMENT,
        Opcode.AFTER_ALL,
        Opcode.OPTIMIZATION_BARRIER,
    }
)
SLICING = frozenset({Opcode.SLICE, Opcode.DYNAMIC_SLICE})
CONTROL = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL})


@dataclass
class InstructionCost:
    flops: int = 0
    transcendentals: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    @property
    def bytes_accessed(self) -> int:
        return self.bytes_read + self.bytes_written

    def add(self, other: InstructionCost) -> None:
        self.flops += other.flops
        self.transcendentals += other.transcendentals
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written


@dataclass
class ModuleCost:
    """Totals over the entry computation, and one entry per entry instruction."""

    entries: dict[Instruction, InstructionCost] = field(default_factory=dict)
    total: InstructionCost = field(default_factory=InstructionCost)

    @property
    def flops(self) -> int:
        return self.total.flops

    @property
    def transcendentals(self) -> int:
        return self.total.transcendentals

    @property
    def bytes_read(self) -> int:
        return self.total.bytes_read

    @property
    def bytes_written(self) -> int:
        return self.total.bytes_written

    @property
    def bytes_accessed(self) -> int:
        return self.total.bytes_accessed

    def __getitem__(self, instr: Instruction) -> InstructionCost:
        return self.entries[instr]

    def report(self) -> str:
        lines = [f"{'instruction':<32} {'flops':>12} {'transc':>10} {'read':>12} {'written':>12}"]
        for instr, c in self.entries.items():
            lines.append(
                f"{instr.name:<32} {c.flops:>12} {c.transcendentals:>10} "
                f"{c.bytes_read:>12} {c.bytes_written:>12}"
            )
        t = self.total
        lines.append(
            f"{'total':<32} {t.flops:>12} {t.transcendentals:>10} {t.bytes_read:>12} "
            f"{t.bytes_written:>12}"
        )
        return "\n".join(lines)


def cost_analysis(module: Module) -> ModuleCost:
    """The cost of running ``module``'s entry once."""
    result = ModuleCost()
    analyzer = _Analyzer()
    for instr in module.entry.post_order():
        cost = analyzer.instruction(instr)
        result.entries[instr] = cost
        result.total.add(cost)
    return result


class _Analyzer:
    def __init__(self) -> None:
        self._comps: dict[Computation, InstructionCost] = {}
        self._reducer_ops: dict[Computation, int] = {}

    def computation(self, comp: Computation) -> InstructionCost:
        hit = self._comps.get(comp)
        if hit is None:
            hit = InstructionCost()
            for instr in comp.instructions:
                hit.add(self.instruction(instr))
            self._comps[comp] = hit
        return hit

    def instruction(self, instr: Instruction) -> InstructionCost:
        if instr.opcode in FREE:
            return InstructionCost()
        cost = InstructionCost(
            bytes_read=sum(shape_bytes(o.shape) for o in instr.operands),
            bytes_written=shape_bytes(instr.shape),
        )
        op = instr.opcode
        if op is Opcode.FUSION:
            inner = self.computation(instr.attrs["calls"])
            cost.flops, cost.transcendentals = inner.flops, inner.transcendentals
        elif op in CONTROL:
            for comp in instr.called_computations():
                inner = self.computation(comp)
                cost.add(inner)
        elif op in SLICING:
            cost.bytes_read = shape_bytes(instr.shape) + sum(
                shape_bytes(o.shape) for o in instr.operands[1:]
            )
        elif op is Opcode.DYNAMIC_UPDATE_SLICE:  # in place: reads and writes the update only
            update = shape_bytes(instr.operands[1].shape)
            cost.bytes_read = update + sum(shape_bytes(o.shape) for o in instr.operands[2:])
            cost.bytes_written = update
        elif instr.is_elementwise and isinstance(instr.shape, ArrayShape):
            n = instr.shape.size * self._map_ops(instr)
            if op.info.transcendental:
                cost.transcendentals = n
            else:
                cost.flops = n
        elif op is Opcode.DOT:
            dn = instr.attrs["dot_dimension_numbers"]
            k = math.prod(instr.operands[0].shape.dims[d] for d in dn.lhs_contracting_dims)
            cost.flops = 2 * _elements(instr) * k
        elif op is Opcode.CONVOLUTION:
            cost.flops = 2 * _elements(instr) * _conv_macs_per_output(instr)
        elif op is Opcode.REDUCE:
            cost.flops = instr.operands[0].shape.size * self._reducer(instr.to_apply)
        elif op is Opcode.REDUCE_WINDOW:
            window = math.prod(w.size for w in instr.attrs["window"])
            cost.flops = _elements(instr) * window * self._reducer(instr.to_apply)
        return cost

    def _map_ops(self, instr: Instruction) -> int:
        if instr.opcode is Opcode.MAP:
            return self._reducer(instr.to_apply)
        return 1

    def _reducer(self, comp: Computation) -> int:
        """Scalar ops per application of a reducer (at least one)."""
        hit = self._reducer_ops.get(comp)
        if hit is None:
            hit = max(1, sum(1 for i in comp.instructions if i.opcode not in FREE))
            self._reducer_ops[comp] = hit
        return hit


def _elements(instr: Instruction) -> int:
    shape = instr.shape
    if isinstance(shape, ArrayShape):
        return shape.size
    return sum(s.size for s in shape.leaf_shapes() if isinstance(s, ArrayShape))


def _conv_macs_per_output(instr: Instruction) -> int:
    """Kernel spatial size times input features per group: the products one output sums."""
    kernel = instr.operands[1].shape
    labels = instr.attrs["dim_labels"]
    spatial = math.prod(kernel.dims[d] for d in labels.kernel_spatial_dimensions)
    return spatial * kernel.dims[labels.kernel_input_feature_dimension]
