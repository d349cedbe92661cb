"""The "when" signal of auto recall: time expressions in the query against each
candidate's ``created_at``.

Rules, no model: an absolute date ("October 13, 2023", "1 February, 2023", "May 2023",
"in 2023", "in June"), or one relative to the clock ("yesterday", "last week", "last
month", "last year", "3 days ago"). A month without a year matches that month of any
year. Candidates are ranked by their distance in time to the window the query names
(inside it: 0); a query that names no time, a window every candidate is as far from, or
one no candidate lies inside, gives no list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

DAY_US = 86_400_000_000
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_RE = (
    r"(?P<month>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_YEAR_RE = r"(?P<year>(?:19|20)\d\d)"
# Capitalised month names only: "may" and "march" are also verbs.
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH_RE}\.? (?P<day>\d{{1,2}})(?:st|nd|rd|th)?,? {_YEAR_RE}\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)? {_MONTH_RE},? {_YEAR_RE}\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH_RE},? {_YEAR_RE}\b")
_MONTH_ONLY = re.compile(rf"\b(?:in|during|of|since|last) {_MONTH_RE}\b")
_YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since) {_YEAR_RE}\b")
_AGO = re.compile(
    r"\b(?P<n>\d+|a|one|two|three|four|five|six) (?P<unit>day|week|month|year)s? ago\b", re.I
)
_LAST = re.compile(r"\b(?P<which>yesterday|today|last (?:week|month|year))\b", re.I)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class Window:
    """A span of time the query names: [start_us, end_us), or a month of any year."""

    start_us: int = 0
    end_us: int = 0
    month: int | None = None  # set for a month without a year

    def distance_us(self, at_us: int) -> int:
        """How far ``at_us`` lies outside the window (0 inside)."""
        if self.month is not None:
            at = datetime.fromtimestamp(at_us / 1e6, UTC)
            starts = [_month_start(y, self.month) for y in (at.year - 1, at.year, at.year + 1)]
            return min(_outside(at_us, s, _month_start_after(s)) for s in starts)
        return _outside(at_us, self.start_us, self.end_us)


def _outside(at_us: int, start_us: int, end_us: int) -> int:
    return 0 if start_us <= at_us < end_us else min(abs(at_us - start_us), abs(at_us - end_us))


def _us(d: datetime) -> int:
    return int(d.timestamp() * 1_000_000)


def _month_start(year: int, month: int) -> int:
    return _us(datetime(year, month, 1, tzinfo=UTC))


def _month_start_after(start_us: int) -> int:
    d = datetime.fromtimestamp(start_us / 1e6, UTC)
    return _month_start(d.year + (d.month == 12), d.month % 12 + 1)


def _month(name: str) -> int:
    return _MONTHS.index(name[:3].lower()) + 1


def window(query: str, now_us: int) -> Window | None:
    """The time window ``query`` names, or None (the first expression found wins, the
    most precise form first)."""
    for pattern in (_MONTH_DAY_YEAR, _DAY_MONTH_YEAR):
        if m := pattern.search(query):
            try:
                day = datetime(int(m["year"]), _month(m["month"]), int(m["day"]), tzinfo=UTC)
            except ValueError:
                continue  # "February 30"
            return Window(_us(day), _us(day + timedelta(days=1)))
    if m := _MONTH_YEAR.search(query):
        start = _month_start(int(m["year"]), _month(m["month"]))
        return Window(start, _month_start_after(start))
    if m := _YEAR_ONLY.search(query):
        year = int(m["year"])
        return Window(
            _us(datetime(year, 1, 1, tzinfo=UTC)), _us(datetime(year + 1, 1, 1, tzinfo=UTC))
        )
    if m := _MONTH_ONLY.search(query):
        return Window(month=_month(m["month"]))
    if m := _AGO.search(query):
        n = _NUMBERS.get(m["n"].lower()) or int(m["n"])
        days = n * _UNIT_DAYS[m["unit"].lower()]
        slack = max(1, days // 4)  # "3 weeks ago" is not to the day
        centre = now_us - days * DAY_US
        return Window(centre - slack * DAY_US, centre + slack * DAY_US)
    if m := _LAST.search(query):
        which = m["which"].lower()
        back = {"today": 0, "yesterday": 1, "last week": 7, "last month": 31, "last year": 365}[
            which
        ]
        span = max(1, back)
        today = now_us - now_us % DAY_US
        return Window(today - back * DAY_US, today - back * DAY_US + span * DAY_US)
    return None


def by_time(win: Window, created_us: Mapping[int, int], order: Sequence[int]) -> list[int]:
    """``order`` by distance in time to ``win``, nearest first (ties keep ``order``);
    empty if every candidate is as far, or if none lies inside the window.

    A window no candidate falls in has nothing to say: ranking by distance to it only
    orders the candidates by age. The time a question names is often when something
    happened, not when it was said ("the museums I visited in February", told in March),
    so the nearest turns are no better than any other (LongMemEval dev, run 23 of
    BENCHMARKS.md)."""
    dist = {lab: win.distance_us(created_us[lab]) for lab in order}
    if len(set(dist.values())) <= 1 or 0 not in dist.values():
        return []
    pos = {lab: i for i, lab in enumerate(order)}
    return sorted(order, key=lambda lab: (dist[lab], pos[lab]))


__all__ = ["Window", "by_time", "window"]
