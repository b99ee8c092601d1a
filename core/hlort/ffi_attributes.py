"""The attributes of an XLA typed-FFI custom call (``API_VERSION_TYPED_FFI``), as data.

A typed-FFI call carries its attributes as an MLIR dictionary: ``mhlo.backend_config = {uplo =
76 : ui8}`` in StableHLO, ``backend_config={uplo = 76 : ui8}`` in XLA's HLO text. The importer
keeps that text (:func:`ffi_attributes_text`), so both routes give the instruction one
``backend_config`` string, and :func:`parse_ffi_attributes` turns it into a dict of Python
values: integers (any width; the ``: type`` suffix is read and dropped), floats, booleans and
strings. The LAPACK targets read their ``uplo`` / ``mode`` / ``side`` ... characters from it.
"""

from __future__ import annotations

import re

from hlort.errors import InvalidArgument

_ENTRY = re.compile(
    r'\s*(?P<key>[A-Za-z_][\w.$-]*|"[^"]*")\s*=\s*'
    r'(?P<value>"(?:[^"\\]|\\.)*"|true|false|[-+]?[\w.+-]+)'
    r"(?:\s*:\s*(?P<type>[a-z]+\d*))?\s*(?:,|$)"
)


def ffi_attributes_text(attributes: dict) -> str:
    """``{a = 1, b = 2.5, c = "x"}``: an MLIR dictionary of the attributes (sorted, as MLIR
    prints them)."""
    parts = []
    for key in sorted(attributes):
        value = attributes[key]
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = repr(int(value) if isinstance(value, int) else value)
            kind = getattr(value, "mlir_type", None)  # an importer's typed integer: `76 : ui8`
            if kind:
                text += f" : {kind}"
        elif isinstance(value, str):
            text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            raise InvalidArgument(
                f"typed-FFI attribute {key!r} has a value hlort cannot keep: "
                f"{value!r}; only integers, floats, booleans and strings"
            )
        parts.append(f"{key} = {text}")
    return "{" + ", ".join(parts) + "}"


def _value(text: str, type_name: str | None):
    if text.startswith('"'):
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if text in ("true", "false"):
        return text == "true"
    try:
        if type_name and type_name.startswith(("f", "bf")):
            return float(text)
        return int(text, 0)
    except ValueError:
        return float(text)


def parse_ffi_attributes(config, where: str) -> dict:
    """The attributes of ``config`` (a ``backend_config`` string, or already a dict); an empty
    or missing config has none. INVALID_ARGUMENT naming ``where`` when it is not a dictionary."""
    if config is None or config == "":
        return {}
    if isinstance(config, dict):
        return dict(config)
    body = config.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise InvalidArgument(
            f"{where}: backend_config {config!r} is not a typed-FFI attribute "
            "dictionary like {uplo = 76 : ui8}"
        )
    body = body[1:-1].strip()
    out: dict = {}
    pos = 0
    while pos < len(body):
        match = _ENTRY.match(body, pos)
        if match is None:
            raise InvalidArgument(
                f"{where}: cannot read the typed-FFI attributes {config!r} "
                f"at {body[pos : pos + 20]!r}"
            )
        key = match["key"].strip('"')
        try:
            out[key] = _value(match["value"], match["type"])
        except ValueError:
            raise InvalidArgument(
                f"{where}: typed-FFI attribute {key} = {match['value']!r} "
                "is not a number, boolean or string"
            ) from None
        pos = match.end()
    return out
