"""Multi-output fusion: fusions over the same iteration space become one kernel with a tuple root.

After instruction fusion, a big input is often still read by several kernels: the mean and the
variance reductions of a layernorm, the max and the sum reductions of a softmax, an ``exp`` that
both a reduction and a divide read. Two fusions (or a fusion and a plain reduce or elementwise op)
merge when they iterate over the same space:

- *producer-consumer*: the consumer reads the producer's output, and
  loop -> loop (same shape), loop -> reduction (the loop's shape is the reduction's input),
  reduction -> reduction (same input shape and reduced dimensions), or
  reduction -> loop over the reduction's output shape (a reduction epilogue), and, when the
  policy asks for row epilogues, reduction over trailing dimensions -> loop over its input shape;
  the producer's outputs that others still read become extra outputs;
- *siblings*: two fusions or reductions read the same (non-scalar) input, neither depends on the
  other, and their spaces match as above.

A merge the backend could not emit as one kernel (``FusionPolicy.can_emit``) is not made.
A merge never creates a cycle: it is refused when one member reaches another through some
instruction outside the merge (XLA's reachability rule). The search is bounded by program
order: each round numbers the instructions operands-first, and an instruction numbered before
the target cannot read it. A merge moves the values of its earlier members to the position of
its last one, so the instructions between them that read those values no longer fit that
numbering: :class:`RoundOrder` marks them stale and every check that meets one answers "depends"
(the next round renumbers). Each round merges disjoint pairs; rounds repeat until nothing merges.
"""

from __future__ import annotations

from hlort.ir.attributes import FusionKind
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.dce import remove_unreachable_computations
from hlort.passes.fused_computation import HEROES_INPUT, fused, fused_size, merge_members
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import sequential_computations
from hlort.passes.use_graph import UseGraph, graph_order, unique
from hlort.shape import ArrayShape, squeeze_dims

# ("loop", dims) or ("reduce", input dims, reduced dims, output dims)
Space = tuple
SIBLING_WINDOW = 4  # readers of one input paired with the next few readers only
DEPENDENCE_BUDGET = 1024  # instructions a cycle check may visit before it answers "depends"
STALE_BUDGET = 4096  # users one merge may mark stale before the round stops merging


def iteration_space(instr: Instruction, effects: SideEffects) -> Space | None:
    """The space a fusion-like instruction iterates over, or None if it never merges."""
    if effects.of(instr):
        return None
    if instr.opcode is Opcode.REDUCE and isinstance(instr.shape, ArrayShape):
        return _reduce_space(instr)
    if instr.opcode is not Opcode.FUSION:
        if (
            instr.is_elementwise
            and isinstance(instr.shape, ArrayShape)
            and (instr.opcode is not Opcode.MAP)
        ):
            return ("loop", instr.shape.dims)
        return None
    comp = fused(instr)
    if instr.shape.is_tuple and comp.root.opcode is not Opcode.TUPLE:
        return None
    kind = instr.attrs.get("kind")
    if kind is FusionKind.LOOP:
        leaves = instr.shape.elements if instr.shape.is_tuple else (instr.shape,)
        dims = {leaf.dims for leaf in leaves if isinstance(leaf, ArrayShape)}
        return ("loop", dims.pop()) if len(dims) == 1 else None
    if kind is FusionKind.INPUT:
        heroes = [i for i in comp.instructions if i.opcode in HEROES_INPUT]
        spaces = {_reduce_space(h) for h in heroes}
        return spaces.pop() if len(spaces) == 1 else None  # None also without heroes
    return None


def _reduce_space(reduce: Instruction) -> Space | None:
    if reduce.opcode is not Opcode.REDUCE:
        return None
    source = reduce.operands[0].shape
    out = reduce.shape.elements[0] if reduce.shape.is_tuple else reduce.shape
    return ("reduce", source.dims, tuple(sorted(reduce.attrs["dimensions"])), out.dims)


