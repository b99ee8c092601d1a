"""A tpusim program: HBM buffer table, constants, kernels of instructions; text and bytes forms.

The program is the compiler's output and the simulator's input. It is plain data: ``to_text``
is what ``hlort compile --dump-dir`` writes (``<module>.tpusim.program.txt``) and ``to_bytes`` /
``from_bytes`` (JSON, constants base64) is what a serialized executable carries, so a loaded
executable runs the very program that was compiled.

Structure: ``body`` is a list of nodes run in order: :class:`~hlort_tpusim.isa.Instr`,
:class:`Loop` (a counted scalar loop), :class:`Kernel` (one HLO instruction's code, with its
VMEM allocation table), :class:`While` and :class:`Switch` (structured control flow on a scalar
register).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.errors import DataLoss
from hlort.shape import ArrayShape
from hlort_tpusim.isa import Instr, expr_text, when_text

FORMAT = "tpusim-program/1"


@dataclass
class BufferDecl:
    """An HBM buffer of the program. ``kind``: arg, out, temp, const or view (of ``view_of``)."""

    id: int
    dtype: str
    dims: tuple[int, ...]
    kind: str
    index: int | None = None  # argument / output position
    view_of: int | None = None
    label: str = ""

    @property
    def shape(self) -> ArrayShape:
        return ArrayShape(dtypes.from_hlo_name(self.dtype), self.dims)

    @property
    def nbytes(self) -> int:
        return self.shape.nbytes


@dataclass
class VmemDecl:
    """A VMEM tile buffer of a kernel: ``slots`` copies (2 = double-buffered) at ``offset``."""

    name: str
    dtype: str
    dims: tuple[int, ...]
    slots: int
    offset: int

    @property
    def slot_bytes(self) -> int:
        return ArrayShape(dtypes.from_hlo_name(self.dtype), self.dims).nbytes

    @property
    def nbytes(self) -> int:
        return self.slot_bytes * self.slots


@dataclass
class Loop:
    var: str
    count: int
    body: list = field(default_factory=list)


@dataclass
class Kernel:
    """One HLO instruction's code. ``bulk`` (optional) states what the whole kernel computes
    (e.g. ``{"kind": "matmul", ...}``) so the simulator may compute it in one NumPy call and
    replay the instructions for timing only; the instructions remain the definition."""

    name: str
    hlo: str  # the HLO instruction(s) this kernel computes, for people and profiles
    vmem: list[VmemDecl] = field(default_factory=list)
    body: list = field(default_factory=list)
    bulk: dict | None = None


@dataclass
class While:
    """``cond`` computes a pred into HBM, ``sld`` puts it in ``pred``; ``body`` runs while true."""

    cond: list
    pred: str
    body: list


@dataclass
class Switch:
    """Run ``branches[index]`` (clamped into range, as HLO conditional); ``index`` is a sreg."""

    index: str
    branches: list[list]
    is_pred: bool = False


@dataclass
class Program:
    name: str
    buffers: dict[int, BufferDecl] = field(default_factory=dict)
    constants: dict[int, np.ndarray] = field(default_factory=dict)
    hlo_modules: list[str] = field(default_factory=list)  # hostop / reducer computations
    body: list = field(default_factory=list)
    params: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    # -- building ---------------------------------------------------------------------------
    def add_buffer(self, shape: ArrayShape, kind: str, **kw: Any) -> BufferDecl:
        decl = BufferDecl(len(self.buffers), shape.dtype.name, tuple(shape.dims), kind, **kw)
        self.buffers[decl.id] = decl
        return decl

    def add_hlo(self, text: str) -> int:
        if text in self.hlo_modules:
            return self.hlo_modules.index(text)
        self.hlo_modules.append(text)
        return len(self.hlo_modules) - 1

    def base_of(self, buf: int) -> int:
        while self.buffers[buf].view_of is not None:
            buf = self.buffers[buf].view_of
        return buf

    def kernels(self) -> list[Kernel]:
        out: list[Kernel] = []

        def walk(nodes: list) -> None:
            for node in nodes:
                if isinstance(node, Kernel):
                    out.append(node)
                    walk(node.body)
                elif isinstance(node, Loop):
                    walk(node.body)
                elif isinstance(node, While):
                    walk(node.cond)
                    walk(node.body)
                elif isinstance(node, Switch):
                    for branch in node.branches:
                        walk(branch)

        walk(self.body)
        return out

    # -- text -------------------------------------------------------------------------------
    def to_text(self) -> str:
        lines = [f"tpusim program {self.name}", "buffers:"]
        for decl in self.buffers.values():
            where = ""
            if decl.kind in ("arg", "out"):
                where = f" {decl.index}"
            elif decl.kind == "view":
                where = f" of %b{decl.view_of}"
            label = f"  ; {decl.label}" if decl.label else ""
            lines.append(f"  %b{decl.id} = {decl.kind}{where} {decl.shape}{label}")
        lines.append(f"params: {', '.join(f'%b{p}' for p in self.params) or '(none)'}")
        lines.append(f"outputs: {', '.join(f'%b{o}' for o in self.outputs) or '(none)'}")
        for i, text in enumerate(self.hlo_modules):
            first = text.strip().splitlines()[0] if text.strip() else ""
            lines.append(f"hlo #{i}: {first}")
        lines.append("code:")
        _print_nodes(self.body, lines, 1)
        return "\n".join(lines) + "\n"

    # -- bytes ------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "name": self.name,
            "buffers": [_buffer_json(b) for b in self.buffers.values()],
            "constants": {str(k): _array_json(v) for k, v in self.constants.items()},
            "hlo_modules": list(self.hlo_modules),
            "body": [_node_json(n) for n in self.body],
            "params": list(self.params),
            "outputs": list(self.outputs),
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, doc: dict) -> Program:
        if doc.get("format") != FORMAT:
            raise DataLoss(f"not a {FORMAT} program (format {doc.get('format')!r})")
        prog = cls(doc["name"])
        for b in doc["buffers"]:
            decl = BufferDecl(
                b["id"],
                b["dtype"],
                tuple(b["dims"]),
                b["kind"],
                b.get("index"),
                b.get("view_of"),
                b.get("label", ""),
            )
            prog.buffers[decl.id] = decl
        prog.constants = {int(k): _array_from(v) for k, v in doc["constants"].items()}
        prog.hlo_modules = list(doc["hlo_modules"])
        prog.body = [_node_from(n) for n in doc["body"]]
        prog.params = list(doc["params"])
        prog.outputs = list(doc["outputs"])
        return prog

    @classmethod
    def from_bytes(cls, data: bytes) -> Program:
        try:
            doc = json.loads(data.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise DataLoss(f"tpusim program is not valid JSON: {exc}") from None
        return cls.from_json(doc)


# -- printing -----------------------------------------------------------------------------------
def _print_nodes(nodes: list, lines: list[str], depth: int) -> None:
    pad = "  " * depth
    for node in nodes:
        if isinstance(node, Kernel):
            lines.append(f"{pad}kernel {node.name}  ; {node.hlo}")
            if node.bulk:
                lines.append(
                    f"{pad}  ; bulk: {node.bulk['kind']} (simulated in one step, timed per tile)"
                )
            for v in node.vmem:
                dims = ",".join(map(str, v.dims))
                lines.append(
                    f"{pad}  vmem {v.name}[{v.slots}] {v.dtype}[{dims}]"
                    f" @{v.offset:#x} ({v.nbytes} bytes)"
                )
            _print_nodes(node.body, lines, depth + 1)
        elif isinstance(node, Loop):
            lines.append(f"{pad}loop %{node.var} = 0 to {node.count}")
            _print_nodes(node.body, lines, depth + 1)
        elif isinstance(node, While):
            lines.append(f"{pad}while {{")
            _print_nodes(node.cond, lines, depth + 1)
            lines.append(f"{pad}}} if {node.pred} do {{")
            _print_nodes(node.body, lines, depth + 1)
            lines.append(f"{pad}}}")
        elif isinstance(node, Switch):
            note = " (pred: 0=true, 1=false)" if node.is_pred else ""
            lines.append(f"{pad}switch {node.index}{note}")
            for i, branch in enumerate(node.branches):
                lines.append(f"{pad}case {i}:")
                _print_nodes(branch, lines, depth + 1)
        else:
            lines.append(pad + instr_text(node))
            if node.body is not None:
                _print_nodes(node.body, lines, depth + 1)


def _slot(name: str, slot) -> str:
    return f"{name}[{expr_text(slot)}]"


def access_text(access: dict) -> str:
    kind = access["kind"]
    if kind == "flat":
        t = access["tile"]
        return f"flat[{expr_text(access['index'])}*{t}:+{t}]"
    if kind == "block":
        tr, tc = access["tile"]
        b, r, c = (expr_text(e) for e in access["index"])
        return f"block[{b}, {r}*{tr}:+{tr}, {c}*{tc}:+{tc}] view{access['perm']}"
    if kind == "gather":
        space = access["space"]
        idx = ", ".join(expr_text(e) for e in access["index"])
        maps = " . ".join(m["op"] for m in access["maps"]) or "identity"
        return f"gather[{space['kind']} tile {space['tile']} at ({idx}) via {maps}]"
    return str(access)


def instr_text(ins: Instr) -> str:
    a = ins.args
    pred = when_text(ins.when)
    op = ins.op
    if op in ("hbm.alloc", "hbm.free"):
        text = f"{op} %b{a['buf']}"
    elif op == "dma.in":
        text = f"dma.in {_slot(a['dst'], a['slot'])} <- %b{a['src']} {access_text(a['access'])}"
        text += f" sem{expr_text(a['sem'])}"
    elif op == "dma.out":
        text = f"dma.out %b{a['dst']} {access_text(a['access'])} <- {_slot(a['src'], a['slot'])}"
        text += f" sem{expr_text(a['sem'])}"
    elif op == "dma.copy":
        text = f"dma.copy %b{a['dst']} <- %b{a['src']}"
    elif op == "dma.im2col":
        text = f"dma.im2col %b{a['dst']} <- %b{a['src']} windows={a['conv']['window_sizes']}"
    elif op == "wait":
        text = "wait " + ", ".join(f"sem{expr_text(s)}" for s in a["sems"])
    elif op in ("mxu.push", "mxu.matmul"):
        text = f"{op} {_slot(a['src'], a['slot'])} precision={a['precision']}"
        if op == "mxu.matmul":
            text += f" blocks={a.get('blocks')} rows={a.get('rows')}"
    elif op == "mxu.pop":
        acc = a["accumulate"]
        text = (
            f"mxu.pop {a['dst']} {'+=' if acc == 1 else '='} result"
            if isinstance(acc, int)
            else f"mxu.pop {a['dst']} (+= if {expr_text(acc)}>0) result"
        )
    elif op == "vloop":
        text = f"vloop {a['count']} vregs"
    elif op == "vld":
        text = f"vld {a['dst']} <- {_slot(a['src'], a['slot'])}"
    elif op == "vst":
        text = f"vst {_slot(a['dst'], a['slot'])} <- {a['src']}"
    elif op == "v.op":
        attrs = a.get("attrs") or {}
        extra = "".join(f" {k}={v}" for k, v in attrs.items())
        text = f"v.{a['op']}.{a['dtype']} {a['dst']} <- {', '.join(a['srcs'])}{extra}"
    elif op == "vsplat":
        text = f"vsplat.{a['dtype']} {a['dst']} <- {a['value']!r}"
    elif op == "viota":
        text = f"viota.{a['dtype']} {a['dst']} dim={a['dim']} space={a['space']['kind']}"
    elif op == "vreduce":
        srcs = ", ".join(_slot(s, a["slot"]) for s in a["srcs"])
        text = (
            f"vreduce {', '.join(a['dsts'])} <- {srcs} reducer=hlo#{a['reducer']} init={a['inits']}"
        )
    elif op == "sld":
        text = f"sld {a['dst']} <- %b{a['src']}"
    elif op in ("hostop", "ici.collective"):
        text = (
            f"{op} {a.get('opcode', '?')} hlo#{a['hlo']} "
            f"({', '.join(f'%b{b}' for b in a['ins'])}) -> "
            f"({', '.join(f'%b{b}' for b in a['outs'])})"
        )
    else:
        text = f"{op} {a}"
    return pred + text


# -- JSON -------------------------------------------------------------------------------------
def _buffer_json(b: BufferDecl) -> dict:
    return {
        "id": b.id,
        "dtype": b.dtype,
        "dims": list(b.dims),
        "kind": b.kind,
        "index": b.index,
        "view_of": b.view_of,
        "label": b.label,
    }


def _array_json(a: np.ndarray) -> dict:
    dt = dtypes.from_numpy(a.dtype)
    data = np.ascontiguousarray(a).tobytes()
    return {"dtype": dt.name, "dims": list(a.shape), "data": base64.b64encode(data).decode()}


def _array_from(doc: dict) -> np.ndarray:
    dt = dtypes.from_hlo_name(doc["dtype"])
    raw = base64.b64decode(doc["data"])
    return np.frombuffer(raw, dtype=dt.numpy).reshape(doc["dims"]).copy()


def _plain(value: Any) -> Any:
    """Instruction arguments as JSON can hold them: a complex scalar (a complex splat or
    reduction init) becomes ``{"complex": [re, im]}``."""
    if isinstance(value, (complex, np.complexfloating)):
        return {"complex": [float(value.real), float(value.imag)]}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _unplain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"complex"}:
            re_part, im_part = value["complex"]
            return complex(re_part, im_part)
        return {k: _unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    return value


def _node_json(node) -> dict:
    if isinstance(node, Kernel):
        return {
            "node": "kernel",
            "name": node.name,
            "hlo": node.hlo,
            "bulk": node.bulk,
            "vmem": [[v.name, v.dtype, list(v.dims), v.slots, v.offset] for v in node.vmem],
            "body": [_node_json(n) for n in node.body],
        }
    if isinstance(node, Loop):
        return {
            "node": "loop",
            "var": node.var,
            "count": node.count,
            "body": [_node_json(n) for n in node.body],
        }
    if isinstance(node, While):
        return {
            "node": "while",
            "pred": node.pred,
            "cond": [_node_json(n) for n in node.cond],
            "body": [_node_json(n) for n in node.body],
        }
    if isinstance(node, Switch):
        return {
            "node": "switch",
            "index": node.index,
            "is_pred": node.is_pred,
            "branches": [[_node_json(n) for n in b] for b in node.branches],
        }
    doc: dict[str, Any] = {"node": "instr", "op": node.op, "args": _plain(node.args)}
    if node.when is not None:
        doc["when"] = node.when
    if node.body is not None:
        doc["body"] = [_node_json(n) for n in node.body]
    return doc


def _node_from(doc: dict):
    kind = doc["node"]
    if kind == "kernel":
        vmem = [VmemDecl(n, d, tuple(dims), s, o) for n, d, dims, s, o in doc["vmem"]]
        return Kernel(
            doc["name"], doc["hlo"], vmem, [_node_from(n) for n in doc["body"]], doc.get("bulk")
        )
    if kind == "loop":
        return Loop(doc["var"], doc["count"], [_node_from(n) for n in doc["body"]])
    if kind == "while":
        return While(
            [_node_from(n) for n in doc["cond"]], doc["pred"], [_node_from(n) for n in doc["body"]]
        )
    if kind == "switch":
        return Switch(
            doc["index"],
            [[_node_from(n) for n in b] for b in doc["branches"]],
            doc.get("is_pred", False),
        )
    body = doc.get("body")
    return Instr(
        doc["op"],
        _unplain(doc["args"]),
        doc.get("when"),
        [_node_from(n) for n in body] if body is not None else None,
    )
