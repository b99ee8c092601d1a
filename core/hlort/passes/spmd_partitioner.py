"""The SPMD partitioner: a module over global arrays with shardings -> one per-device program.

A module whose header asks for ``num_partitions > 1`` describes the whole computation on
global arrays; ``sharding={...}`` on parameters, the root and any instruction say how values
are laid out over the partitions (JAX's ``in_shardings``, ``out_shardings`` and
``with_sharding_constraint``; an unannotated parameter is replicated). The pass walks the entry
computation once, in dataflow order: each op's rule (spmd_rules.py) takes its operands'
shardings, emits the op at tile shapes with the collectives it needs and says how its result
is laid out (forward propagation); an annotated instruction is then resharded to its
annotation. What no rule can partition runs whole on every device (its operands all-gathered)
and the reason is recorded in :class:`SpmdReport` (``spmd-report.txt`` in ``--dump-dir``).

The result keeps ``sharding=`` on the parameters and records the layouts the runtime needs in
the header: ``spmd_parameters_shardings`` and ``spmd_output_sharding`` (read by
:mod:`hlort.runtime.sharded_call`). Running the pass on a partitioned module changes nothing.
The pass itself, :class:`~hlort.passes.spmd_pass.SpmdPartitioner`, is in spmd_pass.py: every
compile's pipeline holds one, and only a partitioned module imports this module.
"""

from __future__ import annotations

from dataclasses import field

from hlort.builder import Builder
from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir.computation import Computation, callees_first
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import SPMD_OUTPUT_KEY as OUTPUT_KEY
from hlort.ir.sharding import SPMD_PARAMETERS_KEY as PARAMETERS_KEY
from hlort.ir.sharding import HloSharding
from hlort.lazy_dataclass import dataclass
from hlort.passes import spmd_rules_indexing  # noqa: F401  (registers its rules)
from hlort.passes.spmd_reshard import CannotPartition, SpmdEmitter, local_shape
from hlort.passes.spmd_rules import RULES, PValue, elementwise
from hlort.shape import ArrayShape, TupleShape
from hlort.text.sharding_syntax import parse_sharding, set_sharding, sharding_of

_SHARDING_TARGETS = ("Sharding", "mhlo.sharding")
_REPLICATED = HloSharding.replicate()
_MANUAL = HloSharding.manual()
_MANUAL_TARGETS = ("SPMDFullToShardShape", "SPMDShardToFullShape")


@dataclass
class SpmdReport:
    """What the partitioner did: layouts chosen, collectives inserted, and each instruction it
    ran whole on every device with the reason."""

    module: str = ""
    partitions: int = 1
    replicas: int = 1
    parameters: list[tuple[str, str]] = field(default_factory=list)
    output: str = ""
    replicated: list[tuple[str, str, str]] = field(default_factory=list)  # name, opcode, why
    collectives: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        lines = [
            f"module {self.module}: {self.partitions} partition(s) x {self.replicas} replica(s)",
            "parameters:",
            *(f"  {name}: {s}" for name, s in self.parameters),
            f"output: {self.output}",
            "collectives inserted: "
            + (", ".join(f"{k} x{v}" for k, v in sorted(self.collectives.items())) or "none"),
            f"replicated instead of partitioned: {len(self.replicated)}",
            *(f"  {name} ({op}): {why}" for name, op, why in self.replicated),
        ]
        return "\n".join(lines) + "\n"


def partition_module(module: Module) -> SpmdReport:
    partitions = int(module.config.get("num_partitions", 1))
    replicas = int(module.config.get("num_replicas", 1))
    report = SpmdReport(module.name, partitions, replicas)
    entry = module.entry
    builder = Builder(entry.name, module)
    e = SpmdEmitter(builder, partitions, replicas)
    run = _Run(e, report)
    values: dict[Instruction, PValue] = {}
    for param in entry.parameters:
        values[param] = run.parameter(param)
    for instr in entry.post_order():
        if instr.opcode is not Opcode.PARAMETER:
            values[instr] = run.instruction(instr, [values[o] for o in instr.operands])
    root = run.output(entry.root, values[entry.root])
    comp = builder.finish(root.local)
    report.parameters = [(p.name, str(values[p].sharding)) for p in entry.parameters]
    report.output = str(root.sharding)
    for instr in comp.instructions:
        kind = instr.opcode.value
        if kind in ("all-reduce", "all-gather", "reduce-scatter"):
            report.collectives[kind] = report.collectives.get(kind, 0) + 1
    module.computations = [c for c in module.computations if c is not entry]
    module.entry = None
    module.rename_all()
    module.add_computation(comp, entry=True)
    module.computations = module.reachable_computations()  # loops' global bodies went
    module.attributes.pop("entry_computation_layout", None)
    module.attributes[PARAMETERS_KEY] = (
        "{" + ", ".join(str(values[p].sharding) for p in entry.parameters) + "}"
    )
    module.attributes[OUTPUT_KEY] = str(root.sharding)
    return report


