"""Checking a linked code object without a GPU: ``llvm-readelf --notes`` and ``llvm-objdump -d``.

No AMD GPU runs hlort's tests, so what can be verified is verified here, from the files the
HIP loader reads: the ELF header's ABI version (the code object version), the AMDGPU metadata
note (the target, each kernel's ``.kd`` descriptor symbol, its wavefront size, its explicit
argument layout, its private segment (stack) size) and that every kernel disassembles for the
target. The tools come from LLVM 19 or newer (package ``llvm-19``).
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlort.errors import Internal
from hlort_rocm.amdgpu_target import GfxTarget
from hlort_rocm.llvm_tools import LlvmTool, find_tool

TOOLS_PACKAGE = "llvm-19"
ELF_ABI_VERSION = {4: 2, 5: 3, 6: 4}  # code object version -> e_ident[EI_ABIVERSION]
METADATA_VERSION = {4: [1, 1], 5: [1, 2], 6: [1, 2]}
_EI_ABIVERSION = 8


@dataclass(frozen=True)
class KernelArg:
    """One explicit kernel argument as the metadata lists it."""

    offset: int
    size: int
    value_kind: str  # "global_buffer" (a pointer), "by_value"


@dataclass
class KernelNote:
    name: str
    symbol: str
    args: list[KernelArg]
    private_segment_size: int
    uses_dynamic_stack: bool
    wavefront_size: int
    group_segment_size: int
    vgpr_spills: int = 0
    sgpr_spills: int = 0
    instructions: int = 0  # counted in the disassembly


@dataclass
class CodeObjectReport:
    target: str
    code_object_version: int
    kernels: dict[str, KernelNote] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_problems(self, what: str) -> None:
        if self.problems:
            raise Internal(f"{what}: the code object does not validate: {'; '.join(self.problems)}")


def find_readelf() -> LlvmTool:
    return find_tool(
        "llvm-readelf",
        min_major=19,
        env="HLORT_ROCM_READELF",
        package=TOOLS_PACKAGE,
        purpose="validating AMDGPU code objects",
    )


def find_objdump() -> LlvmTool:
    return find_tool(
        "llvm-objdump",
        min_major=19,
        env="HLORT_ROCM_OBJDUMP",
        package=TOOLS_PACKAGE,
        purpose="disassembling AMDGPU code objects",
    )


def explicit_args(sizes: list[int], kinds: list[str]) -> list[KernelArg]:
    """The layout LLVM gives explicit arguments: each at the next multiple of its size."""
    args, offset = [], 0
    for size, kind in zip(sizes, kinds, strict=True):
        offset = -(-offset // size) * size
        args.append(KernelArg(offset, size, kind))
        offset += size
    return args


def _run(tool: LlvmTool, args: list[str], paths: list[Path]) -> str:
    run = subprocess.run(
        [tool.path, *args, *map(str, paths)], capture_output=True, text=True, timeout=600
    )
    if run.returncode != 0:
        raise Internal(f"{tool.path} {' '.join(args)} failed: {run.stderr.strip()[:1000]}")
    return run.stdout


def _per_file(listing: str, paths: list[Path], header: str) -> dict[Path, str]:
    """A multi-file listing cut at each file's header line (``header`` formats the path)."""
    if len(paths) == 1:
        return {paths[0]: listing}
    starts = sorted((listing.find(header.format(path=p)), p) for p in paths)
    out = {}
    for k, (start, path) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(listing)
        out[path] = listing[start:end] if start >= 0 else ""
    return out


