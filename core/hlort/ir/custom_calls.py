"""The custom-call target registry: what a ``custom-call``'s ``custom_call_target`` means.

XLA leaves a custom call's meaning to whoever registered its target. hlort keeps one registry that
both the shape rule (to check operands and the declared result) and the reference interpreter (to
evaluate) consult, so a target is added in one place:

    def shape(q):             # q: hlort.ir.shape_inference.ShapeQuery
        return q.operands[0]  # or validate q.declared and return it; fail with q.fail("...")

    def evaluate(ev, instr, x):  # ev: the Evaluator, instr: the custom-call, x: operand values
        return np.abs(x)

    register_custom_call("my_abs", shape_fn=shape, evaluate_fn=evaluate)

A target without a ``shape_fn`` accepts any operands and needs the declared result shape. An
unregistered target still builds and verifies (a backend plugin may know it), but evaluating it
raises UNIMPLEMENTED naming the target.

The registry is part of the IR (the shape rule reads it); the targets themselves are registered
explicitly by the layers that define them: the ones hlort ships by the reference interpreter
(:mod:`hlort.interpreter.custom_call_targets`, imported by the registry's first read through
:mod:`hlort.deferred_registrations`, which ``import hlort`` sets up without importing the
interpreter; a first compile that calls no custom call never imports it), the
StableHLO test corpus's ``check.*`` assertions by the testdata runner
(:mod:`hlort.testdata.check_targets`, imported by :mod:`hlort.testdata`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hlort.deferred_registrations import run_deferred
from hlort.errors import ErrorCode, HlortError, InvalidArgument, NotFound, Unimplemented
from hlort.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from hlort.ir.shape_inference import ShapeQuery
    from hlort.shape import Shape

ShapeFn = Callable[["ShapeQuery"], "Shape"]
EvaluateFn = Callable[..., object]


@dataclass(frozen=True)
class CustomCallTarget:
    """A registered target. ``evaluate_fn(ev, instr, *operand_values)`` returns the result value."""

    name: str
    shape_fn: ShapeFn | None = None
    evaluate_fn: EvaluateFn | None = None
    description: str = ""


_TARGETS: dict[str, CustomCallTarget] = {}
REGISTRY = "custom_calls"  # the name deferred registrations use (hlort/__init__.py)


def register_custom_call(
    target: str,
    shape_fn: ShapeFn | None = None,
    evaluate_fn: EvaluateFn | None = None,
    *,
    description: str = "",
    replace: bool = False,
) -> CustomCallTarget:
    """Register ``target``. Registering a name twice is ALREADY_EXISTS unless ``replace=True``."""
    run_deferred(REGISTRY)  # the shipped targets first, as if they had been imported eagerly
    if not isinstance(target, str) or not target:
        raise InvalidArgument(f"a custom-call target must be a non-empty string, got {target!r}")
    for label, fn in (("shape_fn", shape_fn), ("evaluate_fn", evaluate_fn)):
        if fn is not None and not callable(fn):
            raise InvalidArgument(f"custom-call target {target!r}: {label} must be callable")
    if target in _TARGETS and not replace:
        raise HlortError(
            f"custom-call target {target!r} is already registered; pass replace=True to override "
            "it, or unregister_custom_call it first",
            ErrorCode.ALREADY_EXISTS,
        )
    entry = CustomCallTarget(target, shape_fn, evaluate_fn, description)
    _TARGETS[target] = entry
    return entry


def unregister_custom_call(target: str) -> None:
    """Remove ``target``; NOT_FOUND when it is not registered."""
    run_deferred(REGISTRY)
    if _TARGETS.pop(target, None) is None:
        raise NotFound(f"custom-call target {target!r} is not registered")


def lookup_custom_call(target: str) -> CustomCallTarget | None:
    """The registered target, or None."""
    run_deferred(REGISTRY)
    return _TARGETS.get(target)


def registered_custom_calls() -> tuple[str, ...]:
    """Names of every registered target, sorted."""
    run_deferred(REGISTRY)
    return tuple(sorted(_TARGETS))


def target_name(q: ShapeQuery) -> str:
    """The ``custom_call_target`` a shape rule is checking (for its messages)."""
    return q.attrs.get("custom_call_target", "?")


def require_operand_count(q: ShapeQuery, n: int) -> None:
    """Fail the shape rule unless the custom call has ``n`` operands."""
    if len(q.operands) != n:
        q.fail(f"target {target_name(q)!r} takes {n} operand(s), got {len(q.operands)}")


def evaluator_for(target: str) -> EvaluateFn:
    """The reference implementation of ``target``; UNIMPLEMENTED (naming it and the fix) if none."""
    entry = lookup_custom_call(target)
    lapack = unsupported_lapack_routine(target)
    if lapack is not None:
        raise lapack
    if entry is None:
        fix = (
            "import hlort.testdata, which registers the StableHLO test suite's check.* targets"
            if target.startswith("check.")
            else f"register it with hlort.ir.custom_calls.register_custom_call({target!r}, "
            "shape_fn=..., evaluate_fn=...)"
        )
        raise Unimplemented(
            f"custom-call target {target!r} is not registered, so the reference interpreter "
            f"cannot evaluate it; {fix}"
        )
    if entry.evaluate_fn is None:
        raise Unimplemented(
            f"custom-call target {target!r} is registered without an evaluate_fn, so the "
            f"reference interpreter cannot evaluate it; re-register it with "
            f"register_custom_call({target!r}, ..., evaluate_fn=..., replace=True)"
        )
    return entry.evaluate_fn


def unsupported_lapack_routine(target: str) -> Unimplemented | None:
    """UNIMPLEMENTED for a ``lapack_<p><routine>_ffi`` target hlort does not register (JAX's
    CPU lowering of a routine hlort lacks), naming the routine, the ones hlort runs and the fix;
    None for a registered target or any other name. Compile raises it before anything else
    looks at the call, so the message is about the routine, not a layout or a shape."""
    if not (target.startswith("lapack_") and target.endswith("_ffi")):
        return None
    if lookup_custom_call(target) is not None:
        return None
    shipped = sorted(
        {
            name[len("lapack_") + 1 : -len("_ffi")]
            for name in registered_custom_calls()
            if name.startswith("lapack_") and name.endswith("_ffi")
        }
    )
    body = target[len("lapack_") : -len("_ffi")]
    precision = {"s": " (f32)", "d": " (f64)", "c": " (c64)", "z": " (c128)"}.get(body[:1], "")
    routine = body[1:] if precision else body
    return Unimplemented(
        f"custom call {target!r} is the LAPACK routine {routine!r}{precision} (JAX's CPU "
        "lowering of jnp.linalg / jax.scipy.linalg), which hlort does not support; hlort runs "
        f"{', '.join(shipped)}. Fix: run this program on JAX's own CPU backend, compute it "
        "without that routine, or register the target with "
        f"hlort.ir.custom_calls.register_custom_call({target!r}, shape_fn=..., evaluate_fn=...)"
    )
