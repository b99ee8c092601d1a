"""What ``hlort run --profile`` reports: phases that add up, and device numbers people can read.

The compile time the run prints is one wall-clock measurement around ``backend.compile``; the
phases the compile records (``Executable.timings``: verify, core passes, backend compile, cache
load/store) are listed under it, with ``compile_other`` for the rest (the cache key and lookup,
options, bookkeeping), so the listed phases always sum to the compile time. ``--json`` keeps the
raw numbers; the text form writes them with units (a device time of ``2.68e-06`` s is
``2.68 us``, a clock of ``940000000.0`` Hz is ``940 MHz``, a utilization a percentage).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# phases of Executable.timings that are outside the compile call the run times
_NOT_COMPILE = ("load",)
OTHER = "compile_other"


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def phases_ms(
    timings: Mapping[str, float],
    *,
    parse_s: float,
    compile_s: float,
    transfer_in_s: float,
    transfer_out_s: float,
) -> dict[str, float]:
    """``{phase: ms}`` in order: parse, the compile's phases and ``compile_other``, transfers.
    The compile's phases sum to ``compile_s`` (up to rounding to microseconds)."""
    compile_phases = {k: v for k, v in timings.items() if k not in _NOT_COMPILE}
    other = max(0.0, compile_s - sum(compile_phases.values()))
    return {
        "parse": _ms(parse_s),
        **{k: _ms(v) for k, v in compile_phases.items()},
        OTHER: _ms(other),
        "transfer_in": _ms(transfer_in_s),
        "transfer_out": _ms(transfer_out_s),
    }


def phase_lines(phases: Mapping[str, float], compile_ms: float) -> list[str]:
    """The phases as text, the compile's nested under one ``compile`` line with its total."""
    lines = []
    for name, ms in phases.items():
        if name == "parse":
            lines.append(f"{name:<18} {ms:10.3f} ms")
            lines.append(f"{'compile':<18} {compile_ms:10.3f} ms")
        elif name.startswith("transfer_"):
            lines.append(f"{name:<18} {ms:10.3f} ms")
        else:
            label = "other" if name == OTHER else name
            note = "  (cache key and lookup, options)" if name == OTHER else ""
            lines.append(f"  {label:<16} {ms:10.3f} ms{note}")
    return lines


def format_seconds(seconds: float) -> str:
    magnitude = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if magnitude >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return "0 s" if seconds == 0 else f"{seconds / 1e-9:.3g} ns"


def format_hz(hz: float) -> str:
    for scale, unit in ((1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz")):
        if abs(hz) >= scale:
            return f"{hz / scale:.4g} {unit}"
    return f"{hz:.4g} Hz"


def format_number(value: Any) -> str:
    """Integers (or integral floats) with thousands separators, other floats to 4 digits,
    without an exponent for values between 1e-4 and 1e15."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    if abs(value) >= 1e-4:
        return f"{value:.4g}"
    return f"{value:.3e}"


def format_device_value(key: str, value: Any) -> str:
    """One ``execution_profile`` entry as text, its unit read from its name."""
    if isinstance(value, Mapping):
        parts = []
        for name, item in value.items():
            if isinstance(item, Mapping):
                inner = " ".join(f"{k}={format_number(v)}" for k, v in item.items())
                parts.append(f"{name}: {inner}")
            else:
                parts.append(f"{name}={format_number(item)}")
        return "; ".join(parts)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    if key == "seconds" or key.endswith("_seconds") or key.endswith("_s"):
        return format_seconds(value)
    if key.endswith("_us"):
        return format_seconds(value * 1e-6)
    if key.endswith("_hz"):
        return format_hz(value)
    if "utilization" in key:
        return f"{value * 100:.2f} %"
    if "bytes" in key:
        return f"{format_number(value)} B"
    return format_number(value)
