"""`hlort run --profile`: the compile's phases add up to the compile time, and device numbers
print with units (issue 19 item 10: 157 ms total with 67 ms listed; tpusim's `2.68e-06`)."""

import json

import pytest

from hlort import cli
from hlort.runtime.run_profile import (
    OTHER,
    format_device_value,
    format_hz,
    format_number,
    format_seconds,
    phase_lines,
    phases_ms,
)

HLO = """HloModule p

ENTRY main {
  x = f32[8,8] parameter(0)
  d = f32[8,8] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[8,8] exponential(d)
}
"""


def test_the_compile_phases_sum_to_the_compile_time():
    timings = {"load": 0.5, "verify": 0.001, "core_passes": 0.020, "backend_compile": 0.040}
    phases = phases_ms(timings, parse_s=0.3, compile_s=0.157, transfer_in_s=0.002, transfer_out_s=0)
    assert list(phases) == [
        "parse",
        "verify",
        "core_passes",
        "backend_compile",
        OTHER,
        "transfer_in",
        "transfer_out",
    ]
    compile_part = [
        v for k, v in phases.items() if k not in ("parse", "transfer_in", "transfer_out")
    ]
    assert sum(compile_part) == pytest.approx(157.0, abs=1e-6)
    assert phases[OTHER] == pytest.approx(96.0)
    lines = phase_lines(phases, 157.0)
    assert lines[1].split() == ["compile", "157.000", "ms"]
    assert lines[5].startswith("  other") and "96.000 ms" in lines[5]


def test_a_cache_hit_lists_the_cache_load():
    phases = phases_ms(
        {"load": 0.1, "cache_load": 0.004},
        parse_s=0,
        compile_s=0.005,
        transfer_in_s=0,
        transfer_out_s=0,
    )
    assert phases["cache_load"] == 4.0 and phases[OTHER] == 1.0


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("seconds", 2.68e-06, "2.68 us"),
        ("seconds", 0.0125, "12.5 ms"),
        ("time_us", 2.839, "2.84 us"),
        ("clock_hz", 940000000.0, "940 MHz"),
        ("mxu_utilization", 0.005996234364818895, "0.60 %"),
        ("hbm_bytes_read", 49152, "49,152 B"),
        ("cycles", 2668.3, "2,668.3"),
        ("mxu_macs", 262144.0, "262,144"),
        ("by_kernel", {"y": 1598.0048, "z": 1070.336533333333}, "y=1,598.0; z=1,070.3"),
        (
            "by_class",
            {"DMA": {"count": 5.0, "busy_cycles": 2653.0}},
            "DMA: count=5 busy_cycles=2,653",
        ),
    ],
)
def test_device_numbers_are_written_with_units(key, value, text):
    assert format_device_value(key, value) == text


def test_number_formats():
    assert format_number(0.5) == "0.5" and format_number(3) == "3" and format_number(True) == "True"
    assert format_number(1e-7) == "1.000e-07"
    assert format_seconds(0) == "0 s" and format_seconds(3.0) == "3 s"
    assert format_hz(2.5e9) == "2.5 GHz" and format_hz(50.0) == "50 Hz"


def test_run_profile_json_adds_up(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "p.hlo"
    path.write_text(HLO)
    argv = ["run", str(path), "--platform", "interpreter", "--profile", "--json"]
    assert cli.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    phases = report["profile"]["phases_ms"]
    compile_part = sum(
        v for k, v in phases.items() if k not in ("parse", "transfer_in", "transfer_out")
    )
    assert compile_part == pytest.approx(report["compile_ms"], abs=0.01)
    assert cli.main(argv[:-1]) == 0  # the text form: the compile line and its phases under it
    out = capsys.readouterr().out
    assert "  compile " in out and "    other " in out
