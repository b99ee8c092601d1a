"""Shape rule: fft (FFT, IFFT, RFFT, IRFFT over the trailing len(fft_length) dimensions).

Follows XLA's ``InferFftShape`` and StableHLO's constraints: 1 to 3 transformed dimensions, FFT and
IFFT map complex to the same complex type, RFFT maps f32/f64 to c64/c128 with the last dimension
``n // 2 + 1``, IRFFT the reverse. hlort is stricter than XLA in one place: for FFT and IFFT the
trailing dimensions must equal ``fft_length`` too (XLA does not check them, but a mismatch has no
defined meaning: nothing says whether to crop or pad).
"""

from __future__ import annotations

from hlort import dtypes
from hlort.ir.attributes import FftType
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.dimension_lists import integer_tuple
from hlort.shape import ArrayShape, Shape

_COMPLEX_OF = {"f32": dtypes.C64, "f64": dtypes.C128}


def rfft_bins(n: int) -> int:
    """The last dimension RFFT produces for a real length ``n`` (0 stays 0)."""
    return 0 if n == 0 else n // 2 + 1


@shape_rule(Opcode.FFT)
def _fft(q: ShapeQuery) -> Shape:
    x = q.array(0)
    kind = q.attr("fft_type")
    if not isinstance(kind, FftType):
        q.fail(f"fft_type={kind!r} must be one of FFT, IFFT, RFFT, IRFFT")
    length = integer_tuple(q, q.attr("fft_length"), "fft_length")
    if not 1 <= len(length) <= 3:
        q.fail(f"fft_length={list(length)} must have 1 to 3 entries, got {len(length)}")
    if any(n < 0 for n in length):
        q.fail(f"fft_length={list(length)} must not be negative")
    k = len(length)
    if x.rank < k:
        q.fail(f"operand {x} has rank {x.rank}, less than len(fft_length)={k}")
    trailing = x.dims[x.rank - k :]

    def mismatch(expected) -> None:
        q.fail(
            f"{kind.value}: the trailing dimensions {list(trailing)} of operand {x} must be "
            f"{list(expected)} for fft_length={list(length)}"
        )

    if kind in (FftType.FFT, FftType.IFFT):
        if not x.dtype.is_complex:
            q.fail(f"{kind.value} needs a complex operand (c64 or c128), got {x}")
        if trailing != length:
            mismatch(length)
        return x
    if kind is FftType.RFFT:
        if x.dtype.name not in _COMPLEX_OF:
            q.fail(f"RFFT needs an f32 or f64 operand, got {x}")
        if trailing != length:
            mismatch(length)
        dims = x.dims[:-1] + (rfft_bins(length[-1]),)
        return ArrayShape(_COMPLEX_OF[x.dtype.name], dims)
    if not x.dtype.is_complex:
        q.fail(f"IRFFT needs a complex operand (c64 or c128), got {x}")
    expected = length[:-1] + (x.dims[-1] if x.dims[-1] == length[-1] == 0 else length[-1] // 2 + 1,)
    if trailing != expected:
        mismatch(expected)
    return ArrayShape(x.dtype.component, x.dims[:-1] + (length[-1],))
