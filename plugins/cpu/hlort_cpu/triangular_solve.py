"""TriangularSolveThunk: triangular-solve on a compiled substitution kernel (NumPy has no trsm).

Every form reduces to ``T X = B`` with a lower or upper ``T`` on the left
(``hlort_cpu.codegen.triangular_solve_kernel``, a library kernel: ``library_kernels.py``):

- ``left_side``: ``op(a) x = b``, so ``T = op(a)``, ``B = b``;
- otherwise ``x op(a) = b``, i.e. ``op(a)^T x^T = b^T``: ``T = op(a)^T``, ``B = b^T``, and the
  solution is transposed back;

where ``op`` is the identity, the transpose or the adjoint (``transpose_a``). Transposing ``T``
swaps which triangle is read. So a call makes one C-ordered copy of ``a`` (transposed and / or
conjugated when the form says, in f64 / c128; none when ``a`` already is that) and one of ``b``
(the kernel overwrites it with the solution), runs the kernel, threads splitting (matrix, column
block) pairs, and rounds the solution once to the result type (transposing it back on the right).

Semantics and arithmetic are the interpreter's (``hlort.interpreter.ops.linalg``): computed in
f64 / c128 for every element type; only the named triangle of ``a`` is read, and not its
diagonal when ``unit_diagonal``; a zero pivot gives inf / NaN as IEEE division does. The kernel
accumulates each row's products in the interpreter's order, so results are usually bit-identical;
where NumPy's einsum pairs partial sums differently the difference is a rounding of each sum
(relative ~n eps of f64 / c128, amplified by the matrix's condition).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from hlort.ir.attributes import Transpose
from hlort.ir.instruction import Instruction
from hlort_cpu.codegen import triangular_solve_kernel
from hlort_cpu.host_pool import host_pool
from hlort_cpu.library_kernels import library_kernel, substitution_name
from hlort_cpu.thread_pool import chunks, run_chunks
from hlort_cpu.thunks import address

_POINTERS = ctypes.c_void_p * 3


class TriangularSolveThunk:
    """One triangular-solve instruction; see the module docstring."""

    label = "triangular-solve (substitution kernel)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        attrs = instr.attrs
        left = bool(attrs.get("left_side", False))
        lower = bool(attrs.get("lower", False))
        transpose = attrs.get("transpose_a", Transpose.NO_TRANSPOSE)
        result = instr.shape
        is_complex = result.dtype.is_complex
        n = result.dims[-2] if left else result.dims[-1]
        m = result.dims[-1] if left else result.dims[-2]
        batch = math.prod(result.dims[:-2])
        self.swap = (transpose is not Transpose.NO_TRANSPOSE) != (not left)  # T = a^T
        self.conjugate = is_complex and transpose is Transpose.ADJOINT
        self.left = left
        self.kernel = library_kernel(substitution_name(is_complex, lower != self.swap))
        self.compute = np.dtype(np.complex128 if is_complex else np.float64)
        self.dims, self.dtype = result.dims, np.dtype(result.dtype.numpy)
        self.a_shape, self.x_shape = (batch, n, n), (batch, n, m)
        self.b_shape = (batch, n, m) if left else (batch, m, n)
        self.sizes = np.array([n, m, int(bool(attrs.get("unit_diagonal", False)))], np.int64)
        column_block = triangular_solve_kernel.COLUMN_BLOCK  # as now: the kernel was built so
        blocks = -(-m // column_block)
        self.ranges = chunks(batch * blocks, max(1, n * n * min(m, column_block) // 2))
        self.empty = result.size == 0
        self.ins, self.out = ins, out

    def _matrix(self, a: np.ndarray) -> np.ndarray:
        """``T``: ``a`` (transposed, conjugated) as C-ordered f64 / c128, copied only if needed."""
        view = a.reshape(self.a_shape)
        if self.swap:
            view = view.swapaxes(1, 2)
        if self.conjugate:
            return np.conjugate(view, out=np.empty(self.a_shape, self.compute))
        return np.ascontiguousarray(view, dtype=self.compute)

    def __call__(self, env) -> None:
        if self.empty:
            env[self.out] = np.zeros(self.dims, self.dtype)
            return
        t = self._matrix(env[self.ins[0]])
        b = env[self.ins[1]].reshape(self.b_shape)
        x = host_pool().empty(self.x_shape, self.compute)
        np.copyto(x, b if self.left else b.swapaxes(1, 2))
        pointers = _POINTERS(address(t), address(x), address(self.sizes))
        run_chunks(self.kernel, pointers, self.ranges)
        solution = x if self.left else x.swapaxes(1, 2)
        if self.left and self.dtype == self.compute:
            env[self.out] = x.reshape(self.dims)
            return
        out = host_pool().empty(self.dims, self.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            np.copyto(out.reshape(self.b_shape), solution, casting="unsafe")  # one rounding
        env[self.out] = out


def triangular_solve_thunk(
    instr: Instruction, ins: list[int], out: int
) -> TriangularSolveThunk | None:
    """A thunk for an array triangular-solve (every float and complex type); None otherwise."""
    if not instr.shape.is_array or not all(o.shape.is_array for o in instr.operands):
        return None
    return TriangularSolveThunk(instr, ins, out)
