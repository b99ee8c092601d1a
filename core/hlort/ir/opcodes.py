"""The op table: every opcode hlort knows, one :class:`~hlort.ir.op_def.OpDef` row each.

Ops are data. Adding an op means one row here, one shape rule (``hlort.ir.shape_rules``) and one
interpreter function (``hlort.interpreter``); the text parser and printer, the verifier's
attribute checks, the conformance suite's comparison kinds, the fusion passes, tpusim's op
classes and docs/ops.md's table are derived from this table (docs/adding-an-op.md).
"""

from __future__ import annotations

import enum

from hlort.ir import attributes as A
from hlort.ir.op_def import (
    ALL,
    BITS,
    FLOAT,
    FLOAT_COMPLEX,
    INT,
    NUMBER,
    OPTIONAL,
    REAL,
    SIGNED_COMPLEX,
    AttrDef,
    FusionRole,
    Numerics,
    OpDef,
    Shown,
)


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
    SET_DIMENSION_SIZE = "set-dimension-size"
    GET_DIMENSION_SIZE = "get-dimension-size"
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
    # collectives (docs/collectives.md; groups: hlort.ir.collective_groups)
    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    COLLECTIVE_PERMUTE = "collective-permute"
    COLLECTIVE_BROADCAST = "collective-broadcast"
    ALL_REDUCE_START = "all-reduce-start"
    ALL_REDUCE_DONE = "all-reduce-done"
    ALL_GATHER_START = "all-gather-start"
    ALL_GATHER_DONE = "all-gather-done"
    COLLECTIVE_PERMUTE_START = "collective-permute-start"
    COLLECTIVE_PERMUTE_DONE = "collective-permute-done"

    def __repr__(self) -> str:
        return f"Opcode.{self.name}"

    # Identity hash (members are singletons; equality is identity): Enum's own hashes the
    # name in Python, and the passes hash opcodes in sets and dicts ~70,000 times a compile
    # of the AdamW step (about 10 ms of its CPU time).
    __hash__ = object.__hash__

    @property
    def info(self) -> OpDef:
        return OP_DEFS[self]

    @property
    def hlo_name(self) -> str:
        return self.value


_EW, _IX, _SEL = FusionRole.ELEMENTWISE, FusionRole.INDEX_MAP, FusionRole.INDEX_SELECT
_EXACT, _BITS, _ARITH = Numerics.EXACT, Numerics.BITS, Numerics.ARITH
_TRANS, _ACC = Numerics.TRANSCENDENTAL, Numerics.ACCUMULATE
_SET, _NOT_DEFAULT = Shown.IF_SET, Shown.IF_NOT_DEFAULT


def _unary(types, numerics=_EXACT, stablehlo=True, **kw) -> OpDef:
    return OpDef(
        1, elementwise=True, types=types, numerics=numerics, fusion=_EW, stablehlo=stablehlo, **kw
    )


def _transcendental(types, arity=1, stablehlo=True) -> OpDef:
    return OpDef(
        arity,
        elementwise=True,
        types=types,
        numerics=_TRANS,
        fusion=_EW,
        expensive=True,
        stablehlo=stablehlo,
    )


def _binary(types, numerics=_EXACT, stablehlo=True, **kw) -> OpDef:
    return OpDef(
        2, elementwise=True, types=types, numerics=numerics, fusion=_EW, stablehlo=stablehlo, **kw
    )


def _bits(arity, **kw) -> OpDef:
    return OpDef(arity, numerics=_BITS, **kw)


_S = AttrDef
_DIMENSIONS = _S("dimensions", "dims")
_TO_APPLY = _S("to_apply", "comp")
_WINDOW = _S("window", "window", (), shown=_SET)
_PRECISION = _S("operand_precision", "precision", OPTIONAL)
_DOT = "dot_dimension_numbers."
# Collectives, in XLA's print order: channel_id, replica_groups, then the op's own.
_CHANNEL = _S("channel_id", "int", OPTIONAL, shown=_SET)
_GROUPS = _S("replica_groups", "replica_groups", ())
_GLOBAL_IDS = _S("use_global_device_ids", "bool", False, shown=_SET)
_PAIRS = _S("source_target_pairs", "pairs", ())


def _collective(*attrs: AttrDef, arity=None, numerics=_BITS, called=()) -> OpDef:
    """Collectives communicate between the copies of a program: a side effect (never removed
    nor merged: every copy must reach it, in the same order)."""
    return OpDef(arity, side_effect=True, numerics=numerics, called=called, attrs=attrs)


