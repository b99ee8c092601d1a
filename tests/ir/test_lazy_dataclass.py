"""hlort.lazy_dataclass behaves as dataclasses.dataclass, whatever touches the class first.

Each case builds the same class twice, once with the standard decorator and once with the lazy
one, and compares what user code can see: the fields, __init__'s signature, repr, ==, hash,
frozen-ness, replace/asdict, pickling, and inheritance in both directions.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import threading
from dataclasses import field
from typing import ClassVar

import pytest

from hlort.lazy_dataclass import dataclass as lazy

STANDARD = dataclasses.dataclass


def _pair(params: dict):
    """(standard class, lazy class) of one body; params are the decorator's arguments."""

    def body(decorate):
        @decorate(**params)
        class Point:
            x: int
            y: float = 0.5
            tags: tuple = field(default_factory=tuple)
            note: str = field(default="", compare=False, repr=False)

        return Point

    return body(STANDARD), body(lazy)


PARAMS = [{}, {"frozen": True}, {"eq": False}, {"frozen": True, "eq": False}, {"repr": False}]


def _view(obj) -> tuple:
    cls = type(obj)
    fields = [(f.name, f.default, f.compare, f.repr, f.hash) for f in dataclasses.fields(obj)]
    try:
        h = (
            ("hash", hash(obj))
            if cls.__dataclass_params__.eq
            else ("id", hash(obj) == id(obj) >> 4)
        )
    except TypeError as err:
        h = ("unhashable", str(err).replace(cls.__qualname__, "C"))
    return (
        fields,
        str(inspect.signature(cls.__init__)),
        repr(obj).replace(cls.__qualname__, "C").split(" object at ")[0],
        h,
        dataclasses.asdict(obj),
        dataclasses.is_dataclass(cls),
        getattr(cls, "__match_args__", None),
        cls.__dataclass_params__.frozen,
        cls.__dataclass_params__.eq,
    )


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_instances_match_the_standard_decorator(params):
    std, lz = _pair(params)
    a, b = std(1, 2.0, (3,), "n"), lz(1, 2.0, (3,), "n")
    assert _view(a) == _view(b)
    assert (a == std(1, 2.0, (3,), "other")) == (b == lz(1, 2.0, (3,), "other"))
    assert (a == std(2)) == (b == lz(2))
    assert (b == a) is False  # different classes never compare equal
    if params.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.x = 5
    else:
        b.x = 5
        assert b.x == 5
    assert dataclasses.replace(b, x=9).x == 9
    with pytest.raises(TypeError):
        lz()  # x is required, as in the standard class


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_class_level_introspection_before_any_instance(params):
    std, lz = _pair(params)
    assert dataclasses.is_dataclass(lz)
    names = [f.name for f in dataclasses.fields(lz)]
    assert names == [f.name for f in dataclasses.fields(std)]
    assert lz.__match_args__ == std.__match_args__


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_an_instance_made_without_init_before_the_class_is_made(params):
    """pickle and copy make instances without __init__ (``cls.__new__`` and the state dict):
    ==, hash and repr must still be the real ones."""
    std, lz = _pair(params)
    state = {"x": 1, "y": 2.0, "tags": (), "note": ""}
    made = []
    for _ in range(2):
        obj = lz.__new__(lz)
        obj.__dict__.update(state)
        made.append(obj)
    assert "__hlort_lazy_dataclass__" in lz.__dict__  # nothing has made the class yet
    ref, ref2 = std(1, 2.0), std(1, 2.0)
    assert (made[0] == made[1]) == (ref == ref2)
    assert repr(made[0]).split(" object at ")[0] == repr(ref).split(" object at ")[0]
    try:
        same = hash(ref) == hash(ref2)
    except TypeError:
        with pytest.raises(TypeError, match="unhashable"):
            hash(made[0])
    else:
        assert (hash(made[0]) == hash(made[1])) == same
    assert copy.copy(made[0]) == made[0] or not params.get("eq", True)


