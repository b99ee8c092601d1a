"""``__repr__``, ``__eq__`` and ``__hash__`` of a dataclass, as shared functions, not ``exec``.

Python 3.11's :func:`dataclasses.dataclass` writes and compiles the source of each generated
method, ~0.5-0.8M instructions an ``exec`` (callgrind): a process's first compile made ~40
classes and paid ~190 of them, about a fifth of its time. :func:`make_with_shared_methods` lets
the standard decorator make ``__init__`` (and a frozen class's ``__setattr__``/``__delattr__``,
which ``__init__`` relies on), with dataclass_init.py building those without ``exec``, and adds
``__repr__``, ``__eq__`` and ``__hash__`` built from closures over ``operator.attrgetter`` with
the standard library's exact rules: which fields take part (``repr=``, ``compare=``,
``hash=``), ``NotImplemented`` for another class, tuples compared as tuples (an identical NaN
field is equal), ``...`` for a recursive repr, which hash the ``eq``/``frozen``/explicit
``__hash__`` combination gets, and ``__dataclass_params__`` as asked. hlort.lazy_dataclass uses
it; tests/ir/test_lazy_dataclass.py and tests/ir/test_dataclass_init.py compare the two.
"""

from __future__ import annotations

import dataclasses
import threading
from operator import attrgetter

from hlort.dataclass_init import adopt, exec_free_methods

_standard = dataclasses.dataclass


def make_with_shared_methods(cls: type, params: dict) -> type:
    """``dataclasses.dataclass(cls, **params)`` (in place, or the new class ``slots=True``
    makes), with shared repr/eq/hash methods. ``order`` and ``unsafe_hash`` are not taken (the
    caller decorates those classes with the standard decorator)."""
    want_repr = params.get("repr", True) and "__repr__" not in cls.__dict__
    eq = params.get("eq", True)
    class_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (
        class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in cls.__dict__)
    )
    want_eq = eq and "__eq__" not in cls.__dict__
    no_doc = not cls.__doc__
    if no_doc:  # the standard docstring (name and signature) is written when first read
        cls.__doc__ = cls.__name__
    with exec_free_methods():  # dataclass_init.py: __init__ and frozen guards without exec
        made = _standard(cls, **{**params, "repr": False, "eq": False})
    adopt(made)
    if no_doc:
        made.__doc__ = _StandardDoc(made)
    fields = dataclasses.fields(made)
    if want_repr:
        _set(made, "__repr__", _repr([f.name for f in fields if f.repr]))
    if want_eq:
        _set(made, "__eq__", _eq(_tuple_of([f.name for f in fields if f.compare])))
    if eq and not explicit_hash:  # the standard table for eq=True without unsafe_hash
        if params.get("frozen", False):
            hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
            _set(made, "__hash__", _hash(_tuple_of(hashed)))
        else:
            made.__hash__ = None
    flags = made.__dataclass_params__
    flags.repr, flags.eq = params.get("repr", True), eq
    return made


class _StandardDoc:
    """A docstring-less dataclass's ``__doc__``: what the standard decorator writes (the class
    name and ``__init__``'s signature), made on first read: ``inspect.signature`` cost a first
    compile ~15 times for docstrings nobody reads."""

    def __init__(self, cls: type):
        self.cls = cls

    def __get__(self, instance, owner=None) -> str:
        import inspect

        cls = self.cls
        try:
            text = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        cls.__doc__ = doc = cls.__name__ + text
        return doc


def _set(cls: type, name: str, fn) -> None:
    fn.__name__ = name
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, fn)


def _tuple_of(names: list[str]):
    """obj -> the tuple of its ``names`` attributes (a tuple for one name and for none too)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return attrgetter(*names)


def _repr(names: list[str]):
    running: set = set()

    def __repr__(self):
        key = id(self), threading.get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
            return f"{self.__class__.__qualname__}({parts})"
        finally:
            running.discard(key)

    return __repr__


def _eq(values):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values):
    def __hash__(self):
        return hash(values(self))

    return __hash__
