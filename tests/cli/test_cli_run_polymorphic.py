"""`hlort run` of a shape-polymorphic program: refined to the shapes of --inputs."""

import json
from pathlib import Path

import numpy as np

from hlort import cli

PROGRAM = Path(__file__).resolve().parents[1] / "polymorphic" / "programs" / "mlp_batch"


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_refines_to_the_shapes_of_the_inputs(capsys, tmp_path):
    for b in (1, 64):
        out_file = tmp_path / f"out{b}.npz"
        code, out, err = _run(
            capsys,
            "run",
            PROGRAM / "module.mlir",
            "--inputs",
            PROGRAM / f"inputs_b{b}.npz",
            "--output",
            out_file,
            "--json",
        )
        assert code == 0, err
        report = json.loads(out)
        assert report["inputs"][0]["shape"] == [b, 12]
        assert report["outputs"][0]["shape"] == [b, 5]
        with np.load(out_file) as got, np.load(PROGRAM / f"expected_b{b}.npz") as want:
            np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(got["out1"], want["out1"])


def test_run_without_inputs_uses_a_sample_size(capsys):
    code, out, err = _run(capsys, "run", PROGRAM / "module.mlir", "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"][0]["shape"] == [3, 12]


def test_inputs_of_a_non_conforming_shape_are_a_usage_error(capsys, tmp_path):
    with np.load(PROGRAM / "inputs_b7.npz") as z:
        args = {k: z[k] for k in z.files}
    args["arg1"] = np.zeros((11, 32), np.float32)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **args)
    code, _, err = _run(capsys, "run", PROGRAM / "module.mlir", "--inputs", bad)
    assert code == 2
    assert "does not conform to tensor<12x32xf32>" in err
