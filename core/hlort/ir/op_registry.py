"""One registry type for everything keyed by op: shape rules, interpreter functions, emitters,
importer converters, conformance case generators.

Each of those used to be a hand-written dict plus decorator; one generic class gives them the same
duplicate check, the same lazy loading of the modules that register, and :meth:`OpRegistry.missing`
for coverage tests. Grep for the registry's decorator (``@shape_rule(``, ``@evaluates(``...) and
you find the code of an op.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
T = TypeVar("T")


class OpRegistry(Generic[K, T]):
    """A map from op keys (``Opcode`` or op names) to one registered value each.

    ``what`` names the entries in errors ("shape rule", "interpreter function"). ``modules`` are
    imported the first time the registry is read, so importing the registry stays cheap and the
    registering modules may import the registry without a cycle. ``later_modules`` (the rarer
    ops' modules) are imported only when :meth:`get` misses in ``modules`` or a read needs every
    entry (iteration, ``in``, ``keys``, ``missing``): a program of common ops never imports them.
    """

    def __init__(self, what: str, modules: Iterable[str] = (), later_modules: Iterable[str] = ()):
        self.what = what
        self._first = len(tuple(modules))
        self._modules = (*modules, *later_modules)
        self._imported = 0  # how many of _modules (in order) are imported
        self._entries: dict[K, T] = {}
        self._loaded = not self._modules
        self._loading = False
        self._lock = threading.RLock()

    def register(self, *keys: K) -> Callable[[T], T]:
        """Decorator: register the decorated value under every key in ``keys``."""

        def decorate(value: T) -> T:
            for key in keys:
                self.add(key, value)
            return value

        return decorate

    def add(self, key: K, value: T) -> None:
        """Register ``value`` under ``key``; registering a key twice is a programming error."""
        if key in self._entries:
            raise RuntimeError(f"{self.what} for {_key_name(key)} registered twice")
        self._entries[key] = value

    def get(self, key: K) -> T | None:
        if not self._loaded:
            self._load(self._first)
            value = self._entries.get(key)
            if value is not None:
                return value
            self._load()
        return self._entries.get(key)

    def __getitem__(self, key: K) -> T:
        value = self.get(key)
        if value is None:
            raise KeyError(f"no {self.what} for {_key_name(key)}")
        return value

    def __contains__(self, key: object) -> bool:
        self._load()
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        self._load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def keys(self) -> list[K]:
        self._load()
        return list(self._entries)

    def items(self) -> list[tuple[K, T]]:
        self._load()
        return list(self._entries.items())

    def missing(self, expected: Iterable[K]) -> list[K]:
        """The keys of ``expected`` with no entry, in the order given (for coverage tests)."""
        self._load()
        return [key for key in expected if key not in self._entries]

    def _load(self, upto: int | None = None) -> None:
        """Import ``_modules[:upto]`` (all by default) that are not imported yet."""
        upto = len(self._modules) if upto is None else upto
        if self._imported >= upto:
            return
        with self._lock:
            # another thread waits here until the modules are imported; the importing thread
            # itself (a registering module that reads the registry) passes and sees what is
            # registered so far
            if self._imported >= upto or self._loading:
                return
            self._loading = True
            try:
                while self._imported < upto:
                    before = dict(self._entries)
                    try:
                        importlib.import_module(self._modules[self._imported])
                    except BaseException:
                        # a failed import leaves its module out of sys.modules, so the next read
                        # imports it again: forget what it registered, or the retry fails as
                        # "registered twice" and hides the real error
                        self._entries = before
                        raise
                    self._imported += 1
                self._loaded = self._imported == len(self._modules)
            finally:
                self._loading = False


def _key_name(key: object) -> str:
    value = getattr(key, "value", None)
    return str(value) if isinstance(value, str) else str(key)
