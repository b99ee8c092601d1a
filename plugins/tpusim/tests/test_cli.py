"""The CLI with ``--platform tpusim``: the device profile and the dumped program."""

from __future__ import annotations

import json

from hlort.cli import main

MODULE = """HloModule mm

ENTRY %main (a: f32[64,96], b: f32[96,32]) -> f32[64,32] {
  %a = f32[64,96]{1,0} parameter(0)
  %b = f32[96,32]{1,0} parameter(1)
  %d = f32[64,32]{1,0} dot(f32[64,96]{1,0} %a, f32[96,32]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[64,32]{1,0} tanh(f32[64,32]{1,0} %d)
}
"""  # noqa: E501


def test_run_profile_reports_the_device_profile(tmp_path, capsys):
    path = tmp_path / "mm.hlo"
    path.write_text(MODULE)
    assert main(["run", str(path), "--platform", "tpusim", "--profile", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    profile = report["profile"]["execution_profile"]
    assert profile["cycles"] > 0 and profile["mxu_macs"] == 64 * 96 * 32
    assert {"DMA", "MXU", "VPU"} <= set(profile["by_class"])
    assert main(["run", str(path), "--platform", "tpusim", "--profile"]) == 0
    assert "device mxu_utilization" in capsys.readouterr().out


def test_compile_dump_dir_has_the_program(tmp_path, capsys):
    path = tmp_path / "mm.hlo"
    path.write_text(MODULE)
    dump = tmp_path / "dump"
    assert main(["compile", str(path), "--platform", "tpusim", "--dump-dir", str(dump)]) == 0
    text = (dump / "mm.tpusim.program.txt").read_text()
    assert "mxu.matmul" in text and "v.tanh.f32" in text
