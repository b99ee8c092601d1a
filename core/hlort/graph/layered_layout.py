"""A pure-Python layered (Sugiyama-style) layout, for machines without Graphviz.

Top to bottom: operands above their users. Each fusion cluster is laid out first, on its own,
and then placed in its parent's layout as one big box (a compound node), so clusters never
overlap other boxes. Within one level the steps are the classic ones: layers by longest path
(sources other than a cluster's parameters pulled down next to their first user), dummy points
on edges that span layers, crossings reduced by barycenter sweeps (the best ordering seen is
kept), then x positions pulled towards neighbours and pushed apart to a minimum gap. Nothing
depends on hashing or timing: the same graph always gives the same picture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlort.graph.model import Graph

CHAR_W = 7.2  # 12 px monospace
LINE_H = 15.0
PAD_X, PAD_Y = 10.0, 7.0
GAP_X, GAP_Y = 28.0, 44.0
CLUSTER_PAD, CLUSTER_LABEL = 14.0, 22.0
SWEEPS = 12


@dataclass
class Box:
    x: float = 0.0  # top-left, absolute once placed
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


@dataclass
class Layout:
    width: float
    height: float
    nodes: dict[str, Box] = field(default_factory=dict)
    clusters: dict[str, Box] = field(default_factory=dict)
    routes: list[list[tuple[float, float]]] = field(default_factory=list)  # per graph.edges


def node_size(lines: list[str]) -> tuple[float, float]:
    width = max(len(line) for line in lines) * CHAR_W + 2 * PAD_X
    return max(width, 60.0), len(lines) * LINE_H + 2 * PAD_Y


def layout(graph: Graph) -> Layout:
    """Positions of every node and cluster box, and a polyline per edge."""
    result = Layout(0, 0)
    waypoints: dict[tuple, list[tuple[float, float]]] = {}
    width, height = _layout_level(graph, None, result, waypoints)
    _place(graph, None, result, 0.0, 0.0)
    result.width, result.height = width, height
    owner = {n.id: n.cluster for n in graph.nodes.values()}
    for edge in graph.edges:
        src, dst = result.nodes[edge.source], result.nodes[edge.target]
        points = [(src.cx, src.y + src.h)]
        level = _common_level(graph, owner, edge.source, edge.target)
        ox, oy = _offset(result, level)
        points += [
            (x + ox, y + oy) for x, y in waypoints.get((level, edge.source, edge.target), [])
        ]
        points.append((dst.cx, dst.y))
        result.routes.append(points)
    return result


def _offset(result: Layout, level: str | None) -> tuple[float, float]:
    if level is None:
        return 0.0, 0.0
    box = result.clusters[level]
    return box.x + CLUSTER_PAD, box.y + CLUSTER_LABEL


def _ancestors(graph: Graph, owner: dict[str, str | None], node: str) -> list[str | None]:
    chain: list[str | None] = []
    cluster = owner[node]
    while cluster is not None:
        chain.append(cluster)
        parent = cluster.rsplit("/", 1)[0] if "/" in cluster else None
        cluster = parent if parent in graph.clusters else None
    return [*chain, None]


def _common_level(graph: Graph, owner, a: str, b: str) -> str | None:
    up_b = _ancestors(graph, owner, b)
    for level in _ancestors(graph, owner, a):
        if level in up_b:
            return level
    return None


def _representative(graph: Graph, owner, node: str, level: str | None) -> str:
    """The item at ``level`` that contains ``node``: itself, or the cluster around it."""
    chain = [node, *[c for c in _ancestors(graph, owner, node) if c is not None]]
    for item in chain:
        parent = owner.get(item) if item in owner else _parent_cluster(graph, item)
        if parent == level:
            return item
    return chain[-1]


def _parent_cluster(graph: Graph, cluster: str) -> str | None:
    parent = cluster.rsplit("/", 1)[0] if "/" in cluster else None
    return parent if parent in graph.clusters else None


def _layout_level(graph: Graph, level: str | None, result: Layout, waypoints: dict):
    """Lays out the items directly inside ``level`` (positions relative to it), adds the dummy
    points of edges routed at this level to ``waypoints``; returns its content size."""
    owner = {n.id: n.cluster for n in graph.nodes.values()}
    items = [n for n in graph.nodes if owner[n] == level]
    items += [c for c in graph.clusters if _parent_cluster(graph, c) == level]
    sizes: dict[str, tuple[float, float]] = {}
    for item in items:
        if item in graph.clusters:
            w, h = _layout_level(graph, item, result, waypoints)
            sizes[item] = (w + 2 * CLUSTER_PAD, h + CLUSTER_LABEL + CLUSTER_PAD)
        else:
            sizes[item] = node_size(graph.nodes[item].lines)
    index = {item: i for i, item in enumerate(items)}
    ports: dict[tuple[str, str], float] = {}
    succ: dict[str, list[str]] = {i: [] for i in items}
    pred: dict[str, list[str]] = {i: [] for i in items}
    level_edges = []
    for edge in graph.edges:
        if _common_level(graph, owner, edge.source, edge.target) != level:
            continue
        a = _representative(graph, owner, edge.source, level)
        b = _representative(graph, owner, edge.target, level)
        if a != b:
            succ[a].append(b)
            pred[b].append(a)
            level_edges.append((edge, a, b))
            ports[(a, b)] = _port(result, sizes, b, edge.target)
            ports[(b, a)] = _port(result, sizes, a, edge.source)
    rank = _ranks(items, pred, succ, pinned_top=level is not None, graph=graph)
    # dummy points on long edges
    layers: dict[int, list[str]] = {}
    chains: dict[tuple, list[str]] = {}
    for item in items:
        layers.setdefault(rank[item], []).append(item)
    for edge, a, b in level_edges:
        chain = []
        for r in range(rank[a] + 1, rank[b]):
            dummy = f"\0{edge.source}>{edge.target}@{r}#{len(chains)}"
            sizes[dummy] = (8.0, LINE_H)
            layers.setdefault(r, []).append(dummy)
            chain.append(dummy)
        chains[(level, edge.source, edge.target, len(chains))] = chain
        links = [a, *chain, b]
        for u, v in zip(links, links[1:], strict=False):
            succ.setdefault(u, []).append(v)
            pred.setdefault(v, []).append(u)
            pred.setdefault(u, [])
            succ.setdefault(v, [])
    order = [sorted(layers[r], key=lambda i: index.get(i, len(index))) for r in sorted(layers)]
    order = _reduce_crossings(order, pred, succ, ports)
    xs = _x_positions(order, sizes, pred, succ)
    ys, height = {}, 0.0
    for layer in order:
        tallest = max(sizes[i][1] for i in layer)
        for item in layer:
            ys[item] = height
        height += tallest + GAP_Y
    height -= GAP_Y
    width = max((xs[i] + sizes[i][0] for layer in order for i in layer), default=0.0)
    for layer in order:
        for item in layer:
            if item.startswith("\0"):
                continue
            box = Box(xs[item], ys[item], *sizes[item])
            (result.clusters if item in graph.clusters else result.nodes)[item] = box
    for (lvl, source, target, _), chain in chains.items():
        waypoints[(lvl, source, target)] = [(xs[d] + 4.0, ys[d] + LINE_H / 2) for d in chain]
    return max(width, 60.0), max(height, LINE_H)


def _ranks(items, pred, succ, pinned_top: bool, graph: Graph) -> dict[str, int]:
    rank: dict[str, int] = {}

    def visit(item: str, stack: set) -> int:
        if item in rank:
            return rank[item]
        stack.add(item)
        r = 0
        for p in pred[item]:
            if p not in stack:
                r = max(r, visit(p, stack) + 1)
        stack.discard(item)
        rank[item] = r
        return r

    for item in items:
        visit(item, set())
    for item in reversed(items):  # sources sit just above their first user
        is_param = item in graph.nodes and graph.nodes[item].category == "parameter"
        if pred[item] or not succ[item] or (pinned_top and is_param):
            continue
        rank[item] = max(0, min(rank[s] for s in succ[item]) - 1)
    return rank


def _crossings(order, succ, ports) -> int:
    """Crossings between adjacent layers, counting where edges attach inside clusters."""
    total = 0
    for upper, lower in zip(order, order[1:], strict=False):
        pos = {v: i for i, v in enumerate(lower)}
        pairs = [
            (i + ports.get((v, u), 0.0), pos[v] + ports.get((u, v), 0.0))
            for i, u in enumerate(upper)
            for v in succ.get(u, [])
            if v in pos
        ]
        for k, (a1, b1) in enumerate(pairs):
            for a2, b2 in pairs[k + 1 :]:
                if (a1 - a2) * (b1 - b2) < 0:
                    total += 1
    return total


def _port(result: Layout, sizes, item: str, node: str) -> float:
    """Where ``node`` sits across ``item`` (a cluster laid out already, positions relative to
    it): -0.5 (left edge) .. 0.5 (right edge); 0 for a plain node."""
    if item == node or node not in result.nodes:
        return 0.0
    return (result.nodes[node].cx + CLUSTER_PAD) / sizes[item][0] - 0.5


def _reduce_crossings(order, pred, succ, ports):
    best, best_count = [list(layer) for layer in order], _crossings(order, succ, ports)
    current = [list(layer) for layer in order]
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        indices = range(1, len(current)) if down else range(len(current) - 2, -1, -1)
        for r in indices:
            fixed = current[r - 1] if down else current[r + 1]
            pos = {v: i for i, v in enumerate(fixed)}
            neighbours = pred if down else succ

            def key(item, r=r, pos=pos, neighbours=neighbours):
                near = [
                    pos[n] + ports.get((item, n), 0.0) for n in neighbours.get(item, []) if n in pos
                ]
                here = current[r].index(item)
                return (sum(near) / len(near) if near else here, here)

            current[r] = sorted(current[r], key=key)
        count = _crossings(current, succ, ports)
        if count < best_count:
            best, best_count = [list(layer) for layer in current], count
    return best


def _x_positions(order, sizes, pred, succ) -> dict[str, float]:
    xs: dict[str, float] = {}
    for layer in order:
        x = 0.0
        for item in layer:
            xs[item] = x
            x += sizes[item][0] + GAP_X
    for sweep in range(8):
        layers = order if sweep % 2 == 0 else list(reversed(order))
        neighbours = pred if sweep % 2 == 0 else succ
        for layer in layers:
            want = {}
            for item in layer:
                near = [xs[n] + sizes[n][0] / 2 for n in neighbours.get(item, [])]
                centre = sum(near) / len(near) if near else xs[item] + sizes[item][0] / 2
                want[item] = centre - sizes[item][0] / 2
            _pack(layer, want, sizes, xs)
    low = min(xs.values(), default=0.0)
    return {k: v - low for k, v in xs.items()}


def _pack(layer, want, sizes, xs) -> None:
    """Positions as close to ``want`` as the order and the gap allow (left and right passes
    averaged)."""
    left, right = {}, {}
    edge = -1e18
    for item in layer:
        left[item] = max(want[item], edge)
        edge = left[item] + sizes[item][0] + GAP_X
    edge = 1e18
    for item in reversed(layer):
        right[item] = min(want[item], edge - sizes[item][0])
        edge = right[item] - GAP_X
    for item in layer:
        xs[item] = (left[item] + right[item]) / 2
    edge = -1e18
    for item in layer:  # averaging may bring neighbours too close: one more left pass
        xs[item] = max(xs[item], edge)
        edge = xs[item] + sizes[item][0] + GAP_X


def _place(graph: Graph, level: str | None, result: Layout, dx: float, dy: float) -> None:
    """Turns positions relative to each cluster into absolute ones."""
    owner = {n.id: n.cluster for n in graph.nodes.values()}
    for node_id, box in result.nodes.items():
        if owner[node_id] == level:
            box.x += dx
            box.y += dy
    for cluster_id, box in result.clusters.items():
        if _parent_cluster(graph, cluster_id) == level:
            box.x += dx
            box.y += dy
            _place(graph, cluster_id, result, box.x + CLUSTER_PAD, box.y + CLUSTER_LABEL)