def _has_manual(s: HloSharding) -> bool:
    """Manual, or a tuple holding a manual element (a loop state mixing shard_map's per-device
    values with constants, once the body's calls are inlined)."""
    return s.is_manual or (s.is_tuple and any(_has_manual(e) for e in s.elements))


def _has_spmd(comp: Computation) -> bool:
    """Whether ``comp`` (or what it calls) has shardings or shard_map's custom calls."""
    for c in callees_first([comp]):
        for instr in c.instructions:
            target = instr.attrs.get("custom_call_target")
            if "sharding" in instr.extra_attrs or target in (*_MANUAL_TARGETS, *_SHARDING_TARGETS):
                return True
    return False


def _has_tiled(s: HloSharding) -> bool:
    return s.is_tiled or (s.is_tuple and any(_has_tiled(e) for e in s.elements))


class _Run:
    def __init__(self, e: SpmdEmitter, report: SpmdReport):
        self.e = e
        self.report = report

    def annotation(self, instr: Instruction) -> HloSharding | None:
        """The instruction's sharding, checked; maximal is run replicated (every device holds
        the value, the named one among them)."""
        s = sharding_of(instr)
        if s is None:
            return None
        return self._checked(s, instr.shape, instr)

    def _checked(self, s: HloSharding, shape, instr: Instruction) -> HloSharding:
        if s.is_manual or (s.is_tiled and "manual" in s.last_tile_dims):
            raise Unimplemented(
                f"{instr.opcode.value} {instr.name} has a manual sharding (shard_map); the SPMD "
                "partitioner supports automatic shardings only"
            )
        if s.is_maximal or s.kind == "unknown":
            return _REPLICATED
        if s.is_tuple:
            if not isinstance(shape, TupleShape) or len(shape.elements) != len(s.elements):
                raise InvalidArgument(
                    f"{instr.opcode.value} {instr.name}: tuple sharding {s} does not match its "
                    f"shape {shape}"
                )
            return HloSharding.tuple_of(
                self._checked(x, sub, instr)
                for x, sub in zip(s.elements, shape.elements, strict=True)
            )
        if isinstance(shape, TupleShape):
            return HloSharding.tuple_of(self._checked(s, sub, instr) for sub in shape.elements)
        if s.is_tiled:
            s.check_rank(shape.rank, f"{instr.opcode.value} {instr.name}")
            self.e.check_devices(s, f"{instr.opcode.value} {instr.name}")
        return s

    def _even(self, s: HloSharding, instr: Instruction) -> HloSharding:
        if s.is_tiled and not s.evenly_divides(instr.shape.dims):
            self.report.replicated.append(
                (
                    instr.name,
                    instr.opcode.value,
                    f"dims {list(instr.shape.dims)} do not divide evenly into the tiles "
                    f"{list(s.tile_counts)} of {s}",
                )
            )
            return _REPLICATED
        return s

    def parameter(self, param: Instruction) -> PValue:
        s = self.annotation(param) or _REPLICATED
        if isinstance(param.shape, TupleShape):
            if not s.is_tuple or any(x.is_tiled for x in s.elements):
                reason = "a tuple parameter is passed whole"
                if s.is_tiled or (s.is_tuple and any(x.is_tiled for x in s.elements)):
                    self.report.replicated.append((param.name, "parameter", reason))
            s = _REPLICATED
        else:
            s = self._even(s, param)
        local = self.e.b.parameter(local_shape(param.shape, s), name=param.name)
        local.extra_attrs.update(param.extra_attrs)
        set_sharding(local, s)
        return PValue(local, s)

    def instruction(self, instr: Instruction, ops: list[PValue]) -> PValue:
        target = (
            instr.attrs.get("custom_call_target") if instr.opcode is Opcode.CUSTOM_CALL else None
        )
        if target in _MANUAL_TARGETS or (
            instr.opcode not in (Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT)
            and any(_has_manual(v.sharding) for v in ops)
        ):
            return self.manual(instr, ops, target)
        if instr.opcode is Opcode.WHILE and any(map(_has_spmd, instr.called_computations())):
            return self.loop(instr, ops)
        annotation = self.annotation(instr)
        if instr.opcode is Opcode.CUSTOM_CALL and instr.attrs.get("custom_call_target") in (
            _SHARDING_TARGETS
        ):
            value = ops[0]  # with_sharding_constraint: the value, laid out as annotated
        else:
            value = self.partition(instr, ops)
        if annotation is not None and isinstance(instr.shape, ArrayShape):
            wanted = self._even(annotation, instr)
            local = self.e.reshard(value.local, value.sharding, wanted, instr.shape, replaces=True)
            value = PValue(local, wanted)
        return value

    def manual(self, instr: Instruction, ops: list[PValue], target: str | None) -> PValue:
        """shard_map's per-device code (XLA's form): ``@SPMDFullToShardShape`` takes a value
        laid out as its operand's sharding to the local tile, ops on manual values are already
        per-device code (copied as they are), ``@SPMDShardToFullShape`` makes the local piece
        the tile of a global value laid out as its sharding."""
        if target == "SPMDFullToShardShape":
            (v,) = ops
            if tuple(v.local.shape.dims) != tuple(instr.shape.dims):
                raise InvalidArgument(
                    f"custom-call {instr.name}: the manual region takes {instr.shape}, but the "
                    f"operand laid out as {v.sharding} has tiles {v.local.shape}"
                )
            return PValue(v.local, _MANUAL)
        if target == "SPMDShardToFullShape":
            (v,) = ops
            wanted = sharding_of(instr) or _REPLICATED
            wanted = self._checked(wanted, instr.shape, instr)
            if tuple(local_shape(instr.shape, wanted).dims) != tuple(v.local.shape.dims):
                raise InvalidArgument(
                    f"custom-call {instr.name}: {instr.shape} laid out as {wanted} has tiles "
                    f"{local_shape(instr.shape, wanted)}, but the manual region gives "
                    f"{v.local.shape}"
                )
            return PValue(v.local, wanted)
        if target == "Sharding" and (sharding_of(instr) or _REPLICATED).is_manual:
            return PValue(ops[0].local, _MANUAL)
        for v, operand in zip(ops, instr.operands, strict=True):
            if _has_tiled(v.sharding):  # replicated values are the same whole value per device
                raise Unimplemented(
                    f"{instr.opcode.value} {instr.name} mixes shard_map's per-device values with "
                    f"{operand.name}, laid out automatically as {v.sharding}; pass it into the "
                    f"shard_map instead"
                )
        clone = instr.clone_with(operands=[v.local for v in ops])
        clone.extra_attrs.pop("sharding", None)
        return PValue(self.e.b._append(clone), _MANUAL)

    def loop(self, instr: Instruction, ops: list[PValue]) -> PValue:
        """A while whose body or condition has shardings or shard_maps (a pmap inside a
        fori_loop): the loop state is replicated and both computations are partitioned too,
        their parameters replicated and their roots resharded back to replicated, so every
        iteration hands the next the layout it expects."""
        (v,) = ops
        state = self._replicate(v, instr.operands[0])
        attrs = dict(instr.attrs)
        for key in ("condition", "body"):
            # joining the module gives the new computation's instructions unique names (the
            # rules' get-tuple-elements are all called "get_tuple_element"), as Builder.op does
            attrs[key] = self.e.b._comp(self.computation(attrs[key]))
        clone = instr.clone_with(operands=[state], attrs=attrs)
        clone.extra_attrs.pop("sharding", None)
        return PValue(self.e.b._append(clone), _REPLICATED)

    def computation(self, comp: Computation) -> Computation:
        """``comp`` partitioned with replicated parameters and a replicated root."""
        builder = self.e.b.sub(comp.name)
        e = SpmdEmitter(builder, self.e.partitions, self.e.replicas)
        e._channels = self.e._channels  # channel ids stay unique across the module
        run = _Run(e, self.report)
        values: dict[Instruction, PValue] = {}
        for param in comp.parameters:
            values[param] = PValue(builder.parameter(param.shape, name=param.name), _REPLICATED)
        for instr in comp.post_order():
            if instr.opcode is not Opcode.PARAMETER:
                values[instr] = run.instruction(instr, [values[o] for o in instr.operands])
        return builder.finish(run._replicate(values[comp.root], comp.root))

    def _replicate(self, v: PValue, global_instr: Instruction) -> Instruction:
        if _has_manual(v.sharding):
            raise Unimplemented(
                f"{global_instr.name} leaves a shard_map's per-device values to a loop's state; "
                "return them through the shard_map's outputs"
            )
        if v.sharding.is_tuple:
            return self._replicate_tuple(v, global_instr)
        return self.e.reshard(v.local, v.sharding, _REPLICATED, global_instr.shape)

    def partition(self, instr: Instruction, ops: list[PValue]) -> PValue:
        fn = RULES.get(instr.opcode)
        if fn is None and instr.is_elementwise and isinstance(instr.shape, ArrayShape):
            fn = elementwise
        if fn is None:
            if any(not v.sharding.is_replicated for v in ops):
                return self.replicated(instr, ops, f"no SPMD rule for {instr.opcode.value}")
            return self.replicated(instr, ops, None)
        mark = len(self.e.b.computation.instructions)
        try:
            value = fn(self.e, instr, ops)
        except CannotPartition as why:
            self.e.rollback(mark)
            return self.replicated(instr, ops, why.reason)
        if isinstance(instr.shape, ArrayShape) and value.local.opcode is instr.opcode:
            set_sharding(value.local, value.sharding)
        return value

    def replicated(self, instr: Instruction, ops: list[PValue], reason: str | None) -> PValue:
        """``instr`` whole on every device, its operands all-gathered first."""
        if reason is not None:
            self.report.replicated.append((instr.name, instr.opcode.value, reason))
        locals_ = [
            self.e.reshard(v.local, v.sharding, _REPLICATED, o.shape)
            if not v.sharding.is_tuple
            else self._replicate_tuple(v, o)
            for v, o in zip(ops, instr.operands, strict=True)
        ]
        clone = instr.clone_with(operands=locals_)
        clone.extra_attrs.pop("sharding", None)
        return PValue(self.e.b._append(clone), _REPLICATED)

    def _replicate_tuple(self, v: PValue, global_instr: Instruction) -> Instruction:
        if not any(x.is_tiled for x in v.sharding.elements):
            return v.local
        b = self.e.b
        parts = []
        for i, (s, shape) in enumerate(
            zip(v.sharding.elements, global_instr.shape.elements, strict=True)
        ):
            part = b.get_tuple_element(v.local, i)
            parts.append(self.e.reshard(part, s, _REPLICATED, shape))
        return b.tuple(parts)

    def output(self, root: Instruction, value: PValue) -> PValue:
        """The root, laid out as its annotation (element by element for a tuple)."""
        wanted = self.annotation(root)
        if wanted is None:
            return value
        if wanted.is_tuple and value.sharding.is_tuple:
            b = self.e.b
            parts, layouts = [], []
            for i, (want, have, shape) in enumerate(
                zip(wanted.elements, value.sharding.elements, root.shape.elements, strict=True)
            ):
                if (
                    isinstance(shape, ArrayShape)
                    and want.is_tiled
                    and not want.evenly_divides(shape.dims)
                ):
                    want = _REPLICATED
                part = b.get_tuple_element(value.local, i)
                parts.append(self.e.reshard(part, have, want, shape))
                layouts.append(want)
            return PValue(b.tuple(parts), HloSharding.tuple_of(layouts))
        return value


def parameter_shardings(module: Module) -> list[HloSharding]:
    """The layouts of a partitioned module's parameters (from its header)."""
    raw = module.attributes.get(PARAMETERS_KEY)
    if raw is None:
        return []
    s = parse_sharding(raw, PARAMETERS_KEY)
    return list(s.elements) if s.is_tuple else [s]


def output_sharding(module: Module) -> HloSharding | None:
    raw = module.attributes.get(OUTPUT_KEY)
    return parse_sharding(raw, OUTPUT_KEY) if raw is not None else None
