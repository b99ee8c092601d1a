"""compiler-rt's 128-bit integer helpers, as LLVM IR without 128-bit division.

On 64-bit targets LLVM calls ``__divti3``, ``__udivti3``, ``__modti3`` and ``__umodti3`` for
i128 division and ``__fix*ti`` / ``__float*ti*`` for conversions between floats and i128; the
JIT defines them (runtime_library.py). Division is shift-and-subtract (one bit per step, 64-bit
division when both operands fit), conversions to float round once to nearest even (the bits
below the top 64 fold into a sticky bit before the hardware's 64-bit conversion), conversions
from float truncate toward zero and saturate when out of range. Division by zero returns 0
(undefined behaviour in LLVM; never a trap here).
"""

from __future__ import annotations

_UDIVMOD = """
define internal {i128, i128} @hlort_udivmod128(i128 %n, i128 %d) nounwind {
entry:
  %zero = icmp eq i128 %d, 0
  br i1 %zero, label %by_zero, label %check
by_zero:
  ret {i128, i128} zeroinitializer
check:
  %nh = lshr i128 %n, 64
  %dh = lshr i128 %d, 64
  %both = or i128 %nh, %dh
  %narrow = icmp eq i128 %both, 0
  br i1 %narrow, label %small, label %loop
small:
  %n64 = trunc i128 %n to i64
  %d64 = trunc i128 %d to i64
  %q64 = udiv i64 %n64, %d64
  %r64 = urem i64 %n64, %d64
  %qs = zext i64 %q64 to i128
  %rs = zext i64 %r64 to i128
  %s0 = insertvalue {i128, i128} undef, i128 %qs, 0
  %s1 = insertvalue {i128, i128} %s0, i128 %rs, 1
  ret {i128, i128} %s1
loop:
  %i = phi i128 [127, %check], [%i2, %loop]
  %q = phi i128 [0, %check], [%q2, %loop]
  %r = phi i128 [0, %check], [%r3, %loop]
  %bit0 = lshr i128 %n, %i
  %bit = and i128 %bit0, 1
  %rsh = shl i128 %r, 1
  %r1 = or i128 %rsh, %bit
  %fits = icmp uge i128 %r1, %d
  %rsub = sub i128 %r1, %d
  %r3 = select i1 %fits, i128 %rsub, i128 %r1
  %qbit = shl i128 1, %i
  %qor = or i128 %q, %qbit
  %q2 = select i1 %fits, i128 %qor, i128 %q
  %i2 = sub i128 %i, 1
  %last = icmp eq i128 %i, 0
  br i1 %last, label %done, label %loop
done:
  %t0 = insertvalue {i128, i128} undef, i128 %q2, 0
  %t1 = insertvalue {i128, i128} %t0, i128 %r3, 1
  ret {i128, i128} %t1
}
"""


def _unsigned(name: str, part: int) -> str:
    return f"""
define i128 @{name}(i128 %a, i128 %b) nounwind {{
entry:
  %qr = call {{i128, i128}} @hlort_udivmod128(i128 %a, i128 %b)
  %v = extractvalue {{i128, i128}} %qr, {part}
  ret i128 %v
}}
"""


def _signed(name: str, part: int) -> str:
    """Quotient: sign of a xor b; remainder: sign of a (C's truncating division)."""
    sign = "%sa_sb = xor i1 %na, %nb" if part == 0 else "%sa_sb = or i1 %na, false"
    return f"""
define i128 @{name}(i128 %a, i128 %b) nounwind {{
entry:
  %na = icmp slt i128 %a, 0
  %nb = icmp slt i128 %b, 0
  %ma = sub i128 0, %a
  %mb = sub i128 0, %b
  %ua = select i1 %na, i128 %ma, i128 %a
  %ub = select i1 %nb, i128 %mb, i128 %b
  %qr = call {{i128, i128}} @hlort_udivmod128(i128 %ua, i128 %ub)
  %v = extractvalue {{i128, i128}} %qr, {part}
  {sign}
  %mv = sub i128 0, %v
  %out = select i1 %sa_sb, i128 %mv, i128 %v
  ret i128 %out
}}
"""


