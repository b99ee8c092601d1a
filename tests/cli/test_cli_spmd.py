"""`hlort run` / `hlort compile` of modules written for several devices: they run on that many
devices of the platform with global arrays in and out, and say which devices ran them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hlort import cli
from hlort.testing.spmd_programs import arguments_for, single_device, tensor_parallel_matmul
from hlort.text.printer import print_module


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def tp_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HLORT_INTERPRETER_DEVICES", "4")
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    path = tmp_path / "tp.hlo"
    path.write_text(print_module(tensor_parallel_matmul(devices=4)))
    return path


def test_run_partitioned_module_on_its_devices_with_global_arrays(capsys, tmp_path, tp_file):
    module = tensor_parallel_matmul(devices=4)
    args = arguments_for(module, seed=5)
    np.savez(tmp_path / "in.npz", **{f"arg{i}": a for i, a in enumerate(args)})
    code, out, err = run(
        capsys,
        "run",
        tp_file,
        "--platform",
        "interpreter",
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        tmp_path / "out.npz",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["devices"] == [f"interpreter:{i}" for i in range(4)]
    assert report["num_partitions"] == 4
    assert report["inputs"][1]["shape"] == [16, 32]  # global, not the tile
    got = np.load(tmp_path / "out.npz")["out0"]
    from hlort.interpreter.evaluator import Evaluator

    want = Evaluator().run(single_device(module), args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_single_device_json_lists_its_device(capsys, tmp_path, monkeypatch):
    path = tmp_path / "neg.hlo"
    path.write_text(
        "HloModule neg\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n"
    )
    code, out, _ = run(capsys, "run", path, "--platform", "interpreter", "--json")
    assert code == 0 and json.loads(out)["devices"] == ["interpreter:0"]


def test_too_few_devices_is_a_clear_error(capsys, tp_file, monkeypatch):
    monkeypatch.setenv("HLORT_INTERPRETER_DEVICES", "2")
    code, _, err = run(capsys, "run", tp_file, "--platform", "interpreter")
    assert code == 2
    assert "needs 4 devices (1 replica(s) x 4 partition(s)) but interpreter has 2" in err
    assert "HLORT_INTERPRETER_DEVICES=N" in err and len(err.strip().splitlines()) == 1


def test_compile_on_too_few_devices_is_the_same_clear_error(capsys, tp_file, monkeypatch):
    monkeypatch.setenv("HLORT_INTERPRETER_DEVICES", "3")
    code, _, err = run(capsys, "compile", tp_file, "--platform", "interpreter")
    assert code == 2 and "needs 4 devices" in err and "interpreter has 3" in err


def test_device_flag_is_refused_for_a_multi_device_module(capsys, tp_file):
    code, _, err = run(capsys, "run", tp_file, "--platform", "interpreter", "--device", "1")
    assert code == 2 and "--device picks one device" in err


def test_compile_dump_dir_has_the_spmd_report(capsys, tmp_path, tp_file):
    code, out, err = run(
        capsys, "compile", tp_file, "--platform", "interpreter", "--dump-dir", tmp_path / "d"
    )
    assert code == 0, err
    assert "all-reduce" in out and "f32[16,8]" in out  # w1's tile: 32 columns / 4
    report = (tmp_path / "d" / "spmd-report.txt").read_text()
    assert "4 partition(s)" in report and "all-reduce x1" in report
    assert "w1: {devices=[1,4]0,1,2,3}" in report


def test_run_jax_lowered_stablehlo_with_named_shardings(capsys, tmp_path, monkeypatch):
    """JAX's jit with NamedSharding on a 2x2 mesh (Shardy attributes): 4 devices, global arrays."""
    from pathlib import Path

    monkeypatch.setenv("HLORT_INTERPRETER_DEVICES", "4")
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    sample = Path(__file__).parents[1] / "spmd" / "samples" / "jit_sdy.mlir"
    code, out, err = run(capsys, "run", sample, "--platform", "interpreter", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["devices"]) == 4 and report["num_partitions"] == 4
    assert [o["shape"] for o in report["outputs"]] == [[8], [8, 8]]


def test_run_on_several_devices_of_a_program_without_outputs(capsys, tmp_path, monkeypatch):
    """An empty tuple result on two devices: no outputs per device, not a crash splitting them."""
    monkeypatch.setenv("HLORT_INTERPRETER_DEVICES", "2")
    path = tmp_path / "empty.hlo"
    path.write_text(
        "HloModule e, num_partitions=2\nENTRY main {\n  x = f32[2] parameter(0)\n"
        "  ROOT t = () tuple()\n}\n"
    )
    code, out, err = run(capsys, "run", path, "--platform", "interpreter", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["outputs"] == [] and report["num_partitions"] == 2
