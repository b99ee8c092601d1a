"""Executes a tpusim program: NumPy per tile instruction for the data, the timing model for cycles.

Functional state: HBM (allocations of the chip's allocator), VMEM tile slots of the running
kernel, vector registers, scalar registers, the MXU's weights and result. Every instruction acts
on whole tiles; a ``vloop`` (one iteration per (8,128) register of a tile, no loop-carried
values, which the verifier checks) runs in bulk: each of its instructions once, on the whole
tile. Temporaries are freed even when an instruction fails, so a failed launch leaves the
chip's other buffers as they were.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.errors import Internal
from hlort.interpreter.array_calls import call_on_arrays
from hlort.interpreter.evaluator import Evaluator
from hlort.interpreter.registry import function_for, function_for_instruction
from hlort.ir import attributes as A
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.hlo_text import parse_hlo
from hlort.shape import ArrayShape, Token, TokenShape, TupleShape
from hlort_tpusim import index_maps
from hlort_tpusim.collective_executors import CollectiveExecutors
from hlort_tpusim.executors import EXECUTORS, executes
from hlort_tpusim.hbm_allocator import HbmAllocation, HbmAllocator
from hlort_tpusim.isa import Instr, InstrClass, evaluate, holds
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.profile import Profile
from hlort_tpusim.program import Kernel, Loop, Program, Switch, While
from hlort_tpusim.timing import TimingState
from hlort_tpusim.transfer_matrix_executors import TransferAndMatrixExecutors, vregs_of

_ATTR_ENUMS = {"direction": A.ComparisonDirection, "comparison_type": A.ComparisonType}


def decode_attrs(attrs: dict | None) -> dict:
    return {k: _ATTR_ENUMS[k](v) if k in _ATTR_ENUMS else v for k, v in (attrs or {}).items()}


class Simulator(TransferAndMatrixExecutors, CollectiveExecutors):
    """Runs programs on one chip (its allocator); one launch at a time."""

    def __init__(
        self,
        config: MachineConfig,
        allocator: HbmAllocator,
        chip: int = 0,
        replica: int = 0,
        partition: int = 0,
        modules: dict[int, Any] | None = None,
        bulk: bool = True,
        launch: Any = None,
    ):
        self.config = config
        self.allocator = allocator
        self.chip = chip
        self.replica = replica
        self.partition = partition
        self._modules: dict[int, Any] = modules if modules is not None else {}
        self._proxies: dict[tuple, object] = {}
        self.bulk = bulk
        self.dry = False
        self.launch = launch  # the LaunchContext of an execution (collectives), or None

    # -- entry point ------------------------------------------------------------------------
    def run(self, program: Program, args: list[HbmAllocation]) -> tuple[list, Profile]:
        self.program = program
        self.timing = TimingState(self.config)
        self.ev = Evaluator(replica_id=self.replica, partition_id=self.partition)
        self.allocs: dict[int, HbmAllocation] = {}
        self.owned: list[int] = []
        self.arrays: dict[int, np.ndarray] = {}
        self.vmem: dict[str, list] = {}
        self.decls: dict = {}
        self.valid: dict[tuple, tuple] = {}
        self.sregs: dict[str, int] = {}
        self.by_kernel: dict[str, float] = {}
        self.collectives: list[dict] = []
        self._canon: dict[tuple, np.ndarray] = {}
        self.mxu_w: Any = None
        self.mxu_out: np.ndarray | None = None
        self.mxu_valid = (0, 0)
        for buf, alloc in zip(program.params, args, strict=True):
            self.allocs[buf] = alloc
        ok = False
        try:
            for buf, value in program.constants.items():
                self._alloc(buf)
                np.copyto(self.arrays[buf], value.reshape(self.arrays[buf].shape))
            self.env: dict[str, int] = {}
            self._run_nodes(program.body)
            outputs = [self.allocs[b] for b in program.outputs]
            ok = True
        finally:
            keep = {self.allocs[b] for b in program.outputs if ok and b in self.allocs}
            for buf in self.owned:
                alloc = self.allocs.get(buf)
                if alloc is not None and not alloc.freed and alloc not in keep:
                    self.allocator.free(alloc)
        profile = Profile.from_timing(self.timing, self.config, self.by_kernel, self.collectives)
        return outputs, profile

    # -- memory -----------------------------------------------------------------------------
    def _alloc(self, buf: int) -> None:
        decl = self.program.buffers[buf]
        alloc = self.allocator.allocate(decl.shape, f"%b{buf} {decl.label}".strip())
        self.allocs[buf] = alloc
        self.owned.append(buf)
        self.arrays.pop(buf, None)
        self.arrays[buf] = alloc.data

    def array(self, buf: int) -> np.ndarray:
        arr = self.arrays.get(buf)
        if arr is not None:
            return arr
        decl = self.program.buffers[buf]
        base = self.program.base_of(buf)
        alloc = self.allocs.get(base)
        if alloc is None or alloc.freed:
            raise Internal(f"tpusim program {self.program.name} reads %b{buf} before it exists")
        arr = alloc.view_as(decl.shape) if base != buf else alloc.data
        if base == buf and arr.shape != decl.dims:
            arr = alloc.view_as(decl.shape)
        self.arrays[buf] = arr
        return arr

    def _hkey(self, buf: int) -> tuple:
        return ("hbm", self.program.base_of(buf))

    # -- control ----------------------------------------------------------------------------
    def _run_nodes(self, nodes: list) -> None:
        for node in nodes:
            if isinstance(node, Instr):
                if holds(node.when, self.env):
                    EXECUTORS[node.op](self, node, node.args)
            elif isinstance(node, Loop):
                for i in range(node.count):
                    self.env[node.var] = i
                    self._run_nodes(node.body)
                self.env.pop(node.var, None)
            elif isinstance(node, Kernel):
                self._run_kernel(node)
            elif isinstance(node, While):
                while True:
                    self._run_nodes(node.cond)
                    if not self.sregs[node.pred]:
                        break
                    self._run_nodes(node.body)
            elif isinstance(node, Switch):
                value = self.sregs[node.index]
                if node.is_pred:
                    branch = 0 if value else 1
                else:
                    n = len(node.branches)
                    branch = value if 0 <= value < n else n - 1
                self.timing.tick(InstrClass.SCALAR)
                self._run_nodes(node.branches[branch])
            else:  # pragma: no cover - the verifier rejects these
                raise Internal(f"unknown program node {node!r}")

    def _run_kernel(self, kernel: Kernel) -> None:
        saved = self.vmem, self.decls
        self.vmem = {v.name: [None] * v.slots for v in kernel.vmem}
        self.decls = {v.name: v for v in kernel.vmem}
        self._canon = {}
        before = self.timing.end
        try:
            if self.bulk and kernel.bulk is not None:
                self._bulk(kernel.bulk)
                self.dry = True
            self._run_nodes(kernel.body)
        finally:
            self.dry = False
            self.vmem, self.decls = saved
            self._canon = {}
        self.by_kernel[kernel.name] = self.by_kernel.get(kernel.name, 0.0) + max(
            0.0, self.timing.end - before
        )

    # -- memory instructions ----------------------------------------------------------------
    @executes("hbm.alloc")
    def _op_hbm_alloc(self, ins: Instr, a: dict) -> None:
        self._alloc(a["buf"])
        self.timing.count(InstrClass.MEM)

    @executes("hbm.free")
    def _op_hbm_free(self, ins: Instr, a: dict) -> None:
        buf = a["buf"]
        alloc = self.allocs.pop(buf)
        self.allocator.free(alloc)
        for key in [k for k in self.arrays if self.program.base_of(k) == buf]:
            del self.arrays[key]
        self.timing.count(InstrClass.MEM)

    # -- VPU --------------------------------------------------------------------------------
    @executes("vloop")
    def _op_vloop(self, ins: Instr, a: dict) -> None:
        space = a["space"]
        index = [evaluate(e, self.env) for e in a["index"]]
        shape = index_maps.tile_shape(space, index) if space else None
        regs: dict[str, np.ndarray] = {}
        reads, writes, alu = [], [], []
        loads = stores = 0
        width = 4
        if self.dry:
            return self._dry_vloop(ins, shape)
        with np.errstate(all="ignore"):
            for sub in ins.body:
                b = sub.args
                if sub.op == "vld":
                    slot = evaluate(b["slot"], self.env)
                    regs[b["dst"]] = self.vmem[b["src"]][slot]
                    reads.append(("vmem", b["src"], slot))
                    loads += 1
                    if shape is None:
                        shape = regs[b["dst"]].shape
                elif sub.op == "vst":
                    slot = evaluate(b["slot"], self.env)
                    value = regs[b["src"]]
                    if shape is not None and np.shape(value) != shape:
                        value = np.broadcast_to(value, shape)
                    self.vmem[b["dst"]][slot] = np.ascontiguousarray(value)
                    writes.append(("vmem", b["dst"], slot))
                    stores += 1
                elif sub.op == "v.op":
                    regs[b["dst"]] = self._vector_op(sub, b, [regs[r] for r in b["srcs"]])
                    alu.append(b["op"])
                    width = max(width, np.dtype(regs[b["dst"]].dtype).itemsize)
                elif sub.op == "vsplat":
                    dt = dtypes.from_hlo_name(b["dtype"]).numpy
                    regs[b["dst"]] = np.asarray(np.array(b["value"]).astype(dt))
                elif sub.op == "viota":
                    dt = dtypes.from_hlo_name(b["dtype"]).numpy
                    regs[b["dst"]] = index_maps.iota_values(space, b["maps"], index, b["dim"], dt)
                    alu.append("iota")
                else:  # pragma: no cover - verifier
                    raise Internal(f"{sub.op} is not a vector-loop instruction")
        elements = math.prod(shape) if shape else 1
        vregs = max(1, -(-elements * width // 4 // self.config.vreg_elements))
        self.timing.vloop(vregs, loads, stores, alu, reads, writes)

    def _dry_vloop(self, ins: Instr, shape) -> None:
        reads, writes, alu, width = [], [], [], 4
        for sub in ins.body:
            b = sub.args
            if sub.op == "vld":
                slot = evaluate(b["slot"], self.env)
                reads.append(("vmem", b["src"], slot))
                shape = shape or self.decls[b["src"]].dims
            elif sub.op == "vst":
                writes.append(("vmem", b["dst"], evaluate(b["slot"], self.env)))
            elif sub.op == "v.op":
                alu.append(b["op"])
                width = max(width, dtypes.from_hlo_name(b["dtype"]).itemsize)
        vregs = max(1, -(-math.prod(shape or (1,)) * width // 4 // self.config.vreg_elements))
        self.timing.vloop(vregs, len(reads), len(writes), alu, reads, writes)

    def _vector_op(self, sub: Instr, b: dict, values: list) -> np.ndarray:
        opcode = Opcode(b["op"])
        shapes = tuple(np.shape(v) for v in values)
        # by id: Instr is an eq dataclass (equal instructions compare equal, unhashable); the
        # cache lives in this one-launch Simulator, while the program holds its Instrs
        key = (id(sub), shapes)
        cached = self._proxies.get(key)
        if cached is None:
            out_shape = np.broadcast_shapes(*shapes) if shapes else ()
            operands = [
                Instruction(
                    Opcode.PARAMETER, ArrayShape(dtypes.from_hlo_name(dt), s), parameter_number=i
                )
                for i, (dt, s) in enumerate(zip(b["src_dtypes"], shapes, strict=True))
            ]
            proxy = Instruction(
                opcode,
                ArrayShape(dtypes.from_hlo_name(b["dtype"]), out_shape),
                operands,
                decode_attrs(b.get("attrs")),
            )
            cached = self._proxies[key] = (proxy, function_for_instruction(proxy))
        proxy, fn = cached
        if len({s for s in shapes}) > 1:
            values = list(np.broadcast_arrays(*values))
        return fn(self.ev, proxy, *values)

    @executes("vreduce")
    def _op_vreduce(self, ins: Instr, a: dict) -> None:
        slot = evaluate(a["slot"], self.env)
        reducer = self._module(a["reducer"]).entry
        tiles = [self.vmem[s][slot] for s in a["srcs"]]
        inits = [np.asarray(self.array(b)) for b in a["inits"]]
        rows = tiles[0].shape[0]
        shapes = [ArrayShape(dtypes.from_numpy(t.dtype), (rows,)) for t in tiles]
        # by id, as in _vector_op: Instr is an eq dataclass
        key = ("reduce", id(ins), rows, tiles[0].shape[1])
        proxy = self._proxies.get(key)
        if proxy is None:
            ops = [
                Instruction(
                    Opcode.PARAMETER,
                    ArrayShape(dtypes.from_numpy(v.dtype), v.shape),
                    parameter_number=i,
                )
                for i, v in enumerate(tiles + inits)
            ]
            shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
            attrs = {"dimensions": (1,), "to_apply": reducer}
            proxy = Instruction(Opcode.REDUCE, shape, ops, attrs)
            self._proxies[key] = proxy
        with np.errstate(all="ignore"):
            partial = function_for(Opcode.REDUCE)(self.ev, proxy, *tiles, *inits)
            parts = list(partial) if isinstance(partial, tuple) else [partial]
            if evaluate(a["first"], self.env) == 0:
                result = parts
            else:
                accs = [self.vmem[d][0] for d in a["dsts"]]
                result = call_on_arrays(self.ev, reducer, accs + parts, (rows,))
        for d, value in zip(a["dsts"], result, strict=True):
            self.vmem[d][0] = np.array(value)
        in_vregs = sum(vregs_of(t.shape, t.dtype, self.config) for t in tiles)
        out_vregs = sum(vregs_of((rows,), t.dtype, self.config) for t in tiles)
        self.timing.vreduce(
            in_vregs,
            out_vregs,
            [("vmem", s, slot) for s in a["srcs"]],
            [("vmem", d, 0) for d in a["dsts"]],
        )

    # -- scalar and host-assisted -------------------------------------------------------------
    @executes("sld")
    def _op_sld(self, ins: Instr, a: dict) -> None:
        value = self.array(a["src"]).reshape(-1)[0]
        self.sregs[a["dst"]] = int(value)
        self.timing.blocking(
            InstrClass.SCALAR,
            self.config.dma_latency,
            [self._hkey(a["src"])],
            [],
            hbm_read=value.nbytes,
        )

    def _module(self, index: int):
        module = self._modules.get(index)
        if module is None:
            module = parse_hlo(self.program.hlo_modules[index], source_name=f"<hlo#{index}>")
            self._modules[index] = module
        return module

    @executes("hostop")
    def _op_hostop(self, ins: Instr, a: dict) -> None:
        module = self._module(a["hlo"])
        leaves = [self.array(b) for b in a["ins"]]
        it = iter(leaves)

        def build(shape):
            if isinstance(shape, TupleShape):
                return tuple(build(s) for s in shape.elements)
            if isinstance(shape, TokenShape):
                return Token()
            return next(it)

        args = [build(p.shape) for p in module.entry.parameters]
        with np.errstate(all="ignore"):
            result = self.ev.run(module, args)
        flat = _flatten(result)
        outs = [self.array(b) for b in a["outs"]]
        if len(flat) != len(outs):
            raise Internal(
                f"hostop {a.get('opcode')} gave {len(flat)} outputs, expected {len(outs)}"
            )
        for dst, value in zip(outs, flat, strict=True):
            np.copyto(dst, np.asarray(value).reshape(dst.shape))
        elements = sum(x.size for x in leaves) + sum(x.size for x in outs)
        nin = sum(x.nbytes for x in leaves)
        nout = sum(x.nbytes for x in outs)
        cycles = (
            elements * self.config.scalar_cycles_per_element
            + (nin + nout) / self.config.hbm_bytes_per_cycle
        )
        self.timing.blocking(
            InstrClass.HOSTOP,
            cycles,
            [self._hkey(b) for b in a["ins"]],
            [self._hkey(b) for b in a["outs"]],
            nin,
            nout,
        )


def _flatten(value) -> list:
    if isinstance(value, tuple):
        out = []
        for v in value:
            out += _flatten(v)
        return out
    if isinstance(value, Token):
        return []
    return [value]
