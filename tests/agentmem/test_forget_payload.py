"""The forget payload is stored (the undo area), so its encoding outlives the code that
wrote it: payloads written by earlier versions, as lists read by position, must still
undo, and today's code must write exactly that layout (``rows.encode_payload``)."""

from __future__ import annotations

import json
from typing import Any

from agentzero_store import AgentMemory, SqliteMemoryStore
from agentzero_store.agentmem.rows import (
    KEPT_LAYER,
    KEPT_MEMORY,
    decode_payload,
    encode_payload,
)
from agentzero_store.agentmem.sqlite.forget import TABLES as SQLITE_TABLES

# What the forget of earlier versions selected, by position (``sqlite.lifecycle``
# before the payload was typed): the memory row, the ``am_memory`` view, ``SELECT *``.
OLD_MEMORY = (
    "SELECT id, role, content, created_at_us, conversation_id, org_id, agent_id,"
    " expires_at_us, kind, source, metadata, embedding_model FROM memory WHERE id = ?"
)
OLD_AM_MEMORY = (
    "SELECT id, label, org_id, agent_id, conversation_id, type, speaker, created_at_us,"
    " fingerprint, confidence, importance, salience, stability, difficulty, last_review_us,"
    " access_count, last_access_us, retrievability, archived_at_us, archive_digest,"
    " promoted_to, speaker_key FROM am_memory WHERE id = ?"
)


def _old_payload(store: SqliteMemoryStore, mid: str) -> dict[str, Any]:
    """The payload the earlier forget wrote for ``mid``, built the way it built it."""
    q = store.database.query
    fact = q("SELECT * FROM am_fact WHERE id = ?", (mid,))
    proc = q("SELECT * FROM am_procedure WHERE id = ?", (mid,))
    return {
        "memory": list(q(OLD_MEMORY, (mid,))[0]),
        "am_memory": list(q(OLD_AM_MEMORY, (mid,))[0]),
        "about": [list(a) for a in q("SELECT entity, key FROM am_about WHERE memory_id = ?",
                                      (mid,))],
        "fact": list(fact[0]) if fact else None,
        "procedure": list(proc[0]) if proc else None,
        "edges": [list(e) for e in q("SELECT * FROM am_edge WHERE src = ? OR dst = ?", (mid, mid))],
    }  # fmt: skip


def _before_v4(p: dict[str, Any]) -> dict[str, Any]:
    """``p`` as a payload kept before the layer's schema v4: no speaker key in its layer
    row, and its speaker among its ``am_about`` rows."""
    am = list(p["am_memory"])
    key = am.pop()
    about = list(p["about"])
    if key is not None:
        about = sorted([*about, [am[6], key]], key=lambda a: a[1])
    return {**p, "am_memory": am, "about": about}


def _seed(mem: AgentMemory) -> dict[str, str]:
    """A turn with a speaker and entities, a fact, a procedure, edges and an archived
    note: every table a forget keeps rows of."""
    turn = mem.add_turn("c1", "user", "Ottoline moved the launch to Zanzibar",
                        speaker="Ottoline", about=["Zanzibar", "launch"])  # fmt: skip
    fact = mem.assert_fact("Ottoline", "prefers", "green tea").id
    proc = mem.record_outcome("restart the server", success=True, context="deploy").id
    note = mem.remember("the parking code is 4417", about=["parking"]).id
    mem.link(turn, fact, "causal", confidence=0.5)
    mem.link(note, turn, "semantic")
    assert mem.archive(note)
    return {"turn": turn, "fact": fact, "procedure": proc, "archived note": note}


def _snapshot(mem: AgentMemory, ids: dict[str, str]) -> object:
    return (
        {what: mem.get(mid) for what, mid in ids.items()},
        mem.facts(history=True),
        mem.best_procedures("restart the server", k=3),
        {what: mem.edges(mid) for what, mid in ids.items()},
    )


