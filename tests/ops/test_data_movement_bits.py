"""Data-movement ops return their operand's bits exactly, on every backend: signaling NaNs, NaN
payloads, -0.0, infinities and subnormals of every float type, alone and inside fusions.

The expected bits come from NumPy indexing on the raw bits (not from the interpreter), so the
interpreter is checked too. ``negate`` and ``abs`` are IEEE 754 sign-bit operations (5.5.1:
quiet, only the sign bit changes; LLVM's ``fneg``/``fabs``, which XLA emits): they keep payloads.
"""

from __future__ import annotations

import numpy as np
import pytest

import hlort
from hlort import Builder, dtypes, shape
from hlort.ir.attributes import GatherDimensionNumbers, ScatterDimensionNumbers
from hlort.plugin.registry import default_registry

PLATFORMS = ("interpreter", "cpu", "tpusim", "template")
FLOATS = ("f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2", "c64", "c128")

# signaling NaNs (+ and -), quiet NaNs with payloads, -0.0, +-inf, +-smallest subnormal, 1.0
_PATTERNS = {
    2: {
        "f16": [0x7C01, 0xFC01, 0x7E01, 0x7FFF, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x8001, 0x3C00],
        "bf16": [0x7F81, 0xFF81, 0x7FC1, 0x7FFF, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x3F80],
    },
    4: [
        0x7F800001,
        0xFF800001,
        0x7FC00001,
        0x7FBFFFFF,
        0x80000000,
        0x7F800000,
        0xFF800000,
        0x00000001,
        0x80000001,
        0x3F800000,
    ],
    8: [
        0x7FF0000000000001,
        0xFFF0000000000001,
        0x7FF8000000000001,
        0x7FF7FFFFFFFFFFFF,
        1 << 63,
        0x7FF0000000000000,
        0xFFF0000000000000,
        1,
        (1 << 63) | 1,
        0x3FF0000000000000,
    ],
    # float8: NaNs (e5m2 has signaling/payload ones), -0.0, infinities (e5m2), subnormals
    1: [0x7D, 0xFE, 0x7F, 0xFF, 0x80, 0x7C, 0xFC, 0x01, 0x81, 0x38],
}


def patterns(name: str, count: int, seed: int = 0) -> np.ndarray:
    """``count`` values of real float type ``name``, every bit pattern above in shuffled order."""
    dt = dtypes.from_hlo_name(name)
    width = np.dtype(dt.numpy).itemsize
    table = _PATTERNS[width][name] if width == 2 else _PATTERNS[width]
    bits = np.resize(np.array(table, dtype=np.uint64), count)
    bits = np.random.default_rng(seed).permutation(bits)
    return bits.astype(f"u{width}").view(dt.numpy)


def values(name: str, dims, seed: int = 0) -> np.ndarray:
    """An array of ``name`` (complex: both parts) holding the patterns."""
    dt = dtypes.from_hlo_name(name)
    count = int(np.prod(dims, dtype=np.int64))
    if not dt.is_complex:
        return patterns(name, count, seed).reshape(dims)
    part = dt.component.name
    pair = np.stack([patterns(part, count, seed), patterns(part, count, seed + 7)], axis=-1)
    return np.ascontiguousarray(pair).view(dt.numpy).reshape(dims)


