"""The same drawing through Graphviz: DOT text with a ``subgraph cluster_*`` per fusion, laid
out by the ``dot`` program when it is installed (``shutil.which("dot")``)."""

from __future__ import annotations

import re
import shutil
import subprocess

from hlort.errors import Internal, Unavailable
from hlort.graph.model import Graph
from hlort.graph.svg_render import FILL


def dot_available() -> bool:
    return shutil.which("dot") is not None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: Graph) -> str:
    lines = [
        f"digraph {_quote(graph.title)} {{",
        '  graph [rankdir=TB, fontname="DejaVu Sans Mono", fontsize=11, nodesep=0.3];',
        '  node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=11];',
        '  edge [fontname="DejaVu Sans Mono", fontsize=9, fontcolor="#5f3dc4", color="#495057"];',
    ]

    def emit(cluster: str | None, indent: str) -> None:
        for node_id in graph.members(cluster):
            node = graph.nodes[node_id]
            label = "\\n".join(
                line.replace("\\", "\\\\").replace('"', '\\"') for line in node.lines
            )
            width = ", penwidth=2.5" if node.is_root else ""
            lines.append(
                f"{indent}{_quote(node_id)} [id={_quote('node:' + node_id)}, "
                f'label="{label}", fillcolor="{FILL[node.category]}", '
                f"class={_quote('node ' + node.category)}, tooltip={_quote(node.tooltip)}{width}];"
            )
        for cluster_id, info in graph.clusters.items():
            parent = cluster_id.rsplit("/", 1)[0] if "/" in cluster_id else None
            if (parent if parent in graph.clusters else None) != cluster:
                continue
            lines.append(f"{indent}subgraph {_quote('cluster_' + cluster_id)} {{")
            lines.append(
                f'{indent}  label={_quote(info.label)}; style="rounded,dashed,filled"; '
                f'fillcolor="#f1f3ff"; color="#5c7cfa"; fontcolor="#364fc7"; '
                f'id={_quote("cluster:" + cluster_id)}; class="cluster";'
            )
            emit(cluster_id, indent + "  ")
            lines.append(f"{indent}}}")

    emit(None, "  ")
    for edge in graph.edges:
        lines.append(
            f"  {_quote(edge.source)} -> {_quote(edge.target)} [label={_quote(edge.label)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg_with_dot(graph: Graph, timeout_s: float = 60.0) -> str:
    """SVG from Graphviz (UNAVAILABLE without ``dot``); the XML prologue is dropped so it can
    be inlined in a page."""
    exe = shutil.which("dot")
    if exe is None:
        raise Unavailable(
            "Graphviz's `dot` is not installed; install graphviz or use --engine python"
        )
    try:
        done = subprocess.run(
            [exe, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise Internal(f"dot took over {timeout_s} s to lay out {graph.title}") from None
    if done.returncode != 0:
        raise Internal(f"dot failed on {graph.title}: {done.stderr.strip()[:500]}")
    svg = done.stdout[done.stdout.find("<svg") :]
    return re.sub(r"<svg ", '<svg class="hlort-graph" ', svg, count=1)
