"""The entry points of one group, read from the ``*.dist-info`` / ``*.egg-info`` directories on
``sys.path`` as ``importlib.metadata.entry_points(group=...)`` finds them, without importing it.

Plugin discovery runs in every process's first compile, whatever the platform. Importing
``importlib.metadata`` pulls in email, zipfile, csv, socket and friends (~10 ms, more than the
rest of discovery), only to read a few small text files. This module reads them directly, with
the same rules: each directory on ``sys.path`` in order, a distribution's first occurrence wins
(by normalized name), the same ``entry_points.txt`` syntax. Anything this reader does not
handle (a zip or a file on ``sys.path``, an ``.egg``, a meta-path finder of its own that lists
distributions) makes it return ``importlib.metadata``'s answer instead: the result is the same
either way, only slower.
"""

from __future__ import annotations

import importlib
import os
import re
import sys

_NORMALIZE = re.compile(r"[-_.]+")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class _Unusual(Exception):
    """A sys.path layout this reader leaves to importlib.metadata."""


class _Dist:
    """What the registry asks of a distribution: ``dist.metadata["Name"]``. (Plain classes
    here, not dataclasses: making a dataclass compiles source, a cost this module avoids.)"""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    @property
    def metadata(self) -> dict[str, str | None]:
        for file in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self.path, file), encoding="utf-8") as f:
                    for line in f:
                        if not line.strip():
                            break  # the headers end at the first empty line
                        if line[:5].lower() == "name:":
                            return {"Name": line[5:].strip()}
            except OSError:
                continue
        return {"Name": None}


class EntryPoint:
    """The part of ``importlib.metadata.EntryPoint`` the registry uses."""

    __slots__ = ("name", "value", "group", "dist")

    def __init__(self, name: str, value: str, group: str, dist: _Dist | None = None):
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def load(self):
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name} = {self.value!r} is not module[:attr]")
        obj = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            obj = getattr(obj, attr)
        return obj


def entry_points(group: str) -> list:
    """The entry points of ``group`` (this reader's, or importlib.metadata's: see above)."""
    try:
        return _scan(group)
    except _Unusual:
        from importlib import metadata

        return list(metadata.entry_points(group=group))


def _scan(group: str) -> list[EntryPoint]:
    for finder in sys.meta_path:
        name = getattr(finder, "__name__", type(finder).__name__)
        if hasattr(finder, "find_distributions") and name != "PathFinder":
            raise _Unusual(finder)
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for entry in sys.path:
        directory = entry or "."
        if not os.path.isdir(directory):
            if os.path.exists(directory):
                raise _Unusual(directory)  # a zip or another file: importlib reads those
            continue
        try:
            children = os.listdir(directory)
        except OSError:
            continue
        for child in children:
            low = child.lower()
            if low.endswith(".egg"):
                raise _Unusual(child)
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            name = _NORMALIZE.sub("_", low.rpartition(".")[0].partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            path = os.path.join(directory, child)
            found += _read(path, group)
    return found


def _read(path: str, group: str) -> list[EntryPoint]:
    try:
        with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as f:
            text = f.read()
    except OSError:  # none, or an egg-info file (not a directory)
        return []
    section = None
    out = []
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section == group:
            if "=" not in line:
                raise _Unusual(line)  # importlib.metadata raises its own error for it
            name, _, value = line.partition("=")
            out.append(EntryPoint(name.strip(), value.strip(), group, _Dist(path)))
    return out
