"""StableHLO's pretty (custom assembly) op forms, parsed into the generic representation.

Most ops print as ``name %a, %b, key = value : types``; a default parser covers those and renames
the pretty keywords to the generic attribute names (``dims`` -> ``broadcast_dimensions`` for
broadcast_in_dim, ``permutation`` for transpose...). Ops with their own syntax (compare, slice,
reduce, while, convolution, custom_call, composite, get_tuple_element, call, chlo.top_k,
chlo.scan) have a dedicated parser below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.ir.op_registry import OpRegistry

if TYPE_CHECKING:
    from hlort.importers.stablehlo.mlir_parser import Parser

PrettyParser = Callable[["Parser", ast.Operation], None]
# the parsers here, and those of sharding_ops (Shardy's ops), loaded on the first lookup
PRETTY_PARSERS: OpRegistry[str, PrettyParser] = OpRegistry(
    "pretty parser", modules=("hlort.importers.stablehlo.sharding_ops",)
)

# Pretty keyword -> generic attribute name, per op ("*" = any op).
_KEYWORDS: dict[str, dict[str, str]] = {
    "stablehlo.broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.dynamic_broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.transpose": {"dims": "permutation"},
    "stablehlo.reverse": {"dims": "dimensions"},
    "stablehlo.concatenate": {"dim": "dimension"},
    "stablehlo.iota": {"dim": "iota_dimension"},
    "stablehlo.dynamic_iota": {"dim": "iota_dimension"},
    "stablehlo.get_dimension_size": {"dim": "dimension"},
    "stablehlo.dynamic_slice": {"sizes": "slice_sizes"},
    "stablehlo.pad": {
        "low": "edge_padding_low",
        "high": "edge_padding_high",
        "interior": "interior_padding",
    },
    "stablehlo.fft": {"type": "fft_type", "length": "fft_length"},
    "stablehlo.rng_bit_generator": {"algorithm": "rng_algorithm"},
    "stablehlo.dot_general": {"precision": "precision_config"},
    "stablehlo.dot": {"precision": "precision_config"},
}
_ENUM_KEYS = {
    "fft_type": "fft_type",
    "rng_algorithm": "rng_algorithm",
    "comparison_direction": "comparison_direction",
    "compare_type": "comparison_type",
    "transpose_a": "transpose",
}
_RETURNS = ("func.return", "stablehlo.return", "chlo.return")


def pretty_parser(*names: str) -> Callable[[PrettyParser], PrettyParser]:
    """Register the decorated function as the pretty-form parser of the ops ``names``."""
    return PRETTY_PARSERS.register(*names)


def parse_pretty_operation(p: Parser, op: ast.Operation) -> None:
    """Fill ``op`` (name and results already set) from the tokens after the op name."""
    (PRETTY_PARSERS.get(op.name) or parse_default)(p, op)


# -- shared pieces ----------------------------------------------------------------------------


def parse_operands(p: Parser) -> list[str]:
    """``%a, %b`` (stops before a comma that is not followed by a value)."""
    values: list[str] = []
    while p.peek().kind == "value":
        values.append(p.next().text)
        if p.at(",") and p.peek(1).kind == "value":
            p.next()
        else:
            break
    return values


def parse_signature(p: Parser, op: ast.Operation) -> None:
    """After ``:``: a function type, or a type list whose last entries are the result types."""
    if p.at("(") and p._paren_is_function_type():
        ftype = p.parse_type()
        op.operand_types = list(ftype.inputs)
        op.result_types = list(ftype.results)
    else:
        types = p.parse_type_list()
        if p.accept("->"):
            op.operand_types = types
            op.result_types = p.parse_result_types()
        elif op.name in _RETURNS:
            op.operand_types = types
            op.result_types = []
        else:
            n = len(op.results)
            if n == 0:
                op.result_types = []
            elif n == len(types):
                op.result_types = types
            elif n == 1:
                op.result_types = [types[-1]]
            else:
                p.fail(f"{op.name}: cannot tell the types of {n} results from {len(types)} types")
    if len(op.result_types) != len(op.results):
        p.fail(
            f"{op.name} has {len(op.result_types)} result type(s) but {len(op.results)} "
            f"result name(s)"
        )


def finish(p: Parser, op: ast.Operation) -> None:
    """Optional attribute dictionary, then the ``: types`` signature (absent only for ops
    without results, like ``func.return`` or ``check.expect_eq_const``)."""
    if p.at("{"):
        op.attrs.update(p.parse_attr_dict())
    if p.accept(":"):
        parse_signature(p, op)
    elif op.results:
        p.fail(f"expected ':' and the types of {op.name}, got {p.describe()}")


def parse_pretty_value(p: Parser) -> Any:
    """A keyword's value: numbers, bare words, lists, ``[a] x [b]`` pairs, or any attribute."""
    tok = p.peek()
    if p.at("["):
        p.next()
        value: Any = p.items_until("]", lambda: parse_pretty_value(p))
    elif tok.kind in ("int", "hex"):
        p.next()
        value = int(tok.text, 0)
    elif tok.kind == "float":
        p.next()
        value = float(tok.text)
    elif tok.kind == "ident" and tok.text not in ("array", "true", "false", "loc"):
        p.next()
        value = tok.text
    elif p.at("<"):
        value = _parse_angle_fields(p)
    else:
        value = p.parse_attr_value()
    if p.at("x") and p.at("[", 1):
        p.next()
        value = (value, parse_pretty_value(p))
    return value


