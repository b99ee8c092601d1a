"""Typed options passed across the plugin boundary: compile, execute, host-buffer semantics.

Everything here is plain data that round-trips through JSON (``to_dict``/``from_dict``), so a
serialized executable can record how it was compiled. There are no opaque blobs: a vendor's own
knobs go in ``target_options``, a flat ``{str: str | int | float | bool}`` mapping the plugin
documents and validates.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import field, fields
from typing import Any

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass

TargetOptionValue = str | int | float | bool

MATMUL_PRECISIONS = {
    "default": "default",
    "bfloat16": "default",
    "high": "high",
    "tensorfloat32": "high",
    "highest": "highest",
    "float32": "highest",
}
"""``matmul_precision`` values (JAX's ``jax_default_matmul_precision`` spellings too) -> level."""
FALLBACK_POLICIES = ("error", "warn", "allow")


class HostBufferSemantics(enum.Enum):
    """How a buffer created from a host array may use that array (PJRT's four semantics)."""

    IMMUTABLE_ONLY_DURING_CALL = "immutable_only_during_call"
    """The array is read before ``buffer_from_host`` returns; the caller may then reuse it."""

    IMMUTABLE_UNTIL_TRANSFER_COMPLETES = "immutable_until_transfer_completes"
    """The array may be read asynchronously; keep it unchanged until the buffer is ready."""

    IMMUTABLE_ZERO_COPY = "immutable_zero_copy"
    """The buffer may alias the array for its whole life; neither side may write to it."""

    MUTABLE_ZERO_COPY = "mutable_zero_copy"
    """The buffer may alias the array and the runtime may write to it (e.g. after donation)."""


def _check_target_options(options: Mapping[str, Any]) -> dict[str, TargetOptionValue]:
    out: dict[str, TargetOptionValue] = {}
    for key, value in options.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgument(f"target option names must be non-empty strings, got {key!r}")
        if not isinstance(value, (str, int, float, bool)):
            raise InvalidArgument(
                f"target option {key!r} has a {type(value).__name__} value; values must be "
                f"str, int, float or bool"
            )
        out[key] = value
    return out


@dataclass
class DebugOptions:
    """Knobs for people debugging the compiler, not for production tuning."""

    dump_dir: str | None = None
    """Where the pipeline writes the module after each pass and the backend its artifacts."""
    verify_passes: bool = False
    """Run the verifier after every pass (slower; catches a pass that breaks the IR)."""
    run_core_passes: bool = True
    """False skips the core pass pipeline: the backend sees the verified input module."""
    disabled_passes: tuple[str, ...] = ()
    """Names of core passes to skip."""

    def __post_init__(self) -> None:
        self.disabled_passes = tuple(self.disabled_passes)


@dataclass
class CompileOptions:
    """What ``Client.compile`` gets besides the module.

    ``device_assignment[replica][partition]`` is a device id; None lets the client choose its
    first ``num_replicas * num_partitions`` addressable devices. ``donated_arguments`` are the
    entry parameter numbers whose buffers execution consumes (their storage may be reused for
    outputs); using such a buffer afterwards raises FAILED_PRECONDITION. ``matmul_precision``
    raises every dot and convolution that asks for DEFAULT precision to ``high`` or
    ``highest`` (None: as the program says); ``fallback`` overrides ``HLORT_FALLBACK`` for this
    compile (see hlort.plugin.base.fallback_policy). Options by name: hlort.plugin.compile_flags.
    """

    num_replicas: int = 1
    num_partitions: int = 1
    device_assignment: tuple[tuple[int, ...], ...] | None = None
    donated_arguments: tuple[int, ...] = ()
    debug: DebugOptions = field(default_factory=DebugOptions)
    target_options: dict[str, TargetOptionValue] = field(default_factory=dict)
    matmul_precision: str | None = None
    fallback: str | None = None

    def __post_init__(self) -> None:
        if self.matmul_precision is not None:
            level = MATMUL_PRECISIONS.get(str(self.matmul_precision).strip().lower())
            if level is None:
                raise InvalidArgument(
                    f"matmul_precision={self.matmul_precision!r} is not one of "
                    f"{', '.join(MATMUL_PRECISIONS)}"
                )
            self.matmul_precision = level
        if self.fallback is not None:
            policy = str(self.fallback).strip().lower()
            if policy not in FALLBACK_POLICIES:
                raise InvalidArgument(
                    f"fallback={self.fallback!r} is not a fallback policy; use one of "
                    f"{', '.join(FALLBACK_POLICIES)}"
                )
            self.fallback = policy
        if self.num_replicas < 1 or self.num_partitions < 1:
            raise InvalidArgument(
                f"num_replicas={self.num_replicas} and num_partitions={self.num_partitions} "
                f"must both be >= 1"
            )
        if self.device_assignment is not None:
            assignment = tuple(tuple(int(d) for d in row) for row in self.device_assignment)
            if len(assignment) != self.num_replicas or any(
                len(row) != self.num_partitions for row in assignment
            ):
                raise InvalidArgument(
                    f"device_assignment must have {self.num_replicas} row(s) (replicas) of "
                    f"{self.num_partitions} device id(s) (partitions), got {assignment}"
                )
            flat = [d for row in assignment for d in row]
            if len(set(flat)) != len(flat):
                raise InvalidArgument(f"device_assignment {assignment} uses a device twice")
            self.device_assignment = assignment
        donated = tuple(int(i) for i in self.donated_arguments)
        if any(i < 0 for i in donated) or len(set(donated)) != len(donated):
            raise InvalidArgument(
                f"donated_arguments={donated}: parameter numbers must be distinct and >= 0"
            )
        self.donated_arguments = tuple(sorted(donated))
        if isinstance(self.debug, Mapping):
            self.debug = DebugOptions(**self.debug)
        self.target_options = _check_target_options(self.target_options)

    def target_option(self, name: str, default: TargetOptionValue | None = None):
        """A vendor option by name, or ``default``."""
        return self.target_options.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``debug.dump_dir`` is dropped (it is about this machine)."""
        debug = {f.name: getattr(self.debug, f.name) for f in fields(DebugOptions)}
        debug["dump_dir"] = None
        debug["disabled_passes"] = list(self.debug.disabled_passes)
        return {
            "num_replicas": self.num_replicas,
            "num_partitions": self.num_partitions,
            "device_assignment": (
                [list(row) for row in self.device_assignment]
                if self.device_assignment is not None
                else None
            ),
            "donated_arguments": list(self.donated_arguments),
            "debug": debug,
            "target_options": dict(self.target_options),
            "matmul_precision": self.matmul_precision,
            "fallback": self.fallback,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompileOptions:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise InvalidArgument(
                f"unknown compile option(s) {sorted(unknown)}; known: {sorted(known)}"
            )
        kwargs = dict(data)
        if kwargs.get("device_assignment") is not None:
            kwargs["device_assignment"] = tuple(tuple(r) for r in kwargs["device_assignment"])
        if "debug" in kwargs and isinstance(kwargs["debug"], Mapping):
            debug_known = {f.name for f in fields(DebugOptions)}
            kwargs["debug"] = DebugOptions(
                **{k: v for k, v in kwargs["debug"].items() if k in debug_known}
            )
        return cls(**kwargs)


@dataclass
class ExecuteOptions:
    """Per-call options of ``Executable.execute``.

    ``non_donatable_input_indices``: arguments compiled as donated that this call must not
    consume. ``launch_id`` tags the launch for plugins that correlate multi-device runs.
    """

    launch_id: int = 0
    non_donatable_input_indices: frozenset[int] = frozenset()
    target_options: dict[str, TargetOptionValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.non_donatable_input_indices = frozenset(
            int(i) for i in self.non_donatable_input_indices
        )
        self.target_options = _check_target_options(self.target_options)


DEFAULT_EXECUTE_OPTIONS = ExecuteOptions()
