"""Compiled control flow: while, conditional and call run nested Programs of thunks.

Every computation control flow calls (loop conditions and bodies, branches, call targets,
recursively) is compiled like the entry: its kernels go into the module's one kernel module,
and its other instructions become thunks. A while runs its condition and body programs once
per trip on the Python path, or, when ``native_while`` planned it, as one native driver call.
Semantics are the interpreter's (``hlort.interpreter.ops.control_flow``): a pred selector picks
[true, false]; an integer index outside [0, N) runs the last branch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

if TYPE_CHECKING:  # native_while.py (BLAS, small gemm) is imported when a while is native
    from hlort_cpu.native_while import NativeWhile
    from hlort_cpu.thunks import Program  # imported while LLVM compiles (jit.AFTER_LLVM)

CONTROL_FLOW_OPS = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL})

Order = Callable[[Computation], list[Instruction]]


def program_orders(
    entry: Computation, order_of: Order
) -> dict[Computation, tuple[Computation, list]]:
    """The entry and every computation its live control flow calls, with their instruction
    orders: entry first, then depth first in instruction order (deterministic, so kernel names
    and the compile cache key's symbol list are too). Keyed by the computation."""
    found: dict[Computation, tuple[Computation, list]] = {}
    stack = [entry]
    while stack:
        comp = stack.pop()
        if comp in found:
            continue
        order = order_of(comp)
        found[comp] = (comp, order)
        callees = [
            c for i in order if i.opcode in CONTROL_FLOW_OPS for c in i.called_computations()
        ]
        stack.extend(reversed(callees))
    return found


class ProgramSet:
    """What all programs of one module share, and the memo of nested programs.

    ``build(comp, order, programs)`` is the compiler's builder; the counters aggregate what was
    compiled and what fell back over every computation, each counted once.
    """

    def __init__(
        self,
        orders: dict[Computation, tuple[Computation, list]],
        kernels: dict,
        natives: dict[Instruction, tuple[NativeWhile, object]],
        evaluator,
        build: Callable,
        label: Callable[[Instruction], str],
    ):
        self.orders, self.kernels, self.natives = orders, kernels, natives
        self.evaluator, self.build, self.label = evaluator, build, label
        self.compiled: Counter = Counter()
        self.fallback: Counter = Counter()
        self._programs: dict[Computation, Program] = {}
        self._counted: set[Instruction] = set()

    def program(self, comp: Computation) -> Program:
        program = self._programs.get(comp)
        if program is None:
            program = self.build(comp, self.orders[comp][1], self)
            self._programs[comp] = program
        return program

    def built(self) -> list[Program]:
        """Every program built so far (the entry's and those of the computations it calls)."""
        return list(self._programs.values())

    def constant_arrays(self) -> list:
        """The constants of every program built so far (an output may be one of them)."""
        return [c for p in self._programs.values() for _, c in p.constants]

    def control_flow_thunk(self, instr: Instruction, ins: list[int], out: int):
        op = instr.opcode
        if op is Opcode.WHILE:
            native = self.natives.get(instr)
            if native is not None:
                self._count_native(native[0])
                self.compiled["while (native)"] += 1
                from hlort_cpu.native_while import NativeWhileThunk

                return NativeWhileThunk(native[0], native[1], ins, out)
            cond = self.program(instr.attrs["condition"])
            body = self.program(instr.attrs["body"])
            self.compiled["while"] += 1
            return WhileThunk(cond, body, ins[0], out)
        if op is Opcode.CONDITIONAL:
            branches = [self.program(c) for c in instr.attrs["branch_computations"]]
            self.compiled["conditional"] += 1
            return ConditionalThunk(branches, ins, out)
        callee = self.program(instr.attrs["to_apply"])
        self.compiled["call"] += 1
        return CallThunk(callee, ins, out)

    def _count_native(self, native: NativeWhile) -> None:
        for instr, label in native.steps:
            if instr not in self._counted:
                self._counted.add(instr)
                self.compiled[label or self.label(instr)] += 1


class WhileThunk:
    """The Python path: one condition and one body program call per trip."""

    def __init__(self, cond: Program, body: Program, state: int, out: int):
        self.cond, self.body, self.state, self.out = cond, body, state, out

    def __call__(self, env) -> None:
        cond, body = self.cond.call, self.body.call
        state = env[self.state]
        while cond((state,)):
            state = body((state,))
        env[self.out] = state


class ConditionalThunk:
    def __init__(self, branches: list[Program], ins: list[int], out: int):
        self.branches = [b.call for b in branches]
        self.selector, self.operands, self.out = ins[0], ins[1:], out

    def __call__(self, env) -> None:
        selector = env[self.selector]
        if selector.dtype == bool:
            index = 0 if selector else 1
        else:
            index = int(selector)
            if not 0 <= index < len(self.branches):
                index = len(self.branches) - 1
        env[self.out] = self.branches[index]((env[self.operands[index]],))


class CallThunk:
    def __init__(self, callee: Program, ins: list[int], out: int):
        self.callee, self.ins, self.out = callee.call, ins, out

    def __call__(self, env) -> None:
        env[self.out] = self.callee(tuple(env[i] for i in self.ins))
