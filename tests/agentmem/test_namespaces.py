"""Shared namespaces (issue 17): created by their owner, used only while granted, a revoke
holding from the next call of a handle already open, and no leak into any other scope."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store.base.errors import AccessDeniedError, InvalidArgumentError

from .conftest import Clock, open_memory


def test_a_namespace_is_used_only_while_granted_and_a_revoke_holds_on_open_handles(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock, agent_id="owner") as owner:
        team = owner.namespace("team-chat")
        assert team.owner == "owner" and team.has_access("owner")
        assert not team.has_access("agent-b")
        with pytest.raises(AccessDeniedError):
            open_memory(where, clock, agent_id="agent-b", namespace="team-chat")
        team.grant("agent-b")
        assert team.has_access("agent-b") and team.members() == ["agent-b"]
        b = open_memory(where, clock, agent_id="agent-b", namespace="team-chat")
        b.add_turn("c1", "user", "the shared launch date is friday")
        owner.add_turn("c1", "user", "my private launch note")
        with owner.shared("team-chat") as mine:
            got = [h.memory.content for h in mine.recall("launch", k=10)]
        assert got == ["the shared launch date is friday"]  # not the owner's own note
        assert [h.memory.content for h in owner.recall("launch", k=10)] == [
            "my private launch note"
        ]
        assert [n.name for n in owner.namespaces()] == ["team-chat"]
        team.revoke("agent-b")
        with pytest.raises(AccessDeniedError):
            b.recall("launch")  # the handle was open before the revoke
        with pytest.raises(AccessDeniedError):
            b.add_turn("c1", "user", "still here?")
        b.close()  # closing never needs the grant
        with pytest.raises(InvalidArgumentError):
            team.revoke("owner")


def test_only_the_owner_grants_and_names_cannot_forge_a_scope(
    where: Path | str, clock: Clock
) -> None:
    with open_memory(where, clock, agent_id="owner") as owner:
        owner.namespace("ns1").grant("b")
    with open_memory(where, clock, agent_id="b") as b:
        team = b.namespace("ns1")  # a member may get the handle
        assert team.has_access("b")
        with pytest.raises(AccessDeniedError):
            team.grant("c")
        with pytest.raises(AccessDeniedError):
            team.revoke("b")
        assert [(n.name, n.role) for n in b.namespaces()] == [("ns1", "member")]
    with open_memory(where, clock, agent_id="c") as c, pytest.raises(AccessDeniedError):
        c.namespace("ns1")
    for bad in ("\x1ens\x1ens1", "a\x00b", "x\ny", ""):
        with pytest.raises(InvalidArgumentError):
            open_memory(where, clock, agent_id=bad)
        with pytest.raises(InvalidArgumentError):
            open_memory(where, clock, agent_id="owner", namespace=bad)
    with open_memory(where, clock, org_id="other-org", agent_id="owner") as stranger:
        # The same names in another org are another namespace, owned by whoever makes it.
        assert stranger.namespace("ns1").members() == []


AGENTS = ("a", "b", "c")


def test_store_level_tools_and_commands_cannot_name_a_namespace_scope(
    data_dir: Path, clock: Clock
) -> None:
    """Below the layer there is no grant check, so the ids that reach the memory store
    from outside (tool arguments, --org/--agent) refuse the control character every
    namespace and session scope holds: an ungranted agent cannot read a namespace
    through an unpinned tool or the store-level CLI by spelling its scope id."""
    from agentzero_store.agentmem.namespaces import scope_agent, session_agent
    from agentzero_store.tools import SemanticRecallTool
    from tests.conftest import PASSPHRASE, run_cli

    with open_memory(data_dir, clock, agent_id="owner") as owner:
        owner.namespace("vault")
        with owner.shared("vault") as vault:
            vault.add_turn("c1", "user", "the vault combination is 7-7-9")
        store = owner.store
        forged = [scope_agent("vault"), session_agent("owner", "s1"), "a\nb", "x\x7f"]
        tool = SemanticRecallTool(store)  # unpinned: the caller names the scope
        for agent in forged:
            with pytest.raises(InvalidArgumentError, match="control characters"):
                tool.run({"query": "vault combination", "mode": "keyword", "agent_id": agent})
        with pytest.raises(InvalidArgumentError, match="control characters"):
            tool.run({"query": "vault", "mode": "keyword", "org_id": "default\x1e"})
        # The namespace's row is there: the refusal, not an empty scope, kept it out.
        assert store.keyword_recall(
            "vault combination", 5, org_id="acme", agent_id=scope_agent("vault")
        )
    args = ["memory", "search", "vault", "--org", "acme", "--agent", scope_agent("vault")]
    p = run_cli(data_dir, *args, "--json", passphrase=PASSPHRASE, check=False)
    assert p.returncode == 2 and "control characters" in p.stdout + p.stderr
    assert "7-7-9" not in p.stdout + p.stderr


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    grants=st.lists(st.tuples(st.sampled_from(AGENTS[1:]), st.booleans()), max_size=6),
)
def test_recall_never_crosses_a_namespace_or_an_agent(
    tmp_path_factory: pytest.TempPathFactory, grants: list[tuple[str, bool]]
) -> None:
    data_dir = tmp_path_factory.mktemp("ns")
    clock = Clock()
    written: dict[str, set[str]] = {}  # scope -> markers written there
    with open_memory(data_dir, clock, agent_id="a") as a:
        team = a.namespace("team")
        for agent, grant in grants:
            (team.grant if grant else team.revoke)(agent)
        allowed = {"a"} | {x for x in AGENTS if team.has_access(x)}
        for agent in AGENTS:
            with open_memory(data_dir, clock, agent_id=agent) as own:
                own.add_turn("c", "user", f"zebra own {agent}")
                written.setdefault(agent, set()).add(f"zebra own {agent}")
            if agent in allowed:
                with open_memory(data_dir, clock, agent_id=agent, namespace="team") as shared:
                    shared.add_turn("c", "user", f"zebra shared by {agent}")
                    written.setdefault("team", set()).add(f"zebra shared by {agent}")
            else:
                with pytest.raises(AccessDeniedError):
                    open_memory(data_dir, clock, agent_id=agent, namespace="team")
        for agent in AGENTS:
            with open_memory(data_dir, clock, agent_id=agent) as own:
                got = {h.memory.content for h in own.recall("zebra", k=50)}
                assert got == written[agent]
                if agent in allowed:
                    with own.shared("team") as shared:
                        got = {h.memory.content for h in shared.recall("zebra", k=50)}
                        assert got == written["team"]
                        assert {m.content for m in shared.hot("c")} == written["team"]
                        pack = shared.context("c", "zebra")
                        assert {i.text for i in pack.items} == written["team"]
