"""A revoke holds on every way into a namespace (issue 30): every public read and write of
``AgentMemory``, ``ChatHistory`` (and its limit decorators) and ``SkillStore`` on a
handle opened before the revoke is refused, whether the revoke was made in this process
or by another one; and a history on a namespace or session handle searches that scope.

Each class's calls are listed by name with arguments that work while the grant holds
(every call runs once on a granted twin handle first), and the list must name every
public method and property of the class: one added later, without an entry here, fails
the completeness check instead of slipping past the grant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import AgentMemory
from agentzero_store.agentmem.chat.history import ChatHistory
from agentzero_store.agentmem.chat.limits import (
    CapacityLimitedChat,
    SummarizingChat,
    TokenLimitedChat,
)
from agentzero_store.agentmem.chat.messages import ChatMessage
from agentzero_store.agentmem.records import Turn
from agentzero_store.agentmem.skills.markdown import render
from agentzero_store.agentmem.skills.records import check_skill
from agentzero_store.agentmem.skills.store import SkillStore
from agentzero_store.base.errors import AccessDeniedError, InvalidArgumentError
from tests.conftest import PASSPHRASE, run_cli

from .conftest import Clock, open_memory

Call = Callable[[Any, Any], object]


def public(cls: type) -> set[str]:
    """Every public method and property of ``cls``, inherited ones included."""
    return {n for n in dir(cls) if not n.startswith("_")}


def check_complete(cls: type, calls: dict[str, Call], exempt: dict[str, str]) -> None:
    missing = public(cls) - set(calls) - set(exempt)
    assert not missing, (
        f"{cls.__name__} has public members this test does not call after a revoke: "
        f"{sorted(missing)}; add each to the calls (or, if it reaches no scope data, to "
        "the exempt ones, with the reason)"
    )
    assert not (set(calls) | set(exempt)) - public(cls), "stale entries"


def run_all(
    target: object, known: object, calls: dict[str, Call], expected: dict[str, type]
) -> None:
    """Every call on a granted handle: each works, or fails as ``expected`` says."""
    for name, call in calls.items():
        if name in expected:
            with pytest.raises(expected[name]):
                call(target, known)
            continue
        out = call(target, known)
        if isinstance(out, AgentMemory):
            out.close()


def refuse_all(
    target: object, known: object, calls: dict[str, Call], expected: dict[str, type]
) -> None:
    """Every call on a revoked handle is refused with the typed error."""
    for name, call in calls.items():
        with pytest.raises(expected.get(name, AccessDeniedError)):
            call(target, known)


@dataclasses.dataclass
class Seeded:
    """The ids a namespace handle's calls need (each destructive call has its own)."""

    ids: dict[str, str]
    token: str


def seed(m: AgentMemory) -> Seeded:
    ids = {
        name: m.remember(f"the {name} step of the deploy runbook").id
        for name in ("read", "archive", "restore", "forget", "erase", "pin", "unpin", "link")
    }
    ids["core"] = m.remember("the deploy window is friday", type="semantic").id
    ids["retract"] = m.assert_fact("ana", "works_at", "acme").id
    m.assert_fact("ana", "lives_in", "lisbon")
    m.archive(ids["restore"])
    m.pin(ids["unpin"])
    m.add_turns("c", [Turn("user", f"turn {i} of the deploy talk") for i in range(4)])
    m.add_tool_result("c", "search", "the search found the deploy log")
    token = m.forget(id=m.remember("a note to bring back").id).token
    m.record_outcome("deploy", success=True)
    m.recall("deploy runbook")  # buffers accesses: flush has something to write
    m.hot("c")  # fills the hot tier's cache: a revoke must not be read around it
    return Seeded(ids, token)


