"""Linear algebra and transforms: dot_general, dot, convolution, cholesky, triangular_solve, fft.

A result element type that differs from the operands' is passed to HLO as the preferred element
type, as XLA does (e.g. ``i8 x i8 -> i32``).
"""

from __future__ import annotations

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.ir import attributes as A


def _preferred(cx: OpContext, lhs, rhs):
    dt = cx.result_dtype()
    return None if dt == lhs.shape.dtype == rhs.shape.dtype else dt


def _precision(cx: OpContext):
    precision = cx.precision()
    if precision is not None and len(precision) != 2:
        return None
    return precision


@converter("stablehlo.dot_general")
def _dot_general(cx: OpContext):
    lhs, rhs = cx.operands
    value = cx.attr("dot_dimension_numbers", None)
    f = value.fields if isinstance(value, ast.StructAttr) else cx.op.attrs

    def dims(key: str) -> tuple[int, ...]:
        return tuple(int(d) for d in f.get(key, ()))

    dnums = A.DotDimensionNumbers(
        lhs_contracting_dims=dims("lhs_contracting_dimensions"),
        rhs_contracting_dims=dims("rhs_contracting_dimensions"),
        lhs_batch_dims=dims("lhs_batching_dimensions"),
        rhs_batch_dims=dims("rhs_batching_dimensions"),
    )
    return [cx.b.dot_general(lhs, rhs, dnums, _precision(cx), _preferred(cx, lhs, rhs))]


@converter("stablehlo.dot")
def _dot(cx: OpContext):
    lhs, rhs = cx.operands
    dnums = A.DotDimensionNumbers((lhs.shape.rank - 1,), (0,))
    return [cx.b.dot_general(lhs, rhs, dnums, _precision(cx), _preferred(cx, lhs, rhs))]


def conv_dimension_numbers(cx: OpContext, value) -> A.ConvDimensionNumbers:
    if not isinstance(value, ast.ConvDimsAttr):
        raise cx.invalid(f"dimension_numbers must be #stablehlo.conv<...>, got {value!r}")

    def spatial(labels) -> tuple[int, ...]:
        numbered = sorted((int(lab), i) for i, lab in enumerate(labels) if lab.isdigit())
        return tuple(i for _, i in numbered)

    def index(labels, label: str) -> int:
        if label not in labels:
            raise cx.invalid(f"dimension numbers {list(labels)} lack {label!r}")
        return labels.index(label)

    i, k, o = value.input, value.kernel, value.output
    return A.ConvDimensionNumbers(
        input_batch_dimension=index(i, "b"),
        input_feature_dimension=index(i, "f"),
        input_spatial_dimensions=spatial(i),
        kernel_input_feature_dimension=index(k, "i"),
        kernel_output_feature_dimension=index(k, "o"),
        kernel_spatial_dimensions=spatial(k),
        output_batch_dimension=index(o, "b"),
        output_feature_dimension=index(o, "f"),
        output_spatial_dimensions=spatial(o),
    )


def conv_window(cx: OpContext, dnums: A.ConvDimensionNumbers, kernel, padding=None):
    sizes = [kernel.shape.dims[d] for d in dnums.kernel_spatial_dimensions]
    n = len(sizes)
    strides = cx.ints("window_strides", (1,) * n)
    lhs_dil = cx.ints("lhs_dilation", (1,) * n)
    rhs_dil = cx.ints("rhs_dilation", (1,) * n)
    reversal = cx.attr("window_reversal", (False,) * n)
    if isinstance(reversal, ast.DenseAttr):
        reversal = tuple(bool(v) for v in reversal.value.reshape(-1))
    pads = padding if padding is not None else cx.pairs("padding", n)
    if not all(len(v) == n for v in (strides, lhs_dil, rhs_dil, reversal, pads)):
        raise cx.invalid(f"window attributes must have {n} entries each")
    return [
        A.WindowDim(
            sizes[d], strides[d], pads[d][0], pads[d][1], rhs_dil[d], lhs_dil[d], bool(reversal[d])
        )
        for d in range(n)
    ]


def convolution(cx: OpContext, padding=None):
    lhs, rhs = cx.operands[:2]
    dnums = conv_dimension_numbers(cx, cx.attr("dimension_numbers"))
    win = conv_window(cx, dnums, rhs, padding)
    return cx.b.convolution(
        lhs,
        rhs,
        win,
        dnums,
        cx.int("feature_group_count", 1),
        cx.int("batch_group_count", 1),
        _precision(cx),
        _preferred(cx, lhs, rhs),
    )


@converter("stablehlo.convolution")
def _convolution(cx: OpContext):
    return [convolution(cx)]


@converter("stablehlo.cholesky")
def _cholesky(cx: OpContext):
    return [cx.b.cholesky(cx.operand(0), cx.bool("lower"))]


@converter("stablehlo.triangular_solve")
def _triangular_solve(cx: OpContext):
    a, b = cx.operands
    return [
        cx.b.triangular_solve(
            a,
            b,
            cx.bool("left_side"),
            cx.bool("lower"),
            cx.bool("unit_diagonal"),
            cx.enum("transpose_a", "NO_TRANSPOSE"),
        )
    ]


@converter("stablehlo.fft")
def _fft(cx: OpContext):
    return [cx.b.fft(cx.operand(0), cx.enum("fft_type"), cx.ints("fft_length"))]
