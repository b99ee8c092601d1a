"""Control flow and structure: while, if, case, call, composite, custom_call, optimization_barrier,
after_all and rng_bit_generator (send/recv and infeed/outfeed: parallel_host_ops.py).

StableHLO regions of while/if/case may use values of the enclosing block. HLO computations take
everything as parameters, so such captured values (other than constants, which are re-created
inside) ride along: in the loop state for while, in the branch operand for if/case.
"""

from __future__ import annotations

from dataclasses import replace

from hlort.ffi_attributes import ffi_attributes_text
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, as_ints, converter
from hlort.importers.stablehlo.convert_data_movement import unpack
from hlort.importers.stablehlo.convert_module import Scope, free_values
from hlort.ir.custom_call_layouts import CONSTRAINTS, check_layouts
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_rules.custom_call import API_VERSIONS
from hlort.shape import ArrayShape, TupleShape
from hlort.text.shapes import shape_text


def _captured(cx: OpContext, regions) -> list[tuple[str, object]]:
    """Non-constant values of the enclosing scopes that ``regions`` use."""
    out = []
    for name in free_values(regions):
        outer = cx.scope.lookup(name)
        if outer.opcode is not Opcode.CONSTANT:
            out.append((name, outer))
    return out


def _state_computation(
    cx: OpContext, region: ast.Region, name: str, state_shape, n_args: int, captured, mode: str
):
    """A computation over one tuple parameter (block arguments, then captured values).

    ``mode``: "cond" returns the region's i1; "body" returns the new state (results, then the
    captured values unchanged); "branch" returns the region's results as a tuple."""
    if len(region.blocks) != 1:
        raise cx.unsupported(f"regions with {len(region.blocks)} blocks")
    block = region.blocks[0]
    if len(block.args) != n_args:
        raise cx.invalid(f"region takes {len(block.args)} argument(s), expected {n_args}")
    sub = cx.b.sub(name)
    inner = Scope(cx.conv, sub, parent=cx.scope)
    state = sub.parameter(state_shape, "state")
    for i, (arg, _) in enumerate(block.args):
        inner.define(arg, sub.get_tuple_element(state, i))
    passthrough = []
    for j, (cap, _) in enumerate(captured):
        value = sub.get_tuple_element(state, n_args + j)
        inner.define(cap, value)
        passthrough.append(value)
    results = cx.conv.convert_block(inner, block)
    if mode == "body":
        root = sub.tuple(results + passthrough)
    elif mode == "branch":
        root = sub.tuple(results)
    else:
        if len(results) != 1:
            raise cx.invalid("the loop condition must return one i1 value")
        root = results[0]
    return sub.finish(root)


@converter("stablehlo.while")
def _while(cx: OpContext):
    inits = cx.operands
    cond_region, body_region = cx.op.regions
    captured = _captured(cx, [cond_region, body_region])
    init = cx.b.tuple(list(inits) + [c for _, c in captured])
    n = len(inits)
    cond = _state_computation(cx, cond_region, "while_cond", init.shape, n, captured, "cond")
    body = _state_computation(cx, body_region, "while_body", init.shape, n, captured, "body")
    loop = cx.b.while_loop(cond, body, init)
    return [cx.b.get_tuple_element(loop, i) for i in range(n)]


def _branches(cx: OpContext, selector, regions):
    captured = _captured(cx, regions)
    operand = cx.b.tuple([c for _, c in captured])
    comps = [
        _state_computation(cx, region, f"branch{i}", operand.shape, 0, captured, "branch")
        for i, region in enumerate(regions)
    ]
    out = cx.b.conditional(selector, comps, [operand] * len(comps))
    return [cx.b.get_tuple_element(out, i) for i in range(len(cx.op.results))]


@converter("stablehlo.if")
def _if(cx: OpContext):
    return _branches(cx, cx.operand(0), cx.op.regions)


@converter("stablehlo.case")
def _case(cx: OpContext):
    index = cx.operand(0)
    if index.shape.dtype.name != "s32":
        index = cx.b.convert(index, "s32")
    return _branches(cx, index, cx.op.regions)


