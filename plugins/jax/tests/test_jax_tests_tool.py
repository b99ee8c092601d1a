"""tools/jax_tests.py: which class of device JAX's tests are told each hlort platform is."""

import importlib.util
import os

import pytest

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


_DUT_PLUGIN = os.path.join(os.path.dirname(__file__), "..", "tools", "jax_test_dut.py")
_dut_spec = importlib.util.spec_from_file_location("hlort_jax_test_dut", _DUT_PLUGIN)
jax_test_dut = importlib.util.module_from_spec(_dut_spec)
_dut_spec.loader.exec_module(jax_test_dut)


def test_only_platform_dependent_tests_run_under_their_own_name():
    assert jax_test_dut.runs_under_own_name("test_platform_dependent")
    assert jax_test_dut.runs_under_own_name("test_platform_dependent_grad")
    assert not jax_test_dut.runs_under_own_name("testCond_jit")
    assert not jax_test_dut.runs_under_own_name("test_cond_platform_dependent")


class _Item:
    def __init__(self, name):
        self.name = name


def _dut_during(name):
    """The jax_test_dut flag while the plugin runs test ``name``, and after it."""
    from jax._src import test_util

    call = jax_test_dut.pytest_runtest_call(_Item(name))
    next(call)
    during = test_util._TEST_DUT.value
    try:
        call.send(None)
    except StopIteration:
        pass
    return during, test_util._TEST_DUT.value


def test_dut_flag_is_cleared_for_platform_name_tests_only(monkeypatch):
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install hlort-jax)")
    from jax._src import test_util  # noqa: F401  (defines the jax_test_dut flag)

    monkeypatch.setenv("HLORT_JAX_TEST_DUT", "cpu")
    jax.config.update("jax_test_dut", "cpu")
    try:
        assert _dut_during("test_platform_dependent_batched") == ("", "cpu")
        assert _dut_during("testScanGrad") == ("cpu", "cpu")
    finally:
        jax.config.update("jax_test_dut", "")


def test_sample_seed_adds_the_sampling_plugin():
    env, args = jax_tests.pytest_env("hlort_cpu", sample_seed=7)
    assert env["HLORT_JAX_TEST_SAMPLE_SEED"] == "7" and env["HLORT_JAX_TEST_DUT"] == "cpu"
    assert args == ["-p", "jax_test_dut", "-p", "jax_test_sampling"]
    env, args = jax_tests.pytest_env("cpu", sample_seed=3)
    assert args == ["-p", "jax_test_sampling"] and jax_tests.HERE in env["PYTHONPATH"]


_SAMPLING_PLUGIN = os.path.join(os.path.dirname(__file__), "..", "tools", "jax_test_sampling.py")
_sampling_spec = importlib.util.spec_from_file_location("hlort_jax_sampling", _SAMPLING_PLUGIN)
jax_test_sampling = importlib.util.module_from_spec(_sampling_spec)
_sampling_spec.loader.exec_module(jax_test_sampling)


def test_seeded_choice_differs_from_jax_seed_and_repeats_itself():
    import numpy as np

    jax_choice = np.random.RandomState(42).choice(1000, size=10, replace=False)
    ours = jax_test_sampling.seeded_choice(5)
    picked = ours(1000, 10)
    assert len(set(picked)) == 10 and all(0 <= i < 1000 for i in picked)
    assert list(picked) != list(jax_choice)
    np.testing.assert_array_equal(jax_test_sampling.seeded_choice(5)(1000, 10), picked)