def _undo_old_payloads(smem: AgentMemory, shape: Any) -> None:
    store = smem.store
    assert isinstance(store, SqliteMemoryStore)
    ids = _seed(smem)
    before = _snapshot(smem, ids)
    tokens = {}
    for what, mid in ids.items():
        old = shape(_old_payload(store, mid))
        tokens[what] = smem.forget(id=mid).token
        with store.transaction() as tx:
            tx.execute(
                "UPDATE am_forgotten SET payload = ? WHERE memory_id = ?", (json.dumps(old), mid)
            )
    assert all(smem.get(mid) is None for mid in ids.values())
    for what, token in tokens.items():
        assert smem.undo(token) == 1, what
    assert _snapshot(smem, ids) == before


def test_a_payload_written_by_the_positional_code_still_undoes(smem: AgentMemory) -> None:
    _undo_old_payloads(smem, lambda p: p)


def test_a_payload_kept_before_the_layers_v4_still_undoes(smem: AgentMemory) -> None:
    _undo_old_payloads(smem, _before_v4)


def test_todays_payload_is_the_stored_layout(bmem: AgentMemory) -> None:
    """What forget stores reads back and encodes again to the same JSON, in the layout
    earlier versions wrote (12 memory columns, 22 layer columns, table rows as lists)."""
    ids = _seed(bmem)
    tokens = [bmem.forget(id=mid).token for mid in ids.values()]
    store = bmem.store
    if isinstance(store, SqliteMemoryStore):
        rows = store.database.query("SELECT memory_id, payload FROM am_forgotten")
        raws = {str(m): json.loads(p) for m, p in rows}
        tables = SQLITE_TABLES
    else:
        from agentzero_store.agentmem.postgres.forget import TABLES as PG_TABLES

        codec = bmem.repo.codec  # type: ignore[attr-defined]  # PgRepository's
        rows = store.query("SELECT memory_id, payload FROM az_am_forgotten")  # type: ignore[attr-defined]
        raws = {str(m): codec.open("az_am_forgotten", str(m), p) for m, p in rows}
        tables = PG_TABLES
    assert sorted(raws) == sorted(ids.values())
    for mid, raw in raws.items():
        assert sorted(raw) == ["about", "am_memory", "edges", "fact", "memory", "procedure"]
        assert len(raw["memory"]) == len(KEPT_MEMORY) == 12
        assert len(raw["am_memory"]) == len(KEPT_LAYER) == 22
        payload = decode_payload(raw, tables)
        assert payload.memory.id == payload.layer.id == mid
        assert encode_payload(payload, tables) == raw
    assert raws[ids["fact"]]["fact"] is not None
    assert raws[ids["procedure"]]["procedure"] is not None
    assert raws[ids["archived note"]]["am_memory"][18] is not None  # archived_at_us
    assert raws[ids["turn"]]["edges"]
    assert [bmem.undo(t) for t in tokens] == [1] * len(tokens)


def test_the_payload_names_every_column_of_the_tables_it_keeps(bmem: AgentMemory) -> None:
    """A column added to a kept table must be added to its backend's ``TABLES`` (and a
    payload kept before it then reads without it): the undo would otherwise drop it."""
    store = bmem.store
    if isinstance(store, SqliteMemoryStore):
        tables, prefix = SQLITE_TABLES, "am_"

        def columns(table: str) -> tuple[str, ...]:
            return tuple(str(r[1]) for r in store.database.query(f"PRAGMA table_info({table})"))
    else:
        from agentzero_store.agentmem.postgres.forget import TABLES as PG_TABLES

        tables, prefix = PG_TABLES, "az_am_"

        def columns(table: str) -> tuple[str, ...]:
            rows = store.query(  # type: ignore[attr-defined]
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " ORDER BY ordinal_position",
                (table,),
            )
            return tuple(str(r[0]) for r in rows)

    assert columns(f"{prefix}fact") == tables.fact
    assert columns(f"{prefix}procedure") == tables.procedure
    assert columns(f"{prefix}edge") == tables.edge
