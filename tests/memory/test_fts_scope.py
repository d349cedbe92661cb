"""Keyword recall ANDs scope tokens into the FTS5 MATCH (``fts_scope``): every scope value,
however it is spelled, is one exact token, and ranking equals BM25 over ``content``."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.base.ranking import fts5_query
from agentzero_store.memory.records import Scope
from agentzero_store.memory.sqlite.fts_scope import match_expression, scope_tokens, token
from agentzero_store.memory.sqlite.recall import fts_match, owner_holds_all

from ..conftest import FAST, PASSPHRASE

# Values a tokenizer or stemmer would split, fold or shorten if they were indexed as text.
TRICKY = [
    "acme",
    "acme corp",
    "Acme",
    "ACME",
    "acme-corp",
    "acmes",
    "acmed",
    "Ácme",
    " ",
    '"acme" OR x',
    "org:1",
    "a" * 300,
]


def test_tokens_are_digits_behind_a_field_letter_and_differ_per_field() -> None:
    for v in TRICKY:
        toks = {token(f, v) for f in ("org_id", "agent_id", "conversation_id")}
        assert len(toks) == 3
        assert all(t[0] in "oac" and t[1:].isdigit() for t in toks)
    assert len({token("org_id", v) for v in TRICKY}) == len(TRICKY)
    assert scope_tokens("x", "y", "z").split() == [
        token("org_id", "x"),
        token("agent_id", "y"),
        token("conversation_id", "z"),
    ]


def test_match_expression_quotes_words_and_only_adds_given_fields() -> None:
    assert match_expression("!!", Scope(org_id="o")) is None
    m = match_expression('Zebra "NEAR" zebra', Scope(agent_id="a b"))
    assert m == f'content : ("zebra" OR "near") AND scope : "{token("agent_id", "a b")}"'


def test_scoped_keyword_recall_is_exact_for_every_spelling(tmp_path: Path) -> None:
    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        ids: dict[tuple[str, str], list[str]] = {}
        for v in TRICKY:
            for field in ("org_id", "conversation_id"):
                entries = [
                    dataclasses.replace(MemoryEntry(content=f"walrus note {i}"), **{field: v})
                    for i in range(2)
                ]
                ids[(field, v)] = s.append_many(entries, vectors=None)
        for (field, v), want in ids.items():
            got = [str(h.entry.id) for h in s.keyword_recall("walrus", 50, **{field: v})]
            assert sorted(got) == sorted(want), (field, v)
        assert len(s.keyword_recall("walrus", 100)) == 4 * len(TRICKY)


def test_bm25_order_is_content_only_and_expired_rows_do_not_take_slots(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        # More occurrences of the word in a short row rank higher; the org name (which is
        # also the query word) must not change the ranking: its column has weight 0.
        strong = s.append(MemoryEntry(content="heron heron heron", org_id="heron"))
        weak = s.append(MemoryEntry(content="heron among many other words here", org_id="heron"))
        expired = [
            s.append(
                MemoryEntry(
                    content="heron heron heron heron",
                    org_id="heron",
                    expires_at=now - timedelta(seconds=1 + i),
                )
            )
            for i in range(5)
        ]
        got = [h.entry.id for h in s.keyword_recall("heron", 2, org_id="heron")]
        assert got == [strong, weak]
        assert not set(expired) & {h.entry.id for h in s.keyword_recall("heron", 10)}


def test_deleted_rows_leave_the_scope_index(tmp_path: Path) -> None:
    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        a = s.append(MemoryEntry(content="ibis in the marsh", org_id="o"))
        b = s.append(MemoryEntry(content="ibis again", org_id="o"))
        assert s.delete(a)
        assert [h.entry.id for h in s.keyword_recall("ibis", 5, org_id="o")] == [b]


def test_ranking_equals_bm25_of_the_content_alone(tmp_path: Path) -> None:
    """The scope phrase in the MATCH changes which rows are scored, never their order: the
    answer equals the content-only FTS5 query joined to ``memory`` on the scope."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        s.append_many(
            [
                MemoryEntry(
                    content=" ".join(rng.choices(words, k=rng.randint(3, 15))),
                    org_id=f"o{i % 3}",
                    agent_id=f"a{i % 2}",
                )
                for i in range(600)
            ],
            vectors=None,
        )
        ref = (
            "SELECT m.id FROM memory_fts JOIN memory m ON m.label = memory_fts.rowid "
            "WHERE memory_fts MATCH ? AND m.org_id = ? AND m.agent_id = ? "
            "ORDER BY bm25(memory_fts, 1.0, 0.0), m.label LIMIT 20"
        )
        for _ in range(40):
            q = " ".join(rng.sample(words, 3))
            got = [h.entry.id for h in s.keyword_recall(q, 20, org_id="o1", agent_id="a0")]
            want = [r[0] for r in s._db.query(ref, (f"content : ({fts5_query(q)})", "o1", "a0"))]
            assert got == want, q
            assert got  # the words are common: every query has hits


def test_a_store_its_scope_owns_alone_leaves_the_scope_tokens_out_and_ranks_the_same(
    tmp_path: Path,
) -> None:
    """When one (org, agent) owns every row, its tokens would filter nothing: they are left
    out (they make BM25 scoring ~2.6x slower), and the answer equals the query with them.
    The moment a row of any other org or agent exists, even an expired one, they are back."""
    rng = random.Random(11)
    words = [f"w{i}" for i in range(40)]
    ref = (
        "SELECT m.id FROM memory_fts JOIN memory m ON m.label = memory_fts.rowid"
        " WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts, 1.0, 0.0), m.label LIMIT 15"
    )
    with SqliteMemoryStore.open(tmp_path / "d", passphrase=PASSPHRASE, config=FAST) as s:
        s.append_many(
            [
                MemoryEntry(content=" ".join(rng.choices(words, k=8)), org_id="o", agent_id="a")
                for _ in range(300)
            ],
            vectors=None,
        )
        scope = Scope(org_id="o", agent_id="a")
        assert owner_holds_all(s._db, scope)
        assert not owner_holds_all(s._db, Scope(org_id="o", agent_id="b"))
        assert not owner_holds_all(s._db, Scope(agent_id="a"))  # no org: no seek
        assert fts_match(s._db, "w1 w2", scope) == 'content : ("w1" OR "w2")'
        for _ in range(20):
            q = " ".join(rng.sample(words, 3))
            got = [h.entry.id for h in s.keyword_recall(q, 15, org_id="o", agent_id="a")]
            want = [r[0] for r in s._db.query(ref, (match_expression(q, scope),))]
            assert got == want and got, q
        for other in (
            MemoryEntry(content="w1", org_id="n", agent_id="a"),  # an org before "o"
            MemoryEntry(content="w1", org_id="p", agent_id="a"),  # an org after "o"
            MemoryEntry(content="w1", org_id="o", agent_id="0"),  # another agent of "o"
            MemoryEntry(
                content="w1",
                org_id="o",
                agent_id="z",
                expires_at=datetime.now(UTC) - timedelta(days=1),
            ),
        ):
            other_id = s.append(other)
            assert not owner_holds_all(s._db, scope)
            assert fts_match(s._db, "w1", scope) == match_expression("w1", scope)
            hits = s.keyword_recall("w1", 400, org_id="o", agent_id="a")
            assert other_id not in {h.entry.id for h in hits} and hits
            assert s.delete(other_id)
            assert owner_holds_all(s._db, scope)
