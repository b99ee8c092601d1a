"""Program loading: an HloModule, XLA HLO text or StableHLO text -> a (verified) HloModule.

The format is told by content, since files are often named ``.txt``: text whose first
significant line starts with ``HloModule`` is XLA HLO; text with ``module @``/``module {``,
``func.func`` or ``stablehlo.`` ops is StableHLO. A file's suffix (``.hlo``, ``.mlir``) decides
when present. Bytes (or a file) starting with ``ML\xefR`` are MLIR bytecode, StableHLO as
``jax.export`` serializes it: read through jaxlib when it is installed
(hlort.importers.stablehlo.bytecode). XLA's binary HLO protos (``*.hlo.pb``, or bytes that are
not UTF-8 and start like one) are read by hlort.text.hlo_proto_reader. Importers only
translate; they never optimize.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hlort.errors import InvalidArgument, NotFound, Unimplemented
from hlort.ir.module import Module
from hlort.plugin.base.hlo_text import parse_hlo

HLO = "hlo"
STABLEHLO = "stablehlo"
_SUFFIXES = {".hlo": HLO, ".mlir": STABLEHLO, ".stablehlo": STABLEHLO, ".mlirbc": STABLEHLO}
_COMMENT = re.compile(r"^\s*(//.*|#.*)?$")
_STABLEHLO_MARKERS = (
    re.compile(r"(^|\s)module\s*(@|\{|attributes)"),
    re.compile(r"func\.func"),
    re.compile(r"stablehlo\."),
)


def detect_format(text: str, source_name: str = "<text>") -> str:
    """``"hlo"`` or ``"stablehlo"``; INVALID_ARGUMENT when the text is neither."""
    for line in text.splitlines():
        if _COMMENT.match(line):
            continue
        stripped = line.lstrip()
        if stripped.startswith("HloModule"):
            return HLO
        break
    if any(marker.search(text) for marker in _STABLEHLO_MARKERS):
        return STABLEHLO
    if re.search(r"^\s*HloModule\b", text, re.MULTILINE):
        return HLO
    raise InvalidArgument(
        f"{source_name}: cannot tell the program format: expected XLA HLO text (starting with "
        f"'HloModule') or StableHLO text ('module @...', 'func.func', 'stablehlo.' ops)"
    )


def parse_stablehlo(text: str, source_name: str = "<text>") -> Module:
    try:
        from hlort.importers.stablehlo import parse_stablehlo as importer
    except ImportError:
        raise Unimplemented(
            "the StableHLO importer (hlort.importers.stablehlo.parse_stablehlo) is not available "
            "in this installation; convert the program to HLO text"
        ) from None
    return importer(text, source_name=source_name)


def parse_program(text: str, fmt: str | None = None, source_name: str = "<text>") -> Module:
    """Parse program text of format ``fmt`` (detected when None)."""
    fmt = fmt or detect_format(text, source_name)
    if fmt == HLO:
        return parse_hlo(text, source_name=source_name)
    if fmt == STABLEHLO:
        return parse_stablehlo(text, source_name=source_name)
    raise InvalidArgument(f"unknown program format {fmt!r}; use {HLO!r} or {STABLEHLO!r}")


def read_program_file(path: str | os.PathLike) -> tuple[str, str]:
    """The text of a program file and its format (suffix, else content)."""
    path = Path(path)
    try:
        data = path.read_bytes()
        if _is_bytecode(data):
            return _bytecode_text(data, str(path)), STABLEHLO
        if path.suffix.lower() == ".pb" or (_is_hlo_proto(data) and not _is_utf8(data)):
            return _hlo_proto_text(data, str(path)), HLO
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InvalidArgument(f"{path} is a directory, not a program file") from None
    except UnicodeDecodeError:
        raise InvalidArgument(
            f"{path} is neither UTF-8 text (HLO, StableHLO), MLIR bytecode nor an XLA HLO proto"
        ) from None
    except OSError as err:
        raise InvalidArgument(f"cannot read {path}: {err.strerror or err}") from None
    fmt = _SUFFIXES.get(path.suffix.lower()) or detect_format(text, str(path))
    return text, fmt


def _is_bytecode(data) -> bool:
    from hlort.importers.stablehlo.bytecode import is_mlir_bytecode

    return is_mlir_bytecode(data)


def _bytecode_text(data: bytes, source_name: str) -> str:
    from hlort.importers.stablehlo.bytecode import bytecode_to_text

    return bytecode_to_text(data, source_name)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_hlo_proto(data) -> bool:
    from hlort.text.hlo_proto_reader import is_hlo_proto

    return is_hlo_proto(bytes(data[:4]))


def _hlo_proto_text(data: bytes, source_name: str) -> str:
    """An XLA HLO proto (``*.hlo.pb``: HloProto, HloModuleProto[WithConfig]) as HLO text."""
    from hlort.text.hlo_proto_reader import module_from_hlo_proto
    from hlort.text.printer import print_module

    return print_module(module_from_hlo_proto(bytes(data), source_name))


def _looks_like_a_path(text: str) -> bool:
    """One line, no program syntax, and an existing file or a program suffix."""
    stripped = text.strip()
    if not stripped or "\n" in stripped or any(c in stripped for c in "{}()="):
        return False
    return Path(stripped).suffix.lower() in (*_SUFFIXES, ".txt") or os.path.isfile(stripped)


def load_program(program: Module | str | bytes | os.PathLike, source_name: str | None = None):
    """Anything ``hlort.compile`` accepts -> ``(module, format)``.

    A ``str`` is program text; pass a :class:`pathlib.Path` to read a file.
    """
    if isinstance(program, Module):
        return program, "module"
    if isinstance(program, os.PathLike):
        text, fmt = read_program_file(program)
        return parse_program(text, fmt, source_name or os.fspath(program)), fmt
    if isinstance(program, (bytes, bytearray, memoryview)):
        name = source_name or "<bytes>"
        if _is_bytecode(program):
            text = _bytecode_text(bytes(program), name)
            return parse_program(text, STABLEHLO, name), STABLEHLO
        if _is_hlo_proto(program) and not _is_utf8(bytes(program)):
            from hlort.text.hlo_proto_reader import module_from_hlo_proto

            return module_from_hlo_proto(bytes(program), name), HLO
        try:
            program = bytes(program).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument(
                "program bytes are neither UTF-8 text (HLO, StableHLO) nor MLIR bytecode "
                "(which starts with b'ML\\xefR')"
            ) from None
    if isinstance(program, str):
        name = source_name or "<text>"
        if _looks_like_a_path(program):
            raise InvalidArgument(
                f"{program!r} looks like a file name, but a str is program text; to compile a "
                f"file pass pathlib.Path({program!r})"
            )
        fmt = detect_format(program, name)
        return parse_program(program, fmt, name), fmt
    raise InvalidArgument(
        f"cannot compile a {type(program).__name__}; pass an hlort Module, HLO or StableHLO text, "
        f"or a pathlib.Path to a program file"
    )
