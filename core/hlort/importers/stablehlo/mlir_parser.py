"""A generic MLIR parser: modules, functions, regions, ops in generic form, and types.

Attribute values are parsed by :mod:`.mlir_attributes` (a mixin of the parser); ops in StableHLO's
pretty (custom assembly) forms by :mod:`.pretty_ops`, which uses the
helpers here. The result is the syntax tree of :mod:`.mlir_ast`; nothing here knows HLO.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from hlort import limits
from hlort.errors import ParseError
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.mlir_attributes import AttributeParser
from hlort.importers.stablehlo.mlir_lexer import EOF, SourceMap, Token, tokenize

_ALIASES = {"return": "func.return", "call": "func.call"}
Item = TypeVar("Item")


class Parser(AttributeParser):
    """Recursive descent over the token list; ``i`` is the index of the next token."""

    def __init__(self, text: str, source_name: str = "<text>"):
        self.source = SourceMap(text, source_name)
        self.toks = tokenize(text, self.source)
        self.i = 0

    # -- token helpers ------------------------------------------------------------------------
    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != EOF:
            self.i += 1
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.text == text and tok.kind in ("punct", "ident")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            self.fail(f"expected '{text}'{' ' + what if what else ''}, got {self.describe()}")
        return self.next()

    def items_until(self, close: str, parse_item: Callable[[], Item], what: str = "") -> list[Item]:
        """``item, item, ...`` up to and including ``close`` (the opening bracket is already
        consumed; a trailing comma is accepted, as MLIR's printers never write one anyway)."""
        items: list[Item] = []
        while not self.at(close):
            items.append(parse_item())
            if not self.accept(","):
                break
        self.expect(close, what)
        return items

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.peek().kind != kind:
            self.fail(f"expected {what}, got {self.describe()}")
        return self.next()

    def describe(self, tok: Token | None = None) -> str:
        tok = tok or self.peek()
        return "end of input" if tok.kind == EOF else repr(tok.text[:40])

    def fail(self, message: str, tok: Token | None = None) -> NoReturn:
        raise self.source.error(message, (tok or self.peek()).pos)

    def error(self, message: str, pos: int) -> ParseError:
        return self.source.error(message, pos)

    def line_col(self, tok: Token) -> tuple[int, int]:
        return self.source.line_col(tok.pos)

    # -- top level ----------------------------------------------------------------------------
    def parse_module(self) -> ast.MlirModule:
        """A whole file (or one ``// -----`` chunk): one ``module`` or bare functions."""
        self.skip_alias_definitions()
        if self.at("module") or self.at("builtin.module"):
            module = self.parse_module_op()
            self.skip_alias_definitions()
        else:
            module = ast.MlirModule(None, {}, {}, 1)
            self.parse_module_body(module, until_brace=False)
        if self.peek().kind != EOF:
            self.fail(f"unexpected {self.describe()} after the module")
        return module

    def skip_alias_definitions(self) -> None:
        """``#loc1 = loc(...)`` and ``#map = ...`` lines: attribute aliases hlort ignores."""
        while self.peek().kind in ("hash", "bang") and self.at("=", 1):
            self.i += 2
            self.parse_attr_value()

    def parse_module_op(self) -> ast.MlirModule:
        tok = self.next()
        name = None
        if self.peek().kind == "symbol":
            name = self.symbol_name(self.next())
        attrs: dict[str, Any] = {}
        if self.accept("attributes"):
            attrs = self.parse_attr_dict()
        module = ast.MlirModule(name, attrs, {}, self.line_col(tok)[0])
        self.expect("{", "to open the module body")
        self.parse_module_body(module, until_brace=True)
        self.expect("}", "to close the module")
        self.skip_location()
        return module

    def parse_module_body(self, module: ast.MlirModule, until_brace: bool) -> None:
        while True:
            tok = self.peek()
            if tok.kind == EOF or (until_brace and self.at("}")):
                return
            if self.at("func.func"):
                func = self.parse_function()
                if func.name in module.functions:
                    self.fail(f"function @{func.name} is defined twice", tok)
                module.functions[func.name] = func
            elif tok.kind in ("hash", "bang") and self.at("=", 1):
                self.skip_alias_definitions()
            elif self.at("module"):
                inner = self.parse_module_op()
                for name, func in inner.functions.items():
                    module.functions.setdefault(name, func)
            elif tok.kind == "ident" and tok.text == "sdy.mesh":  # kept for the partitioner
                module.attrs.setdefault("sdy.meshes", []).append(self.skip_statement())
            elif tok.kind == "ident" and not tok.text.startswith(("stablehlo.", "chlo.", "func.")):
                self.skip_statement()  # other module-level ops carry nothing hlort runs
            else:
                self.parse_operation()

    def skip_statement(self) -> str:
        """Skip one module-level op of another dialect: to the end of its line, brackets and
        strings balanced (they may span lines); returns its text."""
        line = self.line_col(self.peek())[0]
        start = self.peek().pos
        end = start
        depth = 0
        while self.peek().kind != EOF:
            tok = self.peek()
            if depth == 0 and self.line_col(tok)[0] != line:
                break
            end = tok.pos + len(tok.text)
            if tok.kind == "punct" and tok.text in "([{<":
                depth += 1
            elif tok.kind == "punct" and tok.text in ")]}>" and depth:
                depth -= 1
            self.next()
        return self.source.text[start:end]

    def parse_function(self) -> ast.Function:
        tok = self.expect("func.func")
        visibility = "public"
        if self.peek().kind == "ident" and self.peek().text in ("public", "private", "nested"):
            visibility = self.next().text
        name = self.symbol_name(self.expect_kind("symbol", "a function name like @main"))
        self.expect("(", "to open the argument list")
        args: list[tuple[str, Any]] = []
        arg_attrs: list[dict[str, Any]] = []
        if not self.at(")"):
            while True:
                arg = self.expect_kind("value", "an argument like %arg0")
                self.expect(":")
                arg_type = self.parse_type()
                arg_attrs.append(self.parse_attr_dict() if self.at("{") else {})
                self.skip_location()
                args.append((arg.text, arg_type))
                if not self.accept(","):
                    break
        self.expect(")")
        results: list[Any] = []
        result_attrs: list[dict[str, Any]] = []
        if self.accept("->"):
            if self.at("("):
                self.next()
                pairs = self.items_until(")", self._result_type_with_attrs)
                results = [t for t, _ in pairs]
                result_attrs = [a for _, a in pairs]
            else:
                results.append(self.parse_type())
        attrs: dict[str, Any] = {}
        if self.accept("attributes"):
            attrs = self.parse_attr_dict()
        body = None
        if self.at("{"):
            body = self.parse_region(entry_args=args)
        self.skip_location()
        line = self.line_col(tok)[0]
        return ast.Function(
            name, visibility, args, results, body, line, attrs, arg_attrs, result_attrs
        )

    def _result_type_with_attrs(self) -> tuple[Any, dict[str, Any]]:
        """A function result's type and its attribute dictionary (``{mhlo.sharding = ...}``)."""
        result_type = self.parse_type()
        return result_type, self.parse_attr_dict() if self.at("{") else {}

    # -- regions and blocks -------------------------------------------------------------------
    def parse_region(self, entry_args: list[tuple[str, Any]] | None = None) -> ast.Region:
        self.expect("{", "to open a region")
        region = ast.Region()
        block = ast.Block(list(entry_args or []))
        started = False
        while not self.at("}"):
            if self.peek().kind == EOF:
                self.fail("unterminated region: expected '}'")
            if self.peek().kind == "label":
                if started or block.ops:
                    region.blocks.append(block)
                block = ast.Block(self.parse_block_header())
                started = True
                continue
            block.ops.append(self.parse_operation())
            started = True
        self.next()
        if started or entry_args:
            region.blocks.append(block)
        return region

    def parse_block_header(self) -> list[tuple[str, Any]]:
        self.next()
        args: list[tuple[str, Any]] = []
        if self.accept("("):
            args = self.items_until(")", self._block_argument)
        self.expect(":", "after the block header")
        return args

    def _block_argument(self) -> tuple[str, Any]:
        arg = self.expect_kind("value", "a block argument")
        self.expect(":")
        arg_type = self.parse_type()
        self.skip_location()
        return arg.text, arg_type

    # -- operations ---------------------------------------------------------------------------
    def parse_operation(self) -> ast.Operation:
        start = self.peek()
        results: list[tuple[str, int]] = []
        if start.kind == "value":
            while True:
                name = self.expect_kind("value", "a result name").text
                count = 1
                if self.accept(":"):
                    count = self._result_count(sum(c for _, c in results))
                results.append((name, count))
                if not self.accept(","):
                    break
            self.expect("=", "after the result names")
        tok = self.peek()
        line, col = self.line_col(tok)
        names = expand_results(results)
        if tok.kind == "string":
            op = self.parse_generic_operation(names, line, col)
        elif tok.kind == "ident":
            from hlort.importers.stablehlo.pretty_ops import parse_pretty_operation

            self.next()
            name = _ALIASES.get(tok.text, tok.text)
            op = ast.Operation(name, names, [], {}, [], [], None, line, col)
            parse_pretty_operation(self, op)
        else:
            self.fail(f"expected an operation, got {self.describe()}")
        self.skip_location()
        return op

    def _result_count(self, declared: int) -> int:
        """The ``N`` of ``%0:N``, checked before any result name is made."""
        tok = self.expect_kind("int", "a result count")
        count = int(tok.text)
        limit = limits.max_results()
        if count < 1 or declared + count > limit:
            self.fail(
                f"result count {tok.text} is not between 1 and {limit} (the limit on one "
                "op's results; raise HLORT_MAX_RESULTS if a program really needs more)",
                tok,
            )
        return count

    def parse_generic_operation(self, results: list[str], line: int, col: int) -> ast.Operation:
        name = self.next().text[1:-1]
        name = _ALIASES.get(name, name)
        self.expect("(", "to open the operand list")
        operands = self.parse_value_list(")")
        self.expect(")")
        attrs: dict[str, Any] = {}
        if self.at("[") and self.peek(1).kind == "label":
            self.fail("ops with successor blocks are not supported")
        if self.at("<") and self.at("{", 1):
            self.next()
            attrs.update(self.parse_attr_dict())
            self.expect(">", "to close the properties")
        regions: list[ast.Region] = []
        if self.at("(") and self.at("{", 1):
            self.next()
            while True:
                regions.append(self.parse_region())
                if not self.accept(","):
                    break
            self.expect(")", "to close the region list")
        if self.at("{"):
            attrs.update(self.parse_attr_dict())
        self.expect(":", "before the op's function type")
        ftype = self.parse_type()
        if not isinstance(ftype, ast.FunctionType):
            self.fail(f"expected a function type like (tensor<f32>) -> tensor<f32>, got {ftype}")
        op = ast.Operation(
            name,
            results,
            operands,
            attrs,
            regions,
            list(ftype.results),
            list(ftype.inputs),
            line,
            col,
        )
        check_result_count(self, op)
        return op

    def parse_value_list(self, end: str) -> list[str]:
        values: list[str] = []
        if self.at(end):
            return values
        while True:
            values.append(self.expect_kind("value", "an operand like %0").text)
            if not self.accept(","):
                return values

    def skip_location(self) -> None:
        if self.at("loc") and self.at("(", 1):
            self.next()
            self.skip_balanced("(", ")")

    def skip_balanced(self, open_: str, close: str) -> None:
        self.expect(open_)
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == EOF:
                self.fail(f"unbalanced '{open_}'")
            if tok.kind == "punct":
                if tok.text == open_:
                    depth += 1
                elif tok.text == close:
                    depth -= 1

    @staticmethod
    def symbol_name(tok: Token) -> str:
        text = tok.text[1:]
        return text[1:-1] if text.startswith('"') else text

    # -- types --------------------------------------------------------------------------------
    def parse_type(self) -> Any:
        tok = self.peek()
        if tok.kind == "tensor":
            self.next()
            dims = tuple(-1 if d == "?" else int(d) for d in tok.extra.split("x")[:-1])
            element = self.parse_type()
            encoding = None
            if self.accept(","):
                encoding = self.parse_attr_value()
            self.expect(">", "to close the tensor type")
            if not isinstance(element, (ast.ScalarType, ast.QuantType, ast.OpaqueType)):
                self.fail(f"bad tensor element type {element}", tok)
            return ast.TensorType(dims, element, encoding)
        if tok.kind == "ident":
            self.next()
            if tok.text in ("complex", "tuple") and self.at("<"):
                self.next()
                inner = [self.parse_type()]
                while self.accept(","):
                    inner.append(self.parse_type())
                self.expect(">")
                if tok.text == "tuple":
                    return ast.TupleType(tuple(inner))
                return ast.ScalarType(f"complex<{inner[0]}>")
            if tok.text == "tuple" and not self.at("<"):
                return ast.TupleType(())
            if tok.text in ("vector", "memref") and self.at("<"):
                start = self.peek().pos
                self.skip_balanced("<", ">")
                return ast.OpaqueType(tok.text + self.source.text[start : self.peek().pos])
            return ast.ScalarType(tok.text)
        if tok.kind == "bang":
            self.next()
            if tok.text == "!stablehlo.token":
                return ast.TokenType()
            text = tok.text
            if self.at("<"):
                start = self.peek().pos
                self.skip_balanced("<", ">")
                text += self.source.text[start : self.toks[self.i - 1].pos + 1]
            if tok.text == "!quant.uniform":
                return ast.QuantType(text)
            return ast.OpaqueType(text)
        if self.at("("):
            self.next()
            inputs = self.items_until(")", self.parse_type)
            if self.accept("->"):
                return ast.FunctionType(tuple(inputs), tuple(self.parse_result_types()))
            if len(inputs) == 1:
                return inputs[0]
            return ast.TupleType(tuple(inputs))
        self.fail(f"expected a type, got {self.describe()}")

    def parse_result_types(self) -> list[Any]:
        if self.at("(") and not self._paren_is_function_type():
            self.next()
            return self.items_until(")", self.parse_type)
        return [self.parse_type()]

    def _paren_is_function_type(self) -> bool:
        depth = 0
        k = 0
        while True:
            tok = self.peek(k)
            if tok.kind == EOF:
                return False
            if tok.text == "(" and tok.kind == "punct":
                depth += 1
            elif tok.text == ")" and tok.kind == "punct":
                depth -= 1
                if depth == 0:
                    return self.peek(k + 1).text == "->"
            k += 1

    def parse_type_list(self) -> list[Any]:
        types = [self.parse_type()]
        while self.accept(","):
            types.append(self.parse_type())
        return types


def expand_results(results: list[tuple[str, int]]) -> list[str]:
    names: list[str] = []
    for name, count in results:
        if count == 1:
            names.append(name)
        else:
            names.extend(f"{name}#{i}" for i in range(count))
    return names


def check_result_count(p: Parser, op: ast.Operation) -> None:
    if len(op.results) != len(op.result_types):
        raise ParseError(
            f"{op.name} has {len(op.result_types)} result type(s) but "
            f"{len(op.results)} result name(s)",
            op.line,
            op.column,
            p.source.source_name,
        )


def parse_mlir(text: str, source_name: str = "<text>") -> ast.MlirModule:
    """Parse MLIR text (one module or bare functions) into the syntax tree."""
    parser = Parser(text, source_name)
    try:
        return parser.parse_module()
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
        raise parser.error(
            f"malformed input near here ({type(err).__name__}: {err})", parser.peek().pos
        ) from err
