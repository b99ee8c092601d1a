"""hlort.dataclass_init: a lazy dataclass's ``__init__`` and frozen guards, made without
``exec``, behave as the standard generated ones (signature, binding errors, defaults, default
factories, init=False fields, keyword-only fields, InitVars and ``__post_init__``), hand over
to the standard ``__init__`` after TIER_UP_CALLS calls, and really compile no source."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import pickle
from dataclasses import InitVar, field

import pytest

from hlort import dataclass_init
from hlort.lazy_dataclass import dataclass as lazy

STANDARD = dataclasses.dataclass


def _shapes(decorate, frozen: bool, slots: bool = False) -> dict:
    """Classes of every shape __init__ handles, made with ``decorate``."""
    decorate = functools.partial(decorate, slots=slots) if slots else decorate

    @decorate(frozen=frozen)
    class Plain:
        a: int
        b: float = 0.5
        c: tuple = field(default_factory=tuple)

    @decorate(frozen=frozen)
    class Hidden:
        a: int
        later: list = field(default_factory=list, init=False)
        fixed: str = field(default="x", init=False)

    @decorate(frozen=frozen)
    class KwOnly:
        a: int
        b: int = field(kw_only=True)
        c: list = field(default_factory=list, kw_only=True)
        d: str = field(default="d", kw_only=True)

    @decorate(frozen=frozen)
    class Post:
        a: int
        scale: InitVar[int] = 2
        doubled: int = field(default=0, init=False)

        def __post_init__(self, scale):
            object.__setattr__(self, "doubled", self.a * scale)

    @decorate(frozen=frozen)
    class SelfField:
        self: int
        other: int = 1

    @decorate(frozen=frozen)
    class Empty:
        pass

    return {
        "Plain": (Plain, [(1,), (1, 2.0, (3,)), ((), {"a": 4, "c": (5,)})]),
        "Hidden": (Hidden, [(1,), ((), {"a": 2})]),
        "KwOnly": (KwOnly, [((1,), {"b": 2}), ((1,), {"b": 2, "c": [3], "d": "e"})]),
        "Post": (Post, [(3,), (3, 5), ((), {"a": 1, "scale": 7})]),
        "SelfField": (SelfField, [(1,), ((), {"self": 2, "other": 3})]),
        "Empty": (Empty, [()]),
    }


BAD_CALLS = [(), (1, 2, 3, 4, 5), ((1,), {"a": 1}), ((1,), {"nope": 1})]


def _call(cls, case):
    args, kwargs = case if len(case) == 2 and isinstance(case[1], dict) else (case, {})
    return cls(*args, **kwargs)


def _outcome(cls, case):
    try:
        obj = _call(cls, case)
    except TypeError as err:
        return "TypeError", str(err).replace(cls.__qualname__, "C")
    return "ok", {f.name: getattr(obj, f.name, "<unset>") for f in dataclasses.fields(obj)}


@pytest.mark.parametrize("slots", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_init_matches_the_standard_one(frozen, slots):
    standard, made = _shapes(STANDARD, frozen, slots), _shapes(lazy, frozen, slots)
    for name, (std_cls, cases) in standard.items():
        lazy_cls = made[name][0]
        for case in cases + BAD_CALLS:
            assert _outcome(lazy_cls, case) == _outcome(std_cls, case), (name, case)
        assert str(inspect.signature(lazy_cls)) == str(inspect.signature(std_cls)), name
        assert lazy_cls.__init__.__qualname__ == std_cls.__init__.__qualname__.replace(
            std_cls.__qualname__, lazy_cls.__qualname__
        )
        assert lazy_cls.__init__.__annotations__ == std_cls.__init__.__annotations__, name


def test_default_factories_run_per_instance():
    @lazy
    class Bag:
        items: list = field(default_factory=list)
        seen: dict = field(default_factory=dict, init=False)

    one, two = Bag(), Bag()
    assert one.items == [] and one.items is not two.items and one.seen is not two.seen
    marker = dataclasses._HAS_DEFAULT_FACTORY
    assert inspect.signature(Bag).parameters["items"].default is marker


def test_frozen_guards_match_the_standard_ones():
    @STANDARD(frozen=True)
    class A:
        x: int

    @lazy(frozen=True)
    class B:
        x: int

    for cls in (A, B):
        obj = cls(1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
            obj.x = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'y'"):
            obj.y = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'x'"):
            del obj.x

    class SubA(A):  # a plain subclass may add attributes that are not fields
        pass

    class SubB(B):
        pass

    for sub in (SubA, SubB):
        obj = sub(1)
        obj.extra = 3
        del obj.extra
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.x = 2


def test_a_non_default_field_after_a_default_one_is_refused_alike():
    def make(decorate):
        @decorate
        class Bad:
            a: int = 1
            b: int

        return Bad

    with pytest.raises(TypeError) as standard:
        make(STANDARD)
    with pytest.raises(TypeError) as made:
        make(lazy)(0, 0)  # the lazy class is made (and refused) on first use
    assert str(made.value) == str(standard.value)


def test_hands_over_to_the_standard_init_after_tier_up_calls():
    @lazy(frozen=True)
    class Point:
        x: int
        y: int = 2

    Point(0)
    template = Point.__dict__["__init__"]
    assert hasattr(template, "_hlort_dataclass_owner")
    for i in range(dataclass_init.TIER_UP_CALLS):
        assert (Point(i).x, Point(i, 5).y) == (i, 5)
    fast = Point.__dict__["__init__"]
    assert fast is not template and not hasattr(fast, "_hlort_dataclass_owner")
    assert fast.__qualname__.endswith("Point.__init__")
    assert (
        Point(7) == Point(7, 2)
        and str(inspect.signature(Point)) == "(x: 'int', y: 'int' = 2) -> None"
    )


def test_slotted_classes_keep_slots_defaults_and_pickling():
    global Key  # pickled by name

    @lazy(frozen=True, slots=True)
    class Key:
        name: str
        kind: str = field(default="k", init=False)

    key = Key("a")
    assert not hasattr(key, "__dict__") and Key.__slots__ == ("name", "kind")
    assert (key.kind, repr(key), key == Key("a"), hash(key) == hash(Key("a"))) == (
        "k",
        "Key(name='a', kind='k')",
        True,
        True,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.name = "b"
    assert pickle.loads(pickle.dumps(key)) == key and copy.copy(key) == key


def test_making_a_lazy_class_compiles_no_source(monkeypatch):
    assert dataclass_init.SUPPORTED, "dataclasses' private functions changed: update dataclass_init"
    compiled = []
    real_exec = exec

    def counting_exec(source, *args):
        compiled.append(source)
        return real_exec(source, *args)

    monkeypatch.setattr(dataclasses, "exec", counting_exec, raising=False)

    @lazy(frozen=True)
    class Frozen:
        a: int
        b: list = field(default_factory=list)

    @lazy
    class Mutable:
        a: int

    @lazy(frozen=True, slots=True)
    class Slotted:
        a: int

    assert (Frozen(1).a, Mutable(2).a, Slotted(3).a) == (1, 2, 3)
    assert repr(Slotted(3)).endswith("Slotted(a=3)") and Slotted(3) == Slotted(3)
    assert compiled == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        Frozen(1).a = 3


def test_a_slotted_subclass_of_an_unmade_lazy_base():
    def make(decorate):
        @decorate(frozen=True)
        class Base:
            a: int
            b: int = 2

        @decorate(frozen=True, slots=True)
        class Child(Base):
            c: int = 3

        return Child

    standard, made = make(STANDARD), make(lazy)
    for case in [(1,), (1, 5, 6), ((), {"a": 1, "c": 9})] + BAD_CALLS:
        assert _outcome(made, case) == _outcome(standard, case), case
    assert str(inspect.signature(made)) == str(inspect.signature(standard))


@pytest.mark.parametrize("params", [{}, {"frozen": True}, {"frozen": True, "slots": True}])
def test_the_standard_docstring_is_written_when_first_read(params, monkeypatch):
    def make(decorate):
        @decorate(**params)
        class NoDoc:
            x: int
            y: str = "a"

        @decorate(**params)
        class Doc:
            """Kept."""

            x: int

        return NoDoc, Doc

    (std_nodoc, std_doc), (nodoc, doc) = make(STANDARD), make(lazy)
    signatures = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda obj: signatures.append(obj) or real(obj))
    nodoc(1), doc(1)
    assert signatures == []  # making the classes computed no signature
    assert (
        nodoc(2).__doc__ == nodoc.__doc__ == std_nodoc.__doc__ == "NoDoc(x: 'int', y: 'str' = 'a')"
    )
    assert doc.__doc__ == std_doc.__doc__ == "Kept."
    assert nodoc.__dict__["__doc__"] == std_nodoc.__doc__  # a plain string once read