MEMORY_CALLS: dict[str, Call] = {
    "repo": lambda m, s: m.repo,
    "archive_file": lambda m, s: m.archive_file,
    "flush": lambda m, s: m.flush(),
    "add_turn": lambda m, s: m.add_turn("c", "user", "one more turn"),
    "add_turns": lambda m, s: m.add_turns("c", [Turn("user", "two more turns")]),
    "add_tool_result": lambda m, s: m.add_tool_result("c", "search", "a new result"),
    "remember": lambda m, s: m.remember("a note written later"),
    "assert_fact": lambda m, s: m.assert_fact("ana", "likes", "tea"),
    "retract": lambda m, s: m.retract(s.ids["retract"]),
    "facts": lambda m, s: m.facts("ana"),
    "history": lambda m, s: m.history(),
    "record_outcome": lambda m, s: m.record_outcome("deploy", success=False),
    "best_procedures": lambda m, s: m.best_procedures("deploy"),
    "recall": lambda m, s: m.recall("deploy runbook"),
    "get": lambda m, s: m.get(s.ids["read"]),
    "accesses": lambda m, s: m.accesses(s.ids["read"]),
    "memories": lambda m, s: m.memories(),
    "adopt": lambda m, s: m.adopt(),
    "for_scope": lambda m, s: m.for_scope("acme", "zed"),
    "retrievability": lambda m, s: m.retrievability(s.ids["read"]),
    "feedback": lambda m, s: m.feedback(s.ids["read"]),
    "importance": lambda m, s: m.importance(s.ids["read"]),
    "prune": lambda m, s: m.prune(10**9),
    "link": lambda m, s: m.link(s.ids["read"], s.ids["link"]),
    "edges": lambda m, s: m.edges(s.ids["read"]),
    "archive": lambda m, s: m.archive(s.ids["archive"]),
    "restore": lambda m, s: m.restore(s.ids["restore"]),
    "forget": lambda m, s: m.forget(id=s.ids["forget"]),
    "undo": lambda m, s: m.undo(s.token),
    "erase": lambda m, s: m.erase(id=s.ids["erase"]),
    "tombstones": lambda m, s: m.tombstones(),
    "pin": lambda m, s: m.pin(s.ids["pin"]),
    "unpin": lambda m, s: m.unpin(s.ids["unpin"]),
    "pinned": lambda m, s: m.pinned(),
    "core_facts": lambda m, s: m.core_facts(),
    "mark_core": lambda m, s: m.mark_core(s.ids["core"]),
    "hot": lambda m, s: m.hot("c"),
    "latest_tool_result": lambda m, s: m.latest_tool_result("c"),
    "summarize": lambda m, s: m.summarize("c"),
    "context": lambda m, s: m.context("c", "deploy"),
    "namespace": lambda m, s: m.namespace(m.shared_namespace),
    "namespaces": lambda m, s: m.namespaces(),
    "shared": lambda m, s: m.shared(m.shared_namespace),
    "start_session": lambda m, s: m.start_session("s1"),
    "consolidate": lambda m, s: m.consolidate(),
    "extract": lambda m, s: m.extract("c"),
    "extract_turns": lambda m, s: m.extract_turns([s.ids["read"]]),
}
MEMORY_EXEMPT = {
    "open": "a constructor: opening on a revoked namespace is refused (test_namespaces)",
    "close": "closing never needs the grant (and must always work)",
    "now": "the injected clock",
    "now_us": "the injected clock",
    "drain_extraction": "waits for the background extractor's queue: reads no scope data",
}
# Refused on every namespace handle, granted or not: sessions start from an own handle.
MEMORY_EXPECTED: dict[str, type] = {"start_session": InvalidArgumentError}


@pytest.fixture
def granted_and_revoked(
    where: Path | str, clock: Clock
) -> Iterator[tuple[AgentMemory, AgentMemory, AgentMemory]]:
    """(owner, b on ``live`` — still granted, b on ``ops`` — to be revoked), each of
    b's handles opened while granted."""
    owner = open_memory(where, clock, agent_id="owner")
    for name in ("ops", "live"):
        owner.namespace(name).grant("b")
    live = open_memory(where, clock, agent_id="b", namespace="live")
    ops = open_memory(where, clock, agent_id="b", namespace="ops")
    yield owner, live, ops
    for m in (ops, live, owner):
        m.close()


def test_every_public_call_of_agent_memory_is_refused_after_a_revoke(
    granted_and_revoked: tuple[AgentMemory, AgentMemory, AgentMemory],
) -> None:
    owner, live, ops = granted_and_revoked
    check_complete(AgentMemory, MEMORY_CALLS, MEMORY_EXEMPT)
    run_all(live, seed(live), MEMORY_CALLS, MEMORY_EXPECTED)
    known = seed(ops)
    owner.namespace("ops").revoke("b")
    refuse_all(ops, known, MEMORY_CALLS, MEMORY_EXPECTED)
    assert ops.now() == live.now()
    ops.close()  # drops the buffered accesses: they are no longer b's to write
    with owner.shared("ops") as mine:  # the owner's data is intact
        assert mine.get(known.ids["read"]) is not None


