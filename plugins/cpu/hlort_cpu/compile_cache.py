"""The compile cache: object code of an executable's kernels, in memory and on disk.

Keyed by the optimized module's fingerprint, this plugin's version, a digest of the code
generator's own source (``hlort.codegen.llvm`` and this package, by path, size and mtime, so an
edited emitter does not reuse stale object code), the emitters' and loop planners' tuning
constants changed at run time (``hlort_cpu.codegen.code_settings``), llvmlite's version, the
host target (triple, CPU, features), so a cached object never runs on a CPU it was not built
for, and the JIT's optimization level.
It also keeps, on disk only, the module parsed from a serialized executable's HLO text, keyed by
that text: a process loading from the warm executable cache then skips the text parser.

Nothing here is a pickle: an object entry is the object code as bytes plus the kernels' launch
descriptions, a module entry is hlort's own module encoding (:mod:`hlort.ir.module_codec`),
both decoded by building only allowed types, so a planted file cannot run Python code. Each
entry starts with its own key and a SHA-256 of its payload: an entry copied over another key's
file, a corrupted or a truncated one is detected, deleted and recompiled, never used. (Object
code is machine code this process runs: a cache directory that is not private to this user is
not used at all, see :mod:`hlort.plugin.base.cache_dir`.)
On disk it lives under the user cache directory (``$XDG_CACHE_HOME/hlort/cpu`` or
``~/.cache/hlort/cpu``); ``HLORT_CACHE_DIR`` moves it and ``HLORT_CACHE=0`` turns caching off.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading

import numpy as np

from hlort.ir import module_codec
from hlort.plugin.base.cache_dir import cache_enabled, private_cache_dir, write_cache_file
from hlort.plugin.base.cache_eviction import mark_used
from hlort.plugin.base.source_digest import core_source_digest, source_digest
from hlort.sha256 import sha256
from hlort_cpu.codegen import code_settings

_MAGIC = b"HLORTCPU2"
_KEY_BYTES = 64  # the entry's own key, hex
_memory: dict[str, object] = {}
_lock = threading.Lock()


def enabled() -> bool:
    return cache_enabled()


def cache_dir() -> str | None:
    """The on-disk cache directory, or None when it is off or not private (memory only then)."""
    return private_cache_dir("cpu")


_code_digest: str | None = None


def code_digest() -> str:
    """Digest of the emitter's and this plugin's source files (computed once; see
    hlort.plugin.base.source_digest for what it notices)."""
    global _code_digest
    if _code_digest is None:
        import hlort.codegen.llvm as emitter

        _code_digest = source_digest(os.path.dirname(emitter.__file__), os.path.dirname(__file__))
    return _code_digest


def cache_key(fingerprint: str, plugin_version: str, engine_key: str) -> str:
    """The key of an object: what was compiled, by which code generator, with its tuning
    constants as changed in this process (code_settings.py), for which engine (the JIT's target
    and optimization level, ``JitEngine.key``)."""
    settings = code_settings.changed()
    text = f"{fingerprint}|{plugin_version}|{code_digest()}|{engine_key}|{settings}"
    return sha256(text.encode()).hexdigest()


def lookup(key: str, parts: bool = False):
    """(object code, kernel infos) or None. The object code is bytes, or with ``parts`` also a
    list of bytes (a module compiled in parts, kernel_parts.py) where one was stored; a caller
    that loads one object never gets a list (a mis-keyed entry is a miss, and recompiled)."""
    entry = _lookup(key, _decode_object)
    if entry is not None and isinstance(entry[0], list) and not parts:
        return None
    return entry


def store(key: str, obj: bytes | list[bytes], infos: list) -> None:
    _store(key, (obj, infos), _encode_object)


def module_key(hlo_text: bytes, plugin_version: str) -> str:
    """The key of a parsed serialized module: its text, this plugin and the core's IR code."""
    h = sha256(hlo_text)
    h.update(f"|module|{plugin_version}|{core_source_digest()}".encode())
    return h.hexdigest()


def lookup_module(key: str):
    """A module parsed earlier from serialized HLO text (a fresh object each time), or None."""
    return _lookup(key, module_codec.decode_module, remember=False)


def store_module(key: str, module) -> None:
    _store(key, module, module_codec.encode_module, remember=False)


def _info_classes(drivers: bool = True) -> dict[str, type]:
    """The launch descriptions an object entry may hold: the emitters' own dataclasses (the
    while driver's only with ``drivers``: an entry written by a process that never imported
    while_driver.py holds none, and a first compile need not import it)."""
    from hlort_cpu.codegen import fusion_kernel

    mods = [fusion_kernel]
    if drivers:
        from hlort_cpu.codegen import while_driver

        mods.append(while_driver)
    return {
        name: cls
        for mod in mods
        for name, cls in vars(mod).items()
        if dataclasses.is_dataclass(cls) and cls.__module__ == mod.__name__
    }


def _encode_object(entry) -> bytes:
    obj, infos = entry
    drivers = "hlort_cpu.codegen.while_driver" in sys.modules
    code = [_bytes_array(o) for o in obj] if isinstance(obj, list) else _bytes_array(obj)
    return module_codec.encode_value((code, list(infos)), _info_classes(drivers))


def _bytes_array(obj: bytes) -> np.ndarray:
    return np.frombuffer(obj, np.uint8)


def _is_bytes_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1


def _decode_object(payload: bytes):
    value = module_codec.decode_value(payload, _info_classes())
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list)):
        raise module_codec.CodecError("not an object-code entry")
    code = value[0]
    if _is_bytes_array(code):
        return code.tobytes(), value[1]
    if isinstance(code, list) and code and all(_is_bytes_array(c) for c in code):
        return [c.tobytes() for c in code], value[1]
    raise module_codec.CodecError("not an object-code entry")


def _path(key: str) -> str | None:
    directory = cache_dir()
    return None if directory is None else os.path.join(directory, key[:2], key)


def _lookup(key: str, decode, remember: bool = True):
    if not enabled():
        return None
    if remember:
        with _lock:
            hit = _memory.get(key)
        if hit is not None:
            return hit
    path = _path(key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    entry = _decode(data, key, decode)
    if entry is None:
        try:
            os.remove(path)
        except OSError:
            pass
        return None
    mark_used(path)  # LRU order of the cache's size cap (HLORT_CACHE_MAX_BYTES)
    if remember:
        with _lock:
            _memory[key] = entry
    return entry


def _store(key: str, entry, encode, remember: bool = True) -> None:
    if not enabled():
        return
    if remember:
        with _lock:
            _memory[key] = entry
    try:
        payload = encode(entry)
    except (module_codec.CodecError, RecursionError):  # caching is best effort
        return
    path = _path(key)
    if path is not None:
        write_cache_file(path, _MAGIC + key.encode() + sha256(payload).digest() + payload)


def _decode(data: bytes, key: str, decode):
    """The entry stored under ``key``, or None: another key's entry, damage, or anything that
    does not decode as what ``decode`` expects."""
    start = len(_MAGIC) + _KEY_BYTES
    head = start + 32
    if len(data) < head or not data.startswith(_MAGIC) or data[len(_MAGIC) : start] != key.encode():
        return None
    digest, payload = data[start:head], data[head:]
    if sha256(payload).digest() != digest:
        return None
    try:
        return decode(payload)
    except (module_codec.CodecError, RecursionError):
        return None


def clear_memory() -> None:
    with _lock:
        _memory.clear()
