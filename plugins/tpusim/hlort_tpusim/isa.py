"""tpusim's instruction set: the opcodes, their classes (the unit they run on) and their fields.

A program is data (see :mod:`hlort_tpusim.program`); each instruction is ``Instr(op, args)``
where ``args`` holds JSON-ready values only. Loop-dependent values (a tile index, a double-buffer
slot) are small expressions over loop variables: an int, or ``{"var": "k", "add": 1, "mod": 2}``
meaning ``(%k + 1) % 2`` (in general ``((%v * mul + add) // div) % mod + base``). An instruction
may carry ``when`` (``{"var": "k", "add": 1, "lt": 4}``)
and then only executes while that holds: the prefetch of tile k+1 stops at the last tile.

Classes, for the profile's breakdown:

======== ====================================================================================
DMA      ``dma.in`` / ``dma.out`` (HBM <-> VMEM by tiles), ``dma.copy`` (HBM -> HBM),
         ``dma.im2col`` (strided gather of convolution windows into a patch matrix)
SYNC     ``wait``: the scalar core blocks until DMAs signalled their semaphores
MXU      ``mxu.push`` (weights into the systolic array), ``mxu.matmul`` (stream the lhs rows),
         ``mxu.pop`` (results out, accumulated into a VMEM tile by the vector unit)
VPU      ``vloop`` over (8,128) registers with ``vld``/``vst``/``v.<op>``/``vsplat``/``viota``
         inside; ``vreduce`` (a reduction along a tile's minor axis, with the XLU)
SCALAR   ``sld`` (a scalar from HBM into a scalar register), the structured control flow nodes
         ``while``/``switch``
HOSTOP   ``hostop``: an op with no unit mapping (sort, scatter, fft...), executed by the reference
         interpreter's function for it on the whole operands, charged per element on the
         scalar unit plus its HBM traffic. Named so a profile shows what did not use the units.
ICI      ``ici.collective``: a collective (all-reduce, all-gather, reduce-scatter, all-to-all,
         collective-permute, collective-broadcast) between chips over the inter-chip links,
         timed by the ring link model (``ring_model``)
MEM      ``hbm.alloc`` / ``hbm.free``: placement of temporaries and outputs in HBM (free)
======== ====================================================================================
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hlort.ir.op_def import FusionRole
from hlort.ir.opcodes import Opcode

Expr = int | dict


class InstrClass(enum.Enum):
    DMA = "DMA"
    SYNC = "SYNC"
    MXU = "MXU"
    VPU = "VPU"
    SCALAR = "SCALAR"
    HOSTOP = "HOSTOP"
    ICI = "ICI"
    MEM = "MEM"


@dataclass(frozen=True)
class OpSpec:
    """What the verifier and printer know about an opcode: its class and its required fields."""

    cls: InstrClass
    fields: tuple[str, ...]
    in_vloop: bool = False  # only legal inside a ``vloop`` body


OPS: dict[str, OpSpec] = {
    "hbm.alloc": OpSpec(InstrClass.MEM, ("buf",)),
    "hbm.free": OpSpec(InstrClass.MEM, ("buf",)),
    "dma.in": OpSpec(InstrClass.DMA, ("dst", "slot", "src", "access", "sem")),
    "dma.out": OpSpec(InstrClass.DMA, ("dst", "access", "src", "slot", "sem")),
    "dma.copy": OpSpec(InstrClass.DMA, ("dst", "src")),
    "dma.im2col": OpSpec(InstrClass.DMA, ("dst", "src", "conv")),
    "wait": OpSpec(InstrClass.SYNC, ("sems",)),
    "mxu.push": OpSpec(InstrClass.MXU, ("src", "slot", "precision")),
    "mxu.matmul": OpSpec(InstrClass.MXU, ("src", "slot", "precision")),
    "mxu.pop": OpSpec(InstrClass.MXU, ("dst", "accumulate")),
    "vloop": OpSpec(InstrClass.VPU, ("count",)),
    "vld": OpSpec(InstrClass.VPU, ("dst", "src", "slot"), in_vloop=True),
    "vst": OpSpec(InstrClass.VPU, ("dst", "slot", "src"), in_vloop=True),
    "v.op": OpSpec(InstrClass.VPU, ("op", "dst", "srcs", "dtype"), in_vloop=True),
    "vsplat": OpSpec(InstrClass.VPU, ("dst", "value", "dtype"), in_vloop=True),
    "viota": OpSpec(InstrClass.VPU, ("dst", "space", "maps", "dim", "dtype"), in_vloop=True),
    "vreduce": OpSpec(InstrClass.VPU, ("dsts", "srcs", "slot", "inits", "reducer", "first")),
    "sld": OpSpec(InstrClass.SCALAR, ("dst", "src")),
    "hostop": OpSpec(InstrClass.HOSTOP, ("hlo", "ins", "outs")),
    "ici.collective": OpSpec(InstrClass.ICI, ("opcode", "hlo", "ins", "outs")),
}

TRANSCENDENTAL_OPS = frozenset(
    op.value for op in Opcode if op.info.expensive and op.info.fusion is FusionRole.ELEMENTWISE
)
"""The ``v.op`` ops the VPU runs at transcendental speed: the op table's expensive elementwise
ops (transcendentals, divide, remainder)."""


@dataclass
class Instr:
    """One instruction: an opcode of :data:`OPS`, its fields, an optional predicate."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)
    when: dict | None = None
    body: list[Instr] | None = None  # vloop only

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    @property
    def cls(self) -> InstrClass:
        return OPS[self.op].cls


# -- expressions ------------------------------------------------------------------------------
def var(
    name: str, add: int = 0, mod: int | None = None, mul: int = 1, div: int | None = None
) -> dict:
    """``((%name * mul + add) // div) % mod``, omitting the parts left at their defaults."""
    out: dict[str, Any] = {"var": name}
    if mul != 1:
        out["mul"] = mul
    if add:
        out["add"] = add
    if div is not None and div != 1:
        out["div"] = div
    if mod is not None:
        out["mod"] = mod
    return out


def evaluate(expr: Expr, env: Mapping[str, int]) -> int:
    """Value of an expression under the loop variables ``env``."""
    if isinstance(expr, int):
        return expr
    value = env[expr["var"]] * expr.get("mul", 1) + expr.get("add", 0)
    if "div" in expr:
        value //= expr["div"]
    mod = expr.get("mod")
    if mod:
        value %= mod
    return value + expr.get("base", 0)


def holds(when: dict | None, env: Mapping[str, int]) -> bool:
    """Whether a predicate (``when``) holds; None always holds."""
    if when is None:
        return True
    value = evaluate(when, env)
    if "lt" in when and not value < when["lt"]:
        return False
    if "gt" in when and not value > when["gt"]:
        return False
    return True


def expr_text(expr: Expr) -> str:
    if isinstance(expr, int):
        return str(expr)
    text = f"%{expr['var']}"
    if expr.get("mul", 1) != 1:
        text = f"{text}*{expr['mul']}"
    if expr.get("add"):
        text = f"({text}{expr['add']:+d})"
    if expr.get("div"):
        text = f"{text}/{expr['div']}"
    if expr.get("mod"):
        text = f"{text}%{expr['mod']}"
    if expr.get("base"):
        text = f"{expr['base']}+{text}"
    return text


def when_text(when: dict | None) -> str:
    if when is None:
        return ""
    text = expr_text({k: v for k, v in when.items() if k not in ("lt", "gt")})  # type: ignore
    if "lt" in when:
        text += f"<{when['lt']}"
    if "gt" in when:
        text += f">{when['gt']}"
    return f"@({text}) "