def _parse_angle_fields(p: Parser) -> dict[str, Any]:
    """``<key = value, ...>`` (the pretty form of dot algorithms)."""
    p.expect("<")

    def field() -> tuple[str, Any]:
        key = p.expect_kind("ident", "a field name").text
        p.expect("=")
        return key, parse_pretty_value(p)

    return dict(p.items_until(">", field))


def store_keyword(op: ast.Operation, key: str, value: Any) -> None:
    """Store a pretty ``key = value`` under its generic attribute name."""
    key = _KEYWORDS.get(op.name, {}).get(key, key)
    if key in ("batching_dims", "contracting_dims") and isinstance(value, tuple):
        kind = key.split("_")[0]
        op.attrs[f"lhs_{kind}_dimensions"] = tuple(value[0])
        op.attrs[f"rhs_{kind}_dimensions"] = tuple(value[1])
        return
    if key == "format" and isinstance(value, str) and value.startswith("e") and "m" in value:
        exponent, mantissa = value[1:].split("m")
        op.attrs["exponent_bits"] = int(exponent)
        op.attrs["mantissa_bits"] = int(mantissa)
        return
    if key == "precision_config" and isinstance(value, list):
        value = [
            v if isinstance(v, ast.EnumAttr) else ast.EnumAttr("stablehlo", "precision", v)
            for v in value
        ]
    elif key in _ENUM_KEYS and isinstance(value, str):
        value = ast.EnumAttr("stablehlo", _ENUM_KEYS[key], value)
    elif isinstance(value, list) and all(isinstance(v, int) for v in value):
        value = tuple(value)
    op.attrs[key] = value


def parse_keywords(p: Parser, op: ast.Operation) -> None:
    """``, key = value`` items (and a ``, dense<...> : t`` constant for check *_const ops)."""
    while True:
        if p.peek().kind == "ident" and p.at("=", 1):
            key = p.next().text
            p.next()
            store_keyword(op, key, parse_pretty_value(p))
        elif p.peek().kind == "dense":
            op.attrs["value"] = p.parse_attr_value()
        else:
            p.fail(f"unexpected {p.describe()} in {op.name}")
        if not p.accept(","):
            return


# -- the default form -------------------------------------------------------------------------


def parse_default(p: Parser, op: ast.Operation) -> None:
    """``name [%operands] [, key = value]* [{attrs}] [: types]``."""
    op.operands = parse_operands(p)
    if p.accept(","):
        parse_keywords(p, op)
    elif p.peek().kind == "ident" and p.at("=", 1):
        parse_keywords(p, op)
    elif p.peek().kind == "dense" and op.name == "stablehlo.constant":
        pass
    finish(p, op)


@pretty_parser("stablehlo.constant")
def parse_constant(p: Parser, op: ast.Operation) -> None:
    if p.at("{"):
        op.attrs.update(p.parse_attr_dict())
    value = p.parse_attr_value()
    if not isinstance(value, ast.DenseAttr):
        p.fail("stablehlo.constant expects a dense<...> literal")
    op.attrs["value"] = value
    op.result_types = [value.type]
    if len(op.results) != 1:
        p.fail("stablehlo.constant has exactly one result")


