"""Run one test case: import with checks collected, execute, compare.

``platform="interpreter"`` runs on the reference evaluator directly; any other platform goes
through ``hlort.compile`` (imported lazily, so this module works before a runtime exists).
Every outcome is one of pass / fail / unsupported / skipped, never an exception.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlort.errors import HlortError, Unimplemented
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort.testdata.cases import Case, split_cases
from hlort.testdata.comparisons import compare

PASS = "pass"
FAIL = "fail"
UNSUPPORTED = "unsupported"
SKIPPED = "skipped"


@dataclass
class Outcome:
    id: str
    relpath: str
    op: str
    status: str
    message: str = ""
    seconds: float = 0.0

    def line(self) -> str:
        text = f"{self.status.upper():<11} {self.id}"
        return f"{text}: {self.message}" if self.message else text


def run_file(path: str, relpath: str, platform: str = "interpreter") -> list[Outcome]:
    try:
        text = Path(path).read_text()
    except OSError as err:
        return [Outcome(relpath, relpath, "?", FAIL, f"cannot read: {err}")]
    return [run_case(case, platform) for case in split_cases(path, relpath, text)]


def run_case(case: Case, platform: str = "interpreter") -> Outcome:
    start = time.perf_counter()
    status, message = _run(case, platform)
    return Outcome(case.id, case.relpath, case.op, status, message, time.perf_counter() - start)


def _run(case: Case, platform: str) -> tuple[str, str]:
    if case.skipped:
        return SKIPPED, case.skipped
    from hlort.importers.stablehlo import import_stablehlo
    from hlort.testdata.polymorphic_case import cross_check, import_polymorphic

    refined_note = ""
    try:
        polymorphic = import_polymorphic(case)
        if polymorphic is not None:
            imported, refined_note = polymorphic
        else:
            imported = import_stablehlo(case.text, case.relpath, collect_checks=True)
    except Unimplemented as err:
        return UNSUPPORTED, err.message
    except HlortError as err:
        return FAIL, f"import: {err}"
    except Exception as err:  # noqa: BLE001 - reported, never raised
        return FAIL, f"import crashed: {type(err).__name__}: {err}"
    entry = imported.module.entry
    args = sample_arguments([p.shape for p in entry.parameters])
    try:
        outputs = execute(imported.module, args, platform)
    except Unimplemented as err:
        return UNSUPPORTED, err.message
    except HlortError as err:
        return FAIL, f"execute: {err}"
    except Exception as err:  # noqa: BLE001
        where = traceback.extract_tb(err.__traceback__)[-1]
        return FAIL, (
            f"execute crashed: {type(err).__name__}: {err} "
            f"({Path(where.filename).name}:{where.lineno})"
        )
    values = top_level_outputs(outputs, entry.root.shape)
    for spec in imported.checks:
        actual = values[spec.actual]
        expected = values[spec.expected] if spec.expected is not None else spec.expected_value
        try:
            problem = compare(
                spec.kind, actual, expected, spec.tolerance, spec.min_ulp, spec.max_ulp
            )
        except Exception as err:  # noqa: BLE001
            return FAIL, f"{spec.describe()}: cannot compare: {type(err).__name__}: {err}"
        if problem is not None:
            return FAIL, f"{spec.describe()}: {problem}"
    if refined_note:
        problem = None
        if platform != "interpreter":
            from hlort.interpreter import evaluate

            expected = top_level_outputs(evaluate(imported.module, args), entry.root.shape)
            problem = cross_check(imported.module, args, values, expected, platform)
        if problem is not None:
            return FAIL, f"{refined_note}: {problem}"
        checked = "; matches the interpreter" if platform != "interpreter" else ""
        return PASS, f"{refined_note}, ran on sample inputs{checked}"
    if not imported.checks and args:
        return PASS, "ran (no checks; sample inputs)"
    return PASS, ""


def execute(module, args: list, platform: str):
    """The entry's result on ``platform``: nested tuples for the interpreter, a flat tuple
    from compiled executables."""
    if platform == "interpreter":
        from hlort.interpreter import evaluate

        return evaluate(module, args)
    try:
        import hlort

        compile_ = hlort.compile
    except (ImportError, AttributeError):
        raise Unimplemented(
            f"platform {platform!r}: hlort.compile is not available in this "
            f"installation; use --platform interpreter"
        ) from None
    executable = compile_(module, platform, compile_options())
    return executable(*args)


OPTIONS_ENV = "HLORT_TESTDATA_OPTIONS"  # how `hlort testdata --option` reaches its workers


def compile_options() -> dict | None:
    """The target options given with ``--option KEY=VALUE`` (JSON in HLORT_TESTDATA_OPTIONS)."""
    raw = os.environ.get(OPTIONS_ENV)
    return {"target_options": json.loads(raw)} if raw else None


def top_level_outputs(outputs, root: Shape) -> list:
    """The root tuple's elements, whether ``outputs`` is nested (interpreter) or flattened."""
    if not isinstance(root, TupleShape):
        return [outputs]
    elements = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    if len(elements) == len(root.elements):
        return elements
    out, i = [], 0
    for shape in root.elements:
        n = len(shape.leaf_shapes())
        out.append(elements[i] if n == 1 else tuple(elements[i : i + n]))
        i += n
    return out


def sample_arguments(shapes: list[Shape]) -> list:
    """Deterministic arguments for an entry that takes parameters (smoke runs only)."""
    rng = np.random.default_rng(0)
    out: list = []
    for shape in shapes:
        if isinstance(shape, ArrayShape):
            out.append(_random(shape, rng))
        else:
            out.append(None)
    return out


def _random(shape: ArrayShape, rng: np.random.Generator) -> np.ndarray:
    dt = shape.dtype
    if dt.is_pred:
        return rng.integers(0, 2, size=shape.dims).astype(np.bool_)
    if dt.is_integer:
        return rng.integers(0, 5, size=shape.dims).astype(dt.numpy)
    values = rng.standard_normal(shape.dims)
    if dt.is_complex:
        values = values + 1j * rng.standard_normal(shape.dims)
    return np.asarray(values).astype(dt.numpy)
