"""Module -> HTML page with an SVG graph of its entry computation (fusions as clusters)."""

from __future__ import annotations

from hlort.errors import InvalidArgument
from hlort.graph.graphviz_dot import dot_available, render_svg_with_dot
from hlort.graph.html_page import html_page
from hlort.graph.model import build_graph
from hlort.graph.svg_render import render_svg
from hlort.ir.module import Module

ENGINES = ("auto", "dot", "python")


def choose_engine(engine: str = "auto") -> str:
    """``dot`` when asked, or for ``auto`` when Graphviz is installed; else ``python``."""
    if engine not in ENGINES:
        raise InvalidArgument(f"graph engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "auto":
        return "dot" if dot_available() else "python"
    return engine


def module_svg(module: Module, engine: str = "auto") -> str:
    graph = build_graph(module.entry, module.name)
    if choose_engine(engine) == "dot":
        return render_svg_with_dot(graph)
    return render_svg(graph)


def module_html(module: Module, title: str | None = None, engine: str = "auto") -> str:
    """The page for ``module``; ``title`` defaults to the module's name."""
    used = choose_engine(engine)
    count = module.instruction_count()
    subtitle = f"{count} instructions; entry {module.entry.name}; layout: {used}"
    return html_page(title or module.name, module_svg(module, used), subtitle)
