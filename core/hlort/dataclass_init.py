"""A dataclass's ``__init__`` and frozen guards without ``exec`` (until ``__init__`` runs often).

Python 3.11's :func:`dataclasses.dataclass` writes the source of ``__init__`` (and of a frozen
class's ``__setattr__``/``__delattr__``) and compiles each with ``exec``: ~0.5M instructions
(callgrind) a function, ~38M of a process's first compile, which makes ~36 lazy dataclasses and
calls most ``__init__`` a few times. :func:`exec_free_methods` makes, while it is active, the
standard decorator's own ``_init_fn`` and ``_frozen_get_del_attr`` (given the very arguments
they would get) return functions built without compiling source:

- ``__init__`` is a copy of one small code object, renamed (``code.replace``) to the class's
  exact parameters (names, order, keyword-only ones) with the standard defaults, so Python
  binds the arguments itself (same signature, same errors); its body hands ``locals()`` to a
  closure that sets each field by the standard library's rules (default factories,
  ``init=False`` fields, InitVars, ``object.__setattr__`` for a frozen class) and calls
  ``__post_init__``. After :data:`TIER_UP_CALLS` calls the class's ``__init__`` is replaced by
  the standard generated one (same arguments), so a class made in bulk pays the source compile
  once and then runs the fast code.
- The frozen guards are shared closures with the standard bodies.

Where the standard library's private functions do not have the signatures this was written
against (another Python version), nothing is replaced and the standard decorator runs as is. A
standard ``@dataclass`` another thread makes meanwhile gets the same functions (the same
behaviour; it keeps the template ``__init__``, as nothing tells that class to hand over).
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import dataclasses
import threading
import types

TIER_UP_CALLS = 64
_lock = threading.RLock()
_active = contextvars.ContextVar("hlort_exec_free_methods", default=False)
_INIT_ARGS = ("fields", "std_fields", "kw_only_fields", "frozen", "has_post_init", "self_name")
_GUARD_ARGS = ("cls", "fields", "globals")


def _template(self):
    _hlort_dataclass_assign(self, locals())  # noqa: F821 - the function's own globals hold it


def _signature_is(fn, names: tuple[str, ...]) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_varnames[: len(names)] == names


SUPPORTED = (
    _signature_is(getattr(dataclasses, "_init_fn", None), _INIT_ARGS)
    and _signature_is(getattr(dataclasses, "_frozen_get_del_attr", None), _GUARD_ARGS)
    and all(
        hasattr(dataclasses, name)
        for name in ("_HAS_DEFAULT_FACTORY", "_FIELD_INITVAR", "_POST_INIT_NAME", "_set_qualname")
    )
)


@contextlib.contextmanager
def exec_free_methods():
    """While active (one thread at a time), the standard decorator makes ``__init__`` and the
    frozen guards without ``exec``; a no-op where :data:`SUPPORTED` is false, or nested."""
    if not SUPPORTED or _active.get():
        yield
        return
    with _lock:
        standard_init, standard_guards = dataclasses._init_fn, dataclasses._frozen_get_del_attr
        dataclasses._init_fn = _init_fn_for(standard_init)
        dataclasses._frozen_get_del_attr = _frozen_guards
        _active.set(True)
        try:
            yield
        finally:
            _active.set(False)
            dataclasses._init_fn = standard_init
            dataclasses._frozen_get_del_attr = standard_guards


def _init_fn_for(standard_init):
    def _init_fn(*args):
        return _template_init(args, standard_init)

    return _init_fn


def _template_init(args: tuple, standard_init):
    """``__init__`` for ``_init_fn(*args)``: the standard parameters, a shared body."""
    fields, std_fields, kw_only_fields, frozen, has_post_init, self_name, _, slots = args
    _check_default_order(std_fields)
    marker = dataclasses._HAS_DEFAULT_FACTORY

    def default_of(f):
        return f.default if f.default is not dataclasses.MISSING else marker

    names = (self_name, *[f.name for f in std_fields], *[f.name for f in kw_only_fields])
    code = _template.__code__.replace(
        co_argcount=1 + len(std_fields),
        co_kwonlyargcount=len(kw_only_fields),
        co_varnames=names,
        co_nlocals=len(names),
        co_name="__init__",
    )
    owner: list = [None, 0]  # the class (set by adopt()), calls so far

    def assign(self, values):
        _assign_fields(self, values, fields, frozen, slots, marker)
        if has_post_init:
            initvars = [values[f.name] for f in fields if f._field_type is _INITVAR]
            getattr(self, dataclasses._POST_INIT_NAME)(*initvars)
        owner[1] += 1
        if owner[1] == TIER_UP_CALLS and owner[0] is not None:
            fast = standard_init(*args)
            dataclasses._set_qualname(owner[0], fast)
            owner[0].__init__ = fast

    scope = {"__builtins__": builtins, "_hlort_dataclass_assign": assign}
    defaults = tuple(default_of(f) for f in std_fields if not _required(f))
    init = types.FunctionType(code, scope, "__init__", defaults)
    init.__kwdefaults__ = {
        f.name: default_of(f) for f in kw_only_fields if not _required(f)
    } or None
    init.__annotations__ = {f.name: f.type for f in (*std_fields, *kw_only_fields)}
    init.__annotations__["return"] = None
    init._hlort_dataclass_owner = owner
    return init


_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)


def adopt(cls: type) -> None:
    """Tell a template ``__init__`` its class, so it can hand over to the standard one."""
    owner = getattr(cls.__dict__.get("__init__"), "_hlort_dataclass_owner", None)
    if owner is not None and owner[0] is None:
        owner[0] = cls


def _required(f) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _check_default_order(std_fields) -> None:
    """The standard error for a field without a default after one with a default."""
    seen_default = False
    for f in std_fields:
        if f.init:
            if not _required(f):
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _assign_fields(self, values: dict, fields, frozen: bool, slots: bool, factory_marker) -> None:
    """The standard ``_field_init`` rules, field by field, in order."""
    missing = dataclasses.MISSING
    set_attr = object.__setattr__ if frozen else setattr
    for f in fields:
        if f.default_factory is not missing:
            if f.init:
                value = values[f.name]
                if value is factory_marker:
                    value = f.default_factory()
            else:
                value = f.default_factory()
        elif f.init:
            value = values[f.name]
        elif slots and f.default is not missing:
            value = f.default  # a slotted class has no class attribute holding it
        else:
            continue  # the class attribute holds the default
        if f._field_type is _INITVAR:
            continue
        set_attr(self, f.name, value)


def _frozen_guards(cls, fields, globals):
    """The standard frozen ``__setattr__`` and ``__delattr__``, as closures."""
    names = frozenset(f.name for f in fields)
    error = dataclasses.FrozenInstanceError

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__
