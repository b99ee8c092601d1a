"""The drawing's model of a computation: boxes for instructions, arrows for operands, and a
cluster per fusion holding its fused computation's instructions (as XLA's HLO graph dumps do).

Scalar constants are not boxes of their own: their value is written into each user's box
(``operand 1 = 0``), which keeps a fused kernel readable. Edges carry the operand's shape.
Everything here is plain data, so both layouts (Graphviz and the pure-Python one) and the
tests read the same thing. Names are unique per drawing: an instruction inside a fusion is
``<fusion>/<instruction>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

_DATA_MOVEMENT = {
    Opcode.BROADCAST,
    Opcode.RESHAPE,
    Opcode.TRANSPOSE,
    Opcode.SLICE,
    Opcode.CONCATENATE,
    Opcode.BITCAST,
    Opcode.COPY,
    Opcode.PAD,
    Opcode.GATHER,
    Opcode.SCATTER,
    Opcode.DYNAMIC_SLICE,
    Opcode.DYNAMIC_UPDATE_SLICE,
    Opcode.TUPLE,
    Opcode.GET_TUPLE_ELEMENT,
}
_HEAVY = {Opcode.DOT, Opcode.CONVOLUTION, Opcode.CUSTOM_CALL, Opcode.FFT}
_REDUCTIONS = {Opcode.REDUCE, Opcode.REDUCE_WINDOW, Opcode.SELECT_AND_SCATTER, Opcode.SORT}
_CONTROL = {Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL}


@dataclass
class Node:
    id: str
    lines: list[str]  # first: the instruction's name; second: the operation; then details
    category: str  # parameter, constant, heavy, reduction, data-movement, control, elementwise
    tooltip: str
    is_root: bool = False
    cluster: str | None = None  # id of the fusion cluster it is drawn in


@dataclass
class Edge:
    source: str
    target: str
    label: str  # the operand's shape


@dataclass
class Cluster:
    id: str
    label: str
    root: str  # node id of the fused computation's root (where the fusion's users connect)
    parameters: dict[int, str] = field(default_factory=dict)  # parameter number -> node id


@dataclass
class Graph:
    title: str
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    clusters: dict[str, Cluster] = field(default_factory=dict)

    def members(self, cluster: str | None) -> list[str]:
        return [n.id for n in self.nodes.values() if n.cluster == cluster]


def category_of(instr: Instruction) -> str:
    op = instr.opcode
    if op is Opcode.PARAMETER:
        return "parameter"
    if op is Opcode.CONSTANT:
        return "constant"
    if op in _HEAVY:
        return "heavy"
    if op in _REDUCTIONS:
        return "reduction"
    if op in _DATA_MOVEMENT:
        return "data-movement"
    if op in _CONTROL:
        return "control"
    return "elementwise"


def shape_text(instr: Instruction) -> str:
    return instr.shape.to_hlo(with_layout=False)


def _inlined_constant(instr: Instruction) -> str | None:
    """The printed value of a scalar constant (drawn inside its users), else None."""
    if instr.opcode is not Opcode.CONSTANT or instr.shape.is_tuple:
        return None
    if getattr(instr.shape, "dims", None) != () or instr.literal is None:
        return None
    value = instr.literal
    try:
        return str(value.item())
    except (AttributeError, ValueError):
        return str(value)


def _tooltip(instr: Instruction) -> str:
    from hlort.text.printer import print_instruction

    try:
        return print_instruction(instr, include_metadata=False).strip()
    except Exception:  # noqa: BLE001 - a tooltip never stops a drawing
        return f"{instr.name} = {shape_text(instr)} {instr.opcode.value}(...)"


def build_graph(comp: Computation, title: str | None = None) -> Graph:
    """The drawing of ``comp`` (normally a module's entry), fusions expanded into clusters."""
    graph = Graph(title or comp.name)
    _add_computation(graph, comp, prefix="", cluster=None)
    return graph


def _add_computation(
    graph: Graph, comp: Computation, prefix: str, cluster: str | None
) -> dict[Instruction, str]:
    """Adds ``comp``'s instructions; returns the node id each one's value comes out of."""
    out: dict[Instruction, str] = {}
    for instr in comp.post_order():
        if _inlined_constant(instr) is not None:
            continue
        node_id = prefix + instr.name
        if instr.opcode is Opcode.FUSION:
            out[instr] = _add_fusion(graph, instr, node_id)
            continue
        lines = [instr.name, _operation_line(instr), shape_text(instr)]
        for k, operand in enumerate(instr.operands):
            value = _inlined_constant(operand)
            if value is not None:
                lines.append(f"operand {k} = {value}")
        called = [c.name for c in instr.called_computations()]
        if called:
            lines.append("calls " + ", ".join(called))
        graph.nodes[node_id] = Node(
            node_id,
            lines,
            category_of(instr),
            _tooltip(instr),
            is_root=instr is comp.root,
            cluster=cluster,
        )
        out[instr] = node_id
        for operand in instr.operands:
            if operand in out:
                graph.edges.append(Edge(out[operand], node_id, shape_text(operand)))
    return out


def _operation_line(instr: Instruction) -> str:
    if instr.opcode is Opcode.PARAMETER:
        return f"parameter {instr.parameter_number}"
    if instr.opcode is Opcode.CONSTANT:
        return "constant"
    return instr.opcode.value


def _add_fusion(graph: Graph, fusion: Instruction, cluster_id: str) -> str:
    """A cluster with the fused computation inside; outer operands connect to its parameters.
    Returns the node id of its root (the fusion's value)."""
    (fused,) = fusion.called_computations()
    kind = fusion.attrs.get("kind")
    kind_text = getattr(kind, "value", kind)
    label = f"{fusion.name}  ({kind_text})" if kind_text else fusion.name
    inner = _add_computation(graph, fused, prefix=cluster_id + "/", cluster=cluster_id)
    cluster = Cluster(cluster_id, f"{label}  {shape_text(fusion)}", root=inner[fused.root])
    for param in fused.parameters:
        if param in inner:
            cluster.parameters[param.parameter_number] = inner[param]
    graph.clusters[cluster_id] = cluster
    outer = fusion.parent
    for k, operand in enumerate(fusion.operands):
        target = cluster.parameters.get(k)
        source = _find_source(graph, outer, operand, cluster_id)
        if target is not None and source is not None:
            graph.edges.append(Edge(source, target, shape_text(operand)))
    graph.nodes[cluster.root].is_root = fusion is (outer.root if outer else None)
    return cluster.root


def _find_source(graph: Graph, comp, operand: Instruction, cluster_id: str) -> str | None:
    """The node id of ``operand`` (drawn before its users: post order)."""
    prefix = cluster_id.rsplit("/", 1)[0] + "/" if "/" in cluster_id else ""
    if _inlined_constant(operand) is not None:
        return None
    if operand.opcode is Opcode.FUSION:
        return graph.clusters[prefix + operand.name].root
    node_id = prefix + operand.name
    return node_id if node_id in graph.nodes else None