def test_inheritance_lazy_standard_and_mixed():
    @lazy(frozen=True)
    class Base:
        a: int
        b: int = 2

    @STANDARD(frozen=True)
    class StdChild(Base):  # the standard decorator reads the lazy base's fields
        c: int = 3

    @lazy(frozen=True)
    class LazyChild(Base):
        d: int = 4

    @STANDARD
    class StdBase:
        p: int

    @lazy
    class LazyOfStd(StdBase):
        q: int = 1

    class Plain(LazyChild):  # not a dataclass: uses LazyChild's methods
        pass

    assert [f.name for f in dataclasses.fields(StdChild)] == ["a", "b", "c"]
    assert StdChild(1) == StdChild(1, 2, 3) and hash(StdChild(1)) == hash(StdChild(1, 2, 3))
    assert [f.name for f in dataclasses.fields(LazyChild)] == ["a", "b", "d"]
    assert repr(LazyChild(1)).endswith("LazyChild(a=1, b=2, d=4)")
    assert Plain(1) == Plain(1) and Plain(1) != LazyChild(1)
    assert repr(Plain(5)).endswith("Plain(a=5, b=2, d=4)")
    assert LazyOfStd(1).q == 1 and [f.name for f in dataclasses.fields(LazyOfStd)] == ["p", "q"]


def test_post_init_classvar_and_own_methods_are_kept():
    @lazy(frozen=True)
    class Sized:
        n: int
        LIMIT: ClassVar[int] = 10
        double: int = field(init=False, default=0)

        def __post_init__(self):
            object.__setattr__(self, "double", 2 * self.n)

        def __repr__(self):
            return f"Sized<{self.n}>"

    s = Sized(4)
    assert s.double == 8 and repr(s) == "Sized<4>" and Sized.LIMIT == 10
    assert [f.name for f in dataclasses.fields(Sized)] == ["n", "double"]
    assert s == Sized(4) and hash(s) == hash(Sized(4))


def test_eager_cases_are_standard_dataclasses_at_once():
    @lazy(frozen=True, slots=True)
    class Slotted:
        v: int

    @lazy(order=True)
    class Ordered:
        v: int

    assert "__hlort_lazy_dataclass__" not in Slotted.__dict__
    assert Slotted.__slots__ == ("v",) and Ordered(1) < Ordered(2)


def test_threads_making_one_class_agree():
    @lazy(frozen=True)
    class Shared:
        v: int

    out, errors = [], []

    def make():
        try:
            out.append(hash(Shared(3)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(out)) == 1


@pytest.mark.parametrize("params", [{}, {"frozen": True}], ids=str)
def test_shared_methods_follow_the_standard_rules(params):
    """repr/eq/hash are shared functions (hlort.dataclass_methods), not compiled source: the
    standard rules still hold for hash=False fields, an identical NaN field (tuples compare by
    identity first), no fields, one field, a recursive repr and a class's own __eq__."""

    def body(decorate):
        @decorate(**params)
        class Mixed:
            a: float
            b: list = field(default_factory=list, hash=False)
            c: int = field(default=0, compare=False)

        @decorate(**params)
        class Empty:
            pass

        @decorate(**params)
        class One:
            v: float

        @decorate(**params)
        class OwnEq:
            v: int

            def __eq__(self, other):
                return True

        return Mixed, Empty, One, OwnEq

    nan = float("nan")
    for std, lz in zip(body(STANDARD), body(lazy), strict=True):
        sig = inspect.signature(std)
        args = [nan] * len([p for p in sig.parameters.values() if p.default is p.empty])
        a, b = std(*args), lz(*args)
        assert (a == std(*args)) == (b == lz(*args))
        assert (a == a) == (b == b)  # the same NaN object: equal as a tuple field
        assert repr(a).replace(std.__qualname__, "C") == repr(b).replace(lz.__qualname__, "C")
        assert (std.__hash__ is None) == (lz.__hash__ is None)
        if std.__hash__ is not None and params.get("frozen"):
            assert hash(a) == hash(b)
        assert lz.__dataclass_params__.eq and lz.__dataclass_params__.repr
        assert lz.__eq__.__qualname__.endswith(std.__eq__.__qualname__.split(".")[-1])
    loop = body(lazy)[0](1.0)
    if not params.get("frozen"):
        loop.b.append(loop)
        std_loop = body(STANDARD)[0](1.0)
        std_loop.b.append(std_loop)
        assert repr(loop).split("(", 1)[1] == repr(std_loop).split("(", 1)[1]  # "[...]"
