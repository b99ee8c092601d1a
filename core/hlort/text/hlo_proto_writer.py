"""hlort IR -> XLA's ``HloModuleProto`` (binary), the form XLA and jaxlib read programs in.

jaxlib asks a PJRT plugin for an executable's optimized program as
``xla.HloModuleProtoWithConfig`` (``PJRT_Executable_OptimizedProgram``, format
``"hlo_with_config"``) to print it (``compiled.as_text()``), to list its HLO modules and, for
sharded programs, to read the parameter and output shardings (``spmd_parameters_shardings``,
``spmd_output_sharding``). Field numbers are those of ``xla/service/hlo.proto``,
``xla/xla.proto`` and ``xla/xla_data.proto``; the encoding is hand-written
(:mod:`hlort.text.protobuf_wire`), so the core needs no protobuf.

What is written: every computation reachable from the entry (callees first), each instruction
with its id, opcode (XLA's text name, which is hlort's), shape with layout, operand and called
computation ids and the fields of its opcode (one writer per opcode below; an opcode without
one, or an attribute a writer does not consume, is UNIMPLEMENTED naming it: never a proto that
silently means something else). Of the attributes hlort keeps as uninterpreted text
(``extra_attrs``), ``sharding``, ``metadata``, ``frontend_attributes``, ``backend_config``,
``control-predecessors``, ``parameter_replication``, custom calls' ``operand_layout_constraints``
and ``output_to_operand_aliasing`` are translated; the others (``statistics``, ``origin``...)
mean nothing to hlort or XLA's execution and are left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir import attributes as A
from hlort.ir.computation import callees_first
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.shape import TupleShape
from hlort.text import hlo_proto_values as V
from hlort.text.hlo_proto_extras import extra_attribute_fields, header_fields
from hlort.text.protobuf_wire import Message

if TYPE_CHECKING:
    from hlort.ir.computation import Computation
    from hlort.ir.instruction import Instruction
    from hlort.ir.module import Module


def hlo_module_proto_bytes(
    module: Module,
    *,
    parameter_shardings: Sequence[HloSharding] | None = None,
    output_sharding: HloSharding | None = None,
    module_id: int = 0,
) -> bytes:
    """``xla.HloModuleProto`` of ``module``, serialized.

    ``parameter_shardings`` (one per entry parameter) and ``output_sharding`` (a tuple sharding
    for a tuple result) fill ``spmd_parameters_shardings`` / ``spmd_output_sharding``, which
    jaxlib reads as an SPMD executable's input and output shardings; left None, they come from
    the module header's ``spmd_parameters_shardings`` / ``spmd_output_sharding`` (what hlort's
    SPMD partitioner records), else are not written.
    """
    return module_message(module, parameter_shardings, output_sharding, module_id).to_bytes()


def hlo_module_proto_with_config_bytes(
    module: Module,
    *,
    parameter_shardings: Sequence[HloSharding] | None = None,
    output_sharding: HloSharding | None = None,
    num_replicas: int | None = None,
    num_partitions: int | None = None,
    module_id: int = 0,
) -> bytes:
    """``xla.HloModuleProtoWithConfig``: the module and an ``HloModuleConfigProto`` (entry
    layout, replica and partition counts; counts default to the module's config). This is the
    ``"hlo_with_config"`` program format jaxlib's PJRT C API client parses."""
    proto = module_message(module, parameter_shardings, output_sharding, module_id)
    replicas = int(num_replicas or module.config.get("num_replicas", 1) or 1)
    partitions = int(num_partitions or module.config.get("num_partitions", 1) or 1)
    entry = module.entry
    config = Message()
    config.message(1, _program_shape(entry), keep=True)
    config.int(4, replicas).int(5, partitions).int(7, partitions > 1)
    return Message().message(1, proto, keep=True).message(2, config, keep=True).to_bytes()


def op_sharding_bytes(sharding: HloSharding) -> bytes:
    """``xla.OpSharding`` bytes of one sharding (devices are partition numbers), for bridges
    that answer PJRT's sharding queries with the same encoding the module proto uses."""
    return V.sharding_message(sharding).to_bytes()


def module_message(
    module: Module,
    parameter_shardings: Sequence[HloSharding] | None = None,
    output_sharding: HloSharding | None = None,
    module_id: int = 0,
) -> Message:
    entry = module.entry
    if entry is None or entry.root is None:
        raise Unimplemented(f"module {module.name} has no entry computation to write")
    comps = callees_first([entry])
    ids = _Ids(comps)
    m = Message().string(1, module.name).string(2, entry.name)
    for comp in comps:
        m.message(3, _computation_message(comp, ids), keep=True)
    params = entry.parameters
    m.message(4, _program_shape(entry), keep=True)
    m.int(5, module_id).int(6, ids.computation[entry])
    if module.attributes.get("is_scheduled") == "true":
        m.message(7, _schedule(comps, ids), keep=True)
    header_fields(m, module)
    if any(_is_dynamic(i.shape) for c in comps for i in c.instructions):
        m.int(11, True)
    header_params, header_output = _header_shardings(module)
    if output_sharding is None:
        output_sharding = header_output
    if output_sharding is not None:
        m.message(12, V.sharding_message(output_sharding), keep=True)
    if parameter_shardings is None:
        parameter_shardings = header_params
    if parameter_shardings is not None:
        if len(parameter_shardings) != len(params):
            raise InvalidArgument(
                f"{len(parameter_shardings)} parameter shardings for the {len(params)} "
                f"parameters of {entry.name}: give one per parameter"
            )
        m.messages(14, [V.sharding_message(s) for s in parameter_shardings])
    return m


class _Ids:
    """Computation ids and module-unique instruction ids, both from 1."""

    def __init__(self, comps: list[Computation]):
        self.computation = {c: n for n, c in enumerate(comps, 1)}
        self.instruction: dict[Instruction, int] = {}
        self.orders: dict[Computation, list[Instruction]] = {}
        self._shapes: dict[int, tuple[object, bytes]] = {}
        next_id = 1
        for comp in comps:
            order = comp.post_order()
            self.orders[comp] = order
            for instr in order:
                self.instruction[instr] = next_id
                next_id += 1

    def shape(self, shape) -> bytes:
        """The ShapeProto bytes of ``shape``, once per shape object (they repeat a lot)."""
        hit = self._shapes.get(id(shape))
        if hit is None or hit[0] is not shape:
            hit = self._shapes[id(shape)] = (shape, V.shape_message(shape).to_bytes())
        return hit[1]

    def of_computation(self, comp: Computation, user: Instruction) -> int:
        number = self.computation.get(comp)
        if number is None:
            raise Unimplemented(f"{user.name} calls {comp.name}, which is not in the module")
        return number


def _schedule(comps: list[Computation], ids: _Ids) -> Message:
    """``HloScheduleProto``: a scheduled module runs each non-fusion computation in its
    instruction order (hlort's post order), so that order is the schedule."""
    out = Message()
    for comp in comps:
        if comp.is_fusion_computation:
            continue
        sequence = Message().ints(1, [ids.instruction[i] for i in ids.orders[comp]])
        entry = Message().int(1, ids.computation[comp], keep=True).message(2, sequence, True)
        out.message(1, entry, keep=True)
    return out


def _computation_message(comp: Computation, ids: _Ids) -> Message:
    m = Message().string(1, comp.name)
    order = ids.orders[comp]
    by_name = {i.name: i for i in order}
    for instr in order:
        m.message(2, _instruction_message(instr, ids, by_name), keep=True)
    m.message(4, _program_shape(comp), keep=True)
    m.int(5, ids.computation[comp]).int(6, ids.instruction[comp.root], keep=True)
    m.int(7, comp.is_fusion_computation)
    return m


def _program_shape(comp: Computation) -> Message:
    params = comp.parameters
    return V.program_shape_message(
        [p.shape for p in params], comp.root.shape, [p.name for p in params]
    )


def _is_dynamic(shape) -> bool:
    if isinstance(shape, TupleShape):
        return any(_is_dynamic(e) for e in shape.elements)
    return getattr(shape, "dynamic", None) is not None


# The header attributes hlort's SPMD partitioner records (hlort.passes.spmd_partitioner).
PARAMETERS_KEY, OUTPUT_KEY = "spmd_parameters_shardings", "spmd_output_sharding"


def _header_shardings(module: Module):
    from hlort.text.sharding_syntax import parse_sharding

    raw = module.attributes.get(PARAMETERS_KEY)
    params = None
    if raw is not None:
        s = parse_sharding(raw, PARAMETERS_KEY)
        params = list(s.elements) if s.is_tuple else [s]
    raw = module.attributes.get(OUTPUT_KEY)
    output = parse_sharding(raw, OUTPUT_KEY) if raw is not None else None
    return params, output


def spmd_shardings(module: Module) -> tuple[list[HloSharding] | None, HloSharding | None]:
    """The shardings of a partitioned module's entry parameters and result (its global
    layouts), as the partitioner recorded them; what it left unrecorded is replicated. A
    module with one partition has none: ``(None, None)``."""
    if int(module.config.get("num_partitions", 1) or 1) <= 1:
        return None, None
    params, output = _header_shardings(module)
    count = len(module.entry.parameters)
    if params is None:
        params = [HloSharding.replicate()] * count
    if output is None:
        root = module.entry.root.shape
        if isinstance(root, TupleShape):
            output = HloSharding.tuple_of([HloSharding.replicate()] * len(root.elements))
        else:
            output = HloSharding.replicate()
    return params, output


# -- instructions ----------------------------------------------------------------------------
class _Attrs:
    """``instr.attrs`` with a record of what the opcode's writer read: anything left over has
    no proto field hlort knows, which must fail rather than vanish."""

    def __init__(self, instr: Instruction):
        self.instr = instr
        self.values = instr.attrs
        self.used: set[str] = set(instr.opcode.info.called)

    def get(self, key: str, default=None):
        self.used.add(key)
        return self.values.get(key, default)

    def check_all_used(self) -> None:
        left = sorted(k for k, v in self.values.items() if k not in self.used and v is not None)
        if left:
            raise Unimplemented(
                f"{self.instr.name} ({self.instr.opcode.value}): attribute(s) {left} have no "
                "HloInstructionProto field in hlort's writer (hlort.text.hlo_proto_writer)"
            )


FieldWriter = Callable[[Message, _Attrs], None]
_WRITERS: dict[Opcode, FieldWriter] = {}


def _writes(*opcodes: Opcode):
    def register(fn: FieldWriter) -> FieldWriter:
        for op in opcodes:
            _WRITERS[op] = fn
        return fn

    return register


def _instruction_message(instr: Instruction, ids: _Ids, by_name) -> Message:
    opcode = instr.opcode
    writer = _WRITERS.get(opcode)
    if writer is None:
        raise Unimplemented(
            f"{instr.name}: opcode {opcode.value} has no HloInstructionProto writer in hlort "
            "(hlort.text.hlo_proto_writer)"
        )
    m = Message().string(1, instr.name).string(2, opcode.value)
    m.message(3, ids.shape(instr.shape), keep=True)
    attrs = _Attrs(instr)
    writer(m, attrs)
    attrs.check_all_used()
    m.int(35, ids.instruction[instr], keep=True)
    m.ints(36, [ids.instruction[o] for o in instr.operands])
    m.ints(38, [ids.of_computation(c, instr) for c in _called_in_proto_order(instr)])
    extra_attribute_fields(m, instr, ids.instruction, by_name)
    return m


def _called_in_proto_order(instr: Instruction) -> list[Computation]:
    """XLA keeps a while loop's body before its condition; everything else as hlort does."""
    if instr.opcode is Opcode.WHILE:
        return [instr.attrs["body"], instr.attrs["condition"]]
    return instr.called_computations()


_NO_FIELDS = [
    op
    for op in Opcode
    if all(a.key in op.info.called for a in op.info.attrs)
    and op not in (Opcode.PARAMETER, Opcode.CONSTANT)
]


@_writes(*_NO_FIELDS)
def _nothing(m: Message, a: _Attrs) -> None:
    """Ops whose operands, shape and called computations say everything (elementwise ops,
    tuple, reshape, while, call, conditional's branches...)."""


@_writes(Opcode.PARAMETER)
def _parameter(m: Message, a: _Attrs) -> None:
    m.int(9, a.instr.parameter_number)


@_writes(Opcode.CONSTANT)
def _constant(m: Message, a: _Attrs) -> None:
    if a.instr.literal is None:
        raise Unimplemented(f"constant {a.instr.name} has no literal to write")
    m.message(8, V.literal_message(a.instr.literal, a.instr.shape), keep=True)


@_writes(Opcode.IOTA)
def _iota(m: Message, a: _Attrs) -> None:
    m.ints(14, [a.get("iota_dimension")])


@_writes(
    Opcode.BROADCAST,
    Opcode.TRANSPOSE,
    Opcode.REVERSE,
    Opcode.CONCATENATE,
    Opcode.REDUCE,
    Opcode.MAP,
    Opcode.SET_DIMENSION_SIZE,
    Opcode.GET_DIMENSION_SIZE,
    Opcode.ALL_TO_ALL,
)
def _dimensions(m: Message, a: _Attrs) -> None:
    m.ints(14, a.get("dimensions") or ())
    if a.instr.opcode is Opcode.ALL_TO_ALL:
        _collective(m, a)


@_writes(Opcode.SORT)
def _sort(m: Message, a: _Attrs) -> None:
    m.ints(14, a.get("dimensions"))
    m.int(60, a.get("is_stable", False))


@_writes(Opcode.REDUCE_PRECISION)
def _reduce_precision(m: Message, a: _Attrs) -> None:
    m.int(18, a.get("exponent_bits")).int(19, a.get("mantissa_bits"))


@_writes(Opcode.COMPARE)
def _compare(m: Message, a: _Attrs) -> None:
    m.string(63, A.ComparisonDirection(a.get("direction")).value)
    kind = a.get("comparison_type")
    if kind is not None:
        m.string(72, A.ComparisonType(kind).value)


@_writes(Opcode.SLICE)
def _slice(m: Message, a: _Attrs) -> None:
    m.messages(
        17, [Message().int(1, s.start).int(2, s.limit).int(3, s.stride) for s in a.get("slice")]
    )


@_writes(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(m: Message, a: _Attrs) -> None:
    m.ints(20, a.get("dynamic_slice_sizes"))


@_writes(Opcode.PAD)
def _pad(m: Message, a: _Attrs) -> None:
    dims = [Message().int(1, p.low).int(2, p.high).int(3, p.interior) for p in a.get("padding")]
    m.message(21, Message().messages(1, dims), keep=True)


def _window(window) -> Message:
    out = Message()
    for w in window or ():
        dim = Message().int(1, w.size).int(2, w.stride).int(3, w.padding_low)
        dim.int(4, w.padding_high).int(5, w.window_dilation).int(6, w.base_dilation)
        out.message(1, dim.int(7, w.window_reversal), keep=True)
    return out


@_writes(Opcode.REDUCE_WINDOW, Opcode.SELECT_AND_SCATTER)
def _windowed(m: Message, a: _Attrs) -> None:
    m.message(15, _window(a.get("window")), keep=True)


@_writes(Opcode.GATHER)
def _gather(m: Message, a: _Attrs) -> None:
    d = a.get("gather_dimension_numbers")
    dims = Message().ints(1, d.offset_dims).ints(2, d.collapsed_slice_dims)
    dims.ints(3, d.start_index_map).int(4, d.index_vector_dim)
    dims.ints(5, d.operand_batching_dims).ints(6, d.start_indices_batching_dims)
    m.message(33, dims, keep=True).ints(34, a.get("slice_sizes"))
    m.int(67, a.get("indices_are_sorted", False))


@_writes(Opcode.SCATTER)
def _scatter(m: Message, a: _Attrs) -> None:
    d = a.get("scatter_dimension_numbers")
    dims = Message().ints(1, d.update_window_dims).ints(2, d.inserted_window_dims)
    dims.ints(3, d.scatter_dims_to_operand_dims).int(4, d.index_vector_dim)
    dims.ints(5, d.input_batching_dims).ints(6, d.scatter_indices_batching_dims)
    m.message(48, dims, keep=True)
    m.int(67, a.get("indices_are_sorted", False)).int(69, a.get("unique_indices", False))


_PRECISIONS = {A.Precision.DEFAULT: 0, A.Precision.HIGH: 1, A.Precision.HIGHEST: 2}


def _precision(m: Message, a: _Attrs) -> None:
    given = tuple(a.get("operand_precision") or ())
    values = [_PRECISIONS[A.Precision(p)] for p in given] or [0] * len(a.instr.operands)
    m.message(51, Message().ints(1, values), keep=True)


@_writes(Opcode.DOT)
def _dot(m: Message, a: _Attrs) -> None:
    d = a.get("dot_dimension_numbers") or A.DotDimensionNumbers()
    dims = Message().ints(1, d.lhs_contracting_dims).ints(2, d.rhs_contracting_dims)
    dims.ints(3, d.lhs_batch_dims).ints(4, d.rhs_batch_dims)
    m.message(30, dims, keep=True)
    _precision(m, a)


@_writes(Opcode.CONVOLUTION)
def _convolution(m: Message, a: _Attrs) -> None:
    m.message(15, _window(a.get("window")), keep=True)
    d = a.get("dim_labels")
    dims = Message().int(7, d.input_batch_dimension).int(8, d.input_feature_dimension)
    dims.ints(11, d.input_spatial_dimensions).int(3, d.kernel_input_feature_dimension)
    dims.int(4, d.kernel_output_feature_dimension).ints(6, d.kernel_spatial_dimensions)
    dims.int(9, d.output_batch_dimension).int(10, d.output_feature_dimension)
    dims.ints(12, d.output_spatial_dimensions)
    m.message(16, dims, keep=True)
    m.int(50, a.get("feature_group_count", 1) or 1).int(58, a.get("batch_group_count", 1) or 1)
    _precision(m, a)


@_writes(Opcode.TOPK)
def _topk(m: Message, a: _Attrs) -> None:
    m.int(81, a.get("k")).int(85, a.get("largest", True))


@_writes(Opcode.CHOLESKY)
def _cholesky(m: Message, a: _Attrs) -> None:
    m.message(62, Message().int(1, a.get("lower", False)), keep=True)


_TRANSPOSES = {A.Transpose.NO_TRANSPOSE: 1, A.Transpose.TRANSPOSE: 2, A.Transpose.ADJOINT: 3}


@_writes(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(m: Message, a: _Attrs) -> None:
    options = Message().int(1, a.get("left_side", False)).int(2, a.get("lower", False))
    options.int(3, a.get("unit_diagonal", False))
    transpose = A.Transpose(a.get("transpose_a", A.Transpose.NO_TRANSPOSE))
    m.message(59, options.int(4, _TRANSPOSES[transpose]), keep=True)


_FFT_TYPES = {A.FftType.FFT: 0, A.FftType.IFFT: 1, A.FftType.RFFT: 2, A.FftType.IRFFT: 3}


@_writes(Opcode.FFT)
def _fft(m: Message, a: _Attrs) -> None:
    m.int(31, _FFT_TYPES[A.FftType(a.get("fft_type"))]).ints(32, a.get("fft_length"))


@_writes(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(m: Message, a: _Attrs) -> None:
    m.int(13, a.get("index"))


_API_VERSIONS = {
    "API_VERSION_UNSPECIFIED": 0,
    "API_VERSION_ORIGINAL": 1,
    "API_VERSION_STATUS_RETURNING": 2,
    "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
    "API_VERSION_TYPED_FFI": 4,
}


@_writes(Opcode.CUSTOM_CALL)
def _custom_call(m: Message, a: _Attrs) -> None:
    m.string(28, a.get("custom_call_target"))
    config = a.get("backend_config", "")
    if isinstance(config, dict):
        config = json.dumps(config, separators=(",", ":"))
    m.bytes(43, config.encode("utf-8"))
    m.int(65, a.get("has_side_effect", False))
    version = a.get("api_version", "API_VERSION_ORIGINAL")
    if isinstance(version, str):
        if version not in _API_VERSIONS:
            raise Unimplemented(
                f"{a.instr.name}: custom-call api_version {version!r} is not one of "
                f"{sorted(_API_VERSIONS)}"
            )
        version = _API_VERSIONS[version]
    m.int(77, version)


@_writes(Opcode.FUSION)
def _fusion(m: Message, a: _Attrs) -> None:
    m.string(11, A.FusionKind(a.get("kind")).value)


_RNG_ALGORITHMS = {A.RngAlgorithm.DEFAULT: 0, A.RngAlgorithm.THREE_FRY: 1, A.RngAlgorithm.PHILOX: 2}


@_writes(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(m: Message, a: _Attrs) -> None:
    algorithm = A.RngAlgorithm(a.get("algorithm", A.RngAlgorithm.DEFAULT))
    m.int(70, _RNG_ALGORITHMS[algorithm])


def _collective(m: Message, a: _Attrs) -> None:
    """channel_id, replica groups (an explicit list in ``replica_groups``, an iota list in
    ``collective_device_list``) and use_global_device_ids."""
    channel = a.get("channel_id")
    if channel is not None:
        m.int(26, channel)
    groups = a.get("replica_groups") or ()
    if isinstance(groups, A.IotaReplicaGroupList):
        iota = Message().int(1, groups.num_groups).int(2, groups.group_size)
        iota.ints(3, groups.reshape_dims).ints(4, groups.transpose_perm)
        m.message(87, Message().message(2, iota, keep=True), keep=True)
    else:
        m.messages(49, [Message().ints(1, g) for g in groups])
    m.int(71, a.get("use_global_device_ids", False))


@_writes(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.COLLECTIVE_BROADCAST)
def _all_reduce(m: Message, a: _Attrs) -> None:
    _collective(m, a)


@_writes(Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.REDUCE_SCATTER)
def _all_gather(m: Message, a: _Attrs) -> None:
    m.ints(14, a.get("dimensions"))
    _collective(m, a)


@_writes(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(m: Message, a: _Attrs) -> None:
    channel = a.get("channel_id")
    if channel is not None:
        m.int(26, channel)
    pairs = [Message().int(1, s).int(2, t) for s, t in a.get("source_target_pairs") or ()]
    m.messages(52, pairs)


def covered_opcodes() -> set[Opcode]:
    """The opcodes this writer can write (every one hlort has; a test keeps it so)."""
    return set(_WRITERS)
