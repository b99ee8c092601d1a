"""hlort.graph: the softmax seed program drawn after the passes, by both layouts, and the
pages rendered by headless Chromium (skipped, with the reason, where it is not installed)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

import pytest

from hlort import examples
from hlort.cli import main
from hlort.graph import build_graph, module_html, module_svg
from hlort.graph.graphviz_dot import dot_available, to_dot
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.printer import print_module

SVG = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@pytest.fixture(scope="module")
def fused():
    module, _ = examples.softmax_relu_matmul(4, 8, 16)
    run_default_pipeline(module)
    return module


def test_the_fusion_is_a_cluster_with_its_kernel_inside(fused):
    graph = build_graph(fused.entry)
    assert len(graph.clusters) >= 1
    (fusion,) = [c for c in graph.clusters.values() if "exponential" in str(graph.members(c.id))]
    inside = {graph.nodes[n].lines[1] for n in graph.members(fusion.id)}
    assert {"exponential", "reduce", "maximum"} <= inside
    outside = {graph.nodes[n].lines[1] for n in graph.members(None)}
    assert "dot" in outside and "exponential" not in outside
    labels = {e.label for e in graph.edges}
    assert "f32[4,16]" in labels and "f32[4]" in labels  # shapes on the edges
    for param in fusion.parameters.values():  # every fused parameter is fed from outside
        assert any(e.target == param and graph.nodes[e.source].cluster is None for e in graph.edges)


def _boxes(svg: str, cls: str) -> dict[str, tuple[float, float, float, float]]:
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if cls in g.get("class", "").split():
            rect = g.find(f"{SVG}rect")
            out[g.get("data-name")] = tuple(
                float(rect.get(k)) for k in ("x", "y", "width", "height")
            )
    return out


def test_the_python_layout_is_readable_and_deterministic(fused):
    svg = module_svg(fused, engine="python")
    assert svg == module_svg(fused, engine="python")  # same input, same picture
    nodes, clusters = _boxes(svg, "node"), _boxes(svg, "cluster")
    graph = build_graph(fused.entry)
    assert set(nodes) == set(graph.nodes) and set(clusters) == set(graph.clusters)
    items = sorted(nodes.items())
    for i, (a, (ax, ay, aw, ah)) in enumerate(items):  # no two boxes overlap
        for b, (bx, by, bw, bh) in items[i + 1 :]:
            apart = ax + aw <= bx or bx + bw <= ax or ay + ah <= by or by + bh <= ay
            assert apart, f"{a} overlaps {b}"
    for name, (x, y, w, h) in nodes.items():  # members inside their cluster, others outside
        cluster = graph.nodes[name].cluster
        for cid, (cx, cy, cw, ch) in clusters.items():
            inside = cx <= x and x + w <= cx + cw and cy <= y and y + h <= cy + ch
            disjoint = x + w <= cx or cx + cw <= x or y + h <= cy or cy + ch <= y
            assert inside if cid == cluster else disjoint, f"{name} vs cluster {cid}"
    for edge in graph.edges:  # operands above their users
        assert nodes[edge.source][1] < nodes[edge.target][1]


@pytest.mark.skipif(not dot_available(), reason="Graphviz's dot is not installed")
def test_graphviz_draws_the_same_graph_with_clusters(fused):
    graph = build_graph(fused.entry)
    assert 'subgraph "cluster_' in to_dot(graph)
    svg = module_svg(fused, engine="dot")
    root = ET.fromstring(svg)
    ids = {g.get("id") for g in root.iter(f"{SVG}g")}
    assert {f"node:{n}" for n in graph.nodes} <= ids
    assert {f"cluster:{c}" for c in graph.clusters} <= ids


def test_hlort_graph_and_compile_dump_graph_write_pages(fused, tmp_path, capsys):
    source = tmp_path / "softmax.hlo"
    module, _ = examples.softmax_relu_matmul(4, 8, 16)
    source.write_text(print_module(module))
    out = tmp_path / "g.html"
    assert main(["graph", str(source), "-o", str(out), "--engine", "python"]) == 0
    assert out.read_text().count('class="node ') == len(build_graph(module.entry).nodes)
    dump = tmp_path / "dump"
    argv = ["compile", str(source), "--platform", "interpreter", "--dump-dir", str(dump)]
    assert main([*argv, "--graph", "--graph-engine", "python"]) == 0
    pages = sorted(p.name for p in dump.glob("*.html"))
    hlos = sorted(p.stem for p in dump.glob("*.hlo"))
    assert {f"{h}.html" for h in hlos} <= set(pages) and "index.html" in pages
    index = (dump / "index.html").read_text()
    assert all(f'href="{h}.html"' in index for h in hlos)
    assert main(["compile", str(source), "--graph"]) == 2  # --graph needs --dump-dir
    assert "--dump-dir" in capsys.readouterr().err


def _chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("engine", ["python", "dot"])
def test_chromium_renders_the_page(fused, tmp_path, engine):
    if engine == "dot" and not dot_available():
        pytest.skip("Graphviz's dot is not installed")
    page = tmp_path / "softmax.html"
    page.write_text(module_html(fused, engine=engine))
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    graph = build_graph(fused.entry)
    assert "<svg" in dom.stdout and "exponential" in dom.stdout
    assert dom.stdout.count('class="node ') >= len(graph.nodes)
    shot = tmp_path / "shot.png"
    run = _chromium(f"--screenshot={shot}", "--window-size=800,900", page.as_uri())
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    width, height, raw = _png_pixels(shot.read_bytes())
    assert (width, height) == (800, 900)
    assert len(set(raw)) > 16  # not a blank page: text, box fills and edges
