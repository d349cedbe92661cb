"""``agentzero key rotate`` on PostgreSQL: a new master key for every row, in ONE
transaction (``memory.postgres.rotation``), so an interrupted rotation is simply one that
happened: no journal, nothing to resume.

What is re-keyed: the memory store's rows, fingerprints and keyword postings
(``memory.postgres.rekey``), and, if the agent memory ever opened the store, its sealed values and
keyed hashes (``agentmem.postgres.rekey``): one UPDATE per memory row covers both.

The key header keeps one slot, the credential's, rewrapping the new master key (a
passphrase slot keeps its scrypt cost). Other slots (a recovery key, a second
passphrase, a raw key) wrap the old master key and cannot be rewrapped without their
secrets: they are dropped and reported, as on a data dir; export a new recovery key
afterwards.

Clients connected meanwhile are not stopped: their writes wait for the rotation (then
fail with ``KeyRotatedError``, nothing written), their reads go on under the old keys
until the commit (``memory.postgres.keyguard``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..agentmem.postgres import rekey as layer_rekey
from ..agentmem.postgres.archive import TABLE as ARCHIVE
from ..base.config import KdfParams
from ..memory.postgres import rekey
from ..memory.postgres.rotation import Rotation, rotation
from ..storage.credentials import Credential
from ..storage.keys import new_slot
from .keyops import slot_kdf

Progress = Callable[[int, int], None]  # (rows done, rows in all)


@dataclass(frozen=True)
class PgRotation:
    """What a rotation of a PostgreSQL store did."""

    where: str
    store_id: str
    key_version: int  # the new one
    slots_dropped: list[str]
    resealed: dict[str, int]  # rows re-keyed per table
    archive: bool  # archived texts were re-sealed
    seconds: float  # how long the transaction (and the exclusive key lock) lasted
    notes: dict[str, Any] = field(default_factory=dict)  # what was computed again


def rotate_postgres(url: str, cred: Credential, *, progress: Progress | None = None) -> PgRotation:
    """Rotate the master key of the memory store at the PostgreSQL URL ``url`` (see
    the module). ``progress(done, total)`` is called as rows are re-keyed."""
    with rotation(url, cred) as rot:
        started = time.perf_counter()
        layer = (
            layer_rekey.LayerRekey(rot.tx, rot.old, rot.new)
            if layer_rekey.present(rot.tx)
            else None
        )
        total = rekey.count_rows(rot.tx) + (layer.count() if layer is not None else 0)
        done = [0]

        def advance(n: int) -> None:
            done[0] += n
            if progress is not None:
                progress(done[0], total)

        if progress is not None:
            progress(0, total)
        memory = rekey.rekey_memory(rot.tx, rot.old, rot.new, extension=layer, advance=advance)
        resealed = {"az_memory": memory.rows, "az_terms": memory.postings}
        notes: dict[str, Any] = {}
        if memory.fingerprints_recomputed:
            notes["fingerprints_recomputed"] = memory.fingerprints_recomputed
        if memory.terms_reindexed:
            notes["terms_reindexed"] = memory.terms_reindexed
        if layer is not None:
            report = layer.rekey_tables(advance)
            resealed.update(report.rows)
            for name in ("digests_kept", "keys_recomputed"):
                if getattr(report, name):
                    notes[name] = getattr(report, name)
            if report.speakers_dropped:
                notes["speakers_dropped"] = report.speakers_dropped
        dropped = _rewrap(rot, cred)
        version = rot.replace_header(_header(rot, cred))
    return PgRotation(
        rot.where,
        rot.old.store_id,
        version,
        dropped,
        resealed,
        resealed.get(ARCHIVE, 0) > 0,
        time.perf_counter() - started,
        notes,
    )


def _rewrap(rot: Rotation, cred: Credential) -> list[str]:
    """The slots the new header drops: every one but the credential's."""
    return [str(s.get("id")) for s in rot.header["slots"] if s.get("id") != rot.slot]


def _header(rot: Rotation, cred: Credential) -> dict[str, Any]:
    """The header after the rotation: the credential's slot alone, wrapping the new
    master key at the slot's own cost (as ``ops.rotate._commit`` on a data dir)."""
    kdf = slot_kdf(rot.header, rot.slot) or KdfParams()
    header = dict(rot.header)
    header["slots"] = [new_slot(rot.slot, cred, rot.new.master, rot.new.store_id, kdf)]
    header.pop("rotation", None)
    header["rotated_at"] = datetime.now(UTC).isoformat()
    return header


__all__ = ["PgRotation", "Progress", "rotate_postgres"]
