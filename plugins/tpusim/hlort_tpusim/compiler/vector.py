"""Vector kernels: elementwise ops, index maps, iota and reductions (and fusions of them).

A kernel walks an iteration space by tiles (see :mod:`hlort_tpusim.index_maps`): the output's
elements for an elementwise root, (kept x reduced) positions of the operand for a reduce. Per
tile it DMAs every source in (double-buffered: tile t+1 loads while tile t computes), runs one
``vloop`` over the tile's (8,128) registers whose body is the expression (one ``v.<op>`` per
elementwise HLO op, registers allocated by liveness), reduces with ``vreduce`` when the root is
a reduce, and DMAs the result out. Broadcast, transpose, reshape, slice and reverse between the
root and a source cost no vector instruction: they become the source DMA's gather descriptor.
Inside a fusion, ops the vector unit cannot fold (a dot, a reduce under a broadcast, a sort)
are materialized in HBM first by their own kernels and read as sources.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from hlort.ir.instruction import Instruction
from hlort.ir.op_def import FusionRole
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.hlo_text import print_hlo
from hlort.shape import ArrayShape, TupleShape
from hlort_tpusim.compiler.hostop import computation_module
from hlort_tpusim.compiler.lowering_context import Context, Ref
from hlort_tpusim.isa import Instr, var
from hlort_tpusim.program import Kernel, Loop, VmemDecl

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering

MAX_TILE_ELEMENTS = 128 * 1024
_NOT_VECTOR = frozenset({Opcode.MAP, Opcode.BITCAST_CONVERT})
INDEX_MAP_OPS = frozenset(
    op for op in Opcode if op.info.fusion is FusionRole.INDEX_MAP and op.info.arity == 1
)
"""The op table's index maps of one operand; a vector kernel computes each (``_step``)."""


def _array(shape) -> bool:
    return isinstance(shape, ArrayShape)


def is_vector_op(instr: Instruction) -> bool:
    """Ops a vector kernel can compute from its sources without materializing anything."""
    op = instr.opcode
    if not _array(instr.shape) or op in _NOT_VECTOR:
        return op is Opcode.BITCAST_CONVERT and instr.is_elementwise
    if instr.is_elementwise:
        return all(_array(o.shape) for o in instr.operands)
    return op in INDEX_MAP_OPS or op is Opcode.IOTA


def supports(instr: Instruction) -> bool:
    """Whether ``instr`` can be the root of a vector kernel."""
    if instr.opcode is Opcode.REDUCE:
        shapes = instr.shape.elements if isinstance(instr.shape, TupleShape) else (instr.shape,)
        n = len(shapes)
        operand = instr.operands[0].shape
        return all(_array(s) for s in shapes) and operand.size > 0 and n >= 1
    return is_vector_op(instr) and instr.shape.size > 0


def _step(instr: Instruction) -> dict:
    op = instr.opcode
    operand = instr.operands[0].shape
    if op is Opcode.BROADCAST:
        return {"op": "broadcast", "dims": list(instr.attrs["dimensions"])}
    if op is Opcode.TRANSPOSE:
        return {"op": "transpose", "perm": list(instr.attrs["dimensions"])}
    if op is Opcode.RESHAPE:
        return {"op": "reshape", "out": list(instr.shape.dims), "operand": list(operand.dims)}
    if op is Opcode.SLICE:
        spec = instr.attrs["slice"]
        return {
            "op": "slice",
            "starts": [s.start for s in spec],
            "strides": [s.stride for s in spec],
        }
    if op is Opcode.REVERSE:
        return {
            "op": "reverse",
            "dims": list(instr.attrs["dimensions"]),
            "sizes": list(operand.dims),
        }
    raise ValueError(op)


def _encode_attrs(instr: Instruction) -> dict:
    out = {}
    for key, value in instr.attrs.items():
        out[key] = getattr(value, "value", value)
    return out