def byte_view(a: np.ndarray) -> np.ndarray:
    """``a``'s bytes with one trailing axis per element: NumPy moves these without converting."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(*a.shape, a.dtype.itemsize)


def sign_flip(xv: np.ndarray, name: str, clear: bool = False) -> np.ndarray:
    """Flip (or clear) the sign bit of every component (little-endian bytes)."""
    out = xv.copy()
    dt = dtypes.from_hlo_name(name)
    part = dt.component.itemsize if dt.is_complex else dt.itemsize
    for top in range(part - 1, xv.shape[-1], part):
        out[..., top] = out[..., top] & 0x7F if clear else out[..., top] ^ 0x80
    return out


def raw(a) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(a))
    return a.reshape(-1).view(np.uint8)


def installed(platform: str) -> bool:
    return platform == "interpreter" or platform in {r.name for r in default_registry().records()}


_GATHER = GatherDimensionNumbers(
    offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
)
_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(1,),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(0,),
    index_vector_dim=1,
)
_PAD = [(1, 2, 1), (-1, 0, 2)]
_PAD_ROW = [(1, 0, 0), (0, 0, 0)]


def _padded(xv: np.ndarray, vv: np.ndarray, config) -> np.ndarray:
    """pad on the leading axes of a byte view: edges and interior, then negative edges cut."""
    dims = [
        (n - 1) * (i + 1) + 1 + max(lo, 0) + max(hi, 0) if n else max(lo, 0) + max(hi, 0)
        for n, (lo, hi, i) in zip(xv.shape[:-1], config, strict=True)
    ]
    out = np.broadcast_to(vv, (*dims, vv.shape[-1])).copy()
    out[tuple(slice(max(lo, 0), None, i + 1) for lo, _, i in config)][
        tuple(slice(0, n) for n in xv.shape[:-1])
    ] = xv
    cut = tuple(
        slice(-min(lo, 0), d - (-min(hi, 0))) for d, (lo, hi, _) in zip(dims, config, strict=True)
    )
    return out[cut]


def _overwrite(b: Builder, dt):
    sub = b.sub("overwrite")
    sub.parameter(shape.scalar(dt), "current")
    return b._comp(sub.finish(sub.parameter(shape.scalar(dt), "update")))


def _reverse_loop(b: Builder, x_shape):
    """while i < 3: (i + 1, reverse(x, [1])): the carry is reversed three times."""
    state = shape.tuple_of(shape.scalar("s32"), x_shape)
    c = b.sub("cond")
    s = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(s, 0), c.constant(np.int32(3)), "LT"))
    d = b.sub("body")
    s = d.parameter(state)
    i, x = d.get_tuple_element(s, 0), d.get_tuple_element(s, 1)
    body = d.finish(d.tuple([d.add(i, d.constant(np.int32(1))), d.reverse(x, [1])]))
    return cond, body


def cases(name: str):
    """(label, make(b, *params) -> root, arguments, expected byte view) for type ``name``."""
    dt = dtypes.from_hlo_name(name)
    x, y, u = values(name, (4, 6), 1), values(name, (4, 6), 2), values(name, (2, 3), 3)
    v = values(name, (1,), 4)[0:1].reshape(())
    xv, yv, uv, vv = byte_view(x), byte_view(y), byte_view(u), byte_view(v)
    pred = np.random.default_rng(5).random((4, 6)) < 0.5
    i32 = np.int32
    keys = np.random.default_rng(6).permuted(np.arange(24, dtype=i32).reshape(4, 6), axis=1)
    dus = xv.copy()
    dus[2:4, 1:4] = uv
    scattered = xv.copy()
    scattered[[0, 3]] = yv[:2]
    width = dt.itemsize
    out = [
        ("slice", lambda b, p: b.slice(p, [1, 0], [4, 6], [1, 2]), [x], xv[1:4, 0:6:2]),
        (
            "dynamic_slice",
            lambda b, p, i, j: b.dynamic_slice(p, [i, j], [2, 3]),
            [x, i32(1), i32(2)],
            xv[1:3, 2:5],
        ),
        (
            "dynamic_update_slice",
            lambda b, p, q, i, j: b.dynamic_update_slice(p, q, [i, j]),
            [x, u, i32(2), i32(1)],
            dus,
        ),
        ("reshape", lambda b, p: b.reshape(p, [6, 4]), [x], xv.reshape(6, 4, width)),
        ("transpose", lambda b, p: b.transpose(p, [1, 0]), [x], xv.transpose(1, 0, 2)),
        (
            "broadcast",
            lambda b, p: b.broadcast(p, [3, 4, 6], [1, 2]),
            [x],
            np.broadcast_to(xv, (3, 4, 6, width)),
        ),
        (
            "broadcast_scalar",
            lambda b, p: b.broadcast(p, [2, 3], []),
            [v],
            np.broadcast_to(vv, (2, 3, width)),
        ),
        (
            "concatenate",
            lambda b, p, q: b.concatenate([p, q], 1),
            [x, y],
            np.concatenate([xv, yv], 1),
        ),
        ("pad", lambda b, p, q: b.pad(p, q, _PAD), [x, v], _padded(xv, vv, _PAD)),
        ("reverse", lambda b, p: b.reverse(p, [0, 1]), [x], xv[::-1, ::-1]),
        (
            "gather",
            lambda b, p, i: b.gather(p, i, _GATHER, [1, 6]),
            [x, np.array([[3], [0], [2]], i32)],
            xv[[3, 0, 2]],
        ),
        (
            "scatter",
            lambda b, p, i, q: b.scatter([p], i, [q], _overwrite(b, dt), _SCATTER),
            [x, np.array([[0], [3]], i32), y[:2]],
            scattered,
        ),
        (
            "select",
            lambda b, c, p, q: b.select(c, p, q),
            [pred, x, y],
            np.where(pred[..., None], xv, yv),
        ),
        ("copy", lambda b, p: b.copy(p), [x], xv),
        ("tuple", lambda b, p, q: b.get_tuple_element(b.tuple([p, q]), 1), [x, y], yv),
        (
            "while",
            lambda b, p: b.get_tuple_element(
                b.while_loop(*_reverse_loop(b, p.shape), b.tuple([b.constant(np.int32(0)), p])), 1
            ),
            [x],
            xv[:, ::-1],
        ),
        (
            "sort_payload",
            lambda b, k, p: b.get_tuple_element(b.sort([k, p], b.comparator(["s32", dt]), 1), 1),
            [keys, x],
            np.take_along_axis(xv, np.argsort(keys, 1)[..., None], 1),
        ),
        ("negate", lambda b, p: b.negate(p), [x], sign_flip(xv, name)),
        # fused: data movement feeding data movement and sign-bit ops
        (
            "fused_slice_transpose_reverse",
            lambda b, p: b.reverse(b.transpose(b.slice(p, [1, 0], [4, 6], [1, 2]), [1, 0]), [0]),
            [x],
            xv[1:4, 0:6:2].transpose(1, 0, 2)[::-1],
        ),
        (
            "fused_concatenate_pad",
            lambda b, p, q, r: b.concatenate(
                [
                    b.pad(b.slice(p, [0, 0], [2, 6]), r, _PAD_ROW),
                    b.reverse(b.slice(q, [0, 0], [3, 6]), [1]),
                ],
                0,
            ),
            [x, y, v],
            np.concatenate([_padded(xv[0:2], vv, _PAD_ROW), yv[0:3, ::-1]], 0),
        ),
        (
            "fused_select_negate",
            lambda b, c, p, q: b.negate(b.select(c, b.transpose(p, [1, 0]), b.reverse(q, [0]))),
            [pred.T.copy(), x, values(name, (6, 4), 7)],
            sign_flip(
                np.where(
                    pred.T[..., None],
                    xv.transpose(1, 0, 2),
                    byte_view(values(name, (6, 4), 7))[::-1],
                ),
                name,
            ),
        ),
    ]
    if not dt.is_complex:
        unsigned = f"u{8 * width}"
        out += [
            ("abs", lambda b, p: b.abs(p), [x], sign_flip(xv, name, clear=True)),
            ("bitcast_convert", lambda b, p: b.bitcast_convert(p, unsigned), [x], xv),
            (
                "fused_bitcast_round_trip",
                lambda b, p: b.bitcast_convert(b.reverse(b.bitcast_convert(p, unsigned), [1]), dt),
                [x],
                xv[:, ::-1],
            ),
            (
                "fused_abs_broadcast",
                lambda b, p: b.broadcast(b.abs(b.reshape(p, [24])), [2, 24], [1]),
                [x],
                np.broadcast_to(sign_flip(xv, name, clear=True).reshape(24, width), (2, 24, width)),
            ),
        ]
    return out


def _run(platform: str, make, args) -> np.ndarray:
    b = Builder("bits")
    params = [b.parameter(shape.of_value(np.asarray(a))) for a in args]
    module = b.build(make(b, *params))
    result = hlort.compile(module, f"{platform}:0")(*[np.asarray(a) for a in args])
    return result[0] if isinstance(result, (list, tuple)) else result


def _describe(got: np.ndarray, expected: np.ndarray, width: int) -> str:
    g, e = got.reshape(-1, width), expected.reshape(-1, width)
    bad = np.nonzero((g != e).any(axis=1))[0]
    show = [
        f"[{k}] 0x{e[k][::-1].tobytes().hex()} -> 0x{g[k][::-1].tobytes().hex()}" for k in bad[:4]
    ]
    return f"{len(bad)} of {len(g)} elements differ: " + ", ".join(show)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", FLOATS)
def test_data_movement_keeps_every_bit(platform, name):
    """Each op (and fusion) on ``name`` values: the result's bytes are the expected bytes."""
    if not installed(platform):
        pytest.skip(f"hlort-{platform} is not installed")
    width = dtypes.from_hlo_name(name).itemsize
    failures = []
    for label, make, args, expected in cases(name):
        got = _run(platform, make, args)
        expected = np.ascontiguousarray(expected)
        if got.dtype != dtypes.from_hlo_name(name).numpy and label != "bitcast_convert":
            failures.append(f"{label}: dtype {got.dtype}")
        elif got.shape != expected.shape[:-1] or not np.array_equal(byte_view(got), expected):
            failures.append(f"{label}: " + _describe(byte_view(got), expected, width))
    assert not failures, f"{platform} {name}:\n" + "\n".join(failures)
