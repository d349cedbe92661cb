"""Fixtures of the agent-memory tests: a memory with an injected clock."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentzero_store import AgentMemory, SqliteMemoryStore
from tests.conftest import FAST, PASSPHRASE
from tests.support.pg_server import PgServer

START = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand (decay, TTL and undo windows without sleeping)."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> datetime:
        self.now += timedelta(**kw)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def open_memory(data_dir: Path | str, clock: Clock, **kw: object) -> AgentMemory:
    """An AgentMemory of org acme / agent a1 (override with keyword arguments), in a data
    dir or a PostgreSQL database (a URL)."""
    args: dict[str, object] = {"org_id": "acme", "agent_id": "a1", "config": FAST}
    args.update(kw)
    return AgentMemory.open(data_dir, passphrase=PASSPHRASE, clock=clock, **args)  # type: ignore[arg-type]


@pytest.fixture
def mem(data_dir: Path, clock: Clock) -> Iterator[AgentMemory]:
    m = open_memory(data_dir, clock)
    yield m
    m.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, data_dir: Path) -> Path | str:
    """Where a contract test's agent memory lives: a data dir, or a fresh PostgreSQL
    database on the session's test server (the same test runs on both backends)."""
    if request.param == "sqlite":
        return data_dir
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def bmem(where: Path | str, clock: Clock) -> Iterator[AgentMemory]:
    """``mem`` on each backend (``where``)."""
    m = open_memory(where, clock)
    yield m
    m.close()


@pytest.fixture
def smem(data_dir: Path, clock: Clock) -> Iterator[AgentMemory]:
    """``mem`` in a data dir, for a test of what only SQLite has (its files, its feed)."""
    m = open_memory(data_dir, clock)
    yield m
    m.close()


def count_rows(mem: AgentMemory, table: str) -> int:
    """Rows of one of the layer's tables (``am_forgotten``: SQLite's name; PostgreSQL's
    is ``az_am_forgotten``), on either backend."""
    if isinstance(mem.store, SqliteMemoryStore):
        return int(mem.store.database.query(f"SELECT count(*) FROM {table}")[0][0])
    return int(mem.store.query(f"SELECT count(*) FROM az_{table}")[0][0])


def footprint(mem: AgentMemory) -> object:
    """What moves with any write to the store: SQLite's change feed seq (counting the
    layer's own writes); on PostgreSQL every ``az_`` table's rows, as text."""
    if isinstance(mem.store, SqliteMemoryStore):
        return mem.store.source_seq()
    tables = [
        str(r[0])
        for r in mem.store.query(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s ORDER BY 1", ("az\\_%",)
        )
    ]
    return {t: sorted(map(repr, mem.store.query(f"SELECT * FROM {t}"))) for t in tables}


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_where(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], Path | str]]:
    """A maker of new, empty places for an agent memory on each backend: a data dir, or
    a new database on the session's PostgreSQL server (one per call: a property test
    starts each example from nothing; the databases are dropped when the test ends)."""
    made = itertools.count()
    if request.param == "sqlite":
        yield lambda: tmp_path / f"data{next(made)}"
        return
    server: PgServer = request.getfixturevalue("postgres")
    names: list[str] = []

    def database() -> str:
        names.append(f"prop{uuid.uuid4().hex[:12]}")
        return server.create_database(names[-1])

    yield database
    for name in names:
        server.drop_database(name)
