"""Runs a GpuProgram's kernels on the host CPU, one OS thread per GPU thread: the schedules'
results checked against the reference interpreter where no GPU is.

``HostSimTarget`` is a GpuTarget for the host triple whose thread index, block index, barrier
and cross-lane exchange are calls back into Python: each block's threads run concurrently (the
kernels run without the GIL; the callbacks take it), a barrier is a ``threading.Barrier`` of the
block, and a shuffle publishes the lane's value, waits for the block, and reads the partner's.
Blocks run one after another, so shared memory is a plain global. The warp size is a parameter
(32 for CUDA, 64 for ROCm's wavefronts). Tests only: slow, but every schedule runs exactly the
IR the GPU gets, apart from the target's lowering.
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from hlort.codegen.gpu.gpu_target import I32, GpuTarget, declare
from hlort.codegen.gpu.program import (
    Copy,
    GpuProgram,
    HostBranch,
    HostFallback,
    HostLoop,
    KernelLaunch,
    LaunchId,
    LibraryCall,
)
from hlort.dtypes import from_hlo_name as by_name
from hlort_cpu.codegen.runtime_library import library_ir

_TID = ctypes.CFUNCTYPE(ctypes.c_int32)
_BARRIER = ctypes.CFUNCTYPE(None)
_SHUFFLE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)


class _Block:
    """The state of the block being run: its threads' indices, barrier and exchange slots."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.block_index = 0
        self.barrier: threading.Barrier | None = None
        self.exchange: list[int] = []
        self.failed: list[str] = []

    def tid(self) -> int:
        return self.local.tid

    def bid(self) -> int:
        return self.block_index

    def sync(self) -> None:
        try:
            self.barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            self.failed.append("barrier broken (threads of a block disagree on barriers)")

    def shuffle(self, value: int, mask: int) -> int:
        t = self.local.tid
        self.exchange[t] = value
        self.sync()
        got = self.exchange[t ^ mask]
        self.sync()
        return got


_STATE = _Block()
_CALLBACKS = (_TID(_STATE.tid), _TID(_STATE.bid), _BARRIER(_STATE.sync), _SHUFFLE(_STATE.shuffle))
_NAMES = ("hlsim_tid", "hlsim_bid", "hlsim_barrier", "hlsim_shuffle")
_ready = False


def _init_llvm() -> None:
    global _ready
    if _ready:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name, cb in zip(_NAMES, _CALLBACKS, strict=True):
        llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)
    _ready = True


class HostSimTarget(GpuTarget):
    name = "host-sim"
    kernel_calling_convention = ""  # the C convention
    binary_format = "host-ir"
    global_addrspace = 0
    shared_addrspace = 0
    constant_addrspace = 0

    def __init__(self, warp_size: int = 32):
        _init_llvm()
        self.warp_size = warp_size
        self.triple = llvm.get_process_triple()

    def thread_index(self, b):
        return b.call(declare(b.module, "hlsim_tid", I32, []), [])

    def block_index(self, b):
        return b.call(declare(b.module, "hlsim_bid", I32, []), [])

    def barrier(self, b):
        b.call(declare(b.module, "hlsim_barrier", ir.VoidType(), []), [])

    def shuffle_xor(self, b, value, lane_mask):
        fn = declare(b.module, "hlsim_shuffle", I32, [I32, I32])
        return b.call(fn, [value, ir.Constant(I32, lane_mask)])

    def compile(self, llvm_ir: str) -> bytes:
        return llvm_ir.encode()  # the runner JITs the IR itself