class _Region:
    """Builds one vector kernel: sources, the register program and the VMEM plan."""

    def __init__(self, lw: Lowering, ctx: Context, space: dict):
        self.lw = lw
        self.ctx = ctx
        self.space = space
        self.sources: list[tuple[str, int, list]] = []  # (vmem name, buffer, maps)
        self._source_keys: dict[tuple, str] = {}
        self.code: list[Instr] = []
        self._memo: dict[tuple, str] = {}
        self._n = 0

    def _vreg(self) -> str:
        self._n += 1
        return f"%v{self._n}"

    def source(self, buf: int, maps: list) -> str:
        key = (buf, json.dumps(maps))
        name = self._source_keys.get(key)
        if name is None:
            name = f"in{len(self.sources)}"
            self._source_keys[key] = name
            self.sources.append((name, buf, maps))
        return name

    def load(self, buf: int, maps: list) -> str:
        name = self.source(buf, maps)
        reg = self._vreg()
        self.code.append(Instr("vld", {"dst": reg, "src": name, "slot": var("t", mod=2)}))
        return reg

    def emit(self, instr: Instruction, maps: list, root: bool = False) -> str:
        key = (instr, json.dumps(maps))
        reg = self._memo.get(key)
        if reg is None:
            reg = self._emit(instr, maps, root)
            self._memo[key] = reg
        return reg

    def _emit(self, instr: Instruction, maps: list, root: bool) -> str:
        op = instr.opcode
        expand = root or self.ctx.fused
        if op is Opcode.CONSTANT and instr.shape.rank == 0:
            reg = self._vreg()
            lit = instr.literal
            value = lit.item() if lit.dtype.kind != "V" else float(lit)
            self.code.append(
                Instr("vsplat", {"dst": reg, "value": value, "dtype": instr.shape.dtype.name})
            )
            return reg
        if op is Opcode.PARAMETER and self.ctx.fused:
            return self.load(self.ctx.params[instr.parameter_number], maps)
        if not expand or not is_vector_op(instr):
            return self.load(self.lw.value(self.ctx, instr), maps)
        if op is Opcode.IOTA:
            reg = self._vreg()
            self.code.append(
                Instr(
                    "viota",
                    {
                        "dst": reg,
                        "space": self.space,
                        "maps": maps,
                        "dim": instr.attrs["iota_dimension"],
                        "dtype": instr.shape.dtype.name,
                    },
                )
            )
            return reg
        if op in INDEX_MAP_OPS:
            return self._operand(instr.operands[0], maps + [_step(instr)])
        srcs = [self._operand(o, maps) for o in instr.operands]
        reg = self._vreg()
        self.code.append(
            Instr(
                "v.op",
                {
                    "op": op.value,
                    "dst": reg,
                    "srcs": srcs,
                    "dtype": instr.shape.dtype.name,
                    "src_dtypes": [o.shape.dtype.name for o in instr.operands],
                    "attrs": _encode_attrs(instr),
                },
            )
        )
        return reg

    def _operand(self, operand: Instruction, maps: list) -> str:
        if not self.ctx.fused:
            if operand.opcode is Opcode.CONSTANT and operand.shape.rank == 0:
                return self.emit(operand, maps)
            return self.load(self.lw.value(self.ctx, operand), maps)
        return self.emit(operand, maps)


def _allocate_registers(code: list[Instr], limit: int) -> list[Instr] | None:
    """Rename virtual registers to r0..r{limit-1} by liveness; None when more are needed."""
    last: dict[str, int] = {}
    for i, ins in enumerate(code):
        for src in ins.args.get("srcs", []) + ([ins.args["src"]] if ins.op == "vst" else []):
            last[src] = i
    free = [f"r{i}" for i in reversed(range(limit))]
    mapping: dict[str, str] = {}
    out = []
    for i, ins in enumerate(code):
        args = dict(ins.args)
        if "srcs" in args:
            args["srcs"] = [mapping[s] for s in args["srcs"]]
        if ins.op == "vst":
            args["src"] = mapping[args["src"]]
        for s in set(ins.args.get("srcs", []) + ([ins.args["src"]] if ins.op == "vst" else [])):
            if last.get(s) == i and s in mapping:
                free.append(mapping[s])
        if "dst" in args and ins.op != "vst":
            if not free:
                return None
            mapping[ins.args["dst"]] = free.pop()
            args["dst"] = mapping[ins.args["dst"]]
        out.append(Instr(ins.op, args))
    return out


def _tile_for(lw: Lowering, total: int, itemsizes: list[int]) -> int:
    tile = min(total, MAX_TILE_ELEMENTS)
    while tile > 1024 and 2 * tile * sum(itemsizes) > lw.config.vmem_bytes:
        tile //= 2
    return max(1, tile)


