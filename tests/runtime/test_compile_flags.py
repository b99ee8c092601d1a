"""Compile options by name: per compile, HLORT_FLAGS, ``--option``; unknown names are refused."""

from __future__ import annotations

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.cli import main
from hlort.errors import ErrorCode, HlortError
from hlort.passes.default_pipeline import default_passes, pass_names
from hlort.plugin.compile_flags import parse_flag_string, parse_key_values
from hlort.plugin.options import CompileOptions
from hlort.plugin.registry import register_plugin
from hlort.runtime.compile import options_from_mapping, with_process_flags

DOT = """HloModule dot64
ENTRY e {
  a = f32[64,64] parameter(0)
  b = f32[64,64] parameter(1)
  ROOT d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""


def _code(fn) -> HlortError:
    with pytest.raises(HlortError) as err:
        fn()
    return err.value


def test_flat_names_land_in_the_compile_options():
    options = options_from_mapping(
        {
            "matmul_precision": "float32",
            "fallback": "ALLOW",
            "disable_passes": "cse, fusion",
            "dump_dir": "/tmp/d",
            "verify_passes": "true",
            "num_replicas": 1,
        }
    )
    assert options.matmul_precision == "highest"  # JAX's spelling, normalized
    assert options.fallback == "allow"
    assert options.debug.disabled_passes == ("cse", "fusion")
    assert options.debug.dump_dir == "/tmp/d" and options.debug.verify_passes is True


@pytest.mark.parametrize(
    "options, named",
    [
        ({"matmul_precison": "high"}, "matmul_precision"),  # a typo is not ignored
        ({"matmul_precision": "ultra"}, "highest"),
        ({"fallback": "never"}, "allow"),
        ({"verify_passes": "maybe"}, "true or false"),
    ],
)
def test_bad_options_are_invalid_argument_naming_the_choices(options, named):
    err = _code(lambda: hlort.compile(DOT, "interpreter", options=options))
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert named in err.message


def test_disable_passes_reaches_passes_inside_groups_and_refuses_unknown_names():
    names = pass_names(default_passes(disabled=["cse"]))
    assert "cse" not in names and "simplify.cse" not in names and "simplify.dce" in names
    names = pass_names(default_passes(disabled=["simplify.cse"]))
    assert "simplify.cse" not in names and "simplify-fused.cse" in names
    err = _code(lambda: default_passes(disabled=["csee"]))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "csee" in err.message
    assert "multi-output-fusion" in err.message  # names the known ones
    err = _code(lambda: hlort.compile(DOT, "interpreter", options={"disable_passes": "csee"}))
    assert err.code is ErrorCode.INVALID_ARGUMENT


def test_hlort_flags_parse_like_xla_flags():
    flags = parse_flag_string(
        "--hlort_matmul_precision=high --xla_disable_hlo_passes=cse,dce --noverify_passes "
        "--xla_dump_to='/tmp/a b'"
    )
    assert flags == {
        "matmul_precision": "high",
        "disable_passes": "cse,dce",
        "verify_passes": False,
        "dump_dir": "/tmp/a b",
    }
    err = _code(lambda: parse_flag_string("--matmul_precison=high"))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "--matmul_precision" in err.message
    assert _code(lambda: parse_flag_string("matmul_precision=high")).code.name == "INVALID_ARGUMENT"
    assert _code(lambda: parse_flag_string("--dump_dir")).code.name == "INVALID_ARGUMENT"


def test_hlort_flags_fill_only_what_the_compile_leaves_at_its_default(monkeypatch):
    monkeypatch.setenv("HLORT_FLAGS", "--matmul_precision=high --fallback=allow")
    merged = with_process_flags(CompileOptions(fallback="error"))
    assert merged.matmul_precision == "high"  # from the environment
    assert merged.fallback == "error"  # the compile's own wins
    monkeypatch.setenv("HLORT_FLAGS", "--bogus=1")
    err = _code(lambda: hlort.compile(DOT, "interpreter"))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "HLORT_FLAGS" in err.message


def _dot_error(options) -> float:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    out = hlort.compile(DOT, "tpusim", options=options)(a, b)
    return float(np.abs(np.asarray(out) - a.astype(np.float64) @ b).max())


def test_matmul_precision_raises_tpusim_default_precision_dots(monkeypatch):
    register_plugin(pytest.importorskip("hlort_tpusim.plugin").TpuSimPlugin())
    default = _dot_error(None)
    highest = _dot_error({"matmul_precision": "highest"})
    # DEFAULT on tpusim rounds f32 operands to bf16 (~1e-2 on sums of 64 products);
    # highest (bf16x6) is f32-accurate: the error of f32 accumulation, well under 1e-4.
    assert default > 1e-2 and highest < 1e-4, (default, highest)
    monkeypatch.setenv("HLORT_FLAGS", "--jax_default_matmul_precision=float32")
    assert _dot_error(None) < 1e-4
    exe = hlort.compile(DOT, "tpusim", options={"matmul_precision": "high"})
    assert "operand_precision={high,high}" in exe.as_text()


def _exp_sort_module(name: str):
    """A sort the cpu plugin runs on the interpreter on purpose (plugins/cpu fallback tests)."""
    b = Builder(name)
    x = b.parameter(shape.array("f32", [4, 6]))
    sub = b.sub("exp_less")
    p, q = sub.parameter(shape.array("f32", []), "p"), sub.parameter(shape.array("f32", []), "q")
    s = b.sort(x, sub.finish(sub.compare(sub.exp(p), sub.exp(q), "LT")), 1)
    return b.build(b.negate(s))


def test_the_fallback_option_overrides_hlort_fallback(monkeypatch):
    pytest.importorskip("llvmlite")
    register_plugin(pytest.importorskip("hlort_cpu.plugin").CpuPlugin())
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    err = _code(lambda: hlort.compile(_exp_sort_module("o1"), "cpu", options={"fallback": "error"}))
    assert err.code is ErrorCode.UNIMPLEMENTED and "(sort)" in err.message
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    exe = hlort.compile(_exp_sort_module("o2"), "cpu", options={"fallback": "allow"})
    assert [r.kind for r in exe.raw.fallbacks()] == ["sort"]
    with pytest.raises(HlortError):  # the override ended with that compile
        hlort.compile(_exp_sort_module("o3"), "cpu")


def test_the_cli_help_names_every_flag():
    from hlort.cli_options import FLAG_NAMES
    from hlort.plugin.compile_flags import known_flag_names

    assert list(FLAG_NAMES) == known_flag_names()


def test_cli_option_key_values(tmp_path, capsys):
    assert parse_key_values(["disable_passes=cse", "target.default_precision=highest"]) == {
        "debug": {"disabled_passes": ("cse",)},
        "target_options": {"default_precision": "highest"},
    }
    module = tmp_path / "dot.hlo"
    module.write_text(DOT)
    rc = main(["compile", str(module), "--platform", "interpreter", "--option", "precision=high"])
    err = capsys.readouterr().err
    assert rc == 2 and "INVALID_ARGUMENT" in err and "matmul_precision" in err
    rc = main(
        ["compile", str(module), "--platform", "interpreter", "--option", "matmul_precision=high"]
    )
    assert rc == 0 and "operand_precision={high,high}" in capsys.readouterr().out


def test_the_unset_fast_path_reads_the_same_variable():
    """with_process_flags skips importing compile_flags while HLORT_FLAGS is unset: the name it
    checks must be the module's own ENV_VAR."""
    import hlort.runtime.compile as runtime_compile
    from hlort.plugin import compile_flags

    assert f'os.environ.get("{compile_flags.ENV_VAR}"' in open(runtime_compile.__file__).read()