class HostSimRunner:
    """Loads a program compiled for HostSimTarget and runs it on NumPy arrays."""

    def __init__(self, program: GpuProgram, replica: int = 0, partition: int = 0):
        self.program = program
        self.replica, self.partition = replica, partition  # what LaunchId steps write
        self.engine = None
        self.functions = {}
        if program.kernels:
            module = llvm.parse_assembly(program.binary.decode())
            module.verify()
            machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
            self.engine = llvm.create_mcjit_compiler(module, machine)
            # compiler-rt's f16/bf16 conversions, which the host lowering calls (the GPU has
            # instructions for them)
            self.engine.add_module(llvm.parse_assembly(library_ir()))
            self.engine.finalize_object()
            for info in program.kernels:
                addr = self.engine.get_function_address(info.name)
                proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * info.num_args))
                self.functions[info.name] = proto(addr)

    def run(self, arguments: list[np.ndarray]) -> list[np.ndarray]:
        program = self.program
        storage: dict[int, np.ndarray] = {}
        for slot in program.slots:
            raw = np.zeros(slot.size + 512, np.uint8)
            start = (-raw.ctypes.data) % 256
            storage[slot.id] = raw[start : start + max(slot.size, 0)]
            if slot.kind == "constant":
                storage[slot.id][:] = np.frombuffer(slot.constant, np.uint8)
        for sid, value in zip(program.parameters, arguments, strict=True):
            data = np.ascontiguousarray(value).view(np.uint8).reshape(-1)
            storage[sid][:] = data
        for step in program.steps:
            self._step(step, storage)
        return [self._array(sid, storage) for sid in program.outputs]

    def _array(self, sid: int, storage) -> np.ndarray:
        slot = self.program.slots[sid]
        dt = by_name(slot.dtype).numpy
        return storage[sid].view(dt).reshape(slot.dims).copy()

    def _step(self, step, storage) -> None:
        if isinstance(step, KernelLaunch):
            self._launch(step, storage)
        elif isinstance(step, Copy):
            storage[step.dst][step.dst_offset : step.dst_offset + step.size] = storage[step.src][
                step.src_offset : step.src_offset + step.size
            ]
        elif isinstance(step, LibraryCall):  # the library reads its operands as the spec says
            g = step.gemm
            a, b, c = (
                storage[s].view(by_name(t).numpy)[:count]
                for s, t, count in zip(
                    step.args,
                    (g.dtype_a, g.dtype_b, g.dtype_c),
                    (g.batch * g.m * g.k, g.batch * g.k * g.n, g.batch * g.m * g.n),
                    strict=True,
                )
            )
            a = a.reshape(g.batch, *((g.k, g.m) if g.transpose_a else (g.m, g.k)))
            b = b.reshape(g.batch, *((g.n, g.k) if g.transpose_b else (g.k, g.n)))
            a = a.transpose(0, 2, 1) if g.transpose_a else a
            b = b.transpose(0, 2, 1) if g.transpose_b else b
            wide = np.complex128 if c.dtype.kind == "c" else np.float64  # as the library sums
            out = np.matmul(a.astype(wide), b.astype(wide)).astype(c.dtype)
            storage[step.args[2]][: out.nbytes] = out.reshape(-1).view(np.uint8)
        elif isinstance(step, HostLoop):
            for copy in step.init:
                self._step(copy, storage)
            while True:
                for inner in step.condition:
                    self._step(inner, storage)
                if not storage[step.predicate][0]:
                    break
                for inner in [*step.body, *step.update]:
                    self._step(inner, storage)
        elif isinstance(step, HostBranch):
            raw = storage[step.selector].tobytes()
            for inner in step.branches[step.branch_index(raw)]:
                self._step(inner, storage)
        elif isinstance(step, LaunchId):
            value = np.uint32(step.value(self.replica, self.partition))
            storage[step.dst][:] = np.frombuffer(value.tobytes(), np.uint8)
        elif isinstance(step, HostFallback):
            from hlort.interpreter.evaluator import evaluate
            from hlort.ir.module_codec import decode_module
            from hlort.plugin.base.value_flattening import flatten_value

            inputs = [self._array(s, storage) for s in step.inputs]
            ids = dict(replica_id=self.replica, partition_id=self.partition)
            leaves = flatten_value(evaluate(decode_module(step.module), inputs, **ids))
            for value, sid in zip(leaves, step.outputs, strict=True):
                slot = self.program.slots[sid]
                host = np.ascontiguousarray(np.asarray(value, by_name(slot.dtype).numpy))
                storage[sid][:] = host.reshape(-1).view(np.uint8)

    def _launch(self, step: KernelLaunch, storage) -> None:
        fn = self.functions[step.kernel]
        pointers = [storage[s].ctypes.data for s in step.args]
        threads = step.block[0]
        for block in range(step.grid[0]):
            _STATE.block_index = block
            _STATE.barrier = threading.Barrier(threads)
            _STATE.exchange = [0] * threads

            def body(t: int) -> None:
                _STATE.local.tid = t
                fn(*pointers)

            workers = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if _STATE.failed:
                raise AssertionError(f"{step.kernel}: {_STATE.failed[0]}")


def simulated_program(module) -> GpuProgram:
    """``module`` through the GPU pass pipeline (on a copy) and compiled for the host simulator
    as a GPU runtime that drives loops and branches would (``host_loops=True``)."""
    from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
    from hlort.passes.default_pipeline import run_default_pipeline

    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    return compile_gpu_program(optimized, HostSimTarget(32), host_loops=True)


def check_case_without_fallback(case, kind: str | None = None) -> GpuProgram:
    """Run a conformance case's module on the simulator (``simulated_program``): no host
    fallback, every output matching the interpreter under ``kind`` (the case's own by
    default). Returns the program for further checks."""
    import numpy as np

    from hlort.interpreter.evaluator import evaluate
    from hlort.plugin.base.value_flattening import flatten_value, unflatten
    from hlort.testing.comparison import describe_mismatch

    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    program = simulated_program(case.module)
    assert not program.fallbacks, program.fallback_summary()
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), kind or case.kind, what=f"output {k}")
        assert problem is None, problem
    return program
