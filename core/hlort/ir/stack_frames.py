"""Where a module's instructions came from: the stack-frame tables of XLA's HLO dumps.

Current XLA prints, between the ``HloModule`` header and the first computation, four numbered
tables (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``); an instruction's
``metadata={... stack_frame_id=N}`` names its innermost frame. They say which line of the
user's Python made each instruction, nothing about what it computes, so hlort keeps them for
messages (:meth:`StackFrameIndex.traceback`) and never verifies references against them: a
dump may name a frame its tables leave out (seen with jax 0.10.2) and still loads.

XLA prints a frame's parent as ``parent_frame_id`` = the parent's id + 1, and 1 for a frame
without one (checked against the Python call trees of nested functions: see
tests/text/test_xla_dumps.py); :meth:`StackFrameIndex.parent` undoes that.
"""

from __future__ import annotations

from dataclasses import field

from hlort.lazy_dataclass import dataclass


@dataclass(frozen=True)
class FileLocation:
    file_name_id: int
    function_name_id: int
    line: int = 0
    end_line: int = 0
    column: int = 0
    end_column: int = 0


@dataclass(frozen=True)
class StackFrame:
    file_location_id: int
    parent_frame_id: int  # as printed: the parent's id + 1; 1 (or 0) is none


@dataclass
class StackFrameIndex:
    """The four tables, each ``{id: entry}`` with XLA's 1-based ids."""

    file_names: dict[int, str] = field(default_factory=dict)
    function_names: dict[int, str] = field(default_factory=dict)
    file_locations: dict[int, FileLocation] = field(default_factory=dict)
    frames: dict[int, StackFrame] = field(default_factory=dict)

    def parent(self, frame_id: int) -> int | None:
        frame = self.frames.get(frame_id)
        if frame is None or frame.parent_frame_id <= 1:
            return None
        parent = frame.parent_frame_id - 1
        return parent if parent != frame_id else None

    def location(self, frame_id: int) -> str | None:
        """``file:line (function)`` of one frame, or None when the tables do not have it."""
        frame = self.frames.get(frame_id)
        loc = self.file_locations.get(frame.file_location_id) if frame else None
        if loc is None:
            return None
        file_name = self.file_names.get(loc.file_name_id, "?")
        function = self.function_names.get(loc.function_name_id, "?")
        return f"{file_name}:{loc.line} ({function})"

    def traceback(self, frame_id: int) -> list[str]:
        """Outermost first, like Python's tracebacks; what the tables have of the chain."""
        chain: list[str] = []
        seen: set[int] = set()
        current: int | None = frame_id
        while current is not None and current not in seen:
            seen.add(current)
            where = self.location(current)
            if where is None:
                break
            chain.append(where)
            current = self.parent(current)
        return chain[::-1]

    def __bool__(self) -> bool:
        return bool(self.frames or self.file_locations or self.file_names)
