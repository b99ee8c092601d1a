"""Shape rule: custom-call, checked through the target registry (:mod:`hlort.ir.custom_calls`).

A registered target's ``shape_fn`` checks the operands and gives the result; any other target
keeps its declared shape, since a backend may implement targets hlort does not know.
"""

from __future__ import annotations

from hlort.ir.computation import Computation
from hlort.ir.custom_calls import lookup_custom_call
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import Shape

# XLA's CustomCallApiVersion, by name and number.
API_VERSIONS = {
    "API_VERSION_ORIGINAL": 1,
    "API_VERSION_STATUS_RETURNING": 2,
    "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
    "API_VERSION_TYPED_FFI": 4,
}


@shape_rule(Opcode.CUSTOM_CALL)
def _custom_call(q: ShapeQuery) -> Shape:
    target = q.attr("custom_call_target")
    if not isinstance(target, str) or not target:
        q.fail(f"custom_call_target must be a non-empty string, got {target!r}")
    config = q.attrs.get("backend_config")
    if config is not None and not isinstance(config, (str, dict)):
        q.fail(f"backend_config must be a string (or a dict), got {type(config).__name__}")
    version = q.attrs.get("api_version")
    if version is not None and version not in API_VERSIONS and version not in (1, 2, 3, 4):
        q.fail(f"api_version must be one of {', '.join(API_VERSIONS)} (or 1..4), got {version!r}")
    if not isinstance(q.attrs.get("has_side_effect", False), bool):
        q.fail("has_side_effect must be a bool")
    callees = q.attrs.get("called_computations", ())
    if not isinstance(callees, (tuple, list)) or not all(
        isinstance(c, Computation) for c in callees
    ):
        q.fail("called_computations must be a sequence of computations")
    entry = lookup_custom_call(target)
    if entry is not None and entry.shape_fn is not None:
        return entry.shape_fn(q)
    return q.need_declared()
