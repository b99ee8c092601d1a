"""RocmExecutable: the shared GpuExecutable, plus the AMDGPU files ``--dump-dir`` writes.

Beside the kernels' LLVM IR and the linked code object (``NAME.hsaco``) the GPU runtime dumps,
it writes the unlinked AMDGPU object (``NAME.o``) and its assembly (``NAME.s``), each emitted
again from a fresh parse of the program's IR (a module is never emitted twice).
"""

from __future__ import annotations

from collections.abc import Mapping

from hlort.plugin.base.gpu_executable import GpuExecutable
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.code_object import emit_assembly
from hlort_rocm.compiler import rocm_target_options


class RocmExecutable(GpuExecutable):
    def artifacts(self) -> Mapping[str, str | bytes]:
        files = dict(super().artifacts())
        program = self.program
        if program.kernels:
            opts = rocm_target_options(dict(self.options.target_options))
            target = AmdgpuTarget(
                program.target, code_object=opts.code_object_version, opt_level=opts.opt_level
            )
            compiled = target.compile_object(program.llvm_ir)  # what compile() linked
            files[f"{self.name}.o"] = compiled.object_code
            files[f"{self.name}.s"] = emit_assembly(compiled)
        return files
