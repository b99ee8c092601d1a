"""``interpreter.run_parallel``: several processes of one program, flattened into one computation.

StableHLO's interpreter tests run a function on a grid of processes (replicas x partitions) that
talk through collectives. hlort has no collective ops, but when every process runs the same
function the whole grid can be imported as one program: the function's ops are converted once
per process, in lock step, and each collective becomes ordinary data movement between the
processes' values (a reduction over a group, a concatenation, a slice, a copy). replica_id and
partition_id become each process's constants. Process groups follow the StableHLO spec's modes
(cross_replica, cross_replica_and_partition, flattened_ids, cross_partition).
"""

from __future__ import annotations

import numpy as np

from hlort.errors import Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, as_ints, converter
from hlort.ir.instruction import Instruction
from hlort.shape import scalar

_COLLECTIVES = (
    "stablehlo.all_reduce",
    "stablehlo.all_gather",
    "stablehlo.reduce_scatter",
    "stablehlo.all_to_all",
    "stablehlo.collective_permute",
    "stablehlo.collective_broadcast",
    "stablehlo.collective_reduce",
)
Process = tuple[int, int]  # (replica, partition)


@converter("interpreter.run_parallel")
def _run_parallel(cx: OpContext):
    from hlort.importers.stablehlo.convert_module import Scope

    programs = cx.attr("programs")
    names = [[p.name if isinstance(p, ast.SymbolRef) else str(p) for p in row] for row in programs]
    flat = [n for row in names for n in row]
    if len(set(flat)) != 1 or len({len(r) for r in names}) != 1:
        raise cx.unsupported("processes running different functions (send/recv pairs)")
    func = cx.conv.mlir.functions.get(flat[0])
    if func is None or func.body is None or len(func.body.blocks) != 1:
        raise cx.invalid(f"program @{flat[0]} is not a function with a body")
    replicas, partitions = len(names), len(names[0])
    processes = [(r, p) for r in range(replicas) for p in range(partitions)]
    n_args = len(func.args)
    if len(cx.operands) != n_args * len(processes):
        raise cx.invalid(
            f"{len(processes)} processes of @{func.name} take "
            f"{n_args * len(processes)} operands, got {len(cx.operands)}"
        )
    scopes = []
    for k, process in enumerate(processes):
        scope = Scope(cx.conv, cx.b, parent=None)
        scope.process = process  # type: ignore[attr-defined]
        for (arg, arg_type), value in zip(func.args, cx.operands[k * n_args :], strict=False):
            scope.define(arg, value, arg_type)
        scopes.append(scope)
    grid = _Grid(cx, replicas, partitions)
    results: list[Instruction] = []
    for op in func.body.blocks[0].ops:
        if op.name in ("func.return", "stablehlo.return"):
            for scope in scopes:
                results.extend(scope.lookup(v) for v in op.operands)
            break
        if op.name in _COLLECTIVES:
            inputs = [[s.lookup(v) for v in op.operands] for s in scopes]
            outputs = grid.collective(op, inputs, processes)
            for scope, values in zip(scopes, outputs, strict=True):
                for name, value, t in zip(op.results, values, op.result_types, strict=True):
                    scope.define(name, value, t)
            continue
        for scope in scopes:
            cx.conv.convert_op(scope, op)
    return results


