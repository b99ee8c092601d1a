"""Compiled sort, top-k and rng-bit-generator on cpu, bit for bit against the interpreter.

Every case asserts that the op ran as a compiled kernel (no FALLBACK) and that every output bit
(NaN payloads, the sign of zero) equals ``hlort.evaluate``'s. Inputs put NaN, +-inf, -0.0 and
many duplicates (ties) into every row, so stability and NaN placement are exercised.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402

ALL_TYPES = [
    "pred",
    "s8",
    "s16",
    "s32",
    "s64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
]
FLOATS = ["f16", "bf16", "f32", "f64"]


def _values(dt_name: str, dims, seed: int) -> np.ndarray:
    """Random values with edge values and many ties, of element type ``dt_name``."""
    rng = np.random.default_rng(seed)
    dt = dtypes.from_hlo_name(dt_name)
    size = int(np.prod(dims))
    if dt.is_pred:
        return rng.integers(0, 2, size).astype(bool).reshape(dims)
    if dt.is_integer:
        info = np.iinfo(dt.numpy)
        edges = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dt.numpy)
        wide = rng.integers(info.min, info.max, size, dtype=dt.numpy, endpoint=True)
        small = rng.integers(0, 4, size).astype(dt.numpy)  # ties
        x = np.where(rng.random(size) < 0.5, wide, small)
    else:
        edges = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0]).astype(dt.numpy)
        x = np.where(
            rng.random(size) < 0.5, rng.standard_normal(size) * 100, rng.integers(-2, 3, size)
        ).astype(dt.numpy)
        x[rng.random(size) < 0.05] = np.nan
        if dt.numpy.itemsize >= 2:  # NaNs with payloads and signs
            raw = x.view(f"u{dt.numpy.itemsize}")
            nan_bits = np.array(-np.nan, dt.numpy).view(raw.dtype) | raw.dtype.type(3)
            raw[rng.random(size) < 0.03] = nan_bits
    k = min(size, len(edges))
    x[rng.permutation(size)[:k]] = edges[:k]
    return x.reshape(dims)


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == bool:
        return x.view(np.uint8)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.itemsize in (1, 2, 4, 8) else x


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _flat(v)]
    return [np.asarray(value)]


def _check(module, args, op: str, more_args=()):
    """Compile once; for ``args`` and each of ``more_args``, every output bit must equal the
    interpreter's; every ``op`` must be compiled (no FALLBACK at all). Returns the first run's
    outputs."""
    exe = hlort.compile(module, "cpu")
    first = None
    for arguments in [args, *more_args]:
        got, want = _flat(exe(*arguments)), _flat(hlort.evaluate(module, arguments))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(_bits(g), _bits(w))
        first = got if first is None else first
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    count = sum(1 for i in module.entry.instructions if i.opcode.value == op)
    assert stats["compiled"].get(op, 0) == count >= 1, stats
    return first


# -- comparators ---------------------------------------------------------------------------------
def _order_type(dt_name: str) -> str:
    dt = dtypes.from_hlo_name(dt_name)
    return "TOTALORDER" if dt.is_float else "SIGNED" if dt.is_signed_integer else "UNSIGNED"


def _canonical(sub: Builder, p, dt_name: str):
    """JAX's _canonicalize_float_for_sort: -0.0 -> +0.0, every NaN -> +NaN."""
    zero = sub.constant(0.0, dt_name)
    nan = sub.constant(np.nan, dt_name)
    no_zero = sub.select(sub.compare(p, zero, "EQ"), zero, p)
    return sub.select(sub.compare(p, p, "NE"), nan, no_zero)


