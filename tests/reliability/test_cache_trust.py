"""What is on disk in the caches is checked, never trusted: no pickles, keys checked on load.

A file planted in the cpu plugin's compile cache used to be unpickled (running its code) and then
failed every later process; an entry copied over another key's file was silently run in its
place, on cpu, tpusim and the interpreter. Now entries are hlort's own encoding, start with the
key they were stored under, and any entry that does not load is deleted and compiled again.
"""

import hashlib
import os
import pickle
import shutil

import numpy as np
import pytest

import hlort
from hlort.ir import module_codec
from hlort.text.parser import parse_module
from hlort.text.printer import print_module

TANH = "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT t = f32[4] tanh(a)\n}"
EXP = "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT t = f32[4] exponential(a)\n}"
ONES = np.ones(4, np.float32)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    compile_cache.clear_memory()
    yield tmp_path
    compile_cache.clear_memory()


def _fresh_process_view():
    """What a new process sees: nothing in memory, only the files."""
    from hlort_cpu import compile_cache

    compile_cache.clear_memory()


def _files(root, sub):
    return {p for p in (root / sub).rglob("*") if p.is_file() and p.name != ".hlort-cache"}


class _Planted:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))  # creating the marker file proves it ran


@pytest.mark.parametrize("magic", [b"HLORTCPU1", b"HLORTCPU2"])
def test_a_pickle_planted_in_the_cpu_cache_never_runs_and_is_replaced(cache_dir, magic):
    hlort.compile(TANH, "cpu")(ONES)
    entries = _files(cache_dir, "cpu")
    assert entries
    marker = cache_dir / "planted-ran"
    payload = pickle.dumps(_Planted(str(marker)))
    for path in entries:
        key = path.name.encode() if magic.endswith(b"2") else b""
        path.write_bytes(magic + key + hashlib.sha256(payload).digest() + payload)
    shutil.rmtree(cache_dir / "executables")  # so the module and object entries are read
    for _ in range(2):
        _fresh_process_view()
        np.testing.assert_allclose(hlort.compile(TANH, "cpu")(ONES), np.tanh(ONES), rtol=1e-6)
    assert not marker.exists()
    for path in entries:
        if path.exists():
            assert b"__reduce__" not in path.read_bytes() and not path.read_bytes().startswith(
                magic + path.name.encode() + hashlib.sha256(payload).digest()
            )


def test_no_cache_entry_is_a_pickle(cache_dir):
    exe = hlort.compile(TANH, "cpu")
    exe.serialize()
    for path in _files(cache_dir, "cpu") | _files(cache_dir, "executables"):
        data = path.read_bytes()
        assert b"\x80\x04\x95" not in data and b"\x80\x05\x95" not in data  # pickle protocol 4/5


@pytest.mark.parametrize("platform", ["cpu", "tpusim", "interpreter"])
def test_an_entry_copied_over_another_key_is_rejected_and_recompiled(cache_dir, platform):
    hlort.compile(TANH, platform)
    tanh_entries = _files(cache_dir, "executables")
    hlort.compile(EXP, platform)
    (exp_entry,) = _files(cache_dir, "executables") - tanh_entries
    (tanh_entry,) = tanh_entries
    shutil.copy(exp_entry, tanh_entry)
    _fresh_process_view()
    again = hlort.compile(TANH, platform)
    assert "cache_load" not in again.timings, "the swapped entry must not be used"
    np.testing.assert_allclose(again(ONES), np.tanh(ONES), rtol=1e-6)
    _fresh_process_view()
    third = hlort.compile(TANH, platform)
    assert "cache_load" in third.timings, "the recompiled entry is stored again"
    np.testing.assert_allclose(third(ONES), np.tanh(ONES), rtol=1e-6)


def test_swapped_cpu_object_and_module_entries_are_rejected(cache_dir):
    hlort.compile(TANH, "cpu").serialize()
    tanh_entries = _files(cache_dir, "cpu")
    hlort.compile(EXP, "cpu").serialize()
    exp_entries = sorted(_files(cache_dir, "cpu") - tanh_entries, key=lambda p: p.stat().st_size)
    for target, source in zip(
        sorted(tanh_entries, key=lambda p: p.stat().st_size), exp_entries, strict=False
    ):
        shutil.copy(source, target)
    shutil.rmtree(cache_dir / "executables")
    _fresh_process_view()
    np.testing.assert_allclose(hlort.compile(TANH, "cpu")(ONES), np.tanh(ONES), rtol=1e-6)


def test_the_module_encoding_round_trips_exactly():
    text = """HloModule rt, replica_count=1
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  c = f32[3] constant({-0, nan, inf})
  b = f32[2,3] broadcast(c), dimensions={1}
  m = f32[2,3] multiply(p, b)
  z = f32[] constant(0)
  r = f32[2] reduce(m, z), dimensions={1}, to_apply=add
  ROOT t = (f32[2], f32[2,3]) tuple(r, m)
}"""
    module = parse_module(text)
    back = module_codec.decode_module(module_codec.encode_module(module))
    assert back.fingerprint() == module.fingerprint()
    assert print_module(back) == print_module(module)
    for comp, comp_back in zip(module.computations, back.computations, strict=True):
        for a, b in zip(comp.instructions, comp_back.instructions, strict=True):
            if a.literal is not None:  # 0-d literals stay 0-d
                assert b.literal.shape == a.literal.shape and b.literal.dtype == a.literal.dtype


@pytest.mark.parametrize(
    "doc",
    [
        '["D", "system", {}]',
        '["E", "Opcode", "no-such-op"]',
        '["A", "=O", [1], 0, 8]',
        '["A", "f32", [4], 0, 1000]',
        '["C", 0]',
        '["Q"]',
        '{"a": 1}',
        '["M", 1]',
    ],
)
def test_the_decoder_builds_only_what_it_allows(doc):
    data = module_codec.MAGIC + len(doc).to_bytes(4, "big") + doc.encode()
    with pytest.raises(module_codec.CodecError):
        module_codec.decode_value(data)


def test_values_outside_the_allowed_types_are_not_encoded():
    with pytest.raises(module_codec.CodecError):
        module_codec.encode_value(os.stat("."))
    with pytest.raises(module_codec.CodecError):
        module_codec.encode_value(np.array([object()]))
