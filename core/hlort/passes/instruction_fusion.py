"""Producer-consumer fusion: loop fusion, input (reduction) fusion and dot epilogue fusion.

Like XLA's InstructionFusion, simplified. Each sequential computation is walked users-first
(reverse post order); every instruction that can host a fusion (an elementwise or data-movement
op, a reduce or reduce-window, an existing fusion) takes in its producers one at a time:

- loop-fusible producers (elementwise ops, broadcast, reshape, transpose, slice, iota, constant,
  convert, select, compare, pad, concatenate, reverse, dynamic-slice) and single-output kLoop
  fusions fuse into any host: the result is a kLoop fusion, or kInput when the host is a reduce;
- a dot or convolution fuses into an elementwise host when ``policy.epilogue_fusion`` (kOutput);
  nothing then fuses into the operands of that dot;
- a producer with several users is copied into this host only when it is cheap (broadcast, iota,
  small constant, reshape/transpose/slice/convert, non-transcendental elementwise); a reduce, a dot,
  a fusion or a transcendental is never copied, so expensive work is never done twice;
- an expensive producer (transcendental, divide) is not fused where its elements would be read
  many times (through a broadcast or a reduce-window), which would recompute it per read.

A host whose only fusible producers are constants stays as it is. When the policy says what the
backend can emit (``FusionPolicy.can_emit``), a producer joins a reduction (kInput) fusion only
if the result is one; the emitters' limits are in how reductions and their producers combine.
Users are counted with one UseGraph per computation, so the pass is linear in module size times
the fusion size limit (times the fusion size again for the questions about reductions).
"""

from __future__ import annotations

from collections import Counter

from hlort.ir.attributes import FusionKind
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.op_def import FusionRole
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.dce import remove_unreachable_computations
from hlort.passes.fused_computation import (
    HEROES_OUTPUT,
    fuse_producer,
    fused,
    fused_preview,
    fused_size,
    make_private,
    wrap_in_fusion,
)
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import sequential_computations
from hlort.passes.use_graph import UseGraph, graph_order, unique
from hlort.shape import ArrayShape

# The fusion roles of the op table (OpDef.fusion, reuses_operand, expensive).
CHEAP_DATA_MOVEMENT = frozenset(op for op in Opcode if op.info.fusion is FusionRole.INDEX_MAP)
DATA_MOVEMENT = CHEAP_DATA_MOVEMENT | {
    op for op in Opcode if op.info.fusion is FusionRole.INDEX_SELECT
}
EXPENSIVE = frozenset(op for op in Opcode if op.info.expensive)
REUSING = frozenset(op for op in Opcode if op.info.reuses_operand)
REDUCTIONS = frozenset(op for op in Opcode if op.info.fusion is FusionRole.REDUCE_HERO)


def is_loop_fusible(instr: Instruction) -> bool:
    """Computable per output element inside a loop nest, with no state."""
    if not isinstance(instr.shape, ArrayShape):
        return False
    if instr.opcode in DATA_MOVEMENT:
        return True
    return instr.is_elementwise and instr.opcode is not Opcode.MAP


def is_expensive(instr: Instruction) -> bool:
    """Transcendental or divide-like; a fusion is expensive when something inside it is."""
    if instr.opcode is Opcode.FUSION:
        return any(is_expensive(i) for i in fused(instr).instructions)
    return instr.opcode in EXPENSIVE


def is_cheap(instr: Instruction, policy: FusionPolicy) -> bool:
    """Worth computing twice rather than writing to memory once and reading twice."""
    if instr.opcode is Opcode.CONSTANT:
        return instr.shape.size <= policy.max_duplicated_constant_elements
    if instr.opcode in CHEAP_DATA_MOVEMENT:
        return True
    return instr.is_elementwise and not is_expensive(instr)


def _same_size_broadcast(instr: Instruction) -> bool:
    """A broadcast that only renames dimensions reads each element once."""
    return instr.opcode is Opcode.BROADCAST and instr.shape.size == instr.operands[0].shape.size


