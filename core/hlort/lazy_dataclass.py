"""``@dataclass`` whose methods are made on first use, not at import.

Python 3.11's :func:`dataclasses.dataclass` writes the source of ``__init__``, ``__repr__``,
``__eq__`` (and for frozen classes ``__hash__``, ``__setattr__``, ``__delattr__``) and compiles
each with ``exec`` when the class statement runs: ~0.3 ms a class, tens of milliseconds for the
classes a first compile imports, most of which that compile never instantiates. When a class is
made, its ``__repr__``, ``__eq__`` and ``__hash__`` are shared functions rather than compiled
source (dataclass_methods.py): only ``__init__`` (and a frozen class's two guards) is ``exec``'d.

This decorator takes the same arguments and leaves the class undecorated, with small stand-ins
for those methods and for ``__dataclass_fields__``. The first time any of them is touched (an
instance is made, compared, hashed or printed; ``dataclasses.fields``, ``is_dataclass``,
``replace`` or ``asdict`` looks at the class or an instance; a dataclass subclass reads its
base's fields) the real :func:`dataclasses.dataclass` runs on the class, in place, and every
stand-in is replaced by what it generates. Behaviour after that is exactly the standard
library's; only when the work happens changes. Lazily decorated bases are made before their
subclasses.

Classes are decorated eagerly when a stand-in could be observed differently: ``slots=True`` (it
makes a new class) or a class that defines its own ``__init__`` (still with the shared methods
and dataclass_init.py's ``__init__``), ``order=True`` or ``unsafe_hash=True`` (by
:func:`dataclasses.dataclass` itself).
"""

from __future__ import annotations

import dataclasses
import threading

from hlort.dataclass_methods import make_with_shared_methods

_FIELDS = "__dataclass_fields__"
_PENDING = "__hlort_lazy_dataclass__"  # in the class's own __dict__ until it is made
_lock = threading.RLock()
_standard = dataclasses.dataclass


def dataclass(cls=None, /, **params):
    """Drop-in for ``dataclasses.dataclass`` (same parameters) that defers the work."""

    def wrap(cls):
        return _defer(cls, params)

    return wrap if cls is None else wrap(cls)


def materialize(cls: type) -> type:
    """Run the deferred ``dataclasses.dataclass`` on ``cls`` and its lazy bases (idempotent)."""
    for klass in reversed(cls.__mro__):
        if _PENDING in klass.__dict__:
            _make(klass)
    return cls


def _make(cls: type) -> None:
    with _lock:
        record = cls.__dict__.get(_PENDING)
        if record is None:  # another thread made it meanwhile
            return
        params, stubs = record
        for name in stubs:
            if cls.__dict__.get(name) is stubs[name]:
                delattr(cls, name)
        made = make_with_shared_methods(cls, params)
        assert made is cls  # slots=True is never deferred
        delattr(cls, _PENDING)  # last: another thread's stand-in waits on the lock till now


class _FieldsStandIn:
    """``cls.__dataclass_fields__`` until the class is made: reading it makes the class."""

    def __get__(self, instance, owner):
        materialize(owner)
        return owner.__dict__[_FIELDS] if _FIELDS in owner.__dict__ else getattr(owner, _FIELDS)


def _eager(cls, params) -> bool:
    if params.get("slots") or params.get("order") or params.get("unsafe_hash"):
        return True
    return params.get("init", True) and "__init__" in cls.__dict__


def _defer(cls, params):
    if _eager(cls, params):
        if params.get("order") or params.get("unsafe_hash"):
            return _standard(cls, **params)
        materialize(cls)  # lazy bases first: no stand-in is read under dataclass_init's lock
        return make_with_shared_methods(cls, params)  # slots=True or an own __init__
    eq = params.get("eq", True)
    stubs: dict[str, object] = {_FIELDS: _FieldsStandIn()}
    if params.get("init", True):
        stubs["__init__"] = _init_stub(cls)
    if params.get("repr", True) and "__repr__" not in cls.__dict__:
        stubs["__repr__"] = _method_stub(cls, "__repr__")
    if eq and "__eq__" not in cls.__dict__:
        stubs["__eq__"] = _method_stub(cls, "__eq__")
    if eq and "__hash__" not in cls.__dict__:
        stubs["__hash__"] = _hash_stub(cls)
    for name, stub in stubs.items():
        setattr(cls, name, stub)
    setattr(cls, _PENDING, (params, stubs))
    return cls


def _init_stub(owner):
    def __init__(self, *args, **kwargs):
        materialize(owner)
        owner.__dict__["__init__"](self, *args, **kwargs)

    __init__.__qualname__ = f"{owner.__qualname__}.__init__"
    return __init__


def _method_stub(owner, name):
    def method(self, *args):
        materialize(owner)
        return owner.__dict__[name](self, *args)

    method.__name__ = name
    method.__qualname__ = f"{owner.__qualname__}.{name}"
    return method


def _hash_stub(owner):
    def __hash__(self):
        materialize(owner)
        if "__hash__" not in owner.__dict__:  # dataclasses left the inherited one
            return super(owner, self).__hash__()
        real = owner.__dict__["__hash__"]
        if real is None:
            raise TypeError(f"unhashable type: {owner.__name__!r}")
        return real(self)

    __hash__.__qualname__ = f"{owner.__qualname__}.__hash__"
    return __hash__
