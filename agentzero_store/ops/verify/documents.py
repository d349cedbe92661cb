"""``verify``'s check of the document log (``rag/index.jsonl``): every sealed record
authenticates and seqs run 1..N, against what the ledger acknowledged."""

from __future__ import annotations

from dataclasses import dataclass

from ...base.config import Layout
from ...base.errors import AgentZeroStoreError
from ...storage.ack_format import SourceState
from ...storage.keys import StoreKeys
from ...storage.sources import judge_documents
from .report import FIX_ACCEPT, FIX_SALVAGE, Finding, VerifyReport


@dataclass(frozen=True)
class LogState:
    """What the document index checkpoints are checked against: the log's last seq and
    generation, and the chunking their entries were made with."""

    seq: int
    generation: str
    chunking_id: str


def check_document_log(
    layout: Layout, keys: StoreKeys, report: VerifyReport, acked: SourceState
) -> LogState | None:
    """Check the document log; returns what its checkpoints must match (None when it
    cannot be read, or there is no sealed log)."""
    path = layout.rag_log
    from rag.chunking import DEFAULT_PARAMS  # lazily: the engine never imports rag eagerly
    from rag.maintenance import check_log, log_kind

    kind = log_kind(path)
    if kind != "sealed":
        problem = judge_documents(acked, kind=kind)
        if problem is not None:
            report.findings.append(Finding(str(path), None, problem, FIX_ACCEPT))
        elif kind == "plaintext":
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "a plaintext legacy log (this store never had a sealed one); it is "
                    "sealed on the next read-write open",
                    "none needed (or any agentzero rag write command)",
                    "note",
                )
            )
        else:
            report.checked["document_log"] = f"{kind} (no document ingested yet)"
        return None

    try:
        check = check_log(path, keys)
    except AgentZeroStoreError as exc:
        report.findings.append(Finding(str(path), None, exc.message, FIX_SALVAGE))
        return None
    if check.error is not None:
        e = check.error
        where = f"line {e.record}, byte {e.offset}" if e.record is not None else None
        report.findings.append(Finding(str(path), where, e.message, FIX_SALVAGE))
        return None
    if check.torn_bytes:
        report.findings.append(
            Finding(
                str(path),
                f"byte {check.size}",
                f"a torn last line of {check.torn_bytes} bytes (an append that was never "
                "acknowledged); it is cut on the next read-write open",
                "none needed (or any agentzero rag write command)",
                "note",
            )
        )
    report.checked["document_log"] = {"records": check.seq, "live": check.live}
    assert check.generation is not None
    problem = judge_documents(acked, kind="sealed", generation=check.generation, seq=check.seq)
    if problem is not None:
        report.findings.append(Finding(str(path), f"byte {check.size}", problem, FIX_ACCEPT))
    return LogState(check.seq, check.generation, DEFAULT_PARAMS.id)


__all__ = ["LogState", "check_document_log"]
