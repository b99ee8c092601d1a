"""compiler-rt's float conversion and powi helpers, as LLVM IR on integers only.

LLVM lowers some conversions to calls of compiler-rt functions when the CPU has no instruction
for them: f64 -> f16 everywhere without AVX512-FP16 (``__truncdfhf2``), f32 <-> f16 without F16C
(``__truncsfhf2``, ``__extendhfsf2``), f32/f64 -> bf16 without AVX512-BF16, ``llvm.powi``. The
Python process has no compiler-rt, so the JIT defines them itself (runtime_library.py). Each body
uses integer operations only, so compiling it never needs the helper it defines.

The rounding is IEEE round-to-nearest-even computed on the bit patterns, in one step (never via
an intermediate type, which would round twice); subnormals, infinities and signed zeros are
exact, and a NaN stays a NaN with its top payload bits and the quiet bit set, as compiler-rt does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FloatFormat:
    ir_type: str  # the LLVM type ("half", "bfloat", "float", "double")
    bits: int
    significand_bits: int  # stored fraction bits

    @property
    def exponent_bias(self) -> int:
        return (1 << (self.bits - self.significand_bits - 2)) - 1

    @property
    def int_type(self) -> str:
        return f"i{self.bits}"


HALF = FloatFormat("half", 16, 10)
BFLOAT = FloatFormat("bfloat", 16, 7)
FLOAT = FloatFormat("float", 32, 23)
DOUBLE = FloatFormat("double", 64, 52)


def truncation_ir(
    name: str,
    src: FloatFormat,
    dst: FloatFormat,
    ret_type: str | None = None,
    arg_type: str | None = None,
) -> str:
    """``dst name(src)``: round a wider float to a narrower one (to nearest, ties to even)."""
    s, d, it = src.significand_bits, dst.significand_bits, src.int_type
    sig_diff = s - d
    bias_diff = src.exponent_bias - dst.exponent_bias
    abs_mask = (1 << (src.bits - 1)) - 1
    src_inf = ((1 << (src.bits - s - 1)) - 1) << s
    underflow = (bias_diff + 1) << s  # the smallest source value that is a normal destination
    overflow = (src.exponent_bias + dst.exponent_bias + 1) << s  # rounds to inf from here
    dst_inf = ((1 << (dst.bits - d - 1)) - 1) << d
    dst_qnan = 1 << (d - 1)
    src_nan_code = (1 << (s - 1)) - 1
    round_mask = (1 << sig_diff) - 1
    halfway = 1 << (sig_diff - 1)
    ret = ret_type or dst.ir_type
    arg = arg_type or src.ir_type
    to_bits = f"%a = bitcast {arg} %x to {it}" if arg != it else f"%a = add {it} %x, 0"
    out = (
        f"%r = bitcast {dst.int_type} %res to {ret}"
        if ret != dst.int_type
        else f"%r = add {dst.int_type} %res, 0"
    )
    return f"""
define {ret} @{name}({arg} %x) nounwind {{
entry:
  {to_bits}
  %abs = and {it} %a, {abs_mask}
  %sign = lshr {it} %a, {src.bits - 1}
  %ofs = sub {it} %abs, {underflow}
  %normal = icmp ult {it} %ofs, {overflow - underflow}
  ; normal destination: rebias, drop the low bits, round to nearest even
  %n_sh = lshr {it} %abs, {sig_diff}
  %n_abs = sub {it} %n_sh, {bias_diff << d}
  %n_round = and {it} %abs, {round_mask}
  ; subnormal destination: shift the significand (with its implicit bit) right, keep a sticky bit
  ; (a subnormal source has no implicit bit and the exponent of the smallest normal)
  %exp = lshr {it} %abs, {s}
  %src_sub = icmp eq {it} %exp, 0
  %exp_e = select i1 %src_sub, {it} 1, {it} %exp
  %shift = sub {it} {bias_diff + 1}, %exp_e
  %too_small = icmp ugt {it} %shift, {s}
  %shift_c = select i1 %too_small, {it} {s}, {it} %shift
  %frac = and {it} %a, {(1 << s) - 1}
  %implicit = select i1 %src_sub, {it} 0, {it} {1 << s}
  %sig = or {it} %frac, %implicit
  %low_bit = shl {it} 1, %shift_c
  %low_mask = sub {it} %low_bit, 1
  %lost = and {it} %sig, %low_mask
  %sticky_b = icmp ne {it} %lost, 0
  %sticky = zext i1 %sticky_b to {it}
  %den0 = lshr {it} %sig, %shift_c
  %den = or {it} %den0, %sticky
  %s_abs0 = lshr {it} %den, {sig_diff}
  %s_abs = select i1 %too_small, {it} 0, {it} %s_abs0
  %s_round0 = and {it} %den, {round_mask}
  %s_round = select i1 %too_small, {it} 0, {it} %s_round0
  %base = select i1 %normal, {it} %n_abs, {it} %s_abs
  %rbits = select i1 %normal, {it} %n_round, {it} %s_round
  %above = icmp ugt {it} %rbits, {halfway}
  %tie = icmp eq {it} %rbits, {halfway}
  %odd = and {it} %base, 1
  %tie_up = select i1 %tie, {it} %odd, {it} 0
  %up = select i1 %above, {it} 1, {it} %tie_up
  %rounded = add {it} %base, %up
  ; infinities and NaNs
  %is_nan = icmp ugt {it} %abs, {src_inf}
  %payload0 = and {it} %abs, {src_nan_code}
  %payload = lshr {it} %payload0, {sig_diff}
  %nan = or {it} %payload, {dst_inf | dst_qnan}
  %big = icmp uge {it} %abs, {overflow}
  %finite = select i1 %big, {it} {dst_inf}, {it} %rounded
  %mag = select i1 %is_nan, {it} %nan, {it} %finite
  %sign_d = shl {it} %sign, {dst.bits - 1}
  %all = or {it} %mag, %sign_d
  %res = trunc {it} %all to {dst.int_type}
  {out}
  ret {ret} %r
}}
"""


def extension_ir(name: str, src: FloatFormat, dst: FloatFormat, arg_type: str | None = None) -> str:
    """``dst name(src)``: widen a narrow float exactly (subnormals normalized)."""
    s, d = src.significand_bits, dst.significand_bits
    st, dt = src.int_type, dst.int_type
    sig_diff = d - s
    bias_diff = dst.exponent_bias - src.exponent_bias
    src_min_normal = 1 << s
    src_inf = ((1 << (src.bits - s - 1)) - 1) << s
    dst_inf = ((1 << (dst.bits - d - 1)) - 1) << d
    # Same exponent range (bf16 -> f32): subnormals stay subnormal, a plain shift like normals.
    low = src_min_normal if bias_diff else 0
    arg = arg_type or src.ir_type
    to_bits = f"%a = bitcast {arg} %x to {st}" if arg != st else f"%a = add {st} %x, 0"
    return f"""
