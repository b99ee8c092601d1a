"""`hlort run` and `hlort compile`, in process: outputs, NPZ with raw bits, exit codes."""

import json
import os
import sys
import types

import ml_dtypes
import numpy as np
import pytest

from hlort import cli

ADD = """HloModule add

ENTRY main {
  x = bf16[3] parameter(0)
  y = f32[2,2] parameter(1)
  s = bf16[3] add(x, x)
  t = f32[2,2] multiply(y, y)
  ROOT r = (bf16[3], f32[2,2]) tuple(s, t)
}
"""

STABLEHLO = """module @jit_f {
  func.func public @main(%arg0: tensor<3xbf16>, %arg1: tensor<3xbf16>) -> tensor<3xbf16> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<3xbf16>
    return %0 : tensor<3xbf16>
  }
}
"""

CUSTOM = """HloModule cc

ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="not_a_real_target"
}
"""


@pytest.fixture
def add_file(tmp_path):
    path = tmp_path / "add.hlo"
    path.write_text(ADD)
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err, code_name):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"hlort: error: {code_name}: "), err
    assert "Traceback" not in err


def test_run_with_npz_bf16_raw_bits(capsys, tmp_path, add_file):
    bf = np.array([1, 2.5, -4], ml_dtypes.bfloat16)
    y = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.savez(tmp_path / "in.npz", arg0=bf.view(np.uint16), arg1=y)
    code, out, err = run(
        capsys, "run", add_file, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz"
    )
    assert code == 0, err
    assert "arg0 bf16[3], arg1 f32[2,2]" in out and "out0 bf16[3], out1 f32[2,2]" in out
    assert "compile" in out and "execute" in out and "ms" in out
    with np.load(tmp_path / "out.npz") as z:
        assert sorted(z.files) == ["out0", "out1"]
        assert z["out0"].dtype == np.uint16
        np.testing.assert_array_equal(z["out0"].view(ml_dtypes.bfloat16), bf + bf)
        np.testing.assert_array_equal(z["out1"], y * y)


def test_run_without_inputs_uses_seeded_random_inputs(capsys, add_file):
    first = run(capsys, "run", add_file)
    second = run(capsys, "run", add_file)
    assert first[0] == 0 and "random (seed 0)" in first[1]
    values = [line for line in first[1].splitlines() if line.startswith("out")]
    assert values and values == [ln for ln in second[1].splitlines() if ln.startswith("out")]


def test_run_json_and_repeat_and_profile(capsys, add_file):
    code, out, _ = run(capsys, "run", add_file, "--json", "--repeat", "3", "--profile")
    assert code == 0
    report = json.loads(out)
    assert report["platform"] == "interpreter" and report["device"] == "interpreter:0"
    assert report["format"] == "hlo" and len(report["execute_ms"]) == 3
    assert report["inputs"][0] == {"name": "arg0", "shape": [3], "dtype": "bf16"}
    assert [o["name"] for o in report["outputs"]] == ["out0", "out1"]
    phases = report["profile"]["phases_ms"]
    # compiled here, or loaded from the persistent cache when an earlier test compiled it
    assert "backend_compile" in phases or "cache_load" in phases
    assert report["profile"]["cost_analysis"]["flops"] > 0