CHAT_CALLS: dict[str, Call] = {
    "init": lambda c, msgs: c.init("b"),
    "add_message": lambda c, msgs: c.add_message("user", "a message written later"),
    "history": lambda c, msgs: c.history(),
    "recent": lambda c, msgs: c.recent(2),
    "search": lambda c, msgs: c.search("launch"),
    "add_summary": lambda c, msgs: c.add_summary("they set the launch", msgs[:2]),
    "remove": lambda c, msgs: c.remove([msgs[2].id]),
    "prune": lambda c, msgs: c.prune(10**6),
    "enforce": lambda c, msgs: c.enforce(),  # the decorators' own
    "clear": lambda c, msgs: c.clear(),
}
CHAT_EXEMPT = {
    "open": "a constructor: opens the memory, which checks the grant",
    "close": "closing never needs the grant",
    "conversation_id": "the history's own id",
    "memory": "the handle itself (its every call checks)",
    "erases": "the history's own setting",
    "token_counts": "counts the tokens of messages the caller holds: reads no scope data",
}
CHATS: dict[str, Callable[[AgentMemory, str], Any]] = {
    "plain": lambda m, cid: ChatHistory(m, cid),
    "capacity": lambda m, cid: CapacityLimitedChat(ChatHistory(m, cid), max_messages=50),
    "tokens": lambda m, cid: TokenLimitedChat(ChatHistory(m, cid), max_tokens=10**6),
    "summarizing": lambda m, cid: SummarizingChat(ChatHistory(m, cid), max_messages=50),
}


def chat_calls(chat: object) -> dict[str, Call]:
    """The calls of ``CHAT_CALLS`` this kind of history has (``enforce``: decorators')."""
    return {n: c for n, c in CHAT_CALLS.items() if hasattr(chat, n)}


def seed_chat(chat: Any) -> list[ChatMessage]:
    return [chat.add_message("user", f"the launch is on day {i}") for i in range(4)]


def test_every_public_call_of_a_chat_history_is_refused_after_a_revoke(
    granted_and_revoked: tuple[AgentMemory, AgentMemory, AgentMemory],
) -> None:
    owner, live, ops = granted_and_revoked
    for make in CHATS.values():
        chat = make(live, "probe")
        exempt = {n: why for n, why in CHAT_EXEMPT.items() if hasattr(chat, n)}
        check_complete(type(chat), chat_calls(chat), exempt)
    for kind, make in CHATS.items():
        chat = make(live, kind)
        run_all(chat, seed_chat(chat), chat_calls(chat), {})
    opened = {kind: make(ops, kind) for kind, make in CHATS.items()}  # before the revoke
    known = {kind: seed_chat(chat) for kind, chat in opened.items()}
    owner.namespace("ops").revoke("b")
    for kind, chat in opened.items():
        refuse_all(chat, known[kind], chat_calls(chat), {})
    fresh = ChatHistory(ops, "plain")  # a history built on the handle after the revoke
    refuse_all(fresh, known["plain"], chat_calls(fresh), {})
    with owner.shared("ops") as mine:
        assert len(ChatHistory(mine, "plain").history()) == 4


SKILL_CALLS: dict[str, Call] = {
    "repo": lambda k, d: k.repo,
    "save": lambda k, d: k.save("Rollback", "Undo a release.", ["revert", "ship"]),
    "load": lambda k, d: k.load("Deploy app"),
    "find_by_tag": lambda k, d: k.find_by_tag("ops"),
    "list": lambda k, d: k.list(),
    "export_markdown": lambda k, d: k.export_markdown(d / "export"),
    "import_markdown": lambda k, d: k.import_markdown(d / "import"),
    "delete": lambda k, d: k.delete("Old way"),
}
SKILL_EXEMPT = {
    "open": "a constructor: opens the memory, which checks the grant",
    "close": "closing never needs the grant",
    "memory": "the handle itself (its every call checks)",
}


def seed_skills(skills: SkillStore, folder: Path) -> Path:
    skills.save("Deploy app", "Ship the web app.", ["run tests", "ship"], tags=["ops"])
    skills.save("Old way", "How it was done.", ["by hand"])
    (folder / "import").mkdir(parents=True)
    new = check_skill("Hotfix", "Patch production.", ["branch", "patch", "ship"], ["ops"])
    (folder / "import" / "hotfix.md").write_text(render(new), encoding="utf-8")
    return folder


