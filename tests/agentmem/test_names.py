"""Names that look alike are one name or none (issue 30, item 8): org and agent ids,
namespace and session names take their NFKC form (case kept), and invisible characters
or letters of mixed scripts are refused (``base.limits.scope_name``); a store that already
holds data under such a spelling keeps it reachable as given (``agentmem.names``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentzero_store import InvalidArgumentError
from agentzero_store.agentmem import names, namespaces
from agentzero_store.base.limits import scope_name

from ..conftest import js, run_cli
from .conftest import Clock, open_memory

ZERO_WIDTH = "team\u200b"
CYRILLIC_E = "t\u0435am"  # the е is Cyrillic
FULL_WIDTH = "\uff54\uff45\uff41\uff4d"  # ｔｅａｍ


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (ZERO_WIDTH, "invisible"),
        ("te\u200dam", "invisible"),  # zero-width joiner
        ("\ufeffteam", "invisible"),  # byte order mark
        ("team\u202e", "invisible"),  # right-to-left override
        ("te\u00adam", "invisible"),  # soft hyphen
        (CYRILLIC_E, "CYRILLIC, LATIN"),
        ("\u03bfpenai", "GREEK, LATIN"),  # a Greek omicron
        ("team ", "space"),
        ("team\u3000", "space"),  # an ideographic space folds to a trailing space
    ],
)
def test_invisible_and_mixed_script_names_are_refused(name: str, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=words) as e:
        scope_name("namespace", name)
    assert e.value.hint


@pytest.mark.parametrize(
    ("name", "folded"),
    [
        ("team", "team"),
        ("Team", "Team"),  # case is kept: "Acme" and "acme" were always two scopes
        (FULL_WIDTH, "team"),
        ("Zoe\u0308", "Zo\u00eb"),
        ("a\u00a0b", "a b"),
        ("acme-corp.v2_1", "acme-corp.v2_1"),
        ("\u0430\u043a\u043c\u0435", "\u0430\u043a\u043c\u0435"),  # all Cyrillic
        ("東京タワー", "東京タワー"),  # Han and Katakana: how Japanese is written
        ("서울 Seoul", "서울 Seoul"),
    ],
)
def test_names_fold_to_their_nfkc_form(name: str, folded: str) -> None:
    assert scope_name("org_id", name) == folded


def test_spellings_that_fold_together_are_one_scope(where: Path | str, clock: Clock) -> None:
    with open_memory(where, clock, org_id=FULL_WIDTH, agent_id="Ａ1") as mem:
        assert (mem.org_id, mem.agent_id) == ("team", "A1")
        mid = mem.remember("the full-width spelling wrote this").id
        assert mem.namespace("ｓｈａｒｅｄ").name == "shared"
        with mem.shared("shared") as shared:
            shared.remember("in the namespace")
        assert [n.name for n in mem.namespaces()] == ["shared"]
    with open_memory(where, clock, org_id="team", agent_id="A1") as mem:
        assert [m.id for m in mem.memories()] == [mid]
        with mem.for_scope("ｔｅａｍ", "A1") as same:
            assert [m.id for m in same.memories()] == [mid]


def test_look_alike_names_are_refused_everywhere(where: Path | str, clock: Clock) -> None:
    for bad in (ZERO_WIDTH, CYRILLIC_E):
        with pytest.raises(InvalidArgumentError):
            open_memory(where, clock, org_id=bad)
        with pytest.raises(InvalidArgumentError):
            open_memory(where, clock, agent_id=bad)
    with open_memory(where, clock) as mem:
        ns = mem.namespace("team")
        for bad in (ZERO_WIDTH, CYRILLIC_E):
            for call in (
                mem.namespace,
                mem.shared,
                mem.start_session,
                lambda name: mem.for_scope(name, "a1"),
                ns.grant,
            ):
                with pytest.raises(InvalidArgumentError):
                    call(bad)
        ns.grant("ｂｏｂ")  # folds: "bob" is the agent granted
        assert ns.members() == ["bob"] and ns.has_access("bob") and ns.has_access("ｂｏｂ")
        assert [n.name for n in mem.namespaces()] == ["team"]


def test_data_under_an_old_spelling_stays_reachable(
    where: Path | str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a version that matched names exactly wrote: a scope, a namespace and a
    # grant spelled with a Cyrillic е and a zero-width space.
    with monkeypatch.context() as m:
        for module in (names, namespaces):
            m.setattr(module, "scope_name", lambda what, value: value)
        with open_memory(where, clock, org_id=CYRILLIC_E) as old:
            mid = old.remember("written under the old spelling").id
            old.namespace(ZERO_WIDTH).grant(CYRILLIC_E)
            with old.shared(ZERO_WIDTH) as shared:
                nid = shared.remember("shared under the old spelling").id
    with (
        pytest.warns(UserWarning, match="used as given"),
        open_memory(where, clock, org_id=CYRILLIC_E) as mem,
    ):
        assert mem.org_id == CYRILLIC_E and [m.id for m in mem.memories()] == [mid]
        with mem.shared(ZERO_WIDTH) as shared:
            assert [m.id for m in shared.memories()] == [nid]
        ns = mem.namespace(ZERO_WIDTH)
        assert ns.has_access(CYRILLIC_E)
        ns.revoke(CYRILLIC_E)
        assert ns.members() == []
        # No new scope is made under such a spelling.
        with pytest.raises(InvalidArgumentError):
            mem.namespace("new\u200b")
    with pytest.raises(InvalidArgumentError):
        open_memory(where, clock, org_id=CYRILLIC_E, agent_id="never-written")


def test_cli_refuses_a_look_alike_org(data_dir: Path) -> None:
    run_cli(data_dir, "init")
    p = run_cli(
        data_dir,
        "memory",
        "remember",
        "x",
        "--org",
        CYRILLIC_E,
        "--embedder",
        "none",
        "--json",
        check=False,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert js(p)["error"] == "invalid_argument" and "scripts" in js(p)["message"]
