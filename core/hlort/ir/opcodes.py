"""The op table: every opcode hlort knows, with the properties passes and backends ask about.

Ops are data. Adding an op means one row here, one shape rule (``hlort.ir.shape_rules``) and one
interpreter function (``hlort.interpreter``); the text parser, printer, verifier and builder pick it
up from this table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Opcode(enum.Enum):
    """Value = the op's name in XLA HLO text."""

    # leaves
    PARAMETER = "parameter"
    CONSTANT = "constant"
    IOTA = "iota"
    # unary elementwise
    ABS = "abs"
    NEGATE = "negate"
    EXP = "exponential"
    EXPM1 = "exponential-minus-one"
    LOG = "log"
    LOG1P = "log-plus-one"
    LOGISTIC = "logistic"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    CBRT = "cbrt"
    TANH = "tanh"
    SINE = "sine"
    COSINE = "cosine"
    TAN = "tan"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND_NEAREST_AFZ = "round-nearest-afz"
    ROUND_NEAREST_EVEN = "round-nearest-even"
    SIGN = "sign"
    NOT = "not"
    POPCNT = "popcnt"
    CLZ = "count-leading-zeros"
    IS_FINITE = "is-finite"
    REAL = "real"
    IMAG = "imag"
    ERF = "erf"
    CONVERT = "convert"
    BITCAST_CONVERT = "bitcast-convert"
    REDUCE_PRECISION = "reduce-precision"
    COPY = "copy"
    # binary elementwise
    ADD = "add"
    SUBTRACT = "subtract"
    MULTIPLY = "multiply"
    DIVIDE = "divide"
    REMAINDER = "remainder"
    POWER = "power"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    ATAN2 = "atan2"
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHIFT_LEFT = "shift-left"
    SHIFT_RIGHT_LOGICAL = "shift-right-logical"
    SHIFT_RIGHT_ARITHMETIC = "shift-right-arithmetic"
    COMPARE = "compare"
    COMPLEX = "complex"
    # ternary elementwise
    SELECT = "select"
    CLAMP = "clamp"
    # data movement
    BROADCAST = "broadcast"
    RESHAPE = "reshape"
    BITCAST = "bitcast"
    TRANSPOSE = "transpose"
    SLICE = "slice"
    DYNAMIC_SLICE = "dynamic-slice"
    DYNAMIC_UPDATE_SLICE = "dynamic-update-slice"
    CONCATENATE = "concatenate"
    PAD = "pad"
    REVERSE = "reverse"
    GATHER = "gather"
    SCATTER = "scatter"
    # reductions and windows
    REDUCE = "reduce"
    REDUCE_WINDOW = "reduce-window"
    SELECT_AND_SCATTER = "select-and-scatter"
    MAP = "map"
    SORT = "sort"
    TOPK = "topk"
    # linear algebra and transforms
    DOT = "dot"
    CONVOLUTION = "convolution"
    CHOLESKY = "cholesky"
    TRIANGULAR_SOLVE = "triangular-solve"
    FFT = "fft"
    # control flow and structure
    WHILE = "while"
    CONDITIONAL = "conditional"
    CALL = "call"
    TUPLE = "tuple"
    GET_TUPLE_ELEMENT = "get-tuple-element"
    OPTIMIZATION_BARRIER = "opt-barrier"
    AFTER_ALL = "after-all"
    CUSTOM_CALL = "custom-call"
    FUSION = "fusion"
    # random numbers and device identity
    RNG_BIT_GENERATOR = "rng-bit-generator"
    REPLICA_ID = "replica-id"
    PARTITION_ID = "partition-id"

    def __repr__(self) -> str:
        return f"Opcode.{self.name}"

    @property
    def info(self) -> OpInfo:
        return OP_INFO[self]

    @property
    def hlo_name(self) -> str:
        return self.value


@dataclass(frozen=True)
class OpInfo:
    """Static properties of an opcode.

    ``arity`` is the exact operand count, or None when variadic.
    ``elementwise``: output element i depends only on operand elements i (fusable as a loop body).
    ``side_effect``: never removed by DCE nor merged by CSE.
    ``commutative``: operands may be swapped (CSE canonicalizes).
    ``transcendental``: counted as such by cost analysis.
    ``called``: the attribute names that hold called computations.
    """

    arity: int | None
    elementwise: bool = False
    side_effect: bool = False
    commutative: bool = False
    transcendental: bool = False
    called: tuple[str, ...] = ()


_U = OpInfo(1, elementwise=True)
_UT = OpInfo(1, elementwise=True, transcendental=True)
_B = OpInfo(2, elementwise=True)
_BC = OpInfo(2, elementwise=True, commutative=True)

