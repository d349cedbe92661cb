"""Times in, times out (issue 30, items 3 and 7): one check (``base.limits.check_time``)
serves every entry — the records, the agent memory's ``as_of``/``at``/``now``/
``valid_from``, the CLI, JSONL import, the tools — and refuses a naive time or one a read
could not turn back into a ``datetime`` with a typed error. A row already stored with such
a time is named by the read (a ``CorruptStoreError``) and by ``store verify``, never a raw
``OverflowError``."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import AgentMemory, InvalidArgumentError, MemoryEntry, SqliteMemoryStore
from agentzero_store.agent.mcp import ToolHost
from agentzero_store.base.errors import CorruptStoreError
from agentzero_store.base.limits import EARLIEST_TIME, LATEST_TIME, check_time
from agentzero_store.memory import records
from agentzero_store.ops import verify_store
from agentzero_store.tools import AgentRecallTool, MemoryAppendTool

from ..conftest import FAST, PASSPHRASE, js, run_cli
from ..ops.conftest import CRED
from .conftest import Clock, open_memory

# Valid local time, but past year 9999 in UTC: it was accepted and then broke every read.
PAST_9999 = "9999-12-31T23:59:59.999999-14:00"
NAIVE = datetime(2026, 1, 1)
NO_EMBEDDER = ("--embedder", "none")


# ----------------------------------------------------------------- the one check
@pytest.mark.parametrize(
    ("value", "words"),
    [
        (datetime.fromisoformat(PAST_9999), "outside"),
        (datetime(1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=14))), "outside"),
        (LATEST_TIME + timedelta(microseconds=1), "outside"),
        (EARLIEST_TIME - timedelta(microseconds=1), "outside"),
        (NAIVE, "timezone-aware"),
        ("2026-01-01T00:00:00+00:00", "must be a datetime"),
        (1_700_000_000, "must be a datetime"),
    ],
)
def test_check_time_refuses_naive_foreign_and_unrepresentable_times(value: Any, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=words) as e:
        check_time("when", value)
    assert e.value.hint and "when" in e.value.message


def test_check_time_accepts_the_range_in_any_time_zone() -> None:
    for t in (
        EARLIEST_TIME,
        LATEST_TIME,
        datetime(2026, 5, 1, tzinfo=timezone(timedelta(hours=-9))),
    ):
        assert check_time("when", t) is t


# ----------------------------------------------------------------- every entry refuses it
def test_records_refuse_a_time_past_9999_in_utc() -> None:
    bad = datetime.fromisoformat(PAST_9999)
    for field in ("created_at", "expires_at"):
        with pytest.raises(InvalidArgumentError, match=field):
            MemoryEntry("x", **{field: bad})
    with pytest.raises(InvalidArgumentError, match="outside"):
        MemoryEntry.from_dict({"content": "x", "created_at": PAST_9999})


def test_agent_memory_refuses_it_and_reads_stay_whole(where: Path | str, clock: Clock) -> None:
    bad = datetime.fromisoformat(PAST_9999)
    with open_memory(where, clock) as mem:
        mid = mem.add_turn("c", "user", "a good turn")
        with pytest.raises(InvalidArgumentError, match="created_at"):
            mem.add_turn("c", "user", "a bad turn", created_at=bad)
        with pytest.raises(InvalidArgumentError, match="valid_from"):
            mem.assert_fact("Ana", "likes", "tea", valid_from=bad)
        assert [m.id for m in mem.memories()] == [mid]
        assert [h.id for h in mem.recall("turn")] == [mid]


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m, mid: m.recall("tea", as_of=NAIVE), "as_of"),
        (lambda m, mid: m.facts(as_of=NAIVE), "as_of"),
        (lambda m, mid: m.retrievability(mid, at=NAIVE), "at"),
        (lambda m, mid: m.edges(mid, at=NAIVE), "at"),
        (lambda m, mid: m.consolidate(now=NAIVE, dry_run=True), "now"),
        (lambda m, mid: m.assert_fact("Bo", "likes", "tea", valid_from=NAIVE), "valid_from"),
        (lambda m, mid: m.history(limit=-1), "limit"),
        (lambda m, mid: m.history(limit=0), "limit"),
        (lambda m, mid: m.best_procedures("tea", k=-1), "k"),
    ],
)
def test_naive_times_and_bad_limits_are_typed_errors(
    mem: AgentMemory, call: Callable[[AgentMemory, str], Any], name: str
) -> None:
    # Each raised a raw TypeError (naive minus aware), or ran unchecked (limit=-1).
    mid = mem.assert_fact("Ana", "likes", "tea").id
    with pytest.raises(InvalidArgumentError) as e:
        call(mem, mid)
    assert e.value.message.startswith(name) and e.value.hint


def test_a_time_to_live_past_9999_is_refused(data_dir: Path) -> None:
    clock = Clock(datetime(9990, 1, 1, tzinfo=UTC))
    with open_memory(data_dir, clock) as mem, pytest.raises(InvalidArgumentError, match="ttl"):
        mem.remember("short lived", ttl=timedelta(days=365 * 50))


def test_cli_append_and_import_refuse_it(data_dir: Path, tmp_path: Path) -> None:
    run_cli(data_dir, "init")
    p = run_cli(
        data_dir,
        "memory",
        "append",
        "x",
        "--expires-at",
        PAST_9999,
        *NO_EMBEDDER,
        "--json",
        check=False,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert js(p)["error"] == "invalid_argument" and "outside" in js(p)["message"]
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"content": "y", "created_at": PAST_9999}) + "\n")
    p = run_cli(data_dir, "memory", "import", str(lines), *NO_EMBEDDER, "--json", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert js(run_cli(data_dir, "memory", "recent", "--json")) == []


def test_tools_refuse_it(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        host = ToolHost([AgentRecallTool(mem)])
        ok, res = host.call("memory_recall", {"query": "x", "as_of": PAST_9999})
        assert not ok and res["error"] == "invalid_argument" and "outside" in res["message"]
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as store:
        host = ToolHost([MemoryAppendTool(store)])
        ok, res = host.call("memory_append", {"content": "x", "expires_in_seconds": 1.0})
        assert ok, res


# ----------------------------------------------------------------- a row stored before
def _store_bad_time(mem: AgentMemory, field: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A memory as an older version stored it for ``PAST_9999``: without the range check
    (the test steps it out), through the real write path (sealed and authenticated on
    PostgreSQL: the row is genuine, not tampered with); its id. ``created_at``: a turn
    (``add_turn``); ``expires_at``: a memory of the store below the layer (``memory
    append --expires-at``)."""
    bad = datetime.fromisoformat(PAST_9999)
    with monkeypatch.context() as m:
        m.setattr(records, "check_optional_time", lambda name, value: value)
        if field == "created_at":
            return mem.add_turn("c", "user", "the poisoned turn", created_at=bad)
        entry = MemoryEntry("the poisoned turn", conversation_id="c", org_id="acme", agent_id="a1")
        return mem.store.append(entry.with_(expires_at=bad))


