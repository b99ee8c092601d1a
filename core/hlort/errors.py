"""Error codes and exceptions.

Every failure that reaches a user is an :class:`HlortError` carrying one of PJRT's error codes, so a
framework can branch on ``err.code`` and a CLI can map codes to exit statuses. Messages name the
problem and the fix; they are written for the person reading them, not for the code raising them.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.Enum):
    """PJRT's (absl's) status codes, by name."""

    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class HlortError(Exception):
    """Base of every error hlort raises on purpose.

    ``code`` is an :class:`ErrorCode`; ``message`` is the human text (also ``str(err)``).
    Subclasses exist so callers can ``except`` one family; the code is what is contractual.
    """

    default_code = ErrorCode.UNKNOWN

    def __init__(self, message: str, code: ErrorCode | None = None):
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class InvalidArgument(HlortError):
    default_code = ErrorCode.INVALID_ARGUMENT


class NotFound(HlortError):
    default_code = ErrorCode.NOT_FOUND


class Unimplemented(HlortError):
    default_code = ErrorCode.UNIMPLEMENTED


class FailedPrecondition(HlortError):
    default_code = ErrorCode.FAILED_PRECONDITION


class ResourceExhausted(HlortError):
    default_code = ErrorCode.RESOURCE_EXHAUSTED


class Internal(HlortError):
    default_code = ErrorCode.INTERNAL


class Unavailable(HlortError):
    default_code = ErrorCode.UNAVAILABLE


class DataLoss(HlortError):
    default_code = ErrorCode.DATA_LOSS


class DeadlineExceeded(HlortError):
    """A wait ran out of time (a collective whose peers did not all arrive)."""

    default_code = ErrorCode.DEADLINE_EXCEEDED


class Aborted(HlortError):
    """Work given up because another part of the same operation failed (a peer device's
    program raised while this device waited for it in a collective)."""

    default_code = ErrorCode.ABORTED


class ParseError(InvalidArgument):
    """A syntax error in program text; carries the 1-based line and column."""

    def __init__(self, message: str, line: int, column: int, source_name: str = "<text>"):
        super().__init__(f"{source_name}:{line}:{column}: {message}")
        self.line = line
        self.column = column
        self.source_name = source_name
