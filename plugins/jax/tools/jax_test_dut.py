"""pytest plugin: tell JAX's test utilities which class of device an hlort platform is.

JAX's tests decide skips and tolerances by ``jtu.device_under_test()``, which is the default
backend's platform name unless the ``jax_test_dut`` flag says otherwise. ``hlort_cpu`` and
``hlort_interpreter`` run on the host like JAX's CPU backend, yet ~470 of
``lax_control_flow_test.py``'s tests are tagged ``jtu.run_on_devices("cpu")`` and skip on any
other name. ``jax_tests.py`` loads this plugin (``-p jax_test_dut``) with ``HLORT_JAX_TEST_DUT=cpu``
for those platforms (and hlort_tpusim: see the DUT comment in jax_tests.py), so the tests run with
the CPU's expectations, as they would on XLA:CPU.
The flag is JAX's own override; an environment variable alone does not reach it.
"""

from __future__ import annotations

import os


def pytest_configure(config) -> None:
    dut = os.environ.get("HLORT_JAX_TEST_DUT")
    if not dut:
        return
    import jax
    from jax._src import test_util  # noqa: F401  (defines the jax_test_dut flag)

    jax.config.update("jax_test_dut", dut)
