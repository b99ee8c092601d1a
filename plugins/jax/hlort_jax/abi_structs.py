"""ctypes structures generated from abi_table.py, checked against the C compiler at load.

``STRUCTS["Buffer_Dimensions_Args"]`` is the ctypes class of that argument struct. ``check()``
compares every size and field offset with what the trampoline's compiler computed from the
same table (``_trampoline.layout()``), and the PJRT_Api size with the reference's 1072 bytes,
so a layout drift fails at load with the struct and field named, never as a corrupted call.
"""

from __future__ import annotations

import ctypes

from hlort_jax import abi_table

_CTYPES = {
    "size": ctypes.c_size_t,
    "ptr": ctypes.c_void_p,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "bool": ctypes.c_bool,
}


def _make(name: str, fields: list[tuple[str, str]], known: dict) -> type[ctypes.Structure]:
    spec = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p)]
    for field, kind in fields:
        spec.append((field, known["MemoryLayout"] if kind == "layout" else _CTYPES[kind]))
    return type(name, (ctypes.Structure,), {"_fields_": spec})


def _build() -> dict[str, type[ctypes.Structure]]:
    structs = abi_table.implemented_structs()
    out: dict[str, type[ctypes.Structure]] = {}
    out["MemoryLayout"] = _make("MemoryLayout", structs["MemoryLayout"], out)
    for name, fields in structs.items():
        if name != "MemoryLayout":
            out[name] = _make(name, fields, out)
    return out


STRUCTS = _build()


def struct_size(name: str) -> int:
    """PJRT's ``X_STRUCT_SIZE``: the end of the last field (no tail padding)."""
    cls = STRUCTS[name]
    last = cls._fields_[-1][0]
    return getattr(cls, last).offset + getattr(cls, last).size


def check(trampoline) -> None:
    """Raise RuntimeError naming the first size or offset where C and ctypes disagree."""
    if len(abi_table.FUNCTIONS) != abi_table.NUM_FUNCTIONS:
        raise RuntimeError(f"abi_table has {len(abi_table.FUNCTIONS)} functions, expected 129")
    size = trampoline.addresses()["api_struct_size"]
    if size != abi_table.API_STRUCT_SIZE:
        raise RuntimeError(f"the trampoline's PJRT_Api is {size} bytes, expected 1072")
    rows = trampoline.layout()
    if len({(s, f) for s, f, _ in rows}) != len(rows):
        raise RuntimeError("the trampoline's layout report repeats a field")
    for struct, field, value in rows:
        cls = STRUCTS.get(struct)
        if cls is None:
            raise RuntimeError(f"the trampoline declares {struct}, ctypes does not")
        mine = ctypes.sizeof(cls) if field == "<size>" else getattr(cls, field).offset
        if mine != value:
            raise RuntimeError(
                f"PJRT layout mismatch in {struct}.{field}: C says {value}, ctypes {mine}; "
                f"rebuild hlort-jax (pip install --force-reinstall hlort-jax)"
            )
    declared = {s for s, _, _ in rows}
    missing = set(STRUCTS) - declared
    if missing:
        raise RuntimeError(f"the trampoline lacks the structs {sorted(missing)}: rebuild it")
