"""StableHLO syntax tree -> HLO module: functions, blocks, scopes, checks and error locations.

Each ``func.func`` becomes a computation (the entry one the module's entry; the others are called
with HLO ``call``); each op goes through the converter registered for its name. Regions that use
values of an enclosing scope get constants re-materialized inside; while/if/case thread other
captured values through explicitly. Every error names the op and its source line; anything that
is not an :class:`~hlort.errors.HlortError` is wrapped into INTERNAL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import field

import numpy as np

from hlort.builder import Builder
from hlort.errors import HlortError, Internal, InvalidArgument, NotFound, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo import shape_refinement as refine
from hlort.importers.stablehlo.checks import (
    CALL_TOLERANCE,
    CHECK_OPS,
    CHECK_TARGETS,
    OP_TOLERANCE,
    CheckSpec,
)
from hlort.importers.stablehlo.conversion_context import CONVERTERS, OpContext
from hlort.importers.stablehlo.dynamic_custom_calls import static_form
from hlort.importers.stablehlo.types import narrow_integer, to_shape
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape, Shape, TupleShape

_TERMINATORS = ("func.return", "stablehlo.return", "chlo.return", "sdy.return")
# Ops whose results need no wrapping into a sub-byte range, and ops whose bit-level meaning
# differs between a sub-byte type and the byte type holding it.
_RANGE_PRESERVING = {
    "stablehlo.constant",
    "stablehlo.reshape",
    "stablehlo.transpose",
    "stablehlo.slice",
    "stablehlo.broadcast_in_dim",
    "stablehlo.concatenate",
    "stablehlo.select",
    "stablehlo.maximum",
    "stablehlo.minimum",
    "stablehlo.clamp",
    "func.call",
}
# Ops that handle quantized types themselves (the rest go through dequantize/quantize).
_QUANT_AWARE = {
    "stablehlo.uniform_quantize",
    "stablehlo.uniform_dequantize",
    "stablehlo.bitcast_convert",
    "func.call",
    "stablehlo.composite",
    "func.return",
    "stablehlo.tuple",
    "stablehlo.get_tuple_element",
    "stablehlo.optimization_barrier",
}
_BIT_LEVEL_OPS = {
    "stablehlo.bitcast_convert",
    "stablehlo.popcnt",
    "stablehlo.count_leading_zeros",
    "stablehlo.shift_right_logical",
}


def _quantized(t) -> bool:
    """Whether an MLIR type is (a tensor of) ``!quant.uniform``: only then is quantization.py
    imported (a first compile of a float program never needs it)."""
    element = t.element if isinstance(t, ast.TensorType) else t
    return isinstance(element, ast.QuantType)


_FOLD_LIMIT = 400  # instructions: constant folding of shape operands stays cheap


@dataclass
class ImportResult:
    """The module plus, when checks were collected, what to compare after running it.

    With ``collect_checks`` the entry returns a tuple: its own ``num_results`` results, then one
    element per check operand (``CheckSpec.actual`` / ``expected`` index into that tuple)."""

    module: Module
    entry: str
    num_results: int
    checks: list[CheckSpec] = field(default_factory=list)


class Scope:
    """The values visible while converting one block into the computation of ``builder``."""

    def __init__(
        self,
        conv: ModuleConverter,
        builder: Builder,
        parent: Scope | None = None,
        is_entry: bool = False,
    ):
        self.conv = conv
        self.builder = builder
        self.parent = parent
        self.is_entry = is_entry
        self.values: dict[str, Instruction] = {}
        self.types: dict[str, object] = {}  # MLIR types, where quantization needs them

    def define(self, name: str, instr: Instruction, mlir_type=None) -> None:
        self.values[name] = instr
        if mlir_type is not None:
            self.types[name] = mlir_type

    def type_of(self, name: str):
        if name in self.types:
            return self.types[name]
        return self.parent.type_of(name) if self.parent is not None else None

    def lookup(self, name: str) -> Instruction:
        instr = self.values.get(name)
        if instr is not None:
            return instr
        if self.parent is not None:
            outer = self.parent.lookup(name)
            if outer.opcode is Opcode.CONSTANT:
                instr = self.builder.constant(outer.literal)
                self.values[name] = instr
                return instr
            raise Unimplemented(
                f"a region uses {name}, a non-constant value of the enclosing scope; only "
                f"while/if/case regions may capture values"
            )
        raise InvalidArgument(f"use of undefined value {name}")


class ModuleConverter:
    def __init__(
        self,
        mlir: ast.MlirModule,
        source_name: str,
        collect_checks: bool = False,
        arg_shapes: Sequence[Shape | None] | None = None,
        dim_values: dict[int, np.ndarray] | None = None,
    ):
        self.mlir = mlir
        self.arg_shapes = arg_shapes  # the entry's refined argument shapes (shape_refinement.py)
        self.dim_values = dim_values or {}  # entry arguments bound as constants (dimensions)
        self.source_name = source_name
        self.collect_checks = collect_checks
        self.module = Module(_hlo_name(mlir.name or "module"))
        for key in ("num_replicas", "num_partitions"):  # as JAX writes them (XLA's module config)
            value = mlir.attrs.get(f"mhlo.{key}")
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                self.module.config[key] = value
        self._functions: dict[str, Computation] = {}
        self._in_progress: set[str] = set()
        self.checks: list[CheckSpec] = []
        self.check_outputs: list[Instruction] = []
        self.probes: dict[str, Instruction] = {}  # interpreter.probe values of the entry block

    # -- entry and functions ------------------------------------------------------------------
    def choose_entry(self, wanted: str | None) -> ast.Function:
        funcs = self.mlir.functions
        if wanted is not None:
            if wanted not in funcs:
                raise NotFound(
                    f"{self.source_name}: no function @{wanted}; have "
                    f"{', '.join('@' + f for f in funcs) or 'none'}"
                )
            return funcs[wanted]
        if not funcs:
            raise InvalidArgument(f"{self.source_name}: the module has no functions")
        if "main" in funcs:
            return funcs["main"]
        called = set()
        for func in funcs.values():
            if func.body is not None:
                called.update(_callees(func.body))
        roots = [f for f in funcs.values() if f.name not in called and f.body is not None]
        public = [f for f in roots if f.visibility == "public"]
        return (public or roots or list(funcs.values()))[-1]

    def convert(self, entry_name: str | None = None) -> ImportResult:
        func = self.choose_entry(entry_name)
        if func.body is None:
            raise Unimplemented(f"{self.source_name}: @{func.name} has no body")
        b = Builder(_hlo_name(func.name), self.module)
        scope = Scope(self, b, is_entry=True)
        if self.arg_shapes is not None or self.dim_values:
            shapes = self.arg_shapes or [None] * len(func.args)
            refine.bind_arguments(
                scope,
                func,
                shapes,
                self.dim_values,
                keep_constant_parameters=False,
                hlo_name=_hlo_name,
            )
        else:
            self._bind_arguments(scope, func)
        results = self.convert_body(scope, func.body, f"@{func.name}")
        if self.collect_checks:
            root = b.tuple(list(results) + self.check_outputs)
            for spec in self.checks:
                spec.actual += len(results)
                if spec.expected is not None:
                    spec.expected += len(results)
        else:
            root = results[0] if len(results) == 1 else b.tuple(list(results))
        module = b.build(root)
        if any(map(_has_sharding, (*func.arg_attrs, *func.result_attrs))):
            from hlort.importers.stablehlo.shardings import apply_entry_shardings

            apply_entry_shardings(self.mlir, func, module, len(results))
        return ImportResult(module, func.name, len(results), self.checks)

    def function_computation(self, name: str, line: int = 0, operands=None) -> Computation:
        func = self.mlir.functions.get(name)
        key, shapes, constants = name, None, {}
        if func is not None and operands is not None and refine.needs_specialization(func):
            key, shapes, constants = refine.specialization(func, operands, self.constant_value)
        comp = self._functions.get(key)
        if comp is not None:
            return comp
        if func is None:
            raise NotFound(f"call to undefined function @{name}")
        if func.body is None:
            raise Unimplemented(f"@{name} is only declared (no body)")
        if name in self._in_progress:
            raise InvalidArgument(f"@{name} calls itself; recursion is not supported")
        self._in_progress.add(name)
        sub = Builder(_hlo_name(name), self.module)
        scope = Scope(self, sub)
        if shapes is None:
            self._bind_arguments(scope, func)
        else:
            refine.bind_arguments(
                scope, func, shapes, constants, keep_constant_parameters=True, hlo_name=_hlo_name
            )
        results = self.convert_body(scope, func.body, f"@{name}")
        root = results[0] if len(results) == 1 else sub.tuple(list(results))
        comp = sub.finish(root)
        self._in_progress.discard(name)
        self._functions[key] = comp
        return comp

    def _bind_arguments(self, scope: Scope, func: ast.Function) -> None:
        for arg_name, arg_type in func.args:
            where = f"{self.source_name}:{func.line}: @{func.name} argument {arg_name}: "
            shape = to_shape(arg_type, where)
            scope.define(
                arg_name, scope.builder.parameter(shape, _hlo_name(arg_name[1:])), arg_type
            )

    def convert_body(self, scope: Scope, region: ast.Region, what: str) -> list[Instruction]:
        if len(region.blocks) != 1:
            raise Unimplemented(
                f"{what}: regions with {len(region.blocks)} blocks (branches) are not supported"
            )
        return self.convert_block(scope, region.blocks[0])

    def convert_block(self, scope: Scope, block: ast.Block) -> list[Instruction]:
        for op in block.ops:
            if op.name in _TERMINATORS:
                return [self._located(op, scope.lookup, v) for v in op.operands]
            self.convert_op(scope, op)
        return []

    # -- regions --------------------------------------------------------------------------------
    def region_to_computation(
        self,
        scope: Scope,
        region: ast.Region,
        name: str,
        param_shapes: Sequence[Shape] | None,
        op: ast.Operation,
    ) -> Computation:
        if len(region.blocks) != 1:
            raise Unimplemented(f"regions with {len(region.blocks)} blocks are not supported")
        block = region.blocks[0]
        sub = scope.builder.sub(name)
        inner = Scope(self, sub, parent=scope)
        shapes = (
            list(param_shapes) if param_shapes is not None else [to_shape(t) for _, t in block.args]
        )
        if len(shapes) != len(block.args):
            raise InvalidArgument(
                f"{name} region takes {len(block.args)} argument(s), expected {len(shapes)}"
            )
        for (arg_name, arg_type), shape in zip(block.args, shapes, strict=False):
            inner.define(arg_name, sub.parameter(shape, _hlo_name(arg_name[1:])), arg_type)
        results = self.convert_block(inner, block)
        if not results:
            raise InvalidArgument(f"{name} region returns nothing")
        root = results[0] if len(results) == 1 else sub.tuple(results)
        return sub.finish(root)

    # -- ops ------------------------------------------------------------------------------------
    def convert_op(self, scope: Scope, op: ast.Operation) -> None:
        try:
            self._convert_op(scope, op)
        except HlortError as err:
            raise self._locate(err, op) from None
        except RecursionError:
            raise Unimplemented(f"{self._where(op)}{op.name}: nesting too deep") from None
        except (ValueError, IndexError) as err:  # malformed: an unknown enum, missing operands
            raise InvalidArgument(
                f"{self._where(op)}{op.name}: malformed op ({type(err).__name__}: {err})"
            ) from err
        except Exception as err:  # noqa: BLE001 - an importer bug must still be an HlortError
            raise Internal(
                f"{self._where(op)}{op.name}: importer bug: {type(err).__name__}: {err}"
            ) from err

    def _convert_op(self, scope: Scope, op: ast.Operation) -> None:
        if op.name in CHECK_OPS or (
            op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in CHECK_TARGETS
        ):
            self._convert_check(scope, op)
            return
        if refine.is_shape_assertion(op):
            refine.check_shape_assertion(self, scope, op)
            return
        op = static_form(OpContext(self, scope, op)) or op  # stablehlo.dynamic_top_k...
        fn = CONVERTERS.get(op.name)
        if fn is None:
            raise Unimplemented(f"op {op.name} is not supported by hlort")
        refined = None
        if not all(refine.is_static_type(t) for t in op.result_types):
            op, refined = refine.refine_and_convert(self, scope, op, fn)
        declared = [to_shape(t) for t in op.result_types]
        narrow = [narrow_integer(t) for t in op.result_types]
        if op.name in _BIT_LEVEL_OPS and (
            any(narrow) or any(narrow_integer(t) for t in op.operand_types or ())
        ):
            raise Unimplemented(f"{op.name} on sub-byte integer types")
        if refined is not None:
            results = refined
        elif op.name not in _QUANT_AWARE and (
            any(_quantized(t) for t in op.result_types)
            or any(_quantized(scope.type_of(n)) for n in op.operands)
        ):
            results = self._convert_quantized(scope, op, fn)
        else:
            results = list(fn(OpContext(self, scope, op)))
        for i, bits in enumerate(narrow):
            if bits and i < len(results) and op.name not in _RANGE_PRESERVING:
                results[i] = wrap_narrow(scope.builder, results[i], bits)
        if len(results) != len(op.results):
            raise InvalidArgument(
                f"{op.name} produces {len(results)} value(s), but "
                f"{len(op.results)} result(s) are declared"
            )
        rows = zip(op.results, results, declared, op.result_types, strict=True)
        for name, instr, shape, t in rows:
            if not _same_shape(instr.shape, shape):
                raise InvalidArgument(
                    f"{op.name} produces {instr.shape}, but its declared type is {t}"
                )
            scope.define(name, instr, t)
        if _has_sharding(op.attrs):
            from hlort.importers.stablehlo.shardings import apply_op_sharding

            apply_op_sharding(self.mlir, op, results)

    def _convert_quantized(self, scope: Scope, op: ast.Operation, fn) -> list[Instruction]:
        """StableHLO's meaning of an op on quantized tensors: dequantize the operands, run the
        float op, quantize the results to their declared types."""
        from hlort.importers.stablehlo.quantization import (
            dequantize,
            expressed_type,
            quant_of,
            quantize,
        )

        if op.regions:
            raise Unimplemented(f"{op.name} with a region on quantized types")
        b = scope.builder
        operands = []
        for name in op.operands:
            q = quant_of(scope.type_of(name))
            if q is None:
                operands.append(name)
                continue
            temp = f"{name}@dequantized"
            if temp not in scope.values:
                scope.define(temp, dequantize(b, scope.lookup(name), q))
            operands.append(temp)
        float_types = [expressed_type(t, q) if (q := quant_of(t)) else t for t in op.result_types]
        float_op = dataclasses.replace(
            op, operands=operands, result_types=float_types, operand_types=None
        )
        results = list(fn(OpContext(self, scope, float_op)))
        return [
            quantize(b, r, q) if (q := quant_of(t)) else r
            for r, t in zip(results, op.result_types, strict=True)
        ]

    def _convert_check(self, scope: Scope, op: ast.Operation) -> None:
        b = scope.builder
        is_call = op.name == "stablehlo.custom_call"
        kind = CHECK_TARGETS[op.attrs["call_target_name"]] if is_call else CHECK_OPS[op.name]
        # check.eq has an i1 result ("passed"): define it so later uses resolve
        for name, t in zip(op.results, op.result_types, strict=False):
            shape = to_shape(t)
            scope.define(name, b.constant(np.ones(getattr(shape, "dims", ()), np.bool_)))
        if not (self.collect_checks and scope.is_entry):
            return
        if not op.operands:
            raise InvalidArgument(f"{op.name} needs an operand")
        actual = scope.lookup(op.operands[0])
        spec = CheckSpec(
            kind,
            len(self.check_outputs),
            line=op.line,
            op=op.attrs.get("call_target_name", op.name),
        )
        self.check_outputs.append(actual)
        if op.name == "check.expect_serialized_eq":
            probe_id = op.attrs.get("probe_id")
            if probe_id not in self.probes or int(op.attrs.get("iter", 0)) != 0:
                raise Unimplemented(f"{op.name}: probes inside loops or other functions")
            spec.expected = len(self.check_outputs)
            self.check_outputs.append(self.probes[probe_id])
        elif len(op.operands) > 1:
            spec.expected = len(self.check_outputs)
            self.check_outputs.append(scope.lookup(op.operands[1]))
        elif isinstance(op.attrs.get("value"), ast.DenseAttr):
            dense = op.attrs["value"]
            if dense.value is None:
                to_shape(dense.type)  # raises UNIMPLEMENTED naming the type
                raise Unimplemented(f"{op.name}: constant of type {dense.type}")
            spec.expected_value = dense.value
        else:
            raise InvalidArgument(f"{op.name} needs an expected value")
        loose = is_call and spec.op != "check.eq"  # JAX's custom calls: 1e-3; check.eq: 1e-4
        spec.tolerance = float(op.attrs.get("tolerance", CALL_TOLERANCE if loose else OP_TOLERANCE))
        spec.min_ulp = int(op.attrs.get("min_ulp_difference", spec.min_ulp))
        spec.max_ulp = int(op.attrs.get("max_ulp_difference", spec.max_ulp))
        self.checks.append(spec)

    # -- constant folding for shape operands ------------------------------------------------------
    def constant_value(self, instr: Instruction) -> np.ndarray | None:
        """The value of ``instr`` when it depends on no parameter (evaluated now), else None."""
        if instr.opcode is Opcode.CONSTANT:
            return instr.literal
        order: list[Instruction] = []
        seen: set[Instruction] = set()
        stack = [(instr, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            if node.opcode is Opcode.PARAMETER or node.has_side_effect or len(seen) > _FOLD_LIMIT:
                return None
            stack.append((node, True))
            stack.extend((o, False) for o in node.operands)
        from hlort.interpreter.evaluator import Evaluator

        comp = Computation("fold")
        mapping: dict[Instruction, Instruction] = {}
        for node in order:
            clone = node.clone_with(operands=[mapping[o] for o in node.operands])
            clone.parent = comp
            comp.instructions.append(clone)
            mapping[node] = clone
        comp.root = mapping[instr]
        try:
            value = Evaluator(check_shapes=False).call(comp, [])
        except HlortError:
            return None
        return value if isinstance(value, np.ndarray) else None

    # -- errors ---------------------------------------------------------------------------------
    def _where(self, op: ast.Operation) -> str:
        return f"{self.source_name}:{op.line}:{op.column}: "

    def _locate(self, err: HlortError, op: ast.Operation) -> HlortError:
        if not getattr(err, "located", False):
            err.message = f"{self._where(op)}{err.message}"
            err.args = (err.message,)
            err.located = True  # type: ignore[attr-defined]
        return err

    def _located(self, op: ast.Operation, fn, *args):
        try:
            return fn(*args)
        except HlortError as err:
            raise self._locate(err, op) from None


def wrap_narrow(b: Builder, x: Instruction, bits: int) -> Instruction:
    """Bring a byte-held sub-byte integer back into its ``bits``-wide range (two's complement
    wrap-around, as the narrow type's arithmetic would give)."""
    if not isinstance(x.shape, ArrayShape):
        return x
    dt = x.shape.dtype
    dims = x.shape.dims

    def const(value) -> Instruction:
        c = b.constant(np.array(value).astype(dt.numpy))
        return b.broadcast(c, dims, []) if dims else c

    if dt.is_signed_integer:
        shift = const(dt.bits - bits)
        up = b.op(Opcode.SHIFT_LEFT, (x, shift))
        return b.op(Opcode.SHIFT_RIGHT_ARITHMETIC, (up, shift))
    return b.and_(x, const((1 << bits) - 1))


def _same_shape(a: Shape, b: Shape) -> bool:
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.elements) == len(b.elements) and all(
            _same_shape(x, y) for x, y in zip(a.elements, b.elements, strict=False)
        )
    if isinstance(a, ArrayShape) or isinstance(b, ArrayShape):
        return a == b
    return type(a) is type(b)