@pretty_parser("stablehlo.compare")
def parse_compare(p: Parser, op: ast.Operation) -> None:
    direction = p.expect_kind("ident", "a comparison direction (EQ, LT...)").text
    op.attrs["comparison_direction"] = ast.EnumAttr("stablehlo", "comparison_direction", direction)
    p.expect(",")
    op.operands = parse_operands(p)
    if p.accept(","):
        kind = p.expect_kind("ident", "a comparison type (FLOAT, SIGNED...)").text
        op.attrs["compare_type"] = ast.EnumAttr("stablehlo", "comparison_type", kind)
    finish(p, op)


@pretty_parser("stablehlo.slice")
def parse_slice(p: Parser, op: ast.Operation) -> None:
    op.operands = parse_operands(p)
    p.expect("[", "to open the slice ranges")
    starts, limits, strides = [], [], []
    while not p.at("]"):
        starts.append(int(p.expect_kind("int", "a slice start").text))
        p.expect(":")
        limits.append(int(p.expect_kind("int", "a slice limit").text))
        strides.append(int(p.expect_kind("int", "a stride").text) if p.accept(":") else 1)
        if not p.accept(","):
            break
    p.expect("]")
    op.attrs.update(
        start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides)
    )
    finish(p, op)


@pretty_parser("stablehlo.get_tuple_element")
def parse_get_tuple_element(p: Parser, op: ast.Operation) -> None:
    op.operands = parse_operands(p)
    p.expect("[")
    op.attrs["index"] = int(p.expect_kind("int", "a tuple index").text)
    p.expect("]")
    finish(p, op)


@pretty_parser("func.call")
def parse_call(p: Parser, op: ast.Operation) -> None:
    op.attrs["callee"] = ast.SymbolRef(p.symbol_name(p.expect_kind("symbol", "a callee")))
    p.expect("(")
    op.operands = p.parse_value_list(")")
    p.expect(")")
    finish(p, op)


@pretty_parser("stablehlo.custom_call")
def parse_custom_call(p: Parser, op: ast.Operation) -> None:
    op.attrs["call_target_name"] = p.symbol_name(p.expect_kind("symbol", "a call target"))
    p.expect("(")
    op.operands = p.parse_value_list(")")
    p.expect(")")
    finish(p, op)


@pretty_parser("stablehlo.composite")
def parse_composite(p: Parser, op: ast.Operation) -> None:
    op.attrs["name"] = p.expect_kind("string", "the composite's name").text[1:-1]
    op.operands = parse_operands(p)
    finish(p, op)


@pretty_parser("stablehlo.reduce")
def parse_reduce(p: Parser, op: ast.Operation) -> None:
    """``reduce(%x init: %i), ... applies OP across dimensions = [..] : sig`` or the same with
    ``across dimensions = [..] : sig reducer(%a: t, %c: t) (%b: t, %d: t) { body }``."""
    inputs, inits = [], []
    while True:
        p.expect("(")
        inputs.append(p.expect_kind("value", "a reduce input").text)
        p.expect("init")
        p.expect(":")
        inits.append(p.expect_kind("value", "an init value").text)
        p.expect(")")
        if not p.accept(","):
            break
    op.operands = inputs + inits
    body_op = None
    if p.accept("applies"):
        body_op = p.expect_kind("ident", "the reducer op name").text
    p.expect("across")
    p.expect("dimensions")
    p.expect("=")
    op.attrs["dimensions"] = tuple(parse_pretty_value(p))
    finish(p, op)
    if body_op is not None:
        op.regions = [_single_op_region(body_op, op, len(inputs))]
        return
    p.expect("reducer", "(the reduction body)")

    def argument() -> tuple[str, Any]:
        name = p.expect_kind("value", "a reducer argument").text
        p.expect(":")
        arg_type = p.parse_type()
        p.skip_location()  # JAX prints `%arg2: tensor<f32> loc("reduce:"(#loc30))`
        return name, arg_type

    groups = []
    while p.accept("("):
        groups.append(p.items_until(")", argument))
    args = [g[0] for g in groups] + [g[1] for g in groups]
    op.regions = [p.parse_region(entry_args=args)]


