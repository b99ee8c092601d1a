"""The persistent executable cache: a second process skips verification, passes and codegen.

Like JAX's persistent compilation cache. The key covers everything the compiled program depends
on: the input module's fingerprint and name, the compile options, the backend (platform,
platform version, plugin version and attributes), the pass options it asks for (each pass's
class and constructor arguments, the fusion policy, and the source of the plugin code they come
from: :mod:`hlort.runtime.pass_identity`), and the core's own source (files of ``hlort.passes``,
``hlort.ir``, ``hlort.text``, ``hlort.interpreter``, ``builder.py``, ``shape.py`` and
``dtypes.py``, by path, size and modification time, so an edited pass never serves a stale
program). Pass options it cannot describe stably mean no cache for that compile. The value is the
executable's own serialization (``Executable.serialize``), restored with
``Client.deserialize_executable``; the plugin's caches then make that cheap (the cpu plugin
reloads its object code and the parsed module from disk).

Only for backends whose capabilities include serialization, and never when the compile dumps
its passes (``debug.dump_dir``: the dump is the point). An entry starts with the key it was
stored under, then the executable's checksummed frame: an entry whose key is not the one asked
for (a file copied over another key's, a restored cache of other programs), or whose frame is
damaged (DATA_LOSS) or does not decode, is deleted and the module compiled again; any other error
the load raises (UNIMPLEMENTED from ``HLORT_FALLBACK=error``, INVALID_ARGUMENT) is the compile's
own and propagates, and the entry stays. Loading builds no Python objects
from pickles; the checksum guards against accidents, not against someone who may write the
cache directory, so a directory that is not private to this user is not used at all (see
:mod:`hlort.plugin.base.cache_dir`, which also says where it lives and how to turn it off).
A hit refreshes the entry's place in the LRU order of the size cap
(:mod:`hlort.plugin.base.cache_eviction`, ``HLORT_CACHE_MAX_BYTES``).
"""

from __future__ import annotations

import os

from hlort.errors import ErrorCode, HlortError
from hlort.ir.module import Module
from hlort.plugin import api
from hlort.plugin.base.cache_dir import cache_enabled, private_cache_dir, write_cache_file
from hlort.plugin.base.cache_eviction import mark_used
from hlort.plugin.base.source_digest import core_source_digest
from hlort.plugin.options import CompileOptions
from hlort.runtime.pass_identity import pass_options_identity
from hlort.sha256 import sha256

_MAGIC = b"HLORTCACHE1"


def _canonical(value) -> str:
    """The key's text of options or plugin attributes: one text per value whatever the order of
    a mapping's keys (sorted), containers item by item, plain values by ``repr`` and anything
    else by ``str`` (what ``json.dumps(sort_keys=True, default=str)`` told apart), without
    json: importing it cost a first compile ~1 ms before LLVM (the entry's framing imports it
    while LLVM runs)."""
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{k!r}:{_canonical(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if value is None or type(value) in (bool, int, float, str):
        return repr(value)
    return repr(str(value))


class ExecutableCache:
    """One compile's view of the cache: ``load()`` before compiling, ``store()`` after."""

    def __init__(self, key: str, backend, directory: str):
        self.key = key
        self.backend = backend
        self.path = os.path.join(directory, key[:2], key)

    @classmethod
    def for_compile(cls, backend, module: Module, options: CompileOptions):
        """The cache for this compile, or None when caching does not apply."""
        if not cache_enabled() or options.debug.dump_dir:
            return None
        directory = private_cache_dir("executables")
        if directory is None:
            return None
        try:
            if not backend.capabilities().serialization:
                return None
            plugin = backend.plugin
            attributes = dict(plugin.attributes()) if plugin is not None else {}
            wanted = backend.client.pass_options()
        except HlortError:
            return None
        passes = pass_options_identity(wanted)
        if passes is None:
            return None
        parts = [
            module.fingerprint(),
            module.name,  # not in the fingerprint, but the executable carries it
            _canonical(options.to_dict()),
            backend.platform,
            backend.platform_version,
            _canonical(attributes),
            passes,
            core_source_digest(),
        ]
        key = sha256("\0".join(parts).encode()).hexdigest()
        return cls(key, backend, directory)

    def load(self) -> api.Executable | None:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        prefix = _MAGIC + self.key.encode()
        if not data.startswith(prefix):  # another key's entry, an old format, damage
            self._remove()
            return None
        try:
            executable = self.backend.client.deserialize_executable(data[len(prefix) :])
            mark_used(self.path)  # the LRU order of HLORT_CACHE_MAX_BYTES eviction
            return executable
        except HlortError as err:
            if err.code is not ErrorCode.DATA_LOSS:
                raise  # e.g. HLORT_FALLBACK=error refusing the program: a compile would too
            self._remove()  # corrupted or truncated: recompile
            return None
        except (ValueError, LookupError, EOFError):  # a payload that does not decode
            self._remove()
            return None

    def store(self, executable: api.Executable) -> None:
        try:
            data = _MAGIC + self.key.encode() + executable.serialize()
        except HlortError:
            return
        write_cache_file(self.path, data)

    def _remove(self) -> None:
        try:
            os.remove(self.path)
        except OSError:
            pass
