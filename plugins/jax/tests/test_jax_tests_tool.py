"""tools/jax_tests.py: which class of device JAX's tests are told each hlort platform is."""

import importlib.util
import os

_TOOL = os.path.join(os.path.dirname(__file__), "..", "tools", "jax_tests.py")
_spec = importlib.util.spec_from_file_location("hlort_jax_tests_tool", _TOOL)
jax_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jax_tests)


def test_hlort_platforms_run_as_cpu_with_jax_cpu_second():
    # tpusim too: JAX's lax tests check dots at HIGHEST, and the "tpu" DUT only adds skips and
    # JAX's TPU-only lowerings (see the DUT comment in jax_tests.py)
    for platform in ("hlort_cpu", "hlort_interpreter", "hlort_tpusim"):
        env, args = jax_tests.pytest_env(platform)
        assert env["JAX_PLATFORMS"] == f"{platform},cpu"
        assert env["HLORT_JAX_TEST_DUT"] == "cpu"
        assert args == ["-p", "jax_test_dut"]
        assert jax_tests.HERE in env["PYTHONPATH"].split(os.pathsep)


def test_own_names_and_jax_cpu_get_no_dut():
    assert jax_tests.pytest_env("hlort_tpusim", own_names=True) == (
        {"JAX_PLATFORMS": "hlort_tpusim"},
        [],
    )
    assert jax_tests.pytest_env("cpu") == ({"JAX_PLATFORMS": "cpu"}, [])