class InstructionFusion(Pass):
    name = "instruction-fusion"

    def __init__(self, policy: FusionPolicy | None = None):
        self.policy = policy or FusionPolicy()

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        self._callers = Counter(
            i.attrs["calls"]
            for c in module.computations
            for i in c.instructions
            if i.opcode is Opcode.FUSION
        )
        for comp in sequential_computations(module):
            changed |= self._fuse_computation(comp, module, effects)
        if changed:
            remove_unreachable_computations(module)  # the fused computations merged away
            module.sort_computations()
        return changed

    def _fuse_computation(self, comp: Computation, module: Module, effects: SideEffects) -> bool:
        graph = UseGraph(comp, effects)
        changed = False
        for host in reversed(graph_order(comp)):
            if graph.is_removed(host) or not self._can_host(host, effects):
                continue
            while True:
                producer = self._pick_producer(graph, host)
                if producer is None:
                    break
                if host.opcode is not Opcode.FUSION:
                    host = wrap_in_fusion(graph, module, host)
                elif self._callers[fused(host)] > 1:
                    self._callers[fused(host)] -= 1
                    make_private(module, host)
                fuse_producer(graph, host, producer)
                changed = True
        graph.commit()
        return changed

    # -- decisions ----------------------------------------------------------------------------
    def _can_host(self, instr: Instruction, effects: SideEffects) -> bool:
        if effects.of(instr) or not instr.operands:
            return False
        if instr.opcode is Opcode.FUSION:
            return instr.attrs.get("kind") in (FusionKind.LOOP, FusionKind.INPUT, FusionKind.OUTPUT)
        if instr.opcode in REDUCTIONS:
            return self.policy.reduce_input_fusion
        return self.policy.loop_fusion and is_loop_fusible(instr)

    def _pick_producer(self, graph: UseGraph, host: Instruction) -> Instruction | None:
        constants = None
        for producer in unique(host.operands):
            if not self._should_fuse(graph, producer, host):
                continue
            if producer.opcode is not Opcode.CONSTANT:
                return producer
            constants = constants or producer
        # constants alone never make a fusion, but join one that exists
        return constants if host.opcode is Opcode.FUSION else None

    def _should_fuse(self, graph: UseGraph, producer: Instruction, host: Instruction) -> bool:
        policy = self.policy
        if producer.parent is not graph.comp or graph.effects.of(producer):
            return False
        single_user = graph.user_count(producer) == 1
        host_kind = self._host_kind(host)
        if producer.opcode is Opcode.FUSION:
            if (
                producer.attrs.get("kind") is not FusionKind.LOOP
                or producer.shape.is_tuple
                or not single_user
            ):
                return False
        elif producer.opcode in HEROES_OUTPUT:
            if not (policy.epilogue_fusion and single_user and host_kind is FusionKind.LOOP):
                return False
        elif not is_loop_fusible(producer):
            return False
        elif host_kind is FusionKind.LOOP and not policy.loop_fusion:
            return False
        if not single_user and not (
            policy.duplicate_cheap_producers and is_cheap(producer, policy)
        ):
            return False
        if not self._fits(host, producer):
            return False
        if host_kind is FusionKind.OUTPUT or host.opcode in HEROES_OUTPUT:
            uses = self._uses_inside(host, producer)
            if any(u.opcode in HEROES_OUTPUT for u in uses):
                return False  # nothing fuses into the operands of a dot or convolution
        if is_expensive(producer) and self._reuses(
            host, producer, self._uses_inside(host, producer)
        ):
            return False
        if policy.can_emit is None or host_kind is not FusionKind.INPUT:
            return True  # a loop fusion of ops the backend emits one by one is one it emits
        return policy.emits(fused_preview(host, producer))

    @staticmethod
    def _host_kind(host: Instruction) -> FusionKind:
        if host.opcode is Opcode.FUSION:
            return host.attrs["kind"]
        return FusionKind.INPUT if host.opcode in REDUCTIONS else FusionKind.LOOP

    @staticmethod
    def _uses_inside(host: Instruction, producer: Instruction) -> list[Instruction]:
        """The instructions that read ``producer`` inside the host (the host itself if plain)."""
        if host.opcode is not Opcode.FUSION:
            return [host]
        comp = fused(host)
        index = next(n for n, o in enumerate(host.operands) if o is producer)
        param = comp.parameters[index]
        return [i for i in comp.instructions if any(o is param for o in i.operands)]

    @staticmethod
    def _reuses(host: Instruction, producer: Instruction, uses: list[Instruction]) -> bool:
        """Whether some element of ``producer`` would be read more than once in the host."""
        seen: set[Instruction] = set()
        stack = list(uses)
        while stack:
            instr = stack.pop()
            if instr in seen:
                continue
            seen.add(instr)
            if instr.opcode in REUSING and not _same_size_broadcast(instr):
                return True
            if host.opcode is Opcode.FUSION:
                stack.extend(
                    u for u in fused(host).instructions if any(o is instr for o in u.operands)
                )
        return False

    def _fits(self, host: Instruction, producer: Instruction) -> bool:
        size = fused_size(fused(host)) if host.opcode is Opcode.FUSION else 1
        added = fused_size(fused(producer)) if producer.opcode is Opcode.FUSION else 1
        if size + added > self.policy.max_fused_instructions:
            return False
        operands = {o for o in host.operands if o is not producer}
        operands.update(producer.operands)
        return len(operands) <= self.policy.max_operands
