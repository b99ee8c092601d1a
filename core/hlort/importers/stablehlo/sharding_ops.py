"""Shardy (``sdy.*``) sharding ops: identities for a program run on one device.

JAX emits ``sdy.sharding_constraint`` and ``sdy.reshard`` (around PRNG keys, for instance)
even for single-device programs. They say how a value is laid out across a mesh, never what
it is, so on one device each returns its operand; in a module of several partitions each
becomes a ``custom-call @Sharding`` with the layout, for the SPMD partitioner.
``sdy.manual_computation`` (shard_map) is per-device code and stays UNIMPLEMENTED (the
partitioner handles automatic shardings only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.errors import Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.pretty_ops import finish, parse_operands, pretty_parser
from hlort.importers.stablehlo.shardings import meshes_of, partition_counts, sdy_to_hlo
from hlort.text.sharding_syntax import set_sharding

if TYPE_CHECKING:
    from hlort.importers.stablehlo.mlir_parser import Parser

_IDENTITIES = ("sdy.sharding_constraint", "sdy.reshard")


@pretty_parser(*_IDENTITIES)
def parse_sharding_op(p: Parser, op: ast.Operation) -> None:
    """``sdy.sharding_constraint %x <@mesh, [{}, {"a"}]> [{attrs}] : type``."""
    op.operands = parse_operands(p)
    if p.at("<"):
        start = p.peek().pos
        p.skip_balanced("<", ">")
        op.attrs["sharding"] = p.source.text[start : p.toks[p.i - 1].pos + 1]
    finish(p, op)


@converter(*_IDENTITIES)
def _identity(cx: OpContext):
    """On one partition the value itself; on several a ``custom-call @Sharding`` carrying the
    layout (what XLA's partitioner reads from JAX's with_sharding_constraint)."""
    if len(cx.operands) != 1:
        raise cx.invalid(f"takes one operand, got {len(cx.operands)}")
    x = cx.operand(0)
    _, partitions = partition_counts(cx.conv.mlir)
    if partitions <= 1 or "sharding" not in cx.op.attrs:
        return [x]
    body = cx.op.attrs["sharding"].strip().removeprefix("<").removesuffix(">")
    layout = sdy_to_hlo(body, meshes_of(cx.conv.mlir))
    constrained = cx.b.custom_call("Sharding", [x], x.shape)
    set_sharding(constrained, layout)
    return [constrained]


_MANUAL = (
    "sdy.manual_computation (shard_map) is per-device code and needs SPMD partitioning, which "
    "hlort does not have yet; run the function without shard_map on one device"
)


@pretty_parser("sdy.manual_computation")
def parse_manual_computation(p: Parser, op: ast.Operation) -> None:
    line, _ = p.source.line_col(p.peek().pos)
    raise Unimplemented(f"line {line}: {_MANUAL}")


@converter("sdy.manual_computation")
def _manual_computation(cx: OpContext):
    raise cx.unsupported(_MANUAL)
