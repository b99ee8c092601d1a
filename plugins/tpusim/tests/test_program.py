"""Programs are data: text form, byte round trip, and the verifier's checks."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import shape
from hlort.builder import Builder
from hlort.errors import HlortError
from hlort.ir import DotDimensionNumbers
from hlort_tpusim.compiler import compile_module
from hlort_tpusim.isa import Instr
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.program import Kernel, Program, VmemDecl
from hlort_tpusim.verifier import verify_program


def _matmul_module(m=300, k=260, n=200):
    b = Builder("mm")
    x = b.parameter(shape.array("f32", [m, k]))
    y = b.parameter(shape.array("f32", [k, n]))
    return b.build(b.tanh(b.dot_general(x, y, DotDimensionNumbers((1,), (0,)))))


def test_text_shows_tiles_dma_and_matrix_unit():
    program, _ = compile_module(_matmul_module(), MachineConfig())
    text = program.to_text()
    for word in (
        "dma.in",
        "mxu.push",
        "mxu.matmul",
        "mxu.pop",
        "dma.out",
        "wait",
        "vloop",
        "v.tanh.f32",
        "hbm.alloc",
        "hbm.free",
        "vmem lhs[2]",
    ):
        assert word in text, word
    verify_program(program, MachineConfig())


def test_bytes_round_trip_gives_the_same_program():
    program, _ = compile_module(_matmul_module(), MachineConfig())
    again = Program.from_bytes(program.to_bytes())
    assert again.to_text() == program.to_text()
    assert again.to_bytes() == program.to_bytes()


def test_constants_survive_serialization():
    b = Builder("c")
    x = b.parameter(shape.array("f32", [3]))
    module = b.build(b.add(x, b.constant(np.array([1.0, 2.0, 3.0], np.float32))))
    program, _ = compile_module(module, MachineConfig())
    again = Program.from_bytes(program.to_bytes())
    (value,) = again.constants.values()
    np.testing.assert_array_equal(value, [1.0, 2.0, 3.0])


def _kernel_program(vmem, body):
    program = Program("bad")
    program.add_buffer(shape.array("f32", [8]), "arg", index=0)
    program.params = [0]
    program.body = [Kernel("k", "test", vmem, body)]
    return program


def test_verifier_rejects_vmem_outside_on_chip_memory():
    cfg = MachineConfig(vmem_bytes=1024)
    program = _kernel_program([VmemDecl("a", "f32", (512,), 1, 0)], [])
    with pytest.raises(HlortError, match="outside"):
        verify_program(program, cfg)


def test_verifier_rejects_overlapping_vmem():
    program = _kernel_program(
        [VmemDecl("a", "f32", (64,), 1, 0), VmemDecl("b", "f32", (64,), 1, 128)], []
    )
    with pytest.raises(HlortError, match="overlap"):
        verify_program(program, MachineConfig())


def test_verifier_rejects_registers_beyond_the_machine_and_carried_values():
    decl = [VmemDecl("a", "f32", (1024,), 2, 0)]
    too_many = Instr(
        "vloop",
        {"count": 1, "space": None, "index": []},
        body=[Instr("vld", {"dst": "r40", "src": "a", "slot": 0})],
    )
    with pytest.raises(HlortError, match="register"):
        verify_program(_kernel_program(decl, [too_many]), MachineConfig())
    carried = Instr(
        "vloop",
        {"count": 1, "space": None, "index": []},
        body=[Instr("vst", {"dst": "a", "slot": 0, "src": "r1"})],
    )
    with pytest.raises(HlortError, match="before it is written"):
        verify_program(_kernel_program(decl, [carried]), MachineConfig())


def test_verifier_rejects_a_slot_beyond_the_buffer():
    decl = [VmemDecl("a", "f32", (8,), 1, 0)]
    bad = Instr(
        "dma.in",
        {
            "dst": "a",
            "slot": 1,
            "src": 0,
            "access": {"kind": "flat", "tile": 8, "index": 0},
            "sem": 0,
        },
    )
    with pytest.raises(HlortError, match="slot"):
        verify_program(_kernel_program(decl, [bad]), MachineConfig())
