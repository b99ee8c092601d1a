"""An AMDGPU target that keeps a kernel's object and assembly instead of linking it, so the
code-object tests can read the instructions where no ld.lld is installed."""

from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.code_object import emit_assembly


class UnlinkedTarget(AmdgpuTarget):
    def compile(self, llvm_ir: str) -> bytes:
        compiled = self.compile_object(llvm_ir)
        self.assembly = emit_assembly(compiled)
        return compiled.object_code
