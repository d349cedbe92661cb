"""Geometry for the inline SVGs (decay curve, graph), computed here and drawn by the
templates: the markup stays in Jinja, where every label is escaped."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from ..agentmem.records import Edge

CURVE_W, CURVE_H, PAD = 560.0, 180.0, 30.0
GRAPH_W, GRAPH_H = 720.0, 520.0
LABEL_CHARS = 36


@dataclass(frozen=True)
class Curve:
    """A retrievability curve: the polyline, its axis ticks and where R crosses 0.9."""

    points: str  # "x,y x,y ..." (numbers only)
    ticks: tuple[tuple[float, str], ...]  # (x, label) along the day axis
    now_r: float
    width: float = CURVE_W + 2 * PAD
    height: float = CURVE_H + 2 * PAD
    left: float = PAD
    top: float = PAD
    bottom: float = PAD + CURVE_H
    right: float = PAD + CURVE_W

    def y(self, r: float) -> float:
        """The y of retrievability ``r`` (for the gridlines)."""
        return PAD + (1.0 - r) * CURVE_H


def curve(r_at: Callable[[float], float], days: int = 180, step: int = 5) -> Curve:
    """The curve of ``r_at(days_from_now)`` over the next ``days`` days."""
    xs = list(range(0, days + 1, step))
    pts = [
        (PAD + d / days * CURVE_W, PAD + (1.0 - min(1.0, max(0.0, r_at(d)))) * CURVE_H) for d in xs
    ]
    ticks = tuple((PAD + d / days * CURVE_W, f"{d} d") for d in range(0, days + 1, 30))
    return Curve(" ".join(f"{x:.1f},{y:.1f}" for x, y in pts), ticks, r_at(0))


@dataclass(frozen=True)
class Node:
    """A node of the drawn graph: a memory (``link`` to its page) or an entity."""

    key: str
    label: str
    x: float
    y: float
    kind: str  # center | memory | entity
    link: str | None  # the page it opens: /memory/ID or /graph?entity=NAME


@dataclass(frozen=True)
class Line:
    """A drawn edge with its type and (decayed) confidence."""

    x1: float
    y1: float
    x2: float
    y2: float
    type: str
    confidence: float
    width: float


@dataclass(frozen=True)
class Graph:
    """The neighbourhood of one memory, laid out on a circle around it."""

    nodes: tuple[Node, ...]
    lines: tuple[Line, ...]
    width: float = GRAPH_W
    height: float = GRAPH_H


def short(text: str, n: int = LABEL_CHARS) -> str:
    """One line of at most ``n`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def graph(
    center: str, center_label: str, edges: Sequence[Edge], label: Callable[[str], str]
) -> Graph:
    """A radial layout: the memory in the middle, each other end of its edges on a
    circle (one node per end, its strongest edge drawn), labels from ``label(id)``."""
    cx, cy = GRAPH_W / 2, GRAPH_H / 2
    best: dict[str, Edge] = {}
    for e in edges:
        other = e.dst if e.src == center else e.src
        if other != center and (other not in best or e.confidence > best[other].confidence):
            best[other] = e
    others = sorted(best)
    nodes = [Node(center, short(center_label), cx, cy, "center", None)]
    lines = []
    radius = min(cx, cy) - 70
    for i, other in enumerate(others):
        angle = 2 * math.pi * i / max(1, len(others)) - math.pi / 2
        x, y = cx + radius * math.cos(angle), cy + radius * math.sin(angle)
        entity = other.startswith("entity:")
        text = other.removeprefix("entity:") if entity else label(other)
        link = (
            f"/graph?{urlencode({'entity': text})}"
            if entity
            else f"/memory/{quote(other, safe='')}"
        )
        nodes.append(Node(other, short(text), x, y, "entity" if entity else "memory", link))
        e = best[other]
        lines.append(Line(cx, cy, x, y, e.type, e.confidence, 1.0 + 4.0 * e.confidence))
    return Graph(tuple(nodes), tuple(lines))


__all__ = ["Curve", "Graph", "Line", "Node", "curve", "graph", "short"]
