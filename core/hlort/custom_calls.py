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
raises UNIMPLEMENTED naming the target. The targets hlort ships are in
:mod:`hlort.custom_call_targets`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hlort.errors import ErrorCode, HlortError, InvalidArgument, NotFound, Unimplemented

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
_builtins_state = "unloaded"  # -> "loading" -> "loaded"


def _ensure_builtins() -> None:
    global _builtins_state
    if _builtins_state == "unloaded":
        _builtins_state = "loading"
        try:
            import hlort.custom_call_targets  # noqa: F401  (registers the shipped targets)
        except BaseException:
            _builtins_state = "unloaded"
            raise
        _builtins_state = "loaded"


def register_custom_call(
    target: str,
    shape_fn: ShapeFn | None = None,
    evaluate_fn: EvaluateFn | None = None,
    *,
    description: str = "",
    replace: bool = False,
) -> CustomCallTarget:
    """Register ``target``. Registering a name twice is ALREADY_EXISTS unless ``replace=True``."""
    _ensure_builtins()
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
    _ensure_builtins()
    if _TARGETS.pop(target, None) is None:
        raise NotFound(f"custom-call target {target!r} is not registered")


def lookup_custom_call(target: str) -> CustomCallTarget | None:
    """The registered target, or None."""
    _ensure_builtins()
    return _TARGETS.get(target)


def registered_custom_calls() -> tuple[str, ...]:
    """Names of every registered target, sorted."""
    _ensure_builtins()
    return tuple(sorted(_TARGETS))


def evaluator_for(target: str) -> EvaluateFn:
    """The reference implementation of ``target``; UNIMPLEMENTED (naming it and the fix) if none."""
    entry = lookup_custom_call(target)
    if entry is None:
        raise Unimplemented(
            f"custom-call target {target!r} is not registered, so the reference interpreter "
            f"cannot evaluate it; register it with hlort.custom_calls.register_custom_call("
            f"{target!r}, shape_fn=..., evaluate_fn=...)"
        )
    if entry.evaluate_fn is None:
        raise Unimplemented(
            f"custom-call target {target!r} is registered without an evaluate_fn, so the "
            f"reference interpreter cannot evaluate it; re-register it with "
            f"register_custom_call({target!r}, ..., evaluate_fn=..., replace=True)"
        )
    return entry.evaluate_fn