def lower_region(lw: Lowering, ctx: Context, root: Instruction) -> Ref:
    from hlort_tpusim.compiler.hostop import lower_hostop

    if root.opcode is Opcode.REDUCE:
        result = _lower_reduce(lw, ctx, root)
    else:
        result = _lower_elementwise(lw, ctx, root)
    return result if result is not None else lower_hostop(lw, ctx, root)


def _plan_vmem(lw: Lowering, region: _Region, tile_dims: tuple, extra: list[VmemDecl]) -> list:
    decls = []
    offset = 0
    for name, buf, _maps in region.sources:
        dt = lw.buffer_shape(buf).dtype.name
        decls.append(VmemDecl(name, dt, tile_dims, 2, offset))
        offset += decls[-1].nbytes
    for d in extra:
        d.offset = offset
        decls.append(d)
        offset += d.nbytes
    return decls


def _source_dmas(region: _Region, index_now: list, index_next: list, last: int) -> tuple:
    """Prologue loads of tile 0 and the prefetch of tile t+1 for every source (2 sems each)."""
    prologue, prefetch, sems = [], [], []
    for k, (name, buf, maps) in enumerate(region.sources):
        access0 = {
            "kind": "gather",
            "space": region.space,
            "maps": maps,
            "index": [0] * len(index_now),
        }
        prologue.append(
            Instr("dma.in", {"dst": name, "slot": 0, "src": buf, "access": access0, "sem": 2 * k})
        )
        prefetch.append(
            Instr(
                "dma.in",
                {
                    "dst": name,
                    "slot": var("t", add=1, mod=2),
                    "src": buf,
                    "access": dict(access0, index=index_next),
                    "sem": dict(var("t", add=1, mod=2), base=2 * k),
                },
                when={"var": "t", "add": 1, "lt": last},
            )
        )
        sems.append(dict(var("t", mod=2), base=2 * k))
    return prologue, prefetch, sems


def _lower_elementwise(lw: Lowering, ctx: Context, root: Instruction):
    space = {"kind": "flat", "dims": list(root.shape.dims), "tile": 0}
    region = _Region(lw, ctx, space)
    out_reg = region.emit(root, [], root=True)
    return _finish_flat(
        lw, region, out_reg, root.shape, root.name, f"{root.opcode.value} -> {root.shape}"
    )


