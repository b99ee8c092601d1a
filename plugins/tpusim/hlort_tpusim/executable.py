"""The tpusim executable: compile to a verified program once, simulate it per launch.

Serialized form (inside the core's framing): JSON with the HLO text of the optimized module and
the device program. Deserializing compiles the program again from the HLO (the lowering only, no
passes) and refuses a blob whose stored program differs: the program that runs is always the
one the HLO compiles to, whatever the blob says. ``execution_profile()`` returns the profile of
the latest launch (cycles, modelled time, utilization, HBM bytes, per-class breakdown);
``hlort run --profile`` prints it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hlort.errors import DataLoss
from hlort.plugin.base import LaunchContext, SimpleExecutable
from hlort.plugin.base.cost_estimate import estimate_cost
from hlort.plugin.base.hlo_text import parse_printed_hlo, print_hlo
from hlort.plugin.capabilities import CompiledMemoryStats
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS, ExecuteOptions
from hlort_tpusim.buffer import retag
from hlort_tpusim.compiler import compile_module
from hlort_tpusim.compiler.default_precision import OPTION, apply_default_precision
from hlort_tpusim.program import Program
from hlort_tpusim.simulator import Simulator
from hlort_tpusim.verifier import verify_program

if TYPE_CHECKING:
    from hlort_tpusim.device import TpuSimDevice
    from hlort_tpusim.profile import Profile


class TpuSimExecutable(SimpleExecutable):
    def __init__(self, client, module, options, placements, program: Program | None = None):
        self._preloaded = program
        self._last_profile: Profile | None = None
        self._chip_profiles: dict[int, Profile] = {}  # each chip's latest launch
        super().__init__(client, module, options, placements)

    @property
    def config(self):
        return self.client.config

    def compile(self) -> None:
        if self._preloaded is not None:
            self.program, self.hlo_modules = self._preloaded, {}
        else:
            apply_default_precision(self.module, self.options.target_option(OPTION))
            self.program, self.hlo_modules = compile_module(self.module, self.config)
        verify_program(self.program, self.config)

    def launch(self, device: TpuSimDevice, arguments: list, ctx: LaunchContext) -> Sequence:
        sim = Simulator(
            self.config,
            device.hbm,
            device.id,
            ctx.replica,
            ctx.partition,
            modules=self.hlo_modules,
            bulk=self.client.bulk_simulation,
            launch=ctx,
        )
        outputs, profile = sim.run(self.program, list(arguments))
        self._last_profile = profile
        self._chip_profiles[device.id] = profile
        device.record_execution(profile)
        return outputs

    def execute(self, arguments, options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS):
        results = super().execute(arguments, options)
        return [[retag(b) for b in per_device] for per_device in results]

    # -- reports --------------------------------------------------------------------------------
    def execution_profile(self) -> dict[str, Any]:
        """The latest launch's profile as a dict (empty before the first launch). An executable
        on several chips adds ``per_chip``: each chip's latest cycles, time and collectives."""
        if self._last_profile is None:
            return {}
        out = self._last_profile.to_dict()
        if len(self.placements) > 1:
            out["per_chip"] = {
                chip: {
                    "cycles": p.cycles,
                    "time_us": round(p.seconds * 1e6, 3),
                    "collectives": list(p.collectives),
                }
                for chip, p in sorted(self._chip_profiles.items())
            }
        return out

    @property
    def last_profile(self) -> Profile | None:
        return self._last_profile

    def cost_analysis(self) -> Mapping[str, float]:
        return estimate_cost(self.module)

    def compiled_memory_stats(self) -> CompiledMemoryStats:
        temps = sum(d.nbytes for d in self.program.buffers.values() if d.kind in ("temp", "const"))
        return CompiledMemoryStats(
            argument_size_in_bytes=sum(s.nbytes for s in self.parameter_shapes),
            output_size_in_bytes=sum(s.nbytes for s in self.output_shapes),
            temp_size_in_bytes=temps,
            generated_code_size_in_bytes=len(self.program.to_bytes()),
        )

    def artifacts(self) -> Mapping[str, str | bytes]:
        return {"program.txt": self.program.to_text(), "program.json": self.program.to_bytes()}

    # -- serialization ------------------------------------------------------------------------
    def serialize_payload(self) -> bytes:
        doc = {"hlo": print_hlo(self.module), "program": self.program.to_json()}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def module_from_payload(cls, payload: bytes, header) -> Any:
        return parse_printed_hlo(
            _payload_doc(payload)["hlo"], source_name=f"<serialized {header.name}>"
        )


def _payload_doc(payload: bytes) -> dict:
    try:
        doc = json.loads(payload.decode())
        doc["hlo"], doc["program"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise DataLoss(f"tpusim executable payload is malformed: {exc!r}") from None
    return doc


def program_json(payload: bytes) -> Any:
    """The device program as stored (JSON), only compared with the re-derived one."""
    return _payload_doc(payload)["program"]
