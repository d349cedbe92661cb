"""The grant of a namespace handle is checked once per public call (``ScopeGate.call``),
not on every read of the gate inside it (context() used to ask 10 to 12 times), and
still on every read outside a call. That a revoke holds from the next call on, on every
public member, is test_revoke.py's."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import AgentMemory
from agentzero_store.agentmem.chat.history import ChatHistory
from agentzero_store.agentmem.chat.limits import CapacityLimitedChat, SummarizingChat
from agentzero_store.agentmem.records import Turn
from agentzero_store.base.errors import AccessDeniedError

from .conftest import Clock, open_memory


class CountingChecks:
    """A spy on the repository's grant query (``may_use``), counting its calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, repo_class: type) -> None:
        self.n = 0
        real = repo_class.may_use

        def may_use(repo: Any, namespace: str, agent_id: str) -> bool:
            self.n += 1
            return bool(real(repo, namespace, agent_id))

        monkeypatch.setattr(repo_class, "may_use", may_use)

    def of(self, call: Callable[[], object]) -> int:
        """The checks one call makes."""
        self.n = 0
        call()
        return self.n


@pytest.fixture
def shared(where: Path | str, clock: Clock) -> Iterator[tuple[AgentMemory, AgentMemory]]:
    """(the owner, agent b on namespace ``ops``: granted, with turns, notes and a pin)."""
    owner = open_memory(where, clock, agent_id="owner")
    owner.namespace("ops").grant("b")
    b = open_memory(where, clock, agent_id="b", namespace="ops")
    for i in range(5):
        b.remember(f"step {i} of the deploy runbook")
    b.add_turns("c", [Turn("user", f"turn {i} about the deploy") for i in range(12)])
    b.pin(b.remember("the deploy window is friday").id)
    b.assert_fact("ana", "works_at", "acme", core=True)
    yield owner, b
    b.close()
    owner.close()


def test_each_public_call_of_a_namespace_handle_checks_the_grant_once(
    shared: tuple[AgentMemory, AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, b = shared
    checks = CountingChecks(monkeypatch, type(b.repo))
    chat = ChatHistory(b, "c")
    capped = CapacityLimitedChat(ChatHistory(b, "capped"), max_messages=2)
    folded = SummarizingChat(ChatHistory(b, "folded"), max_messages=2)
    for limited in (capped, folded):  # full: the next message makes them drop or fold
        for text in ("the first message", "the second message"):
            limited.add_message("user", text)
    calls: dict[str, Callable[[], object]] = {
        "history": lambda: b.history(),
        "recall": lambda: b.recall("deploy runbook"),
        "context": lambda: b.context("c", "deploy"),
        "context without a query": lambda: b.context("c"),
        "memories": lambda: b.memories(),
        "assert_fact": lambda: b.assert_fact("ana", "lives_in", "lisbon"),
        "consolidate": lambda: b.consolidate(dry_run=True),
        "chat history": lambda: chat.history(),
        "chat search": lambda: chat.search("deploy"),
        "capped chat add_message": lambda: capped.add_message("user", "one more"),
        "summarizing chat add_message": lambda: folded.add_message("user", "and more"),
    }
    counted = {name: checks.of(call) for name, call in calls.items()}
    assert counted == dict.fromkeys(calls, 1)


def test_outside_a_call_every_read_of_the_gate_checks(
    shared: tuple[AgentMemory, AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, b = shared
    checks = CountingChecks(monkeypatch, type(b.repo))
    assert checks.of(lambda: (b.repo, b.archive_file, b.gate.scope())) == 3


def test_a_call_binds_the_check_in_its_own_thread_only(
    shared: tuple[AgentMemory, AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker thread (the background extraction's, say) reading the gate while another
    thread's call is bound checks for itself."""
    _, b = shared
    checks = CountingChecks(monkeypatch, type(b.repo))
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            assert b.gate.scope().agent_id == b.scope_agent
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def one_call_with_a_worker() -> None:
        with b.gate.call():
            b.gate.scope()
            worker = threading.Thread(target=other_thread)
            worker.start()
            worker.join()
            b.gate.scope()

    assert checks.of(one_call_with_a_worker) == 2
    assert not errors


def test_a_revoke_between_two_calls_refuses_the_second(
    shared: tuple[AgentMemory, AgentMemory],
) -> None:
    owner, b = shared
    assert b.context("c", "deploy").items
    owner.namespace("ops").revoke("b")
    with pytest.raises(AccessDeniedError):
        b.context("c", "deploy")
    with pytest.raises(AccessDeniedError):
        b.history()


def test_an_own_handle_checks_nothing(
    where: Path | str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(where, clock) as mem:
        mem.add_turns("c", [Turn("user", "a turn")])
        checks = CountingChecks(monkeypatch, type(mem.repo))
        assert checks.of(lambda: mem.context("c", "turn")) == 0