def _assert_named(mid: str, reads: list[Callable[[], Any]]) -> None:
    for read in reads:
        with pytest.raises(CorruptStoreError) as e:
            read()
        assert e.value.record == f"memory {mid}" and e.value.hint


def test_a_stored_creation_time_past_9999_is_named_by_every_read(
    where: Path | str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(where, clock) as mem:
        mem.add_turn("c", "user", "a good turn")
        mid = _store_bad_time(mem, "created_at", monkeypatch)
        # Each raised a raw OverflowError ("date value out of range").
        _assert_named(
            mid,
            [
                mem.memories,
                lambda: mem.get(mid),
                lambda: mem.recall("poisoned"),
                lambda: mem.context("c", "poisoned"),
                lambda: mem.store.recent(),
                lambda: mem.store.recall("poisoned", mode="keyword"),
            ],
        )


def test_a_stored_expiry_past_9999_is_named_by_every_read(
    where: Path | str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(where, clock) as mem:
        mid = _store_bad_time(mem, "expires_at", monkeypatch)
        _assert_named(
            mid,
            [
                lambda: mem.store.recent(),
                lambda: mem.store.get(mid),
                lambda: mem.store.recall("poisoned", mode="keyword"),
            ],
        )


def test_verify_names_a_stored_time_past_9999(
    data_dir: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(data_dir, clock) as mem:
        mem.add_turn("c", "user", "a good turn")
    assert verify_store(data_dir, CRED).clean
    with open_memory(data_dir, clock) as mem:
        mid = _store_bad_time(mem, "created_at", monkeypatch)
    report = verify_store(data_dir, CRED)
    assert not report.clean
    # The turn's creation time, and its last review (the same instant on a new memory).
    assert [f.where for f in report.findings] == [
        f"memory {mid}, created_at_us",
        f"memory {mid}, last_review_us",
    ]
    assert all("outside the years 1 to 9999" in f.problem for f in report.findings)
    p = run_cli(data_dir, "memory", "recent", "--json", check=False, passphrase=PASSPHRASE)
    assert p.returncode == 5 and "Traceback" not in p.stderr, p.stderr
    assert mid in js(p)["message"]
