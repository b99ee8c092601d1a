"""A backend's pass options as cache-key text: what each pass is and was built with, and its code.

The executable cache stores optimized modules, so its key must change whenever the passes would
optimize differently: a pass's class (module and qualified name), every constructor argument it
kept (a threshold, a policy, a callback), recursively, and the source of the code outside the
core digest (:func:`hlort.plugin.base.source_digest.core_source_digest`) that those classes and
callbacks come from: the package of a plugin's pass or ``can_emit``, so editing a default in a
plugin's ``__init__`` is noticed as an edit to the core's passes is. Text, not ``repr``: a
default ``repr`` carries an address that differs in every process. A value it cannot describe
stably (an object without state it can read, a cycle) gives None: no key, no cache, rather than
a key that might match a differently built pass.
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import types
from typing import TYPE_CHECKING

from hlort.plugin.base.source_digest import CORE_DIGEST_PARTS, source_digest

if TYPE_CHECKING:
    from hlort.passes.pass_options import PassOptions

_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_NAMED = (types.BuiltinFunctionType, type, types.ModuleType)


class _Unstable(Exception):
    """A value with no stable description."""


def pass_options_identity(wanted: PassOptions) -> str | None:
    """Text equal for equally built pass options (in any process), or None."""
    modules: set[str] = set()
    try:
        parts = [_describe(v, modules, ()) for v in (wanted.policy, wanted.before, wanted.after)]
    except _Unstable:
        return None
    roots = {root for name in modules for root in _code_roots(name)}
    sources = [f"{root}:{_package_digest(root)}" for root in sorted(roots)]
    return "\0".join([*parts, *sources])


def _describe(value, modules: set[str], seen: tuple[int, ...]) -> str:
    if isinstance(value, _SCALARS):
        return repr(value)
    if id(value) in seen:
        raise _Unstable
    seen = (*seen, id(value))
    if isinstance(value, enum.Enum):
        return f"{_qualified(type(value), modules)}.{value.name}"
    if isinstance(value, (tuple, list)):
        inner = ",".join(_describe(v, modules, seen) for v in value)
        return f"{type(value).__name__}[{inner}]"
    if isinstance(value, (set, frozenset)):
        return "set[" + ",".join(sorted(_describe(v, modules, seen) for v in value)) + "]"
    if isinstance(value, dict):
        items = sorted(
            f"{_describe(k, modules, seen)}:{_describe(v, modules, seen)}" for k, v in value.items()
        )
        return "dict{" + ",".join(items) + "}"
    if isinstance(value, _NAMED):
        return _qualified(value, modules)
    if isinstance(value, types.FunctionType):  # a closure's cells and defaults are arguments too
        cells = [c.cell_contents for c in value.__closure__ or ()]
        kept = (value.__defaults__, value.__kwdefaults__, cells)
        return _qualified(value, modules) + _describe(kept, modules, seen)
    if isinstance(value, types.MethodType):
        return f"{_describe(value.__self__, modules, seen)}.{value.__func__.__name__}"
    if isinstance(value, functools.partial):
        parts = (value.func, value.args, value.keywords)
        return "partial(" + ",".join(_describe(p, modules, seen) for p in parts) + ")"
    state = _state(value)
    fields = ",".join(f"{k}={_describe(v, modules, seen)}" for k, v in sorted(state.items()))
    return f"{_qualified(type(value), modules)}({fields})"


def _state(value) -> dict:
    """An object's attributes: its ``__dict__`` and filled ``__slots__``; none is unstable
    unless its class keeps nothing at all (then it is what its code says)."""
    state = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(value, slot):
                state[slot] = getattr(value, slot)
    if not state and not hasattr(value, "__dict__") and not hasattr(type(value), "__slots__"):
        raise _Unstable  # a C object whose state Python cannot read
    return state


def _qualified(obj, modules: set[str]) -> str:
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "?")
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        raise _Unstable
    modules.add(module)
    return f"{module}.{name}"


def _code_roots(module_name: str) -> tuple[str, ...]:
    """What to digest for code in ``module_name``: nothing for the core digest's own parts and
    the standard library; its top-level part of hlort (``hlort/codegen``...); a plugin's whole
    package and the core's emitters it builds on (``hlort/codegen``)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    top = module_name.partition(".")[0]
    if path is None or top in sys.stdlib_module_names:
        return ()
    core = os.path.dirname(sys.modules["hlort"].__file__)
    if top == "hlort":
        if any(_inside(path, os.path.join(core, part)) for part in CORE_DIGEST_PARTS):
            return ()
        part = os.path.relpath(os.path.realpath(path), os.path.realpath(core)).split(os.sep)[0]
        return (os.path.join(core, part),)
    package = sys.modules.get(top)
    if getattr(package, "__file__", None) and getattr(package, "__path__", None):
        return (os.path.dirname(package.__file__), os.path.join(core, "codegen"))
    return (path,)  # a module of its own (a script, a test file, a namespace package's)


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root + os.sep)


@functools.cache
def _package_digest(root: str) -> str:
    return source_digest(root)
