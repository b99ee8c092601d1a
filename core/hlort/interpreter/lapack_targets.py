"""The LAPACK custom calls JAX emits for ``jnp.linalg`` on CPU (and TPU's ``Eigh``), registered.

Target names are ``lapack_<p><routine>_ffi`` with ``p`` in s (f32), d (f64), c (c64), z (c128):

| routine | operands | results | FFI attributes |
|---|---|---|---|
| potrf | a | (a factored, info) | uplo |
| getrf | a | (lu, 1-based pivots s32[..., min(m,n)], info) | |
| geqrf | a | (a with R and reflectors, tau) | |
| orgqr (s, d) / ungqr (c, z) | a, tau | q | |
| syevd (s, d) / heevd (c, z) | a | (vectors, values (real), info) | mode (V/N), uplo |
| gesdd, gesvd | a | (a, s (real), u, vt, info) | mode (A/S/N) |
| trsm | a, b (, alpha) | x | side (L/R), uplo (L/U), trans_x (N/T/C), diag (U/N) |
| geev (s, d) | a | (wr, wi, vl, vr (complex), info) | compute_left, compute_right (V/N) |
| geev (c, z) | a | (w, vl, vr, info) | compute_left, compute_right (V/N) |
| gees (s, d) | a | (t, vs, wr, wi, sdim, info) | mode (V/N), sort (N only) |
| gees (c, z) | a | (t, vs, w, sdim, info) | mode (V/N), sort (N only) |
| gehrd | a | (a with H and reflectors, tau[..., n-1], info) | low, high (1-based, s32) |
| sytrd (s, d) / hetrd (c, z) | a | (a, d (real), e (real), tau, info) | uplo |
| gtsv | dl, d, du, b | (dl, d, du as LAPACK leaves them, x, info) | |

gtsv's three diagonals have b's shape less its last dimension; JAX's kernel hands ``dl + 1``
to LAPACK (``dl[..., 0]`` and ``du[..., n-1]`` are unused). geev and gees results for a
real matrix carry the eigenvalues as two real arrays; geev's vectors are complex, the
conjugate pairs LAPACK packs into real columns already unpacked by JAX's kernel
(:mod:`hlort.interpreter.lapack_nonsymmetric`; gehrd, sytrd and gtsv:
:mod:`hlort.interpreter.lapack_reductions`).

trsm's optional third operand is the scalar ``alpha`` of the matrices' type (rank 0): JAX's
lowering passed it, a constant 1, until it dropped it, and XLA's kernel (jaxlib's
``TriMatrixEquationSolver``: operands ``x, y, alpha``) hands it to BLAS ``?trsm``, which solves
``op(a) x = alpha b`` (``x op(a) = alpha b``): ``b`` scaled first, then the substitution, and
``alpha = 0`` makes ``x`` zero without reading ``a`` or ``b``. Programs JAX exported then carry it.

``info`` is s32 with the batch shape; character attributes are ASCII codes (``uplo = 76`` is
'L'), read from the call's ``backend_config`` (:mod:`hlort.ffi_attributes`). JAX's TPU
lowerings use XLA's names: ``Qr`` (geqrf), ``ProductOfElementaryHouseholderReflectors`` (orgqr)
and ``Eigh`` (``backend_config="lower,sort,max_iter,tol"``, returning (vectors, values)).
Meanings are :mod:`hlort.interpreter.lapack_reference`'s; results are computed in f64 / c128
and rounded once to the declared types. Backends recognize these targets by
:func:`lapack_call` (the cpu plugin calls LAPACK itself; tpusim runs them as host ops).
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.ffi_attributes import parse_ffi_attributes
from hlort.ir.custom_calls import register_custom_call
from hlort.ir.shape_inference import ShapeQuery
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape, Shape, TupleShape

PREFIXES = {"s": dtypes.F32, "d": dtypes.F64, "c": dtypes.C64, "z": dtypes.C128}
# routine -> (operand count, result count)
ROUTINES = {
    "potrf": (1, 2),
    "getrf": (1, 3),
    "geqrf": (1, 2),
    "orgqr": (2, 1),
    "ungqr": (2, 1),
    "syevd": (1, 3),
    "heevd": (1, 3),
    "gesdd": (1, 5),
    "gesvd": (1, 5),
    "trsm": (2, 1),
    "geev": (1, 5),  # 4 results for c, z
    "gees": (1, 6),  # 5 for c, z
    "gehrd": (1, 3),
    "sytrd": (1, 5),
    "hetrd": (1, 5),
    "gtsv": (4, 5),
}
# routines whose results are checked by :func:`_expected_results` (shape and type, each one)
CHECKED = {"geev", "gees", "gehrd", "sytrd", "hetrd", "gtsv"}
OPTIONAL_OPERANDS = {"trsm": 1}  # trsm's alpha (module docstring)
REAL_ONLY, COMPLEX_ONLY = {"orgqr", "syevd", "sytrd"}, {"ungqr", "heevd", "hetrd"}


@dataclass(frozen=True)
class LapackCall:
    """One LAPACK custom call, decoded: its routine, element type and FFI attributes."""

    routine: str
    dtype: dtypes.DType
    attributes: dict

    def char(self, name: str, default: str) -> str:
        value = self.attributes.get(name)
        return default if value is None else chr(int(value))


def target_names() -> list[str]:
    names = []
    for prefix, dtype in PREFIXES.items():
        for routine in ROUTINES:
            if (routine in REAL_ONLY and dtype.is_complex) or (
                routine in COMPLEX_ONLY and not dtype.is_complex
            ):
                continue
            names.append(f"lapack_{prefix}{routine}_ffi")
    return names


# JAX's TPU lowerings of the same two steps of a QR: geqrf and orgqr under XLA's names.
TPU_QR = {"Qr": ("geqrf", 1, 2), "ProductOfElementaryHouseholderReflectors": ("orgqr", 2, 1)}


def lapack_call(instr) -> LapackCall | None:
    """The decoded call when ``instr`` is a LAPACK custom call hlort ships, else None."""
    target = instr.attrs.get("custom_call_target", "")
    if target in TPU_QR:
        dtype = instr.operands[0].shape.dtype
        routine = TPU_QR[target][0]
        routine = "ungqr" if routine == "orgqr" and dtype.is_complex else routine
        return LapackCall(routine, dtype, {})
    if not (target.startswith("lapack_") and target.endswith("_ffi")):
        return None
    body = target[len("lapack_") : -len("_ffi")]
    if len(body) < 2 or body[0] not in PREFIXES or body[1:] not in ROUTINES:
        return None
    config = parse_ffi_attributes(instr.attrs.get("backend_config"), instr.name)
    return LapackCall(body[1:], PREFIXES[body[0]], config)


def _results(shape: Shape) -> tuple[Shape, ...]:
    return shape.elements if isinstance(shape, TupleShape) else (shape,)


def _complex_of(dtype: dtypes.DType) -> dtypes.DType:
    return dtype if dtype.is_complex else (dtypes.C128 if dtype == dtypes.F64 else dtypes.C64)


def _expected_results(routine: str, dtype: dtypes.DType, ops: list[ArrayShape]):
    """The result shapes of a :data:`CHECKED` routine on operands ``ops``, or a message
    saying what is wrong with the operands."""
    real = dtype.component if dtype.is_complex else dtype
    if routine == "gtsv":
        dl, d, du, b = ops
        if b.rank < 2 or any(v.dims != b.dims[:-1] for v in (dl, d, du)):
            return "dl, d and du must have the shape of b less its last dimension (b: [..., n, k])"
        return (dl, d, du, b, ArrayShape(dtypes.S32, b.dims[:-2]))
    a = ops[0]
    if a.rank < 2 or a.dims[-1] != a.dims[-2]:
        return "its operand must be a batch of square matrices"
    batch, n = a.dims[:-2], a.dims[-1]
    info = ArrayShape(dtypes.S32, batch)

    def vector(t: dtypes.DType, size: int) -> ArrayShape:
        return ArrayShape(t, (*batch, size))

    if routine == "geev":
        vectors = ArrayShape(_complex_of(dtype), a.dims)
        values = (vector(dtype, n),) * (1 if dtype.is_complex else 2)
        return (*values, vectors, vectors, info)
    if routine == "gees":
        values = (vector(dtype, n),) * (1 if dtype.is_complex else 2)
        return (a, a, *values, info, info)
    if routine == "gehrd":
        return (a, vector(dtype, max(n - 1, 0)), info)
    m = max(n - 1, 0)
    return (a, vector(real, n), vector(real, m), vector(dtype, m), info)  # sytrd, hetrd


def _checked_shape(routine: str, dtype: dtypes.DType):
    """The shape rule of a :data:`CHECKED` routine: every declared result's type and shape."""
    count = ROUTINES[routine][0]

    def rule(q: ShapeQuery) -> Shape:
        target = q.attrs.get("custom_call_target")
        if len(q.operands) != count:
            q.fail(f"target {target!r} takes {count} operand(s), got {len(q.operands)}")
        ops = [q.array(i) for i in range(count)]
        if any(o.dtype != dtype for o in ops):
            q.fail(f"target {target!r} takes {dtype} operands, got {q.operands}")
        want = _expected_results(routine, dtype, ops)
        if isinstance(want, str):
            q.fail(f"target {target!r}: {want}; got {q.operands}")
        declared = q.need_declared()
        got = _results(declared)
        if len(got) != len(want) or any(
            not isinstance(g, ArrayShape) or (g.dtype, g.dims) != (w.dtype, w.dims)
            for g, w in zip(got, want, strict=False)
        ):
            spelled = "(" + ", ".join(str(w) for w in want) + ")"
            q.fail(f"target {target!r} on {q.operands} returns {spelled}; declared {declared}")
        return declared

    return rule