def test_run_stablehlo_text_detected_by_content(capsys, tmp_path):
    path = tmp_path / "prog.txt"
    path.write_text(STABLEHLO)
    a = np.array([1, 2, 3], ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", arg0=a.view(np.uint16), arg1=a.view(np.uint16))
    code, out, err = run(
        capsys, "run", path, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz"
    )
    assert code == 0, err
    assert "(stablehlo)" in out
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_array_equal(z["out0"].view(ml_dtypes.bfloat16), a + a)


def test_compile_prints_hlo_and_dumps(capsys, tmp_path, add_file):
    code, out, _ = run(capsys, "compile", add_file, "--dump-dir", tmp_path / "dump")
    assert code == 0 and out.startswith("HloModule add")
    names = {p.name for p in (tmp_path / "dump").iterdir()}
    assert "add.optimized.hlo" in names and "add.interpreter.interpreted.hlo" in names


@pytest.mark.parametrize(
    "make_argv",
    [
        lambda d, f: ["run", d / "missing.hlo"],
        lambda d, f: ["run", f, "--platform", "nosuchplatform"],
        lambda d, f: ["run", f, "--device", "9"],
        lambda d, f: ["run", f, "--repeat", "0"],
        lambda d, f: ["run", f, "--inputs", d / "missing.npz"],
        lambda d, f: ["compile", d / "missing.hlo"],
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, add_file, make_argv):
    code, _, err = run(capsys, *make_argv(tmp_path, add_file))
    assert code == 2
    assert err.startswith("hlort: error: ") and len(err.strip().splitlines()) == 1


def test_malformed_text_exits_2_with_line_and_column(capsys, tmp_path):
    path = tmp_path / "bad.hlo"
    path.write_text("HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0\n}\n")
    code, _, err = run(capsys, "run", path)
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")
    assert "bad.hlo:4:" in err or "bad.hlo:5:" in err


def test_unrecognisable_text_exits_2(capsys, tmp_path):
    path = tmp_path / "prog.txt"
    path.write_text("print('hello')\n")
    code, _, err = run(capsys, "run", path)
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    "arrays",
    [
        {"arg0": np.zeros(4, np.uint16), "arg1": np.zeros((2, 2), np.float32)},  # shape
        {"arg0": np.zeros(3, np.uint16), "arg1": np.zeros((2, 2), np.float64)},  # dtype
        {"arg0": np.zeros(3, np.float32), "arg1": np.zeros((2, 2), np.float32)},  # bf16 bits
        {"arg1": np.zeros((2, 2), np.float32)},  # missing
    ],
)
def test_wrong_input_shapes_or_dtypes_exit_2(capsys, tmp_path, add_file, arrays):
    np.savez(tmp_path / "in.npz", **arrays)
    code, _, err = run(capsys, "run", add_file, "--inputs", tmp_path / "in.npz")
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")


def test_op_the_platform_lacks_exits_3(capsys, tmp_path):
    path = tmp_path / "cc.hlo"
    path.write_text(CUSTOM)
    code, _, err = run(capsys, "run", path)
    assert code == 3
    one_line_error(err, "UNIMPLEMENTED")
    assert "not_a_real_target" in err


def test_usage_errors_exit_2_with_one_line(capsys):
    for argv in ([], ["frobnicate"], ["run"], ["run", "x.hlo", "--repeat", "many"]):
        code, _, err = run(capsys, *argv)
        assert code == 2, argv
        one_line_error(err, "INVALID_ARGUMENT")


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "run", "--help")
    assert code == 0 and "--inputs" in out


def test_internal_errors_exit_1_and_debug_shows_the_traceback(capsys, add_file, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("something broke")

    monkeypatch.setattr(cli, "_load", broken)
    code, _, err = run(capsys, "run", add_file)
    assert code == 1
    one_line_error(err, "INTERNAL")
    assert "RuntimeError: something broke" in err and "--debug" in err
    code, _, err = run(capsys, "run", add_file, "--debug")
    assert code == 1 and "Traceback" in err
    code, _, err = run(capsys, "--debug", "run", add_file)
    assert code == 1 and "Traceback" in err


def fake_module(monkeypatch, name, calls, rc=0):
    module = types.ModuleType(name)
    module.main = lambda argv: calls.append(argv) or rc
    monkeypatch.setitem(sys.modules, name, module)


def test_new_plugin_and_testdata_are_wired(capsys, monkeypatch):
    calls = []
    fake_module(monkeypatch, "hlort.plugin.new_plugin", calls)
    fake_module(monkeypatch, "hlort.testdata_runner", calls, rc=0)
    assert run(capsys, "new-plugin", "tpusim", "--dest", "/tmp/x")[0] == 0
    assert (
        run(
            capsys,
            "testdata",
            "a.mlir",
            "b",
            "--platform",
            "interpreter",
            "--jobs",
            "2",
            "--report",
            "r.json",
        )[0]
        == 0
    )
    assert calls == [
        ["tpusim", "--dest", "/tmp/x"],
        ["a.mlir", "b", "--platform", "interpreter", "--jobs", "2", "--report", "r.json"],
    ]


def test_missing_optional_commands_exit_3(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "hlort.plugin.new_plugin", None)
    monkeypatch.setitem(sys.modules, "hlort.testdata_runner", None)
    for argv in (["new-plugin", "x"], ["testdata", "p"]):
        code, _, err = run(capsys, *argv)
        assert code == 3
        one_line_error(err, "UNIMPLEMENTED")


def test_conformance_runs_pytest_on_the_suite(capsys, monkeypatch):
    seen = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: seen.append(cmd) or 0)
    code, _, _ = run(
        capsys,
        "conformance",
        "--platform",
        "interpreter",
        "--report",
        "out/r",
        "--junit-xml",
        "r.xml",
        "--quick",
        "--strict",
    )
    assert code == 0
    cmd = seen[0]
    assert cmd[1:5] == ["-m", "pytest", "--pyargs", "hlort.testing"]
    assert cmd[cmd.index("--hlort-platform") + 1] == "interpreter"
    assert cmd[cmd.index("--hlort-report") + 1] == "out/r"  # the suite's JSON + Markdown
    assert cmd[cmd.index("--junitxml") + 1] == "r.xml"
    assert "--hlort-quick" in cmd and "--hlort-strict" in cmd
    assert "no:hypothesispytest" in cmd  # ~2 s of start-up the suite does not need
    assert cmd[cmd.index("-c") + 1] == os.devnull  # the cwd's pytest configuration is ignored
    assert "--noconftest" in cmd  # and so is a conftest.py above an editable install of the suite
    run(capsys, "conformance", "--platform", "interpreter")
    assert not {"--hlort-report", "--junitxml", "--hlort-quick", "--hlort-strict"} & set(seen[1])
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: 1)
    assert run(capsys, "conformance", "--platform", "interpreter")[0] == 1
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: 5)
    assert run(capsys, "conformance", "--platform", "interpreter")[0] == 3
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: 4)  # used to say "not available"
    code, _, err = run(capsys, "conformance", "--platform", "interpreter")
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")
    assert "could not start" in err
    code, _, err = run(capsys, "conformance", "--platform", "nosuch")
    assert code == 2 and "NOT_FOUND" in err


