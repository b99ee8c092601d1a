"""LLVM IR -> AMDGPU object code, through llvmlite's AMDGPU target.

AMDGPU's code generation rewrites the IR module it emits (control-flow structurization
inserts ``llvm.amdgcn.if``), so a second ``emit_object`` on the same llvmlite module aborts the
process (``LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.if``; measured with llvmlite
0.50 / LLVM 22). Every emission here therefore parses the IR text afresh in a new LLVM context
and emits that module once: :func:`compile_ir` returns the optimized IR as text, and the object
(and the assembly, when asked) come from their own parses of it.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache

from hlort.errors import Internal, InvalidArgument
from hlort_rocm.amdgpu_target import (
    CODE_MODEL,
    CODE_OBJECT_FLAG,
    RELOC,
    TRIPLE,
    GfxTarget,
    code_object_version,
)

_LOCK = threading.Lock()
_MODULE_FLAGS = re.compile(r"^!llvm\.module\.flags\s*=\s*!\{(.*)\}\s*$", re.MULTILINE)
_METADATA_ID = re.compile(r"!(\d+)\b")
_FLAT_ALLOCA = re.compile(r"^(\s*)(%\S+) = alloca (.*)$", re.MULTILINE)
_VECTOR_VARIANTS = re.compile(r'\s*"vector-function-abi-variant"="[^"]*"')


@dataclass(frozen=True)
class CompiledObject:
    """What compiling one module of kernels gives: the optimized IR and the ELF object."""

    gfx: GfxTarget
    code_object_version: int
    opt_level: int
    llvm_ir: str
    object_code: bytes


@cache
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _machine(gfx: GfxTarget, opt_level: int):
    llvm = _llvm()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=gfx.name, features="", opt=opt_level, reloc=RELOC, codemodel=CODE_MODEL
    )


@cache
def target_data_layout(gfx: GfxTarget) -> str:
    """LLVM's data layout for AMDGPU (what new modules declare, so the schedules' type sizes
    and address-space pointer widths match the back end's)."""
    with _LOCK:
        return str(_machine(gfx, 3).target_data)


def with_code_object_version(ir_text: str, version: int) -> str:
    """``ir_text`` with the module flag that selects the code object version (LLVM's default
    changes between releases; the loader and the linker care). An existing flag is kept."""
    version = code_object_version(version)
    if CODE_OBJECT_FLAG in ir_text:
        return ir_text
    ids = [int(n) for n in _METADATA_ID.findall(ir_text)]
    node = max(ids, default=-1) + 1
    flag = f'!{node} = !{{i32 1, !"{CODE_OBJECT_FLAG}", i32 {version * 100}}}'
    flags = _MODULE_FLAGS.search(ir_text)
    if flags is None:
        return f"{ir_text.rstrip()}\n\n!llvm.module.flags = !{{!{node}}}\n{flag}\n"
    listed = flags.group(1).strip()
    merged = f"!llvm.module.flags = !{{{listed + ', ' if listed else ''}!{node}}}"
    return f"{ir_text[: flags.start()]}{merged}{ir_text[flags.end() :].rstrip()}\n{flag}\n"


def with_private_allocas(ir_text: str) -> str:
    """``ir_text`` with every ``alloca`` in AMDGPU's private address space (5), cast to a flat
    pointer for its users. The shared emitter writes allocas in address space 0, which LLVM
    rejects for AMDGPU ("alloca on amdgpu must be in addrspace(5)"); after the cast, SROA and
    address-space inference turn them back into registers (validation checks the stack is 0)."""
    count = 0

    def private(match: re.Match) -> str:
        nonlocal count
        indent, name, rest = match.groups()
        if "addrspace(" in rest:
            return match.group(0)
        body, sep, metadata = rest.partition(", !")
        count += 1
        slot = f'%"hlort.private.{count}"'
        return (
            f"{indent}{slot} = alloca {body}, addrspace(5){sep}{metadata}\n"
            f"{indent}{name} = addrspacecast ptr addrspace(5) {slot} to ptr"
        )

    return _FLAT_ALLOCA.sub(private, ir_text)


def without_vector_variants(ir_text: str) -> str:
    """``ir_text`` without the ``vector-function-abi-variant`` attributes the shared emitter puts
    on outlined math (SIMD copies for CPU loop vectorizers): a GPU vectorizes across lanes, not
    within one, and LLVM's verifier rejects the variant names for AMDGPU ("invalid name for a
    VFABI variant"). The scalar function stays; its unused copies cost nothing."""
    return _VECTOR_VARIANTS.sub("", ir_text)


def _parse(ir_text: str, machine):
    """A new llvmlite module (in a context of its own) for ``ir_text``, for this machine."""
    llvm = _llvm()
    try:
        module = llvm.parse_assembly(ir_text, context=llvm.create_context())
        module.triple = TRIPLE
        module.data_layout = str(machine.target_data)
        module.verify()
    except RuntimeError as err:
        raise Internal(f"the AMDGPU kernels' LLVM IR does not verify: {err}") from None
    return module


def _optimize(module, machine, opt_level: int) -> None:
    llvm = _llvm()
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


def compile_ir(ir_text: str, gfx: GfxTarget, *, version: int, opt_level: int = 3) -> CompiledObject:
    """Optimize ``ir_text`` (kernels for ``gfx``) and emit its object, each from a fresh parse."""
    if opt_level not in (0, 1, 2, 3):
        raise InvalidArgument(f"opt_level={opt_level!r} must be 0, 1, 2 or 3")
    legal = without_vector_variants(with_private_allocas(ir_text))
    text = with_code_object_version(legal, version)
    with _LOCK:
        machine = _machine(gfx, opt_level)
        module = _parse(text, machine)
        _optimize(module, machine, opt_level)
        optimized = str(module)
        # the optimized module is printed, never emitted: the object comes from its own parse
        obj = bytes(machine.emit_object(_parse(optimized, machine)))
    return CompiledObject(gfx, version, opt_level, optimized, obj)


def emit_assembly(compiled: CompiledObject) -> str:
    """The AMDGPU assembly of a compiled module (for ``--dump-dir``), from a fresh parse."""
    with _LOCK:
        machine = _machine(compiled.gfx, compiled.opt_level)
        return str(machine.emit_assembly(_parse(compiled.llvm_ir, machine)))