def call_function(cx: OpContext, name: str, operands):
    comp = cx.conv.function_computation(name, operands=operands)
    out = cx.b.call(comp, operands)
    n = len(cx.op.results)
    if n == 0:
        return []
    # one result is the call itself (the function's root), a tuple too: a tuple-typed result
    return [out] if n == 1 else unpack(cx, out, n)


@converter("func.call")
def _call(cx: OpContext):
    callee = cx.attr("callee")
    name = callee.name if isinstance(callee, ast.SymbolRef) else str(callee)
    return call_function(cx, name, cx.operands)


@converter("stablehlo.composite")
def _composite(cx: OpContext):
    decomposition = cx.attr("decomposition")
    if not isinstance(decomposition, ast.SymbolRef):
        raise cx.invalid(f"decomposition must be a function symbol, got {decomposition!r}")
    return call_function(cx, decomposition.name, cx.operands)


# Shardy's round-trip spelling of a function result's sharding (jax 2025 exports): the
# result's own ``mhlo.sharding`` says the same, so the call is its operand, as in XLA's import.
SDY_ROUND_TRIP_RESULTS = ("xla.sdy.FuncResultSharding",)


@converter("stablehlo.custom_call")
def _custom_call(cx: OpContext):
    target = cx.attr("call_target_name")
    if target in SDY_ROUND_TRIP_RESULTS:  # its sharding is the result's; XLA drops the call too
        if len(cx.operands) != len(cx.op.result_types):
            raise cx.invalid(f"{target} passes its operands through: one result each")
        return list(cx.operands)
    shapes = [cx.result_shape(i) for i in range(len(cx.op.result_types))]
    operand_layouts, result_layouts = (
        _layouts(cx, "operand_layouts"),
        _layouts(cx, "result_layouts"),
    )
    if result_layouts is not None:
        if len(result_layouts) != len(shapes):
            raise cx.invalid(f"has {len(shapes)} results but {len(result_layouts)} result_layouts")
        shapes = [_laid_out(cx, s, lay) for s, lay in zip(shapes, result_layouts, strict=True)]
    shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
    attrs = {"custom_call_target": target}
    config = cx.attr("backend_config", None)
    if isinstance(config, str) and config:
        attrs["backend_config"] = config
    ffi_config = cx.attr("mhlo.backend_config", None)
    if isinstance(ffi_config, dict) and not config:
        attrs["backend_config"] = ffi_attributes_text(ffi_config)  # as XLA prints a typed FFI's
    if cx.bool("has_side_effect"):
        attrs["has_side_effect"] = True
    version = _api_version(cx)
    if version is None and isinstance(ffi_config, dict):
        version = "API_VERSION_TYPED_FFI"  # a dictionary config is a typed FFI call's (XLA's)
    if version is not None:
        attrs["api_version"] = version
    called = cx.attr("called_computations", None)
    if called:
        attrs["called_computations"] = tuple(
            cx.conv.function_computation(c.name) for c in called if isinstance(c, ast.SymbolRef)
        )
    out = cx.b.op(Opcode.CUSTOM_CALL, cx.operands, shape, **attrs)
    if operand_layouts is not None:
        if len(operand_layouts) != len(cx.operands):
            raise cx.invalid(
                f"has {len(cx.operands)} operands but {len(operand_layouts)} operand_layouts"
            )
        laid = [
            _laid_out(cx, o.shape, lay) for o, lay in zip(cx.operands, operand_layouts, strict=True)
        ]
        out.extra_attrs[CONSTRAINTS] = "{" + ", ".join(shape_text(s) for s in laid) + "}"
        check_layouts(out.name, target, [getattr(s, "layout", None) for s in laid], laid, out.shape)
    if not shapes:
        return []
    # one result is the call itself, a tuple too (XLA's older tuple-returning calls: TPU's Qr)
    values = [out] if len(shapes) == 1 else unpack(cx, out, len(shapes))
    for value in values:  # a result's layout is the call's; what reads it sees logical arrays
        if value is not out and getattr(value.shape, "layout", None) is not None:
            value.shape = replace(value.shape, layout=None)
    return values


