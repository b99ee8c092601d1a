"""Checks a program before it runs: memory bounds, registers, references, structure.

What it guarantees the simulator: every VMEM buffer of a kernel lies inside on-chip memory and
overlaps no other; every slot index stays within the buffer's slots; every HBM buffer, VMEM
buffer, HLO module and register named exists; vector registers are r0..r{num_vregs-1} and a
``vloop`` body reads no register before writing it (no value carried between iterations), which
is what makes running a ``vloop`` in bulk exact. Violations are INTERNAL errors naming the kernel
and the instruction: they are compiler bugs, not user errors.
"""

from __future__ import annotations

import re

from hlort.errors import Internal
from hlort_tpusim.isa import OPS, Instr
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.program import Kernel, Loop, Program, Switch, VmemDecl, While

_VREG = re.compile(r"^r(\d+)$")
_SREG = re.compile(r"^s(\d+)$")


class _Checker:
    def __init__(self, program: Program, config: MachineConfig):
        self.program = program
        self.config = config
        self.kernel: Kernel | None = None
        self.vmem: dict[str, VmemDecl] = {}

    def fail(self, what: str, ins: Instr | None = None) -> Internal:
        where = f" in kernel {self.kernel.name}" if self.kernel else ""
        at = f" at `{ins.op}`" if ins is not None else ""
        return Internal(f"tpusim program {self.program.name}{where}{at}: {what}")

    def run(self) -> None:
        p = self.program
        for buf in p.params + p.outputs:
            if buf not in p.buffers:
                raise self.fail(f"unknown buffer %b{buf} in params/outputs")
        for decl in p.buffers.values():
            if decl.view_of is not None:
                base = p.buffers.get(decl.view_of)
                if base is None or base.nbytes < decl.nbytes:
                    raise self.fail(f"view %b{decl.id} is larger than its base %b{decl.view_of}")
        for buf in p.outputs:
            if p.buffers[buf].kind != "out":
                raise self.fail(f"output %b{buf} is a {p.buffers[buf].kind} buffer")
        self.nodes(p.body)

    def nodes(self, nodes: list) -> None:
        for node in nodes:
            if isinstance(node, Kernel):
                self.check_kernel(node)
            elif isinstance(node, Loop):
                if node.count < 0:
                    raise self.fail(f"loop %{node.var} has a negative count")
                self.nodes(node.body)
            elif isinstance(node, While):
                self.nodes(node.cond)
                self.sreg(node.pred, None)
                self.nodes(node.body)
            elif isinstance(node, Switch):
                self.sreg(node.index, None)
                for branch in node.branches:
                    self.nodes(branch)
            elif isinstance(node, Instr):
                self.instr(node)
            else:
                raise self.fail(f"unknown node {type(node).__name__}")

    def check_kernel(self, kernel: Kernel) -> None:
        saved = (self.kernel, self.vmem)
        self.kernel, self.vmem = kernel, {}
        spans = []
        for decl in kernel.vmem:
            if decl.name in self.vmem:
                raise self.fail(f"VMEM buffer {decl.name} declared twice")
            end = decl.offset + decl.nbytes
            if decl.offset < 0 or end > self.config.vmem_bytes:
                raise self.fail(
                    f"VMEM buffer {decl.name} [{decl.offset}, {end}) is outside the "
                    f"{self.config.vmem_bytes} bytes of on-chip memory"
                )
            for other, (lo, hi) in spans:
                if decl.offset < hi and lo < end:
                    raise self.fail(f"VMEM buffers {decl.name} and {other} overlap")
            spans.append((decl.name, (decl.offset, end)))
            self.vmem[decl.name] = decl
        self.nodes(kernel.body)
        self.kernel, self.vmem = saved

    def buf(self, buf, ins: Instr) -> None:
        if not isinstance(buf, int) or buf not in self.program.buffers:
            raise self.fail(f"unknown HBM buffer {buf!r}", ins)

    def slot(self, name: str, slot, ins: Instr) -> None:
        decl = self.vmem.get(name)
        if decl is None:
            raise self.fail(f"unknown VMEM buffer {name!r}", ins)
        if isinstance(slot, int):
            bad = not 0 <= slot < decl.slots
        else:
            bad = not slot.get("mod") or slot["mod"] > decl.slots
        if bad:
            raise self.fail(f"slot {slot} out of the {decl.slots} slot(s) of {name}", ins)

    def sreg(self, name: str, ins: Instr | None) -> None:
        m = _SREG.match(name or "")
        if m is None or int(m.group(1)) >= self.config.num_sregs:
            raise self.fail(f"bad scalar register {name!r}", ins)

    def instr(self, ins: Instr, in_vloop: bool = False) -> None:
        spec = OPS.get(ins.op)
        if spec is None:
            raise self.fail(f"unknown opcode {ins.op!r}", ins)
        missing = [f for f in spec.fields if f not in ins.args]
        if missing:
            raise self.fail(f"missing fields {missing}", ins)
        if spec.in_vloop != in_vloop:
            where = "inside" if spec.in_vloop else "outside"
            raise self.fail(f"{ins.op} is only legal {where} a vloop", ins)
        a = ins.args
        op = ins.op
        if op in ("hbm.alloc", "hbm.free"):
            self.buf(a["buf"], ins)
        elif op == "dma.in":
            self.buf(a["src"], ins)
            self.slot(a["dst"], a["slot"], ins)
        elif op == "dma.out":
            self.buf(a["dst"], ins)
            self.slot(a["src"], a["slot"], ins)
        elif op in ("dma.copy", "dma.im2col"):
            self.buf(a["src"], ins)
            self.buf(a["dst"], ins)
        elif op in ("mxu.push", "mxu.matmul"):
            self.slot(a["src"], a["slot"], ins)
        elif op == "mxu.pop":
            self.slot(a["dst"], 0, ins)
        elif op == "vloop":
            self.vloop(ins)
        elif op == "vreduce":
            for s in a["srcs"]:
                self.slot(s, a["slot"], ins)
            for d in a["dsts"]:
                self.slot(d, 0, ins)
            for b in a["inits"]:
                self.buf(b, ins)
            if not 0 <= a["reducer"] < len(self.program.hlo_modules):
                raise self.fail(f"unknown reducer hlo#{a['reducer']}", ins)
        elif op == "sld":
            self.buf(a["src"], ins)
            self.sreg(a["dst"], ins)
        elif op in ("hostop", "ici.collective"):
            for b in a["ins"] + a["outs"]:
                self.buf(b, ins)
            if not 0 <= a["hlo"] < len(self.program.hlo_modules):
                raise self.fail(f"unknown hlo#{a['hlo']}", ins)

    def vloop(self, ins: Instr) -> None:
        written: set[str] = set()
        for sub in ins.body or ():
            self.instr(sub, in_vloop=True)
            a = sub.args
            reads = list(a.get("srcs", [])) + ([a["src"]] if sub.op == "vst" else [])
            for r in reads:
                self.vreg(r, sub)
                if r not in written:
                    raise self.fail(
                        f"register {r} is read before it is written in the vloop "
                        f"(a value carried between iterations)",
                        sub,
                    )
            if sub.op == "vld":
                self.slot(a["src"], a["slot"], sub)
            if sub.op == "vst":
                self.slot(a["dst"], a["slot"], sub)
            else:
                self.vreg(a["dst"], sub)
                written.add(a["dst"])

    def vreg(self, name: str, ins: Instr) -> None:
        m = _VREG.match(name or "")
        if m is None or int(m.group(1)) >= self.config.num_vregs:
            raise self.fail(
                f"bad vector register {name!r} (the machine has r0..r{self.config.num_vregs - 1})",
                ins,
            )


def verify_program(program: Program, config: MachineConfig) -> None:
    """Raise INTERNAL naming the first violation; return None when the program is sound."""
    _Checker(program, config).run()
