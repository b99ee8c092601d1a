"""The self-contained HTML page around a graph: no scripts, no external files, so it opens
from a dump directory on any machine."""

from __future__ import annotations

from html import escape

from hlort.graph.svg_render import FILL

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 16px; color: #212529; }
h1 { font-size: 18px; margin: 0 0 4px 0; }
.meta { color: #495057; font-size: 13px; margin-bottom: 10px; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 6px;
  border: 1px solid #adb5bd;
  border-radius: 4px; font-size: 12px; }
.graph { overflow: auto; border-top: 1px solid #dee2e6; padding-top: 10px; }
"""


def html_page(title: str, svg: str, subtitle: str = "") -> str:
    legend = "".join(
        f'<span style="background:{colour}">{escape(name)}</span>' for name, colour in FILL.items()
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{escape(title)}</h1><div class="meta">{escape(subtitle)}</div>'
        f'<div class="legend">{legend}</div><div class="graph">{svg}</div></body></html>\n'
    )