def _single_op_region(body_op: str, op: ast.Operation, n: int) -> ast.Region:
    """The region of ``applies stablehlo.add``: (acc, x) -> add(acc, x) on scalars."""
    init_types = op.operand_types[n:] if op.operand_types else op.result_types
    scalar = [ast.TensorType((), t.element) for t in init_types]
    lhs = [(f"%__lhs{i}", t) for i, t in enumerate(scalar)]
    rhs = [(f"%__rhs{i}", t) for i, t in enumerate(scalar)]
    block = ast.Block(lhs + rhs)
    results = []
    for i, t in enumerate(scalar):
        name = f"%__r{i}"
        block.ops.append(
            ast.Operation(
                body_op, [name], [lhs[i][0], rhs[i][0]], {}, [], [t], None, op.line, op.column
            )
        )
        results.append(name)
    block.ops.append(
        ast.Operation("stablehlo.return", [], results, {}, [], [], scalar, op.line, op.column)
    )
    return ast.Region([block])


@pretty_parser("stablehlo.while")
def parse_while(p: Parser, op: ast.Operation) -> None:
    p.expect("(")
    names, inits = [], []
    while not p.at(")"):
        names.append(p.expect_kind("value", "a loop variable").text)
        p.expect("=")
        inits.append(p.expect_kind("value", "an initial value").text)
        if not p.accept(","):
            break
    p.expect(")")
    op.operands = inits
    p.expect(":")
    types = p.parse_type_list()
    op.operand_types = types
    op.result_types = list(types)
    if len(types) != len(op.results) or len(types) != len(inits):
        p.fail(
            f"stablehlo.while: {len(inits)} loop value(s), {len(types)} type(s), "
            f"{len(op.results)} result(s)"
        )
    if p.accept("attributes"):
        op.attrs.update(p.parse_attr_dict())
    args = list(zip(names, types, strict=False))
    p.expect("cond")
    cond = p.parse_region(entry_args=args)
    p.expect("do")
    body = p.parse_region(entry_args=args)
    op.regions = [cond, body]


@pretty_parser("stablehlo.convolution")
def parse_convolution(p: Parser, op: ast.Operation) -> None:
    p.expect("(")
    op.operands = p.parse_value_list(")")
    p.expect(")")
    p.expect("dim_numbers")
    p.expect("=")
    lists = [p.parse_conv_labels()]
    p.expect("x")
    lists.append(p.parse_conv_labels())
    p.expect("->")
    lists.append(p.parse_conv_labels())
    op.attrs["dimension_numbers"] = ast.ConvDimsAttr(*lists)
    if p.accept(","):
        p.expect("window")
        p.expect("=")
        p.expect("{")
        names = {
            "stride": "window_strides",
            "pad": "padding",
            "lhs_dilate": "lhs_dilation",
            "rhs_dilate": "rhs_dilation",
            "reverse": "window_reversal",
        }
        while not p.at("}"):
            key = p.expect_kind("ident", "a window field").text
            p.expect("=")
            value = parse_pretty_value(p)
            if key == "reverse":
                value = tuple(bool(v) if not isinstance(v, str) else v == "true" for v in value)
            elif key != "pad":
                value = tuple(value)
            op.attrs[names.get(key, key)] = value
            if not p.accept(","):
                break
        p.expect("}")
    finish(p, op)


@pretty_parser("chlo.top_k")
def parse_top_k(p: Parser, op: ast.Operation) -> None:
    p.expect("(")
    op.operands = parse_operands(p)
    p.expect(",")
    p.expect("k")
    p.expect("=")
    op.attrs["k"] = int(p.expect_kind("int", "k").text)
    p.expect(")")
    finish(p, op)


@pretty_parser("chlo.scan")
def parse_scan(p: Parser, op: ast.Operation) -> None:
    p.expect("(")
    inputs = p.parse_value_list(")")
    p.expect(")")
    p.expect("inits")
    p.expect("(")
    inits = p.parse_value_list(")")
    p.expect(")")
    op.operands = inputs + inits
    op.attrs["num_inputs"] = len(inputs)
    while p.peek().kind == "ident" and p.at("=", 1):
        key = p.next().text
        p.next()
        op.attrs[key] = parse_pretty_value(p)
        p.accept(",")
    if p.accept("attributes"):
        op.attrs.update(p.parse_attr_dict())
    op.regions = [p.parse_region()]
    finish(p, op)
