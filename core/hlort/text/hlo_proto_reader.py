"""XLA's binary ``HloModuleProto`` -> an hlort :class:`Module` (the writer's inverse).

``hlort run module.hlo.pb`` and ``hlort.compile(Path("x.hlo.pb"))`` read what XLA dumps with
``--xla_dump_hlo_as_proto`` (an ``xla.HloProto``), what jaxlib serializes
(``as_serialized_hlo_module_proto()``: an ``xla.HloModuleProto``) and what hlort-jax answers
``PJRT_Executable_OptimizedProgram`` with (``xla.HloModuleProtoWithConfig``). Each opcode's
fields become the attributes hlort keeps under its HLO text names (one reader per opcode
below, beside :mod:`hlort.text.hlo_proto_writer`'s writers); an opcode hlort does not have is
UNIMPLEMENTED naming it. The module is verified like parsed text.
"""

from __future__ import annotations

from collections.abc import Callable

from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir import attributes as A
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode, from_hlo_name
from hlort.text import hlo_proto_values_reader as R
from hlort.text.hlo_proto_values_reader import Msg
from hlort.text.hlo_proto_writer import OUTPUT_KEY, PARAMETERS_KEY
from hlort.text.lexer import escape

_COMPUTATIONS, _ENTRY_ID, _MODULE_NAME = 3, 6, 1


def is_hlo_proto(data: bytes) -> bool:
    """Whether ``data`` looks like one of XLA's HLO protos (a cheap check: field 1 first)."""
    return len(data) > 2 and data[0] == 0x0A


def module_from_hlo_proto(data: bytes, source_name: str = "<proto>", verify: bool = True):
    """An ``HloModuleProto``, ``HloModuleProtoWithConfig`` or ``HloProto`` -> Module."""
    try:
        top = Msg(bytes(data))
        module_msg, config = _unwrap(top)
    except InvalidArgument as err:
        raise InvalidArgument(f"{source_name}: not an XLA HLO proto: {err.message}") from None
    try:
        module = _read_module(module_msg, config)
    except (ValueError, IndexError, KeyError) as err:  # a bad enum, string or count in a field
        raise InvalidArgument(
            f"{source_name}: malformed XLA HLO proto: {type(err).__name__}: {err}"
        ) from None
    if verify:
        from hlort.ir.verifier import verify_module

        verify_module(module)
    return module


def _unwrap(top: Msg) -> tuple[Msg, Msg | None]:
    """The module and its config. A wrapper is told by its field 1 (the module) first: an
    ``HloProto``'s field 3 is its buffer assignment, not computations."""
    try:
        inner = top.msg(1)
    except InvalidArgument:  # field 1 is a name: an HloModuleProto
        inner = None
    if inner is not None and inner.msg(_COMPUTATIONS) is not None:
        return inner, top.msg(2)  # HloProto / HloModuleProtoWithConfig
    if top.msg(_COMPUTATIONS) is not None:
        return top, None
    raise InvalidArgument("it has no computations (field 3) at its top or in field 1")


def _read_module(m: Msg, config: Msg | None) -> Module:
    module = Module(m.str(_MODULE_NAME) or "module")
    by_id: dict[int, Computation] = {}
    entry_id = m.int(_ENTRY_ID)
    for comp_msg in m.msgs(_COMPUTATIONS):
        comp = _read_computation(comp_msg, by_id)
        by_id[comp_msg.int(5)] = comp
        module.add_computation(comp, entry=comp_msg.int(5) == entry_id)
    if module.entry is None:
        entry_name = m.str(2)
        named = [c for c in module.computations if c.name == entry_name]
        if not named:
            raise InvalidArgument(f"module {module.name}: no entry computation {entry_name!r}")
        module.entry = named[0]
    module.sort_computations()
    if config is not None:
        module.config["num_replicas"] = max(1, config.int(4, 1))
        module.config["num_partitions"] = max(1, config.int(5, 1))
    if m.has(7):
        module.attributes["is_scheduled"] = "true"
    output = m.msg(12)
    if output is not None:
        module.attributes[OUTPUT_KEY] = R.sharding_from(output).to_text()
    params = [R.sharding_from(p) for p in m.msgs(14)]
    if params:
        from hlort.ir.sharding import HloSharding

        module.attributes[PARAMETERS_KEY] = HloSharding.tuple_of(params).to_text()
    _read_aliasing(m, module)
    return module


