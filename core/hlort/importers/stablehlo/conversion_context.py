"""What an op converter sees: the op, its operands as HLO instructions, typed attribute access.

Converters are registered per op name with :func:`converter` and return one HLO instruction per
op result. They build with ``cx.b`` (a :class:`~hlort.Builder`), so every shape is inferred and
checked as it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.errors import InvalidArgument, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.hlo_math import E
from hlort.importers.stablehlo.types import require_dtype, to_shape
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.op_registry import OpRegistry
from hlort.shape import ArrayShape, Shape

if TYPE_CHECKING:
    from hlort.importers.stablehlo.convert_module import ModuleConverter, Scope

Converter = Callable[["OpContext"], Sequence[Instruction]]
CONVERTERS: OpRegistry[str, Converter] = OpRegistry(
    "converter",
    # the ops of most programs (elementwise, data movement, reductions, dots)...
    modules=(
        "hlort.importers.stablehlo.chlo_elementary",
        "hlort.importers.stablehlo.convert_data_movement",
        "hlort.importers.stablehlo.convert_elementwise",
        "hlort.importers.stablehlo.convert_linalg",
        "hlort.importers.stablehlo.convert_reduction",
    ),
    # ...and the rest, imported on the first op none of those converts
    later_modules=(
        "hlort.importers.stablehlo.chlo_special",
        "hlort.importers.stablehlo.chlo_structured",
        "hlort.importers.stablehlo.convert_batch_norm",
        "hlort.importers.stablehlo.convert_collectives",
        "hlort.importers.stablehlo.convert_control_flow",
        "hlort.importers.stablehlo.convert_dynamic",
        "hlort.importers.stablehlo.parallel_host_ops",
        "hlort.importers.stablehlo.sharding_ops",
        "hlort.importers.stablehlo.spmd",
    ),
)
MAX_INT_LIST = 1 << 16  # integer-list attributes (dimensions, sizes) are about as long as a rank


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the ops ``names``."""
    return CONVERTERS.register(*names)


def chlo_unary(name: str):
    """Register ``fn(x: E) -> E`` (an ``hlo_math`` expression of the operand) as the converter
    of ``chlo.<name>``."""

    def register(fn):
        converter(f"chlo.{name}")(lambda cx: [fn(E(cx.b, cx.operand(0))).i])
        return fn

    return register


