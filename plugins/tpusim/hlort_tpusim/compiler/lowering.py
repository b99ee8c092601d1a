"""The compiler's driver: walks the optimized module and picks a lowering per instruction.

Every HLO value lives in an HBM buffer of the program (a tuple value is a tuple of buffers).
``value(ctx, instr)`` materializes one instruction in its context, memoized, choosing:

* structure (parameter, constant, tuple, get-tuple-element, reshape as a view, call) -> no code;
* dot and convolution -> the matrix unit (:mod:`.matmul`, :mod:`.convolution`);
* elementwise ops, broadcast/transpose/slice/reverse, iota, reduce, and loop/input fusions of
  them -> vector kernels (:mod:`.vector`); inside a fusion the producers are folded into the
  kernel (that is what fusion buys), outside one every operand is read from HBM;
* while and conditional -> structured scalar control flow over sub-programs;
* collectives -> ``ici.collective`` over the inter-chip links (:mod:`.collective`);
* anything else -> a host-assisted ``hostop`` (:mod:`.hostop`).

Afterwards temporaries get ``hbm.free`` after their last use, and every output is a fresh
buffer owned by the caller.
"""

from __future__ import annotations

from hlort.errors import Unimplemented
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort_tpusim.compiler import collective, control_flow, convolution, hostop, matmul, vector
from hlort_tpusim.compiler.lowering_context import TOKEN, Context, Ref, flatten
from hlort_tpusim.isa import Instr
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.program import Kernel, Loop, Program, Switch, While


class Lowering:
    def __init__(self, module: Module, config: MachineConfig):
        self.module = module
        self.config = config
        self.program = Program(module.name)
        self.modules: dict[int, Module] = {}  # hlo index -> module (not serialized)
        self.body: list = self.program.body
        self._names: dict[str, int] = {}

    # -- helpers used by the op-family lowerings ----------------------------------------------
    def emit(self, node) -> None:
        self.body.append(node)

    def new_buffer(self, shape: ArrayShape, label: str = "") -> int:
        """A temporary for a kernel's result, allocated right here in program order."""
        decl = self.program.add_buffer(shape, "temp", label=label)
        self.emit(Instr("hbm.alloc", {"buf": decl.id}))
        return decl.id

    def kernel_name(self, instr: Instruction | str) -> str:
        base = instr if isinstance(instr, str) else instr.name
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}#{n}"

    def add_module(self, module: Module, text: str) -> int:
        index = self.program.add_hlo(text)
        self.modules[index] = module
        return index

    def buffer_shape(self, buf: int) -> ArrayShape:
        return self.program.buffers[buf].shape

    # -- entry --------------------------------------------------------------------------------
    def lower(self) -> Program:
        entry = self.module.entry
        params = [self._bind_parameter(p.shape, f"param {p.name}") for p in entry.parameters]
        result = self.computation(Context(entry, params, fused=False))
        outputs = []
        seen: set[int] = set()
        for buf in flatten(result):
            decl = self.program.buffers[buf]
            if decl.kind == "temp" and buf not in seen:
                decl.kind = "out"
            else:
                copy = self.program.add_buffer(decl.shape, "out", label="output copy")
                self.emit(Instr("hbm.alloc", {"buf": copy.id}))
                self.emit(Instr("dma.copy", {"dst": copy.id, "src": buf}))
                buf = copy.id
            seen.add(buf)
            outputs.append(buf)
        for i, buf in enumerate(outputs):
            self.program.buffers[buf].index = i
        self.program.outputs = outputs
        insert_frees(self.program)
        return self.program

    def _bind_parameter(self, shape: Shape, label: str) -> Ref:
        if isinstance(shape, TupleShape):
            return tuple(self._bind_parameter(s, label) for s in shape.elements)
        if not isinstance(shape, ArrayShape):
            return TOKEN
        decl = self.program.add_buffer(shape, "arg", index=len(self.program.params), label=label)
        self.program.params.append(decl.id)
        return decl.id

    # -- values -------------------------------------------------------------------------------
    def computation(self, ctx: Context) -> Ref:
        """The value of ``ctx.comp``'s root, then its side-effecting instructions (direct or
        through a called computation) in execution order: they run even when the root does not
        use them, as in the reference interpreter."""
        result = self.value(ctx, ctx.comp.root)
        effects = SideEffects()
        for instr in ctx.comp.execution_order(effects):
            if effects.of(instr) and instr not in ctx.memo:
                self.value(ctx, instr)
        return result

    def value(self, ctx: Context, instr: Instruction) -> Ref:
        ref = ctx.memo.get(instr)
        if ref is None:
            ref = self._lower(ctx, instr)
            ctx.memo[instr] = ref
        return ref

    def _lower(self, ctx: Context, instr: Instruction) -> Ref:
        op = instr.opcode
        if op is Opcode.PARAMETER:
            return ctx.params[instr.parameter_number]
        if op is Opcode.CONSTANT:
            decl = self.program.add_buffer(instr.shape, "const", label=instr.name)
            self.program.constants[decl.id] = instr.literal
            return decl.id
        if op is Opcode.TUPLE:
            return tuple(self.value(ctx, o) for o in instr.operands)
        if op is Opcode.GET_TUPLE_ELEMENT:
            return self.value(ctx, instr.operands[0])[instr.attrs["index"]]
        if op is Opcode.OPTIMIZATION_BARRIER:
            return self.value(ctx, instr.operands[0])
        if op is Opcode.AFTER_ALL or not isinstance(instr.shape, (ArrayShape, TupleShape)):
            return TOKEN
        if op is Opcode.RESHAPE:
            src = self.value(ctx, instr.operands[0])
            view = self.program.add_buffer(instr.shape, "view", view_of=src, label=instr.name)
            return view.id
        if op in (Opcode.FUSION, Opcode.CALL):
            comp = instr.attrs["calls" if op is Opcode.FUSION else "to_apply"]
            args = [self.value(ctx, o) for o in instr.operands]
            return self.computation(Context(comp, args, fused=op is Opcode.FUSION))
        args_ok = all(isinstance(o.shape, ArrayShape) for o in instr.operands)
        if op is Opcode.DOT and args_ok and matmul.supports(instr):
            return matmul.lower_dot(self, ctx, instr)
        if op is Opcode.CONVOLUTION and args_ok and convolution.supports(instr):
            return convolution.lower_convolution(self, ctx, instr)
        if collective.supports(instr):
            return collective.lower_collective(self, ctx, instr)
        if op in (Opcode.WHILE, Opcode.CONDITIONAL) and control_flow.supports(instr):
            return control_flow.lower(self, ctx, instr)
        if vector.supports(instr):
            return vector.lower_region(self, ctx, instr)
        return hostop.lower_hostop(self, ctx, instr)

    # -- nested code ------------------------------------------------------------------------
    def nested(self, nodes: list):
        """Context manager-free helper: emit into ``nodes`` until :meth:`restore`."""
        saved = self.body
        self.body = nodes
        return saved

    def restore(self, saved: list) -> None:
        self.body = saved