def _read_aliasing(m: Msg, module: Module) -> None:
    alias = m.msg(8)
    if alias is not None and alias.msgs(1):
        kinds = {1: "may-alias", 2: "must-alias"}
        parts = []
        for e in alias.msgs(1):
            out, param, index = e.ints(1), e.int(2), e.ints(3)
            kind = kinds.get(e.int(4), "may-alias")
            parts.append(
                f"{{{','.join(map(str, out))}}}: ({param}, {{{','.join(map(str, index))}}}, {kind})"
            )
        module.attributes["input_output_alias"] = "{ " + ", ".join(parts) + " }"


def _read_computation(m: Msg, by_id: dict[int, Computation]) -> Computation:
    comp = Computation(m.str(1))
    comp.is_fusion_computation = m.bool(7)
    instrs: dict[int, Instruction] = {}
    names: dict[int, str] = {}
    for msg in m.msgs(2):
        instr = _read_instruction(msg, instrs, by_id)
        number = msg.int(35)
        instrs[number] = instr
        names[number] = instr.name
        predecessors = msg.ints(37)
        if predecessors:
            listed = ", ".join("%" + names[p] for p in predecessors if p in names)
            instr.extra_attrs["control-predecessors"] = "{" + listed + "}"
        comp.add_instruction(instr)
    root = instrs.get(m.int(6))
    if root is None:
        raise InvalidArgument(f"computation {comp.name}: root id {m.int(6)} is not among its ids")
    comp.set_root(root)
    return comp


def _read_instruction(m: Msg, instrs: dict[int, Instruction], by_id) -> Instruction:
    name, opcode_name = m.str(1), m.str(2)
    opcode = from_hlo_name(opcode_name)
    reader = _READERS.get(opcode) if opcode is not None else None
    if reader is None:
        raise Unimplemented(f"{name}: XLA opcode {opcode_name!r} has no hlort counterpart")
    shape = R.shape_from(m.msg(3) or Msg(b""))
    try:
        operands = [instrs[i] for i in m.ints(36)]
    except KeyError as err:
        raise InvalidArgument(
            f"{name}: operand id {err.args[0]} is not defined before it"
        ) from None
    try:
        called = [by_id[i] for i in m.ints(38)]
    except KeyError as err:
        raise InvalidArgument(
            f"{name}: computation id {err.args[0]} is not defined before it"
        ) from None
    attrs: dict = {}
    _place_called(opcode, called, attrs, name)
    instr = Instruction(opcode, shape, operands, attrs, name)
    reader(m, instr)
    _read_extras(m, instr)
    return instr


def _place_called(opcode: Opcode, called: list[Computation], attrs: dict, name: str) -> None:
    keys = opcode.info.called
    if not keys:
        if called:
            raise InvalidArgument(f"{name} ({opcode.value}) calls computations; it takes none")
        return
    if opcode is Opcode.WHILE:
        attrs["body"], attrs["condition"] = called  # XLA keeps the body first
    elif opcode is Opcode.SELECT_AND_SCATTER:
        attrs["select"], attrs["scatter"] = called
    elif opcode in (Opcode.CONDITIONAL, Opcode.CUSTOM_CALL):
        if called or opcode is Opcode.CONDITIONAL:
            attrs[keys[0]] = tuple(called)
    elif len(called) == 1:
        attrs[keys[0]] = called[0]
    else:
        raise InvalidArgument(f"{name} ({opcode.value}) calls {len(called)} computations, not 1")