class _Grid:
    def __init__(self, cx: OpContext, replicas: int, partitions: int):
        self.cx = cx
        self.b = cx.b
        self.replicas = replicas
        self.partitions = partitions

    def groups(self, op: ast.Operation, kind: str) -> list[list[Process]]:
        attrs = op.attrs
        handle = attrs.get("channel_handle")
        channel = int(handle.fields.get("handle", 0)) if isinstance(handle, ast.StructAttr) else 0
        raw = attrs.get("replica_groups")
        rows = _rows(raw) if raw is not None else []
        replicas, partitions = range(self.replicas), range(self.partitions)
        if kind == "partition_or_replica":
            if channel > 0:
                rows = rows or [list(partitions)]
                return [[(r, p) for p in g] for r in replicas for g in rows]
            rows = rows or [list(replicas)]
            return [[(r, p) for r in g] for p in partitions for g in rows]
        if channel <= 0:
            rows = rows or [list(replicas)]
            return [[(r, p) for r in g] for p in partitions for g in rows]
        if not attrs.get("use_global_device_ids"):
            rows = rows or [list(replicas)]
            return [[(r, p) for p in partitions for r in g] for g in rows]
        return [[divmod(i, self.partitions) for i in g] for g in rows]

    def collective(self, op: ast.Operation, inputs, processes: list[Process]):
        kind = op.name.split(".", 1)[1]
        where = {proc: k for k, proc in enumerate(processes)}
        n = len(op.results)
        out: list[list[Instruction | None]] = [[None] * n for _ in processes]
        mode = (
            "partition_or_replica"
            if kind in ("all_to_all", "collective_broadcast", "collective_reduce")
            else "replica"
        )
        if kind == "collective_permute":
            self._permute(op, inputs, processes, where, out)
            return out
        for group in self.groups(op, mode):
            members = [where[p] for p in group if p in where]
            roots = [0] * n
            if kind == "collective_broadcast" and op.attrs.get("has_dynamic_root") and members:
                root = self.cx.constant_value(inputs[members[0]][-1])
                if root is None:
                    raise Unimplemented(f"{op.name}: a root that is not a constant")
                flat = [int(v) for v in np.asarray(root).reshape(-1)]
                roots = [flat[i] if i < len(flat) else flat[0] for i in range(n)]
            for i in range(n):
                order = members[roots[i] :] + members[: roots[i]]  # the source goes first
                values = [inputs[m][i] for m in order]
                for m in members:
                    out[m][i] = self._one(op, kind, values, order.index(m), len(order))
        for k in range(len(processes)):  # processes outside every group
            for i in range(n):
                if out[k][i] is None:
                    out[k][i] = self._zeros_like(inputs[k][i])
        return out

    def _one(self, op: ast.Operation, kind: str, values: list[Instruction], pos: int, size: int):
        b = self.b
        cx = OpContext(self.cx.conv, self.cx.scope, op)
        if kind == "all_reduce":
            return self._reduce(cx, values)
        if kind == "all_gather":
            dim = cx.int("all_gather_dim")
            return b.concatenate(values, dim) if len(values) > 1 else values[0]
        if kind == "reduce_scatter":
            return self._split(self._reduce(cx, values), cx.int("scatter_dimension"), size, pos)
        if kind == "all_to_all":
            split, concat = cx.int("split_dimension"), cx.int("concat_dimension")
            parts = [self._split(v, split, size, pos) for v in values]
            return b.concatenate(parts, concat) if len(parts) > 1 else parts[0]
        if kind == "collective_broadcast":
            return values[0]
        if kind == "collective_reduce":  # the reduction to the group's first member, zeros else
            return self._reduce(cx, values) if pos == 0 else self._zeros_like(values[pos])
        raise Unimplemented(f"{op.name} is not supported")

    def _reduce(self, cx: OpContext, values: list[Instruction]) -> Instruction:
        dt = values[0].shape.dtype
        comp = cx.region_computation(0, "reducer", [scalar(dt), scalar(dt)])
        acc = values[0]
        for v in values[1:]:
            acc = self.b.map([acc, v], comp) if acc.shape.rank else self.b.call(comp, [acc, v])
        return acc

    def _split(self, x: Instruction, dim: int, parts: int, index: int) -> Instruction:
        size = x.shape.dims[dim] // parts
        starts = [0] * x.shape.rank
        limits = list(x.shape.dims)
        starts[dim], limits[dim] = index * size, (index + 1) * size
        return self.b.slice(x, starts, limits)

    def _zeros_like(self, x: Instruction) -> Instruction:
        zero = self.b.constant(np.zeros((), x.shape.dtype.numpy))
        return self.b.broadcast(zero, x.shape.dims, []) if x.shape.rank else zero

    def _permute(self, op, inputs, processes, where, out) -> None:
        handle = op.attrs.get("channel_handle")
        channel = int(handle.fields.get("handle", 0)) if isinstance(handle, ast.StructAttr) else 0
        pairs = _rows(op.attrs.get("source_target_pairs"))
        for k, (r, p) in enumerate(processes):
            for source, target in pairs:
                if channel > 0:
                    src, dst = (r, source), (r, target)
                else:
                    src, dst = (source, p), (target, p)
                if src in where and dst in where and dst == (r, p):
                    out[k] = list(inputs[where[src]])
        for k in range(len(processes)):
            out[k] = [
                v if v is not None else self._zeros_like(inputs[k][i]) for i, v in enumerate(out[k])
            ]


def _rows(value) -> list[list[int]]:
    """A dense Nx M group attribute as lists, dropping the -1 padding of ragged groups."""
    if isinstance(value, ast.DenseAttr) and value.value is not None:
        array = np.asarray(value.value).reshape(len(value.value) if value.value.ndim else 1, -1)
        return [[int(v) for v in row if v >= 0] for row in array]
    flat = as_ints(value, ValueError) if value is not None else ()
    return [list(flat)] if flat else []


def process_constant(cx: OpContext, which: int) -> list[Instruction] | None:
    """replica_id (``which=0``) / partition_id (1) inside run_parallel: the process's number."""
    scope = cx.scope
    while scope is not None and not hasattr(scope, "process"):
        scope = scope.parent
    if scope is None:
        return None
    return [cx.b.constant(np.array(scope.process[which], np.uint32))]
