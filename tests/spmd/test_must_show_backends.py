"""The MLP data-parallel step as one sharded module on 4 cpu devices and on the 4 tpusim chips.

cpu must match the single-device step within f32 tolerance (rtol 1e-5, atol 1e-6: the gradient
sums add per device, then across devices). tpusim's matrix unit takes bf16 inputs by design
(docs/tpusim.md), so its step is compared with tpusim's own single-chip step, within the same
f32 tolerance; its profile shows each gradient all-reduce's modelled ring time.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.runtime.selection import backend_for_client
from hlort.runtime.sharded_call import compile_sharded
from hlort.testing.spmd_programs import arguments_for, mlp_training_step, single_device

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


def _step(backend, reference):
    module = mlp_training_step(devices=4, batch=32)
    args = arguments_for(module, seed=3)
    want = reference.compile(single_device(module))(*args)
    sharded = compile_sharded(backend, module)
    assert len(sharded.devices) == 4
    got = sharded(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return sharded


def test_mlp_step_on_4_cpu_devices():
    cpu_plugin = pytest.importorskip("hlort_cpu.plugin", reason="the cpu plugin is not installed")
    client = cpu_plugin.CpuPlugin().create_client({"device_count": 4})
    interpreter = InterpreterPlugin(device_count=1).create_client()
    try:
        sharded = _step(backend_for_client(client), backend_for_client(interpreter))
        assert [str(d) for d in sharded.devices] == [f"cpu:{i}" for i in range(4)]
        assert list(sharded.exe.raw.fallbacks()) == []
    finally:
        client.close()
        interpreter.close()


def test_mlp_step_on_4_tpusim_chips_shows_the_all_reduce_time():
    tpusim = pytest.importorskip("hlort_tpusim.plugin", reason="the tpusim plugin is not installed")
    client = tpusim.TpuSimPlugin().create_client()
    try:
        backend = backend_for_client(client)
        sharded = _step(backend, backend)
        profile = sharded.exe.raw.execution_profile()
        profile = profile if isinstance(profile, dict) else vars(profile)
        reduces = [c for c in profile["collectives"] if c["kind"] == "all-reduce"]
        assert len(reduces) == 7  # 6 gradients and the loss
        assert all(c["group_size"] == 4 and c["link_seconds"] > 0 for c in reduces)
    finally:
        client.close()
