"""The "when" and "surprise" signals of auto recall: rules and ranking, and "when"
through a real store (the real embedder, an injected clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from agentzero_store import LocalEmbedder, Turn
from agentzero_store.agentmem.recall import signals as sig
from agentzero_store.agentmem.recall import when

from .conftest import Clock, open_memory


def _us(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1_000_000)


NOW = _us(2024, 3, 15)


def test_time_expressions_name_windows() -> None:
    day = when.window("What did Mel show on October 13, 2023?", NOW)
    assert day == when.Window(_us(2023, 10, 13), _us(2023, 10, 14))
    assert when.window("Who came on 1 February, 2023?", NOW) == when.Window(
        _us(2023, 2, 1), _us(2023, 2, 2)
    )
    assert when.window("What happened in December 2023?", NOW) == when.Window(
        _us(2023, 12, 1), _us(2024, 1, 1)
    )
    assert when.window("beach trips in 2023", NOW) == when.Window(_us(2023, 1, 1), _us(2024, 1, 1))
    assert when.window("camping in June?", NOW) == when.Window(month=6)
    assert when.window("what did we do yesterday", NOW) == when.Window(
        _us(2024, 3, 14), _us(2024, 3, 15)
    )
    ago = when.window("the trip 2 weeks ago", NOW)
    assert ago is not None and ago.distance_us(_us(2024, 3, 1)) == 0
    # no time named: "may" the verb, a bare number, February 30
    for q in ("may I ask about tea?", "room 2023 is free", "on February 30, 2023"):
        assert when.window(q, NOW) is None, q


def test_by_time_ranks_nearest_first_and_drops_when_flat() -> None:
    win = when.Window(_us(2023, 5, 1), _us(2023, 6, 1))
    created = {1: _us(2023, 1, 5), 2: _us(2023, 5, 20), 3: _us(2023, 6, 10)}
    assert when.by_time(win, created, [1, 2, 3]) == [2, 3, 1]
    june = when.Window(month=6)
    assert when.by_time(june, {1: _us(2021, 6, 3), 2: _us(2023, 1, 1)}, [2, 1]) == [1, 2]
    assert when.by_time(win, {1: _us(2023, 5, 2), 2: _us(2023, 5, 9)}, [1, 2]) == []
    # no candidate inside the window: nearest-first would only order them by age
    assert when.by_time(win, {1: _us(2023, 1, 5), 2: _us(2023, 6, 10)}, [1, 2]) == []
    assert when.by_time(june, {1: _us(2021, 7, 3), 2: _us(2023, 1, 1)}, [2, 1]) == []


def test_surprise_prefers_the_relevant_outlier() -> None:
    def unit(v: list[float]) -> np.ndarray:
        a = np.array(v, dtype=np.float32)
        return a / np.linalg.norm(a)

    q = unit([1.0, 1.0, 0.0])
    vectors = {1: unit([0.0, 1.0, 0.0]), 2: unit([0.0, 1.0, 0.1]), 3: unit([1.0, 0.0, 0.0])}
    # 3 is as relevant as 1 and 2 but unlike the pool's bulk: it ranks first
    assert sig.surprise(q, vectors, [1, 2, 3])[0] == 3
    assert sig.surprise(q, {1: vectors[1]}, [1]) == []  # one candidate: nothing to compare
    assert sig.surprise(q, {1: vectors[1], 2: vectors[1]}, [1, 2]) == []  # flat


def test_auto_recall_finds_the_turn_of_the_month_the_question_names(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    with open_memory(where, clock, embedder=local_embedder) as mem:
        ids = {}
        for month in (3, 5, 8):
            at = datetime(2023, month, 10, 12, tzinfo=UTC)
            (ids[month],) = mem.add_turns(
                f"s{month}", [Turn("user", "Ana: we went camping by the lake", created_at=at)]
            )
            mem.add_turns(
                f"s{month}",
                [
                    Turn("user", f"Bo: a note {i}", created_at=at + timedelta(minutes=i + 1))
                    for i in range(3)
                ],
            )
        hits = mem.recall("Where did Ana go camping in May 2023?", k=3, explain=True, log=False)
        assert hits[0].id == ids[5]
        # May's four turns come first in the "when" list (in any order: all inside it)
        assert hits[0].ranks["when"] <= 4
        for h in hits:
            if h.id in (ids[3], ids[8]):
                assert h.ranks["when"] > 4
        off = mem.recall(
            "Where did Ana go camping in May 2023?", k=3, log=False, weights={"when": 0}
        )
        assert all("when" not in h.ranks for h in off)


def test_a_month_no_memory_was_made_in_gives_no_when_list(
    where: Path | str, clock: Clock, local_embedder: LocalEmbedder
) -> None:
    """The museums visited in February, told in March and April: "in February" is when
    they happened, not when they were said. No turn lies in February, so the "when"
    signal stays out instead of ranking the turns nearest to February first."""
    with open_memory(where, clock, embedder=local_embedder) as mem:
        told = {}
        for month, text in (
            (3, "I visited the modern art museum downtown"),
            (4, "I went to the science museum with my niece"),
            (5, "I painted the kitchen walls blue"),
        ):
            (told[month],) = mem.add_turns(
                f"s{month}",
                [Turn("user", text, created_at=datetime(2023, month, 10, tzinfo=UTC))],
            )
        q = "How many museums did I visit in February?"
        assert when.window(q, NOW) == when.Window(month=2)
        hits = mem.recall(q, k=3, explain=True, log=False)
        assert all("when" not in h.ranks for h in hits)
        assert {h.id for h in hits[:2]} == {told[3], told[4]}
