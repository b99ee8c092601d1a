"""Imports run downward through hlort's layers, with no cycles (docs/architecture.md, "Layers").

A module may import its own layer and the layers below it. Edges under ``if TYPE_CHECKING:``
never run, so they are exempt from the cycle rule but not from the direction rule: naming an
upper layer's type is still depending on it. Each failure prints the offending chain.
"""

from __future__ import annotations

from collections import defaultdict

# Lowest first. A module belongs to the layer of its longest matching prefix; "hlort" (exact) is
# the package's __init__, the public API that re-exports the runtime.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "hlort.errors",
            "hlort.deferred_registrations",
            "hlort.dtypes",
            "hlort.shape",
            "hlort.limits",
            "hlort.version",
            "hlort.ffi_attributes",
            "hlort.log",
            "hlort.lazy_dataclass",
            "hlort.dataclass_methods",
            "hlort.dataclass_init",
            "hlort.sha256",
        ),
    ),
    ("ir", ("hlort.ir", "hlort.builder")),
    ("text", ("hlort.text",)),
    ("interpreter", ("hlort.interpreter",)),
    (
        "passes/importers/codegen/graph",
        ("hlort.passes", "hlort.importers", "hlort.codegen", "hlort.graph"),
    ),
    (
        "plugin API",
        (
            "hlort.plugin",
            "hlort.plugin.api",
            "hlort.plugin.capabilities",
            "hlort.plugin.options",
            "hlort.plugin.versioning",
            "hlort.plugin.hookspecs",
            "hlort.plugin.conformance_profile",
            "hlort.plugin.compile_flags",
        ),
    ),
    ("plugin base", ("hlort.plugin.base", "hlort.plugin.interpreter_backend")),
    (
        "runtime",
        (
            "hlort.runtime",
            "hlort.plugin.registry",
            "hlort.plugin.name_claims",
            "hlort.plugin.bounded_call",
            "hlort.plugin.backend_record",
            "hlort.plugin.selection_log",
        ),
    ),
    ("distributed", ("hlort.distributed",)),
    ("public API", ("hlort",)),
    ("testing", ("hlort.testing", "hlort.testdata", "hlort.testdata_runner")),
    (
        "cli",
        (
            "hlort.cli",
            "hlort.cli_graph",
            "hlort.cli_multidevice",
            "hlort.cli_run_report",
            "hlort.cli_polymorphic",
            "hlort.cli_options",
            "hlort.cli_verbosity",
            "hlort.cli_cache",
            "hlort.cli_progress",
            "hlort.demo",
            "hlort.examples",
            "hlort.plugin.new_plugin",
        ),
    ),
    ("plugins", ()),  # every plugins/*/hlort_* package
)

# Edges (source, target) both rules skip: none. An entry must break a real cycle that is being
# restructured, with the issue that removes it; the test below fails once an entry is stale.
ALLOWLIST: frozenset[tuple[str, str]] = frozenset()


def layer_of(module: str) -> int:
    if not module.startswith("hlort.") and module != "hlort":
        return len(LAYERS) - 1
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact_only = prefix == "hlort"
            hit = module == prefix or (not exact_only and module.startswith(prefix + "."))
            if hit and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS and docs/architecture.md"
    return best


def _checked(edges):
    return [e for e in edges if (e.source, e.target) not in ALLOWLIST]


def test_every_module_has_a_layer(import_edges):
    for module in {e.source for e in import_edges} | {e.target for e in import_edges}:
        layer_of(module)


def test_imports_run_downward(import_edges):
    upward = [
        f"{e.source} ({LAYERS[layer_of(e.source)][0]}) -> {e.target} "
        f"({LAYERS[layer_of(e.target)][0]}) at {e.where()}"
        + (" [TYPE_CHECKING]" if e.type_checking else "")
        for e in _checked(import_edges)
        if layer_of(e.source) < layer_of(e.target)
    ]
    assert not upward, "upward imports:\n  " + "\n  ".join(sorted(upward))


def _cycles(edges) -> list[tuple[list, list[str]]]:
    """Per strongly connected component: one shortest cycle (a list of edges) and its members."""
    graph: dict[str, dict[str, object]] = defaultdict(dict)
    for e in edges:
        graph[e.source].setdefault(e.target, e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan; the graph is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles = []
    for component in components:
        members, start = set(component), component[0]
        parents: dict[str, object] = {}
        frontier, seen, closing = [start], {start}, None
        while frontier and closing is None:  # breadth first: the shortest way back to start
            nxt = []
            for v in frontier:
                for w, e in sorted(graph[v].items()):
                    if w == start:
                        closing = e
                        break
                    if w in members and w not in seen:
                        seen.add(w)
                        parents[w] = e
                        nxt.append(w)
                if closing is not None:
                    break
            frontier = nxt
        chain = [closing]
        while chain[0].source != start:
            chain.insert(0, parents[chain[0].source])
        cycles.append((chain, component))
    return cycles


def test_no_import_cycles(import_edges):
    runtime_edges = [e for e in _checked(import_edges) if not (e.type_checking or e.registration)]
    found = [
        " -> ".join([chain[0].source] + [f"{e.target} ({e.where()})" for e in chain])
        + (
            f"\n    (one of the cycles among {len(members)} modules: {', '.join(members)})"
            if len(members) > len(chain)
            else ""
        )
        for chain, members in _cycles(runtime_edges)
    ]
    assert not found, "import cycles:\n  " + "\n  ".join(found)


def test_the_allowlists_name_only_live_edges(import_edges):
    live = {(e.source, e.target) for e in import_edges}
    gone = [
        f"{source} -> {target}"
        for source, target in sorted(ALLOWLIST)
        if (source, target) not in live
    ]
    assert not gone, "allowlisted edges that no longer exist (drop them):\n  " + "\n  ".join(gone)
