"""The import graph of hlort and its plugins, read from the source with :mod:`ast`.

Every ``import`` and ``from ... import`` counts: at module level, inside functions and under
``if TYPE_CHECKING:`` (marked, since those never run), plus ``importlib.import_module("...")``
and ``OpRegistry(..., modules=(...), later_modules=(...))`` with literal module names (lazy
imports by another name).
Nothing is imported to build the graph, so a broken module cannot hide its edges.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core" / "hlort"
PLUGINS = REPO / "plugins"


@dataclass(frozen=True)
class ImportEdge:
    """``source`` imports ``target`` (both dotted module names) at ``path:line``."""

    source: str
    target: str
    path: Path
    line: int
    type_checking: bool  # under ``if TYPE_CHECKING:``: never runs
    in_function: bool  # deferred until the function runs
    registration: bool  # an ``OpRegistry(modules=...)`` entry: loaded on the registry's first read

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def package_roots() -> dict[str, Path]:
    """``{top-level package: its directory}``: hlort and every ``plugins/*/hlort_*`` package."""
    roots = {"hlort": CORE}
    for plugin_dir in sorted(PLUGINS.iterdir()):
        for package in sorted(plugin_dir.glob("hlort_*")):
            if (package / "__init__.py").is_file():
                roots[package.name] = package
    return roots


def plugin_packages() -> dict[str, Path]:
    """Every plugin package in plugins/ (found, never listed by hand)."""
    return {name: path for name, path in package_roots().items() if name != "hlort"}


def _modules(roots: dict[str, Path]) -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is_package)}`` for every .py file under the roots."""
    out = {}
    for name, directory in roots.items():
        for path in sorted(directory.rglob("*.py")):
            parts = [name, *path.relative_to(directory).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
        for path in sorted(directory.rglob("*.so")):  # compiled extensions import too
            parts = [name, *path.relative_to(directory).parent.parts, path.name.split(".")[0]]
            out.setdefault(".".join(parts), (path, False))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _literal_strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [s for e in node.elts for s in _literal_strings(e)]
    return []


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool):
        self.module, self.is_package = module, is_package
        self.found: list[tuple[str, int, tuple[bool, bool, bool], list[str]]] = []
        self._type_checking = 0
        self._functions = 0

    def _flags(self, registration: bool = False) -> tuple[bool, bool, bool]:
        return (self._type_checking > 0, self._functions > 0, registration)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking += 1
            for child in node.body:
                self.visit(child)
            self._type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self._flags(), []))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".")
            if not self.is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [alias.name for alias in node.names]
        self.found.append((prefix, node.lineno, self._flags(), names))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        literals = []
        if name == "import_module" and node.args:
            literals = _literal_strings(node.args[0])
        elif name == "OpRegistry":
            literals = [
                s
                for k in node.keywords
                if k.arg in ("modules", "later_modules")
                for s in _literal_strings(k.value)
            ]
        for literal in literals:
            flags = self._flags(registration=name == "OpRegistry")
            self.found.append((literal, node.lineno, flags, []))
        self.generic_visit(node)


def _resolve(name: str, modules) -> str | None:
    """The longest prefix of ``name`` that is a module of the tree (None for third-party)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def collect_edges() -> list[ImportEdge]:
    modules = _modules(package_roots())
    edges = []
    for module, (path, is_package) in modules.items():
        if path.suffix != ".py":
            continue
        collector = _ImportCollector(module, is_package)
        collector.visit(ast.parse(path.read_text(), str(path)))
        for prefix, line, flags, names in collector.found:
            # ``from pkg import sub`` imports the module pkg.sub; ``from mod import name`` mod
            targets = [
                f"{prefix}.{n}" if f"{prefix}.{n}" in modules else prefix for n in names
            ] or [prefix]
            for target in dict.fromkeys(targets):
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != module:
                    edges.append(ImportEdge(module, resolved, path, line, *flags))
    return edges


@pytest.fixture(scope="session")
def import_edges() -> list[ImportEdge]:
    return collect_edges()


@pytest.fixture(scope="session")
def plugin_package_names() -> set[str]:
    return set(plugin_packages())
