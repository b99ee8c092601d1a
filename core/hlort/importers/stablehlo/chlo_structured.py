"""CHLO ops with structure rather than a formula: top_k, scan, mulhi, ragged_dot and the
broadcasting binary ops (``chlo.broadcast_add``...).

- top_k: a stable sort of (values, iota) by value, descending (total order for floats), sliced
  to k; ties keep the lower index first, as StableHLO's legalization does.
- scan: an HLO while loop over the scan dimension, carrying the accumulators.
- mulhi: the high half of the double-width product; exact (64-bit via 32-bit limbs).
- ragged_dot (ragged non-contracting lhs dimension, the "mode 1" of the spec): a dot against every
  group, masked to each group's rows and summed; exact up to the dot's own rounding.
"""

from __future__ import annotations

import numpy as np

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.convert_data_movement import broadcast_in_dim
from hlort.importers.stablehlo.convert_elementwise import ELEMENTWISE
from hlort.importers.stablehlo.hlo_math import E, select
from hlort.ir import attributes as A
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape


@converter("chlo.top_k")
def _top_k(cx: OpContext):
    x = cx.operand(0)
    k = cx.int("k")
    rank = x.shape.rank
    last = rank - 1
    iota = cx.b.iota(ArrayShape(cx.result_dtype(1), x.shape.dims), last)
    kind = "TOTALORDER" if x.shape.dtype.is_float else None
    comparator = cx.b.comparator([x.shape.dtype, iota.shape.dtype], "GT", kind)
    out = cx.b.sort([x, iota], comparator, last, is_stable=True)
    limits = list(x.shape.dims)
    limits[last] = min(k, limits[last])
    values = cx.b.slice(cx.b.get_tuple_element(out, 0), [0] * rank, limits)
    indices = cx.b.slice(cx.b.get_tuple_element(out, 1), [0] * rank, limits)
    return [values, indices]


@converter("chlo.mulhi")
def _mulhi(cx: OpContext):
    a, b = cx.operands
    dt = a.shape.dtype
    if not dt.is_integer:
        raise cx.invalid(f"needs integer operands, got {dt}")
    signed = dt.is_signed_integer
    if dt.bits <= 32:
        wide = {4: "8", 8: "16", 16: "32", 32: "64"}[dt.bits]
        wide_dt = ("s" if signed else "u") + wide
        product = cx.b.multiply(cx.b.convert(a, wide_dt), cx.b.convert(b, wide_dt))
        shift = cx.b.constant(
            np.full(a.shape.dims, dt.bits, np.dtype(("int" if signed else "uint") + wide))
        )
        shifted = cx.b.op(
            Opcode.SHIFT_RIGHT_ARITHMETIC if signed else Opcode.SHIFT_RIGHT_LOGICAL,
            (product, shift),
        )
        return [cx.b.convert(shifted, dt)]
    ua = E(cx.b, a).bitcast("u64") if signed else E(cx.b, a)
    ub = E(cx.b, b).bitcast("u64") if signed else E(cx.b, b)
    high = _mulhi_u64(ua, ub)
    if signed:
        zero = E(cx.b, a).const(0)
        high = high - select(E(cx.b, a).lt(zero), ub, 0) - select(E(cx.b, b).lt(zero), ua, 0)
        return [high.bitcast("s64").i]
    return [high.i]


def _mulhi_u64(a: E, b: E) -> E:
    def shr(v: E, n: int) -> E:
        return v.op(Opcode.SHIFT_RIGHT_LOGICAL, n)

    mask = 0xFFFFFFFF
    a_lo, a_hi = a & mask, shr(a, 32)
    b_lo, b_hi = b & mask, shr(b, 32)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    cross = shr(lo_lo, 32) + (hi_lo & mask) + lo_hi
    return a_hi * b_hi + shr(hi_lo, 32) + shr(cross, 32)


@converter("chlo.scan")
def _scan(cx: OpContext):
    n_in = cx.int("num_inputs")
    inputs = cx.operands[:n_in]
    inits = cx.operands[n_in:]
    n_out = len(cx.op.results) - len(inits)
    dim = cx.int("dimension", 0)
    reverse = cx.bool("is_reverse")
    if not inputs:
        raise cx.unsupported("scan without inputs")
    length = inputs[0].shape.dims[dim]
    b = cx.b
    elem_shapes = [
        ArrayShape(x.shape.dtype, x.shape.dims[:dim] + x.shape.dims[dim + 1 :]) for x in inputs
    ]
    body_comp = cx.region_computation(0, "scan_body", elem_shapes + [c.shape for c in inits])
    out_shapes = [cx.result_array(i) for i in range(n_out)]
    zeros = [b.broadcast(b.constant(np.zeros((), s.dtype.numpy)), s.dims, []) for s in out_shapes]
    counter = b.constant(np.array(0, np.int32))
    state = b.tuple([counter, *inits, *zeros, *inputs])
    n_c = len(inits)

    cond = b.sub("scan_cond")
    p = cond.parameter(state.shape, "state")
    i = cond.get_tuple_element(p, 0)
    cond_comp = cond.finish(cond.compare(i, cond.constant(np.array(length, np.int32)), "LT"))

    body = b.sub("scan_step")
    p = body.parameter(state.shape, "state")
    fields = [body.get_tuple_element(p, j) for j in range(len(state.shape.elements))]
    i = fields[0]
    carries = fields[1 : 1 + n_c]
    accs = fields[1 + n_c : 1 + n_c + n_out]
    xs = fields[1 + n_c + n_out :]
    idx = body.subtract(body.constant(np.array(length - 1, np.int32)), i) if reverse else i
    zero = body.constant(np.array(0, np.int32))
    elements = []
    for x, shape in zip(xs, elem_shapes, strict=False):
        starts = [idx if d == dim else zero for d in range(x.shape.rank)]
        sizes = [1 if d == dim else n for d, n in enumerate(x.shape.dims)]
        elements.append(body.reshape(body.dynamic_slice(x, starts, sizes), shape.dims))
    called = body.call(body_comp, [*elements, *carries])
    results = (
        [body.get_tuple_element(called, j) for j in range(n_out + n_c)]
        if called.shape.is_tuple
        else [called]
    )
    new_accs = []
    for acc, value in zip(accs, results[:n_out], strict=False):
        dims = list(acc.shape.dims)
        dims[dim] = 1
        update = body.reshape(value, dims)
        starts = [idx if d == dim else zero for d in range(acc.shape.rank)]
        new_accs.append(body.dynamic_update_slice(acc, update, starts))
    one = body.constant(np.array(1, np.int32))
    body_comp_loop = body.finish(body.tuple([body.add(i, one), *results[n_out:], *new_accs, *xs]))
    loop = b.while_loop(cond_comp, body_comp_loop, state)
    outs = [b.get_tuple_element(loop, 1 + n_c + j) for j in range(n_out)]
    finals = [b.get_tuple_element(loop, 1 + j) for j in range(n_c)]
    return outs + finals


