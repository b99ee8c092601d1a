"""The tpusim client: chips, synchronous HBM placement of new buffers, program deserialization."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from hlort.errors import DataLoss, InvalidArgument
from hlort.plugin.api import Buffer, Device, MemorySpace
from hlort.plugin.base import SimpleBuffer, SimpleClient, unframe_executable
from hlort.plugin.base.host_buffer import host_array_shape
from hlort.plugin.options import CompileOptions, HostBufferSemantics
from hlort_tpusim.buffer import retag
from hlort_tpusim.device import TpuSimDevice
from hlort_tpusim.executable import TpuSimExecutable, program_json
from hlort_tpusim.machine_config import MachineConfig

_READ_LATER = HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES


class TpuSimClient(SimpleClient):
    """Options: any :class:`MachineConfig` field by name (``num_chips``, ``hbm_bytes``...), and
    ``bulk_simulation`` (default True): compute whole matmul kernels in one NumPy call and replay
    their instructions for timing; False executes every tile instruction on its data."""

    executable_class = TpuSimExecutable

    def __init__(self, plugin=None, options: Mapping[str, Any] | None = None, **kw):
        self.config = MachineConfig.from_options(options)
        self.bulk_simulation = bool((options or {}).get("bulk_simulation", True))
        super().__init__(plugin, options, **kw)

    def create_devices(self) -> list[TpuSimDevice]:
        return [TpuSimDevice(self, chip, self.config) for chip in range(self.config.num_chips)]

    @property
    def platform_version(self) -> str:
        from hlort_tpusim.version import __version__

        return f"tpusim {__version__}"

    def buffer_from_host(
        self,
        array: np.ndarray,
        device: Device,
        semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        *,
        memory_space: MemorySpace | None = None,
    ) -> Buffer:
        """HBM is placed now (RESOURCE_EXHAUSTED here), the host-link DMA runs on the queue.

        Device memory is never host memory, so the zero-copy semantics fall back to a copy.
        """
        target = self.own_device(device)
        if memory_space is not None and memory_space not in target.memory_spaces():
            raise InvalidArgument(
                f"memory space {memory_space!r} is not addressable by tpusim:{target.id}"
            )
        if not isinstance(semantics, HostBufferSemantics):
            raise InvalidArgument(
                f"host buffer semantics must be a HostBufferSemantics, got {semantics!r}"
            )
        array, shape = host_array_shape(array)
        source = array if semantics is _READ_LATER else np.array(array, copy=True, order="C")
        alloc = target.hbm.allocate(shape, "host transfer")

        def transfer():
            try:
                target.copy_in(alloc, np.ascontiguousarray(source))
            except BaseException:
                target.hbm.free(alloc)
                raise
            return alloc

        try:
            value = target.queue.enqueue(
                transfer, f"host-to-device transfer of {shape} to tpusim:{target.id}"
            )
        except BaseException:
            target.hbm.free(alloc)
            raise
        return retag(SimpleBuffer(target, shape, value))

    def deserialize_executable(self, data: bytes, options: CompileOptions | None = None):
        header, payload = unframe_executable(data, platform=self.platform_name)
        if options is None:
            options = CompileOptions.from_dict(header.metadata.get("compile_options", {}))
        module = TpuSimExecutable.module_from_payload(payload, header)
        stored = program_json(payload)
        # The program is re-derived from the HLO, never run as stored: a blob is untrusted input
        # and its checksum only catches accidents. A stored program that differs is refused.
        exe = TpuSimExecutable(self, module, options, self.resolve_placements(options))
        if not same_program(exe.program.to_json(), stored):
            raise DataLoss(
                f"serialized tpusim executable {header.name!r}: its device program is "
                "not the one its HLO compiles to (edited or from another tpusim); "
                "serialize it again from a fresh compile"
            )
        exe._fingerprint = header.fingerprint
        return exe


def same_program(derived: Any, stored: Any) -> bool:
    """Whether two program documents match, notes aside. Compared as canonical JSON text, not
    with ``==`` on floats: NaN must equal itself and -0.0 must differ from 0.0."""

    def canonical(doc: Any) -> str:
        return json.dumps(without_descriptions(doc), sort_keys=True)

    return canonical(derived) == canonical(stored)


def without_descriptions(doc: Any) -> Any:
    """The program minus its ``hlo`` notes (text for people, spelled with or without layouts)."""
    if isinstance(doc, dict):
        return {k: without_descriptions(v) for k, v in doc.items() if k != "hlo"}
    if isinstance(doc, list):
        return [without_descriptions(v) for v in doc]
    return doc
