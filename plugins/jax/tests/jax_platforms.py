"""The hlort platforms the JAX tests run on, and their devices (a skip when one cannot start).

Importing this module skips the importing test module when jax is not installed."""

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install hlort-jax)")
PLATFORMS = ("hlort_interpreter", "hlort_cpu", "hlort_tpusim")


def device(platform: str):
    try:
        return jax.devices(platform)[0]
    except RuntimeError as err:
        pytest.skip(f"{platform} is not available here: {err}")
