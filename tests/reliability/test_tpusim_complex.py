"""tpusim runs, serializes and caches complex programs.

Complex splats and reduction inits are Python complex numbers inside the device program, which
its JSON form could not hold ("Object of type complex is not JSON serializable"): serializing,
and so the persistent cache, failed for every complex program with a complex constant.
"""

import numpy as np
import pytest

import hlort

SCALE = """HloModule scale
ENTRY e {
  p = {t}[4] parameter(0)
  k = {t}[] constant((1.5, -2))
  b = {t}[4] broadcast(k), dimensions={{}}
  ROOT m = {t}[4] multiply(p, b)
}"""
EMPTY_SUM = """HloModule empty_sum
add {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT s = {t}[] add(a, b)
}}
ENTRY e {{
  p = {t}[0] parameter(0)
  z = {t}[] constant((0.5, 0.25))
  ROOT r = {t}[] reduce(p, z), dimensions={{0}}, to_apply=add
}}"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    return tmp_path


@pytest.mark.parametrize("t,numpy_type", [("c64", np.complex64), ("c128", np.complex128)])
def test_complex_constants_run_serialize_and_load_from_the_cache(cache_dir, t, numpy_type):
    text = SCALE.replace("{t}", t).replace("{{", "{").replace("}}", "}")
    x = (np.arange(4) + 1j * np.arange(4)[::-1]).astype(numpy_type)
    want = x * numpy_type(1.5 - 2j)
    first = hlort.compile(text, "tpusim")
    np.testing.assert_allclose(first(x), want, rtol=1e-6)
    again = hlort.backend("tpusim").deserialize(first.serialize())
    np.testing.assert_allclose(again(x), want, rtol=1e-6)
    cached = hlort.compile(text, "tpusim")
    assert "cache_load" in cached.timings
    np.testing.assert_allclose(cached(x), want, rtol=1e-6)


@pytest.mark.parametrize("t,numpy_type", [("c64", np.complex64), ("c128", np.complex128)])
def test_an_empty_complex_reduction_gives_its_init_from_a_warm_cache(cache_dir, t, numpy_type):
    text = EMPTY_SUM.format(t=t)
    for _ in range(2):
        exe = hlort.compile(text, "tpusim")
        assert exe(np.zeros(0, numpy_type)) == numpy_type(0.5 + 0.25j)
    assert "cache_load" in exe.timings
