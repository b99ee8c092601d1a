"""Shape rule: convolution (XLA ConvGeneralDilated / StableHLO convolution).

Checks what XLA's ``InferConvolveShape`` checks: ranks, that the dimension numbers are three
permutations, the group counts, the window against the kernel, and each window dimension
(size, stride and dilations >= 1). The output size of a spatial dimension is XLA's
``StridedBound``: ``(padded - dilated_window) // stride + 1``, or 0 when the dilated window does
not fit; a padded (dilated) base below zero is rejected, as XLA does.
"""

from __future__ import annotations

from hlort.ir.attributes import ConvDimensionNumbers, WindowDim
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.linalg import check_operand_precision, contraction_result_dtype
from hlort.shape import ArrayShape, Shape


def dilated_bound(size: int, dilation: int) -> int:
    """The size of ``size`` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def strided_bound(bound: int, window: int, stride: int) -> int:
    """How many windows of ``window`` fit in ``bound`` at ``stride`` (XLA's StridedBound)."""
    if bound == 0 or window > bound:
        return 0
    return (bound - window) // stride + 1


def _check_permutation(
    q: ShapeQuery, what: str, dims: list[int], rank: int, dnums: ConvDimensionNumbers
) -> None:
    if sorted(dims) != list(range(rank)):
        q.fail(
            f"dim_labels: the {what} dimensions {dims} must name each of the {rank} dimensions "
            f"exactly once; got {dnums}"
        )


def _int_attr(q: ShapeQuery, key: str) -> int:
    value = q.attrs.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        q.fail(f"{key}={value!r} must be a positive integer")
    return value


@shape_rule(Opcode.CONVOLUTION)
def _convolution(q: ShapeQuery) -> Shape:
    lhs, rhs = q.array(0), q.array(1)
    dn = q.attr("dim_labels")
    if not isinstance(dn, ConvDimensionNumbers):
        q.fail(f"dim_labels must be a ConvDimensionNumbers, got {dn!r}")
    window = q.attrs.get("window", ())  # XLA omits an empty window (no spatial dimensions)
    if not isinstance(window, (tuple, list)) or not all(isinstance(w, WindowDim) for w in window):
        q.fail(f"window must be a tuple of WindowDim, got {window!r}")
    check_operand_precision(q)
    groups = _int_attr(q, "feature_group_count")
    batch_groups = _int_attr(q, "batch_group_count")
    if groups > 1 and batch_groups > 1:
        q.fail(
            f"feature_group_count={groups} and batch_group_count={batch_groups} cannot both be "
            f"greater than 1"
        )

    n_spatial = len(dn.input_spatial_dimensions)
    if len(dn.kernel_spatial_dimensions) != n_spatial or (
        len(dn.output_spatial_dimensions) != n_spatial
    ):
        q.fail(f"dim_labels: input, kernel and output need the same number of spatial dims: {dn}")
    if len(window) != n_spatial:
        q.fail(
            f"window has {len(window)} dimension(s) but dim_labels has {n_spatial} spatial "
            f"dimension(s)"
        )
    rank = n_spatial + 2
    for what, shape in (("lhs", lhs), ("rhs", rhs)):
        if shape.rank != rank:
            q.fail(f"{what} {shape} must have rank {rank} ({n_spatial} spatial dims + 2)")
    _check_permutation(
        q,
        "input",
        [dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions],
        rank,
        dn,
    )
    _check_permutation(
        q,
        "kernel",
        [
            dn.kernel_input_feature_dimension,
            dn.kernel_output_feature_dimension,
            *dn.kernel_spatial_dimensions,
        ],
        rank,
        dn,
    )
    _check_permutation(
        q,
        "output",
        [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions],
        rank,
        dn,
    )

    batch = lhs.dims[dn.input_batch_dimension]
    in_features = lhs.dims[dn.input_feature_dimension]
    k_in = rhs.dims[dn.kernel_input_feature_dimension]
    k_out = rhs.dims[dn.kernel_output_feature_dimension]
    if in_features % groups != 0 or in_features // groups != k_in:
        q.fail(
            f"lhs {lhs} has {in_features} input features; with feature_group_count={groups} "
            f"the kernel {rhs} needs {in_features}/{groups} input features, it has {k_in}"
        )
    if k_out % groups != 0:
        q.fail(
            f"kernel {rhs} has {k_out} output features, not divisible by "
            f"feature_group_count={groups}"
        )
    if batch % batch_groups != 0:
        q.fail(f"lhs {lhs} batch size {batch} is not divisible by batch_group_count={batch_groups}")
    if k_out % batch_groups != 0:
        q.fail(
            f"kernel {rhs} has {k_out} output features, not divisible by "
            f"batch_group_count={batch_groups}"
        )

    out_spatial = []
    for i, w in enumerate(window):
        k_size = rhs.dims[dn.kernel_spatial_dimensions[i]]
        if w.size != k_size:
            q.fail(
                f"window dimension {i} has size {w.size} but kernel {rhs} spatial dimension "
                f"{dn.kernel_spatial_dimensions[i]} has size {k_size}"
            )
        for key in ("size", "stride", "window_dilation", "base_dilation"):
            if getattr(w, key) < 1:
                q.fail(f"window dimension {i}: {key}={getattr(w, key)} must be >= 1")
        base = lhs.dims[dn.input_spatial_dimensions[i]]
        padded = w.padding_low + dilated_bound(base, w.base_dilation) + w.padding_high
        if padded < 0:
            q.fail(
                f"window dimension {i}: padding ({w.padding_low}, {w.padding_high}) removes more "
                f"than the {dilated_bound(base, w.base_dilation)} elements of lhs {lhs} "
                f"dimension {dn.input_spatial_dimensions[i]}; the padded size would be {padded}"
            )
        out_spatial.append(
            strided_bound(padded, dilated_bound(w.size, w.window_dilation), w.stride)
        )

    dims = [0] * rank
    dims[dn.output_batch_dimension] = batch // batch_groups
    dims[dn.output_feature_dimension] = k_out
    for i, d in enumerate(dn.output_spatial_dimensions):
        dims[d] = out_spatial[i]
    return ArrayShape(contraction_result_dtype(q, lhs, rhs), tuple(dims))
