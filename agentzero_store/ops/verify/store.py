"""``verify_store``: the checks in order (keys, ledger, memory.db, its archive, the
document log, each index checkpoint), with progress after each."""

from __future__ import annotations

from pathlib import Path

from ...base.config import Layout
from ...base.errors import CorruptStoreError
from ...storage.credentials import Credential
from ...storage.key_header import read_header
from ...storage.keys import unlock_slot
from .documents import check_document_log
from .ledger import check_ledger
from .memory import check_archive, check_memory
from .report import FIX_RESTORE, FIX_ROTATE, Finding, Progress, VerifyReport
from .sidecars import MAX_SIDECARS, check_sidecar, sidecar_dirs

_STAGES = ("keys.json", "ledger", "memory.db", "memory.archive.db", "rag/index.jsonl")


def verify_store(
    root: Path | str, cred: Credential, progress: Progress | None = None
) -> VerifyReport:
    """Verify the data dir ``root``. A wrong credential raises ``WrongKeyError``.

    ``progress(step, done, total)`` is called after each check: the keys, the ledger,
    memory.db, the archive, the document log, then each index checkpoint. ``total``
    counts every checkpoint a data dir can have until the ones this one has are known."""
    tell = progress or (lambda step, done, total: None)
    layout = Layout(Path(root).expanduser())
    report = VerifyReport(str(layout.root))
    try:
        keys, slot = unlock_slot(layout, cred, allow_rotation=True)
        header = read_header(layout)
    except CorruptStoreError as exc:
        report.findings.append(Finding(str(layout.keys), None, exc.message, FIX_RESTORE))
        return report
    report.checked["keys"] = {
        "store_id": keys.store_id,
        "slot": slot,
        "slots": [s.get("id") for s in header["slots"]],
    }
    if header.get("rotation") is not None:
        # Files may be under either key until the rotation finishes: check nothing more.
        report.findings.append(
            Finding(
                str(layout.keys),
                "rotation",
                "a key rotation was interrupted; the data is under the old and new keys",
                FIX_ROTATE,
            )
        )
        return report
    most = len(_STAGES) + MAX_SIDECARS
    tell(_STAGES[0], 1, most)
    acked = check_ledger(layout, keys, report)
    tell(_STAGES[1], 2, most)
    covered, archived = check_memory(layout, keys, report, acked["memory"])
    tell(_STAGES[2], 3, most)
    check_archive(layout, keys, archived, report)
    tell(_STAGES[3], 4, most)
    log_state = check_document_log(layout, keys, report, acked["documents"])
    tell(_STAGES[4], 5, most)
    sidecars = list(sidecar_dirs(layout, keys, covered, log_state))
    total = len(_STAGES) + len(sidecars)
    report.checked["sidecars"] = {}
    for done, sidecar in enumerate(sidecars, len(_STAGES) + 1):
        check_sidecar(keys, *sidecar, report)
        tell(sidecar[0].name, done, total)
    return report


__all__ = ["verify_store"]