def _callees(region: ast.Region) -> set[str]:
    out: set[str] = set()
    for block in region.blocks:
        for op in block.ops:
            for value in op.attrs.values():
                if isinstance(value, ast.SymbolRef):
                    out.add(value.name)
                elif isinstance(value, list):
                    out.update(v.name for v in value if isinstance(v, ast.SymbolRef))
            for inner in op.regions:
                out.update(_callees(inner))
    return out


def free_values(regions: Sequence[ast.Region]) -> list[str]:
    """Values used in ``regions`` but defined outside them, in order of first use."""
    out: dict[str, None] = {}

    def visit(region: ast.Region, defined: set[str]) -> None:
        for block in region.blocks:
            local = set(defined) | {name for name, _ in block.args}
            for op in block.ops:
                for name in op.operands:
                    if name not in local:
                        out.setdefault(name, None)
                for inner in op.regions:
                    visit(inner, local)
                local.update(op.results)

    for region in regions:
        visit(region, set())
    return list(out)


def _hlo_name(name: str) -> str:
    """An HLO-friendly identifier: letters, digits, ``_``, ``.``, ``-``."""
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "v" + cleaned
    return cleaned


def _has_sharding(attrs) -> bool:
    """Whether ``attrs`` (an op's, an argument's or a result's) carry a sharding: only then is
    the sharding importer (and its parser) loaded, which most single-device programs never need."""
    return bool(attrs) and ("mhlo.sharding" in attrs or "sdy.sharding" in attrs)
