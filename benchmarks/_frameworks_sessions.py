"""The OpenAI Agents SDK session (issue 28): ``AgentZeroSession`` beside the SDK's own
plaintext, file-backed ``SQLiteSession``, same machine, same run, interleaved.

What a ``Runner`` does per turn: ``get_items()`` (the whole history, or the newest
``session_settings.limit``) before calling the model, then ``add_items`` of the turn's
new items (here a user message and an assistant reply of realistic length). Both
sessions start from the same history of ``history`` items, both on the same disk, both
durable per call (SQLite's WAL with ``synchronous=FULL``, the Python default, against
SQLCipher's WAL with ``synchronous=FULL`` plus the data dir's writer lock and
acknowledgement ledger). Each trial times one call of each, the order alternating; the
figure is the p50. Goal: within 2× of the plaintext reference.

Two more rows say where the time goes: the same turn committed as two JSON rows into a
bare SQLCipher database (encryption and ``synchronous=FULL`` alone: the floor any
encrypted durable session pays), and the WAL frames (4 KiB pages) one ``add_items``
commits in each store, since a commit's fsync grows with the pages it writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from _harness import Figure, median

from agentzero_store import StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS

GROUP = "sessions"
CONFIG = StoreConfig(kdf=FAST_KDF_FOR_TESTS)  # the KDF runs once per open: not measured
GOAL = 2.0
WORDS = (  # noqa: SIM905 - a sentence reads better than a list of words
    "the quarterly report shows revenue up in every region while support tickets fell "
    "after the new onboarding flow shipped and the team plans a follow up review"
).split()


def _text(i: int, n: int) -> str:
    return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(n)) + f" #{secrets.token_hex(4)}"


def _turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": _text(i, 25)},
        {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": _text(i + 7, 60), "annotations": []}],
        },
    ]


def run(tmp: Path, *, quick: bool, progress: Callable[[str], None]) -> list[Figure]:
    """The figures: add_items p50, get_items p50 (all, and the newest 20)."""
    from agents import SQLiteSession

    from agentzero_store.integrations.openai_agents import AgentZeroSession

    trials = 60 if quick else 400
    history = 40 if quick else 200
    loop = asyncio.new_event_loop()

    def call(coro: Coroutine[Any, Any, Any]) -> float:
        t = time.perf_counter()
        loop.run_until_complete(coro)
        return time.perf_counter() - t

    from agentzero_store.storage.sqlcipher import Database

    ours = AgentZeroSession(
        "bench", data_dir=tmp / "sessions-az", passphrase="bench", config=CONFIG
    )
    ref = SQLiteSession("bench", tmp / "sessions-ref.db")
    # A second object on each session: it reads after the first one wrote, so ours has
    # nothing kept (its change feed moved) and reads from the store.
    twins = (
        AgentZeroSession("bench", data_dir=tmp / "sessions-az", passphrase="bench", config=CONFIG),
        SQLiteSession("bench", tmp / "sessions-ref.db"),
    )
    floor = Database(tmp / "sessions-floor.db", secrets.token_bytes(32), busy_timeout_ms=5000)
    with floor.tx() as c:
        c.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, session TEXT, data TEXT)")
        c.execute("CREATE INDEX m_session ON m (session, id)")

    def floor_add(turn: list[dict[str, Any]]) -> float:
        t = time.perf_counter()
        with floor.tx() as c:
            c.executemany(
                "INSERT INTO m (session, data) VALUES ('bench', ?)",
                [(json.dumps(x),) for x in turn],
            )
        return time.perf_counter() - t

    try:
        for i in range(history // 2):
            for s in (ours, ref):
                loop.run_until_complete(s.add_items(_turn(i)))
        progress(f"sessions: {trials} interleaved trials over a history of {history}+ items")
        times: dict[str, tuple[list[float], list[float]]] = {
            k: ([], []) for k in ("add", "get_all", "get_20", "cold_20")
        }
        floor_times: list[float] = []
        for i in range(trials):
            turn = _turn(history + i)
            order = ((ours, 0), (ref, 1)) if i % 2 else ((ref, 1), (ours, 0))
            for s, arm in order:
                times["get_all"][arm].append(call(s.get_items()))
                times["get_20"][arm].append(call(s.get_items(limit=20)))
                times["add"][arm].append(call(s.add_items(turn)))
                times["cold_20"][arm].append(call(twins[arm].get_items(limit=20)))
            floor_times.append(floor_add(turn))
        n_items = len(loop.run_until_complete(ours.get_items()))
        assert n_items == len(loop.run_until_complete(ref.get_items()))
        frames = (
            _frames(
                tmp / "sessions-az" / "memory.db-wal",
                lambda: ours._lease.call(
                    lambda mem: mem.store.database.query("PRAGMA wal_checkpoint(TRUNCATE)")
                ),
                lambda: call(ours.add_items(_turn(0))),
            ),
            _frames(
                tmp / "sessions-ref.db-wal",
                lambda: _truncate_plain(tmp / "sessions-ref.db"),
                lambda: call(ref.add_items(_turn(0))),
            ),
        )
    finally:
        for s in (ours, ref, *twins):
            s.close()
        floor.close()
        loop.close()
    labels = {
        "add": "Agents SDK session: add_items (a user + assistant turn), p50",
        "get_all": f"Agents SDK session: get_items() of {history}-{n_items} items, p50",
        "get_20": "Agents SDK session: get_items(limit=20), p50",
        "cold_20": "get_items(limit=20) by another object on the session, after a write, p50",
    }
    figures = []
    for key, (az, sq) in times.items():
        ours_ms, ref_ms = median(az) * 1e3, median(sq) * 1e3
        ratio = ours_ms / ref_ms
        note = {
            "get_all": "the session object keeps its newest turns decoded while the feed holds",
            "get_20": "the session object keeps its newest turns decoded while the feed holds",
            "cold_20": "nothing kept: listed through AgentMemory.memories",
        }.get(key, "")
        figures.append(
            Figure(
                group=GROUP,
                name=f"session_{key}_p50",
                note=note,
                label=labels[key],
                ours=ours_ms,
                unit="ms",
                anchor=ref_ms,
                anchor_label="SQLiteSession, plaintext file",
                ratio=ratio,
                goal=f"≤ {GOAL:g}×",
                passed=ratio <= GOAL,
                trials=len(az),
            )
        )
    ref_add = median(times["add"][1]) * 1e3
    floor_ms = median(floor_times) * 1e3
    figures.append(
        Figure(
            group=GROUP,
            name="session_add_floor_p50",
            label="the same turn as two JSON rows in a bare SQLCipher db (the encrypted floor)",
            ours=floor_ms,
            unit="ms",
            anchor=ref_add,
            anchor_label="SQLiteSession add_items",
            ratio=floor_ms / ref_add,
            trials=len(floor_times),
            note="encryption + synchronous=FULL alone",
        )
    )
    figures.append(
        Figure(
            group=GROUP,
            name="session_add_wal_frames",
            label="WAL frames (4 KiB pages) one add_items commits",
            ours=float(frames[0]),
            unit="pages",
            anchor=float(frames[1]),
            anchor_label="SQLiteSession",
            ratio=frames[0] / frames[1],
            note="memory row, FTS5, the agent-memory rows and their indexes, change feed",
        )
    )
    return figures


def _frames(wal: Path, checkpoint: Callable[[], Any], write: Callable[[], Any]) -> int:
    """The WAL frames one ``write`` appends to ``wal`` after ``checkpoint`` emptied it."""
    checkpoint()
    before = os.path.getsize(wal) if wal.exists() else 0
    write()
    return round((os.path.getsize(wal) - before) / (4096 + 24))


def _truncate_plain(db: Path) -> None:
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


__all__ = ["GROUP", "run"]
