"""The layout table, the ctypes structs and the C trampoline agree (no jax needed)."""

import ctypes

import pytest
from hlort_jax import abi_structs, abi_table

_trampoline = pytest.importorskip("hlort_jax._trampoline", reason="the C trampoline is not built")


def test_table_has_the_reference_function_count_and_order():
    assert len(abi_table.FUNCTIONS) == 129
    names = [n for n, _ in abi_table.FUNCTIONS]
    assert len(set(names)) == 129
    assert names[:3] == ["Error_Destroy", "Error_Message", "Error_GetCode"]
    assert names[-1] == "Device_GetAttributes"
    assert names.index("LoadedExecutable_Execute") == 55


def test_c_and_ctypes_agree_on_every_offset():
    abi_structs.check(_trampoline)  # raises naming the field on any mismatch
    assert _trampoline.addresses()["api_struct_size"] == 1072


def test_reference_struct_sizes():
    # PJRT_STRUCT_SIZE values derived by hand from the reference header.
    assert abi_structs.struct_size("Client_BufferFromHostBuffer_Args") == 120
    assert abi_structs.struct_size("LoadedExecutable_Execute_Args") == 80
    assert abi_structs.struct_size("ExecuteOptions") == 112
    assert abi_structs.struct_size("NamedValue") == 56
    assert ctypes.sizeof(abi_structs.STRUCTS["MemoryLayout"]) == 80
    assert abi_structs.struct_size("Device_MemoryStats_Args") == 185


def test_a_drifted_layout_is_reported():
    class Drifted:
        @staticmethod
        def addresses():
            return {"api_struct_size": 1072}

        @staticmethod
        def layout():
            return [("Buffer_Dimensions_Args", "dims", 32)]

    with pytest.raises(RuntimeError, match="Buffer_Dimensions_Args.dims"):
        abi_structs.check(Drifted)


def test_errors_round_trip_through_c():
    address = _trampoline.make_error(12, "PJRT_X is not implemented")
    assert _trampoline.error_parts(address) == (12, "PJRT_X is not implemented")
    args = abi_structs.STRUCTS["Error_Destroy_Args"]()
    args.struct_size, args.error = ctypes.sizeof(args), address
    api = ctypes.cast(_trampoline.api_address(), ctypes.POINTER(ctypes.c_void_p * 134)).contents
    destroy = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(api[5])
    destroy(ctypes.addressof(args))  # frees it natively, no Python involved


def test_never_fail_covers_what_jaxlib_aborts_on():
    for name in (
        "Device_GetAttributes",
        "LoadedExecutable_GetDeviceAssignment",
        "Buffer_Destroy",
        "Event_Destroy",
        "Client_Destroy",
    ):
        assert name in abi_table.NEVER_FAIL


def test_generated_header_declares_every_struct():
    header = abi_table.c_header()
    for name in abi_table.implemented_structs():
        assert f"}} hl_{name};" in header
    assert "#define HL_NUM_FUNCTIONS 129" in header
