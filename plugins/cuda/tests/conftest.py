"""Fixtures: clients of the shared GPU runtime on the fake in-process driver (host memory)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # fake_gpu_driver, fake_gpu_client

from fake_gpu_client import FakeGpuPlugin  # noqa: E402


@pytest.fixture
def make_client():
    clients = []

    def make(**options):
        client = FakeGpuPlugin().create_client(options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def rng():
    return np.random.default_rng(0)