def _lapack_shape(routine: str, dtype: dtypes.DType | None):
    """The shape rule of ``routine`` on ``dtype`` (None: any float or complex type, the one of
    operand 0)."""
    operands, results = ROUTINES[routine]
    fixed = dtype

    def rule(q: ShapeQuery) -> Shape:
        target = q.attrs.get("custom_call_target")
        dtype = fixed or (q.array(0).dtype if q.operands else None)
        if dtype is None or not (dtype.is_float or dtype.is_complex):
            q.fail(f"target {target!r} takes float or complex matrices, got {q.operands}")
        extra = len(q.operands) - operands
        if not 0 <= extra <= OPTIONAL_OPERANDS.get(routine, 0):
            most = operands + OPTIONAL_OPERANDS.get(routine, 0)
            counts = f"{operands} or {most}" if most > operands else f"{operands}"
            q.fail(f"target {target!r} takes {counts} operand(s), got {len(q.operands)}")
        if extra and (q.array(operands).dtype != dtype or q.array(operands).rank != 0):
            q.fail(
                f"target {target!r}: operand {operands} (alpha) must be a {dtype} scalar "
                f"(rank 0), got {q.array(operands)}; a batch of alphas is not BLAS trsm's"
            )
        for i in range(operands):
            shape = q.array(i)
            if shape.dtype != dtype or shape.rank < (2 if i == 0 or routine == "trsm" else 1):
                q.fail(
                    f"target {target!r}: operand {i} must be a {dtype} matrix (batch "
                    f"dimensions leading), got {shape}"
                )
        declared = q.need_declared()
        if len(_results(declared)) != results:
            q.fail(f"target {target!r} returns {results} result(s); declared {declared}")
        first = _results(declared)[0]
        if (
            not isinstance(first, ArrayShape)
            or first.dims != q.array(operands - 1).dims
            and (routine != "orgqr" and routine != "ungqr")
        ):
            q.fail(
                f"target {target!r}: the first result must have the shape of the operand "
                f"it overwrites, got {declared}"
            )
        return declared

    return rule


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _round(values, shape: Shape):
    out = []
    for value, leaf in zip(values, _results(shape), strict=True):
        with np.errstate(all="ignore"):
            out.append(np.asarray(value).astype(leaf.dtype.numpy).reshape(leaf.dims))
    return tuple(out) if isinstance(shape, TupleShape) else out[0]