def _read_extras(m: Msg, instr: Instruction) -> None:
    extra = instr.extra_attrs
    meta = m.msg(7)
    if meta is not None and (text := R.metadata_text(meta)):
        extra["metadata"] = text
    sharding = m.msg(40)
    if sharding is not None:
        extra["sharding"] = R.sharding_from(sharding).to_text()
    frontend = m.msg(68)
    if frontend is not None and (text := R.frontend_attributes_text(frontend)):
        extra["frontend_attributes"] = text
    config = m.bytes(43)
    if config and instr.opcode is not Opcode.CUSTOM_CALL:
        text = config.decode("utf-8")
        if not (text.startswith("{") and text.endswith("}")):  # HLO text: a string in quotes
            text = f'"{escape(text)}"'
        extra["backend_config"] = text
    if m.bool(56):
        from hlort.text.shapes import shape_text

        shapes = [shape_text(R.shape_from(s)) for s in m.msgs(57)]
        extra["operand_layout_constraints"] = "{" + ", ".join(shapes) + "}"
    aliasing = m.msgs(74)
    if aliasing:
        parts = []
        for a in aliasing:
            out, operand, index = a.ints(1), a.int(2), a.ints(3)
            parts.append(
                f"{{{','.join(map(str, out))}}}: ({operand}, {{{','.join(map(str, index))}}})"
            )
        extra["output_to_operand_aliasing"] = "{" + ", ".join(parts) + "}"


# -- per-opcode fields --------------------------------------------------------------------
Reader = Callable[[Msg, Instruction], None]
_READERS: dict[Opcode, Reader] = {}


def _reads(*opcodes: Opcode):
    def register(fn: Reader) -> Reader:
        for op in opcodes:
            _READERS[op] = fn
        return fn

    return register


@_reads(
    *[
        op
        for op in Opcode
        if all(a.key in op.info.called for a in op.info.attrs)
        and op not in (Opcode.PARAMETER, Opcode.CONSTANT)
    ]
)
def _nothing(m: Msg, instr: Instruction) -> None:
    pass


@_reads(Opcode.PARAMETER)
def _parameter(m: Msg, instr: Instruction) -> None:
    instr.parameter_number = m.int(9)


@_reads(Opcode.CONSTANT)
def _constant(m: Msg, instr: Instruction) -> None:
    literal = m.msg(8)
    if literal is None:
        raise InvalidArgument(f"constant {instr.name} has no literal")
    instr.literal = R.literal_from(literal, instr.shape)


@_reads(Opcode.IOTA)
def _iota(m: Msg, instr: Instruction) -> None:
    instr.attrs["iota_dimension"] = (m.ints(14) or [0])[0]


@_reads(
    Opcode.BROADCAST,
    Opcode.TRANSPOSE,
    Opcode.REVERSE,
    Opcode.CONCATENATE,
    Opcode.REDUCE,
    Opcode.MAP,
    Opcode.SET_DIMENSION_SIZE,
    Opcode.GET_DIMENSION_SIZE,
)
def _dimensions(m: Msg, instr: Instruction) -> None:
    dims = tuple(m.ints(14))
    if instr.opcode is Opcode.MAP and not dims:
        dims = tuple(range(len(getattr(instr.shape, "dims", ()))))
    instr.attrs["dimensions"] = dims


@_reads(Opcode.SORT)
def _sort(m: Msg, instr: Instruction) -> None:
    instr.attrs["dimensions"] = tuple(m.ints(14))
    instr.attrs["is_stable"] = m.bool(60)


@_reads(Opcode.REDUCE_PRECISION)
def _reduce_precision(m: Msg, instr: Instruction) -> None:
    instr.attrs["exponent_bits"], instr.attrs["mantissa_bits"] = m.int(18), m.int(19)


@_reads(Opcode.COMPARE)
def _compare(m: Msg, instr: Instruction) -> None:
    instr.attrs["direction"] = A.ComparisonDirection(m.str(63))
    if m.str(72):
        instr.attrs["comparison_type"] = A.ComparisonType(m.str(72))


@_reads(Opcode.SLICE)
def _slice(m: Msg, instr: Instruction) -> None:
    instr.attrs["slice"] = tuple(A.SliceDim(s.int(1), s.int(2), s.int(3, 1)) for s in m.msgs(17))


