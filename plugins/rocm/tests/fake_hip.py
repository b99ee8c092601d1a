"""A stand-in for hip-python's ``hip.hip`` module with its calling convention, for tests.

Every function returns a tuple whose first item is a ``hipError_t`` (an IntEnum) and whose others
are the C function's out-values, as hip-python's do; device memory is host bytes behind integer
addresses (``hipMalloc`` returns an object with ``__int__``, like hip-python's DeviceArray).
Kernels do not run: a launch is recorded. No AMD GPU exists where hlort is tested, so this is how
the HIP driver's use of the API is exercised.
"""

from __future__ import annotations

import enum

import numpy as np


class hipError_t(enum.IntEnum):  # noqa: N801 - hip-python's name
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorOutOfMemory = 2
    hipErrorNoDevice = 100
    hipErrorInvalidDevice = 101
    hipErrorInvalidImage = 200
    hipErrorNotFound = 500
    hipErrorNotReady = 600


hipStreamNonBlocking = 1
hipEventDefault = 0
hipEventDisableTiming = 2
OK = hipError_t.hipSuccess


class DeviceArray:
    def __init__(self, address: int):
        self.address = address

    def __int__(self) -> int:
        return self.address


class Props:
    def __init__(self, ordinal: int):
        self.name = b"AMD Instinct MI300X"
        self.gcnArchName = b"gfx942:sramecc+:xnack-\0\0"
        self.totalGlobalMem = 1 << 20
        self.multiProcessorCount = 304
        self.warpSize = 64
        self.maxThreadsPerBlock = 1024
        self.sharedMemPerBlock = 64 << 10
        self.memoryClockRate = 1_300_000  # kHz
        self.memoryBusWidth = 8192
        self.pciDomainID, self.pciBusID, self.pciDeviceID = 0, 0x1B + ordinal, 0


class FakeHip:
    """One process's fake HIP: ``devices`` GPUs of ``memory`` bytes each."""

    def __init__(self, devices: int = 1, memory: int = 1 << 20):
        self.hipError_t = hipError_t
        self.hipStreamNonBlocking = hipStreamNonBlocking
        self.hipEventDefault = hipEventDefault
        self.hipEventDisableTiming = hipEventDisableTiming
        self.devices, self.memory = devices, memory
        self.current = 0
        self.blocks: dict[int, bytearray] = {}
        self.owner: dict[int, int] = {}
        self.next_address = 0x7F00_0000_0000
        self.calls: list[tuple] = []
        self.launches: list[tuple] = []
        self.modules: dict[int, bytes] = {}
        self.pending_queries = 0  # event queries that answer NotReady before Success

    def _log(self, name, *args):
        self.calls.append((name, self.current, *args))

    # devices
    def hipRuntimeGetVersion(self):
        return OK, 60_200_000 + 41_134

    def hipDriverGetVersion(self):
        return OK, 60_200_000

    def hipGetDeviceCount(self):
        return (OK, self.devices) if self.devices else (hipError_t.hipErrorNoDevice, 0)

    def hipSetDevice(self, ordinal):
        if not 0 <= ordinal < self.devices:
            return (hipError_t.hipErrorInvalidDevice,)
        self.current = ordinal
        return (OK,)

    def hipGetDeviceProperties(self, ordinal):
        return OK, Props(ordinal)

    def hipDeviceCanAccessPeer(self, ordinal, peer):
        return OK, 1

    def hipDeviceEnablePeerAccess(self, peer, flags):
        return (OK,)

    # memory
    def _used(self, ordinal):
        return sum(len(b) for a, b in self.blocks.items() if self.owner[a] == ordinal)

    def hipMalloc(self, size):
        self._log("hipMalloc", size)
        if self._used(self.current) + size > self.memory:
            return hipError_t.hipErrorOutOfMemory, None
        address = self.next_address
        self.next_address += -(-max(size, 1) // 256) * 256 + 256
        self.blocks[address], self.owner[address] = bytearray(size), self.current
        return OK, DeviceArray(address)

    def hipFree(self, pointer):
        self._log("hipFree", int(pointer))
        if self.blocks.pop(int(pointer), None) is None:
            return (hipError_t.hipErrorInvalidValue,)
        return (OK,)

    def hipMemGetInfo(self):
        return OK, self.memory - self._used(self.current), self.memory

    def _view(self, address: int, nbytes: int) -> memoryview:
        for base, block in self.blocks.items():
            if base <= address and address + nbytes <= base + len(block):
                return memoryview(block)[address - base : address - base + nbytes]
        raise AssertionError(f"no device block holds {nbytes} bytes at {address:#x}")

    # streams and events
    def hipStreamCreateWithFlags(self, flags):
        assert flags == hipStreamNonBlocking
        return OK, ("stream", self.current)

    def hipStreamDestroy(self, stream):
        return (OK,)

    def hipStreamSynchronize(self, stream):
        assert stream[1] == self.current, "a stream is synchronized on its own device"
        return (OK,)

    def hipStreamWaitEvent(self, stream, event, flags):
        return (OK,)

    def hipEventCreateWithFlags(self, flags):
        return OK, ("event", self.current, flags)

    def hipEventDestroy(self, event):
        return (OK,)

    def hipEventRecord(self, event, stream):
        assert stream[1] == self.current, "an event is recorded on its stream's device"
        return (OK,)

    def hipEventQuery(self, event):
        if self.pending_queries:
            self.pending_queries -= 1
            return (hipError_t.hipErrorNotReady,)
        return (OK,)

    def hipEventSynchronize(self, event):
        return (OK,)

    def hipEventElapsedTime(self, start, stop):
        return OK, 1.5

    # copies (work completes at once; stream order is trivially kept)
    def hipMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self._view(int(dst), nbytes)[:] = memoryview(np.ascontiguousarray(src)).cast("B")
        return (OK,)

    def hipMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        dst.reshape(-1).view(np.uint8)[:] = np.frombuffer(self._view(int(src), nbytes), np.uint8)
        return (OK,)

    def hipMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self._view(int(dst), nbytes)[:] = bytes(self._view(int(src), nbytes))
        return (OK,)

    def hipMemcpyPeerAsync(self, dst, dst_device, src, src_device, nbytes, stream):
        return self.hipMemcpyDtoDAsync(dst, src, nbytes, stream)

    def hipMemsetD8Async(self, dst, value, nbytes, stream):
        self._view(int(dst), nbytes)[:] = bytes([value]) * nbytes
        return (OK,)

    # code
    def hipModuleLoadData(self, image):
        if not bytes(image).startswith(b"\x7fELF"):
            return hipError_t.hipErrorInvalidImage, None
        handle = len(self.modules) + 1
        self.modules[handle] = bytes(image)
        return OK, ("module", handle)

    def hipModuleUnload(self, module):
        return (OK,)

    def hipModuleGetFunction(self, module, name):
        assert isinstance(name, bytes)
        if name not in self.modules[module[1]]:  # the symbol's name is in the ELF's string table
            return hipError_t.hipErrorNotFound, None
        return OK, ("function", module[1], name.decode())

    def hipModuleLaunchKernel(
        self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra
    ):
        assert params is None and isinstance(extra, tuple)
        self.launches.append((function[2], (gx, gy, gz), (bx, by, bz), shared, extra))
        return (OK,)
