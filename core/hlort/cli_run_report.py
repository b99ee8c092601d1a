"""The ``hlort run`` report, one builder for the one-device and the many-device paths.

Both print the same keys (``--json`` readers rely on them); only the device list and the
replica/partition counts differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def describe(name: str, shape) -> dict:
    return {"name": name, "shape": list(shape.dims), "dtype": shape.dtype.name}


def ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def timed_repeats(run: Callable[[], list], repeat: int) -> tuple[list, list[float]]:
    """Call ``run`` ``repeat`` times, each timed until every output it returns is ready
    (``run`` returns a flat list of buffers); returns the last outputs and the times."""
    times: list[float] = []
    outputs: list = []
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = run()
        for out in outputs:
            out.block_until_ready()
        times.append(time.perf_counter() - start)
    return outputs, times


def run_report(
    *,
    module,
    fmt: str,
    platform: str,
    devices: Sequence[str],
    input_shapes: Sequence,
    output_shapes: Sequence,
    inputs_source: str,
    compile_s: float,
    times: Sequence[float],
    output_file: str | None,
    extra: dict | None = None,
) -> dict:
    """The report's keys in their printed order; ``extra`` (replica/partition counts) goes
    after ``devices``."""
    report = {
        "module": module.name,
        "format": fmt,
        "platform": platform,
        "device": ", ".join(devices),
        "devices": list(devices),
        **(extra or {}),
        "inputs": [describe(f"arg{i}", s) for i, s in enumerate(input_shapes)],
        "inputs_source": inputs_source,
        "outputs": [describe(f"out{i}", s) for i, s in enumerate(output_shapes)],
        "compile_ms": ms(compile_s),
        "execute_ms": [ms(t) for t in times],
        "execute_ms_mean": ms(sum(times) / len(times)),
        "execute_ms_min": ms(min(times)),
    }
    if output_file:
        report["output_file"] = output_file
    return report
