"""``SqliteMemoryStore``: conversation memory in an encrypted SQLCipher database.

The database is the source of truth. Every insert and delete is also written to the
``changes`` table (its own seq), which derived indexes replay (see ``sidecar.py``).
Every recall path applies scope and expiry in SQL and re-checks rows against the table,
so expired, deleted or out-of-scope rows never come back.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .config import StoreConfig
from .embeddings import Embedder, Vector, as_vector
from .errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    InvalidArgumentError,
    NoEmbedderError,
    StoreClosedError,
)
from .keys import StoreKeys, open_data_dir
from .recall import exact_top_k, fts5_query, rrf_fuse
from .records import MemoryEntry, MemoryHit, Scope, from_us, to_us
from .sqlcipher import Database

if TYPE_CHECKING:
    from .memory_hnsw import MemoryHnsw
    from .sidecar import OpenReport, Progress, SidecarStatus

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Change:
    """One entry of the change feed: an insert (with its vector, if any) or a delete."""

    seq: int
    op: Literal["insert", "delete"]
    label: int
    embedding: bytes | None


RecallMode = Literal["semantic", "keyword", "hybrid"]

_COLUMNS = (
    "label, id, role, content, created_at_us, conversation_id, org_id, agent_id, "
    "expires_at_us, kind, source, metadata, embedding_model"
)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _row_to_entry(row: Sequence[Any]) -> MemoryEntry:
    return MemoryEntry(
        id=row[1], role=row[2], content=row[3], created_at=from_us(row[4]),
        conversation_id=row[5], org_id=row[6], agent_id=row[7],
        expires_at=from_us(row[8]) if row[8] is not None else None,
        kind=row[9], source=row[10], metadata=json.loads(row[11]), embedding_model=row[12],
    )


class SqliteMemoryStore:
    """Encrypted conversation memory with semantic, keyword and hybrid recall."""

    def __init__(
        self,
        db: Database,
        keys: StoreKeys,
        data_dir: Path,
        *,
        embedder: Embedder | None,
        config: StoreConfig,
        clock: Clock,
    ) -> None:
        self._db = db
        self._keys = keys
        self.data_dir = data_dir
        self.embedder = embedder
        self.config = config
        self._clock = clock
        self._closed = False
        self._hnsw: MemoryHnsw | None = None

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        passphrase: str | None = None,
        key: bytes | str | None = None,
        key_file: Path | str | None = None,
        embedder: Embedder | None = None,
        create: bool = True,
        config: StoreConfig | None = None,
        clock: Clock | None = None,
        prompt: bool | None = None,
        hnsw: bool | None = None,
    ) -> SqliteMemoryStore:
        """Open (or create) the memory store in ``data_dir``.

        The credential is checked against keys.json first: a wrong one raises
        ``WrongKeyError`` and no file is touched. ``hnsw``: True enables the HNSW index,
        False never uses it, None (default) enables it if ``memory.hnsw/`` exists.
        """
        config = config or StoreConfig()
        layout, keys = open_data_dir(
            data_dir, passphrase=passphrase, key=key, key_file=key_file,
            create=create, kdf=config.kdf, prompt=prompt,
        )
        db = Database(layout.memory_db, keys.sqlcipher_key, busy_timeout_ms=config.busy_timeout_ms)
        try:
            db.migrate(keys.store_id)
        except BaseException:
            db.close()
            raise
        store = cls(db, keys, layout.root, embedder=embedder, config=config,
                    clock=clock or _utcnow)
        if hnsw or (hnsw is None and layout.memory_hnsw.is_dir()):
            try:
                store.enable_hnsw_index()
            except BaseException:
                store.close()
                raise
        return store

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Close the store. Further calls raise ``StoreClosedError``."""
        if not self._closed:
            if self._hnsw is not None:
                self._hnsw.close()  # checkpoints pending changes while the db is open
            self._closed = True
            self._db.close()

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _live(self) -> Database:
        if self._closed:
            raise StoreClosedError("the memory store is closed")
        return self._db

    @property
    def store_id(self) -> str:
        """Random id of this store (from keys.json)."""
        return self._keys.store_id

    @property
    def keys(self) -> StoreKeys:
        """The unlocked keys (for sibling stores and sidecars sharing this data dir)."""
        return self._keys

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model id, dimension) of the vectors stored so far, or (None, None)."""
        db = self._live()
        dim = db.get_meta("embedding_dim")
        return db.get_meta("embedding_model"), int(dim) if dim else None

    # ----------------------------------------------------------------- indexes
    def enable_hnsw_index(
        self, dir: Path | str | None = None, dim: int | None = None, *,
        watch: bool = True, progress: Progress | None = None,
    ) -> OpenReport | None:
        """Serve semantic recall from an HNSW sidecar in ``dir`` (default ``memory.hnsw/``).

        Loads the verified checkpoint and replays newer changes, or rebuilds it from the
        database. From then on writes go to SQLCipher (the truth) and then the index.
        ``watch`` rebuilds in the background if the directory is deleted while open.
        Returns what opening did (None until the store holds its first vector).
        """
        from .config import Layout
        from .memory_hnsw import MemoryHnsw

        self._live()
        if self._hnsw is not None:
            return self._hnsw.open_report
        _, stored = self.embedding_info()
        if dim is not None and stored is not None and dim != stored:
            raise DimensionMismatchError(f"the store holds {stored}-d vectors, not {dim}-d")
        path = Path(dir) if dir is not None else Layout(self.data_dir).memory_hnsw
        h = MemoryHnsw(self, path, dim=dim, watch=watch)
        try:
            report = h.open(progress)
        except BaseException:
            h.close()
            raise
        self._hnsw = h
        return report

    @property
    def hnsw_index(self) -> MemoryHnsw | None:
        """The HNSW sidecar, if enabled."""
        return self._hnsw

    def index_status(self) -> list[SidecarStatus]:
        """Status of every sidecar of this store (for ``agentzero store status``)."""
        self._live()
        st = self._hnsw.status() if self._hnsw is not None else None
        return [st] if st is not None else []

    def rebuild_index(self, name: str | None = None, progress: Progress | None = None) -> list[str]:
        """Rebuild sidecars from the database (all, or the one named, e.g. "hnsw")."""
        self._live()
        if name not in (None, "hnsw", "memory.hnsw"):
            raise InvalidArgumentError(f"no index named {name!r}", hint="the memory index is hnsw")
        if self._hnsw is None:
            self.enable_hnsw_index(progress=progress)
        assert self._hnsw is not None
        return ["hnsw"] if self._hnsw.rebuild(progress) else []

    def _sync_indexes(self) -> None:
        # After the commit: the write is already durable; the index follows the feed.
        if self._hnsw is not None:
            self._hnsw.sync()

    # ----------------------------------------------------------------- writes
    def append(self, entry: MemoryEntry) -> str:
        """Store ``entry`` (embedding it if the store has an embedder); returns its id.

        Durable when it returns (the SQLite commit fsyncs the WAL).
        """
        return self.append_many([entry])[0]

    def append_with_embedding(self, entry: MemoryEntry, vector: Any) -> str:
        """Store ``entry`` with a caller-computed vector; returns its id."""
        return self.append_many([entry], vectors=[vector])[0]

    def append_many(
        self, entries: Sequence[MemoryEntry], vectors: Sequence[Any] | None = None
    ) -> list[str]:
        """Store many entries in one transaction (all or none); returns their ids."""
        db = self._live()
        entries = list(entries)
        if vectors is not None and len(vectors) != len(entries):
            raise InvalidArgumentError(f"{len(entries)} entries but {len(vectors)} vectors")
        model: str | None
        vecs: list[Vector | None]
        if vectors is not None:
            model = entries[0].embedding_model if entries else None
            vecs = list(vectors)
        elif self.embedder is not None and entries:
            model = self._check_embedder()
            vecs = list(self.embedder.embed([e.content for e in entries]))
        else:
            model, vecs = None, [None] * len(entries)
        now = self._clock()
        ids: list[str] = []
        with db.tx() as c:
            dim = self._ensure_dim(c, model, vecs)
            for entry, vec in zip(entries, vecs, strict=True):
                e = entry.with_(
                    id=entry.id or uuid.uuid4().hex,
                    created_at=entry.created_at or now,
                    embedding_model=(entry.embedding_model or model) if vec is not None else None,
                )
                blob = as_vector(vec, dim).tobytes() if vec is not None and dim else None
                cur = c.execute(
                    "INSERT INTO memory (id, role, content, created_at_us, conversation_id, org_id,"
                    " agent_id, expires_at_us, kind, source, metadata, fingerprint, embedding,"
                    " embedding_model) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (e.id, e.role, e.content, to_us(e.created_at),  # type: ignore[arg-type]
                     e.conversation_id, e.org_id, e.agent_id,
                     to_us(e.expires_at) if e.expires_at else None, e.kind, e.source,
                     json.dumps(dict(e.metadata), sort_keys=True), e.fingerprint(), blob,
                     e.embedding_model),
                )
                label = cur.lastrowid
                c.execute("INSERT INTO memory_fts (rowid, content) VALUES (?, ?)",
                          (label, e.content))
                c.execute("INSERT INTO changes (op, label) VALUES ('insert', ?)", (label,))
                ids.append(e.id)  # type: ignore[arg-type]
        self._sync_indexes()
        return ids

    def _ensure_dim(self, c: Any, model: str | None, vecs: Sequence[Any]) -> int | None:
        """The store's vector dimension, fixed by the first vector ever stored."""
        first = next((v for v in vecs if v is not None), None)
        row = c.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
        if row is not None:
            return int(row[0])
        if first is None:
            return None
        dim = int(np.asarray(first).reshape(-1).shape[0])
        c.execute("INSERT INTO meta VALUES ('embedding_dim', ?)", (str(dim),))
        if model:
            c.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (model,))
        return dim

    def _check_embedder(self) -> str:
        if self.embedder is None:
            raise NoEmbedderError("this call needs an embedder and the store has none")
        stored_model, stored_dim = self.embedding_info()
        e = self.embedder
        if (stored_model and stored_model != e.model_id) or (
            stored_dim and stored_dim != e.dimension
        ):
            raise EmbedderMismatchError(
                f"this store's vectors were built with {stored_model} ({stored_dim}-d); "
                f"the configured embedder is {e.model_id} ({e.dimension}-d)",
                hint=f"open the store with {stored_model}, or run `agentzero store reembed`",
            )
        return e.model_id

    def delete(self, entry_id: str) -> bool:
        """Delete one entry (content overwritten on disk: secure_delete). True if it existed."""
        return self._delete_where("id = ?", (entry_id,)) > 0

    def forget(
        self,
        *,
        org_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Delete every entry in a scope; at least one scope field is required."""
        scope = Scope(org_id, agent_id, conversation_id)
        if scope.is_empty():
            raise InvalidArgumentError(
                "forget needs org_id, agent_id or conversation_id",
                hint="to erase everything, delete the data dir",
            )
        where, params = _scope_where(scope, now_us=None)
        return self._delete_where(where, params)

    def gc_expired(self) -> int:
        """Delete entries whose expiry has passed; returns how many."""
        return self._delete_where(
            "expires_at_us IS NOT NULL AND expires_at_us <= ?", (to_us(self._clock()),)
        )

    def _delete_where(self, where: str, params: Sequence[Any]) -> int:
        with self._live().tx() as c:
            labels = [r[0] for r in c.execute(f"SELECT label FROM memory WHERE {where}", params)]
            for label in labels:
                c.execute("DELETE FROM memory WHERE label = ?", (label,))
                c.execute("DELETE FROM memory_fts WHERE rowid = ?", (label,))
                # A delete is a change with its own seq, so sidecars replay it too.
                c.execute("INSERT INTO changes (op, label) VALUES ('delete', ?)", (label,))
        if labels:
            self._sync_indexes()
        return len(labels)

    # ----------------------------------------------------------------- reads
    def get(self, entry_id: str) -> MemoryEntry | None:
        """The live entry with this id, or None (also for deleted or expired entries)."""
        now = to_us(self._clock())
        rows = self._live().query(
            f"SELECT {_COLUMNS} FROM memory WHERE id = ? "
            "AND (expires_at_us IS NULL OR expires_at_us > ?)", (entry_id, now))
        return _row_to_entry(rows[0]) if rows else None

    def recent(
        self, limit: int = 20, *, org_id: str | None = None, agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryEntry]:
        """The newest live entries in a scope, newest first."""
        where, params = _scope_where(Scope(org_id, agent_id, conversation_id), to_us(self._clock()))
        rows = self._live().query(
            f"SELECT {_COLUMNS} FROM memory WHERE {where} "
            "ORDER BY created_at_us DESC, label DESC LIMIT ?", (*params, _positive(limit)))
        return [_row_to_entry(r) for r in rows]

    def count(
        self, *, org_id: str | None = None, agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Number of live entries in a scope."""
        where, params = _scope_where(Scope(org_id, agent_id, conversation_id), to_us(self._clock()))
        return int(self._live().query(f"SELECT count(*) FROM memory WHERE {where}", params)[0][0])

    def semantic_recall(
        self, query_vector: Any, k: int = 5, *, org_id: str | None = None,
        agent_id: str | None = None, conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """The ``k`` live entries in scope most similar (cosine) to ``query_vector``."""
        scope = Scope(org_id, agent_id, conversation_id)
        return self._semantic(query_vector, _positive(k), scope)

    def _semantic(self, query_vector: Any, k: int, scope: Scope) -> list[MemoryHit]:
        db = self._live()
        _, dim = self.embedding_info()
        if dim is None:
            return []  # no vector stored yet
        q = as_vector(query_vector, dim)
        where, params = _scope_where(scope, to_us(self._clock()))
        if self._hnsw is not None:
            resolved: dict[int, Any] = {}

            def allowed(labels: list[int]) -> dict[int, Any]:
                found = self._resolve(labels, where, params)
                resolved.update(found)
                return found

            scored = self._hnsw.recall(
                q, k, scoped=not scope.is_empty(), allowed=allowed,
                scope_size=lambda limit: self._scope_size(scope, limit))
            if scored is not None:
                # Rows were read (and scope/expiry re-checked) while filtering: reuse them.
                return [MemoryHit(resolved[lab][1], _row_to_entry(resolved[lab]), score,
                                  {"semantic": rank})
                        for rank, (lab, score) in enumerate(scored, start=1)]
        rows = db.query(
            f"SELECT label, embedding FROM memory WHERE embedding IS NOT NULL AND {where}", params)
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dim)
        top = exact_top_k(matrix, q, k)
        return self._hits([(rows[i][0], s) for i, s in top], "semantic")

    def _resolve(self, labels: list[int], where: str, params: list[Any]) -> dict[int, Any]:
        """The rows of ``labels`` that are live and in scope (re-checked against the truth)."""
        if not labels:
            return {}
        rows = self._live().query(
            f"SELECT {_COLUMNS} FROM memory WHERE label IN ({','.join('?' * len(labels))}) "
            f"AND {where}", (*labels, *params))
        return {r[0]: r for r in rows}

    def _scope_size(self, scope: Scope, limit: int) -> int:
        """Rows in scope, counted up to ``limit`` (expiry ignored: cheap, index-only)."""
        where, params = _scope_where(scope, None)
        rows = self._live().query(
            f"SELECT count(*) FROM (SELECT 1 FROM memory WHERE {where} LIMIT ?)",
            (*params, limit))
        return int(rows[0][0])

    def keyword_recall(
        self, query_text: str, k: int = 5, *, org_id: str | None = None,
        agent_id: str | None = None, conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """BM25 keyword recall through the encrypted FTS5 index, scoped, best first."""
        return self._keyword(query_text, _positive(k), Scope(org_id, agent_id, conversation_id))

    def _keyword(self, query_text: str, k: int, scope: Scope) -> list[MemoryHit]:
        match = fts5_query(query_text)
        if match is None:
            return []
        where, params = _scope_where(scope, to_us(self._clock()), alias="m.")
        rows = self._live().query(
            "SELECT m.label, bm25(memory_fts) AS r FROM memory_fts "
            "JOIN memory m ON m.label = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {where} ORDER BY r, m.label LIMIT ?",
            (match, *params, k))
        # bm25() is "lower is better" (negative); report it as a positive score.
        return self._hits([(r[0], -float(r[1])) for r in rows], "keyword")

    def hybrid_recall(
        self, query_text: str, query_vector: Any = None, limit: int = 5, *,
        org_id: str | None = None, agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """Semantic and keyword recall fused with Reciprocal Rank Fusion (k=60).

        Each signal contributes ``limit * hybrid_candidates_factor`` candidates; results are
        deduplicated on a content fingerprint. Without ``query_vector`` the store's
        embedder embeds ``query_text``.
        """
        limit = _positive(limit)
        scope = Scope(org_id, agent_id, conversation_id)
        if query_vector is None:
            query_vector = self.embed_query(query_text)
        n = limit * self.config.hybrid_candidates_factor
        sem = self._semantic(query_vector, n, scope)
        kw = self._keyword(query_text, n, scope)
        by_id = {h.id: h for h in (*sem, *kw)}
        fused = rrf_fuse(
            {"semantic": [h.id for h in sem], "keyword": [h.id for h in kw]},
            k=self.config.rrf_k, limit=limit,
            fingerprint=lambda i: by_id[i].entry.fingerprint(),
        )
        return [MemoryHit(f.key, by_id[f.key].entry, f.score, f.ranks) for f in fused]

    def recall(
        self, query_text: str, limit: int = 5, *, mode: RecallMode = "semantic",
        org_id: str | None = None, agent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[MemoryHit]:
        """Text-only recall in any mode (semantic and hybrid use the store's embedder)."""
        scope = dict(org_id=org_id, agent_id=agent_id, conversation_id=conversation_id)
        if mode == "keyword":
            return self.keyword_recall(query_text, limit, **scope)
        if mode == "hybrid":
            return self.hybrid_recall(query_text, None, limit, **scope)
        if mode == "semantic":
            return self.semantic_recall(self.embed_query(query_text), limit, **scope)
        raise InvalidArgumentError(f"mode must be semantic, keyword or hybrid; got {mode!r}")

    def embed_query(self, text: str) -> Vector:
        """Embed one query text with the store's embedder."""
        self._check_embedder()
        assert self.embedder is not None
        vector: Vector = self.embedder.embed([text])[0]
        return vector

    def _hits(self, scored: Iterable[tuple[int, float]], signal: str) -> list[MemoryHit]:
        scored = list(scored)
        if not scored:
            return []
        labels = [lab for lab, _ in scored]
        rows = self._live().query(
            f"SELECT {_COLUMNS} FROM memory WHERE label IN ({','.join('?' * len(labels))})",
            labels)
        by_label = {r[0]: r for r in rows}
        return [
            MemoryHit(by_label[lab][1], _row_to_entry(by_label[lab]), score, {signal: rank})
            for rank, (lab, score) in enumerate(
                ((lab, s) for lab, s in scored if lab in by_label), start=1)
        ]

    # ----------------------------------------------------------------- change feed
    def source_seq(self) -> int:
        """The seq of the newest change (0 for an empty store)."""
        rows = self._live().query("SELECT max(seq) FROM changes")
        return int(rows[0][0] or 0)

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with seq > ``seq``, oldest first, at most ``limit``.

        An insert whose row has since been deleted carries no vector; the later delete
        change tells a sidecar to drop it.
        """
        rows = self._live().query(
            "SELECT c.seq, c.op, c.label, m.embedding FROM changes c "
            "LEFT JOIN memory m ON c.op = 'insert' AND m.label = c.label "
            "WHERE c.seq > ? ORDER BY c.seq LIMIT ?", (seq, limit))
        return [Change(r[0], r[1], r[2], r[3]) for r in rows]

    def vector_count(self) -> int:
        """Number of rows (an upper bound on rows holding a vector; index-only, cheap)."""
        return int(self._live().query("SELECT count(*) FROM memory")[0][0])

    def vectors_after(self, label: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (label, float32 bytes) with label > ``label``, by label."""
        rows = self._live().query(
            "SELECT label, embedding FROM memory WHERE label > ? AND embedding IS NOT NULL "
            "ORDER BY label LIMIT ?", (label, limit))
        return [(int(r[0]), bytes(r[1])) for r in rows]

    def iter_vectors(self, batch: int = 10_000) -> Iterable[tuple[int, list[int], bytes]]:
        """Every stored vector for a full rebuild, in batches: (seq covered, labels, float32 bytes).

        The first element is the source seq the batch sequence is consistent with.
        """
        db = self._live()
        with db.snapshot() as c:
            seq = int(c.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
            cur = c.execute("SELECT label, embedding FROM memory WHERE embedding IS NOT NULL "
                            "ORDER BY label")
            while rows := cur.fetchmany(batch):
                yield seq, [r[0] for r in rows], b"".join(r[1] for r in rows)


def _positive(n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise InvalidArgumentError(f"limit / k must be a positive integer, got {n!r}")
    return n


def _scope_where(scope: Scope, now_us: int | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL condition for scope (exact match on each given field) and, with ``now_us``, expiry."""
    clauses, params = [], []
    for name in ("org_id", "agent_id", "conversation_id"):
        value = getattr(scope, name)
        if value is not None:
            clauses.append(f"{alias}{name} = ?")
            params.append(value)
    if now_us is not None:
        clauses.append(f"({alias}expires_at_us IS NULL OR {alias}expires_at_us > ?)")
        params.append(now_us)
    return (" AND ".join(clauses) or "1"), params
