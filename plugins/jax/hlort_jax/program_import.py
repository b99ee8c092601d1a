"""What JAX compiles: MLIR bytecode of a StableHLO portable artifact -> StableHLO text.

jaxlib's own MLIR (in this process) reads the artifact back; hlort's StableHLO importer
takes the text from there. Donation is read from the entry function's argument attributes
(``tf.aliasing_output`` / ``jax.buffer_donor``) and multi-device programs are refused here
with the reason, before any hlort work.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlort.errors import ErrorCode, HlortError, InvalidArgument


@dataclass
class ImportedProgram:
    text: str
    donated: tuple[int, ...]
    num_partitions: int
    num_replicas: int


def _context():
    from jax._src.interpreters import mlir

    return mlir.make_ir_context()


def _int_attr(attrs, name: str, default: int) -> int:
    if name not in attrs:
        return default
    try:
        return int(attrs[name].value)
    except (AttributeError, TypeError, ValueError):
        return default


def import_program(code: bytes, fmt: str) -> ImportedProgram:
    if fmt != "mlir":
        raise HlortError(
            f"hlort-jax compiles programs in format 'mlir' (StableHLO); got {fmt!r}",
            ErrorCode.UNIMPLEMENTED,
        )
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    with _context() as ctx:
        try:
            module = stablehlo.deserialize_portable_artifact(ctx, code)
        except Exception:  # noqa: BLE001 - not an artifact: plain bytecode or text
            try:
                module = ir.Module.parse(code)
            except Exception as err:  # noqa: BLE001
                raise InvalidArgument(f"the program is not StableHLO MLIR: {err}") from None
        attrs = module.operation.attributes
        partitions = _int_attr(attrs, "mhlo.num_partitions", 1)
        replicas = _int_attr(attrs, "mhlo.num_replicas", 1)
        donated = _donated_arguments(module)
        text = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
    return ImportedProgram(text, donated, partitions, replicas)


def _donated_arguments(module) -> tuple[int, ...]:
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        if ir.StringAttr(op.attributes["sym_name"]).value != "main":
            continue
        if "arg_attrs" not in op.attributes:
            return ()
        donated = []
        for i, attr in enumerate(ir.ArrayAttr(op.attributes["arg_attrs"])):
            entries = ir.DictAttr(attr)
            if "tf.aliasing_output" in entries or "jax.buffer_donor" in entries:
                donated.append(i)
        return tuple(donated)
    return ()
