"""Dynamic ops: shape-polymorphic programs refined for two shapes each, run on the backend.

Shape refinement (in the core) turns each dynamic op into its static form; the backend runs
that. Results are compared with NumPy references: floats within rtol 1e-5 / atol 1e-6 (f32
arithmetic of at most a 3-term dot product), integers exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.importers.stablehlo.polymorphic import refine_stablehlo
from hlort.shape import ArrayShape
from hlort.testing.dynamic_programs import PROGRAMS

RTOL, ATOL = 1e-5, 1e-6


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.op for p in PROGRAMS])
def test_dynamic_op(program, hlort_session) -> None:
    for run, dims in enumerate(program.shapes):
        args = program.inputs(dims, seed=run)
        shapes = [ArrayShape(dtypes.from_numpy(a.dtype), tuple(a.shape)) for a in args]
        module = refine_stablehlo(program.text, shapes, source_name=program.op).result.module
        exe = hlort_session.compile(module)
        outputs = hlort_session.run(exe, args)
        expected = program.reference(*args)
        assert len(outputs) == len(expected), program.op
        for got, want in zip(outputs, expected, strict=True):
            context = f"{program.op} refined for {dims}"
            assert got.shape == want.shape, context
            if np.issubdtype(want.dtype, np.floating):
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=context)
            else:
                np.testing.assert_array_equal(got, want, err_msg=context)
