"""Shardy (``sdy.*``) sharding ops: identities for a program run on one device.

JAX emits ``sdy.sharding_constraint`` and ``sdy.reshard`` (around PRNG keys, for instance)
even for single-device programs. They say how a value is laid out across a mesh, never what
it is, so on one device each returns its operand; in a module of several partitions each
becomes a ``custom-call @Sharding`` with the layout, for the SPMD partitioner.
``sdy.manual_computation`` (shard_map) becomes per-device code between
``@SPMDFullToShardShape`` and ``@SPMDShardToFullShape`` custom calls, as XLA writes it.

The sharding importer and its parser are imported by the converters that use them, not here:
every StableHLO import registers these ops, and few programs contain one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.pretty_ops import finish, parse_operands, pretty_parser
from hlort.importers.stablehlo.types import to_shape
from hlort.ir.sharding import HloSharding
from hlort.shape import TupleShape

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
    from hlort.importers.stablehlo.shardings import meshes_of, partition_counts, sdy_to_hlo
    from hlort.text.sharding_syntax import set_sharding

    x = cx.operand(0)
    _, partitions = partition_counts(cx.conv.mlir)
    if partitions <= 1 or "sharding" not in cx.op.attrs:
        return [x]
    body = cx.op.attrs["sharding"].strip().removeprefix("<").removesuffix(">")
    layout = sdy_to_hlo(body, meshes_of(cx.conv.mlir))
    constrained = cx.b.custom_call("Sharding", [x], x.shape)
    set_sharding(constrained, layout)
    return [constrained]


@pretty_parser("sdy.manual_computation")
def parse_manual_computation(p: Parser, op: ast.Operation) -> None:
    """``sdy.manual_computation(%a, %b) in_shardings=[<@m, [{"x"}]>, ...] out_shardings=[...]
    manual_axes={"x"} (%la: t, %lb: t) { body; sdy.return ... } : (types) -> (types)``."""
    p.expect("(")
    op.operands = parse_operands(p)
    p.expect(")")
    for key in ("in_shardings", "out_shardings", "manual_axes"):
        p.expect(key)
        p.expect("=")
        open_, close = ("[", "]") if p.at("[") else ("{", "}")
        start = p.peek().pos
        p.skip_balanced(open_, close)
        op.attrs[key] = p.source.text[start : p.toks[p.i - 1].pos + 1]

    def argument():
        name = p.expect_kind("value", "a per-device argument").text
        p.expect(":")
        t = p.parse_type()
        p.skip_location()  # ``loc("shard_map:"(#loc46))``, as JAX exports print them
        return name, t

    p.expect("(")
    args = p.items_until(")", argument)
    op.regions = [p.parse_region(entry_args=args)]
    finish(p, op)


@converter("sdy.manual_computation")
def _manual_computation(cx: OpContext):
    """shard_map: the body is per-device code. As XLA writes it: each operand is laid out as its
    in_sharding (``custom-call @Sharding``) and becomes its local tile
    (``@SPMDFullToShardShape``, manual); the body is called on the tiles; each result is the
    local piece of a global value laid out as its out_sharding (``@SPMDShardToFullShape``)."""
    from hlort.importers.stablehlo.shardings import meshes_of
    from hlort.text.sharding_syntax import set_sharding

    mlir = cx.conv.mlir
    meshes = meshes_of(mlir)
    ins = _layouts(cx.op.attrs["in_shardings"], meshes)
    outs = _layouts(cx.op.attrs["out_shardings"], meshes)
    manual = set(re.findall(r'"([^"]+)"', cx.op.attrs["manual_axes"]))
    for raw in re.findall(
        r"@([\w.$-]+)", cx.op.attrs["in_shardings"] + cx.op.attrs["out_shardings"]
    ):
        mesh = meshes.get(raw)
        if mesh is not None and {name for name, size in mesh.axes if size > 1} - manual:
            raise cx.unsupported(
                f"shard_map over some mesh axes only (manual_axes {sorted(manual)} of "
                f"{[n for n, _ in mesh.axes]}); only fully manual shard_map is supported"
            )
    region = cx.op.regions[0]
    block_args = region.blocks[0].args
    if len(ins) != len(cx.operands) or len(block_args) != len(cx.operands):
        raise cx.invalid(
            f"{len(cx.operands)} operand(s), {len(ins)} in_sharding(s), {len(block_args)} "
            "body argument(s)"
        )
    b = cx.b
    locals_ = []
    for x, layout, (_, arg_type) in zip(cx.operands, ins, block_args, strict=True):
        laid = b.custom_call("Sharding", [x], x.shape)
        set_sharding(laid, layout)
        tile = b.custom_call("SPMDFullToShardShape", [laid], to_shape(arg_type))
        set_sharding(tile, HloSharding.manual())
        locals_.append(tile)
    body = cx.conv.region_to_computation(cx.scope, region, "shmap_body", None, cx.op)
    result = b.call(body, locals_)
    pieces = (
        [b.get_tuple_element(result, i) for i in range(len(outs))]
        if isinstance(result.shape, TupleShape)
        else [result]
    )
    out = []
    for i, (piece, layout) in enumerate(zip(pieces, outs, strict=True)):
        held = b.custom_call("Sharding", [piece], piece.shape)
        set_sharding(held, HloSharding.manual())
        whole = b.custom_call("SPMDShardToFullShape", [held], cx.result_shape(i))
        set_sharding(whole, layout)
        out.append(whole)
    return out


def _layouts(raw: str, meshes) -> list[HloSharding]:
    """``[<@mesh, [{"x"}]>, <@mesh, [{}]>]`` -> one sharding per entry."""
    from hlort.importers.stablehlo.shardings import sdy_to_hlo

    body = raw.strip().removeprefix("[").removesuffix("]")
    return [sdy_to_hlo(m.group(1), meshes) for m in re.finditer(r"<((?:[^<>]|<[^<>]*>)*)>", body)]