def evaluate_lapack(call: LapackCall, shape: Shape, *operands: np.ndarray):
    """The results of ``call`` (declared ``shape``) on ``operands``, by the reference."""
    from hlort.interpreter import lapack_reference as ref

    a = _wide(operands[0])
    routine = call.routine
    if routine == "potrf":
        values = ref.potrf(a, call.char("uplo", "L") == "L")
    elif routine == "getrf":
        values = ref.getrf(a)
    elif routine == "geqrf":
        values = ref.geqrf(a)
    elif routine in ("orgqr", "ungqr"):
        values = (ref.orgqr(a, _wide(operands[1])),)
    elif routine in ("syevd", "heevd"):
        values = ref.eigh(a, call.char("uplo", "L") == "L", call.char("mode", "V") == "V")
    elif routine in ("gesdd", "gesvd"):
        leaves = _results(shape)
        values = ref.svd(a, call.char("mode", "A"), leaves[2].dims, leaves[3].dims)
    elif routine in CHECKED:
        values = _evaluate_checked(call, [_wide(o) for o in operands])
    else:
        values = (
            ref.trsm(
                a,
                _wide(operands[1]),
                call.char("side", "L") == "L",
                call.char("uplo", "L") == "L",
                call.char("trans_x", "N"),
                call.char("diag", "N") == "U",
                _wide(operands[2])[()] if len(operands) > 2 else 1,
            ),
        )
    return _round(values, shape)