def test_every_public_call_of_a_skill_store_is_refused_after_a_revoke(
    data_dir: Path, clock: Clock, tmp_path: Path
) -> None:
    """SQLite only: skills are not on PostgreSQL yet."""
    check_complete(SkillStore, SKILL_CALLS, SKILL_EXEMPT)
    with open_memory(data_dir, clock, agent_id="owner") as owner:
        for name in ("ops", "live"):
            owner.namespace(name).grant("b")
        with open_memory(data_dir, clock, agent_id="b", namespace="live") as live:
            skills = SkillStore(live)
            run_all(skills, seed_skills(skills, tmp_path / "live"), SKILL_CALLS, {})
        ops = open_memory(data_dir, clock, agent_id="b", namespace="ops")
        skills = SkillStore(ops)
        folder = seed_skills(skills, tmp_path / "ops")
        owner.namespace("ops").revoke("b")
        refuse_all(skills, folder, SKILL_CALLS, {})
        assert not (folder / "export").exists()
        with pytest.raises(AccessDeniedError):
            SkillStore(ops)  # a store built on the handle after the revoke
        ops.close()
        with owner.shared("ops") as mine:
            assert [s.name for s in SkillStore(mine).list()] == ["Deploy app", "Old way"]


def test_skills_belong_to_the_handles_scope_not_the_acting_agents(
    data_dir: Path, clock: Clock
) -> None:
    """A namespace handle's skills are the namespace's (shared with its members), a
    session's are the session's; neither is the acting agent's own."""
    with open_memory(data_dir, clock, agent_id="owner") as owner:
        owner.namespace("ops").grant("b")
        with owner.shared("ops") as shared:
            SkillStore(shared).save("Team deploy", "The team's way.", ["ship"])
    with open_memory(data_dir, clock, agent_id="b") as b:
        SkillStore(b).save("My own", "b's own skill.", ["think"])
        with b.shared("ops") as ns, b.start_session("s1") as session:
            assert [s.name for s in SkillStore(ns).list()] == ["Team deploy"]
            SkillStore(session).save("Session only", "For this session.", ["try"])
            assert [s.name for s in SkillStore(session).list()] == ["Session only"]
        assert [s.name for s in SkillStore(b).list()] == ["My own"]


def test_a_revoke_made_by_another_process_holds_on_open_handles(
    where: Path | str, clock: Clock
) -> None:
    """The grant is read from the store on every use: the CLI's revoke, in a child
    process, holds on this process's open handles from their next call on."""
    with open_memory(where, clock, agent_id="owner") as owner:
        owner.namespace("ops").grant("b")
    b = open_memory(where, clock, agent_id="b", namespace="ops")
    chat = ChatHistory(b, "c")
    chat.add_message("user", "the launch moved to monday")
    skills = SkillStore(b) if isinstance(where, Path) else None
    if skills is not None:
        skills.save("Deploy app", "Ship the web app.", ["ship"])
    assert [m.content for m in chat.history()] == ["the launch moved to monday"]
    assert b.recall("launch")
    p = run_cli(
        where, "namespace", "revoke", "ops", "b", "--org", "acme", "--agent", "owner",
        "--json", passphrase=PASSPHRASE,
    )  # fmt: skip
    assert "b" not in p.stdout.split('"members"')[1]
    reads: list[Callable[[], object]] = [
        chat.history,
        lambda: chat.recent(1),
        lambda: chat.search("launch"),
        lambda: chat.add_message("user", "still here?"),
        lambda: ChatHistory(b, "c").history(),
        lambda: b.recall("launch"),
        lambda: b.memories(),
        lambda: b.hot("c"),
    ]
    if skills is not None:
        reads += [skills.list, lambda: skills.load("Deploy app")]
    for read in reads:
        with pytest.raises(AccessDeniedError):
            read()
    b.close()


def test_a_history_on_a_namespace_or_session_searches_that_scope(
    where: Path | str, clock: Clock
) -> None:
    """Issue 30, item 4: ``search`` searched the acting agent's own scope and then dropped
    every hit as another scope's, so it was always empty on these handles."""
    with open_memory(where, clock, agent_id="owner") as owner:
        owner.namespace("ops").grant("b")
    with open_memory(where, clock, agent_id="b") as b:
        ChatHistory(b, "c").add_message("user", "my own launch note")
        with b.shared("ops") as ns, b.start_session("s1") as session:
            for handle, text in ((ns, "the team launch is friday"), (session, "launch test")):
                chat = ChatHistory(handle, "c")
                msg = chat.add_message("user", text)
                found = chat.search("launch")
                assert [m.id for m in found] == [msg.id]
                assert [h.id for h in handle.recall("launch")] == [msg.id]
        assert [m.content for m in ChatHistory(b, "c").search("launch")] == ["my own launch note"]
