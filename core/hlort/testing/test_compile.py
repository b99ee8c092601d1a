"""Compilation: the executable's description, and errors with the right codes.

A malformed program is INVALID_ARGUMENT (the verifier or the parser says so before the plugin
sees it; bad options are the plugin's to reject); an op the backend cannot run is UNIMPLEMENTED
at compile time, naming the op. Wrong execute arguments are INVALID_ARGUMENT before anything
is launched.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort.builder import Builder
from hlort.errors import ErrorCode, HlortError
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.plugin.options import CompileOptions
from hlort.shape import array
from hlort.testing.op_case import all_cases
from hlort.testing.programs import axpy, two_outputs, unknown_custom_call


def _code_of(action) -> HlortError:
    with pytest.raises(HlortError) as info:
        action()
    return info.value


def _malformed_module():
    b = Builder("malformed")
    x = b.parameter(array("f32", (3,)))
    y = b.parameter(array("f32", (4,)))
    bad = Instruction(Opcode.ADD, array("f32", (3,)), [x, y])  # operand dims disagree
    b.computation.add_instruction(bad)
    return b.build(bad)


def test_executable_describes_itself(hlort_session) -> None:
    exe = hlort_session.compile(two_outputs(4))
    assert exe.name == "two_outputs"
    assert [str(s) for s in exe.parameter_shapes] == ["f32[4]", "s32[4]"]
    assert [str(s) for s in exe.output_shapes] == ["f32[4]", "s32[4]", "f32[4]"]
    assert list(exe.addressable_devices()) == [hlort_session.device]
    x, y = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int32) - 2
    twice, same_y, same_x = hlort_session.run(exe, [x, y])
    np.testing.assert_array_equal(twice, x + x)
    np.testing.assert_array_equal(same_y, y)
    np.testing.assert_array_equal(same_x, x)


def test_fingerprint_is_stable(hlort_session) -> None:
    first, second = hlort_session.compile(axpy()), hlort_session.compile(axpy())
    try:
        fp = first.fingerprint()
    except HlortError as err:
        assert err.code is ErrorCode.UNIMPLEMENTED
        pytest.skip("Executable.fingerprint is not implemented (optional)")
    assert isinstance(fp, str) and fp
    assert fp == second.fingerprint(), "the same module and options must give one fingerprint"


def test_malformed_module_is_invalid_argument(hlort_session) -> None:
    err = _code_of(lambda: hlort_session.compile(_malformed_module()))
    assert err.code is ErrorCode.INVALID_ARGUMENT, f"got {err.code.name}: {err.message}"
    assert "add" in err.message


def test_malformed_hlo_text_is_invalid_argument(hlort_session) -> None:
    text = "HloModule m\n\nENTRY main {\n  p = f32[3] parameter(0)\n  ROOT r = f32[3] add(p, q)\n}"
    err = _code_of(lambda: hlort_session.backend.compile(text, None))
    assert err.code is ErrorCode.INVALID_ARGUMENT, f"got {err.code.name}: {err.message}"


def test_bad_compile_options_are_invalid_argument(hlort_session) -> None:
    module = axpy()
    client = hlort_session.client
    err = _code_of(lambda: client.compile(module, CompileOptions(donated_arguments=(7,))))
    assert err.code is ErrorCode.INVALID_ARGUMENT, f"donated_arguments=(7,): {err.code.name}"
    missing = max(d.id for d in client.devices()) + 100
    err = _code_of(lambda: client.compile(module, CompileOptions(device_assignment=((missing,),))))
    assert err.code is ErrorCode.INVALID_ARGUMENT, f"unknown device in assignment: {err.code.name}"
    too_many = len(client.addressable_devices()) + 1
    err = _code_of(lambda: client.compile(module, CompileOptions(num_replicas=too_many)))
    assert err.code is ErrorCode.INVALID_ARGUMENT, f"{too_many} replicas: {err.code.name}"


def _declared_unsupported_ops(session) -> list[str]:
    ops: dict[str, None] = {}
    for case in all_cases(quick=True):
        if session.profile.unsupported_reason(f"op:{case.op}"):
            ops.setdefault(case.op)
    return list(ops)


def test_unknown_custom_call_is_unimplemented(hlort_session) -> None:
    err = _code_of(lambda: hlort_session.compile(unknown_custom_call()))
    assert err.code is ErrorCode.UNIMPLEMENTED, (
        f"compiling a custom call to an unknown target must raise UNIMPLEMENTED, got "
        f"{err.code.name}: {err.message}"
    )
    assert "hlort_conformance_no_such_target" in err.message, "the error must name the target"


def test_declared_unsupported_ops_are_unimplemented(hlort_session) -> None:
    ops = _declared_unsupported_ops(hlort_session)
    if not ops:
        pytest.skip("the profile declares no op unsupported")
    cases = {c.op: c for c in reversed(all_cases(quick=True))}
    wrong = []
    for op in ops:
        try:
            hlort_session.compile(cases[op].module)
        except HlortError as err:
            if err.code is not ErrorCode.UNIMPLEMENTED or op not in err.message:
                wrong.append(f"{op}: {err.code.name}: {err.message}")
            continue
        wrong.append(
            f"{op}: compiled, though declared unsupported (and the compile of an "
            f"unsupported op must raise UNIMPLEMENTED naming it)"
        )
    assert not wrong, (
        "declared-unsupported ops must fail to compile with UNIMPLEMENTED naming "
        "the op:\n" + "\n".join(wrong)
    )


def test_wrong_execute_arguments_are_invalid_argument(hlort_session) -> None:
    exe = hlort_session.compile(axpy(4))
    good = hlort_session.put([np.float32(1), np.zeros(4, np.float32), np.zeros(4, np.float32)])
    wrong_shape = hlort_session.put([np.zeros(5, np.float32)])[0]
    wrong_type = hlort_session.put([np.zeros(4, np.int32)])[0]
    attempts = {
        "too few arguments": [good[:2]],
        "wrong dims": [[good[0], wrong_shape, good[2]]],
        "wrong element type": [[good[0], wrong_type, good[2]]],
        "two argument lists for one device": [good, good],
    }
    for what, arguments in attempts.items():
        err = _code_of(lambda arguments=arguments: exe.execute(arguments))
        assert err.code is ErrorCode.INVALID_ARGUMENT, f"{what}: got {err.code.name}"
    for buf in [*good, wrong_shape, wrong_type]:
        assert not buf.is_deleted(), "a rejected execute must not consume its arguments"
        buf.delete()


def test_cost_analysis_is_a_mapping_of_numbers(hlort_session, hlort_require) -> None:
    hlort_require("cost_analysis")
    costs = hlort_session.compile(axpy(16)).cost_analysis()
    assert costs and all(
        isinstance(k, str) and isinstance(v, (int, float)) and v >= 0 for k, v in costs.items()
    ), f"cost_analysis() gave {costs!r}"


def test_compiled_memory_stats_count_the_arguments(hlort_session, hlort_require) -> None:
    from hlort.plugin.api import CompiledMemoryStats

    hlort_require("compiled_memory_stats")
    stats = hlort_session.compile(axpy(16)).compiled_memory_stats()
    assert isinstance(stats, CompiledMemoryStats)
    assert stats.argument_size_in_bytes >= 4 + 2 * 16 * 4, f"arguments are 132 bytes: {stats}"
    assert stats.output_size_in_bytes >= 16 * 4, f"the output is 64 bytes: {stats}"
