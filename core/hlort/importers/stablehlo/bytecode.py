"""StableHLO as MLIR bytecode (what ``jax.export`` serializes and a PJRT plugin receives) -> text.

MLIR bytecode starts with ``ML\\xefR``. ``Exported.mlir_module_serialized`` is a StableHLO
*portable artifact* (versioned VHLO inside bytecode); ``module.operation.write_bytecode`` gives
plain bytecode. Both are read with jaxlib's MLIR bindings (``jaxlib.mlir``: StableHLO's own
deserializer, the reader that understands every StableHLO version it promises to), imported
here on first use only, and printed as the text :mod:`hlort.importers.stablehlo` takes. Without
jaxlib this is UNIMPLEMENTED naming the fix: hlort has no bytecode reader of its own.
"""

from __future__ import annotations

import logging

from hlort.errors import InvalidArgument, Unimplemented

MAGIC = b"ML\xefR"
LOGGER = logging.getLogger("hlort.importers")


def is_mlir_bytecode(data: bytes | bytearray | memoryview) -> bool:
    return bytes(data[:4]) == MAGIC


def _context():
    """An MLIR context with the dialects JAX programs use (func, stablehlo, chlo...)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, stablehlo

    ctx = ir.Context()
    try:  # jaxlib's upstream dialects (func, arith, ...), as jax's own contexts have them
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext

        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
    except (ImportError, AttributeError):  # another jaxlib layout: func ops stay generic
        ctx.allow_unregistered_dialects = True
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    return ctx


def bytecode_to_text(data: bytes, source_name: str = "<bytes>") -> str:
    """The StableHLO text of MLIR bytecode ``data``; UNIMPLEMENTED without jaxlib,
    INVALID_ARGUMENT when it is not a StableHLO module jaxlib can read."""
    try:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo
    except ImportError as err:
        raise Unimplemented(
            f"{source_name} is MLIR bytecode (StableHLO as jax.export serializes it); reading it "
            f"needs jaxlib's MLIR bindings, which this installation lacks ({err}); fix: pip "
            f"install jaxlib, or pass StableHLO text (jax.jit(f).lower(x).as_text())"
        ) from None
    data = bytes(data)
    ctx = _context()
    with ctx:
        try:
            module = stablehlo.deserialize_portable_artifact(ctx, data)
            kind = "portable artifact"
        except Exception:  # noqa: BLE001 - not an artifact: plain bytecode
            try:
                module = ir.Module.parse(data)
                kind = "plain bytecode"
            except Exception as err:  # noqa: BLE001 - MLIR's errors are plain exceptions
                raise InvalidArgument(
                    f"{source_name} is MLIR bytecode that jaxlib cannot read as StableHLO "
                    f"(neither a portable artifact nor a module of known dialects): "
                    f"{str(err).strip().splitlines()[0] if str(err).strip() else err!r}; "
                    f"fix: serialize it with the jaxlib installed here, or pass StableHLO text"
                ) from None
        text = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
    LOGGER.debug("%s: StableHLO %s read with jaxlib (%d bytes)", source_name, kind, len(data))
    return text