declare {st} @llvm.ctlz.{st}({st}, i1)

define {dst.ir_type} @{name}({arg} %x) nounwind {{
entry:
  {to_bits}
  %abs = and {st} %a, {(1 << (src.bits - 1)) - 1}
  %sign = and {st} %a, {1 << (src.bits - 1)}
  %abs_w = zext {st} %abs to {dt}
  %ofs = sub {st} %abs, {low}
  %normal = icmp ult {st} %ofs, {src_inf - low}
  %n0 = shl {dt} %abs_w, {sig_diff}
  %n = add {dt} %n0, {bias_diff << d}
  %special = icmp uge {st} %abs, {src_inf}
  %frac = and {dt} %abs_w, {src_min_normal - 1}
  %p = shl {dt} %frac, {sig_diff}
  %inf_nan = or {dt} %p, {dst_inf}
  ; subnormal source: move the leading one to the implicit bit and lower the exponent
  %lz = call {st} @llvm.ctlz.{st}({st} %abs, i1 false)
  %scale = sub {st} %lz, {src.bits - s - 1}
  %scale_w = zext {st} %scale to {dt}
  %shift = add {dt} %scale_w, {sig_diff}
  %m0 = shl {dt} %abs_w, %shift
  %m = xor {dt} %m0, {1 << d}
  %e0 = sub {dt} {bias_diff + 1}, %scale_w
  %e = shl {dt} %e0, {d}
  %sub = or {dt} %m, %e
  %is_zero = icmp eq {st} %abs, 0
  %sub_or_zero = select i1 %is_zero, {dt} 0, {dt} %sub
  %nonnormal = select i1 %special, {dt} %inf_nan, {dt} %sub_or_zero
  %mag = select i1 %normal, {dt} %n, {dt} %nonnormal
  %sign_w = zext {st} %sign to {dt}
  %sign_d = shl {dt} %sign_w, {dst.bits - src.bits}
  %bits = or {dt} %mag, %sign_d
  %r = bitcast {dt} %bits to {dst.ir_type}
  ret {dst.ir_type} %r
}}
"""


def powi_ir(name: str, fmt: FloatFormat) -> str:
    """``x ** n`` for an i32 ``n`` by repeated squaring, as compiler-rt's ``__powi?f2``."""
    t = fmt.ir_type
    return f"""
define {t} @{name}({t} %x, i32 %n) nounwind {{
entry:
  br label %loop
loop:
  %r = phi {t} [1.0, %entry], [%r2, %next]
  %a = phi {t} [%x, %entry], [%a2, %next]
  %b = phi i32 [%n, %entry], [%b2, %next]
  %bit = and i32 %b, 1
  %odd = icmp ne i32 %bit, 0
  %ra = fmul {t} %r, %a
  %r2 = select i1 %odd, {t} %ra, {t} %r
  %b2 = sdiv i32 %b, 2
  %done = icmp eq i32 %b2, 0
  br i1 %done, label %exit, label %next
next:
  %a2 = fmul {t} %a, %a
  br label %loop
exit:
  %negative = icmp slt i32 %n, 0
  %inv = fdiv {t} 1.0, %r2
  %out = select i1 %negative, {t} %inv, {t} %r2
  ret {t} %out
}}
"""


def float_helpers() -> dict[str, str]:
    """Helper name -> its IR (a definition, with any declarations it needs)."""
    return {
        "__truncdfhf2": truncation_ir("__truncdfhf2", DOUBLE, HALF),
        "__truncsfhf2": truncation_ir("__truncsfhf2", FLOAT, HALF),
        "__gnu_f2h_ieee": truncation_ir("__gnu_f2h_ieee", FLOAT, HALF, ret_type="i16"),
        "__truncdfbf2": truncation_ir("__truncdfbf2", DOUBLE, BFLOAT),
        "__truncsfbf2": truncation_ir("__truncsfbf2", FLOAT, BFLOAT),
        "__extendhfsf2": extension_ir("__extendhfsf2", HALF, FLOAT),
        "__gnu_h2f_ieee": extension_ir("__gnu_h2f_ieee", HALF, FLOAT, arg_type="i16"),
        "__extendhfdf2": extension_ir("__extendhfdf2", HALF, DOUBLE),
        "__extendbfsf2": extension_ir("__extendbfsf2", BFLOAT, FLOAT),
        "__powisf2": powi_ir("__powisf2", FLOAT),
        "__powidf2": powi_ir("__powidf2", DOUBLE),
    }