def producer_consumer_compatible(
    producer: Space, consumer: Space, row_epilogue: bool = False
) -> bool:
    if producer[0] == "loop":
        target = consumer[1]
        return producer[1] == target
    if consumer[0] == "reduce":
        return producer[1:3] == consumer[1:3]
    if row_epilogue and consumer[1] == producer[1] and _trailing(producer):
        return True  # a row epilogue: the loop runs over the rows the reduction reads
    # a reduction epilogue, also in the output's shape up to size-1 dimensions (JAX's [rows, 1])
    return squeeze_dims(consumer[1]) == squeeze_dims(producer[3])


def _trailing(space: Space) -> bool:
    rank, reduced = len(space[1]), space[2]
    return bool(reduced) and tuple(reduced) == tuple(range(rank - len(reduced), rank))


def siblings_compatible(a: Space, b: Space) -> bool:
    if a[0] == "loop" and b[0] == "loop":
        return a[1] == b[1]
    if a[0] == "reduce" and b[0] == "reduce":
        return a[1:3] == b[1:3]
    loop, reduce = (a, b) if a[0] == "loop" else (b, a)
    return loop[1] == reduce[1]


class MultiOutputFusion(Pass):
    name = "multi-output-fusion"

    def __init__(self, policy: FusionPolicy | None = None, max_rounds: int = 16):
        self.policy = policy or FusionPolicy()
        self.max_rounds = max_rounds

    def run(self, module: Module) -> bool:
        if not self.policy.multi_output_fusion:
            return False
        changed = False
        effects = SideEffects()
        for comp in sequential_computations(module):
            for _ in range(self.max_rounds):
                if not self._round(comp, module, effects):
                    break
                changed = True
        if changed:
            remove_unreachable_computations(module)  # the fused computations merged away
            module.sort_computations()
        return changed

    def _round(self, comp: Computation, module: Module, effects: SideEffects) -> bool:
        graph = UseGraph(comp, effects)
        order = graph_order(comp)
        positions = RoundOrder(order)
        spaces = {i: iteration_space(i, effects) for i in order}
        touched: set[Instruction] = set()
        merged = False

        def free(instr: Instruction) -> bool:
            return (
                instr not in touched
                and spaces.get(instr) is not None
                and positions.known(instr) is not None
            )

        accept = self.policy.emits if self.policy.can_emit is not None else None

        def merge(members: list[Instruction]) -> bool:
            """Merges ``members``; False (nothing changed) when the backend could not emit it."""
            fusion = merge_members(
                graph, module, members, self.policy.max_duplicated_constant_elements, accept
            )
            if fusion is None:
                return False
            touched.update((*members, fusion))
            positions.merged(graph, fusion, members)
            return True

        for consumer in order:
            if positions.closed:
                break
            if not free(consumer):
                continue
            plain_loop = consumer.opcode is not Opcode.FUSION and spaces[consumer][0] == "loop"
            for producer in self._producers(consumer):
                if not free(producer) or not producer_consumer_compatible(
                    spaces[producer], spaces[consumer], self.policy.row_epilogue_fusion
                ):
                    continue
                if plain_loop and spaces[producer][0] != "reduce":
                    continue  # a plain elementwise op joins a loop only as a producer
                others = [
                    o for o in consumer.operands if o is not producer and _source(o) is not producer
                ]
                if any(_depends(o, producer, positions) for o in others):
                    continue
                if not self._fits([producer, consumer], graph):
                    continue
                if not merge([producer, consumer]):
                    continue
                merged = True
                break
        for shared in order:
            if positions.closed:
                break
            if graph.is_removed(shared) or not _worth_sharing(shared):
                continue
            candidates = [
                u
                for u in graph.users(shared)
                if free(u) and (u.opcode is Opcode.FUSION or u.opcode is Opcode.REDUCE)
            ]
            merged |= self._merge_siblings(candidates, graph, positions, spaces, free, merge)
        graph.commit()
        return merged

    def _merge_siblings(self, candidates, graph, positions, spaces, free, merge) -> bool:
        """Pairs of nearby readers of one input (a window in program order keeps this linear)."""
        merged = False
        candidates = sorted(candidates, key=positions.known)
        for i, a in enumerate(candidates):
            for b in candidates[i + 1 : i + 1 + SIBLING_WINDOW]:
                if positions.closed:
                    return merged
                if not free(a) or not free(b):
                    continue
                if not siblings_compatible(spaces[a], spaces[b]):
                    continue
                if _depends(a, b, positions) or _depends(b, a, positions):
                    continue
                first, second = (a, b) if positions.known(a) < positions.known(b) else (b, a)
                if not self._fits([first, second], graph):
                    continue
                if not merge([first, second]):
                    continue
                merged = True
        return merged

    @staticmethod
    def _producers(consumer: Instruction) -> list[Instruction]:
        return unique(_source(o) for o in consumer.operands)

    def _fits(self, members: list[Instruction], graph: UseGraph) -> bool:
        size = sum(fused_size(fused(m)) if m.opcode is Opcode.FUSION else 1 for m in members)
        if size > self.policy.max_fused_instructions:
            return False
        member_set = set(members)
        operands = {o for m in members for o in m.operands if _source(o) not in member_set}
        outputs = sum(len(m.shape.elements) if m.shape.is_tuple else 1 for m in members)
        return len(operands) <= self.policy.max_operands and outputs <= self.policy.max_outputs


