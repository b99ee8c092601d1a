"""The reference evaluator: runs a module on NumPy, one registered function per op.

This is the oracle every backend is tested against, so it favours clarity and XLA's exact
semantics; it is still vectorized (whole arrays per op), so it runs real programs in reasonable
time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.errors import Internal, InvalidArgument, Unimplemented
from hlort.interpreter.registry import function_for
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, Shape, Token, TokenShape, TupleShape


class Evaluator:
    """Evaluates computations. ``check_shapes`` verifies every op's result against its shape."""

    def __init__(self, check_shapes: bool = True, replica_id: int = 0, partition_id: int = 0):
        self.check_shapes = check_shapes
        self.replica_id = replica_id
        self.partition_id = partition_id
        self._orders: dict[int, list[Instruction]] = {}

    def run(self, module: Module, args: Sequence) -> object:
        """Evaluate the entry computation on ``args`` (arrays or nested tuples)."""
        entry = module.entry
        params = entry.parameters
        if len(args) != len(params):
            raise InvalidArgument(
                f"{entry.name} takes {len(params)} argument(s), got {len(args)}"
            )
        values = [coerce_argument(a, p.shape, p.name) for a, p in zip(args, params, strict=True)]
        return self.call(entry, values)

    def call(self, comp: Computation, args: Sequence) -> object:
        order = self._orders.get(id(comp))
        if order is None:
            order = comp.reachable_from_root()
            # keep side-effecting instructions even when the root does not use them
            live = {id(i) for i in order}
            extra = [i for i in comp.post_order() if id(i) not in live and i.has_side_effect]
            if extra:  # ... and what they use
                while extra:
                    node = extra.pop()
                    if id(node) not in live:
                        live.add(id(node))
                        extra.extend(node.operands)
                order = [i for i in comp.post_order() if id(i) in live]
            self._orders[id(comp)] = order
        env: dict[int, object] = {}
        for instr in order:
            if instr.opcode is Opcode.PARAMETER:
                env[id(instr)] = args[instr.parameter_number]
                continue
            fn = function_for(instr.opcode)
            if fn is None:
                raise Unimplemented(f"the interpreter has no function for {instr.opcode.value}")
            result = fn(self, instr, *[env[id(o)] for o in instr.operands])
            if self.check_shapes:
                check_value(result, instr.shape, instr)
            env[id(instr)] = result
        return env[id(comp.root)]


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
            raise Internal(f"interpreter bug: {instr.name} ({instr.opcode.value}) gave {got}, "
                           f"expected {shape}")  # fmt: skip
    elif isinstance(shape, TupleShape):
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise Internal(f"interpreter bug: {instr.name} should give a tuple {shape}")
        for v, s in zip(value, shape.elements, strict=True):
            check_value(v, s, instr)