def _finish_flat(
    lw: Lowering, region: _Region, out_reg: str, shape: ArrayShape, name: str, title: str
) -> int | None:
    total = shape.size
    space = region.space
    itemsizes = [lw.buffer_shape(b).dtype.itemsize for _, b, _ in region.sources]
    tile = _tile_for(lw, total, itemsizes + [shape.dtype.itemsize])
    space["tile"] = tile
    ntiles = -(-total // tile)
    code = region.code + [Instr("vst", {"dst": "out", "slot": var("t", mod=2), "src": out_reg})]
    code = _allocate_registers(code, lw.config.num_vregs)
    if code is None:
        return None
    out = lw.new_buffer(shape, name)
    decls = _plan_vmem(lw, region, (tile,), [VmemDecl("out", shape.dtype.name, (tile,), 2, 0)])
    prologue, prefetch, sems = _source_dmas(region, [var("t")], [var("t", add=1)], ntiles)
    vregs = -(-tile * max(4, shape.dtype.itemsize) // 4 // lw.config.vreg_elements)
    loop_body = (
        prefetch
        + ([Instr("wait", {"sems": sems})] if sems else [])
        + [
            Instr("vloop", {"count": vregs, "space": space, "index": [var("t")]}, body=code),
            Instr(
                "dma.out",
                {
                    "dst": out,
                    "access": {"kind": "flat", "tile": tile, "index": var("t")},
                    "src": "out",
                    "slot": var("t", mod=2),
                    "sem": 2 * len(sems) + 1,
                },
            ),
        ]
    )
    kernel = Kernel(
        lw.kernel_name(name),
        f"{title} ({ntiles} tiles of {tile})",
        decls,
        prologue + [Loop("t", ntiles, loop_body)],
    )
    lw.emit(kernel)
    return out


def _lower_reduce(lw: Lowering, ctx: Context, root: Instruction):
    n = len(root.operands) // 2
    operand = root.operands[0].shape
    dims = sorted(root.attrs["dimensions"])
    kept = math.prod(d for i, d in enumerate(operand.dims) if i not in dims)
    red = math.prod(operand.dims[d] for d in dims)
    if kept == 0 or red == 0:
        return None
    out_shapes = list(root.shape.elements) if isinstance(root.shape, TupleShape) else [root.shape]
    space = {"kind": "reduce", "dims": list(operand.dims), "reduce": dims, "tile": [0, 0]}
    region = _Region(lw, ctx, space)
    regs = [
        region.emit(o, [], root=ctx.fused) if ctx.fused else region.load(lw.value(ctx, o), [])
        for o in root.operands[:n]
    ]
    inits = [lw.value(ctx, o) for o in root.operands[n:]]
    itemsizes = [lw.buffer_shape(b).dtype.itemsize for _, b, _ in region.sources]
    itemsizes += [o.shape.dtype.itemsize for o in root.operands[:n]]
    budget = _tile_for(lw, kept * red, itemsizes)
    tk = min(red, max(1, budget // min(kept, 8)))
    to = min(kept, max(1, budget // tk))
    space["tile"] = [to, tk]
    no, nk = -(-kept // to), -(-red // tk)
    t_o, t_k = var("t", div=nk), var("t", mod=nk)
    for ins in region.code:
        if ins.op == "viota":
            ins.args["space"] = space
    # the reduce's inputs: straight from a source slot, or computed by a vloop into x<i>
    code = list(region.code)
    red_srcs, extra = [], []
    for i, (reg, o) in enumerate(zip(regs, root.operands[:n], strict=True)):
        ins = next((c for c in code if c.args.get("dst") == reg and c.op == "vld"), None)
        if ins is not None and len(code) == n and all(c.op == "vld" for c in code):
            red_srcs.append(ins.args["src"])
            continue
        name = f"x{i}"
        extra.append(VmemDecl(name, o.shape.dtype.name, (to, tk), 2, 0))
        code.append(Instr("vst", {"dst": name, "slot": var("t", mod=2), "src": reg}))
        red_srcs.append(name)
    if len(red_srcs) == n and not extra:
        code = []
    accs = [VmemDecl(f"acc{i}", s.dtype.name, (to,), 1, 0) for i, s in enumerate(out_shapes)]
    decls = _plan_vmem(lw, region, (to, tk), extra + accs)
    if code:
        code = _allocate_registers(code, lw.config.num_vregs)
        if code is None:
            return None
    red_module = computation_module(root.attrs["to_apply"], f"reducer_{root.name}")
    hlo_index = lw.add_module(red_module, print_hlo(red_module))
    outs = [lw.new_buffer(s, root.name) for s in out_shapes]
    ntiles = no * nk
    prologue, prefetch, sems = _source_dmas(
        region, [t_o, t_k], [var("t", add=1, div=nk), var("t", add=1, mod=nk)], ntiles
    )
    body = prefetch + ([Instr("wait", {"sems": sems})] if sems else [])
    if code:
        vregs = -(-to * tk // lw.config.vreg_elements)
        body.append(
            Instr("vloop", {"count": vregs, "space": space, "index": [t_o, t_k]}, body=code)
        )
    body.append(
        Instr(
            "vreduce",
            {
                "dsts": [a.name for a in accs],
                "srcs": red_srcs,
                "slot": var("t", mod=2),
                "inits": inits,
                "reducer": hlo_index,
                "first": t_k,
            },
        )
    )
    done = {"var": "t", "mod": nk, "gt": nk - 2}
    for i, buf in enumerate(outs):
        body.append(
            Instr(
                "dma.out",
                {
                    "dst": buf,
                    "access": {"kind": "flat", "tile": to, "index": t_o},
                    "src": accs[i].name,
                    "slot": 0,
                    "sem": 2 * len(sems) + 1,
                },
                when=done,
            )
        )
    kernel = Kernel(
        lw.kernel_name(root),
        f"reduce {operand} dims={dims} -> {root.shape} ({no}x{nk} tiles of {to}x{tk})",
        decls,
        prologue + [Loop("t", ntiles, body)],
    )
    lw.emit(kernel)
    return outs[0] if len(outs) == 1 else tuple(outs)


def emit_gather_copy(lw: Lowering, name: str, src: int, shape: ArrayShape, maps: list) -> int:
    """A kernel writing ``shape`` whose element at each index is ``src`` at ``maps(index)``."""

    region = _Region(
        lw, Context(None, [], fused=False), {"kind": "flat", "dims": list(shape.dims), "tile": 0}
    )
    reg = region.load(src, maps)
    return _finish_flat(lw, region, reg, shape, name, f"gather copy -> {shape}")