def jax_comparator(b: Builder, types: list[str], num_keys: int = 1, descending=False):
    """What jax.lax.sort emits: or(lt0, and(eq0, lt1 ...)) on canonicalized float keys."""
    sub = b.sub("jax_compare")
    params = []
    for i, t in enumerate(types):
        params.append(
            (
                sub.parameter(shape.array(t, []), f"lhs{i}"),
                sub.parameter(shape.array(t, []), f"rhs{i}"),
            )
        )
    result = None
    for k in reversed(range(num_keys)):
        x, y = params[k]
        t = types[k]
        if dtypes.from_hlo_name(t).is_float:
            x, y = _canonical(sub, x, t), _canonical(sub, y, t)
        ctype = _order_type(t)
        lt = sub.compare(y, x, "LT", ctype) if descending else sub.compare(x, y, "LT", ctype)
        if result is None:
            result = lt
        else:
            result = sub.or_(lt, sub.and_(sub.compare(x, y, "EQ", ctype), result))
    return sub.finish(result)


def s32_trick_comparator(b: Builder, t: str = "f32", payload: str | None = None):
    """Older JAX: floats bitcast to ints, negative ones flipped, compared as signed ints."""
    it = {"f32": "s32", "f64": "s64", "f16": "s16", "bf16": "s16"}[t]
    bits = dtypes.from_hlo_name(it).bits
    sub = b.sub("s32_trick")
    keys = []
    for side in ("lhs", "rhs"):
        p = sub.parameter(shape.array(t, []), side)
        i = sub.bitcast_convert(p, it)
        flipped = sub.xor(i, sub.constant((1 << (bits - 1)) - 1, it))
        keys.append(sub.select(sub.compare(i, sub.constant(0, it), "LT"), flipped, i))
    if payload is not None:
        sub.parameter(shape.array(payload, []), "lhs_payload")
        sub.parameter(shape.array(payload, []), "rhs_payload")
    return sub.finish(sub.compare(keys[0], keys[1], "LT"))


def float_not_ge_comparator(b: Builder, t: str):
    """not(a >= b): NaN is "less" than everything and everything "less" than NaN, no strict
    weak order; only the interpreter's exact network gives its answer."""
    sub = b.sub("not_ge")
    x = sub.parameter(shape.array(t, []), "lhs")
    y = sub.parameter(shape.array(t, []), "rhs")
    return sub.finish(sub.not_(sub.compare(x, y, "GE")))


def _sort_module(types, dims, dim, comparator_of, stable=True):
    b = Builder("sort")
    xs = [b.parameter(shape.array(t, dims)) for t in types]
    return b.build(b.sort(xs, comparator_of(b), dim, is_stable=stable))


# -- sort ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", ALL_TYPES)
def test_sort_every_type_plain_comparators(t):
    """Rows of 1, 7, 40 (insertion sort) and 300 (radix sort), ascending and descending under
    the type's total order, and ascending under the default comparison type (FLOAT for floats:
    -0.0 ties +0.0 and NaNs tie above +inf, which only the interpreter's key rule decides)."""
    b = Builder("sorts")
    results, args = [], []
    for n in (1, 7, 40, 300):
        for direction, ctype in (("LT", _order_type(t)), ("GT", _order_type(t)), ("LT", None)):
            x = b.parameter(shape.array(t, (3, n)))
            results.append(b.sort(x, b.comparator([t], direction, ctype), 1, is_stable=True))
            args.append(_values(t, (3, n), n + len(args)))
    _check(b.build(b.tuple(results)), args, "sort")