_ALL_REDUCE = _collective(
    _CHANNEL, _GROUPS, _GLOBAL_IDS, _TO_APPLY, numerics=_ACC, called=("to_apply",)
)
_ALL_GATHER = _collective(_CHANNEL, _GROUPS, _DIMENSIONS, _GLOBAL_IDS)
_PERMUTE = _collective(_CHANNEL, _PAIRS, arity=1)
_GATHER = "gather_dimension_numbers."
_SCATTER = "scatter_dimension_numbers."

OP_DEFS: dict[Opcode, OpDef] = {
    Opcode.PARAMETER: OpDef(0),
    Opcode.CONSTANT: _bits(0, fusion=_IX),
    Opcode.IOTA: _bits(0, fusion=_IX, attrs=(_S("iota_dimension", "int"),)),
    Opcode.ABS: _unary(SIGNED_COMPLEX),  # XLA rejects unsigned abs
    Opcode.NEGATE: _unary(NUMBER),
    Opcode.EXP: _transcendental(FLOAT_COMPLEX),
    Opcode.EXPM1: _transcendental(FLOAT_COMPLEX),
    Opcode.LOG: _transcendental(FLOAT_COMPLEX),
    Opcode.LOG1P: _transcendental(FLOAT_COMPLEX),
    Opcode.LOGISTIC: _transcendental(FLOAT_COMPLEX),
    Opcode.SQRT: _transcendental(FLOAT_COMPLEX),
    Opcode.RSQRT: _transcendental(FLOAT_COMPLEX),
    Opcode.CBRT: _transcendental(FLOAT_COMPLEX),
    Opcode.TANH: _transcendental(FLOAT_COMPLEX),
    Opcode.SINE: _transcendental(FLOAT_COMPLEX),
    Opcode.COSINE: _transcendental(FLOAT_COMPLEX),
    Opcode.TAN: _transcendental(FLOAT_COMPLEX),
    Opcode.FLOOR: _unary(FLOAT),
    Opcode.CEIL: _unary(FLOAT),
    Opcode.ROUND_NEAREST_AFZ: _unary(FLOAT),
    Opcode.ROUND_NEAREST_EVEN: _unary(FLOAT),
    Opcode.SIGN: _unary(SIGNED_COMPLEX),  # XLA rejects unsigned sign
    Opcode.NOT: _unary(BITS),
    Opcode.POPCNT: _unary(INT),
    Opcode.CLZ: _unary(INT),
    Opcode.IS_FINITE: _unary(FLOAT),
    Opcode.REAL: _unary(FLOAT_COMPLEX),
    Opcode.IMAG: _unary(FLOAT_COMPLEX),
    Opcode.ERF: _transcendental(FLOAT, stablehlo=False),  # chlo.erf
    Opcode.CONVERT: _unary(None, stablehlo=False),
    # elementwise only when bit widths match (Instruction.is_elementwise)
    Opcode.BITCAST_CONVERT: _bits(1, fusion=_EW),
    Opcode.REDUCE_PRECISION: _unary(
        None, stablehlo=False, attrs=(_S("exponent_bits", "int"), _S("mantissa_bits", "int"))
    ),
    Opcode.COPY: _unary(None, _BITS, stablehlo=False),
    Opcode.ADD: _binary(ALL, _ARITH, commutative=True),  # pred: logical or (XLA, StableHLO)
    Opcode.SUBTRACT: _binary(NUMBER, _ARITH),
    Opcode.MULTIPLY: _binary(ALL, _ARITH, commutative=True),  # pred: logical and
    Opcode.DIVIDE: _binary(NUMBER, _ARITH, expensive=True),
    Opcode.REMAINDER: _binary(REAL, _ARITH, expensive=True),
    Opcode.POWER: _transcendental(NUMBER, 2),
    Opcode.MAXIMUM: _binary(BITS | FLOAT, commutative=True),  # complex has no order in XLA
    Opcode.MINIMUM: _binary(BITS | FLOAT, commutative=True),
    Opcode.ATAN2: _transcendental(FLOAT_COMPLEX, 2),
    Opcode.AND: _binary(BITS, commutative=True),
    Opcode.OR: _binary(BITS, commutative=True),
    Opcode.XOR: _binary(BITS, commutative=True),
    Opcode.SHIFT_LEFT: _binary(INT),
    Opcode.SHIFT_RIGHT_LOGICAL: _binary(INT),
    Opcode.SHIFT_RIGHT_ARITHMETIC: _binary(INT),
    Opcode.COMPARE: _binary(
        None,
        stablehlo=False,
        attrs=(
            _S("direction", "direction"),
            _S("comparison_type", "comparison_type", OPTIONAL, "type"),
        ),
    ),
    Opcode.COMPLEX: _binary(None),
    Opcode.SELECT: OpDef(3, elementwise=True, numerics=_BITS, fusion=_EW),
    Opcode.CLAMP: OpDef(3, elementwise=True, fusion=_EW),
    Opcode.BROADCAST: _bits(1, fusion=_IX, reuses_operand=True, attrs=(_DIMENSIONS,)),
    Opcode.RESHAPE: _bits(1, fusion=_IX),
    Opcode.BITCAST: _bits(1),
    Opcode.TRANSPOSE: _bits(1, fusion=_IX, attrs=(_DIMENSIONS,)),
    Opcode.SLICE: _bits(1, fusion=_IX, attrs=(_S("slice", "slice"),)),
    Opcode.DYNAMIC_SLICE: _bits(
        None, fusion=_SEL, reuses_operand=True, attrs=(_S("dynamic_slice_sizes", "dims"),)
    ),
    Opcode.DYNAMIC_UPDATE_SLICE: _bits(None),
    Opcode.SET_DIMENSION_SIZE: _bits(2, attrs=(_DIMENSIONS,)),
    Opcode.GET_DIMENSION_SIZE: _bits(1, attrs=(_DIMENSIONS,)),
    Opcode.CONCATENATE: _bits(None, fusion=_SEL, attrs=(_DIMENSIONS,)),
    Opcode.PAD: _bits(2, fusion=_SEL, reuses_operand=True, attrs=(_S("padding", "padding"),)),
    Opcode.REVERSE: _bits(1, fusion=_IX, attrs=(_DIMENSIONS,)),
    Opcode.GATHER: _bits(
        2,
        reuses_operand=True,
        attrs=(
            _S(_GATHER + "offset_dims", "dims"),
            _S(_GATHER + "collapsed_slice_dims", "dims"),
            _S(_GATHER + "start_index_map", "dims"),
            _S(_GATHER + "operand_batching_dims", "dims", (), shown=_SET),
            _S(_GATHER + "start_indices_batching_dims", "dims", (), shown=_SET),
            _S(_GATHER + "index_vector_dim", "int"),
            _S("slice_sizes", "dims"),
            _S("indices_are_sorted", "bool", False, shown=_SET),
        ),
    ),
    Opcode.SCATTER: OpDef(
        None,
        called=("to_apply",),
        numerics=_ACC,
        attrs=(
            _S(_SCATTER + "update_window_dims", "dims"),
            _S(_SCATTER + "inserted_window_dims", "dims"),
            _S(_SCATTER + "scatter_dims_to_operand_dims", "dims"),
            _S(_SCATTER + "input_batching_dims", "dims", (), shown=_SET),
            _S(_SCATTER + "scatter_indices_batching_dims", "dims", (), shown=_SET),
            _S(_SCATTER + "index_vector_dim", "int"),
            _S("indices_are_sorted", "bool", False, shown=_SET),
            _S("unique_indices", "bool", False, shown=_SET),
            _TO_APPLY,
        ),
    ),
    Opcode.REDUCE: OpDef(
        None,
        called=("to_apply",),
        numerics=_ACC,
        fusion=FusionRole.REDUCE_HERO,
        attrs=(_DIMENSIONS, _TO_APPLY),
    ),
    Opcode.REDUCE_WINDOW: OpDef(
        None,
        called=("to_apply",),
        numerics=_ACC,
        fusion=FusionRole.REDUCE_HERO,
        reuses_operand=True,
        attrs=(_WINDOW, _TO_APPLY),
    ),
    Opcode.SELECT_AND_SCATTER: OpDef(
        3,
        called=("select", "scatter"),
        numerics=_ACC,
        attrs=(_WINDOW, _S("select", "comp"), _S("scatter", "comp")),
    ),
    Opcode.MAP: OpDef(
        None, elementwise=True, called=("to_apply",), expensive=True, attrs=(_DIMENSIONS, _TO_APPLY)
    ),
    Opcode.SORT: _bits(
        None,
        called=("to_apply",),
        attrs=(_DIMENSIONS, _S("is_stable", "bool", False, shown=_SET), _TO_APPLY),
    ),
    Opcode.TOPK: _bits(1, attrs=(_S("k", "int"), _S("largest", "bool", True))),
    Opcode.DOT: OpDef(
        2,
        numerics=_ACC,
        fusion=FusionRole.OUTPUT_HERO,
        attrs=(
            _S(_DOT + "lhs_batch_dims", "dims", (), shown=_SET),
            _S(_DOT + "lhs_contracting_dims", "dims", ()),
            _S(_DOT + "rhs_batch_dims", "dims", (), shown=_SET),
            _S(_DOT + "rhs_contracting_dims", "dims", ()),
            _PRECISION,
        ),
    ),
    Opcode.CONVOLUTION: OpDef(
        2,
        numerics=_ACC,
        fusion=FusionRole.OUTPUT_HERO,
        attrs=(
            _WINDOW,
            _S("dim_labels", "dim_labels"),
            _S("feature_group_count", "int", 1, shown=_NOT_DEFAULT),
            _S("batch_group_count", "int", 1, shown=_NOT_DEFAULT),
            _PRECISION,
        ),
    ),
    Opcode.CHOLESKY: OpDef(1, numerics=_ACC, attrs=(_S("lower", "bool", False, shown=_SET),)),
    Opcode.TRIANGULAR_SOLVE: OpDef(
        2,
        numerics=_ACC,
        attrs=(
            _S("left_side", "bool", False, shown=_SET),
            _S("lower", "bool", False, shown=_SET),
            _S("unit_diagonal", "bool", False, shown=_SET),
            _S("transpose_a", "transpose", A.Transpose.NO_TRANSPOSE),
        ),
    ),
    Opcode.FFT: OpDef(
        1, numerics=_ACC, attrs=(_S("fft_type", "fft_type"), _S("fft_length", "dims"))
    ),
    Opcode.WHILE: OpDef(
        1,
        called=("condition", "body"),
        numerics=_ACC,
        attrs=(_S("condition", "comp"), _S("body", "comp")),
    ),
    Opcode.CONDITIONAL: _bits(
        None, called=("branch_computations",), attrs=(_S("branch_computations", "comps"),)
    ),
    Opcode.CALL: _bits(None, called=("to_apply",), attrs=(_TO_APPLY,)),
    Opcode.TUPLE: _bits(None),
    Opcode.GET_TUPLE_ELEMENT: _bits(1, attrs=(_S("index", "int"),)),
    Opcode.OPTIMIZATION_BARRIER: _bits(1, side_effect=True),
    Opcode.AFTER_ALL: _bits(None),
    Opcode.CUSTOM_CALL: _bits(
        None,
        called=("called_computations",),
        attrs=(
            _S("custom_call_target", "string"),
            _S("has_side_effect", "bool", False, "custom_call_has_side_effect", _SET, fill=False),
            _S(
                "api_version", "api_version", "API_VERSION_ORIGINAL", shown=_NOT_DEFAULT, fill=False
            ),
            _S("called_computations", "comps", (), shown=_SET, fill=False),
            _S("backend_config", "backend_config", "", shown=_SET, fill=False),
        ),
    ),
    Opcode.FUSION: OpDef(
        None, called=("calls",), attrs=(_S("kind", "fusion_kind"), _S("calls", "comp_or_comps"))
    ),
    Opcode.RNG_BIT_GENERATOR: _bits(
        1, attrs=(_S("algorithm", "rng_algorithm", A.RngAlgorithm.DEFAULT),)
    ),
    Opcode.REPLICA_ID: _bits(0),
    Opcode.PARTITION_ID: _bits(0),
    Opcode.ALL_REDUCE: _ALL_REDUCE,
    Opcode.ALL_GATHER: _ALL_GATHER,
    Opcode.REDUCE_SCATTER: _collective(
        _CHANNEL, _GROUPS, _GLOBAL_IDS, _DIMENSIONS, _TO_APPLY, numerics=_ACC, called=("to_apply",)
    ),
    Opcode.ALL_TO_ALL: _collective(_CHANNEL, _GROUPS, _S("dimensions", "dims", (), shown=_SET)),
    Opcode.COLLECTIVE_PERMUTE: _PERMUTE,
    Opcode.COLLECTIVE_BROADCAST: _collective(_CHANNEL, _GROUPS, arity=1),
    Opcode.ALL_REDUCE_START: _ALL_REDUCE,
    Opcode.ALL_REDUCE_DONE: _collective(arity=1),
    Opcode.ALL_GATHER_START: _ALL_GATHER,
    Opcode.ALL_GATHER_DONE: _collective(arity=1),
    Opcode.COLLECTIVE_PERMUTE_START: _PERMUTE,
    Opcode.COLLECTIVE_PERMUTE_DONE: _collective(arity=1),
}

_BY_HLO_NAME = {op.value: op for op in Opcode}
# Spellings XLA accepted in older text, mapped to today's opcode.
_BY_HLO_NAME.update({"opt-barrier": Opcode.OPTIMIZATION_BARRIER, "top-k": Opcode.TOPK})


def from_hlo_name(name: str) -> Opcode | None:
    """The opcode spelled ``name`` in HLO text, or None."""
    return _BY_HLO_NAME.get(name)


assert set(OP_DEFS) == set(Opcode), "every opcode needs an OpDef row"
