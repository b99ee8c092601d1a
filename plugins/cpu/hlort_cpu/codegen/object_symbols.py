"""The symbols an object file defines and the ones it needs (ELF symbol tables).

MCJIT ends the process (``LLVM ERROR: Symbol not found``) when an object refers to a symbol it
cannot resolve, and sometimes first runs code with the call pointing at address 0 (a segfault).
So the JIT reads each object's symbol table before loading it and resolves every undefined
symbol itself, or refuses the object with an error naming the symbol (jit.py). Only 64-bit
little-endian ELF (Linux on x86-64 and AArch64) is read; any other format returns None and is
loaded unchecked, after the runtime library (so compiler-rt's helpers at least resolve).
"""

from __future__ import annotations

import struct

_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STB_WEAK = 2
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym


class ObjectSymbols:
    """An object's global symbols (a plain class: making a dataclass compiles Python source,
    which a process's first compile paid, ~1.4M instructions per class)."""

    __slots__ = ("defined", "undefined")

    def __init__(self, defined: frozenset[str], undefined: frozenset[str]):
        self.defined = defined  # global and weak symbols with a definition in this object
        self.undefined = undefined  # strong references this object needs from elsewhere

    def __repr__(self) -> str:
        return f"ObjectSymbols(defined={set(self.defined)}, undefined={set(self.undefined)})"


def object_symbols(obj: bytes) -> ObjectSymbols | None:
    """The symbol table of an ELF64 little-endian relocatable object, or None (other formats)."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize != _SECTION.size or shoff + shnum * shentsize > len(obj):
        return None
    sections = [_SECTION.unpack_from(obj, shoff + k * shentsize) for k in range(shnum)]
    defined: set[str] = set()
    undefined: set[str] = set()
    for sh_type, sh_offset, sh_size, sh_link in ((s[1], s[4], s[5], s[6]) for s in sections):
        if sh_type != _SHT_SYMTAB or sh_link >= shnum:
            continue
        strtab = sections[sh_link][4]
        for off in range(sh_offset + _SYMBOL.size, sh_offset + sh_size, _SYMBOL.size):
            name_off, info, _other, shndx, _value, _size = _SYMBOL.unpack_from(obj, off)
            binding = info >> 4
            if binding == 0:  # local
                continue
            start = strtab + name_off
            name = obj[start : obj.index(b"\0", start)].decode("ascii", "replace")
            if not name:
                continue
            if shndx != _SHN_UNDEF:
                defined.add(name)
            elif binding != _STB_WEAK:  # an unresolved weak reference is simply null
                undefined.add(name)
    return ObjectSymbols(frozenset(defined), frozenset(undefined))