class OpContext:
    """One op being converted inside one scope (a computation under construction)."""

    def __init__(self, conv: ModuleConverter, scope: Scope, op: ast.Operation):
        self.conv = conv
        self.scope = scope
        self.op = op
        self.b: Builder = scope.builder
        self._operands: list[Instruction] | None = None

    # -- operands and results -------------------------------------------------------------------
    @property
    def operands(self) -> list[Instruction]:
        if self._operands is None:
            self._operands = [self.scope.lookup(name) for name in self.op.operands]
        return self._operands

    def operand(self, i: int) -> Instruction:
        if i >= len(self.operands):
            raise self.invalid(f"needs at least {i + 1} operand(s), got {len(self.operands)}")
        return self.operands[i]

    def result_shape(self, i: int = 0) -> Shape:
        if i >= len(self.op.result_types):
            raise self.invalid(f"has no result {i}")
        return to_shape(self.op.result_types[i])

    def result_array(self, i: int = 0) -> ArrayShape:
        shape = self.result_shape(i)
        if not isinstance(shape, ArrayShape):
            raise self.invalid(f"result {i} must be a tensor, got {self.op.result_types[i]}")
        return shape

    def result_dtype(self, i: int = 0) -> DType:
        t = self.op.result_types[i]
        return require_dtype(t.element if isinstance(t, ast.TensorType) else t)

    # -- attributes -----------------------------------------------------------------------------
    def attr(self, name: str, default: Any = ...) -> Any:
        if name in self.op.attrs:
            return self.op.attrs[name]
        if default is ...:
            raise self.invalid(f"is missing attribute {name!r}")
        return default

    def ints(self, name: str, default: Any = ...) -> tuple[int, ...]:
        """An integer list attribute (``array<i64: ...>``, ``[1, 2]``, ``dense<...>``)."""
        value = self.attr(name, default)
        return as_ints(value, lambda msg: self.invalid(f"attribute {name}: {msg}"))

    def int(self, name: str, default: Any = ...) -> int:
        value = self.attr(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            dense = isinstance(value, ast.DenseAttr) and value.value is not None
            if dense and value.value.size == 1:
                return int(value.value.reshape(()))
            raise self.invalid(f"attribute {name} must be an integer, got {value!r}")
        return int(value)

    def bool(self, name: str, default: bool = False) -> bool:
        value = self.attr(name, default)
        if isinstance(value, ast.DenseAttr) and value.value is not None:
            return bool(value.value.reshape(-1)[0])
        return bool(value)

    def enum(self, name: str, default: Any = ...) -> str | None:
        value = self.attr(name, default)
        if isinstance(value, ast.EnumAttr):
            return value.value
        if value is None or isinstance(value, str):
            return value
        raise self.invalid(f"attribute {name} must be an enum like #stablehlo<...>, got {value!r}")

    def pairs(self, name: str, rank: int) -> list[tuple[int, int]]:
        """``padding``: a dense Nx2 literal or a list of pairs; zeros when absent."""
        value = self.attr(name, None)
        if value is None:
            return [(0, 0)] * rank
        flat = as_ints(value, lambda msg: self.invalid(f"attribute {name}: {msg}"))
        if len(flat) != 2 * rank:
            raise self.invalid(f"attribute {name} needs {rank} (low, high) pairs, got {value!r}")
        return [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]

    def precision(self) -> list[str] | None:
        value = self.attr("precision_config", None)
        if not value:
            return None
        out = []
        for v in value:
            out.append(v.value if isinstance(v, ast.EnumAttr) else str(v))
        return out

    # -- computations ---------------------------------------------------------------------------
    def region_computation(
        self, index: int, name: str, param_shapes: Sequence[Shape] | None = None
    ) -> Computation:
        """Region ``index`` as a computation taking its block arguments as parameters
        (scalar tensors become scalar parameters) and returning one value or a tuple."""
        return self.conv.region_to_computation(
            self.scope, self.op.regions[index], f"{name}", param_shapes, self.op
        )

    # -- helpers --------------------------------------------------------------------------------
    def constant_value(self, instr: Instruction) -> np.ndarray | None:
        return self.conv.constant_value(instr)

    def require_constant(self, i: int, what: str) -> np.ndarray:
        value = self.constant_value(self.operand(i))
        if value is None:
            raise self.unsupported(
                f"{what} (operand {i}) is not a compile-time constant; hlort has static shapes only"
            )
        return value

    def broadcast_to(self, x: Instruction, shape: ArrayShape) -> Instruction:
        """``x`` (a scalar or already ``shape``'s dims) as an array of ``shape``'s dims."""
        if x.shape.dims == shape.dims:
            return x
        if x.shape.rank == 0:
            return self.b.broadcast(x, shape.dims, [])
        raise self.invalid(f"cannot broadcast {x.shape} to {shape}")

    def invalid(self, message: str) -> InvalidArgument:
        return InvalidArgument(f"{self.op.name} {message}")

    def unsupported(self, message: str) -> Unimplemented:
        return Unimplemented(f"{self.op.name}: {message}")


def as_ints(value: Any, fail: Callable[[str], Exception]) -> tuple[int, ...]:
    if isinstance(value, ast.DenseAttr):
        if value.value is None:
            raise fail("literal of an unsupported type")
        if value.value.size > MAX_INT_LIST:
            raise fail(f"{value.value.size:,} integers where a short list is expected")
        return tuple(int(v) for v in value.value.reshape(-1))
    if isinstance(value, (list, tuple)):
        out: list[int] = []
        for v in value:
            if isinstance(v, (list, tuple)):
                out.extend(as_ints(v, fail))
            elif isinstance(v, (bool, np.bool_)):
                out.append(int(v))
            elif isinstance(v, (int, np.integer)):
                out.append(int(v))
            else:
                raise fail(f"expected integers, got {v!r}")
        return tuple(out)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    raise fail(f"expected a list of integers, got {value!r}")
