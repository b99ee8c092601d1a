"""StableHLO text -> HLO -> HLO text -> HLO: the printed module parses back to an equal module
that computes the same results (samples written the way JAX prints programs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.importers.stablehlo import parse_stablehlo
from hlort.shape import ArrayShape

text_api = pytest.importorskip("hlort.text", reason="the HLO text parser/printer is not built yet")

SAMPLES = sorted((Path(__file__).parent / "samples").glob("*.mlir"))


def _inputs(module) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for p in module.entry.parameters:
        shape = p.shape
        assert isinstance(shape, ArrayShape)
        if shape.dtype.is_integer:
            out.append(rng.integers(0, 3, size=shape.dims).astype(shape.dtype.numpy))
        else:
            out.append(rng.standard_normal(shape.dims).astype(shape.dtype.numpy))
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_stablehlo_to_hlo_text_and_back(path):
    module = parse_stablehlo(path.read_text(), path.name)
    hlort.verify_module(module)
    printed = text_api.print_module(module)
    reparsed = text_api.parse_module(printed)
    assert text_api.module_difference(module, reparsed) is None
    assert text_api.print_module(reparsed) == printed
    args = _inputs(module)
    first, second = hlort.evaluate(module, args), hlort.evaluate(reparsed, args)
    for a, b in zip(
        np.atleast_1d(first) if not isinstance(first, tuple) else first,
        np.atleast_1d(second) if not isinstance(second, tuple) else second,
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_samples_exist():
    assert len(SAMPLES) >= 6
