"""The agent-memory repository's forget and undo on SQLite: the undo area (``am_forgotten``)
and the forget payload, filled by name in one place (``ForgetRows._kept``) and read by
name in one (``ForgetRows.unforget``); its stored layout is ``rows.encode_payload``'s."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...memory.sqlite.rows import placeholders
from ...memory.sqlite.tx import WriteTx
from ...memory.sqlite.write import Prepared
from ..records import entity_key
from ..rows import (
    KEPT_LAYER,
    KEPT_MEMORY,
    ForgetPayload,
    Forgotten,
    KeptLayer,
    KeptMemory,
    PayloadTables,
    decode_payload,
    encode_payload,
)
from .core import batches
from .reads import ReadRows
from .schema import LAYER_COLUMNS

# The layer's columns an undo writes back into the memory row (its speaker key is
# computed again from its speaker).
_KEPT = [n for n, _ in LAYER_COLUMNS if n != "speaker_key"]
# The columns of the tables a forget keeps rows of, in their table order (a payload
# stores each row as a list in this order: ``rows.encode_payload``).
TABLES = PayloadTables(
    fact=(
        "id",
        "org_id",
        "agent_id",
        "subject",
        "predicate",
        "object",
        "subject_key",
        "predicate_key",
        "object_key",
        "confidence",
        "single_valued",
        "valid_from_us",
        "valid_to_us",
        "superseded_by",
        "retracted",
    ),
    procedure=(
        "id",
        "org_id",
        "agent_id",
        "action",
        "context",
        "action_key",
        "context_key",
        "successes",
        "failures",
        "updated_at_us",
    ),
    edge=("src", "dst", "type", "org_id", "agent_id", "confidence", "created_at_us"),
)

if TYPE_CHECKING:
    from ..seam import LayerTx, PreparedRows


def _insert(table: str, row: dict[str, Any], conflict: str = "") -> str:
    """An INSERT of ``row``'s columns (by name: a payload's ``TABLES`` columns)."""
    return f"INSERT {conflict} INTO {table} ({', '.join(row)}) VALUES ({placeholders(len(row))})"


class ForgetRows(ReadRows):
    """Forget and undo (see the module)."""

    # ------------------------------------------------------------------ forget, undo
    def forget(
        self,
        tx: LayerTx,
        chosen: Sequence[tuple[str, int]],
        token: str,
        at_us: int,
        until_us: int,
    ) -> None:
        """Move memories into the undo area: every row of every table that holds them is
        kept there (text, vector, decay state, facts, edges), then deleted everywhere, in
        the caller's one transaction, so no index can still return them."""
        for mid, label in chosen:
            payload = self._kept(tx, mid, label)
            vec = tx.query("SELECT embedding FROM memory_vec WHERE label = ?", (label,))
            skey = payload.layer.speaker_key
            keys = {k for _, k in payload.about} | ({skey} if skey is not None else set())
            tx.execute(
                "INSERT INTO am_forgotten (memory_id, token, org_id, agent_id, conversation_id,"
                " about, forgotten_at_us, until_us, payload, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    mid,
                    token,
                    *self._scope,
                    payload.memory.conversation_id,
                    json.dumps(sorted(keys)),
                    at_us,
                    until_us,
                    json.dumps(encode_payload(payload, TABLES)),
                    vec[0][0] if vec else None,
                ),
            )
        self._drop_layer_rows(tx, [mid for mid, _ in chosen])
        tx.delete_labels([label for _, label in chosen])

    def _kept(self, tx: LayerTx, mid: str, label: int) -> ForgetPayload:
        """What forget keeps of one memory: its rows, read by column name (the one place
        this backend fills a ``ForgetPayload``)."""

        def one(table: str, columns: Sequence[str], where: str, *args: Any) -> list[Any]:
            return tx.query(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", args)

        def named(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
            return dict(zip(columns, row, strict=True))

        fact = one("am_fact", TABLES.fact, "id = ?", mid)
        proc = one("am_procedure", TABLES.procedure, "id = ?", mid)
        return ForgetPayload(
            KeptMemory(**named(KEPT_MEMORY, one("memory", KEPT_MEMORY, "label = ?", label)[0])),
            KeptLayer(**named(KEPT_LAYER, one("am_memory", KEPT_LAYER, "id = ?", mid)[0])),
            tuple(
                (str(e), str(k))
                for e, k in one("am_about", ("entity", "key"), "memory_id = ?", mid)
            ),
            named(TABLES.fact, fact[0]) if fact else None,
            named(TABLES.procedure, proc[0]) if proc else None,
            tuple(
                named(TABLES.edge, e)
                for e in one("am_edge", TABLES.edge, "src = ? OR dst = ?", mid, mid)
            ),
        )

    def _drop_layer_rows(self, tx: LayerTx, ids: Sequence[str]) -> None:
        for part in batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            for table, col in (
                ("am_about", "memory_id"),
                ("am_fact", "id"),
                ("am_procedure", "id"),
            ):
                tx.execute(f"DELETE FROM {table} WHERE {col} IN ({ph})", args)
            tx.execute(f"DELETE FROM am_edge WHERE src IN ({ph}) OR dst IN ({ph})", args + args)

    def _drop_references(self, tx: LayerTx, ids: Sequence[str]) -> None:
        """Pins, core marks, provenance either way and every summary made from these
        memories (a summary's text may quote them): for erase, and the purge after an
        undo window."""
        for part in batches(list(ids)):
            ph, args = placeholders(len(part)), list(part)
            tx.execute(f"DELETE FROM am_pin WHERE memory_id IN ({ph})", args)
            tx.execute(
                f"DELETE FROM am_source WHERE memory_id IN ({ph}) OR source_id IN ({ph})",
                args + args,
            )
            tx.execute(f"DELETE FROM am_core WHERE memory_id IN ({ph})", args)
            made = f"SELECT summary_id FROM am_summary_source WHERE memory_id IN ({ph})"
            tx.execute(f"DELETE FROM am_summary WHERE id IN ({made})", args)
            tx.execute(f"DELETE FROM am_summary_source WHERE summary_id IN ({made})", args)

    def forgotten(self, token: str, now_us: int) -> list[Forgotten]:
        """The entries of a forget still within its undo window, by id."""
        rows = self._q(
            "SELECT memory_id, payload, vector FROM am_forgotten WHERE token = ? AND org_id = ?"
            " AND agent_id = ? AND until_us > ? ORDER BY memory_id",
            (token, *self._scope, now_us),
        )
        return [Forgotten(str(r[0]), decode_payload(json.loads(r[1]), TABLES), r[2]) for r in rows]

    def reinsert(self, tx: LayerTx, prepared: PreparedRows) -> dict[str, int]:
        """Insert the memory rows of forgotten memories again (``unforget`` then puts the
        layer's columns back); id -> label of the rows written."""
        assert isinstance(tx, WriteTx) and isinstance(prepared, Prepared), "a SQLite store's"
        return dict(tx.insert(prepared))

    def unforget(
        self, tx: LayerTx, payloads: Sequence[ForgetPayload], labels: Sequence[int]
    ) -> None:
        """Put the layer's rows of forgotten memories back (their memory rows were just
        re-inserted through ``tx`` under ``labels``) and empty their undo entries."""
        speakers: set[str] = set()
        for p, label in zip(payloads, labels, strict=True):
            kept = p.layer
            # A payload kept before the layer's columns moved into the memory row has no
            # speaker key, and its speaker among its am_about rows.
            key = entity_key(kept.speaker) if kept.speaker is not None else None
            tx.execute(
                f"UPDATE memory SET ({', '.join(_KEPT)}, speaker_key) ="
                f" ({placeholders(len(_KEPT) + 1)}) WHERE label = ?",
                (*(getattr(kept, n) for n in _KEPT), key, label),
            )
            if key is not None:
                speakers.add(key)
            tx.executemany(
                "INSERT OR IGNORE INTO am_about (memory_id, org_id, agent_id, entity, key)"
                " VALUES (?,?,?,?,?)",
                [(kept.id, *self._scope, e, k) for e, k in p.about if k != key],
            )
            for table, row in (("am_fact", p.fact), ("am_procedure", p.procedure)):
                if row is not None:
                    tx.execute(_insert(table, row), tuple(row.values()))
            for e in p.edges:
                tx.execute(_insert("am_edge", e, "OR IGNORE"), tuple(e.values()))
            tx.execute("DELETE FROM am_forgotten WHERE memory_id = ?", (kept.id,))
        self._add_speakers(tx, speakers)

    def forgotten_select(self, selector: str, value: str) -> list[str]:
        """Ids in the undo area chosen like ``select`` (erase reaches them too)."""
        cond = {
            "id": "memory_id = ?",
            "conversation_id": "conversation_id = ?",
            "about": "EXISTS (SELECT 1 FROM json_each(about) WHERE value = ?)",
        }[selector]
        rows = self._q(
            f"SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ? AND {cond}",
            (*self._scope, value),
        )
        return [str(r[0]) for r in rows]

    def purgeable(self, now_us: int) -> list[str]:
        """Ids in the undo area whose window has passed."""
        return [
            str(r[0])
            for r in self._q(
                "SELECT memory_id FROM am_forgotten WHERE org_id = ? AND agent_id = ?"
                " AND until_us <= ? ORDER BY memory_id",
                (*self._scope, now_us),
            )
        ]


__all__ = ["TABLES", "ForgetRows"]
