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
threads split rows. Layouts other than channels-last, groups, base dilation, window reversal,
other element types and big kernels (``MAX_KERNEL_ELEMENTS``: there BLAS's blocking wins) stay
on the im2col thunk (convolution.py).
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
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

MAX_ZERO_ELEMENTS = 1 << 16  # the zero row (last input dimension x features) is a constant
MAX_KERNEL_ELEMENTS = 1 << 15
"""Window x features x output features above which im2col + BLAS wins: every pixel block streams
a group's kernel columns again (one thread, CPU time, kernel / im2col: [8,16,16,64] 3x3 -> 64:
0.98; 3x3x32 -> 128 0.97; 7x7x3 -> 64 0.80; 3x3x16 -> 16 0.34; but 3x3x128 -> 128 1.36, 1x1x256
-> 256 1.44, 3x3x512 -> 512 on [2,8,8] 11)."""
MAX_PIXELS = 8  # output pixels per register block
GROUP_VECTORS = (2, 4)  # output-feature vectors per register block: 16 / 32 vector registers
ACCUMULATORS = (12, 24)  # accumulator vectors per register block: 16 / 32 vector registers
code_settings.declare(
    __name__,
    "MAX_ZERO_ELEMENTS",
    "MAX_KERNEL_ELEMENTS",
    "MAX_PIXELS",
    "GROUP_VECTORS",
    "ACCUMULATORS",
)


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
    if rhs.size > MAX_KERNEL_ELEMENTS:
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
    # never past the row: a low padding cropped back by a negative high one can put the first
    # inside window beyond it, and an edge block starting there would write past the row
    lo = min(out, max(0, -(-low // w.stride)))
    last = size - 1 + low - (w.size - 1) * w.window_dilation
    hi = min(out, last // w.stride + 1) if last >= 0 else 0
    return lo, max(lo, hi)


def _blocking(out_features: int, lanes: int, vector_bits: int):
    """(segments per full group, number of full groups, the last group or None, pixels per
    block): output features in vectors of ``lanes``, a few vectors per register block."""
    wide = vector_bits >= 512  # 32 vector registers (AVX-512), else 16
    per_group = GROUP_VECTORS[wide]
    full_groups, rest = divmod(out_features, per_group * lanes)
    last = [(o, min(lanes, rest - o)) for o in range(0, rest, lanes)] or None
    widest = per_group if full_groups else len(last)
    budget = ACCUMULATORS[wide]
    pixels = max(1, min(MAX_PIXELS, budget // widest))
    return per_group, full_groups, last, pixels


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
    per_group, full_groups, last, pixels = _blocking(plan.out_features, lanes, vector_bits)
    full = [(v * lanes, lanes) for v in range(per_group)]
    groups = ([full] if full_groups else []) + ([last] if last else [])
    c, oc = plan.features, plan.out_features
    in_last, out_last, w_last = plan.in_spatial[-1], plan.out_spatial[-1], plan.window[-1]

    zeros_type = ir.ArrayType(real, max(in_last, 1) * c)  # an empty row still reads c zeros
    zeros = ir.GlobalVariable(module, zeros_type, f"{name}_zeros")
    zeros.initializer = ir.Constant(zeros_type, None)
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
        # checked blocks, as wide as the wider edge: [0, lo) and [inner, out_last)
        edge = max(1, min(pixels, max(lo, out_last - inner)))
        heads, tails = -(-lo // edge), -(-(out_last - inner) // edge)

        def features(co0: ir.Value, group) -> None:
            if inner > lo:

                def block(k: ir.Value) -> None:
                    o0 = b.add(i64(lo), b.mul(k, i64(pixels)))
                    pixel_block(n, o_lead, y_row, o0, co0, pixels, False, group)

                count = (inner - lo) // pixels
                emit_loop(b, i64(0), i64(count), block, "conv.px", hints=(NO_VECTORIZE, NO_UNROLL))
            if heads + tails:

                def edge_block(j: ir.Value) -> None:
                    head = b.icmp_signed("<", j, i64(heads))
                    o0 = b.select(
                        head,
                        b.mul(j, i64(edge)),
                        b.add(i64(inner), b.mul(b.sub(j, i64(heads)), i64(edge))),
                    )
                    pixel_block(n, o_lead, y_row, o0, co0, edge, True, group)

                emit_loop(
                    b,
                    i64(0),
                    i64(heads + tails),
                    edge_block,
                    "conv.edge",
                    hints=(NO_VECTORIZE, NO_UNROLL),
                )

        if full_groups:
            step = per_group * lanes
            emit_loop(
                b,
                i64(0),
                i64(full_groups),
                lambda g: features(b.mul(g, i64(step)), full),
                "conv.co",
                hints=(NO_VECTORIZE, NO_UNROLL),
            )
        if last:
            features(i64(full_groups * per_group * lanes), last)

    def pixel_block(n, o_lead, y_row, o0, co0, count: int, checked: bool, group) -> None:
        """``count`` pixels from ``o0`` x the vectors ``group`` (offsets from ``co0``); checked:
        every position tested, pixels past the row's end clamped to its last (recomputed)."""

        def pixel(p: int) -> ir.Value:
            o = b.add(o0, i64(p))
            if not checked or p == 0:
                return o
            return b.select(b.icmp_signed("<", o, i64(out_last)), o, i64(out_last - 1))

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
                    o = pixel(p)
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
                            element(w_base, b.add(w_at, b.add(co0, i64(off)))),
                            typ=vec_types[wd],
                            align=size,
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

                emit_loop(b, i64(0), i64(c), feature, "conv.ci", hints=(NO_VECTORIZE, NO_UNROLL))

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
            at = b.add(b.mul(pixel(p), i64(oc)), co0)
            for v, (off, wd) in enumerate(group):
                value = b.load(slots[p][v], typ=vec_types[wd])
                b.store(value, element(y_row, b.add(at, i64(off))), align=size)

    emit_loop(b, begin, end, row, "conv.rows", hints=(NO_VECTORIZE, NO_UNROLL))
    b.ret_void()
    shape = comp.root.shape
    return HeroLaunch((shape,), extent, max(1, out_last * oc * plan.window_size * c))