def gees_sort_unsupported(call: LapackCall) -> None:
    """UNIMPLEMENTED for gees with ``sort = S``: the call carries no ``select`` function (JAX's
    own kernel rejects it too)."""
    if call.char("sort", "N") != "N":
        from hlort.errors import Unimplemented

        raise Unimplemented(
            f"LAPACK gees with sort = {call.char('sort', 'N')!r}: ordering the Schur form needs "
            "a select function the FFI call does not carry (JAX's kernel rejects it too); "
            "call schur without sort_eig_vals"
        )


def _evaluate_checked(call: LapackCall, ops: list[np.ndarray]) -> tuple:
    from hlort.interpreter import lapack_nonsymmetric as nonsym
    from hlort.interpreter import lapack_reductions as red

    routine, a = call.routine, ops[0]
    if routine == "geev":
        w, vl, vr, info = nonsym.geev(
            a, call.char("compute_left", "N") == "V", call.char("compute_right", "V") == "V"
        )
        values = (w,) if a.dtype.kind == "c" else (w.real, w.imag)
        return (*values, vl, vr, info)
    if routine == "gees":
        gees_sort_unsupported(call)
        t, q, values, sdim, info = nonsym.gees(a, call.char("mode", "V") == "V")
        return (t, q, *values, sdim, info)
    if routine == "gehrd":
        n = a.shape[-1]
        low, high = call.attributes.get("low", 1), call.attributes.get("high", n)
        return red.gehrd(a, int(low), int(high))
    if routine in ("sytrd", "hetrd"):
        return red.sytrd(a, call.char("uplo", "L") == "L")
    return red.gtsv(*ops)


def _evaluate(ev, instr, *operands):
    return evaluate_lapack(lapack_call(instr), instr.shape, *operands)


def _eigh_tpu_shape(q: ShapeQuery) -> Shape:
    if len(q.operands) != 1 or q.array(0).rank < 2:
        q.fail(f"target 'Eigh' takes one (batched) square matrix, got {q.operands}")
    declared = q.need_declared()
    if len(_results(declared)) != 2:
        q.fail(f"target 'Eigh' returns (eigenvectors, eigenvalues); declared {declared}")
    return declared


def eigh_tpu_options(instr) -> tuple[bool, bool]:
    """(lower, sort) from ``Eigh``'s ``backend_config="lower,sort,max_iter,tol"``."""
    fields = str(instr.attrs.get("backend_config", "1,1")).split(",")
    try:
        return bool(int(fields[0])), bool(int(fields[1])) if len(fields) > 1 else True
    except ValueError:
        from hlort.errors import InvalidArgument

        raise InvalidArgument(
            f"{instr.name}: Eigh backend_config "
            f"{instr.attrs.get('backend_config')!r} is not "
            "'lower,sort,max_iter,tol'"
        ) from None


def _evaluate_eigh_tpu(ev, instr, a):
    from hlort.interpreter import lapack_reference as ref

    lower, _ = eigh_tpu_options(instr)  # LAPACK's values are sorted either way
    v, w, _ = ref.eigh(_wide(a), lower, True)
    return _round((v, w), instr.shape)


def register_lapack_targets() -> None:
    for name in target_names():
        body = name[len("lapack_") : -len("_ffi")]
        rule = _checked_shape if body[1:] in CHECKED else _lapack_shape
        register_custom_call(
            name,
            rule(body[1:], PREFIXES[body[0]]),
            _evaluate,
            description=f"LAPACK {body} (JAX's CPU lowering)",
        )
    for name, (routine, _, _) in TPU_QR.items():
        register_custom_call(
            name,
            _lapack_shape(routine, None),
            _evaluate,
            description=f"LAPACK {routine} (JAX's TPU lowering)",
        )
    register_custom_call(
        "Eigh",
        _eigh_tpu_shape,
        _evaluate_eigh_tpu,
        description="symmetric/Hermitian eigendecomposition (JAX's TPU lowering)",
    )