@pytest.mark.parametrize("t", FLOATS + ["s32", "u16"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [50, 1000], ids=lambda n: f"n{n}")  # insertion sort, radix sort
def test_sort_jax_comparator_with_nan_inf_and_zeros(t, descending, n):
    dims = (2, n)
    module = _sort_module([t], dims, 1, lambda b: jax_comparator(b, [t], descending=descending))
    x = _values(t, dims, 11)
    (got,) = _check(module, [x], "sort")
    if dtypes.from_hlo_name(t).is_float and not descending:
        tail = np.asarray(got[0], np.float64)
        assert np.isnan(tail[-1]) and not np.isnan(tail[0])


@pytest.mark.parametrize("t", ["f32", "f64", "f16", "bf16"])
def test_sort_s32_trick_comparator_runs_the_network(t):
    """Not a pattern the interpreter's fast path knows: the exact network, ties kept stable."""
    module = _sort_module([t, "s32"], (3, 100), 1, lambda b: s32_trick_comparator(b, t, "s32"))
    iota = np.broadcast_to(np.arange(100, dtype=np.int32), (3, 100)).copy()
    _, perm = _check(module, [_values(t, (3, 100), 2), iota], "sort")
    assert all(sorted(row) == list(range(100)) for row in perm.tolist())


@pytest.mark.parametrize("t", ["f32", "f16"])
def test_sort_comparator_without_strict_weak_order_matches_interpreter(t):
    module = _sort_module([t], (5, 77), 1, lambda b: float_not_ge_comparator(b, t))
    _check(module, [_values(t, (5, 77), 3)], "sort")


def test_sort_non_strict_comparator_le_matches_interpreter():
    module = _sort_module(["s32", "s32"], (2, 150), 1, lambda b: b.comparator(["s32", "s32"], "LE"))
    _check(module, [_values("s32", (2, 150), 4), _values("s32", (2, 150), 5)], "sort")


@pytest.mark.parametrize("key", ["f32", "s8", "u64", "bf16", "pred"])
@pytest.mark.parametrize("n", [33, 4096], ids=lambda n: f"n{n}")
def test_argsort_key_value_is_stable(key, n):
    """Sort (key, iota): the permutation keeps equal keys in their original order."""
    b = Builder("argsort")
    x = b.parameter(shape.array(key, (n,)))
    idx = b.iota(shape.array("s32", (n,)), 0)
    module = b.build(b.sort([x, idx], jax_comparator(b, [key, "s32"]), 0, is_stable=True))
    keys, perm = _check(module, [_values(key, (n,), n)], "sort")
    assert sorted(perm.tolist()) == list(range(n))


@pytest.mark.parametrize(
    "types",
    [["f64", "s64"], ["s16", "f32", "u8"], ["u32", "u32"], ["u8", "f32", "f64", "f16"]],
    ids=lambda t: "-".join(t),
)
def test_sort_two_keys_and_a_payload(types):
    dims = (3, 500)
    module = _sort_module(types, dims, 1, lambda b: jax_comparator(b, types, num_keys=2))
    args = [_values(t, dims, 7 + i) for i, t in enumerate(types)]
    for a in args[:2]:
        if a.dtype != bool:
            a[...] = a % 3 if a.dtype.kind in "iu" else np.round(a / 100)
    _check(module, args, "sort")


@pytest.mark.parametrize(
    "dims, dim",
    [
        ((6, 5), 0),
        ((6, 5), 1),
        ((4, 3, 5), 0),
        ((4, 3, 5), 1),
        ((4, 3, 5), 2),
        ((2, 300, 3), 1),
        ((0, 4), 1),
        ((4, 0), 1),
        ((4, 0), 0),
        ((1, 9), 0),
        ((9, 1), 1),
        ((1,), 0),
        ((1, 1, 1), 2),
    ],
)
def test_sort_along_any_dimension_and_degenerate_shapes(dims, dim):
    types = ["f32", "s32"]
    module = _sort_module(types, dims, dim, lambda b: jax_comparator(b, types))
    _check(module, [_values("f32", dims, 1), _values("s32", dims, 2)], "sort")
    module = _sort_module(["f16"], dims, dim, lambda b: s32_trick_comparator(b, "f16"))
    _check(module, [_values("f16", dims, 3)], "sort")


def test_plan_strategies():
    """The JAX comparators take the radix path; unrecognised exact ones the network, complex
    operands too; an exp comparator has no plan (FALLBACK)."""
    from hlort.codegen.llvm.sort_plan import plan_sort

    def plan(types, comparator_of, dims=(4, 8)):
        return plan_sort(_sort_module(types, dims, 1, comparator_of).entry.root)

    assert plan(["f32"], lambda b: jax_comparator(b, ["f32"])).strategy == "radix"
    two = plan(["bf16", "s32"], lambda b: jax_comparator(b, ["bf16", "s32"], 2))
    assert two.strategy == "radix" and [k.operand for k in two.keys] == [0, 1]
    assert (
        plan(["f32", "s32"], lambda b: s32_trick_comparator(b, "f32", "s32")).strategy == "network"
    )
    sub_exp = lambda b: _exp_comparator(b)  # noqa: E731
    assert plan(["f32"], sub_exp) is None
    assert plan(["c64"], lambda b: b.comparator(["c64"], "EQ")).strategy == "network"
    assert plan(["f32", "c128"], lambda b: jax_comparator(b, ["f32", "c128"])).strategy == "radix"
    assert plan(["c128"], _complex_sqrt_comparator) is None  # NumPy's csqrt: not reproduced


def _complex_sqrt_comparator(b: Builder):
    sub = b.sub("sqrt_less")
    p, q = sub.parameter(shape.array("c128", []), "p"), sub.parameter(shape.array("c128", []), "q")
    return sub.finish(sub.compare(sub.real(sub.sqrt(p)), sub.real(sub.sqrt(q)), "LT"))


def _exp_comparator(b: Builder):
    sub = b.sub("exp_less")
    p, q = sub.parameter(shape.array("f32", []), "p"), sub.parameter(shape.array("f32", []), "q")
    return sub.finish(sub.compare(sub.exp(p), sub.exp(q), "LT"))


def test_sort_large_rows_radix_and_threads():
    dims = (8, 20000)
    module = _sort_module(["f32"], dims, 1, lambda b: jax_comparator(b, ["f32"]))
    _check(module, [_values("f32", dims, 9)], "sort")
    module = _sort_module(["f32"], (1 << 17,), 0, lambda b: jax_comparator(b, ["f32"]))
    _check(module, [_values("f32", (1 << 17,), 10)], "sort")


# -- complex operands and exactly rounded comparator ops ---------------------------------------
def _complex_values(t: str, dims, seed: int) -> np.ndarray:
    """Complex values whose parts have NaN, +-inf, -0.0 and many ties (equal real parts)."""
    part = "f32" if t == "c64" else "f64"
    re, im = _values(part, dims, seed), _values(part, dims, seed + 1)
    z = np.empty(dims, dtypes.from_hlo_name(t).numpy)
    z.real, z.imag = re, im
    return z


def jax_complex_comparator(b: Builder, t: str, payload: str | None = None):
    """What jax.lax.sort emits for a complex key: its real, then its imaginary part, each
    canonicalized (-0.0 -> +0.0, NaN -> +NaN) and compared with LT."""
    part = "f32" if t == "c64" else "f64"
    sub = b.sub("complex_lt")
    x, y = sub.parameter(shape.array(t, []), "lhs"), sub.parameter(shape.array(t, []), "rhs")
    if payload is not None:
        sub.parameter(shape.array(payload, []), "lhs_payload")
        sub.parameter(shape.array(payload, []), "rhs_payload")
    xr, yr = _canonical(sub, sub.real(x), part), _canonical(sub, sub.real(y), part)
    xi, yi = _canonical(sub, sub.imag(x), part), _canonical(sub, sub.imag(y), part)
    lt = sub.or_(
        sub.compare(xr, yr, "LT"), sub.and_(sub.compare(xr, yr, "EQ"), sub.compare(xi, yi, "LT"))
    )
    return sub.finish(lt)


@pytest.mark.parametrize("t", ["c64", "c128"])
@pytest.mark.parametrize("dims, dim", [((3, 40), 1), ((300, 2), 0), ((0, 4), 1), ((1,), 0)])
def test_sort_complex_keys_with_jax_comparator(t, dims, dim):
    """Complex keys sort on the exact network (real, then imaginary part); an s32 payload
    rides along; every bit of both outputs equals the interpreter's."""
    module = _sort_module([t, "s32"], dims, dim, lambda b: jax_complex_comparator(b, t, "s32"))
    z = _complex_values(t, dims, 21)
    z.real[..., ::3] = 1.0  # ties on the real part
    iota = np.broadcast_to(
        np.arange(dims[dim], dtype=np.int32).reshape(
            [-1 if d == dim else 1 for d in range(len(dims))]
        ),
        dims,
    ).copy()
    _check(module, [z, iota], "sort")


@pytest.mark.parametrize("payload", ["c64", "c128"])
@pytest.mark.parametrize("n", [30, 500], ids=lambda n: f"n{n}")  # insertion sort, radix sort
def test_sort_real_keys_with_complex_payloads(payload, n):
    """A complex payload rides in the radix records (c64: its 8 bytes) or is gathered by
    position afterwards (c128, wider than a record word)."""
    types = ["f32", payload]
    module = _sort_module(types, (3, n), 1, lambda b: jax_comparator(b, types))
    _check(module, [_values("f32", (3, n), 5), _complex_values(payload, (3, n), 6)], "sort")


def test_sort_complex_under_an_equality_comparator():
    """NE on complex values is not an order at all; the network still gives the interpreter's
    permutation."""
    module = _sort_module(["c64"], (4, 33), 1, lambda b: b.comparator(["c64"], "NE"))
    _check(module, [_complex_values("c64", (4, 33), 8)], "sort")


def _unary_key_comparator(b: Builder, t: str, op: str):
    """compare(op(lhs), op(rhs), LT) with op one of the exactly rounded ops."""
    sub = b.sub(f"{op}_less")
    keys = []
    for side in ("lhs", "rhs"):
        p = sub.parameter(shape.array(t, []), side)
        if op == "remainder":
            divisor = sub.constant(np.array(1.5, dtypes.from_hlo_name(t).numpy))
            keys.append(sub.remainder(p, divisor))
        elif op == "reduce-precision":
            keys.append(sub.op(Opcode.REDUCE_PRECISION, (p,), exponent_bits=4, mantissa_bits=2))
        else:
            keys.append(getattr(sub, op)(p))
    return sub.finish(sub.compare(keys[0], keys[1], "LT"))


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("op", ["sqrt", "rsqrt", "remainder", "reduce-precision"])
def test_sort_with_correctly_rounded_comparator_ops_compiles(t, op):
    """sqrt is correctly rounded on both sides, rsqrt is ``1 / sqrt`` in f64 rounded once on
    both, fmod and reduce-precision are exact: the network reproduces the interpreter's order,
    ties (equal keys of different inputs, e.g. x mod 1.5) included."""
    module = _sort_module([t], (3, 70), 1, lambda b: _unary_key_comparator(b, t, op))
    x = _values(t, (3, 70), 13)
    x[1] = np.abs(x[1])  # sqrt and rsqrt of positive values: no NaN ties there
    _check(module, [x], "sort")


def test_sort_with_transcendental_comparator_stays_on_fallback(allow_fallback):
    """exp may round differently from NumPy's; the order could change, so it is not compiled."""
    b = Builder("exp_sort")
    x = b.parameter(shape.array("f32", (3, 8)))
    module = b.build(b.sort(x, _exp_comparator(b), 1))
    exe = hlort.compile(module, "cpu")
    a = _values("f32", (3, 8), 0)
    np.testing.assert_array_equal(_bits(exe(a)), _bits(hlort.evaluate(module, [a])))
    assert exe.raw.stats()["fallback"] == {"sort": 1}


# -- top-k ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", ALL_TYPES)
def test_top_k_every_type(t):
    """k of 0, up to 16 (a sorted buffer of the best while scanning) and more (a full sort),
    largest and smallest; ties keep the lower index first."""
    b = Builder("topk")
    results, args = [], []
    for n, k in ((8, 3), (200, 16), (200, 17), (200, 200), (5000, 40), (5, 0), (1, 1)):
        for largest in (True, False):
            x = b.parameter(shape.array(t, (3, n)))
            results.append(b.top_k(x, k, largest=largest))
            args.append(_values(t, (3, n), n + k + len(args)))
    _check(b.build(b.tuple(results)), args, "topk")


def test_top_k_rank1_and_rank3():
    for dims, k in (((50,), 4), ((2, 3, 70), 20)):
        b = Builder("topk")
        module = b.build(b.top_k(b.parameter(shape.array("f32", dims)), k))
        _check(module, [_values("f32", dims, 8)], "topk")


# -- rng-bit-generator -----------------------------------------------------------------------------
RNG_SHAPES = [
    (),
    (0,),
    (1,),
    (7,),
    (4, 5),
    (3, 5),
    (7, 3),
    (5, 1, 3),
    (5, 3, 7),
    (3, 0, 2),
    (2, 9000),
    (4097,),
    (9001,),
]


@pytest.mark.parametrize(
    "algorithm, size",
    [("rng_three_fry", 2), ("rng_philox", 2), ("rng_philox", 3), ("rng_default", 3)],
)
@pytest.mark.parametrize("t", ["u8", "f16", "s32", "f64"])  # every width; bits are raw
def test_rng_bit_generator_is_bit_exact(algorithm, size, t):
    """Every shape at once (one op each, chained through the state), for three states: random,
    all ones (the counter wraps and carries into the high word) and a fixed one."""
    b = Builder("rng")
    state = b.parameter(shape.array("u64", (size,)))
    outputs = []
    for dims in RNG_SHAPES:
        pair = b.rng_bit_generator(state, shape.array(t, dims), algorithm)
        state = b.get_tuple_element(pair, 0)
        outputs.append(b.get_tuple_element(pair, 1))
    module = b.build(b.tuple([state, *outputs]))
    seeds = [
        np.random.default_rng(size).integers(0, 2**64, size, dtype=np.uint64),
        np.full(size, 2**64 - 1, np.uint64),
        np.array([0x0123456789ABCDEF, 2**64 - 3, 7][:size], np.uint64),
    ]
    _check(module, [seeds[0]], "rng-bit-generator", [[s] for s in seeds[1:]])


def test_rng_bit_generator_large_output_in_parallel_blocks():
    for algorithm in ("rng_three_fry", "rng_philox"):
        for t in ("u32", "u64"):
            b = Builder("rng")
            state = b.parameter(shape.array("u64", (2,)))
            module = b.build(b.rng_bit_generator(state, shape.array(t, (301, 1025)), algorithm))
            _check(module, [np.array([42, 2**64 - 5000], np.uint64)], "rng-bit-generator")


# -- inside a native while loop (the driver passes the kernels' scratch from its arena) ----------
def test_sort_and_rng_in_a_native_while_loop():
    b = Builder("loop")
    vec, key = shape.array("f32", [4, 300]), shape.array("u64", [2])
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), vec, key)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, x, s = (bb.get_tuple_element(p, k) for k in range(4))
    pair = bb.rng_bit_generator(s, shape.array("u32", [4, 300]), "rng_three_fry")
    noisy = bb.add(x, bb.convert(bb.get_tuple_element(pair, 1), "f32"))
    y = bb.sort(noisy, jax_comparator(bb, ["f32"], descending=True), 1, is_stable=True)
    one = bb.constant(np.int32(1))
    body = bb.finish(bb.tuple([bb.add(i, one), n, y, bb.get_tuple_element(pair, 0)]))
    n0, x0, s0 = b.parameter(shape.scalar("s32")), b.parameter(vec), b.parameter(key)
    module = b.build(b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, x0, s0])))
    args = [np.int32(5), _values("f32", (4, 300), 1), np.array([3, 2**64 - 2], np.uint64)]
    exe = hlort.compile(module, "cpu")
    for g, w in zip(_flat(exe(*args)), _flat(hlort.evaluate(module, args)), strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(w))
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"].get("while (native)") == 1, stats
