"""pytest plugin: tell JAX's test utilities which class of device an hlort platform is.

JAX's tests decide skips and tolerances by ``jtu.device_under_test()``, which is the default
backend's platform name unless the ``jax_test_dut`` flag says otherwise. ``hlort_cpu`` and
``hlort_interpreter`` run on the host like JAX's CPU backend, yet ~470 of
``lax_control_flow_test.py``'s tests are tagged ``jtu.run_on_devices("cpu")`` and skip on any
other name. ``jax_tests.py`` loads this plugin (``-p jax_test_dut``) with ``HLORT_JAX_TEST_DUT=cpu``
for those platforms (and hlort_tpusim: see the DUT comment in jax_tests.py), so the tests run with
the CPU's expectations, as they would on XLA:CPU.
The flag is JAX's own override; an environment variable alone does not reach it.

Tests of lax.platform_dependent are the exception: JAX lowers it by the platform's *name*, so
on ``hlort_cpu`` it takes the ``default`` branch (a ``cpu=`` branch may hold XLA:CPU's own
custom calls, which hlort has not), while a test told "cpu" expects the ``cpu`` branch. Those
tests run under the platform's own name (the flag cleared for the test's duration), where they
check what hlort does.
"""

from __future__ import annotations

import os

import pytest

# Test-function name prefixes whose expectations follow the lowering platform's name.
OWN_NAME_PREFIXES = ("test_platform_dependent",)


def pytest_configure(config) -> None:
    dut = os.environ.get("HLORT_JAX_TEST_DUT")
    if not dut:
        return
    import jax
    from jax._src import test_util  # noqa: F401  (defines the jax_test_dut flag)

    jax.config.update("jax_test_dut", dut)


def runs_under_own_name(test_name: str) -> bool:
    """Whether a test (its function name, parameters included) checks the platform's name."""
    return test_name.startswith(OWN_NAME_PREFIXES)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    dut = os.environ.get("HLORT_JAX_TEST_DUT")
    if not dut or not runs_under_own_name(item.name):
        yield
        return
    import jax
    from jax._src import test_util  # noqa: F401  (defines the jax_test_dut flag)

    jax.config.update("jax_test_dut", "")
    try:
        yield
    finally:
        jax.config.update("jax_test_dut", dut)
