"""Fixtures: tpusim clients built directly from the plugin (small machines where tests need)."""

from __future__ import annotations

import numpy as np
import pytest

from hlort_tpusim.plugin import TpuSimPlugin


@pytest.fixture
def make_client():
    clients = []

    def make(**options):
        client = TpuSimPlugin().create_client(options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def run():
    return run_module


def run_module(client, module, *arrays, device=0, options=None):
    """Compile ``module`` (core passes skipped unless asked), run it, return (outputs, exe)."""
    from hlort.plugin.options import CompileOptions

    exe = client.compile(module, options or CompileOptions(device_assignment=((device,),)))
    dev = client.devices()[device]
    bufs = [client.buffer_from_host(a, dev) for a in arrays]
    outs = exe.execute([bufs])[0]
    return [o.to_host().result() for o in outs], exe
