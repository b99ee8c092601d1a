"""SVG of a :class:`~hlort.graph.layered_layout.Layout`: boxes, cluster frames, curved arrows
with the operand's shape on them. Colours by category, as in XLA's graph dumps (parameters
orange, heavy ops blue, reductions green, data movement yellow). Every element carries classes
and ``data-name`` attributes, so a test can find an instruction in the rendered page."""

from __future__ import annotations

from html import escape

from hlort.graph.layered_layout import LINE_H, PAD_Y, Layout, layout
from hlort.graph.model import Graph

FILL = {
    "parameter": "#ffd8a8",
    "constant": "#e9ecef",
    "heavy": "#a5d8ff",
    "reduction": "#b2f2bb",
    "data-movement": "#fff3bf",
    "control": "#eebefa",
    "elementwise": "#ffffff",
}
MARGIN = 20.0


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def render_svg(graph: Graph, placed: Layout | None = None) -> str:
    placed = placed or layout(graph)
    width, height = placed.width + 2 * MARGIN, placed.height + 2 * MARGIN
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="hlort-graph" '
        f'width="{_fmt(width)}" height="{_fmt(height)}" '
        f'viewBox="{_fmt(-MARGIN)} {_fmt(-MARGIN)} {_fmt(width)} {_fmt(height)}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#495057"/></marker></defs>',
    ]
    for cluster_id in sorted(placed.clusters, key=lambda c: c.count("/")):
        box, cluster = placed.clusters[cluster_id], graph.clusters[cluster_id]
        out.append(
            f'<g class="cluster" data-name="{escape(cluster_id)}">'
            f'<rect x="{_fmt(box.x)}" y="{_fmt(box.y)}" width="{_fmt(box.w)}" '
            f'height="{_fmt(box.h)}" rx="8" fill="#f1f3ff" fill-opacity="0.6" '
            f'stroke="#5c7cfa" stroke-dasharray="5,3"/>'
            f'<text x="{_fmt(box.x + 10)}" y="{_fmt(box.y + 15)}" font-weight="bold" '
            f'fill="#364fc7">{escape(cluster.label)}</text></g>'
        )
    for edge, points in zip(graph.edges, placed.routes, strict=True):
        out.append(
            f'<g class="edge" data-source="{escape(edge.source)}" '
            f'data-target="{escape(edge.target)}"><path d="{_path(points)}" fill="none" '
            f'stroke="#495057" stroke-width="1.2" marker-end="url(#arrow)"/>'
        )
        (x0, y0), (x1, y1) = points[-2], points[-1]  # mid of the last stretch: distinct
        lx, ly = (x0 + x1) / 2 + 4, (y0 + y1) / 2 + 4  # per edge, near where it arrives
        out.append(
            f'<text class="edge-label" x="{_fmt(lx)}" y="{_fmt(ly)}" font-size="10" '
            f'fill="#5f3dc4" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
            f"{escape(edge.label)}</text></g>"
        )
    for node_id, box in placed.nodes.items():
        node = graph.nodes[node_id]
        stroke = ' stroke-width="2.5"' if node.is_root else ' stroke-width="1"'
        out.append(
            f'<g class="node {node.category}" data-name="{escape(node_id)}">'
            f"<title>{escape(node.tooltip)}</title>"
            f'<rect x="{_fmt(box.x)}" y="{_fmt(box.y)}" width="{_fmt(box.w)}" '
            f'height="{_fmt(box.h)}" rx="4" fill="{FILL[node.category]}" stroke="#212529"'
            f"{stroke}/>"
        )
        for k, line in enumerate(node.lines):
            y = box.y + PAD_Y + LINE_H * (k + 1) - 3.5
            weight = ' font-weight="bold"' if k == 1 else ""
            colour = "#868e96" if k == 0 else "#212529"
            out.append(
                f'<text x="{_fmt(box.cx)}" y="{_fmt(y)}" text-anchor="middle" '
                f'fill="{colour}"{weight}>{escape(line)}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _path(points: list[tuple[float, float]]) -> str:
    """A smooth curve through the points, vertical at each one (edges run downwards)."""
    (x, y), rest = points[0], points[1:]
    parts = [f"M{_fmt(x)},{_fmt(y)}"]
    for nx, ny in rest:
        mid = (y + ny) / 2
        parts.append(f"C{_fmt(x)},{_fmt(mid)} {_fmt(nx)},{_fmt(mid)} {_fmt(nx)},{_fmt(ny)}")
        x, y = nx, ny
    return " ".join(parts)
