"""The compile cache: object code of an executable's kernels, in memory and on disk.

Keyed by the optimized module's fingerprint, this plugin's version, a digest of the code
generator's own source (``hlort.codegen.llvm`` and this package, by path, size and mtime, so an
edited emitter does not reuse stale object code), llvmlite's version and the host target
(triple, CPU, features), so a cached object never runs on a CPU it was not built for.
It also keeps, on disk only, the module parsed from a serialized executable's HLO text, keyed by
that text: a process loading from the warm executable cache then skips the text parser. The
serialized form itself stays text, safe to load from anywhere; the pickled modules live beside
the object code this plugin runs anyway, so the cache directory is trusted exactly as before.
On disk it lives under the user cache directory (``$XDG_CACHE_HOME/hlort/cpu`` or
``~/.cache/hlort/cpu``); ``HLORT_CACHE_DIR`` moves it and ``HLORT_CACHE=0`` turns caching off.
Each entry stores a SHA-256 of its payload: a corrupted or truncated entry is detected, deleted
and recompiled, never loaded.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading

from hlort.runtime.executable_cache import cache_enabled, cache_root
from hlort.runtime.source_digest import source_digest

_MAGIC = b"HLORTCPU1"
_memory: dict[str, object] = {}
_lock = threading.Lock()


def enabled() -> bool:
    return cache_enabled()


def cache_dir() -> str:
    return os.path.join(cache_root(), "cpu")


_code_digest: str | None = None


def code_digest() -> str:
    """Digest of the emitter's and this plugin's source files (computed once; see
    hlort.runtime.source_digest for what it notices)."""
    global _code_digest
    if _code_digest is None:
        import hlort.codegen.llvm as emitter

        _code_digest = source_digest(os.path.dirname(emitter.__file__), os.path.dirname(__file__))
    return _code_digest


def cache_key(fingerprint: str, plugin_version: str, target_key: str) -> str:
    text = f"{fingerprint}|{plugin_version}|{code_digest()}|{target_key}"
    return hashlib.sha256(text.encode()).hexdigest()


def lookup(key: str):
    """(object code, kernel infos) or None."""
    return _lookup(key)


def store(key: str, obj: bytes, infos: list) -> None:
    _store(key, (obj, infos))


def module_key(hlo_text: bytes, plugin_version: str) -> str:
    """The key of a parsed serialized module: its text, this plugin and the core's IR code."""
    from hlort.runtime.executable_cache import core_source_digest

    h = hashlib.sha256(hlo_text)
    h.update(f"|module|{plugin_version}|{core_source_digest()}".encode())
    return h.hexdigest()


def lookup_module(key: str):
    """A module parsed earlier from serialized HLO text (a fresh object each time), or None."""
    return _lookup(key, remember=False)


def store_module(key: str, module) -> None:
    _store(key, module, remember=False)


def _lookup(key: str, remember: bool = True):
    if not enabled():
        return None
    if remember:
        with _lock:
            hit = _memory.get(key)
        if hit is not None:
            return hit
    path = os.path.join(cache_dir(), key[:2], key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    entry = _decode(data)
    if entry is None:
        try:
            os.remove(path)
        except OSError:
            pass
        return None
    if remember:
        with _lock:
            _memory[key] = entry
    return entry


def _store(key: str, entry, remember: bool = True) -> None:
    if not enabled():
        return
    if remember:
        with _lock:
            _memory[key] = entry
    try:
        payload = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # e.g. RecursionError on a very deep graph: caching is best effort
        return
    data = _MAGIC + hashlib.sha256(payload).digest() + payload
    directory = os.path.join(cache_dir(), key[:2])
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(directory, key))
    except OSError:
        pass  # a read-only cache directory only costs recompilation


def _decode(data: bytes):
    head = len(_MAGIC) + 32
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    digest, payload = data[len(_MAGIC) : head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return pickle.loads(payload)
    except Exception:
        return None


def clear_memory() -> None:
    with _lock:
        _memory.clear()
