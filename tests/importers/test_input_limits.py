"""Hostile program text: deep nesting, huge result counts and huge constants are refused first.

Each case is a few bytes that used to recurse without bound, build billions of names or allocate
gigabytes; now each is a clean INVALID_ARGUMENT naming the place (line:col) and the limit, and the
limits are configurable (hlort.limits).
"""

import resource
import time

import numpy as np
import pytest

import hlort
from hlort import cli
from hlort.errors import ErrorCode, HlortError


def _nested_tuple_hlo(depth: int) -> str:
    shape = "(" * depth + "f32[]" + ")" * depth
    return f"HloModule t\nENTRY main {{\n  ROOT p0 = {shape} parameter(0)\n}}\n"


def _nested_tuple_mlir(depth: int) -> str:
    ty = "tuple<" * depth + "tensor<f32>" + ">" * depth
    return f"func.func @main(%arg0: {ty}) -> {ty} {{\n  return %arg0 : {ty}\n}}"


def _refused(text: str, platform: str = "interpreter") -> HlortError:
    with pytest.raises(HlortError) as info:
        hlort.compile(text, platform)
    return info.value


@pytest.mark.parametrize("depth", [500, 5000])
def test_a_deep_hlo_tuple_shape_is_invalid_argument_with_line_and_column(depth):
    err = _refused(_nested_tuple_hlo(depth))
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert "<text>:3:" in str(err) and "HLORT_MAX_NESTING" in str(err)


@pytest.mark.parametrize("depth", [2000, 20000])
def test_deep_stablehlo_types_are_invalid_argument_with_line_and_column(depth):
    err = _refused(_nested_tuple_mlir(depth))
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert "<text>:1:" in str(err) and "nested more than 100 deep" in str(err)


def test_deep_regions_and_attribute_lists_are_refused_too():
    regions = "{" * 300 + "}" * 300
    attrs = "[" * 300 + "]" * 300
    for text in (f"func.func @main() {regions}", f"func.func @main() attributes {{a = {attrs}}}"):
        assert _refused(text).code is ErrorCode.INVALID_ARGUMENT


def test_nesting_up_to_the_limit_still_compiles_and_runs():
    hlo = hlort.compile(_nested_tuple_hlo(100), "cpu")
    assert hlo(np.float32(3))[0] == 3
    mlir = hlort.compile(_nested_tuple_mlir(98), "interpreter")
    assert len(mlir.input_shapes) == 1


def test_the_nesting_limit_is_configurable(monkeypatch):
    monkeypatch.setenv("HLORT_MAX_NESTING", "10")
    assert _refused(_nested_tuple_hlo(11)).code is ErrorCode.INVALID_ARGUMENT
    hlort.compile(_nested_tuple_hlo(9), "interpreter")
    monkeypatch.setenv("HLORT_MAX_NESTING", "many")
    assert "HLORT_MAX_NESTING" in str(_refused(_nested_tuple_hlo(1)))


@pytest.mark.parametrize(
    "suffix,text", [(".hlo", _nested_tuple_hlo(600)), (".mlir", _nested_tuple_mlir(3000))]
)
def test_the_cli_exits_2_on_deep_nesting(capsys, tmp_path, suffix, text):
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)
    code = cli.main(["run", str(path), "--platform", "interpreter"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"deep{suffix}:" in err and "INVALID_ARGUMENT" in err


def _result_count_program(count: int) -> str:
    return (
        f"func.func @main() -> tensor<f32> {{\n  %0:{count} = stablehlo.constant dense<1.0> : "
        "tensor<f32>\n  return %0#0 : tensor<f32>\n}"
    )


@pytest.mark.parametrize("count", [2**62, 10**30, 70000, 0])
def test_a_huge_result_count_is_refused_before_any_name_is_built(count):
    start = time.perf_counter()
    err = _refused(_result_count_program(count))
    assert time.perf_counter() - start < 2
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert "<text>:2:" in str(err) and "result count" in str(err)


def test_a_plausible_result_count_is_still_checked_against_the_types():
    err = _refused(_result_count_program(3))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "one result" in str(err)


def _splat_program(count: int) -> str:
    return (
        f"func.func @main() -> tensor<{count}xi32> {{\n  %0 = stablehlo.constant dense<1> : "
        f"tensor<{count}xi32>\n  return %0 : tensor<{count}xi32>\n}}"
    )


@pytest.mark.parametrize("count", [2**40, 2**62])
def test_a_splat_claiming_terabytes_is_refused_by_size(count):
    err = _refused(_splat_program(count))
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert "HLORT_MAX_CONSTANT_BYTES" in str(err) and f"{count * 4:,} bytes" in str(err)


def test_a_large_splat_stays_one_value_through_the_importer():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    exe = hlort.compile(_splat_program(2**28), "interpreter")  # 1 GiB if it were materialized
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024, f"compiling grew the process by {grown_kib} KiB"
    assert "broadcast" in exe.as_text()


def test_a_small_splat_is_exact():
    exe = hlort.compile(_splat_program(5000), "cpu")
    np.testing.assert_array_equal(exe(), np.ones(5000, np.int32))


def test_the_constant_size_limit_is_configurable_and_covers_hlo_text(monkeypatch):
    monkeypatch.setenv("HLORT_MAX_CONSTANT_BYTES", "4096")
    assert _refused(_splat_program(2048)).code is ErrorCode.INVALID_ARGUMENT
    hlo = "HloModule m\nENTRY e {\n  ROOT c = f32[2048] constant({...})\n}"
    err = _refused(hlo)
    assert err.code is ErrorCode.INVALID_ARGUMENT and "<text>:3:" in str(err)
    big = "HloModule m\nENTRY e {\n  ROOT c = f32[1099511627776] constant({...})\n}"
    monkeypatch.delenv("HLORT_MAX_CONSTANT_BYTES")
    assert "4,398,046,511,104 bytes" in str(_refused(big))


def test_both_parsers_and_the_limits_helper_refuse_a_large_constant_alike(monkeypatch):
    from hlort import limits

    monkeypatch.setenv("HLORT_MAX_CONSTANT_BYTES", "4096")
    with pytest.raises(HlortError) as helper:
        limits.check_constant_size(8192, "constant of shape f32[2048]")
    hlo = _refused("HloModule m\nENTRY e {\n  ROOT c = f32[2048] constant({...})\n}")
    mlir = _refused(_splat_program(2048))
    for err in (helper.value, hlo, mlir):
        assert err.code is ErrorCode.INVALID_ARGUMENT
        assert "8,192 bytes, over the 4,096-byte limit" in str(err)
