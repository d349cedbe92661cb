"""Re-keying the agent memory's PostgreSQL tables under a new master key (a rotation).

The layer keeps two kinds of values derived from the master key (``codec``):

- **sealed** values, bound to their table, row and scope: opened under the old key and
  sealed again under the new one with the same associated data;
- **keyed hashes** of plain keys (entity, fact and procedure keys; an archived text's
  digest). A hash cannot be re-keyed, only computed again from what it hashes, so each
  is computed from the sealed value beside it, exactly as the layer computed it when
  it wrote it: ``records.entity_key`` of the opened spelling, blinded per scope
  (``core.insert``, ``beliefs.insert_fact`` and ``insert_procedure`` (a procedure
  without a context is keyed by ``""``), ``lifecycle.forget``'s ``about`` list (the
  entities' keys and the speaker's)).

Table by table (``rekey_tables``), after the memory rows (``rekey``, a
``pg.rekey.RowExtension``: the layer's columns of ``az_memory`` go in the memory
store's own UPDATE of each row):

- ``az_memory``: ``speaker`` re-sealed, ``speaker_key`` from it; ``archive_digest`` from
  the archived text (``az_am_archive``), whose words and fingerprint the row's
  postings and fingerprint came from (its content is a pointer);
- ``az_am_about``: ``entity`` re-sealed, ``key`` from it;
- ``az_am_fact`` / ``az_am_procedure``: ``sealed`` re-sealed, the keys from it;
- ``az_am_history.detail``, ``az_am_summary.text``, ``az_am_archive.sealed``;
- ``az_am_forgotten``: the payload is opened and, inside it, what an undo writes back
  as it is: the fact's and the procedure's rows (sealed value and keys), the
  fingerprint and the archived text's digest; sealed again; ``about`` from its
  entities and speaker;
- ``az_am_speaker`` (keys only): each key is matched against the speakers of its scope
  seen in the memory rows and the forget payloads; a key no memory speaks with any
  more (``prune_speakers`` would drop it) is dropped.

A digest that did not match its archived text before the rotation is left as it was:
it still does not match after, so ``PgArchive.get`` still reports that text as damaged
instead of the rotation laundering it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...base.errors import SchemaVersionError
from ...memory.postgres.rekey import BATCH, MemoryRow, RekeyTx, RowChange
from ...memory.postgres.rows import RowCodec
from ...storage.keys import StoreKeys
from ..records import entity_key
from .archive import FORGOTTEN, TABLE, open_text
from .beliefs import history_row_id
from .codec import LayerCodec
from .schema import SCHEMA_KEY, SCHEMA_VERSION

Advance = Callable[[int], None]
Scope = tuple[str, str]

# The tables re-keyed after the memory rows, in order: the forget payloads and the
# memory rows read archived texts under the old key, so the archive comes after them;
# the speakers last, once every speaker of a scope has been seen.
TABLES = (
    "az_am_about",
    "az_am_fact",
    "az_am_procedure",
    "az_am_history",
    "az_am_summary",
    FORGOTTEN,
    TABLE,
    "az_am_speaker",
)
# Positions in a forget payload's ``am_memory`` (``lifecycle._payload``) and in the
# fact and procedure rows it keeps (``SELECT *`` of their tables, ``schema.V1``).
_FP, _ARCHIVED_AT, _DIGEST, _SPEAKER_KEY = 8, 18, 19, -1
_SEALED = 3  # the sealed column of az_am_fact and az_am_procedure rows


@dataclass
class LayerReport:
    """Rows re-keyed per table, and what could not be derived as written (by id)."""

    rows: dict[str, int] = field(default_factory=dict)
    digests_kept: list[str] = field(default_factory=list)  # did not match before either
    keys_recomputed: list[str] = field(default_factory=list)  # stored key was not its value's
    speakers_dropped: int = 0  # az_am_speaker keys no memory of the scope speaks with


def present(tx: RekeyTx) -> bool:
    """Whether the agent memory ever opened this store (its tables exist). A newer
    layer schema than this version knows is refused: its tables may hold keyed values
    this rotation would leave under the old key."""
    rows = tx.query("SELECT value FROM az_meta WHERE key = %s", (SCHEMA_KEY,))
    if not rows:
        return False
    version = int(rows[0][0])
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has agent-memory schema {version}; this version re-keys up to "
            f"{SCHEMA_VERSION}: the rotation changed nothing",
            hint="rotate with the agentzero-store version that wrote the store",
        )
    return version >= 1


class LayerRekey:
    """The agent memory's part of a rotation, in the rotation's transaction ``tx``."""

    reads: tuple[str, ...] = ("speaker", "speaker_key", "archive_digest")
    writes: tuple[tuple[str, str], ...] = (
        ("speaker", "bytea"),
        ("speaker_key", "text"),
        ("archive_digest", "text"),
    )

    def __init__(self, tx: RekeyTx, old: StoreKeys, new: StoreKeys, *, batch: int = BATCH) -> None:
        self._tx = tx
        self._keys = (old, new)
        self._rows = (RowCodec(old), RowCodec(new))
        self._batch = batch
        self._codecs: dict[Scope, tuple[LayerCodec, LayerCodec]] = {}
        self._speakers: dict[Scope, set[str]] = {}  # plain entity keys of speakers seen
        self.report = LayerReport()

    def __repr__(self) -> str:
        return "LayerRekey(<keys hidden>)"

    def _pair(self, org: str, agent: str) -> tuple[LayerCodec, LayerCodec]:
        pair = self._codecs.get((org, agent))
        if pair is None:
            pair = (LayerCodec(self._keys[0], org, agent), LayerCodec(self._keys[1], org, agent))
            self._codecs[(org, agent)] = pair
        return pair

    def count(self) -> int:
        """How many rows ``rekey_tables`` rewrites (a progress total)."""
        total = 0
        for table in TABLES:
            total += int(self._tx.query(f"SELECT count(*) FROM {table}")[0][0])
        return total

    # ------------------------------------------------------------------ memory rows
    def rekey(self, rows: Sequence[MemoryRow]) -> list[RowChange]:
        """The layer's columns of memory rows under the new key, and an archived row's
        text (what its fingerprint and postings were computed from)."""
        texts = self._archived([(m.id, m.org_id, m.agent_id) for m in rows if m.extra[2]])
        out = []
        for m in rows:
            blob, stored_key, digest = m.extra
            old, new = self._pair(m.org_id, m.agent_id)
            speaker = key = None
            if blob is not None:
                name = str(old.open("az_memory.speaker", m.id, blob))
                speaker = new.seal("az_memory.speaker", m.id, name)
                key = self._rekey_key(old, new, entity_key(name), stored_key, m.id)
                self._speakers.setdefault((m.org_id, m.agent_id), set()).add(entity_key(name))
            text = texts.get(m.id)
            if text is not None:
                digest = self._digest(old, new, text, digest, m.id)
            out.append(RowChange((text[0],) if text else (), (speaker, key, digest)))
        return out

    def _archived(self, rows: Sequence[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
        """(content, metadata JSON) of the archived texts of (id, org, agent) rows, opened
        under the old key; an id without one (damaged: ``PgArchive.get`` says so) is
        missing."""
        if not rows:
            return {}
        want = {(i, o, a) for i, o, a in rows}
        found = {}
        for i, o, a, blob in self._tx.query(
            f"SELECT id, org_id, agent_id, sealed FROM {TABLE} WHERE id = ANY(%s)",
            ([r[0] for r in rows],),
        ):
            if (i, o, a) in want:
                found[str(i)] = open_text(self._pair(o, a)[0], str(i), blob)
        return found

    def _digest(
        self, old: LayerCodec, new: LayerCodec, text: tuple[str, str], digest: str, mid: str
    ) -> str:
        if old.digest(*text) != digest:
            self.report.digests_kept.append(mid)
            return digest
        return new.digest(*text)

    def _rekey_key(
        self, old: LayerCodec, new: LayerCodec, plain: str, stored: str | None, where: str
    ) -> str:
        """The new blinded form of ``plain``; noted if ``stored`` was not its old one."""
        if stored != old.blind(plain):
            self.report.keys_recomputed.append(where)
        return new.blind(plain)

    # ------------------------------------------------------------------ the tables
    def rekey_tables(self, advance: Advance | None = None) -> LayerReport:
        """Re-key every table of ``TABLES``, in order (after ``rekey`` saw every memory
        row)."""
        for table, step in (
            ("az_am_about", self._about),
            ("az_am_fact", self._facts),
            ("az_am_procedure", self._procedures),
            ("az_am_history", self._history),
            ("az_am_summary", self._summaries),
            (FORGOTTEN, self._forgotten),
            (TABLE, self._archive),
            ("az_am_speaker", self._speaker_keys),
        ):
            n = 0
            for done in step():
                n += done
                if advance is not None:
                    advance(done)
            self.report.rows[table] = n
        return self.report

    def _batches(self, sql: str) -> Iterator[list[Any]]:
        return self._tx.batches(sql, size=self._batch)

    def _about(self) -> Iterator[int]:
        for rows in self._batches(
            "SELECT memory_id, org_id, agent_id, key, entity FROM az_am_about"
        ):
            out = []
            for mid, org, agent, key, blob in rows:
                old, new = self._pair(org, agent)
                name = str(old.open("az_am_about", mid, blob))
                new_key = self._rekey_key(old, new, entity_key(name), key, mid)
                out.append((mid, key, new.seal("az_am_about", mid, name), new_key))
            self._tx.update(
                "az_am_about",
                [("memory_id", "text"), ("key", "text")],
                [("entity", "bytea"), ("key", "text")],
                out,
            )
            yield len(rows)

    def _fact_parts(
        self, old: LayerCodec, new: LayerCodec, fid: str, blob: Any, stored: Sequence[str]
    ) -> tuple[bytes, list[str]]:
        """A fact's sealed (subject, predicate, object) and its three keys, re-keyed."""
        parts = [str(p) for p in old.open("az_am_fact", fid, blob)]
        keys = [
            self._rekey_key(old, new, entity_key(p), s, fid)
            for p, s in zip(parts, stored, strict=True)
        ]
        return new.seal("az_am_fact", fid, parts), keys

    def _facts(self) -> Iterator[int]:
        for rows in self._batches(
            "SELECT id, org_id, agent_id, sealed, subject_key, predicate_key, object_key"
            " FROM az_am_fact"
        ):
            out = []
            for fid, org, agent, blob, *stored in rows:
                sealed, keys = self._fact_parts(*self._pair(org, agent), fid, blob, stored)
                out.append((fid, sealed, *keys))
            self._tx.update(
                "az_am_fact",
                [("id", "text")],
                [
                    ("sealed", "bytea"),
                    ("subject_key", "text"),
                    ("predicate_key", "text"),
                    ("object_key", "text"),
                ],
                out,
            )
            yield len(rows)

    def _procedure_parts(
        self, old: LayerCodec, new: LayerCodec, pid: str, blob: Any, stored: Sequence[str]
    ) -> tuple[bytes, list[str]]:
        """A procedure's sealed (action, context) and its two keys, re-keyed (no
        context: keyed by "", as ``AgentMemory.record_outcome`` keys it)."""
        action, context = old.open("az_am_procedure", pid, blob)
        plain = (entity_key(action), entity_key(context) if context else "")
        keys = [self._rekey_key(old, new, p, s, pid) for p, s in zip(plain, stored, strict=True)]
        return new.seal("az_am_procedure", pid, [action, context]), keys

    def _procedures(self) -> Iterator[int]:
        for rows in self._batches(
            "SELECT id, org_id, agent_id, sealed, action_key, context_key FROM az_am_procedure"
        ):
            out = []
            for pid, org, agent, blob, *stored in rows:
                sealed, keys = self._procedure_parts(*self._pair(org, agent), pid, blob, stored)
                out.append((pid, sealed, *keys))
            self._tx.update(
                "az_am_procedure",
                [("id", "text")],
                [("sealed", "bytea"), ("action_key", "text"), ("context_key", "text")],
                out,
            )
            yield len(rows)

    def _history(self) -> Iterator[int]:
        for rows in self._batches(
            "SELECT seq, org_id, agent_id, at_us, op, target, detail FROM az_am_history"
        ):
            out = []
            for seq, org, agent, at_us, op, target, blob in rows:
                old, new = self._pair(org, agent)
                rid = history_row_id(op, target, int(at_us))
                detail = old.open("az_am_history", rid, blob)
                out.append((seq, new.seal("az_am_history", rid, detail)))
            self._tx.update("az_am_history", [("seq", "bigint")], [("detail", "bytea")], out)
            yield len(rows)

    def _summaries(self) -> Iterator[int]:
        for rows in self._batches("SELECT id, org_id, agent_id, text FROM az_am_summary"):
            out = []
            for sid, org, agent, blob in rows:
                if blob is None:  # extractive: its sources are the text
                    continue
                old, new = self._pair(org, agent)
                text = old.open("az_am_summary", sid, blob)
                out.append((sid, new.seal("az_am_summary", sid, text)))
            self._tx.update("az_am_summary", [("id", "text")], [("text", "bytea")], out)
            yield len(rows)

    def _forgotten(self) -> Iterator[int]:
        for rows in self._batches(f"SELECT memory_id, org_id, agent_id, payload FROM {FORGOTTEN}"):
            payloads = [self._pair(o, a)[0].open(FORGOTTEN, m, b) for m, o, a, b in rows]
            texts = self._archived(
                [
                    (m, o, a)
                    for (m, o, a, _), p in zip(rows, payloads, strict=True)
                    if p["am_memory"][_ARCHIVED_AT] is not None
                ]
            )
            out = []
            for (mid, org, agent, _), p in zip(rows, payloads, strict=True):
                about = self._rekey_payload(mid, org, agent, p, texts.get(mid))
                out.append((mid, self._pair(org, agent)[1].seal(FORGOTTEN, mid, p), about))
            self._tx.update(
                FORGOTTEN, [("memory_id", "text")], [("payload", "bytea"), ("about", "text")], out
            )
            yield len(rows)

    def _rekey_payload(
        self, mid: str, org: str, agent: str, p: dict[str, Any], text: tuple[str, str] | None
    ) -> str:
        """Re-key what an undo writes back from payload ``p`` (in place); the new
        ``about`` column (``lifecycle.forget``'s: its entities' and speaker's keys)."""
        old, new = self._pair(org, agent)
        am = p["am_memory"]
        texts = [str(p["memory"][2])] + ([text[0]] if text is not None else [])
        stored = bytes.fromhex(am[_FP])
        match = next((t for t in texts if self._rows[0].fingerprint_text(t) == stored), None)
        if match is None:
            self.report.keys_recomputed.append(mid)
        am[_FP] = self._rows[1].fingerprint_text(match or texts[-1]).hex()
        if am[_DIGEST] is not None and text is not None:
            am[_DIGEST] = self._digest(old, new, text, am[_DIGEST], mid)
        if p.get("fact") is not None:
            f = p["fact"]
            sealed, keys = self._fact_parts(
                old, new, str(f[0]), bytes.fromhex(f[_SEALED]["hex"]), f[4:7]
            )
            f[_SEALED], f[4:7] = {"hex": sealed.hex()}, keys
        if p.get("procedure") is not None:
            r = p["procedure"]
            sealed, keys = self._procedure_parts(
                old, new, str(r[0]), bytes.fromhex(r[_SEALED]["hex"]), r[4:6]
            )
            r[_SEALED], r[4:6] = {"hex": sealed.hex()}, keys
        speaker = am[_SPEAKER_KEY]
        if speaker:
            self._speakers.setdefault((org, agent), set()).add(str(speaker))
        plain = {str(k) for _, k in p["about"]} | ({str(speaker)} if speaker else set())
        return json.dumps(sorted(new.blind(k) for k in plain))

    def _archive(self) -> Iterator[int]:
        for rows in self._batches(f"SELECT id, org_id, agent_id, sealed FROM {TABLE}"):
            out = []
            for i, org, agent, blob in rows:
                old, new = self._pair(org, agent)
                out.append((i, new.seal(TABLE, i, old.open(TABLE, i, blob))))
            self._tx.update(TABLE, [("id", "text")], [("sealed", "bytea")], out)
            yield len(rows)

    def _speaker_keys(self) -> Iterator[int]:
        rows = self._tx.query("SELECT org_id, agent_id, key FROM az_am_speaker")
        kept = []
        for org, agent, key in rows:
            old, new = self._pair(org, agent)
            plain = {old.blind(k): k for k in self._speakers.get((org, agent), ())}
            if key in plain:
                kept.append((org, agent, new.blind(plain[key])))
            else:
                self.report.speakers_dropped += 1
        # Keys only, one small table: replaced whole (no PRIMARY KEY clash mid-update).
        self._tx.execute("DELETE FROM az_am_speaker")
        if kept:
            self._tx.execute(
                "INSERT INTO az_am_speaker (org_id, agent_id, key) SELECT * FROM"
                " unnest(%s::text[], %s::text[], %s::text[])",
                ([k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]),
            )
        yield len(rows)


__all__ = ["TABLES", "LayerRekey", "LayerReport", "present"]