def _uses(node, program: Program) -> set[int]:
    """Base buffers an instruction or node reads or writes (views resolved)."""
    out: set[int] = set()

    def add(value) -> None:
        if isinstance(value, int):
            out.add(program.base_of(value))

    if isinstance(node, Instr):
        a = node.args
        for key in ("src", "dst", "buf"):
            if key in a and not isinstance(a[key], str):
                add(a[key])
        for key in ("ins", "outs", "inits"):
            for b in a.get(key, ()):
                add(b)
        for sub in node.body or ():
            out |= _uses(sub, program)
    elif isinstance(node, (Kernel, Loop)):
        for sub in node.body:
            out |= _uses(sub, program)
    elif isinstance(node, While):
        for sub in node.cond + node.body:
            out |= _uses(sub, program)
    elif isinstance(node, Switch):
        for branch in node.branches:
            for sub in branch:
                out |= _uses(sub, program)
    return out


def insert_frees(program: Program) -> None:
    """Free each temporary after the last node of its own body list that touches it.

    A temporary allocated inside a ``while`` body or a ``switch`` branch is freed inside it, so
    every iteration allocates and frees its own; uses in nested nodes count for the whole node.
    """
    temps = {b for b, d in program.buffers.items() if d.kind == "temp"}
    program.body = _free_in(program.body, temps, program)


def _free_in(nodes: list, temps: set[int], program: Program) -> list:
    for node in nodes:
        if isinstance(node, While):
            node.cond = _free_in(node.cond, temps, program)
            node.body = _free_in(node.body, temps, program)
        elif isinstance(node, Switch):
            node.branches = [_free_in(b, temps, program) for b in node.branches]
    here = {
        n.args["buf"]
        for n in nodes
        if isinstance(n, Instr) and n.op == "hbm.alloc" and n.args["buf"] in temps
    }
    last: dict[int, int] = {}
    for i, node in enumerate(nodes):
        for b in _uses(node, program) & here:
            last[b] = i
    after: dict[int, list[int]] = {}
    for b, i in last.items():
        after.setdefault(i, []).append(b)
    body = []
    for i, node in enumerate(nodes):
        body.append(node)
        for b in sorted(after.get(i, ())):
            body.append(Instr("hbm.free", {"buf": b}))
    return body


def unsupported(instr: Instruction, why: str) -> Unimplemented:
    return Unimplemented(f"tpusim cannot compile {instr.name} ({instr.opcode.value}): {why}")
