"""Reading the agent memory of a PostgreSQL store out in the plain form
(``agentmem.transfer``): ``PgLayer``'s first half (``postgres.transfer`` writes).

What the repository sealed is opened here (``codec.LayerCodec``: each blob bound to its
table, row and scope, so a blob moved to another row fails loudly instead of being
exported), and archived texts are checked against their row's keyed digest
(``PgArchive.get``): a missing or changed text stops the move, it is never exported as
empty. Rows pointing at a memory that is not live (expired: it does not move) are left
out, as the memory-row copy leaves the memory out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..transfer.plain import (
    STATE_COLUMNS,
    FactState,
    GrantState,
    HistoryState,
    MemoryState,
    Namespaces,
    NamespaceState,
    ProcedureState,
    ScopeRows,
    SummaryState,
    canonical,
    memory_state,
    scope_rows,
)
from ..transfer.side import (
    CLEAR_KINDS,
    GRANT_COLUMNS,
    NAMESPACE_COLUMNS,
)
from .archive import PgArchive
from .beliefs import history_row_id
from .codec import LayerCodec
from .schema import SCHEMA_KEY

if TYPE_CHECKING:
    from ...memory.postgres.store import PgMemoryStore

_LIVE = "(m.expires_at_us IS NULL OR m.expires_at_us > %s)"
_STATE = ", ".join(f"m.{c.strip()}" for c in STATE_COLUMNS.split(","))
_SCOPED_TABLES = tuple(
    f"az_am_{t}"
    for t in ("fact", "procedure", "history", "summary", *(k.table for k in CLEAR_KINDS))
)


def _live(column: str) -> str:
    """The memory ``column`` names is live (one lookup of the id key; one ``%s``)."""
    return f"EXISTS (SELECT 1 FROM az_memory m WHERE m.id = {column} AND {_LIVE})"


class PgLayerReader:
    """The reading half of ``postgres.transfer.PgLayer`` (see the module)."""

    def __init__(self, store: PgMemoryStore) -> None:
        self._store = store
        self._codecs: dict[tuple[str, str], LayerCodec] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._store!r})"

    def codec(self, org_id: str, agent_id: str) -> LayerCodec:
        """The codec of one scope (kept: its blinded keys are cached)."""
        scope = (org_id, agent_id)
        if scope not in self._codecs:
            self._codecs[scope] = LayerCodec(self._store.keys, org_id, agent_id)
        return self._codecs[scope]

    def _q(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._store.query(sql, params)

    def close(self) -> None:
        """Nothing to close: the store's connection is the caller's."""

    # ------------------------------------------------------------------ what is there
    def present(self) -> bool:
        """Whether the agent memory ever opened this store (its schema is recorded)."""
        if not self._q("SELECT to_regclass('az_meta') IS NOT NULL")[0][0]:
            return False
        return bool(self._q("SELECT 1 FROM az_meta WHERE key = %s", (SCHEMA_KEY,)))

    def pending_forgets(self) -> dict[tuple[str, str], int]:
        """Rows of the undo area (``az_am_forgotten``), by scope."""
        if not self._q("SELECT to_regclass('az_am_forgotten') IS NOT NULL")[0][0]:
            return {}
        rows = self._q("SELECT org_id, agent_id, count(*) FROM az_am_forgotten GROUP BY 1, 2")
        return {(str(o), str(a)): int(n) for o, a, n in rows}

    def skills(self) -> int:
        """None: skills have no PostgreSQL tables."""
        return 0

    def layer_counts(self, now_us: int) -> dict[tuple[str, str], int]:
        """Live memories with layer state, by (org, agent)."""
        rows = self._q(
            "SELECT m.org_id, m.agent_id, count(*) FROM az_memory m WHERE m.type IS NOT NULL"
            f" AND {_LIVE} GROUP BY 1, 2",
            (now_us,),
        )
        return {(str(o), str(a)): int(n) for o, a, n in rows}

    # ------------------------------------------------------------------ reading
    def memories_after(self, label: int, limit: int, now_us: int) -> list[tuple[int, MemoryState]]:
        """Up to ``limit`` (label, state) of live memories with layer state after
        ``label``, in label order."""
        rows = self._q(
            f"SELECT m.label, {_STATE}, m.archive_digest FROM az_memory m WHERE m.label > %s"
            f" AND m.type IS NOT NULL AND {_LIVE} ORDER BY m.label LIMIT %s",
            (label, now_us, limit),
        )
        states = self._states([r[1:] for r in rows])
        return [(int(r[0]), s) for r, s in zip(rows, states, strict=True)]

    def memory_states(self, ids: Sequence[str], now_us: int) -> dict[str, MemoryState]:
        """The states of those of ``ids`` that are live memories with layer state."""
        if not ids:
            return {}
        rows = self._q(
            f"SELECT {_STATE}, m.archive_digest FROM az_memory m WHERE m.id = ANY(%s)"
            f" AND m.type IS NOT NULL AND {_LIVE}",
            (list(ids), now_us),
        )
        return {s.id: s for s in self._states(rows)}

    def _states(self, rows: Sequence[Sequence[Any]]) -> list[MemoryState]:
        """States of rows of ``STATE_COLUMNS`` (the speaker sealed) and the digest."""
        ids = [str(r[0]) for r in rows]
        if not ids:
            return []
        about: dict[str, list[str]] = {}
        for mid, org, agent, blob in self._q(
            "SELECT memory_id, org_id, agent_id, entity FROM az_am_about WHERE memory_id = ANY(%s)",
            (ids,),
        ):
            name = self.codec(org, agent).open("az_am_about", mid, blob)
            about.setdefault(str(mid), []).append(str(name))
        accesses: dict[str, list[int]] = {}
        for mid, at in self._q(
            "SELECT memory_id, at_us FROM az_am_access WHERE memory_id = ANY(%s)", (ids,)
        ):
            accesses.setdefault(str(mid), []).append(int(at))
        digests: dict[tuple[str, str], dict[str, str]] = {}
        for r in rows:
            if r[14] is not None:
                digests.setdefault((str(r[1]), str(r[2])), {})[str(r[0])] = str(r[16])
        texts: dict[str, tuple[str, str]] = {}
        for (org, agent), wanted in digests.items():
            # Checked against each row's keyed digest: a missing or changed text stops
            # the move (CorruptStoreError), it is never exported as empty.
            texts.update(PgArchive(self._store, org, agent).get(wanted))
        out = []
        for r in rows:
            mid, org, agent = str(r[0]), str(r[1]), str(r[2])
            speaker = (
                None
                if r[4] is None
                else self.codec(org, agent).open("az_memory.speaker", mid, r[4])
            )
            plain = (*r[:4], speaker, *r[5:16])
            out.append(
                memory_state(plain, about.get(mid, ()), accesses.get(mid, ()), texts.get(mid))
            )
        return out

    def scopes(self) -> list[tuple[str, str]]:
        """Every (org, agent) holding rows of ``ScopeRows``."""
        union = " UNION ".join(f"SELECT org_id, agent_id FROM {t}" for t in _SCOPED_TABLES)
        return sorted((str(o), str(a)) for o, a in self._q(union))

    def scope_rows(self, org_id: str, agent_id: str, now_us: int) -> ScopeRows:
        """One scope's rows, opened; those pointing at a memory that is not live left
        out."""
        c = self.codec(org_id, agent_id)
        s = (org_id, agent_id)
        where = "org_id = %s AND agent_id = %s"
        summaries = self._q(
            "SELECT id, conversation_id, text, created_at_us, expires_at_us FROM az_am_summary t"
            f" WHERE {where} AND NOT EXISTS (SELECT 1 FROM az_am_summary_source x"
            f" WHERE x.summary_id = t.id AND NOT {_live('x.memory_id')})",
            (*s, now_us),
        )
        sources: dict[str, list[str]] = {}
        for sid, mid in self._q(
            "SELECT summary_id, memory_id FROM az_am_summary_source WHERE summary_id = ANY(%s)"
            " ORDER BY summary_id, position",
            ([r[0] for r in summaries],),
        ):
            sources.setdefault(str(sid), []).append(str(mid))
        clear = {
            k.kind: [
                k.read(r)
                for r in self._q(
                    f"SELECT {', '.join(k.columns)} FROM az_am_{k.table} t WHERE {where}"
                    + "".join(f" AND {_live(f't.{col}')}" for col in k.live),
                    (*s, *[now_us] * len(k.live)),
                )
            ]
            for k in CLEAR_KINDS
        }
        facts = []
        for r in self._q(
            "SELECT id, sealed, confidence, single_valued, valid_from_us, valid_to_us,"
            f" superseded_by, retracted FROM az_am_fact t WHERE {where} AND {_live('t.id')}",
            (*s, now_us),
        ):
            subject, predicate, obj = c.open("az_am_fact", r[0], r[1])
            facts.append(
                FactState(
                    str(r[0]),
                    str(subject),
                    str(predicate),
                    str(obj),
                    float(r[2]),
                    bool(r[3]),
                    int(r[4]),
                    None if r[5] is None else int(r[5]),
                    r[6],
                    bool(r[7]),
                )
            )
        procedures = []
        for r in self._q(
            "SELECT id, sealed, successes, failures, updated_at_us FROM az_am_procedure t"
            f" WHERE {where} AND {_live('t.id')}",
            (*s, now_us),
        ):
            action, context = c.open("az_am_procedure", r[0], r[1])
            procedures.append(
                ProcedureState(
                    str(r[0]), str(action), None if context is None else str(context), *r[2:5]
                )
            )
        return scope_rows(
            org_id,
            agent_id,
            facts=facts,
            procedures=procedures,
            history=[
                HistoryState(
                    int(r[0]),
                    int(r[1]),
                    str(r[2]),
                    str(r[3]),
                    canonical(c.open("az_am_history", history_row_id(r[2], r[3], int(r[1])), r[4])),
                )
                for r in self._q(
                    f"SELECT seq, at_us, op, target, detail FROM az_am_history WHERE {where}", s
                )
            ],
            summaries=[
                SummaryState(
                    str(r[0]),
                    str(r[1]),
                    None if r[2] is None else str(c.open("az_am_summary", r[0], r[2])),
                    int(r[3]),
                    int(r[4]),
                    tuple(sources.get(r[0], ())),
                )
                for r in summaries
            ],
            **clear,
        )

    def namespaces(self) -> Namespaces:
        """Every namespace and grant of the store."""
        return Namespaces(
            tuple(
                NamespaceState(*r)
                for r in self._q(f"SELECT {', '.join(NAMESPACE_COLUMNS)} FROM az_am_namespace")
            ),
            tuple(
                GrantState(*r)
                for r in self._q(f"SELECT {', '.join(GRANT_COLUMNS)} FROM az_am_grant")
            ),
        ).ordered()


__all__ = ["PgLayerReader"]
