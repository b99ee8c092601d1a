"""A multi-dimensional element index inside a loop nest, linear or per dimension, made lazily.

Loops produce whichever form is cheap (a flat loop has the linear index, a nest has one value per
dimension) and producers ask for the other only when they need it: elementwise chains and
reshapes use the linear index (no division), broadcasts and transposes the per-dimension one.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.llvm_types import I64


def i64(n: int) -> ir.Constant:
    return ir.Constant(I64, int(n))


class Index:
    """Index into an array of ``dims`` (row-major); ``multi`` and ``linear`` as i64 values."""

    def __init__(
        self,
        b: ir.IRBuilder,
        dims: tuple[int, ...],
        multi: list | None = None,
        linear: ir.Value | None = None,
    ):
        self.b = b
        self.dims = tuple(dims)
        self._multi = list(multi) if multi is not None else None
        self._linear = linear
        if not self.dims:
            self._multi, self._linear = [], i64(0)
        if self._multi is None and self._linear is None:
            raise ValueError("an Index needs a linear or a multi-dimensional value")

    @classmethod
    def scalar(cls, b: ir.IRBuilder) -> Index:
        return cls(b, ())

    @property
    def multi(self) -> list[ir.Value]:
        if self._multi is None:
            self._multi = delinearize(self.b, self._linear, self.dims)
        return self._multi

    @property
    def linear(self) -> ir.Value:
        if self._linear is None:
            self._linear = linearize(self.b, self._multi, self.dims)
        return self._linear

    def __repr__(self) -> str:
        return f"<Index {self.dims}>"


def linearize(b: ir.IRBuilder, multi: list[ir.Value], dims: tuple[int, ...]) -> ir.Value:
    acc = None
    for value, dim in zip(multi, dims, strict=True):
        if dim == 1:
            acc = i64(0) if acc is None else b.mul(acc, i64(1))
            continue
        acc = value if acc is None else b.add(b.mul(acc, i64(dim)), value)
    return acc if acc is not None else i64(0)


def delinearize(b: ir.IRBuilder, linear: ir.Value, dims: tuple[int, ...]) -> list[ir.Value]:
    out = []
    for k, dim in enumerate(dims):
        stride = math.prod(dims[k + 1 :])
        if dim == 1:
            out.append(i64(0))
            continue
        q = b.udiv(linear, i64(stride)) if stride != 1 else linear
        out.append(b.urem(q, i64(dim)) if k > 0 else q)
    return out
