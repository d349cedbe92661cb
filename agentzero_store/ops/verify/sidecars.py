"""``verify``'s check of each index checkpoint: manifest MAC, each data file's checksum
and AES-GCM tag, and that it belongs to its source (store id, log generation) and is not
ahead of it; no byte is handed to an index library."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...base.config import Layout
from ...base.errors import SidecarCorruptError
from ...sidecar.manifest import MANIFEST
from ...sidecar.mechanism import Sidecar
from ...sidecar.types import Change
from ...storage.keys import StoreKeys
from .documents import LogState
from .report import FIX_REBUILD, Finding, VerifyReport

MAX_SIDECARS = 3  # the memory's HNSW, the documents' BM25 and HNSW (``sidecar_dirs``)


class _Probe:
    """Stands in for an index library: verification never hands a byte to a loader."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def params(self) -> Mapping[str, Any]:
        return {}

    def reset(self) -> None:
        return None

    def insert(self, items: Sequence[tuple[int, object]]) -> None:
        return None

    def delete(self, keys: Sequence[int]) -> None:
        return None

    def count(self) -> int:
        return 0

    def dump(self) -> dict[str, bytes]:
        return {}

    def load(self, files: Mapping[str, bytes]) -> None:
        return None


class _SeqSource:
    """The two facts about a source a checkpoint is checked against."""

    def __init__(self, store_id: str, seq: int) -> None:
        self._store_id, self._seq = store_id, seq

    @property
    def store_id(self) -> str:
        return self._store_id

    def source_seq(self) -> int:
        return self._seq

    def changes_since(self, seq: int, limit: int) -> Sequence[Change[object]]:
        return []

    def item_count(self) -> int:
        return 0

    def snapshot(self, batch: int) -> Iterator[Sequence[tuple[int, object]]]:
        return iter(())


def sidecar_dirs(
    layout: Layout, keys: StoreKeys, memory_seq: int | None, log: LogState | None
) -> Iterable[tuple[Path, str, str, int]]:
    """Each checkpoint directory with its kind, the source id and seq it must match."""
    if memory_seq is not None:
        yield layout.memory_hnsw, "hnsw", keys.store_id, memory_seq
    if log is not None:
        source_id = f"{keys.store_id}:{log.generation}:{log.chunking_id}"
        yield layout.rag_tantivy, "bm25", source_id, log.seq
        yield layout.rag_hnsw, "hnsw", source_id, log.seq


def check_sidecar(
    keys: StoreKeys,
    directory: Path,
    kind: str,
    source_id: str,
    seq: int,
    report: VerifyReport,
) -> None:
    """Check one checkpoint (when there is one) against its source, loading nothing."""
    checked: dict[str, Any] = report.checked["sidecars"]
    if not (directory / MANIFEST).exists():
        checked[directory.name] = "no checkpoint (built on the next open)"
        return
    sidecar: Sidecar[object] = Sidecar(
        directory, _Probe(kind), _SeqSource(source_id, seq), key=keys.sidecar_key
    )
    try:
        manifest, stale = sidecar.verify_checkpoint()
    except SidecarCorruptError as exc:
        report.findings.append(Finding(str(directory), MANIFEST, exc.message, FIX_REBUILD))
        return
    if stale is not None:
        report.findings.append(
            Finding(
                str(directory),
                MANIFEST,
                f"the checkpoint was built from another {stale} (e.g. before a compaction); "
                "it is rebuilt on the next open",
                FIX_REBUILD,
                "note",
            )
        )
        return
    checked[directory.name] = {
        "covered_seq": manifest.get("covered_seq"),
        "entries": manifest.get("entries"),
    }


__all__ = ["MAX_SIDECARS", "check_sidecar", "sidecar_dirs"]
