"""Direct convolution kernels for channels-last f32/f64 convolutions (NHWC, HWIO -> NHWC).

A block of output pixels along the last spatial dimension times a group of output-feature
vectors is held in registers (allocas that SROA promotes) over the whole sum: for each window
position in row-major order and each input feature, one vector of the kernel's row
``w[k..., ci, :]`` is loaded once and every pixel's input element is broadcast against it. No
im2col matrix is built and no padded copy of the input: padding reads zeros from a constant
zero row (the row pointer or the element pointer is selected to it), so a padded position still
contributes ``0 * w`` as in the interpreter (a NaN or inf weight makes NaN there too). Pixels
whose whole window lies inside the input along the last dimension run in blocks without checks;
the rest (the edges, and a block's remainder) one at a time with per-position checks.

Each output element is ``((+0 + x0*w0) + x1*w1) + ...`` over window positions row-major, input
features inner, with a separate multiply and add (no contraction): the interpreter's in-order
sum (``linalg.contract`` for small products) bit for bit; larger products the interpreter
gives to ``np.matmul``, within the usual dot tolerance of that.

An outer iteration is one output row (batch and all spatial coordinates but the last), so
threads split rows. Layouts other than channels-last, groups, base dilation, window reversal
and other element types stay on the im2col thunk (convolution.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.index import delinearize, i64, linearize
from hlort.codegen.llvm.llvm_types import F32, F64, I32
from hlort.codegen.llvm.loops import NO_UNROLL, NO_VECTORIZE, emit_loop
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.ir.attributes import WindowDim
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

MAX_ZERO_ELEMENTS = 1 << 16  # the zero row (last input dimension x features) is a constant
UNROLL_FEATURES = 4  # input-feature loops this short are emitted unrolled
MAX_PIXELS = 8  # output pixels per register block


@dataclass(frozen=True)
class ConvPlan:
    double: bool
    batch: int
    in_spatial: tuple[int, ...]
    features: int
    out_spatial: tuple[int, ...]
    out_features: int
    window: tuple[WindowDim, ...]

    @property
    def window_size(self) -> int:
        return math.prod(w.size for w in self.window)


def plan_conv(comp: Computation) -> ConvPlan | None:
    """The plan when ``comp`` is one convolution of parameters this kernel takes, else None."""
    root = comp.root
    if root.opcode is not Opcode.CONVOLUTION or len(comp.instructions) != 3:
        return None
    if any(o.opcode is not Opcode.PARAMETER for o in root.operands):
        return None
    lhs, rhs = (o.shape for o in root.operands)
    out = root.shape
    if not (out.is_array and lhs.is_array and rhs.is_array):
        return None
    if not (lhs.dtype is rhs.dtype is out.dtype and out.dtype in (dtypes.F32, dtypes.F64)):
        return None
    if root.attrs.get("feature_group_count", 1) != 1 or root.attrs.get("batch_group_count", 1) != 1:
        return None
    dn = root.attrs["dim_labels"]
    s = len(dn.input_spatial_dimensions)
    spatial = tuple(range(1, s + 1))
    if s < 1 or (dn.input_batch_dimension, dn.input_feature_dimension) != (0, s + 1):
        return None
    if tuple(dn.input_spatial_dimensions) != spatial:
        return None
    if (dn.output_batch_dimension, dn.output_feature_dimension) != (0, s + 1):
        return None
    if tuple(dn.output_spatial_dimensions) != spatial:
        return None
    if tuple(dn.kernel_spatial_dimensions) != tuple(range(s)):
        return None
    if (dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension) != (s, s + 1):
        return None
    window = tuple(root.attrs.get("window", ()))
    if len(window) != s or any(w.base_dilation != 1 or w.window_reversal for w in window):
        return None
    if out.size == 0 or lhs.dims[-1] == 0 or math.prod(w.size for w in window) == 0:
        return None  # every sum empty: the thunk writes zeros
    if lhs.dims[-2] * lhs.dims[-1] > MAX_ZERO_ELEMENTS:
        return None
    return ConvPlan(
        out.dtype is dtypes.F64,
        lhs.dims[0],
        tuple(lhs.dims[1:-1]),
        lhs.dims[-1],
        tuple(out.dims[1:-1]),
        out.dims[-1],
        window,
    )


def _interior(size: int, w: WindowDim, out: int) -> tuple[int, int]:
    """Output coordinates [lo, hi) whose whole window is inside [0, size) on this dim."""
    low = w.padding_low
    lo = max(0, -(-low // w.stride))
    last = size - 1 + low - (w.size - 1) * w.window_dilation
    hi = min(out, last // w.stride + 1) if last >= 0 else 0
    return lo, max(lo, hi)


def _blocking(out_features: int, lanes: int, vector_bits: int):
    """Output-feature groups [(vector offsets and widths)] and pixels per block."""
    segments = [(o, min(lanes, out_features - o)) for o in range(0, out_features, lanes)]
    per_group = 4 if vector_bits >= 512 else 2
    groups = [segments[k : k + per_group] for k in range(0, len(segments), per_group)]
    budget = 24 if vector_bits >= 512 else 12
    pixels = max(1, min(MAX_PIXELS, budget // max(len(g) for g in groups)))
    return groups, pixels


def emit_convolution(
    module: ir.Module, target: TargetSpec, name: str, comp: Computation
) -> HeroLaunch:
    from hlort_cpu.codegen.jit import jit_engine

    plan = plan_conv(comp)
    vector_bits = max(128, jit_engine().target.vector_bits)
    _fn, b, _ctx, params, outs, begin, end = open_fusion_kernel(module, target, name, comp, 1)
    x_base, w_base = params
    y_base = outs[0]
    real = F64 if plan.double else F32
    size = 8 if plan.double else 4
    lanes = vector_bits // (8 * size)
    groups, pixels = _blocking(plan.out_features, lanes, vector_bits)
    c, oc = plan.features, plan.out_features
    in_last, out_last, w_last = plan.in_spatial[-1], plan.out_spatial[-1], plan.window[-1]

    zeros = ir.GlobalVariable(module, ir.ArrayType(real, in_last * c), f"{name}_zeros")
    zeros.initializer = ir.Constant(ir.ArrayType(real, in_last * c), None)
    zeros.global_constant = True
    zeros.linkage = "internal"
    zero_row = b.bitcast(zeros, x_base.type)

    # accumulators: [pixel][segment of the widest group], promoted to registers by SROA
    width = max(len(g) for g in groups)
    vec_types = {wd: ir.VectorType(real, wd) for g in groups for _, wd in g}
    accs = {
        wd: [[b.alloca(t, name=f"acc{p}_{v}") for v in range(width)] for p in range(pixels)]
        for wd, t in vec_types.items()
    }

    def element(base: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(base, [index], inbounds=True, source_etype=real)

    def splat(value: ir.Value, t: ir.VectorType) -> ir.Value:
        one = b.insert_element(ir.Constant(t, ir.Undefined), value, ir.Constant(I32, 0))
        return b.shuffle_vector(
            one,
            ir.Constant(t, ir.Undefined),
            ir.Constant(ir.VectorType(I32, t.count), [0] * t.count),
        )

    lead_out = (plan.batch, *plan.out_spatial[:-1])
    extent = math.prod(lead_out)
    spatial = len(plan.window)

    def row(t: ir.Value) -> None:
        lead = delinearize(b, t, lead_out)
        n, o_lead = lead[0], lead[1:]
        y_row = element(y_base, b.mul(t, i64(out_last * oc)))
        lo, hi = _interior(in_last, w_last, out_last)
        inner = lo + (hi - lo) // pixels * pixels  # unchecked full blocks: [lo, inner)
        for group in groups:
            pixel_range(n, o_lead, y_row, 0, lo, True, group)
            pixel_range(n, o_lead, y_row, lo, inner, False, group)
            pixel_range(n, o_lead, y_row, inner, out_last, True, group)

    def pixel_range(n, o_lead, y_row, start: int, stop: int, checked: bool, group) -> None:
        """Pixels [start, stop) of the row: blocks of ``pixels``, then one smaller block."""
        full, rest = divmod(stop - start, pixels)
        if full:

            def block(k: ir.Value) -> None:
                o0 = b.add(i64(start), b.mul(k, i64(pixels)))
                pixel_block(n, o_lead, y_row, o0, pixels, checked, group)

            emit_loop(b, i64(0), i64(full), block, "conv.px", hints=(NO_VECTORIZE, NO_UNROLL))
        if rest:
            pixel_block(n, o_lead, y_row, i64(start + full * pixels), rest, checked, group)

    def pixel_block(n, o_lead, y_row, o0, count: int, checked: bool, group) -> None:
        slots = [[accs[wd][p][v] for v, (_, wd) in enumerate(group)] for p in range(count)]
        for p in range(count):
            for v, (_, wd) in enumerate(group):
                b.store(ir.Constant(vec_types[wd], [0.0] * wd), slots[p][v])

        def lead_positions(k_lead: list[ir.Value]) -> None:
            d = len(k_lead)
            if d < spatial - 1:
                w = plan.window[d]
                emit_loop(
                    b,
                    i64(0),
                    i64(w.size),
                    lambda k: lead_positions([*k_lead, k]),
                    f"conv.k{d}",
                    hints=(NO_VECTORIZE, NO_UNROLL),
                )
                return
            valid = ir.Constant(ir.IntType(1), 1)
            coords = []
            for k, o, w, size_d in zip(k_lead, o_lead, plan.window, plan.in_spatial, strict=False):
                i = b.add(
                    b.sub(b.mul(o, i64(w.stride)), i64(w.padding_low)),
                    b.mul(k, i64(w.window_dilation)),
                )
                valid = b.and_(valid, b.icmp_unsigned("<", i, i64(size_d)))
                coords.append(i)
            lead_in = (plan.batch, *plan.in_spatial[:-1])
            start = b.mul(linearize(b, [n, *coords], lead_in), i64(in_last * c))
            row_ptr = (
                element(x_base, start)
                if not coords
                else b.select(valid, element(x_base, start), zero_row)
            )
            wins = (*(w.size for w in plan.window[:-1]),)
            w_lead = b.mul(linearize(b, k_lead, wins), i64(w_last.size)) if k_lead else i64(0)

            def last_position(k: ir.Value) -> None:
                ptrs = []
                for p in range(count):
                    o = b.add(o0, i64(p))
                    ix = b.add(
                        b.sub(b.mul(o, i64(w_last.stride)), i64(w_last.padding_low)),
                        b.mul(k, i64(w_last.window_dilation)),
                    )
                    ptr = b.gep(row_ptr, [b.mul(ix, i64(c))], source_etype=real)
                    if checked:
                        ptr = b.select(b.icmp_unsigned("<", ix, i64(in_last)), ptr, zero_row)
                    ptrs.append(ptr)
                w_row = b.mul(b.add(w_lead, k), i64(c * oc))

                def feature(ci: ir.Value) -> None:
                    w_at = b.add(w_row, b.mul(ci, i64(oc)))
                    wv = [
                        b.load(
                            element(w_base, b.add(w_at, i64(off))), typ=vec_types[wd], align=size
                        )
                        for off, wd in group
                    ]
                    for p in range(count):
                        x = b.load(b.gep(ptrs[p], [ci], source_etype=real), typ=real)
                        for v, (_, wd) in enumerate(group):
                            prod = b.fmul(splat(x, vec_types[wd]), wv[v])
                            b.store(
                                b.fadd(b.load(slots[p][v], typ=vec_types[wd]), prod), slots[p][v]
                            )

                if c <= UNROLL_FEATURES:
                    for ci in range(c):
                        feature(i64(ci))
                else:
                    emit_loop(
                        b, i64(0), i64(c), feature, "conv.ci", hints=(NO_VECTORIZE, NO_UNROLL)
                    )

            emit_loop(
                b,
                i64(0),
                i64(w_last.size),
                last_position,
                "conv.kw",
                hints=(NO_VECTORIZE, NO_UNROLL),
            )

        lead_positions([])
        for p in range(count):
            at = b.mul(b.add(o0, i64(p)), i64(oc))
            for v, (off, wd) in enumerate(group):
                value = b.load(slots[p][v], typ=vec_types[wd])
                b.store(value, element(y_row, b.add(at, i64(off))), align=size)

    emit_loop(b, begin, end, row, "conv.rows", hints=(NO_VECTORIZE, NO_UNROLL))
    b.ret_void()
    shape = comp.root.shape
    return HeroLaunch((shape,), extent, max(1, out_last * oc * plan.window_size * c))
