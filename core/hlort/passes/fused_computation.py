"""Building fusion instructions: wrap one instruction, fuse a producer in, merge several fusions.

A fusion instruction (``Opcode.FUSION``, attrs ``kind`` and ``calls``) has one operand per
parameter of its fused computation (``comp.is_fusion_computation = True``), in parameter order,
and its operands are distinct. Backends compile the fused computation as one kernel; the
interpreter calls it like any computation, so fusing never changes a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hlort.errors import Internal
from hlort.ir.attributes import FusionKind
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.op_def import FusionRole
from hlort.ir.opcodes import Opcode
from hlort.passes.cse import cse_computation
from hlort.passes.use_graph import UseGraph, unique
from hlort.shape import TupleShape

HEROES_OUTPUT = frozenset(op for op in Opcode if op.info.fusion is FusionRole.OUTPUT_HERO)
HEROES_INPUT = frozenset(op for op in Opcode if op.info.fusion is FusionRole.REDUCE_HERO)


def fused(fusion: Instruction) -> Computation:
    return fusion.attrs["calls"]


def fusion_kind(comp: Computation) -> FusionKind:
    """kOutput with a dot or convolution inside, kInput with a reduction, else kLoop."""
    opcodes = {i.opcode for i in comp.instructions}
    if opcodes & HEROES_OUTPUT:
        return FusionKind.OUTPUT
    if opcodes & HEROES_INPUT:
        return FusionKind.INPUT
    return FusionKind.LOOP


def fused_size(comp: Computation) -> int:
    """Instructions of a fused computation, parameters and a tuple root not counted."""
    root_tuple = comp.root if comp.root.opcode is Opcode.TUPLE else None
    return sum(
        1 for i in comp.instructions if i.opcode is not Opcode.PARAMETER and i is not root_tuple
    )


def _new_fused_computation(module: Module) -> Computation:
    comp = Computation("fused_computation")
    comp.is_fusion_computation = True
    module.add_computation(comp)
    return comp


def _parameter(comp: Computation, number: int, like: Instruction) -> Instruction:
    param = Instruction(
        Opcode.PARAMETER, like.shape, (), name=f"param_{number}", parameter_number=number
    )
    return comp.add_instruction(param)


def _clone_into(comp: Computation, instr: Instruction, operands: list[Instruction]) -> Instruction:
    return comp.add_instruction(instr.clone_with(operands=operands))


def clone_body(
    comp: Computation,
    body: Computation,
    arguments: Sequence[Instruction],
) -> dict[Instruction, Instruction]:
    """Copy ``body`` (parameters bound to ``arguments``, which live in ``comp``) into ``comp``;
    returns the map from original to copy, parameters included."""
    mapping: dict[Instruction, Instruction] = {}
    for instr in body.post_order():
        if instr.opcode is Opcode.PARAMETER:
            mapping[instr] = arguments[instr.parameter_number]
        else:
            mapping[instr] = _clone_into(comp, instr, [mapping[o] for o in instr.operands])
    return mapping


def wrap_in_fusion(graph: UseGraph, module: Module, instr: Instruction) -> Instruction:
    """Replace ``instr`` by a fusion computing just it (parameters = its distinct operands)."""
    comp = _new_fused_computation(module)
    operands = unique(instr.operands)
    params = {o: _parameter(comp, n, o) for n, o in enumerate(operands)}
    root = _clone_into(comp, instr, [params[o] for o in instr.operands])
    comp.set_root(root)
    fusion = Instruction(
        Opcode.FUSION,
        instr.shape,
        operands,
        {"kind": fusion_kind(comp), "calls": comp},
        name="fusion",
    )
    graph.add(fusion)
    graph.replace(instr, fusion)
    return fusion


def make_private(module: Module, fusion: Instruction) -> Computation:
    """Give ``fusion`` its own copy of its fused computation (CSE may have shared one between
    identical fusions), so that fusing into it changes no other fusion."""
    body = fused(fusion)
    comp = _new_fused_computation(module)
    params = [_parameter(comp, n, p) for n, p in enumerate(body.parameters)]
    mapping = clone_body(comp, body, params)
    comp.set_root(mapping[body.root])
    fusion.attrs["calls"] = comp
    return comp


def fuse_producer(graph: UseGraph, fusion: Instruction, producer: Instruction) -> None:
    """Compute ``producer`` inside ``fusion`` instead of reading it.

    The producer stays in the outer computation while other users need it (that is duplication;
    the caller decides when it is allowed). A single-output fusion producer is inlined.
    """
    comp = fused(fusion)
    operands = list(fusion.operands)
    params = comp.parameters
    index = next(n for n, o in enumerate(operands) if o is producer)
    stale = params[index]

    def param_for(outer: Instruction) -> Instruction:
        for n, o in enumerate(operands):
            if o is outer and n != index:
                return params[n]
        operands.append(outer)
        params.append(_parameter(comp, len(params), outer))
        return params[-1]

    if producer.opcode is Opcode.FUSION:
        arguments = [param_for(o) for o in producer.operands]
        mapping = clone_body(comp, fused(producer), arguments)
        value = mapping[fused(producer).root]
    else:
        value = _clone_into(comp, producer, [param_for(o) for o in producer.operands])
    for instr in comp.instructions:
        if any(o is stale for o in instr.operands):
            instr.replace_operand(stale, value)
    if comp.root is stale:
        comp.root = value
    comp.instructions = [i for i in comp.instructions if i is not stale]
    stale.parent = None
    del operands[index], params[index]
    for n, p in enumerate(params):
        p.parameter_number = n
    graph.set_operands(fusion, operands)
    fusion.attrs["kind"] = fusion_kind(comp)
    graph.remove_if_dead(producer)


def fused_preview(host: Instruction, producer: Instruction) -> Computation:
    """The fused computation :func:`fuse_producer` would give ``host`` (a fusion, or a plain
    instruction it would wrap) with ``producer`` inside, built detached: nothing changes. For
    asking a backend (``FusionPolicy.can_emit``) before fusing."""
    comp = Computation("fused_preview")
    comp.is_fusion_computation = True
    params: dict[Instruction, Instruction] = {}

    def param_for(outer: Instruction) -> Instruction:
        if outer not in params:
            params[outer] = _parameter(comp, len(params), outer)
        return params[outer]

    if producer.opcode is Opcode.FUSION:
        inner = fused(producer)
        value = clone_body(comp, inner, [param_for(o) for o in producer.operands])[inner.root]
    else:
        value = _clone_into(comp, producer, [param_for(o) for o in producer.operands])
    arguments = [value if o is producer else param_for(o) for o in host.operands]
    if host.opcode is Opcode.FUSION:
        body = fused(host)
        comp.set_root(clone_body(comp, body, arguments)[body.root])
    else:
        comp.set_root(_clone_into(comp, host, arguments))
    return comp


def merge_members(
    graph: UseGraph,
    module: Module,
    members: Sequence[Instruction],
    inline_constants_up_to: int = 1024,
    accept: Callable[[Computation], bool] | None = None,
) -> Instruction | None:
    """Replace ``members`` (fusions or plain instructions, operands before users) by one fusion.

    Values members pass to one another stay inside; every output some non-member uses becomes
    an output of the new fusion (a tuple root when there are several), and its users read it
    through a get-tuple-element. Constants of at most ``inline_constants_up_to`` elements are
    copied in rather than read. Duplicates the merge creates (the same cheap producer fused into
    two members) are merged by CSE inside the new computation. With ``accept``, the merged
    computation is shown to it first and nothing changes (None is returned) when it refuses.
    """
    member_set = set(members)
    comp = Computation("fused_computation")
    comp.is_fusion_computation = True
    operands: list[Instruction] = []
    params: dict[Instruction, Instruction] = {}
    outputs: dict[Instruction, list[Instruction]] = {}

    def is_member(instr: Instruction) -> bool:
        return instr in member_set

    def value_for(outer: Instruction) -> Instruction:
        if is_member(outer):
            return outputs[outer][0]
        if outer.opcode is Opcode.GET_TUPLE_ELEMENT and is_member(outer.operands[0]):
            return outputs[outer.operands[0]][outer.attrs["index"]]
        if outer not in params:
            if outer.opcode is Opcode.CONSTANT and outer.shape.size <= inline_constants_up_to:
                params[outer] = _clone_into(comp, outer, [])
            else:
                params[outer] = _parameter(comp, len(operands), outer)
                operands.append(outer)
        return params[outer]

    for m in members:
        arguments = [value_for(o) for o in m.operands]
        if m.opcode is Opcode.FUSION:
            body = fused(m)
            mapping = clone_body(comp, body, arguments)
            root = body.root
            if m.shape.is_tuple and root.opcode is Opcode.TUPLE:
                outputs[m] = [mapping[o] for o in root.operands]
            else:
                outputs[m] = [mapping[root]]
        else:
            outputs[m] = [_clone_into(comp, m, arguments)]

    exports: list[tuple[Instruction, int]] = []
    for m in members:
        count = len(outputs[m])
        if not m.shape.is_tuple:
            if graph.is_root(m) or any(not is_member(u) for u in graph.users(m)):
                exports.append((m, 0))
            continue
        needed = set()
        for user in graph.users(m):
            if user.opcode is Opcode.GET_TUPLE_ELEMENT:
                if graph.is_root(user) or any(not is_member(u) for u in graph.users(user)):
                    needed.add(user.attrs["index"])
            elif not is_member(user):
                needed.update(range(count))
        if graph.is_root(m):
            needed.update(range(count))
        exports.extend((m, i) for i in sorted(needed))

    values = [outputs[m][i] for m, i in exports]
    if len(values) == 1:
        comp.set_root(values[0])
    else:
        tuple_shape_root = Instruction(Opcode.TUPLE, _tuple_shape(values), values, name="tuple")
        comp.set_root(comp.add_instruction(tuple_shape_root))
    cse_computation(comp, graph.effects)
    live = set(comp.execution_order(graph.effects))
    comp.instructions = [i for i in comp.instructions if i in live]
    if accept is not None and not accept(comp):
        return None
    module.add_computation(comp)
    fusion = Instruction(
        Opcode.FUSION,
        comp.root.shape,
        operands,
        {"kind": fusion_kind(comp), "calls": comp},
        name="fusion",
    )
    graph.add(fusion)
    _rewire(graph, fusion, exports, is_member)
    for m in reversed(members):
        for user in graph.users(m):
            if user.opcode is Opcode.GET_TUPLE_ELEMENT:
                graph.remove_if_dead(user)
        graph.remove_if_dead(m)
        if not graph.is_removed(m):
            raise Internal(f"merging into {fusion.name}: {m.name} still has users")
    return fusion


def _tuple_shape(values: list[Instruction]) -> TupleShape:
    return TupleShape(tuple(v.shape for v in values))


def _rewire(graph: UseGraph, fusion: Instruction, exports, is_member) -> None:
    """Point the non-member users of each exported output at the new fusion."""
    single = len(exports) == 1
    new_values: dict[tuple[Instruction, int], Instruction] = {}
    for k, (m, i) in enumerate(exports):
        if single:
            new_values[(m, i)] = fusion
        else:
            gte = Instruction(
                Opcode.GET_TUPLE_ELEMENT,
                fusion.shape.elements[k],
                [fusion],
                {"index": k},
                name="get_tuple_element",
            )
            new_values[(m, i)] = graph.add(gte)
    for m in dict.fromkeys(m for m, _ in exports):
        if not m.shape.is_tuple:
            _redirect(graph, m, new_values[(m, 0)], is_member)
            continue
        for user in graph.users(m):
            if user.opcode is Opcode.GET_TUPLE_ELEMENT:
                key = (m, user.attrs["index"])
                if key in new_values:
                    _redirect(graph, user, new_values[key], is_member)
        if any(
            not is_member(u) and u.opcode is not Opcode.GET_TUPLE_ELEMENT for u in graph.users(m)
        ) or graph.is_root(m):
            parts = [new_values[(m, i)] for i in range(len(m.shape.elements))]
            rebuilt = graph.add(Instruction(Opcode.TUPLE, m.shape, parts, name="tuple"))
            _redirect(
                graph, m, rebuilt, lambda u: is_member(u) or u.opcode is Opcode.GET_TUPLE_ELEMENT
            )


def _redirect(graph: UseGraph, old: Instruction, new: Instruction, keep) -> None:
    """Users of ``old`` for which ``keep(user)`` is false read ``new`` instead."""
    for user in graph.users(old):
        if user is new or keep(user):
            continue
        graph.set_operands(user, [new if o is old else o for o in user.operands])
    if graph.is_root(old):
        graph.comp.root = new
