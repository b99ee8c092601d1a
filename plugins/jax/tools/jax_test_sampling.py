"""pytest plugin: sample a different set of JAX's parameterized test cases (``--sample-seed``).

``jtu.sample_product`` picks its ``JAX_NUM_GENERATED_CASES`` cases per test from the cartesian
product with ``np.random.RandomState(42)`` and has no seed flag, so every run (and every larger
case count, whose sample starts with the smaller one's) sees the same cases first. With
``HLORT_JAX_TEST_SAMPLE_SEED=S`` this plugin swaps the sampler's choice for one seeded with
``S`` before the test modules are collected: the tests are JAX's own, unmodified; only which
cases of each product run changes. Tests that sample with ``jtu.named_cases_from_sampler`` (a
few in lax_test.py) keep JAX's seed.
"""

from __future__ import annotations

import functools
import os

import numpy as np

ENV = "HLORT_JAX_TEST_SAMPLE_SEED"


def seeded_choice(seed: int):
    """A replacement for ``jax._src.test_util._choice(n, m)``: m of range(n), without repeats."""

    @functools.cache
    def _choice(n: int, m: int):
        return np.random.RandomState(seed).choice(n, size=m, replace=False)

    return _choice


def pytest_configure(config) -> None:
    seed = os.environ.get(ENV)
    if not seed:
        return
    from jax._src import test_util

    if not callable(getattr(test_util, "_choice", None)):
        raise RuntimeError(f"{ENV}: jax._src.test_util._choice is gone; this jax samples otherwise")
    test_util._choice = seeded_choice(int(seed))
