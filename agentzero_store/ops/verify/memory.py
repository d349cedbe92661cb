"""``verify``'s checks of memory.db and memory.archive.db: every page's HMAC, the
b-trees, whose store each is, every stored time, and that the archive holds the text of
every memory memory.db marks archived."""

from __future__ import annotations

from ...agentmem.sqlite.archive import audit, required_texts
from ...base.config import Layout, StoreConfig
from ...base.errors import AgentZeroStoreError
from ...memory.sqlite.schema import get_meta
from ...memory.sqlite.source import feed_seq, memory_present, memory_seq, unreadable_times
from ...storage.ack_format import SourceState
from ...storage.keys import StoreKeys
from ...storage.sources import judge_memory
from ...storage.sqlcipher import Database
from .report import FIX_ACCEPT, FIX_RESTORE, FIX_TIME, Finding, VerifyReport, page_of

MAX_ID_FINDINGS = 100  # per-memory findings of the archive; the rest are counted in one


def check_memory(
    layout: Layout, keys: StoreKeys, report: VerifyReport, acked: SourceState
) -> tuple[int | None, dict[str, str] | None]:
    """Check memory.db; returns its change-feed seq (what its sidecars must cover) and
    the archived texts it requires (id → digest), each None when it cannot be read."""
    path = layout.memory_db
    if not memory_present(path):
        # Never opened here: SQLite would write a header into an empty file.
        if (problem := judge_memory(acked, present=False, seq=0)) is not None:
            report.findings.append(Finding(str(path), None, problem, FIX_ACCEPT))
        else:
            report.checked["memory_db"] = "absent (no memory written yet)"
        return None, {}
    db = None
    try:
        db = Database(path, keys.sqlcipher_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
        for line in (str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")):
            report.findings.append(Finding(str(path), page_of(line), line, FIX_RESTORE))
        rows = [str(r[0]) for r in db.query("PRAGMA integrity_check")]
        for line in rows if rows != ["ok"] else []:
            report.findings.append(
                Finding(str(path), None, f"integrity_check: {line}", FIX_RESTORE)
            )
        migrated = bool(db.query("SELECT 1 FROM sqlite_master WHERE name = 'meta'"))
        if migrated and get_meta(db, "store_id") != keys.store_id:
            report.findings.append(
                Finding(str(path), "meta.store_id", "memory.db is another store's", FIX_RESTORE)
            )
        for mid, column, us in unreadable_times(db, MAX_ID_FINDINGS) if migrated else []:
            report.findings.append(
                Finding(
                    str(path),
                    f"memory {mid}, {column}",
                    f"the stored time {us} µs since 1970 is outside the years 1 to 9999: "
                    "every read of this memory fails",
                    FIX_TIME,
                )
            )
        seq = memory_seq(db)
        if (problem := judge_memory(acked, present=True, seq=seq)) is not None:
            report.findings.append(Finding(str(path), f"seq {seq}", problem, FIX_ACCEPT))
        report.checked["memory_db"] = {"pages_checked": True, "seq": seq}
        return feed_seq(db), required_texts(db)  # what the sidecars cover, the archive holds
    except AgentZeroStoreError as exc:
        # Damage bad enough that SQLite cannot even run the checks (page 1, the schema).
        report.findings.append(Finding(str(path), page_of(exc.message), exc.message, FIX_RESTORE))
        return None, None
    finally:
        if db is not None:
            db.close()


def check_archive(
    layout: Layout, keys: StoreKeys, required: dict[str, str] | None, report: VerifyReport
) -> None:
    """Check memory.archive.db against what memory.db requires of it (``required``: id →
    digest; None when memory.db could not be read, so only the file itself is checked).

    memory.db is the authority: an archive missing rows it names is data loss (the
    memory's text lives nowhere else), while spare rows are harmless (consolidation drops
    them), so only the former are findings.
    """
    path = layout.memory_archive
    if not (path.exists() and path.stat().st_size > 0):
        if required:
            first = ", ".join(sorted(required)[:3])
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    f"the archive is missing: memory.db has {len(required):,} archived "
                    f"memories whose text lives only in it (e.g. {first})",
                    FIX_RESTORE,
                )
            )
        else:
            report.checked["memory_archive"] = "absent (no memory archived)"
        return
    db = None
    try:
        # Not read-only, like memory.db above: a reader of a WAL database may need to
        # create its -shm; no row is written.
        db = Database(path, keys.archive_key, busy_timeout_ms=StoreConfig().busy_timeout_ms)
        bad_pages = [str(r[0]) for r in db.query("PRAGMA cipher_integrity_check")]
        for line in bad_pages:
            report.findings.append(Finding(str(path), page_of(line), line, FIX_RESTORE))
        rows = [str(r[0]) for r in db.query("PRAGMA integrity_check")]
        for line in rows if rows != ["ok"] else []:
            report.findings.append(
                Finding(str(path), None, f"integrity_check: {line}", FIX_RESTORE)
            )
        problems = audit(db, keys.store_id, required or {})
    except AgentZeroStoreError as exc:
        # Not under this store's archive key (another store's file), or damage bad
        # enough that SQLite cannot read the schema.
        report.findings.append(Finding(str(path), page_of(exc.message), exc.message, FIX_RESTORE))
        return
    finally:
        if db is not None:
            db.close()
    per_id = [(i, p) for i, p in problems if i is not None]
    for _, problem in (p for p in problems if p[0] is None):
        report.findings.append(Finding(str(path), "meta", problem, FIX_RESTORE))
    for memory_id, problem in per_id[:MAX_ID_FINDINGS]:
        report.findings.append(Finding(str(path), f"memory {memory_id}", problem, FIX_RESTORE))
    if len(per_id) > MAX_ID_FINDINGS:
        report.findings.append(
            Finding(
                str(path),
                None,
                f"{len(per_id) - MAX_ID_FINDINGS:,} more archived memories have no or "
                "another text in the archive",
                FIX_RESTORE,
            )
        )
    report.checked["memory_archive"] = {
        "pages_checked": True,
        "archived_required": len(required or {}),
        "missing_or_different": len(per_id),
    }


__all__ = ["MAX_ID_FINDINGS", "check_archive", "check_memory"]
