"""What a sidecar checkpoint holds, and how one is written, loaded and verified.

A checkpoint is a manifest (format, kind, store id, covered seq, entries, embedder,
params, the files with their sha256, and an HMAC over all of it) and either sealed
data files (adapters that are ``SealsBytes`` or ``LoadsBuffers``) or a tree of files
the adapter's library keeps itself (``KeepsFiles``). ``Sidecar`` decides when to write,
load and verify one, under its locks; the files themselves are sealed, authenticated and
checked by ``manifest.CheckpointFiles``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..base.errors import SidecarCorruptError
from ..storage.fileio import FileIO, atomic_write, cleanup_temp_files
from .manifest import (
    MANIFEST,
    SIDECAR_FORMAT,
    TREE_SUFFIX,
    CheckpointFiles,
    canonical,
    coverage,
    data_aad,
)
from .types import EmbedderInfo, KeepsFiles, LoadsBuffers, SealsBytes, SidecarIndex, Source


def embedder_json(embedder: EmbedderInfo | None) -> dict[str, Any] | None:
    """The manifest's ``embedder`` field."""
    if embedder is None:
        return None
    return {"model_id": embedder.model_id, "dimension": embedder.dimension}


def mismatch(
    m: Mapping[str, Any],
    index: SidecarIndex[Any],
    source: Source[Any],
    embedder: EmbedderInfo | None,
) -> str | None:
    """The first manifest field that does not fit this sidecar, or None."""
    expect = {
        "format": SIDECAR_FORMAT,
        "kind": index.kind,
        "store_id": source.store_id,
        "embedder": embedder_json(embedder),
        "params": json.loads(canonical(dict(index.params()))),
    }
    for field, want in expect.items():
        if m.get(field) != want:
            return field
    return None


def write(
    files: CheckpointFiles,
    index: SidecarIndex[Any],
    source: Source[Any],
    embedder: EmbedderInfo | None,
    seq: int,
    *,
    io: FileIO,
) -> tuple[str, set[str]]:
    """Write the index as the checkpoint of ``seq``: data files, then the manifest.

    Returns when it was made and the names of its files (to keep when the files of
    older checkpoints are removed). The caller holds the sidecar's locks.
    """
    kind = index.kind
    gen = f"{seq:012d}-{secrets.token_hex(4)}"
    tree: str | None = None
    if isinstance(index, KeepsFiles):
        tree = f"{kind}-{gen}{TREE_SUFFIX}"
        written = files.write_tree(tree, index.save)
        keep = {tree}
    else:
        if not isinstance(index, SealsBytes):
            raise TypeError(f"{index!r} is neither SealsBytes nor KeepsFiles")
        written = files.write_sealed(
            f"{kind}-{gen}", index.dump(), lambda name: data_aad(source.store_id, kind, seq, name)
        )
        keep = {f["file"] for f in written.values()}
    now = datetime.now(UTC).isoformat()
    body: dict[str, Any] = {
        "format": SIDECAR_FORMAT,
        "kind": kind,
        "store_id": source.store_id,
        "covered_seq": seq,
        "entries": index.count(),
        "created_at": now,
        "embedder": embedder_json(embedder),
        "params": dict(index.params()),
        "files": written,
    }
    if tree is not None:
        body["tree"] = tree
    body["mac"] = files.mac(body)
    # The commit point: after this rename the new checkpoint is the one on disk.
    atomic_write(files.directory / MANIFEST, canonical(body) + b"\n", io=io)
    return now, keep


def load(
    files: CheckpointFiles,
    index: SidecarIndex[Any],
    source: Source[Any],
    embedder: EmbedderInfo | None,
) -> tuple[int, Any]:
    """Load the verified checkpoint into ``index``: (the seq it covers, when it was made).

    Raises ``SidecarCorruptError`` when it is missing, damaged, ahead of the source, or
    another store's, format's, kind's, embedder's or parameters'.
    """
    with files.lock():
        cleanup_temp_files(files.directory)  # a crash mid-write can leave these
        m = files.read_manifest()
        if (field := mismatch(m, index, source, embedder)) is not None:
            raise SidecarCorruptError(f"the checkpoint has another {field}")
        seq, table = coverage(m)
        if seq > source.source_seq():
            raise SidecarCorruptError("the checkpoint is ahead of its source")
        buffers: dict[str, bytearray] = {}
        plain: dict[str, bytes] = {}
        if isinstance(index, KeepsFiles) != ("tree" in m):
            raise SidecarCorruptError("the checkpoint has another layout")
        if isinstance(index, KeepsFiles):
            # Inside the lock: no other process removes the tree while it is linked.
            tree = files.verify_tree(m["tree"], table)
            files.remove_unreferenced(index.kind, {tree.name})
            index.open_saved(tree)
        else:
            buffers, plain = files.read_sealed(
                table,
                lambda name: data_aad(source.store_id, index.kind, seq, name),
                # An adapter that reads its checkpoint in place gets the plaintext
                # decrypted straight into buffers it may keep (see LoadsBuffers).
                in_place=isinstance(index, LoadsBuffers),
            )
            files.remove_unreferenced(index.kind, {f["file"] for f in table.values()})
    # Only bytes that passed the MAC, the checksum and the AES-GCM tag get here.
    if isinstance(index, LoadsBuffers):
        index.load_buffers(buffers)
    elif isinstance(index, SealsBytes):
        index.load(plain)
    del buffers, plain  # the adapter holds what it keeps of the plaintext
    if index.count() != m.get("entries"):
        raise SidecarCorruptError("the loaded index has a different entry count")
    return seq, m.get("created_at")


def verify(
    files: CheckpointFiles, index: SidecarIndex[Any], source: Source[Any]
) -> tuple[dict[str, Any], str | None]:
    """Check the checkpoint on disk without loading it (see ``Sidecar.verify_checkpoint``)."""
    with files.lock():
        m = files.read_manifest()
        for field in ("format", "kind", "store_id"):
            want = {
                "format": SIDECAR_FORMAT,
                "kind": index.kind,
                "store_id": source.store_id,
            }[field]
            if m.get(field) != want:
                return m, field
        seq, table = coverage(m)
        if seq > (source_seq := source.source_seq()):
            raise SidecarCorruptError(
                f"the checkpoint covers seq {seq}, beyond its source's {source_seq}"
            )
        if "tree" in m:
            files.verify_tree(m["tree"], table)
        else:
            files.read_sealed(
                table, lambda name: data_aad(source.store_id, index.kind, seq, name), in_place=False
            )
        return m, None


__all__ = ["embedder_json", "load", "mismatch", "verify", "write"]
