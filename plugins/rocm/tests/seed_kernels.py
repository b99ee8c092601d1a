"""Hand-written AMDGPU kernels in the kernel ABI (one global pointer per argument), for the
tests of emission, linking and validation that must not depend on the kernel schedules."""

ADD_F32 = """
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()

define amdgpu_kernel void @add_f32(ptr addrspace(1) %a, ptr addrspace(1) %b,
                                   ptr addrspace(1) %out) "amdgpu-flat-work-group-size"="1,256" {
entry:
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %g = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %g, 256
  %i32 = add i32 %base, %t
  %i = zext i32 %i32 to i64
  %inside = icmp ult i64 %i, 1000
  br i1 %inside, label %body, label %done
body:
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %i
  %po = getelementptr float, ptr addrspace(1) %out, i64 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %s = fadd float %x, %y
  store float %s, ptr addrspace(1) %po
  br label %done
done:
  ret void
}
"""

# a private array indexed at run time: LLVM must keep it on the stack (private segment)
STACK_USER = """
declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @uses_stack(ptr addrspace(1) %out) {
entry:
  %buf = alloca [64 x i32], align 4, addrspace(5)
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %slot = getelementptr [64 x i32], ptr addrspace(5) %buf, i32 0, i32 %t
  store volatile i32 %t, ptr addrspace(5) %slot
  %back = and i32 %t, 7
  %read = getelementptr [64 x i32], ptr addrspace(5) %buf, i32 0, i32 %back
  %v = load volatile i32, ptr addrspace(5) %read
  store i32 %v, ptr addrspace(1) %out
  ret void
}
"""
