"""The reference evaluator: runs a module on NumPy, one registered function per op.

This is the oracle every backend is tested against, so it favours clarity and XLA's exact
semantics; it is still vectorized (whole arrays per op), so it runs real programs in reasonable
time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hlort.errors import Internal, InvalidArgument, Unimplemented
from hlort.interpreter.registry import function_for_instruction
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.shape import ArrayShape, Shape, Token, TokenShape, TupleShape

if TYPE_CHECKING:
    from hlort.interpreter.collective_semantics import Peers


class Evaluator:
    """Evaluates computations. ``check_shapes`` verifies every op's result against its shape.

    ``peers`` are the other copies of the program a collective meets
    (:class:`~hlort.interpreter.collective_semantics.Peers`); without them it runs as one copy.

    Each computation runs its :meth:`~hlort.ir.computation.Computation.execution_order`. The
    order is kept only while one evaluation is in progress (per thread: a loop body runs once
    per trip on one order), since a computation is mutable between evaluations and a
    collected computation's id can be reused; the cache is keyed by the computation itself.
    """

    def __init__(
        self,
        check_shapes: bool = True,
        replica_id: int = 0,
        partition_id: int = 0,
        peers: Peers | None = None,
    ):
        self.check_shapes = check_shapes
        self.replica_id = replica_id
        self.partition_id = partition_id
        self.peers = peers  # the other copies of the program, for collectives (None: one copy)
        self._running = threading.local()  # .orders: the evaluation in progress, or None

    def run(self, module: Module, args: Sequence) -> object:
        """Evaluate the entry computation on ``args`` (arrays or nested tuples)."""
        entry = module.entry
        params = entry.parameters
        if len(args) != len(params):
            raise InvalidArgument(f"{entry.name} takes {len(params)} argument(s), got {len(args)}")
        values = [coerce_argument(a, p.shape, p.name) for a, p in zip(args, params, strict=True)]
        return self.call(entry, values)

    def call(self, comp: Computation, args: Sequence) -> object:
        orders = getattr(self._running, "orders", None)
        if orders is not None:
            return self._call(comp, args, orders)
        self._running.orders = orders = _Orders()
        try:
            return self._call(comp, args, orders)
        finally:
            self._running.orders = None

    def _call(self, comp: Computation, args: Sequence, orders: _Orders) -> object:
        order = orders.of(comp)
        env: dict[Instruction, object] = {}
        outer, self._running.env = getattr(self._running, "env", None), env
        try:
            return self._run_order(order, orders.functions, env, comp, args)
        finally:
            self._running.env = outer

    def value_of(self, instr: Instruction) -> object:
        """The value ``instr`` has in the computation being evaluated (already computed: an
        operand of the running instruction or one of its producers)."""
        return self._running.env[instr]

    def _run_order(
        self, order, functions: dict, env: dict, comp: Computation, args: Sequence
    ) -> object:
        for instr in order:
            if instr.opcode is Opcode.PARAMETER:
                env[instr] = args[instr.parameter_number]
                continue
            fn = functions.get(instr)
            if fn is None:
                fn = functions[instr] = _function(instr)
            result = fn(self, instr, *[env[o] for o in instr.operands])
            if self.check_shapes:
                check_value(result, instr.shape, instr)
            env[instr] = result
        return env[comp.root]


class _Orders:
    """The execution orders of one evaluation, computed once per computation."""

    def __init__(self) -> None:
        self.effects = SideEffects()
        self.orders: dict[Computation, list[Instruction]] = {}
        self.functions: dict[Instruction, object] = {}  # op function per instruction

    def of(self, comp: Computation) -> list[Instruction]:
        order = self.orders.get(comp)
        if order is None:
            order = self.orders[comp] = comp.execution_order(self.effects)
        return order


def _function(instr: Instruction):
    fn = function_for_instruction(instr)  # s4/u4: computed in bytes, wrapped back to 4 bits
    if fn is None:
        raise Unimplemented(f"the interpreter has no function for {instr.opcode.value}")
    return fn


def evaluate(module: Module, args: Sequence = (), **options) -> object:
    """Run ``module`` on the reference interpreter. Returns an array or a tuple of them."""
    return Evaluator(**options).run(module, args)


def coerce_argument(value, shape: Shape, name: str) -> object:
    """Accept a NumPy-compatible argument of exactly ``shape``'s dims and dtype."""
    if isinstance(shape, TupleShape):
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.elements):
            raise InvalidArgument(f"argument {name} must be a tuple of {len(shape.elements)}")
        pairs = zip(value, shape.elements, strict=True)
        return tuple(coerce_argument(v, s, name) for v, s in pairs)
    if isinstance(shape, TokenShape):
        return Token()
    arr = np.asarray(value)
    if arr.shape != shape.dims or arr.dtype != shape.dtype.numpy:
        raise InvalidArgument(
            f"argument {name} must be {shape}, got {arr.dtype}{list(arr.shape)}; convert it with "
            f"np.asarray(x, dtype=np.{shape.dtype.numpy.name}) and reshape it"
        )
    return arr


def check_value(value, shape: Shape, instr: Instruction) -> None:
    if isinstance(shape, ArrayShape):
        if (
            not isinstance(value, np.ndarray)
            or value.shape != shape.dims
            or value.dtype != shape.dtype.numpy
        ):
            got = (
                f"{value.dtype}{list(value.shape)}"
                if isinstance(value, np.ndarray)
                else type(value)
            )
            raise Internal(
                f"interpreter bug: {instr.name} ({instr.opcode.value}) gave {got}, expected {shape}"
            )
    elif isinstance(shape, TupleShape):
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise Internal(f"interpreter bug: {instr.name} should give a tuple {shape}")
        for v, s in zip(value, shape.elements, strict=True):
            check_value(v, s, instr)
