"""An executable loaded from the persistent cache describes itself exactly like a fresh one.

Deserialized executables used to print their shapes with the default layouts the HLO printer
spells out ("f32[4]{0}"), so the conformance suite failed on a warm cache.
"""

import numpy as np
import pytest

import hlort

TWO_OUTPUTS = """HloModule two
ENTRY e {
  x = f32[4] parameter(0)
  y = s32[2,3] parameter(1)
  t = f32[2,2]{0,1} parameter(2)
  s = f32[4] add(x, x)
  ROOT r = (f32[4], s32[2,3], f32[2,2]{0,1}) tuple(s, y, t)
}"""


@pytest.mark.parametrize("platform", ["interpreter", "tpusim", "template", "cpu"])
def test_cached_and_fresh_executables_describe_themselves_alike(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    fresh = hlort.compile(TWO_OUTPUTS, platform)
    cached = hlort.compile(TWO_OUTPUTS, platform)
    assert "cache_load" in cached.timings
    loaded = hlort.backend(platform).deserialize(fresh.serialize())
    for exe in (cached, loaded):
        assert [str(s) for s in exe.output_shapes] == [str(s) for s in fresh.output_shapes]
        assert [str(s) for s in exe.input_shapes] == [str(s) for s in fresh.input_shapes]
    assert [str(s) for s in fresh.output_shapes] == ["f32[4]", "s32[2,3]", "f32[2,2]{0,1}"]
    args = (np.arange(4, dtype=np.float32), np.ones((2, 3), np.int32), np.eye(2, dtype=np.float32))
    for got, want in zip(cached(*args), fresh(*args), strict=True):
        np.testing.assert_array_equal(got, want)
