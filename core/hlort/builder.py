"""A functional builder with shape inference, for tests, demos and importers.

    b = Builder("axpy")
    a = b.parameter(shape.scalar("f32"))
    x = b.parameter(shape.array("f32", [4]))
    y = b.parameter(shape.array("f32", [4]))
    module = b.build(b.add(b.multiply(b.broadcast(a, [4], []), x), y))

Every method returns the new :class:`~hlort.ir.Instruction`; shapes are inferred by the op's shape
rule, so a wrong operand fails here with INVALID_ARGUMENT, not later. Nested computations
(reducers, loop bodies, comparators) are built with :meth:`Builder.sub`, which shares the module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.errors import InvalidArgument
from hlort.ir import attributes as A
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape
from hlort.shape import ArrayShape, Shape, TupleShape, array, scalar

Op = Instruction


def _dtype(d: DType | str | Any) -> DType:
    if isinstance(d, DType):
        return d
    if isinstance(d, str) and dtypes.is_hlo_name(d):
        return dtypes.from_hlo_name(d)
    return dtypes.from_numpy(d)


class Builder:
    def __init__(self, name: str = "main", module: Module | None = None):
        self.module = module or Module(name)
        self.computation = Computation(name)
        self._next_param = 0

    # -- structure ----------------------------------------------------------------------------
    def sub(self, name: str) -> Builder:
        """A builder for a nested computation of the same module."""
        return Builder(name, self.module)

    def build(self, root: Op | None = None) -> Module:
        """Finish this (entry) computation and return the module."""
        comp = self.finish(root)
        self.module.add_computation(comp, entry=True)
        self.module.sort_computations()
        return self.module

    def finish(self, root: Op | None = None) -> Computation:
        """Finish a nested computation; it joins the module when an op first uses it."""
        comp = self.computation
        if root is None:
            if not comp.instructions:
                raise InvalidArgument(f"computation {comp.name} is empty")
            root = comp.instructions[-1]
        comp.set_root(root)
        return comp

    def op(
        self,
        opcode: Opcode,
        operands: Sequence[Op] = (),
        shape: Shape | None = None,
        name: str | None = None,
        **attrs: Any,
    ) -> Op:
        """Append ``opcode(operands)`` with ``attrs``; ``shape`` is inferred unless given."""
        for o in operands:
            if not isinstance(o, Instruction):
                raise InvalidArgument(f"{opcode.value}: operand {o!r} is not an instruction")
            if o.parent is not self.computation:
                raise InvalidArgument(
                    f"{opcode.value}: operand {o.name} belongs to another computation"
                )
        for key in opcode.info.called:  # a called computation joins the module (unique names)
            called = attrs.get(key)
            for comp in called if isinstance(called, (list, tuple)) else (called,):
                if isinstance(comp, Computation):
                    self._comp(comp)
        result = infer_shape(opcode, [o.shape for o in operands], attrs, shape, name)
        instr = Instruction(opcode, result, list(operands), attrs, name)
        return self._append(instr)

    def _append(self, instr: Instruction) -> Op:
        return self.computation.add_instruction(instr)

    def _comp(self, comp: Computation) -> Computation:
        if comp.parent is None:
            self.module.add_computation(comp)
        return comp

    # -- leaves -------------------------------------------------------------------------------
    def parameter(self, shape: Shape, name: str | None = None) -> Op:
        number = self._next_param
        self._next_param += 1
        instr = Instruction(
            Opcode.PARAMETER, shape, (), name=name or f"p{number}", parameter_number=number
        )
        return self._append(instr)

    def constant(self, value, dtype: DType | str | None = None, name: str | None = None) -> Op:
        if isinstance(value, tuple):
            raise InvalidArgument("tuple constants: build each element and use tuple()")
        arr = np.asarray(value, dtype=_dtype(dtype).numpy if dtype is not None else None)
        python_value = not isinstance(value, (np.ndarray, np.generic))  # NumPy keeps its type
        if dtype is None and python_value and arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if dtype is None and python_value and arr.dtype == np.int64:
            arr = arr.astype(np.int32)
        dt = dtypes.from_numpy(arr.dtype)
        instr = Instruction(
            Opcode.CONSTANT,
            ArrayShape(dt, arr.shape),
            (),
            name=name or "constant",
            literal=np.array(arr, order="C"),  # a copy; keeps 0-d arrays 0-d
        )
        return self._append(instr)

    def iota(self, shape: ArrayShape, dimension: int) -> Op:
        return self.op(Opcode.IOTA, (), shape, iota_dimension=dimension)

    # -- elementwise ----------------------------------------------------------------------------
    def compare(
        self,
        a: Op,
        b: Op,
        direction: str | A.ComparisonDirection,
        comparison_type: str | A.ComparisonType | None = None,
    ) -> Op:
        attrs: dict[str, Any] = {"direction": A.ComparisonDirection(direction)}
        if comparison_type is not None:
            attrs["comparison_type"] = A.ComparisonType(comparison_type)
        return self.op(Opcode.COMPARE, (a, b), **attrs)

    def select(self, pred: Op, on_true: Op, on_false: Op) -> Op:
        return self.op(Opcode.SELECT, (pred, on_true, on_false))

    def clamp(self, low: Op, x: Op, high: Op) -> Op:
        return self.op(Opcode.CLAMP, (low, x, high))

    def convert(self, x: Op, dtype: DType | str) -> Op:
        return self.op(Opcode.CONVERT, (x,), x.shape.with_dtype(_dtype(dtype)))

    def bitcast_convert(self, x: Op, dtype: DType | str) -> Op:
        to = _dtype(dtype)
        src = x.shape
        if to.bits == src.dtype.bits:
            dims = src.dims
        elif to.bits < src.dtype.bits:
            dims = src.dims + (src.dtype.bits // to.bits,)
        else:
            dims = src.dims[:-1]
        return self.op(Opcode.BITCAST_CONVERT, (x,), ArrayShape(to, dims))

    def reduce_precision(self, x: Op, exponent_bits: int, mantissa_bits: int) -> Op:
        return self.op(
            Opcode.REDUCE_PRECISION, (x,), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
        )

    def map(self, operands: Sequence[Op], computation: Computation) -> Op:
        dims = tuple(range(operands[0].shape.rank))
        return self.op(Opcode.MAP, operands, dimensions=dims, to_apply=self._comp(computation))

    # -- data movement ------------------------------------------------------------------------
    def broadcast(self, x: Op, dims: Sequence[int], broadcast_dimensions: Sequence[int]) -> Op:
        """Result of ``dims``; operand dimension i maps to result dimension
        ``broadcast_dimensions[i]``."""
        return self.op(
            Opcode.BROADCAST,
            (x,),
            array(x.shape.dtype, dims),
            dimensions=tuple(broadcast_dimensions),
        )

    def reshape(self, x: Op, dims: Sequence[int]) -> Op:
        return self.op(Opcode.RESHAPE, (x,), array(x.shape.dtype, dims))

    def transpose(self, x: Op, permutation: Sequence[int]) -> Op:
        return self.op(Opcode.TRANSPOSE, (x,), dimensions=tuple(permutation))

    def slice(self, x: Op, starts, limits, strides=None) -> Op:
        strides = strides or [1] * len(starts)
        if not len(starts) == len(limits) == len(strides):
            raise InvalidArgument(
                f"slice: starts {list(starts)}, limits {list(limits)} and strides "
                f"{list(strides)} must have one entry per dimension of {x.shape}"
            )
        spec = tuple(
            A.SliceDim(int(a), int(b), int(c))
            for a, b, c in zip(starts, limits, strides, strict=True)
        )
        return self.op(Opcode.SLICE, (x,), slice=spec)

    def dynamic_slice(self, x: Op, start_indices: Sequence[Op], sizes: Sequence[int]) -> Op:
        return self.op(Opcode.DYNAMIC_SLICE, (x, *start_indices), dynamic_slice_sizes=tuple(sizes))

    def dynamic_update_slice(self, x: Op, update: Op, start_indices: Sequence[Op]) -> Op:
        return self.op(Opcode.DYNAMIC_UPDATE_SLICE, (x, update, *start_indices))

    def concatenate(self, xs: Sequence[Op], dimension: int) -> Op:
        return self.op(Opcode.CONCATENATE, tuple(xs), dimensions=(dimension,))

    def pad(self, x: Op, value: Op, config: Sequence[tuple[int, int, int]]) -> Op:
        return self.op(Opcode.PAD, (x, value), padding=tuple(A.PadDim(*c) for c in config))

    def reverse(self, x: Op, dims: Sequence[int]) -> Op:
        return self.op(Opcode.REVERSE, (x,), dimensions=tuple(dims))

    def gather(
        self,
        operand: Op,
        indices: Op,
        dnums: A.GatherDimensionNumbers,
        slice_sizes: Sequence[int],
        indices_are_sorted: bool = False,
    ) -> Op:
        return self.op(
            Opcode.GATHER,
            (operand, indices),
            gather_dimension_numbers=dnums,
            slice_sizes=tuple(slice_sizes),
            indices_are_sorted=indices_are_sorted,
        )

    def scatter(
        self,
        operands: Sequence[Op],
        indices: Op,
        updates: Sequence[Op],
        computation: Computation,
        dnums: A.ScatterDimensionNumbers,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
    ) -> Op:
        return self.op(
            Opcode.SCATTER,
            (*operands, indices, *updates),
            scatter_dimension_numbers=dnums,
            to_apply=self._comp(computation),
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
        )

    # -- reductions ---------------------------------------------------------------------------
    def reduce(
        self,
        operands: Sequence[Op] | Op,
        inits: Sequence[Op] | Op,
        computation: Computation,
        dimensions: Sequence[int],
    ) -> Op:
        operands = [operands] if isinstance(operands, Instruction) else list(operands)
        inits = [inits] if isinstance(inits, Instruction) else list(inits)
        return self.op(
            Opcode.REDUCE,
            (*operands, *inits),
            dimensions=tuple(dimensions),
            to_apply=self._comp(computation),
        )

    def reduce_window(
        self,
        operands: Sequence[Op] | Op,
        inits: Sequence[Op] | Op,
        computation: Computation,
        window: Sequence[A.WindowDim],
    ) -> Op:
        operands = [operands] if isinstance(operands, Instruction) else list(operands)
        inits = [inits] if isinstance(inits, Instruction) else list(inits)
        return self.op(
            Opcode.REDUCE_WINDOW,
            (*operands, *inits),
            window=tuple(window),
            to_apply=self._comp(computation),
        )

    def select_and_scatter(
        self,
        operand: Op,
        select: Computation,
        window: Sequence[A.WindowDim],
        source: Op,
        init: Op,
        scatter: Computation,
    ) -> Op:
        return self.op(
            Opcode.SELECT_AND_SCATTER,
            (operand, source, init),
            window=tuple(window),
            select=self._comp(select),
            scatter=self._comp(scatter),
        )

    def sort(
        self,
        operands: Sequence[Op] | Op,
        comparator: Computation,
        dimension: int = -1,
        is_stable: bool = False,
    ) -> Op:
        operands = [operands] if isinstance(operands, Instruction) else list(operands)
        if dimension < 0:
            dimension += operands[0].shape.rank
        return self.op(
            Opcode.SORT,
            operands,
            dimensions=(dimension,),
            is_stable=is_stable,
            to_apply=self._comp(comparator),
        )

    def top_k(self, x: Op, k: int, largest: bool = True) -> Op:
        return self.op(Opcode.TOPK, (x,), k=k, largest=largest)

    # -- linear algebra -----------------------------------------------------------------------
    def dot_general(
        self,
        lhs: Op,
        rhs: Op,
        dnums: A.DotDimensionNumbers,
        precision: Sequence[str] | None = None,
        preferred: DType | str | None = None,
    ) -> Op:
        attrs: dict[str, Any] = {"dot_dimension_numbers": dnums}
        return self._contraction(Opcode.DOT, lhs, rhs, attrs, precision, preferred)

    def dot(self, lhs: Op, rhs: Op, precision: Sequence[str] | None = None) -> Op:
        """Matrix product of rank-1/2 operands, contracting lhs's last and rhs's first dim."""
        dnums = A.DotDimensionNumbers((lhs.shape.rank - 1,), (0,))
        return self.dot_general(lhs, rhs, dnums, precision)

    def convolution(
        self,
        lhs: Op,
        rhs: Op,
        window: Sequence[A.WindowDim],
        dnums: A.ConvDimensionNumbers,
        feature_group_count: int = 1,
        batch_group_count: int = 1,
        precision: Sequence[str] | None = None,
        preferred: DType | str | None = None,
    ) -> Op:
        attrs: dict[str, Any] = dict(
            window=tuple(window),
            dim_labels=dnums,
            feature_group_count=feature_group_count,
            batch_group_count=batch_group_count,
        )
        return self._contraction(Opcode.CONVOLUTION, lhs, rhs, attrs, precision, preferred)

    def _contraction(
        self,
        opcode: Opcode,
        lhs: Op,
        rhs: Op,
        attrs: dict[str, Any],
        precision: Sequence[str] | None,
        preferred: DType | str | None,
    ) -> Op:
        """Dot or convolution with optional per-operand ``precision`` and a ``preferred`` result
        element type (XLA's preferred_element_type) in place of the inferred one."""
        if precision is not None:
            attrs["operand_precision"] = tuple(A.Precision(p.upper()) for p in precision)
        shape = None
        if preferred is not None:
            shape = infer_shape(opcode, [lhs.shape, rhs.shape], attrs)
            shape = shape.with_dtype(_dtype(preferred))
        return self.op(opcode, (lhs, rhs), shape, **attrs)

    def cholesky(self, a: Op, lower: bool = True) -> Op:
        """The Cholesky factor of the Hermitian positive-definite matrices in ``a``.

        ``lower`` defaults to True here (L with a = L L^H, what numpy.linalg.cholesky returns),
        while an HLO text ``cholesky`` without ``lower=`` means False (upper: a = U^H U). The
        builder always records the attribute, so its default prints as ``lower=true``
        and survives a round trip through text.
        """
        return self.op(Opcode.CHOLESKY, (a,), lower=lower)

    def triangular_solve(
        self,
        a: Op,
        b: Op,
        left_side: bool = True,
        lower: bool = True,
        unit_diagonal: bool = False,
        transpose_a: str | A.Transpose = "NO_TRANSPOSE",
    ) -> Op:
        """Solve op(a) x = b (``left_side``) or x op(a) = b for x, ``a`` triangular.

        ``left_side`` and ``lower`` default to True here (the common left-hand, lower-triangular
        solve), while in HLO text an absent ``left_side=`` or ``lower=`` means False; the builder
        always records both, so its defaults print as ``left_side=true, lower=true``.
        ``unit_diagonal`` (default False) takes the diagonal of ``a`` as ones; ``transpose_a`` is
        NO_TRANSPOSE, TRANSPOSE or ADJOINT.
        """
        return self.op(
            Opcode.TRIANGULAR_SOLVE,
            (a, b),
            left_side=left_side,
            lower=lower,
            unit_diagonal=unit_diagonal,
            transpose_a=A.Transpose(transpose_a),
        )

    def fft(self, x: Op, fft_type: str | A.FftType, fft_length: Sequence[int]) -> Op:
        return self.op(Opcode.FFT, (x,), fft_type=A.FftType(fft_type), fft_length=tuple(fft_length))

    # -- control flow and structure -----------------------------------------------------------
    def tuple(self, elements: Sequence[Op]) -> Op:
        return self.op(Opcode.TUPLE, tuple(elements))

    def get_tuple_element(self, t: Op, index: int) -> Op:
        return self.op(Opcode.GET_TUPLE_ELEMENT, (t,), index=index)

    def while_loop(self, condition: Computation, body: Computation, init: Op) -> Op:
        return self.op(
            Opcode.WHILE, (init,), condition=self._comp(condition), body=self._comp(body)
        )

    def conditional(
        self, selector: Op, branches: Sequence[Computation], branch_operands: Sequence[Op]
    ) -> Op:
        """``selector`` pred (branches = [true, false]) or s32 index (out of range -> last)."""
        comps = tuple(self._comp(c) for c in branches)
        return self.op(Opcode.CONDITIONAL, (selector, *branch_operands), branch_computations=comps)

    def call(self, computation: Computation, operands: Sequence[Op]) -> Op:
        return self.op(Opcode.CALL, tuple(operands), to_apply=self._comp(computation))

    def optimization_barrier(self, x: Op) -> Op:
        return self.op(Opcode.OPTIMIZATION_BARRIER, (x,))

    def after_all(self, tokens: Sequence[Op] = ()) -> Op:
        return self.op(Opcode.AFTER_ALL, tuple(tokens))

    def custom_call(
        self,
        target: str,
        operands: Sequence[Op],
        shape: Shape,
        backend_config: str | None = None,
        has_side_effect: bool = False,
    ) -> Op:
        attrs: dict[str, Any] = {"custom_call_target": target}
        if backend_config is not None:
            attrs["backend_config"] = backend_config
        if has_side_effect:
            attrs["has_side_effect"] = True
        return self.op(Opcode.CUSTOM_CALL, tuple(operands), shape, **attrs)

    def rng_bit_generator(
        self, state: Op, shape: ArrayShape, algorithm: str | A.RngAlgorithm = "rng_default"
    ) -> Op:
        out = TupleShape((state.shape, shape))
        return self.op(Opcode.RNG_BIT_GENERATOR, (state,), out, algorithm=A.RngAlgorithm(algorithm))

    # -- common nested computations -----------------------------------------------------------
    def scalar_computation(
        self, opcode: Opcode | str, dtype: DType | str, name: str | None = None
    ) -> Computation:
        """``(a, b) -> opcode(a, b)`` on scalars: the usual reducer (add, maximum...)."""
        if isinstance(opcode, str):
            opcode = Opcode(opcode)
        dt = _dtype(dtype)
        sub = self.sub(name or f"{opcode.value.replace('-', '_')}_{dt.name}")
        a = sub.parameter(scalar(dt), "a")
        b = sub.parameter(scalar(dt), "b")
        comp = sub.finish(sub.op(opcode, (a, b)))
        return self._comp(comp)

    def comparator(
        self,
        dtypes_: Sequence[DType | str],
        direction: str = "LT",
        comparison_type: str | None = None,
    ) -> Computation:
        """A sort comparator on the first operand of ``dtypes_`` (the others ride along)."""
        sub = self.sub("compare_" + direction.lower())
        params = []
        for i, d in enumerate(dtypes_):
            dt = _dtype(d)
            params.append(sub.parameter(scalar(dt), f"lhs{i}"))
            params.append(sub.parameter(scalar(dt), f"rhs{i}"))
        comp = sub.finish(sub.compare(params[0], params[1], direction, comparison_type))
        return self._comp(comp)


def _add_elementwise_methods() -> None:
    """``b.add(x, y)``, ``b.exp(x)``...: one method per elementwise opcode, named by the op."""
    simple = [op for op in Opcode if op.info.elementwise and op.info.arity in (1, 2)]
    skip = {Opcode.COMPARE, Opcode.CONVERT, Opcode.REDUCE_PRECISION, Opcode.MAP}
    aliases = {
        Opcode.EXP: "exp",
        Opcode.SUBTRACT: "sub",
        Opcode.MULTIPLY: "mul",
        Opcode.DIVIDE: "div",
        Opcode.SINE: "sin",
        Opcode.COSINE: "cos",
        Opcode.CLZ: "clz",
        Opcode.EXPM1: "expm1",
        Opcode.LOG1P: "log1p",
        Opcode.POWER: "pow",
        Opcode.MAXIMUM: "max",
        Opcode.MINIMUM: "min",
        Opcode.NOT: "not_",
        Opcode.AND: "and_",
        Opcode.OR: "or_",
        Opcode.XOR: "xor",
    }
    for op in simple:
        if op in skip:
            continue

        def method(self, *operands, _op=op, name=None):
            return self.op(_op, operands, name=name)

        method.__doc__ = f"HLO ``{op.value}``."
        full = op.value.replace("-", "_")
        setattr(Builder, full, method)
        if op in aliases and not hasattr(Builder, aliases[op]):  # never shadow Builder.sub
            setattr(Builder, aliases[op], method)


_add_elementwise_methods()