@_reads(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(m: Msg, instr: Instruction) -> None:
    instr.attrs["dynamic_slice_sizes"] = tuple(m.ints(20))


@_reads(Opcode.PAD)
def _pad(m: Msg, instr: Instruction) -> None:
    config = m.msg(21) or Msg(b"")
    instr.attrs["padding"] = tuple(A.PadDim(d.int(1), d.int(2), d.int(3)) for d in config.msgs(1))


def _window(m: Msg | None) -> tuple[A.WindowDim, ...]:
    if m is None:
        return ()
    return tuple(
        A.WindowDim(d.int(1), d.int(2), d.int(3), d.int(4), d.int(5), d.int(6), d.bool(7))
        for d in m.msgs(1)
    )


@_reads(Opcode.REDUCE_WINDOW, Opcode.SELECT_AND_SCATTER)
def _windowed(m: Msg, instr: Instruction) -> None:
    instr.attrs["window"] = _window(m.msg(15))


@_reads(Opcode.GATHER)
def _gather(m: Msg, instr: Instruction) -> None:
    d = m.msg(33) or Msg(b"")
    instr.attrs["gather_dimension_numbers"] = A.GatherDimensionNumbers(
        tuple(d.ints(1)),
        tuple(d.ints(2)),
        tuple(d.ints(3)),
        d.int(4),
        tuple(d.ints(5)),
        tuple(d.ints(6)),
    )
    instr.attrs["slice_sizes"] = tuple(m.ints(34))
    instr.attrs["indices_are_sorted"] = m.bool(67)


@_reads(Opcode.SCATTER)
def _scatter(m: Msg, instr: Instruction) -> None:
    d = m.msg(48) or Msg(b"")
    instr.attrs["scatter_dimension_numbers"] = A.ScatterDimensionNumbers(
        tuple(d.ints(1)),
        tuple(d.ints(2)),
        tuple(d.ints(3)),
        d.int(4),
        tuple(d.ints(5)),
        tuple(d.ints(6)),
    )
    instr.attrs["indices_are_sorted"] = m.bool(67)
    instr.attrs["unique_indices"] = m.bool(69)


_PRECISIONS = {0: A.Precision.DEFAULT, 1: A.Precision.HIGH, 2: A.Precision.HIGHEST}


def _precision(m: Msg, instr: Instruction) -> None:
    config = m.msg(51)
    values = config.ints(1) if config is not None else []
    if any(v not in _PRECISIONS for v in values):
        raise Unimplemented(f"{instr.name}: operand precision {values} has no hlort form")
    if any(v != 0 for v in values):
        instr.attrs["operand_precision"] = tuple(_PRECISIONS[v] for v in values)


@_reads(Opcode.DOT)
def _dot(m: Msg, instr: Instruction) -> None:
    d = m.msg(30) or Msg(b"")
    instr.attrs["dot_dimension_numbers"] = A.DotDimensionNumbers(
        tuple(d.ints(1)), tuple(d.ints(2)), tuple(d.ints(3)), tuple(d.ints(4))
    )
    _precision(m, instr)


@_reads(Opcode.CONVOLUTION)
def _convolution(m: Msg, instr: Instruction) -> None:
    instr.attrs["window"] = _window(m.msg(15))
    d = m.msg(16) or Msg(b"")
    instr.attrs["dim_labels"] = A.ConvDimensionNumbers(
        d.int(7),
        d.int(8),
        tuple(d.ints(11)),
        d.int(3),
        d.int(4),
        tuple(d.ints(6)),
        d.int(9),
        d.int(10),
        tuple(d.ints(12)),
    )
    instr.attrs["feature_group_count"] = m.int(50, 1) or 1
    instr.attrs["batch_group_count"] = m.int(58, 1) or 1
    _precision(m, instr)


@_reads(Opcode.TOPK)
def _topk(m: Msg, instr: Instruction) -> None:
    instr.attrs["k"], instr.attrs["largest"] = m.int(81), m.bool(85)


@_reads(Opcode.CHOLESKY)
def _cholesky(m: Msg, instr: Instruction) -> None:
    options = m.msg(62)
    instr.attrs["lower"] = options.bool(1) if options is not None else False


_TRANSPOSES = {1: A.Transpose.NO_TRANSPOSE, 2: A.Transpose.TRANSPOSE, 3: A.Transpose.ADJOINT}


@_reads(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(m: Msg, instr: Instruction) -> None:
    o = m.msg(59) or Msg(b"")
    instr.attrs.update(left_side=o.bool(1), lower=o.bool(2), unit_diagonal=o.bool(3))
    instr.attrs["transpose_a"] = _TRANSPOSES.get(o.int(4), A.Transpose.NO_TRANSPOSE)


_FFT_TYPES = [A.FftType.FFT, A.FftType.IFFT, A.FftType.RFFT, A.FftType.IRFFT]


@_reads(Opcode.FFT)
def _fft(m: Msg, instr: Instruction) -> None:
    instr.attrs["fft_type"] = _FFT_TYPES[m.int(31)]
    instr.attrs["fft_length"] = tuple(m.ints(32))


@_reads(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(m: Msg, instr: Instruction) -> None:
    instr.attrs["index"] = m.int(13)


_API_VERSIONS = {
    1: "API_VERSION_ORIGINAL",
    2: "API_VERSION_STATUS_RETURNING",
    3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}


@_reads(Opcode.CUSTOM_CALL)
def _custom_call(m: Msg, instr: Instruction) -> None:
    instr.attrs["custom_call_target"] = m.str(28)
    if m.bytes(43):
        instr.attrs["backend_config"] = m.bytes(43).decode("utf-8")
    if m.bool(65):
        instr.attrs["has_side_effect"] = True
    version = m.int(77)
    if version not in (0, 1):
        instr.attrs["api_version"] = _API_VERSIONS.get(version, version)


_FUSION_KINDS = {k.value: k for k in A.FusionKind}


@_reads(Opcode.FUSION)
def _fusion(m: Msg, instr: Instruction) -> None:
    kind = _FUSION_KINDS.get(m.str(11))
    if kind is None:
        raise Unimplemented(f"{instr.name}: fusion kind {m.str(11)!r} has no hlort form")
    instr.attrs["kind"] = kind


_RNG = [A.RngAlgorithm.DEFAULT, A.RngAlgorithm.THREE_FRY, A.RngAlgorithm.PHILOX]


@_reads(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(m: Msg, instr: Instruction) -> None:
    instr.attrs["algorithm"] = _RNG[m.int(70)]


def _collective(m: Msg, instr: Instruction) -> None:
    if m.has(26):
        instr.attrs["channel_id"] = m.int(26)
    devices = m.msg(87)
    iota = devices.msg(2) if devices is not None else None
    if iota is not None:
        instr.attrs["replica_groups"] = A.IotaReplicaGroupList(
            iota.int(1), iota.int(2), tuple(iota.ints(3)), tuple(iota.ints(4))
        )
    else:
        groups = devices.msgs(1) if devices is not None and devices.msgs(1) else m.msgs(49)
        instr.attrs["replica_groups"] = tuple(tuple(g.ints(1)) for g in groups)
    if m.bool(71):
        instr.attrs["use_global_device_ids"] = True


@_reads(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.COLLECTIVE_BROADCAST)
def _all_reduce(m: Msg, instr: Instruction) -> None:
    _collective(m, instr)


@_reads(Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL)
def _all_gather(m: Msg, instr: Instruction) -> None:
    instr.attrs["dimensions"] = tuple(m.ints(14))
    _collective(m, instr)


@_reads(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(m: Msg, instr: Instruction) -> None:
    if m.has(26):
        instr.attrs["channel_id"] = m.int(26)
    instr.attrs["source_target_pairs"] = tuple((p.int(1), p.int(2)) for p in m.msgs(52))


def covered_opcodes() -> set[Opcode]:
    return set(_READERS)