def _to_float(name: str, ftype: str, signed: bool) -> str:
    """i128 -> float: the top 64 significant bits with a sticky bit, converted, times 2**k."""
    bias, sig = (1023, 52) if ftype == "double" else (127, 23)
    it = "i64" if ftype == "double" else "i32"
    if signed:
        magnitude = """  %neg = icmp slt i128 %a, 0
  %m = sub i128 0, %a
  %u = select i1 %neg, i128 %m, i128 %a"""
        finish = f"""  %fneg = fneg {ftype} %f
  %out = select i1 %neg, {ftype} %fneg, {ftype} %f
  ret {ftype} %out"""
    else:
        magnitude = "  %u = or i128 %a, 0"
        finish = f"  ret {ftype} %f"
    return f"""
define {ftype} @{name}(i128 %a) nounwind {{
entry:
{magnitude}
  %lz = call i128 @llvm.ctlz.i128(i128 %u, i1 false)
  %width = sub i128 128, %lz
  %wide = icmp ugt i128 %width, 64
  %k0 = sub i128 %width, 64
  %k = select i1 %wide, i128 %k0, i128 0
  %top0 = lshr i128 %u, %k
  %top1 = trunc i128 %top0 to i64
  %one_k = shl i128 1, %k
  %low_mask = sub i128 %one_k, 1
  %low = and i128 %u, %low_mask
  %sticky_b = icmp ne i128 %low, 0
  %sticky = zext i1 %sticky_b to i64
  %top = or i64 %top1, %sticky
  %c = uitofp i64 %top to {ftype}
  %k_i = trunc i128 %k to {it}
  %e = add {it} %k_i, {bias}
  %e_bits = shl {it} %e, {sig}
  %scale = bitcast {it} %e_bits to {ftype}
  %f = fmul {ftype} %c, %scale
{finish}
}}
"""


def _from_double(name: str, signed: bool) -> str:
    """double -> i128 toward zero; saturating (NaN gives the largest value)."""
    if signed:
        limit = """  %sat = select i1 %neg, i128 -170141183460469231731687303715884105728, \
i128 170141183460469231731687303715884105727
  %big = icmp sge i64 %e, 127"""
        finish = """  %mv = sub i128 0, %v
  %sv = select i1 %neg, i128 %mv, i128 %v"""
    else:
        limit = """  %sat = select i1 %neg, i128 0, i128 -1
  %big = icmp sge i64 %e, 128"""
        finish = "  %sv = select i1 %neg, i128 0, i128 %v"
    return f"""
define i128 @{name}(double %x) nounwind {{
entry:
  %a = bitcast double %x to i64
  %neg0 = icmp slt i64 %a, 0
  %abs = and i64 %a, 9223372036854775807
  %is_nan = icmp ugt i64 %abs, 9218868437227405312
  %neg = select i1 %is_nan, i1 false, i1 %neg0
  %be = lshr i64 %abs, 52
  %e = sub i64 %be, 1023
{limit}
  %tiny = icmp slt i64 %e, 0
  %frac = and i64 %abs, 4503599627370495
  %sig64 = or i64 %frac, 4503599627370496
  %sig = zext i64 %sig64 to i128
  %right = icmp slt i64 %e, 52
  %rs0 = sub i64 52, %e
  %ls0 = sub i64 %e, 52
  %rs1 = select i1 %right, i64 %rs0, i64 0
  %ls1 = select i1 %right, i64 0, i64 %ls0
  %ls2 = select i1 %big, i64 0, i64 %ls1
  %rs2 = select i1 %tiny, i64 0, i64 %rs1
  %rs = zext i64 %rs2 to i128
  %ls = zext i64 %ls2 to i128
  %shr = lshr i128 %sig, %rs
  %v = shl i128 %shr, %ls
{finish}
  %r0 = select i1 %tiny, i128 0, i128 %sv
  %r = select i1 %big, i128 %sat, i128 %r0
  ret i128 %r
}}
"""


def _from_float(name: str, via: str) -> str:
    return f"""
define i128 @{name}(float %x) nounwind {{
entry:
  %d = fpext float %x to double
  %r = call i128 @{via}(double %d)
  ret i128 %r
}}
"""


def int128_helpers() -> dict[str, str]:
    """Helper name -> its IR; the shared division routine rides along with each user."""
    ctlz = "declare i128 @llvm.ctlz.i128(i128, i1)\n"
    out = {
        "__udivti3": _UDIVMOD + _unsigned("__udivti3", 0),
        "__umodti3": _UDIVMOD + _unsigned("__umodti3", 1),
        "__divti3": _UDIVMOD + _signed("__divti3", 0),
        "__modti3": _UDIVMOD + _signed("__modti3", 1),
        "__floattidf": ctlz + _to_float("__floattidf", "double", signed=True),
        "__floattisf": ctlz + _to_float("__floattisf", "float", signed=True),
        "__floatuntidf": ctlz + _to_float("__floatuntidf", "double", signed=False),
        "__floatuntisf": ctlz + _to_float("__floatuntisf", "float", signed=False),
        "__fixdfti": _from_double("__fixdfti", signed=True),
        "__fixunsdfti": _from_double("__fixunsdfti", signed=False),
    }
    out["__fixsfti"] = out["__fixdfti"] + _from_float("__fixsfti", "__fixdfti")
    out["__fixunssfti"] = out["__fixunsdfti"] + _from_float("__fixunssfti", "__fixunsdfti")
    return out
