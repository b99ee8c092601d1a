"""Multi-device JAX programs on hlort platforms: sharded jit, shard_map, pmap, a data-parallel
MLP step, each compared with JAX's own CPU on 4 devices (values and output shardings).

The programs are in multi_device_cases.py, run once per platform in a process of its own
(device counts are fixed when JAX starts its backends): HLORT_CPU_DEVICES=4,
HLORT_INTERPRETER_DEVICES=4, tpusim's 4 chips, jax_num_cpu_devices=4 for JAX's CPU.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys

import pytest
from jax_platforms import PLATFORMS

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import multi_device_cases as cases  # noqa: E402

CASE_NAMES = list(cases.CASES)
# Where hlort lays an output out differently from XLA:CPU (the values still match).
OTHER_LAYOUT = {
    "pmap_inside_fori_loop": "hlort keeps a loop's state replicated; XLA propagates the "
    "shard_map's tiling into it",
}


@functools.cache
def _results(platform: str) -> dict[str, dict]:
    env = dict(os.environ, HLORT_CPU_DEVICES="4", HLORT_INTERPRETER_DEVICES="4")
    env.pop("JAX_PLATFORMS", None)
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "multi_device_cases.py"), platform],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    if not lines:
        pytest.fail(f"multi_device_cases.py {platform} printed nothing: {done.stderr[-3000:]}")
    return {line["case"]: line for line in lines}


@pytest.mark.parametrize("name", CASE_NAMES)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_matches_jax_cpu_on_four_devices(platform, name):
    line = _results(platform).get(name)
    assert line is not None, f"{name} did not report (the process died?)"
    assert line["ok"], f"{name} on {platform}: {line['error']}\n{line.get('traceback', '')}"
    # the outputs are laid out as XLA:CPU lays them out (hlort's partitioner's choice, reported
    # to jaxlib through the Shardings extension)
    if name not in OTHER_LAYOUT:
        assert line["shardings"] == line["cpu_shardings"]


@pytest.mark.parametrize("name", list(cases.ERROR_CASES))
@pytest.mark.parametrize("platform", PLATFORMS)
def test_unsupported_program_is_a_clear_error(platform, name):
    line = _results(platform)[name]
    assert line["error"] is not None, f"{name} ran on {platform}; expected an error"
    assert re.search(line["expected_error"], line["error"]), line["error"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_programs_really_ran_on_four_devices(platform):
    # guards the comparisons above from passing trivially on one device per platform
    results = _results(platform)
    assert results["jit_data_parallel"]["shardings"] == ["{devices=[4]<=[4]}"]
    assert results["jit_tensor_parallel_matmul"]["shardings"] == [
        "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"
    ]


_COUNTS = (
    "import jax; jax.config.update('jax_num_cpu_devices', 3); "
    "print(len(jax.devices('hlort_cpu')), len(jax.devices('cpu')))"
)


@pytest.mark.parametrize(
    "env,expected",
    [
        ({}, "3 3"),  # hlort_cpu follows JAX's jax_num_cpu_devices
        ({"HLORT_CPU_DEVICES": "2"}, "2 3"),  # hlort's own setting wins
        ({"JAX_PJRT_CLIENT_CREATE_OPTIONS": "device_count:5"}, "5 3"),  # the client option too
    ],
)
def test_how_many_hlort_cpu_devices_jax_sees(env, expected):
    base = {k: v for k, v in os.environ.items() if k not in ("HLORT_CPU_DEVICES", "JAX_PLATFORMS")}
    done = subprocess.run(
        [sys.executable, "-c", _COUNTS],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == expected