def _layouts(cx: OpContext, name: str) -> list[tuple[int, ...]] | None:
    """``operand_layouts`` / ``result_layouts``: one minor-to-major list per value, or None."""
    value = cx.attr(name, None)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise cx.invalid(f"{name} must be a list of dense index arrays, got {value!r}")
    return [_index_list(cx, name, v) for v in value]


def _index_list(cx: OpContext, name: str, value) -> tuple[int, ...]:
    """``dense<[0, 1]> : tensor<2xindex>`` (index elements: kept as the literal's text)."""
    if isinstance(value, ast.DenseAttr) and value.value is None:
        body = value.raw.split(":")[0]
        body = body[body.find("<") + 1 : body.rfind(">")] if "<" in body else body
        digits = body.replace("[", " ").replace("]", " ").replace(",", " ").split()
        try:
            return tuple(int(d) for d in digits)
        except ValueError:
            raise cx.invalid(f"{name}: {value.raw!r} is not a list of indices") from None
    return as_ints(value, lambda msg: cx.invalid(f"{name}: {msg}"))


def _laid_out(cx: OpContext, shape, layout: tuple[int, ...]):
    """``shape`` with ``layout`` (minor to major); a token or tuple keeps none."""
    if not isinstance(shape, ArrayShape):
        return shape
    if sorted(layout) != list(range(shape.rank)):
        raise cx.invalid(f"layout {list(layout)} is not a permutation of {shape}'s dimensions")
    return replace(shape, layout=tuple(layout)) if shape.rank else shape


_VERSION_NAMES = {number: name for name, number in API_VERSIONS.items()}


def _api_version(cx: OpContext) -> str | None:
    """The call's ``api_version`` as XLA names it, None for the default (ORIGINAL) or unset: a
    typed-FFI call (LAPACK's ``*_ffi`` targets) must stay typed when the module goes to XLA."""
    if cx.attr("api_version", None) is None:
        return None
    number = cx.int("api_version")
    if number == 0:  # API_VERSION_UNSPECIFIED: StableHLO's "not said", i.e. the default
        return None
    if number not in _VERSION_NAMES:
        raise cx.invalid(f"api_version must be 0..4, got {number}")
    return None if number == 1 else _VERSION_NAMES[number]


@converter("stablehlo.optimization_barrier")
def _optimization_barrier(cx: OpContext):
    if len(cx.operands) == 1:
        return [cx.b.optimization_barrier(cx.operand(0))]
    out = cx.b.optimization_barrier(cx.b.tuple(cx.operands))
    return [cx.b.get_tuple_element(out, i) for i in range(len(cx.operands))]


@converter("stablehlo.after_all")
def _after_all(cx: OpContext):
    return [cx.b.after_all(cx.operands)]


@converter("stablehlo.create_token")
def _create_token(cx: OpContext):
    return [cx.b.after_all([])]


_RNG = {"DEFAULT": "rng_default", "THREE_FRY": "rng_three_fry", "PHILOX": "rng_philox"}


@converter("stablehlo.rng_bit_generator")
def _rng_bit_generator(cx: OpContext):
    algorithm = _RNG.get(cx.enum("rng_algorithm", "DEFAULT") or "DEFAULT")
    if algorithm is None:
        raise cx.invalid(f"unknown rng_algorithm {cx.attr('rng_algorithm')!r}")
    out = cx.b.rng_bit_generator(cx.operand(0), cx.result_array(1), algorithm)
    return [cx.b.get_tuple_element(out, 0), cx.b.get_tuple_element(out, 1)]


@converter("interpreter.print")
def _print(cx: OpContext):
    return []


@converter("interpreter.probe")
def _probe(cx: OpContext):
    """Identity; the entry block's probes are remembered for check.expect_serialized_eq."""
    if cx.scope.is_entry:
        cx.conv.probes[str(cx.attr("probe_id", ""))] = cx.operand(0)
    return [cx.operand(0)]
