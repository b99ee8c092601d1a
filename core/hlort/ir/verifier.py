"""The verifier: a module is well formed before any pass or backend sees it.

Checks: every instruction's attributes are in its op's schema, with values of the schema's
types (:mod:`hlort.ir.op_def_checks`); every instruction's shape equals what its shape rule
gives; called computations have the signatures their callers need (checked by the shape rules);
names are unique; operands live in the same computation; the graph is acyclic; parameters are
numbered 0..n-1; the entry exists; zero-element shapes have a NumPy form.
Errors are INVALID_ARGUMENT naming the computation and the instruction.
"""

from __future__ import annotations

import math

from hlort.errors import HlortError, Internal, InvalidArgument, Unimplemented
from hlort.ir.collective_groups import check_module_collectives
from hlort.ir.computation import Computation
from hlort.ir.module import Module
from hlort.ir.op_def_checks import check_attributes
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape
from hlort.ir.traversal import describe_cycle, find_cycle
from hlort.shape import ArrayShape

_NUMPY_MAX_BYTES = 2**63 - 1


def verify_module(module: Module) -> None:
    if module.entry is None:
        raise InvalidArgument(f"module {module.name} has no entry computation")
    if all(c is not module.entry for c in module.computations):
        raise InvalidArgument(
            f"entry computation {module.entry.name} is not in module {module.name}"
        )
    names: dict[str, str] = {}
    comp_names: set[str] = set()
    for comp in module.computations:
        if comp.name in comp_names:
            raise InvalidArgument(
                f"module {module.name}: computation name {comp.name!r} is used twice"
            )
        comp_names.add(comp.name)
        for instr in comp.instructions:
            if instr.name in names:
                raise InvalidArgument(
                    f"instruction name {instr.name!r} is used in both {names[instr.name]} and "
                    f"{comp.name}; names must be unique in a module"
                )
            names[instr.name] = comp.name
    in_module = set(module.computations)
    for comp in module.computations:
        verify_computation(comp)
        for callee in comp.called_computations():
            if callee not in in_module:
                raise InvalidArgument(
                    f"computation {comp.name} calls {callee.name}, which is not in module "
                    f"{module.name}; add it with module.add_computation"
                )
    _check_no_recursion(module)
    check_module_collectives(module)


def verify_computation(comp: Computation) -> None:
    if comp.root is None:
        raise InvalidArgument(f"computation {comp.name} has no ROOT instruction")
    members = set(comp.instructions)
    if comp.root not in members:
        raise InvalidArgument(f"computation {comp.name}: ROOT {comp.root.name} is not in it")
    numbers = sorted(p.parameter_number for p in comp.parameters)
    if numbers != list(range(len(numbers))):
        raise InvalidArgument(
            f"computation {comp.name}: parameters are numbered {numbers}; they must be "
            f"0..{len(numbers) - 1}"
        )
    for instr in comp.instructions:
        for op in instr.operands:
            if op not in members:
                raise InvalidArgument(
                    f"computation {comp.name}: operand {op.name} of {instr.name} is not in the "
                    f"same computation"
                )
    _check_acyclic(comp)
    for instr in comp.instructions:
        if isinstance(instr.shape, ArrayShape) and instr.shape.size == 0:
            _check_empty_shape_has_numpy_form(comp, instr)
        check_attributes(comp, instr)
        attrs = instr.attrs
        if instr.opcode is Opcode.CONSTANT:
            attrs = {**attrs, "literal": instr.literal}
        try:
            infer_shape(
                instr.opcode, [o.shape for o in instr.operands], attrs, instr.shape, instr.name
            )
        except HlortError as err:
            raise type(err)(f"in computation {comp.name}: {err.message}", err.code) from None


def _check_empty_shape_has_numpy_form(comp: Computation, instr) -> None:
    """Zero-element arrays of any dims are valid, but NumPy (which holds every hlort value)
    refuses shapes whose non-zero dims times the element size pass 2^63 - 1 bytes."""
    shape = instr.shape
    span = math.prod(d for d in shape.dims if d) * shape.dtype.itemsize
    if span > _NUMPY_MAX_BYTES:
        raise Unimplemented(
            f"in computation {comp.name}: {instr.name} has shape {shape}: a zero-element array "
            f"whose other dimensions span {span:,} bytes, which NumPy cannot represent (at most "
            f"{_NUMPY_MAX_BYTES:,}); use smaller dimensions"
        )


def _check_acyclic(comp: Computation) -> None:
    cycle = find_cycle(comp.instructions)
    if cycle is not None:
        raise InvalidArgument(
            f"computation {comp.name}: the instructions form a cycle: "
            f"{describe_cycle(cycle)}; each must read only earlier values"
        )


def check_acyclic(module: Module) -> None:
    """INTERNAL naming the instructions on a cycle in any computation of ``module``: the check
    the pipeline runs after every pass that changed the module (one visit per instruction)."""
    for comp in module.computations:
        cycle = find_cycle(comp.instructions)
        if cycle is not None:
            raise Internal(
                f"computation {comp.name}: the instructions form a cycle: {describe_cycle(cycle)}"
            )


def _check_no_recursion(module: Module) -> None:
    state: dict[Computation, int] = {}

    def visit(comp: Computation) -> None:
        state[comp] = 1
        for callee in comp.called_computations():
            s = state.get(callee)
            if s == 1:
                raise InvalidArgument(f"computation {comp.name} calls itself through {callee.name}")
            if s is None:
                visit(callee)
        state[comp] = 2

    for comp in module.computations:
        if comp not in state:
            visit(comp)
