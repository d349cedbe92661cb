"""``AgentZeroSession`` against the Agents SDK's documented ``SessionABC`` contract, as the
SDK tests its own ``SQLiteSession`` (its tests/memory/test_session.py): every operation,
limits and settings, isolation of sessions, unicode and SQL-looking text, concurrency
from one loop, several loops and threads, cancellation, closed handles; plus what
``SQLiteSession`` does not promise: lossless items of every shape, typed errors for bad
input with nothing written, items that recall finds and pops it no longer finds."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SessionABC, SessionSettings

from agentzero_store import AgentMemory, InvalidArgumentError, WrongKeyError
from agentzero_store.base.limits import MAX_METADATA_BYTES
from agentzero_store.integrations import _shared
from agentzero_store.integrations.openai_agents import AgentZeroSession, HandleClosedError

from ..conftest import FAST, PASSPHRASE
from .adapter_support import canary, files_of, plaintext_hits


def open_session(data_dir: Path, sid: str = "s1", **kw: Any) -> AgentZeroSession:
    return AgentZeroSession(sid, data_dir=data_dir, passphrase=PASSPHRASE, config=FAST, **kw)


@pytest.fixture
async def session(data_dir: Path) -> AsyncIterator[AgentZeroSession]:
    s = open_session(data_dir)
    yield s
    s.close()


def msg(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


# ---------------------------------------------------------------------- operations
async def test_is_a_session_and_round_trips(session: AgentZeroSession) -> None:
    assert isinstance(session, SessionABC)
    assert await session.get_items() == []
    items = [msg("user", "Hello"), msg("assistant", "Hi there!")]
    await session.add_items(items)
    assert await session.get_items() == items
    await session.clear_session()
    assert await session.get_items() == []


async def test_limits_as_sqlite_session(session: AgentZeroSession) -> None:
    items = [msg("user" if i % 2 == 0 else "assistant", f"Message {i}") for i in range(6)]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=4) == items[-4:]
    assert await session.get_items(limit=10) == items
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == items  # SQLite's LIMIT -1: no limit
    with pytest.raises(InvalidArgumentError):
        await session.get_items(limit="3")  # type: ignore[arg-type]


async def test_session_settings(data_dir: Path) -> None:
    default = open_session(data_dir, "d")
    assert isinstance(default.session_settings, SessionSettings)
    assert default.session_settings.limit is None
    limited = open_session(data_dir, "l", session_settings=SessionSettings(limit=3))
    as_dict = open_session(data_dir, "l", session_settings={"limit": 2})
    try:
        assert isinstance(as_dict.session_settings, SessionSettings)
        items = [msg("user", f"Message {i}") for i in range(5)]
        await limited.add_items(items)
        assert await limited.get_items() == items[-3:]
        assert await as_dict.get_items() == items[-2:]
        assert await limited.get_items(limit=1) == items[-1:]  # explicit wins
        assert await limited.get_items(limit=-1) == items
    finally:
        for s in (default, limited, as_dict):
            s.close()


async def test_pop_item_order_and_empty(session: AgentZeroSession) -> None:
    assert await session.pop_item() is None
    items = [msg("user", "Hello"), msg("assistant", "Hi there!"), msg("user", "How are you?")]
    await session.add_items(items)
    assert await session.pop_item() == items[2]
    assert await session.get_items() == items[:2]
    assert await session.pop_item() == items[1]
    assert await session.pop_item() == items[0]
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_sessions_on_one_data_dir_are_apart(data_dir: Path) -> None:
    one, two = open_session(data_dir, "session_1"), open_session(data_dir, "session_2")
    try:
        await one.add_items([msg("user", "Session 1 message")])
        await two.add_items(
            [msg("user", "Session 2 message 1"), msg("user", "Session 2 message 2")]
        )
        assert await two.pop_item() == msg("user", "Session 2 message 2")
        assert await one.get_items() == [msg("user", "Session 1 message")]
        await two.clear_session()
        assert await one.get_items() == [msg("user", "Session 1 message")]
        assert await two.get_items() == []
        assert _shared.open_count() == 1  # one memory for both
    finally:
        one.close()
        two.close()
    assert _shared.open_count() == 0


async def test_unicode_and_sql_looking_text(session: AgentZeroSession) -> None:
    items = [
        msg("user", "こんにちは"),
        msg("assistant", "😊👍"),
        msg("user", "Привет"),
        msg("user", "O'Reilly"),
        msg("assistant", "DROP TABLE sessions;"),
        msg("user", '"SELECT * FROM users WHERE name = "admin";"'),
        msg("assistant", "Robert'); DROP TABLE students;--"),
        msg("user", "\x00 nul and \u2028 separators"),
    ]
    await session.add_items(items)
    assert await session.get_items() == items


async def test_items_of_every_shape_round_trip_exactly(session: AgentZeroSession) -> None:
    items: list[Any] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Paris?", "annotations": []}],
        },
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"c":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny, 21 C"},
        {"type": "reasoning", "id": "r1", "summary": [], "encrypted_content": "gAAAA=="},
        {"type": "item_reference", "id": "msg_0"},
        {"type": "a_shape_from_the_future", "n": 1, "f": 0.5, "b": True, "z": None, "l": [1]},
        {"z_last": 1, "a_first": 2, "role": "user", "content": "key order kept"},
        {"role": "user", "content": "x" * (MAX_METADATA_BYTES * 3)},  # kept once, as text
        {  # two long texts: beyond the metadata cap, kept whole as the turn's text
            "role": "user",
            "content": [
                {"type": "input_text", "text": "y" * MAX_METADATA_BYTES},
                {"type": "input_text", "text": "z" * MAX_METADATA_BYTES},
            ],
        },
        {"type": "function_call_output", "call_id": "c2", "output": ["not", "a", "string"]},
        {"role": "user", "content": "a lone surrogate \udcff survives"},
    ]
    await session.add_items(items)
    got = await session.get_items()
    assert got == items
    assert [list(g) for g in got] == [list(i) for i in items]  # key order, too
    assert json.dumps(got[-1]) == json.dumps(items[-1])


async def test_an_items_text_is_stored_once(data_dir: Path) -> None:
    word = canary("once")
    with open_session(data_dir) as s:
        await s.add_items([msg("user", f"say {word} " * 100)])
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        (m,) = mem.memories(conversation_id="s1")
    assert m.content == f"say {word} " * 100
    assert word not in json.dumps(m.metadata)


async def test_add_items_empty_is_a_no_op(session: AgentZeroSession) -> None:
    await session.add_items([])
    assert await session.get_items() == []


# ---------------------------------------------------------------------- bad input
class _Obj:
    pass


@pytest.mark.parametrize(
    "bad",
    [
        [msg("user", "ok"), "just a string"],
        [msg("user", "ok"), {"role": "user", "content": {1, 2}}],
        [msg("user", "ok"), {"role": "user", "content": b"bytes"}],
        [msg("user", "ok"), {"role": "user", "content": _Obj()}],
        [msg("user", "ok"), {"role": "user", "content": float("nan")}],
        [msg("user", "ok"), {"role": "user", "meta": {1: "int key"}}],
        msg("user", "a dict, not a list"),
        "a string, not a list",
    ],
    ids=["str-item", "set", "bytes", "object", "nan", "int-key", "dict", "str"],
)
async def test_bad_input_is_typed_and_writes_nothing(session: AgentZeroSession, bad: Any) -> None:
    await session.add_items([msg("user", "before")])
    with pytest.raises(InvalidArgumentError) as err:
        await session.add_items(bad)
    assert err.value.hint
    assert await session.get_items() == [msg("user", "before")]


async def test_reserved_and_bad_session_ids(data_dir: Path) -> None:
    for sid in ("facts", "memories", "", " ", "a\nb"):
        with pytest.raises(InvalidArgumentError):
            open_session(data_dir, sid)
    assert _shared.open_count() == 0


async def test_wrong_passphrase_is_typed_and_changes_nothing(data_dir: Path) -> None:
    with open_session(data_dir) as s:
        await s.add_items([msg("user", "hello")])
    before = files_of(data_dir)
    with pytest.raises(WrongKeyError):
        AgentZeroSession("s1", data_dir=data_dir, passphrase="wrong", config=FAST)
    assert files_of(data_dir) == before
    assert _shared.open_count() == 0


# ---------------------------------------------------------------------- closed handles
async def test_closed_session_raises_and_others_go_on(data_dir: Path) -> None:
    a, b = open_session(data_dir, "a"), open_session(data_dir, "b")
    await a.add_items([msg("user", "kept")])
    a.close()
    a.close()  # idempotent
    for call in (a.get_items(), a.add_items([msg("user", "x")]), a.pop_item(), a.clear_session()):
        with pytest.raises(HandleClosedError) as err:
            await call
        assert isinstance(err.value, RuntimeError)  # as SQLiteSession's closed error
    with pytest.raises(HandleClosedError):
        await a.add_items([])  # checked before the empty fast path, as SQLiteSession
    await b.add_items([msg("user", "b goes on")])
    assert await b.get_items() == [msg("user", "b goes on")]
    b.close()
    assert _shared.open_count() == 0
    with open_session(data_dir, "a") as again:  # reopened: nothing was lost
        assert await again.get_items() == [msg("user", "kept")]


def test_unclosed_session_is_released_when_collected(data_dir: Path) -> None:
    import gc

    s = open_session(data_dir)
    assert _shared.open_count() == 1
    del s
    gc.collect()
    assert _shared.open_count() == 0


# ---------------------------------------------------------------------- the agent memory
async def test_recall_finds_items_and_not_popped_or_cleared_ones(data_dir: Path) -> None:
    kept, popped, cleared = canary("kept"), canary("popped"), canary("cleared")
    with open_session(data_dir, "s1") as s, open_session(data_dir, "s2") as other:
        await s.add_items([msg("user", f"remember {kept}"), msg("user", f"remember {popped}")])
        await other.add_items([msg("user", f"remember {cleared}")])
        assert await s.pop_item() == msg("user", f"remember {popped}")
        await other.clear_session()
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        hits = mem.recall(kept, 5)
        assert [h.memory.content for h in hits] == [f"remember {kept}"]
        assert hits[0].memory.conversation_id == "s1"
        assert mem.recall(popped, 5) == []
        assert mem.recall(cleared, 5) == []


async def test_erase_mode_leaves_no_plaintext(data_dir: Path) -> None:
    popped, cleared = canary("popped"), canary("cleared")
    with open_session(data_dir, erase=True) as s:
        await s.add_items([msg("user", f"say {cleared}"), msg("user", f"say {popped}")])
        assert await s.pop_item() == msg("user", f"say {popped}")
        await s.clear_session()
        assert await s.get_items() == []
    assert plaintext_hits(data_dir, [popped, cleared]) == []


async def test_turns_written_otherwise_read_as_messages(data_dir: Path) -> None:
    with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        mem.add_turn("s1", "user", "written by add_turn")
    with open_session(data_dir) as s:
        assert await s.get_items() == [msg("user", "written by add_turn")]


async def test_nothing_in_plaintext_on_disk(data_dir: Path) -> None:
    word, call_arg = canary("said"), canary("arg")
    with open_session(data_dir) as s:
        await s.add_items(
            [
                msg("user", f"the secret is {word}"),
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": call_arg},
            ]
        )
    assert plaintext_hits(data_dir, [word, call_arg]) == []


# ---------------------------------------------------------------------- concurrency
async def test_fifty_concurrent_calls_on_one_loop(data_dir: Path) -> None:
    """50 concurrent add_items (each a user/assistant pair) with reads and pops among
    them: every pair lands whole and adjacent, nothing is lost."""
    with open_session(data_dir) as s, open_session(data_dir) as twin:

        async def add(i: int) -> None:
            who = s if i % 2 else twin  # two session objects on one session id
            await who.add_items([msg("user", f"q{i}"), msg("assistant", f"a{i}")])

        reads = [s.get_items(limit=4) for _ in range(10)]
        await asyncio.gather(*(add(i) for i in range(50)), *reads)
        got = await s.get_items()
        assert len(got) == 100
        pairs = [(got[j]["content"], got[j + 1]["content"]) for j in range(0, 100, 2)]
        assert sorted(pairs) == sorted((f"q{i}", f"a{i}") for i in range(50))
        popped = await asyncio.gather(*(s.pop_item() for _ in range(50)))
        assert sorted(p["content"] for p in popped if p) == sorted(
            c for pair in pairs[25:] for c in pair
        )
        assert await s.get_items() == got[:50]


async def test_event_loop_keeps_running_during_store_calls(session: AgentZeroSession) -> None:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    await session.add_items([msg("user", f"m{i} " + "word " * 200) for i in range(300)])
    await session.get_items()
    done.set()
    await task
    assert ticks - before > 10  # the loop ran other work while the store worked


def test_threads_with_their_own_event_loops(data_dir: Path) -> None:
    """As the SDK's concurrency test: threads each run their own loop on sessions of one
    data dir (several session ids, several objects per id)."""
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            s = open_session(data_dir, f"s{t % 2}")
            try:
                for i in range(10):
                    asyncio.run(s.add_items([msg("user", f"t{t} m{i}")]))
                asyncio.run(s.get_items(limit=3))
            finally:
                s.close()
        except BaseException as exc:  # reported below, with the thread's traceback
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _shared.open_count() == 0

    async def read(sid: str) -> list[Any]:
        with open_session(data_dir, sid) as s:
            return await s.get_items()

    for sid, ts in (("s0", (0, 2, 4)), ("s1", (1, 3, 5))):
        got = asyncio.run(read(sid))
        assert sorted(i["content"] for i in got) == sorted(
            f"t{t} m{i}" for t in ts for i in range(10)
        )
        for t in ts:  # each thread's items in its own order
            mine = [i["content"] for i in got if i["content"].startswith(f"t{t} ")]
            assert mine == [f"t{t} m{i}" for i in range(10)]


async def test_a_cancelled_write_finishes_before_the_cancellation(
    session: AgentZeroSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, finished = threading.Event(), threading.Event()
    real = AgentMemory.add_turns

    def slow_add_turns(self: AgentMemory, *a: Any, **kw: Any) -> Any:
        started.set()
        time.sleep(0.3)
        out = real(self, *a, **kw)
        finished.set()
        return out

    monkeypatch.setattr(AgentMemory, "add_turns", slow_add_turns)
    task = asyncio.create_task(session.add_items([msg("user", "survives the cancel")]))
    while not started.is_set():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()  # the caller hears of the cancel only once the write is done
    assert await session.get_items() == [msg("user", "survives the cancel")]


async def test_scopes_share_a_data_dir_but_never_their_items(data_dir: Path) -> None:
    mine = open_session(data_dir, "s", org_id="acme", agent_id="alice")
    theirs = open_session(data_dir, "s", org_id="acme", agent_id="bob")
    other_org = open_session(data_dir, "s", org_id="globex", agent_id="alice")
    word = canary("alice")
    try:
        await mine.add_items([msg("user", f"only alice knows {word}")])
        assert await theirs.get_items() == []
        assert await other_org.get_items() == []
        assert await theirs.pop_item() is None
        await other_org.clear_session()
        assert await mine.get_items() == [msg("user", f"only alice knows {word}")]
        assert _shared.open_count() == 1  # one store, three scopes
    finally:
        for s in (mine, theirs, other_org):
            s.close()
    with AgentMemory.open(
        data_dir, passphrase=PASSPHRASE, config=FAST, org_id="acme", agent_id="bob"
    ) as bob:
        assert bob.recall(word) == []


def test_close_waits_for_a_call_under_way(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = open_session(data_dir)
    started = threading.Event()
    real = AgentMemory.add_turns

    def slow(self: AgentMemory, *a: Any, **kw: Any) -> Any:
        started.set()
        time.sleep(0.3)
        return real(self, *a, **kw)

    monkeypatch.setattr(AgentMemory, "add_turns", slow)
    writer = threading.Thread(target=lambda: asyncio.run(s.add_items([msg("user", "mid-way")])))
    writer.start()
    started.wait(5)
    s.close()  # must not close the memory under the write
    writer.join()
    monkeypatch.undo()
    assert _shared.open_count() == 0
    with open_session(data_dir) as again:
        assert asyncio.run(again.get_items()) == [msg("user", "mid-way")]


CHILD = """
import asyncio, sys
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store import StoreConfig
from agentzero_store.integrations.openai_agents import AgentZeroSession
s = AgentZeroSession("s1", data_dir=sys.argv[1], passphrase=sys.argv[2],
                     config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
async def main():
    for i in range(20):
        await s.add_items([{"role": "user", "content": f"child {i}"}])
asyncio.run(main())
s.close()
"""


async def test_another_process_writes_the_same_session(data_dir: Path) -> None:
    import subprocess
    import sys

    from ..conftest import child_env

    with open_session(data_dir) as s:
        await s.add_items([msg("user", "first")])
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data_dir), PASSPHRASE], env=child_env()
        )
        for i in range(20):
            await s.add_items([msg("user", f"parent {i}")])
        assert await asyncio.to_thread(child.wait, 120) == 0
        got = [i["content"] for i in await s.get_items()]
    assert got[0] == "first" and len(got) == 41
    assert [c for c in got if c.startswith("child")] == [f"child {i}" for i in range(20)]
    assert [c for c in got if c.startswith("parent")] == [f"parent {i}" for i in range(20)]


async def test_what_a_session_keeps_between_calls_follows_every_change(data_dir: Path) -> None:
    """A session object keeps the newest turns decoded between calls, trusted only while
    memory.db's change feed has not moved: writes by another session object, a forget,
    an undo and an erase through another handle all show at once."""
    with open_session(data_dir) as s, open_session(data_dir) as twin:
        for i in range(5):  # one call each: an undo puts m1 back by its own time
            await s.add_items([msg("user", f"m{i}")])
        assert [i["content"] for i in await s.get_items(limit=3)] == ["m2", "m3", "m4"]
        await twin.add_items([msg("user", "from the twin")])
        assert (await s.get_items())[-1] == msg("user", "from the twin")
        got = await s.get_items()
        got[0]["content"] = "changed by the caller"  # results are copies
        assert (await s.get_items())[0] == msg("user", "m0")
        with AgentMemory.open(data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
            ids = {m.content: m.id for m in mem.memories(conversation_id="s1")}
            receipt = mem.forget(id=ids["m1"])
            assert [i["content"] for i in await s.get_items()] == [
                "m0",
                "m2",
                "m3",
                "m4",
                "from the twin",
            ]
            mem.undo(receipt.token)
            assert [i["content"] for i in await s.get_items(limit=5)] == [
                "m1",
                "m2",
                "m3",
                "m4",
                "from the twin",
            ]
            mem.erase(id=ids["m4"])
            assert msg("user", "m4") not in await s.get_items()
        await s.add_items([msg("user", "after")])
        assert [i["content"] for i in await s.get_items(limit=2)] == ["from the twin", "after"]
        assert len(await s.get_items()) == 6


async def test_a_long_session_is_read_whole(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentzero_store.integrations.openai_agents import session as module

    monkeypatch.setattr(module, "TAIL_TURNS", 4)  # keep at most 4 turns between calls
    with open_session(data_dir) as s:
        await s.add_items([msg("user", f"m{i}") for i in range(3)])
        assert len(await s.get_items()) == 3
        await s.add_items([msg("user", f"n{i}") for i in range(3)])  # the tail drops m0, m1
        assert [i["content"] for i in await s.get_items(limit=4)] == ["m2", "n0", "n1", "n2"]
        assert [i["content"] for i in await s.get_items()] == ["m0", "m1", "m2", "n0", "n1", "n2"]