OP_INFO: dict[Opcode, OpInfo] = {
    Opcode.PARAMETER: OpInfo(0),
    Opcode.CONSTANT: OpInfo(0),
    Opcode.IOTA: OpInfo(0),
    Opcode.ABS: _U,
    Opcode.NEGATE: _U,
    Opcode.EXP: _UT,
    Opcode.EXPM1: _UT,
    Opcode.LOG: _UT,
    Opcode.LOG1P: _UT,
    Opcode.LOGISTIC: _UT,
    Opcode.SQRT: _UT,
    Opcode.RSQRT: _UT,
    Opcode.CBRT: _UT,
    Opcode.TANH: _UT,
    Opcode.SINE: _UT,
    Opcode.COSINE: _UT,
    Opcode.TAN: _UT,
    Opcode.FLOOR: _U,
    Opcode.CEIL: _U,
    Opcode.ROUND_NEAREST_AFZ: _U,
    Opcode.ROUND_NEAREST_EVEN: _U,
    Opcode.SIGN: _U,
    Opcode.NOT: _U,
    Opcode.POPCNT: _U,
    Opcode.CLZ: _U,
    Opcode.IS_FINITE: _U,
    Opcode.REAL: _U,
    Opcode.IMAG: _U,
    Opcode.ERF: _UT,
    Opcode.CONVERT: _U,
    Opcode.BITCAST_CONVERT: OpInfo(1),  # elementwise only when bit widths match
    Opcode.REDUCE_PRECISION: _U,
    Opcode.COPY: _U,
    Opcode.ADD: _BC,
    Opcode.SUBTRACT: _B,
    Opcode.MULTIPLY: _BC,
    Opcode.DIVIDE: _B,
    Opcode.REMAINDER: _B,
    Opcode.POWER: OpInfo(2, elementwise=True, transcendental=True),
    Opcode.MAXIMUM: _BC,
    Opcode.MINIMUM: _BC,
    Opcode.ATAN2: OpInfo(2, elementwise=True, transcendental=True),
    Opcode.AND: _BC,
    Opcode.OR: _BC,
    Opcode.XOR: _BC,
    Opcode.SHIFT_LEFT: _B,
    Opcode.SHIFT_RIGHT_LOGICAL: _B,
    Opcode.SHIFT_RIGHT_ARITHMETIC: _B,
    Opcode.COMPARE: _B,
    Opcode.COMPLEX: _B,
    Opcode.SELECT: OpInfo(3, elementwise=True),
    Opcode.CLAMP: OpInfo(3, elementwise=True),
    Opcode.BROADCAST: OpInfo(1),
    Opcode.RESHAPE: OpInfo(1),
    Opcode.BITCAST: OpInfo(1),
    Opcode.TRANSPOSE: OpInfo(1),
    Opcode.SLICE: OpInfo(1),
    Opcode.DYNAMIC_SLICE: OpInfo(None),
    Opcode.DYNAMIC_UPDATE_SLICE: OpInfo(None),
    Opcode.CONCATENATE: OpInfo(None),
    Opcode.PAD: OpInfo(2),
    Opcode.REVERSE: OpInfo(1),
    Opcode.GATHER: OpInfo(2),
    Opcode.SCATTER: OpInfo(None, called=("to_apply",)),
    Opcode.REDUCE: OpInfo(None, called=("to_apply",)),
    Opcode.REDUCE_WINDOW: OpInfo(None, called=("to_apply",)),
    Opcode.SELECT_AND_SCATTER: OpInfo(3, called=("select", "scatter")),
    Opcode.MAP: OpInfo(None, elementwise=True, called=("to_apply",)),
    Opcode.SORT: OpInfo(None, called=("to_apply",)),
    Opcode.TOPK: OpInfo(1),
    Opcode.DOT: OpInfo(2),
    Opcode.CONVOLUTION: OpInfo(2),
    Opcode.CHOLESKY: OpInfo(1),
    Opcode.TRIANGULAR_SOLVE: OpInfo(2),
    Opcode.FFT: OpInfo(1),
    Opcode.WHILE: OpInfo(1, called=("condition", "body")),
    Opcode.CONDITIONAL: OpInfo(None, called=("branch_computations",)),
    Opcode.CALL: OpInfo(None, called=("to_apply",)),
    Opcode.TUPLE: OpInfo(None),
    Opcode.GET_TUPLE_ELEMENT: OpInfo(1),
    Opcode.OPTIMIZATION_BARRIER: OpInfo(1, side_effect=True),
    Opcode.AFTER_ALL: OpInfo(None),
    Opcode.CUSTOM_CALL: OpInfo(None, called=("called_computations",)),
    Opcode.FUSION: OpInfo(None, called=("calls",)),
    Opcode.RNG_BIT_GENERATOR: OpInfo(1),
    Opcode.REPLICA_ID: OpInfo(0),
    Opcode.PARTITION_ID: OpInfo(0),
}

_BY_HLO_NAME = {op.value: op for op in Opcode}
# Spellings XLA accepted in older text, mapped to today's opcode.
_BY_HLO_NAME.update({"opt-barrier": Opcode.OPTIMIZATION_BARRIER, "top-k": Opcode.TOPK})


def from_hlo_name(name: str) -> Opcode | None:
    """The opcode spelled ``name`` in HLO text, or None."""
    return _BY_HLO_NAME.get(name)


assert set(OP_INFO) == set(Opcode), "every opcode needs an OpInfo row"