def _source(instr: Instruction) -> Instruction:
    """The multi-output instruction a get-tuple-element reads, else the instruction itself."""
    if instr.opcode is Opcode.GET_TUPLE_ELEMENT and instr.operands[0].opcode is Opcode.FUSION:
        return instr.operands[0]
    return instr


def _worth_sharing(instr: Instruction) -> bool:
    """A "big input": an array that is not a scalar and not cheap to regenerate."""
    return (
        isinstance(instr.shape, ArrayShape)
        and instr.shape.size > 1
        and instr.opcode not in (Opcode.CONSTANT, Opcode.BROADCAST, Opcode.IOTA)
    )


class RoundOrder:
    """Positions of one round's graph order, kept sound while the round merges.

    Invariant: an instruction with a known position reaches (through operands) only
    instructions numbered before it, so a search for a target may skip everything numbered
    before the target. A merge breaks it exactly for the instructions numbered before the
    merge's last member that now read the merged fusion (directly or through others):
    :meth:`merged` marks those stale, and :meth:`known` answers None for them, as for the
    instructions the round made. When one merge would mark more than ``STALE_BUDGET``, the
    round stops merging (``closed``) and the next round renumbers."""

    def __init__(self, order: list[Instruction]):
        self._position = {i: n for n, i in enumerate(order)}
        self._stale: set[Instruction] = set()
        self.closed = False

    def known(self, instr: Instruction) -> int | None:
        if instr in self._stale:
            return None
        return self._position.get(instr)

    def merged(self, graph: UseGraph, fusion: Instruction, members: list[Instruction]) -> None:
        horizon = max(self._position[m] for m in members)
        seen: set[Instruction] = set()
        stack = [fusion]
        while stack:
            for user in graph.users(stack.pop()):
                if user in seen:
                    continue
                seen.add(user)
                if len(seen) > STALE_BUDGET:
                    self.closed = True
                    return
                position = self._position.get(user)
                if position is not None and position > horizon:
                    continue  # everything it reaches is still numbered before it
                if position is not None:
                    self._stale.add(user)
                stack.append(user)


def _depends(start: Instruction, target: Instruction, positions: RoundOrder) -> bool:
    """Whether ``start`` (transitively) reads ``target``, searching only between the two in
    program order. Answers True (no merge) when unsure: on reaching an instruction without a
    known position (made or made stale this round; the next round decides) or after
    ``DEPENDENCE_BUDGET`` steps."""
    limit = positions.known(target)
    if limit is None:
        return True
    seen: set[Instruction] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node is target:
            return True
        if node in seen:
            continue
        seen.add(node)
        if len(seen) > DEPENDENCE_BUDGET:
            return True
        pos = positions.known(node)
        if pos is None:
            return True
        if pos <= limit:
            continue
        stack.extend(node.operands)
    return False