def parse_metadata_yaml(text: str) -> dict[str, Any]:
    """The AMDGPU metadata document ``llvm-readelf --notes`` prints (a small YAML subset:
    mappings, lists, scalars, ``!str`` tags) as Python values."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "---")
    except StopIteration:
        return {}
    rows: list[tuple[int, str]] = []
    for line in lines[start + 1 :]:
        if line.strip() == "...":
            break
        if line.strip():
            indent = len(line) - len(line.lstrip(" "))
            body = line.strip()
            while body.startswith("- "):  # a list item: a marker, then its first entry
                rows.append((indent, "-"))
                indent += 2
                body = body[2:].lstrip()
            rows.append((indent, body))
    value, _ = _block(rows, 0, rows[0][0] if rows else 0)
    return value if isinstance(value, dict) else {}


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith("!"):
        text = text.split(" ", 1)[1] if " " in text else ""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text, 0)
    except ValueError:
        return text


def _block(rows: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    if i < len(rows) and rows[i] == (indent, "-"):
        items = []
        while i < len(rows) and rows[i] == (indent, "-"):
            i += 1
            if i < len(rows) and rows[i][0] > indent:
                item, i = _block(rows, i, rows[i][0])
                items.append(item)
        return items, i
    mapping: dict[str, Any] = {}
    while i < len(rows) and rows[i][0] == indent and rows[i][1] != "-":
        body = rows[i][1]
        if ":" not in body:
            return _scalar(body), i + 1
        key, _, rest = body.partition(":")
        i += 1
        if rest.strip():
            mapping[key.strip()] = _scalar(rest)
        elif i < len(rows) and rows[i][0] > indent:
            mapping[key.strip()], i = _block(rows, i, rows[i][0])
        elif i < len(rows) and rows[i] == (indent, "-"):  # a list at the key's own indent
            mapping[key.strip()], i = _block(rows, i, indent)
        else:
            mapping[key.strip()] = None
    return mapping, i


def _kernel_note(entry: dict[str, Any]) -> KernelNote:
    args = [
        KernelArg(int(a.get(".offset", -1)), int(a.get(".size", -1)), str(a.get(".value_kind", "")))
        for a in entry.get(".args") or []
        if not str(a.get(".value_kind", "")).startswith("hidden_")
    ]
    return KernelNote(
        name=str(entry.get(".name")),
        symbol=str(entry.get(".symbol")),
        args=args,
        private_segment_size=int(entry.get(".private_segment_fixed_size", -1)),
        uses_dynamic_stack=bool(entry.get(".uses_dynamic_stack", False)),
        wavefront_size=int(entry.get(".wavefront_size", -1)),
        group_segment_size=int(entry.get(".group_segment_fixed_size", 0)),
        vgpr_spills=int(entry.get(".vgpr_spill_count", 0)),
        sgpr_spills=int(entry.get(".sgpr_spill_count", 0)),
    )


@dataclass(frozen=True)
class CodeObjectToCheck:
    """One linked code object and what it must hold: ``expected`` maps each kernel name to its
    explicit argument layout (None: not checked)."""

    hsaco: bytes
    gfx: GfxTarget
    code_object_version: int
    expected: dict[str, list[KernelArg] | None]
    no_stack: bool = True


def validate_code_object(
    hsaco: bytes,
    gfx: GfxTarget,
    code_object_version: int,
    expected: dict[str, list[KernelArg] | None],
    *,
    no_stack: bool = True,
    disassemble: bool = True,
) -> CodeObjectReport:
    """Check one code object against what was compiled; problems are collected, not raised."""
    item = CodeObjectToCheck(hsaco, gfx, code_object_version, expected, no_stack)
    return validate_code_objects([item], disassemble=disassemble)[0]


def validate_code_objects(
    items: list[CodeObjectToCheck], *, disassemble: bool = True
) -> list[CodeObjectReport]:
    """Check many code objects with one llvm-readelf and one llvm-objdump per gfx target (the
    tools' start-up, not their work, is what costs)."""
    if not items:
        return []
    with tempfile.TemporaryDirectory(prefix="hlort-rocm-") as tmp:
        paths = [Path(tmp, f"code{k}.hsaco") for k in range(len(items))]
        for path, item in zip(paths, items, strict=True):
            path.write_bytes(item.hsaco)
        listing = _run(find_readelf(), ["--notes", "--dyn-syms"], paths)
        per_file = _per_file(listing, paths, "File: {path}\n")
        reports = [_report(item, per_file[path]) for path, item in zip(paths, items, strict=True)]
        if disassemble:
            for gfx in {item.gfx for item in items}:
                group = [k for k, item in enumerate(items) if item.gfx == gfx]
                listing = _run(
                    find_objdump(), ["-d", f"--mcpu={gfx.name}"], [paths[k] for k in group]
                )
                text = _per_file(listing, [paths[k] for k in group], "{path}:\tfile format")
                for k in group:
                    _count_instructions(reports[k], text[paths[k]], gfx)
    return reports


def _report(item: CodeObjectToCheck, listing: str) -> CodeObjectReport:
    notes_text, dynamic_text = _sections(listing, "Displaying notes", "Symbol table '.dynsym'")
    notes = parse_metadata_yaml(notes_text)
    version, gfx, hsaco = item.code_object_version, item.gfx, item.hsaco
    report = CodeObjectReport(str(notes.get("amdhsa.target", "")), version)
    abi = hsaco[_EI_ABIVERSION] if len(hsaco) > _EI_ABIVERSION else -1
    if abi != ELF_ABI_VERSION[version]:
        report.problems.append(
            f"ELF ABI version {abi}, expected {ELF_ABI_VERSION[version]} (code object v{version})"
        )
    if notes.get("amdhsa.version") != METADATA_VERSION[version]:
        report.problems.append(f"metadata version {notes.get('amdhsa.version')}")
    if report.target.split(":")[0] != gfx.isa_name:
        report.problems.append(f"target {report.target!r}, expected {gfx.isa_name!r}")
    for entry in notes.get("amdhsa.kernels") or []:
        note = _kernel_note(entry)
        report.kernels[note.name] = note
    dynamic = dynamic_text.split()
    for name, args in item.expected.items():
        note = report.kernels.get(name)
        if note is None:
            report.problems.append(f"kernel {name} is not in the metadata")
            continue
        if note.symbol != f"{name}.kd" or note.symbol not in dynamic:
            report.problems.append(f"{name}: descriptor symbol {note.symbol!r} missing")
        if note.wavefront_size != gfx.wavefront_size:
            report.problems.append(f"{name}: wavefront {note.wavefront_size}")
        if args is not None and note.args != args:
            report.problems.append(f"{name}: arguments {note.args}, expected {args}")
        if item.no_stack and (note.private_segment_size != 0 or note.uses_dynamic_stack):
            report.problems.append(
                f"{name}: uses {note.private_segment_size} bytes of private segment (stack)"
            )
    for name in report.kernels.keys() - item.expected.keys():
        report.problems.append(f"unexpected kernel {name}")
    return report


def _sections(listing: str, first: str, second: str) -> tuple[str, str]:
    """The parts of a readelf listing that start at the headers ``first`` and ``second``, in
    whichever order readelf printed them ("" for a missing one)."""
    a, b = listing.find(first), listing.find(second)
    if a < 0 or b < 0:
        return (listing[a:] if a >= 0 else ""), (listing[b:] if b >= 0 else "")
    return (listing[a:b], listing[b:]) if a < b else (listing[a:], listing[b:a])


def _count_instructions(report: CodeObjectReport, listing: str, gfx: GfxTarget) -> None:
    current: KernelNote | None = None
    ended: set[str] = set()
    for line in listing.splitlines():
        stripped = line.strip()
        if stripped.endswith(">:"):
            current = report.kernels.get(stripped[stripped.find("<") + 1 : -2])
        elif current is not None and stripped and not stripped.startswith("s_nop"):
            current.instructions += 1
            if stripped.startswith("s_endpgm"):
                ended.add(current.name)
    for name in report.kernels:
        if name not in ended:
            report.problems.append(f"{name}: no s_endpgm in the {gfx.name} disassembly")
