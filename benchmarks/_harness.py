"""Shared pieces of the benchmark harness: figures, paired timing, the table, the JSON.

On a shared 2-core machine absolute timings drift by tens of percent within a minute, so
every speed figure is a ratio against an anchor (the raw library doing the same work)
measured in the same run, with ours and the anchor interleaved and the median taken.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class Figure:
    """One row of the table: our figure beside its anchor, the goal and the verdict."""

    group: str  # the --only name that produces it
    name: str  # stable machine-readable key
    label: str  # what the table row says
    ours: float  # in ``unit``
    unit: str
    anchor: float | None = None  # same unit as ``ours`` unless ``anchor_unit`` says otherwise
    anchor_label: str = ""  # what the anchor is (the raw library call)
    ratio: float | None = None  # ours / anchor (or as ``goal`` explains)
    goal: str = ""
    passed: bool | None = None  # None: no goal, or not judged (e.g. a skipped peer)
    trials: int = 1
    note: str = ""
    anchor_unit: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


@dataclass
class Skipped:
    """A group that did not run, and why (missing data or peer)."""

    group: str
    reason: str


def median(xs: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    return float(statistics.median(xs))


def pct(xs: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (linear interpolation)."""
    return float(np.percentile(np.asarray(xs, dtype=np.float64), p))


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


@dataclass
class Paired:
    """Interleaved trials of ours and an anchor (seconds each)."""

    ours: list[float]
    anchor: list[float]

    @property
    def ratio(self) -> float:
        """Median over trials of ours/anchor, each ours paired with the anchor run beside it."""
        return median([o / a for o, a in zip(self.ours, self.anchor, strict=True)])

    @property
    def trials(self) -> int:
        return len(self.ours)


def paired(ours: Callable[[int], float], anchor: Callable[[int], float], trials: int) -> Paired:
    """Run ``trials`` pairs, alternating which goes first so drift favours neither.

    Each callable gets the trial number and returns the seconds of the measured part
    (setup such as creating a fresh directory stays outside the timing).
    """
    p = Paired([], [])
    for i in range(trials):
        if i % 2 == 0:
            p.anchor.append(anchor(i))
            p.ours.append(ours(i))
        else:
            p.ours.append(ours(i))
            p.anchor.append(anchor(i))
    return p


def fmt(value: float | None, unit: str) -> str:
    """A value with its unit, at a sensible precision."""
    if value is None:
        return "—"
    if unit in ("/s", "docs/s", "chunks/s", "rows/s"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:.3f} ms" if value < 10 else f"{value:,.1f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    if unit == "":
        return f"{value:.4f}"
    return f"{value:.3g} {unit}"


def table(figures: Sequence[Figure], skipped: Sequence[Skipped]) -> str:
    """The markdown table (and the skipped groups below it)."""
    out = [
        "| figure | ours | anchor | ratio | goal | pass |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        anchor = fmt(f.anchor, f.anchor_unit or f.unit)
        if f.anchor_label:
            anchor = f"{anchor} ({f.anchor_label})" if f.anchor is not None else f.anchor_label
        ratio = "—" if f.ratio is None else f"{f.ratio:.2f}×"
        verdict = {True: "pass", False: "**MISS**", None: "—"}[f.passed]
        label = f.label + (f" <br>*{f.note}*" if f.note else "")
        out.append(f"| {label} | {fmt(f.ours, f.unit)} | {anchor} | {ratio} | {f.goal} "
                   f"| {verdict} |")
    for s in skipped:
        out.append(f"| *{s.group}: skipped* | — | — | — | {s.reason} | — |")
    return "\n".join(out)
