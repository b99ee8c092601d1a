"""Pictures of modules: HTML pages with SVG graphs, like XLA's HLO graph dumps."""

from hlort.graph.model import Graph, build_graph  # noqa: F401
from hlort.graph.render import ENGINES, choose_engine, module_html, module_svg  # noqa: F401
