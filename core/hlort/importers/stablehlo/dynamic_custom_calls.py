"""StableHLO's dynamic ops spelled as custom calls, as JAX's shape-polymorphic exports of 2023
carry them (``stablehlo.custom_call @stablehlo.dynamic_top_k(%x, %k)``): once the arguments'
shapes are known their size operands fold to constants, and each is its static op, as
``stablehlo-refine-shapes`` rewrites them for XLA.

- ``stablehlo.dynamic_top_k(operand, k)``: ``chlo.top_k`` with that k (values, indices).
- ``stablehlo.dynamic_rng_bit_generator(state, output_shape) {rng_algorithm}``:
  ``stablehlo.rng_bit_generator`` of that output shape (new state, bits).

A size computed from runtime values stays UNIMPLEMENTED (a data-dependent shape); the other
dynamic custom calls (``dynamic_approx_top_k``, ``dynamic_reduce_window``) keep the importer's
"no refinement rule" error.
"""

from __future__ import annotations

from dataclasses import replace

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext
from hlort.importers.stablehlo.refine_rules import fold_operand, with_dims


def static_form(cx: OpContext) -> ast.Operation | None:
    """The static op a dynamic custom call is, or None when ``cx.op`` is no such call."""
    op = cx.op
    if op.name != "stablehlo.custom_call":
        return None
    rule = _RULES.get(str(op.attrs.get("call_target_name", "")).lstrip("@"))
    return None if rule is None else rule(cx)


def _counts(cx: OpContext, operands: int, results: int) -> None:
    op = cx.op
    if len(op.operands) != operands or len(op.result_types) != results:
        raise cx.invalid(
            f"takes {operands} operands and gives {results} results, got "
            f"{len(op.operands)} and {len(op.result_types)}"
        )


def _top_k(cx: OpContext) -> ast.Operation:
    _counts(cx, 2, 2)
    x = cx.operand(0)
    k = int(fold_operand(cx, 1, "k").reshape(()))
    if x.shape.rank == 0 or not 0 <= k <= x.shape.dims[-1]:
        raise cx.invalid(f"k = {k} must be in [0, {x.shape.dims[-1:]}] of the last dimension")
    dims = [*x.shape.dims[:-1], k]
    return replace(
        cx.op,
        name="chlo.top_k",
        operands=cx.op.operands[:1],
        attrs={"k": k},
        result_types=[with_dims(cx, dims, 0), with_dims(cx, dims, 1)],
        operand_types=None,
    )


def _rng_bit_generator(cx: OpContext) -> ast.Operation:
    _counts(cx, 2, 2)
    dims = [int(d) for d in fold_operand(cx, 1, "output_shape").reshape(-1)]
    state = cx.op.result_types[0]
    attrs = {k: v for k, v in cx.op.attrs.items() if k == "rng_algorithm"}
    return replace(
        cx.op,
        name="stablehlo.rng_bit_generator",
        operands=cx.op.operands[:1],
        attrs=attrs,
        result_types=[state, with_dims(cx, dims, 1)],
        operand_types=None,
    )


_RULES = {
    "stablehlo.dynamic_top_k": _top_k,
    "stablehlo.dynamic_rng_bit_generator": _rng_bit_generator,
}