SCALAR = """HloModule sc

ENTRY main {
  x = bf16[] parameter(0)
  n = s32[] parameter(1)
  ROOT r = (bf16[], s32[]) tuple(x, n)
}
"""


def test_scalar_parameters_and_results(capsys, tmp_path):
    path = tmp_path / "sc.hlo"
    path.write_text(SCALAR)
    code, out, err = run(capsys, "run", path)  # random scalars used to come out as shape (1,)
    assert code == 0, err
    x = np.array(2.5, ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", arg0=x.view(np.uint16), arg1=np.array(7, np.int32))
    code, out, err = run(
        capsys, "run", path, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz"
    )
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as z:
        assert z["out0"].shape == () and z["out0"].view(ml_dtypes.bfloat16) == x
        assert z["out1"].shape == () and z["out1"] == 7


def test_an_unwritable_output_exits_2_before_any_work(capsys, tmp_path, add_file, monkeypatch):
    monkeypatch.setattr(cli, "_load", lambda path: pytest.fail("loaded before checking --output"))
    code, _, err = run(capsys, "run", add_file, "--output", tmp_path / "no" / "out.npz")
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")
    assert "does not exist" in err


def test_conformance_with_a_profile_that_matches_nothing_exits_2(capsys, monkeypatch):
    from hlort.plugin.conformance_profile import ConformanceProfile
    from hlort.plugin.interpreter_backend import InterpreterPlugin

    typo = ConformanceProfile(unsupported={"op:dott": "no dot"})
    monkeypatch.setattr(InterpreterPlugin, "conformance_profile", lambda self: typo)
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: pytest.fail("the suite started"))
    code, _, err = run(capsys, "conformance", "--platform", "interpreter")
    assert code == 2
    one_line_error(err, "INVALID_ARGUMENT")
    assert "op:dott" in err and "conformance_profile()" in err


def test_a_closed_pipe_is_not_an_internal_error(capsys, add_file, monkeypatch):
    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "_print_run", closed)  # `hlort run ... | head -1`
    code, _, err = run(capsys, "run", add_file)
    assert code == cli.EXIT_BROKEN_PIPE == 141
    assert err == ""


def test_a_closed_pipe_in_a_real_process_exits_quietly(tmp_path, add_file):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hlort.cli",
            "run",
            str(add_file),
            "--platform",
            "interpreter",
            "--repeat",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    proc.stdout.close()  # the reader is gone before hlort prints anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "INTERNAL" not in err and "Exception ignored" not in err


def test_a_dump_dir_that_is_a_file_exits_2(capsys, tmp_path, add_file):
    (tmp_path / "taken").write_text("")
    code, _, err = run(capsys, "compile", add_file, "--dump-dir", tmp_path / "taken")
    assert code == 2  # was INTERNAL: FileExistsError, after the passes had run
    one_line_error(err, "INVALID_ARGUMENT")
    assert "not a directory" in err


def test_conformance_without_pytest_exits_3(capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pytest" else find_spec(name, *a),
    )
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: pytest.fail("pytest started"))
    code, _, err = run(capsys, "conformance", "--platform", "interpreter")
    assert code == 3
    one_line_error(err, "UNIMPLEMENTED")
    assert "pytest" in err