@converter("chlo.ragged_dot")
def _ragged_dot(cx: OpContext):
    lhs, rhs, group_sizes = cx.operands
    value = cx.attr("ragged_dot_dimension_numbers")
    f = value.fields if isinstance(value, ast.StructAttr) else {}

    def dims(key: str) -> tuple[int, ...]:
        return tuple(int(d) for d in f.get(key, ()))

    lhs_batch, rhs_batch = dims("lhs_batching_dimensions"), dims("rhs_batching_dimensions")
    lhs_contract = dims("lhs_contracting_dimensions")
    rhs_contract = dims("rhs_contracting_dimensions")
    ragged, group = dims("lhs_ragged_dimensions"), dims("rhs_group_dimensions")
    if len(ragged) != 1 or len(group) != 1 or ragged[0] in lhs_contract + lhs_batch:
        raise cx.unsupported("ragged_dot with a ragged contracting or batch dimension")
    b = cx.b
    dnums = A.DotDimensionNumbers(lhs_contract, rhs_contract, lhs_batch, rhs_batch)
    product = b.dot_general(lhs, rhs, dnums, preferred=cx.result_dtype())
    lhs_free = [d for d in range(lhs.shape.rank) if d not in lhs_batch + lhs_contract]
    rhs_free = [d for d in range(rhs.shape.rank) if d not in rhs_batch + rhs_contract]
    r_pos = len(lhs_batch) + lhs_free.index(ragged[0])
    g_pos = len(lhs_batch) + len(lhs_free) + rhs_free.index(group[0])
    n_groups = rhs.shape.dims[group[0]]
    rows = lhs.shape.dims[ragged[0]]
    sizes = b.convert(group_sizes, "s64")
    add = b.scalar_computation(Opcode.ADD, "s64")
    window = [A.WindowDim(n_groups, 1, n_groups - 1, 0)]
    ends = b.reduce_window(sizes, b.constant(np.array(0, np.int64)), add, window)
    starts = b.subtract(ends, sizes)
    row = b.iota(ArrayShape(starts.shape.dtype, (rows, n_groups)), 0)
    start_b = b.broadcast(starts, (rows, n_groups), [1])
    end_b = b.broadcast(ends, (rows, n_groups), [1])
    mask = b.and_(b.compare(row, start_b, "GE"), b.compare(row, end_b, "LT"))
    mask = b.convert(mask, product.shape.dtype)
    mask = broadcast_in_dim(cx, mask, product.shape.dims, [r_pos, g_pos])
    masked = b.multiply(product, mask)
    zero = b.constant(np.zeros((), product.shape.dtype.numpy))
    reducer = b.scalar_computation(Opcode.ADD, product.shape.dtype)
    return [b.reduce(masked, zero, reducer, [g_pos])]


def _broadcasting(opcode: Opcode):
    """``chlo.broadcast_<op>``: NumPy-style rank broadcasting, or explicit broadcast_dimensions."""

    def convert(cx: OpContext):
        out = cx.result_array()
        operands = []
        for x in cx.operands:
            if x.shape.dims == out.dims:
                operands.append(x)
                continue
            bdims = cx.attr("broadcast_dimensions", None)
            mapping = (
                cx.ints("broadcast_dimensions")
                if bdims is not None
                else range(out.rank - x.shape.rank, out.rank)
            )
            operands.append(broadcast_in_dim(cx, x, out.dims, list(mapping)))
        if opcode is Opcode.COMPARE:
            kind = cx.enum("compare_type", None)
            return [
                cx.b.compare(
                    operands[0],
                    operands[1],
                    cx.enum("comparison_direction"),
                    None if kind == "NOTYPE" else kind,
                )
            ]
        return [cx.b.op(opcode, operands)]

    return convert


for _name, _opcode in {
    **ELEMENTWISE,
    "compare": Opcode.COMPARE,
    "max": Opcode.MAXIMUM,
    "min": Opcode.MINIMUM,
    "mul": Opcode.MULTIPLY,
    "div": Opcode.DIVIDE,
    "sub": Opcode.SUBTRACT,
    "rem": Opcode.REMAINDER,
    "pow": Opcode.POWER,
    "select": Opcode.SELECT,
}.items():
    if _opcode.info.arity in (2, 3):
        converter(f"chlo.broadcast_{_name}")(_broadcasting(_opcode))
