"""A sidecar checkpoint on disk: its authenticated manifest and sealed data files.

``manifest.json`` names each data file with its sha256 and carries an HMAC over all of it
(keyed from the sidecar subkey); every data file is sealed with AES-256-GCM, bound to the
store, the index kind, the checkpoint's seq and the file's role. An adapter whose library
reads its own files (``types.KeepsFiles``: blinded Tantivy) checkpoints a
directory instead, ``<kind>-<gen>.tree/``, whose files are not sealed (they hold no
plaintext) but each named with its sha256 in the same authenticated manifest. Sidecar files are
untrusted input: everything here is checked BEFORE an index library sees a byte, because
hnswlib and tantivy can crash or misread on bad files. ``mechanism.Sidecar`` decides when to
load, write and rebuild; this module only reads, verifies and seals the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..base.errors import SidecarCorruptError
from ..storage.crypto import InvalidTag, Sealer
from ..storage.fileio import DEFAULT_IO, FileIO, atomic_write, translate_os_errors

try:  # advisory lock between processes sharing a data dir (POSIX only)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

SIDECAR_FORMAT = "agentzero-sidecar/1"
MANIFEST = "manifest.json"
LOCK = ".lock"
TREE_SUFFIX = ".tree"
_READ = 1 << 20
_Ident = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns of a tree file


def canonical(obj: Any) -> bytes:
    """Compact JSON with sorted keys: the exact bytes the manifest MAC covers."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def data_aad(store_id: str, kind: str, seq: int, name: str) -> bytes:
    """Associated data of one sealed data file.

    Binds store, kind, seq and file role: a checkpoint file copied from another store,
    another index or another checkpoint fails authentication.
    """
    return f"{SIDECAR_FORMAT}|{store_id}|{kind}|{seq}|{name}".encode()


def coverage(m: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """The manifest's ``covered_seq`` and its ``files`` table, or ``SidecarCorruptError``."""
    seq, files = m.get("covered_seq"), m.get("files")
    if not isinstance(seq, int) or not isinstance(files, dict):
        raise SidecarCorruptError(f"{MANIFEST} lacks covered_seq or files")
    return seq, files


class CheckpointFiles:
    """Seal, authenticate and verify the files of one sidecar directory."""

    def __init__(self, directory: Path, key: bytes, *, io: FileIO = DEFAULT_IO) -> None:
        self.directory = directory
        self._io = io
        self._sealer = Sealer(key)
        # A separate key for the manifest MAC: never use one key for two algorithms.
        self._mac_key = hmac.new(key, b"agentzero/sidecar-manifest-mac/v1", "sha256").digest()
        # sha256 and size of tree files already hashed (and fsynced), by inode and mtime:
        # a checkpoint directory shares most files with the one before (hard links).
        self._digests: dict[_Ident, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"CheckpointFiles(dir={str(self.directory)!r}, <keys hidden>)"

    def seal(self, plain: bytes, aad: bytes) -> bytes:
        """Seal one data file's bytes (fresh nonce) for ``aad``."""
        return self._sealer.seal(plain, aad)

    def mac(self, body: Mapping[str, Any]) -> str:
        """The manifest MAC over every field of ``body`` except ``mac`` itself."""
        unsigned = {k: v for k, v in body.items() if k != "mac"}
        return hmac.new(self._mac_key, canonical(unsigned), "sha256").hexdigest()

    def read_manifest(self) -> dict[str, Any]:
        """The manifest, after its MAC was checked; else ``SidecarCorruptError``."""
        path = self.directory / MANIFEST
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise SidecarCorruptError(f"no checkpoint ({MANIFEST} missing)") from exc
        except OSError as exc:
            raise SidecarCorruptError(f"{MANIFEST} unreadable: {exc.strerror}") from exc
        try:
            m = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SidecarCorruptError(f"{MANIFEST} is not valid JSON") from exc
        if not isinstance(m, dict) or not isinstance(m.get("mac"), str):
            raise SidecarCorruptError(f"{MANIFEST} is not a manifest")
        if not hmac.compare_digest(m["mac"], self.mac(m)):
            raise SidecarCorruptError(f"{MANIFEST} failed authentication (other store or tampered)")
        return m

    def read_manifest_quietly(self) -> dict[str, Any] | None:
        """The verified manifest, or None if it is missing or damaged."""
        try:
            return self.read_manifest()
        except SidecarCorruptError:
            return None

    def read_data_file(self, name: str, f: Any, aad: bytes) -> bytes:
        """The plaintext of the manifest's entry ``name`` after its checksum and tag."""
        blob = self._read_checked(name, f)
        try:
            return self._sealer.open(blob, aad)
        except InvalidTag as exc:
            raise SidecarCorruptError(f"data file {f['file']} failed authentication") from exc

    def read_data_buffer(self, name: str, f: Any, aad: bytes) -> bytearray:
        """``read_data_file`` into a ``bytearray``, for adapters that read their
        checkpoint in place (``types.LoadsBuffers``).

        Streamed: the file is read once in chunks that are hashed and decrypted while
        still in cache, into one preallocated buffer (the sealed bytes are never held
        whole). Nothing is returned unless both the sha256 and the AES-GCM tag passed.
        """
        path = self.directory / self._file_name(name, f)
        hasher = hashlib.sha256()
        try:
            with path.open("rb") as fh:
                plain = self._sealer.open_file(fh, os.fstat(fh.fileno()).st_size, aad, hasher)
        except OSError as exc:
            raise SidecarCorruptError(f"data file {path.name} missing or unreadable") from exc
        except InvalidTag as exc:
            if hasher.hexdigest() != f.get("sha256"):
                raise SidecarCorruptError(f"data file {path.name} fails its checksum") from exc
            raise SidecarCorruptError(f"data file {path.name} failed authentication") from exc
        if hasher.hexdigest() != f.get("sha256"):
            raise SidecarCorruptError(f"data file {path.name} fails its checksum")
        return plain

    def _file_name(self, name: str, f: Any) -> str:
        """The data file the manifest's entry ``name`` names, if it is a plain name."""
        if not isinstance(f, dict) or not isinstance(f.get("file"), str):
            raise SidecarCorruptError(f"{MANIFEST} entry {name!r} is malformed")
        fname: str = f["file"]
        if "/" in fname or fname.startswith(".") or fname == MANIFEST:
            raise SidecarCorruptError(f"{MANIFEST} names a bad file {fname!r}")
        return fname

    def _read_checked(self, name: str, f: Any) -> bytes:
        """The sealed bytes of entry ``name``, after the manifest's sha256 of them."""
        fname = self._file_name(name, f)
        try:
            blob = (self.directory / fname).read_bytes()
        except OSError as exc:
            raise SidecarCorruptError(f"data file {fname} missing or unreadable") from exc
        if hashlib.sha256(blob).hexdigest() != f.get("sha256"):
            raise SidecarCorruptError(f"data file {fname} fails its checksum")
        return blob

    # ------------------------------------------------------------------ sealed files
    def write_sealed(
        self, prefix: str, dumped: Mapping[str, bytes], aad: Callable[[str], bytes]
    ) -> dict[str, dict[str, Any]]:
        """Seal and durably write each named byte string as ``<prefix>-<name>.sealed``;
        returns the manifest's ``files`` table for them."""
        files: dict[str, dict[str, Any]] = {}
        for name, plain in dumped.items():
            fname = f"{prefix}-{name}.sealed"
            blob = self.seal(plain, aad(name))
            # atomic_write: temp file, fsync, rename, fsync(dir) — the file is durable
            # under its final name before the manifest that names it exists.
            atomic_write(self.directory / fname, blob, io=self._io)
            files[name] = {
                "file": fname,
                "sha256": hashlib.sha256(blob).hexdigest(),
                "bytes": len(blob),
            }
        return files

    def read_sealed(
        self, files: Mapping[str, Any], aad: Callable[[str], bytes], *, in_place: bool
    ) -> tuple[dict[str, bytearray], dict[str, bytes]]:
        """Each data file's plaintext after its checksum and AES-GCM tag: as buffers
        (``in_place``, see ``read_data_buffer``), else as bytes."""
        buffers: dict[str, bytearray] = {}
        plain: dict[str, bytes] = {}
        for name, f in files.items():
            if in_place:
                buffers[name] = self.read_data_buffer(name, f, aad(name))
            else:
                plain[name] = self.read_data_file(name, f, aad(name))
        return buffers, plain

    # ------------------------------------------------------------------ trees
    def write_tree(self, name: str, fill: Callable[[Path], None]) -> dict[str, dict[str, Any]]:
        """Create the checkpoint directory ``name``, let ``fill`` write its files, make
        it durable and return the manifest's ``files`` table for it."""
        path = self.directory / name
        with translate_os_errors("creating", path):
            path.mkdir(mode=0o700)
        files: dict[str, dict[str, Any]] = {}
        digests: dict[_Ident, dict[str, Any]] = {}
        try:
            fill(path)
            with translate_os_errors("writing", path):
                for p in sorted(path.iterdir()):
                    if p.stat().st_mode & 0o777 != 0o600:
                        # Tantivy creates its files with the process umask: whatever it
                        # is, a checkpoint's files are the owner's alone, like the rest.
                        os.chmod(p, 0o600)
                    ident, digest = self._digest(p, durable=True)
                    files[p.name] = {"file": p.name, **digest}
                    digests[ident] = digest
                self._io.fsync_dir(path)
                self._io.fsync_dir(self.directory)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)  # no manifest will ever name it
            raise
        self._digests = digests  # only the files of the newest checkpoint stay cached
        return files

    def verify_tree(self, name: Any, files: Mapping[str, Any]) -> Path:
        """The checkpoint directory ``name``, after checking that it holds exactly the
        manifest's files and each one's sha256; else ``SidecarCorruptError``."""
        if (
            not isinstance(name, str)
            or "/" in name
            or name.startswith(".")
            or not name.endswith(TREE_SUFFIX)
        ):
            raise SidecarCorruptError(f"{MANIFEST} names a bad checkpoint directory {name!r}")
        path = self.directory / name
        try:
            present = {p.name for p in path.iterdir()}
        except OSError as exc:
            raise SidecarCorruptError(f"checkpoint directory {name} missing or unreadable") from exc
        if present != set(files):
            raise SidecarCorruptError(
                f"checkpoint directory {name} does not hold exactly the files {MANIFEST} names"
            )
        for fname, f in files.items():
            # Tantivy's own names include ".managed.json": a tree file is any plain name.
            if not isinstance(f, dict) or f.get("file") != fname or fname in (".", ".."):
                raise SidecarCorruptError(f"{MANIFEST} entry {fname!r} is malformed")
            try:
                ident, digest = self._digest(path / fname, durable=False)
            except OSError as exc:
                raise SidecarCorruptError(f"data file {name}/{fname} is unreadable") from exc
            if digest["sha256"] != f.get("sha256") or digest["bytes"] != f.get("bytes"):
                self._digests.pop(ident, None)
                raise SidecarCorruptError(f"data file {name}/{fname} fails its checksum")
        return path

    def _digest(self, p: Path, *, durable: bool) -> tuple[_Ident, dict[str, Any]]:
        """sha256 and size of ``p`` (cached per inode and mtime; fsynced if ``durable``)."""
        st = p.stat()
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._digests.get(ident)
        if known is not None:
            return ident, known
        hasher = hashlib.sha256()
        fd = self._io.open(p, os.O_RDONLY)
        try:
            while block := os.read(fd, _READ):
                hasher.update(block)
            if durable:
                self._io.fsync(fd)
        finally:
            self._io.close(fd)
        known = self._digests[ident] = {"sha256": hasher.hexdigest(), "bytes": st.st_size}
        return ident, known

    def size_bytes(self) -> int:
        """Bytes on disk under the sidecar dir (0 if it does not exist yet); a file with
        several hard links (a working index and its checkpoint) counts once."""
        seen: set[tuple[int, int]] = set()
        size = 0
        for top, _, names in os.walk(self.directory):
            for n in names:
                with contextlib.suppress(OSError):
                    st = os.stat(os.path.join(top, n))
                    if (st.st_dev, st.st_ino) not in seen:
                        seen.add((st.st_dev, st.st_ino))
                        size += st.st_size
        return size

    def remove_unreferenced(self, kind: str, keep: set[str]) -> None:
        """Delete this kind's sealed data files and checkpoint directories that the
        manifest no longer names (best effort: what fails to go stays garbage)."""
        prefix = f"{kind}-"
        try:
            found = list(self.directory.iterdir())
        except OSError:
            return
        for p in found:
            if not p.name.startswith(prefix) or p.name in keep:
                continue
            if p.name.endswith(".sealed"):
                with contextlib.suppress(OSError):
                    self._io.unlink(p)
            elif p.name.endswith(TREE_SUFFIX):
                shutil.rmtree(p, ignore_errors=True)

    def collect_garbage(self, kind: str) -> None:
        """Delete this kind's data files and trees that the manifest on disk does not
        name: those of a checkpoint that failed before its manifest was committed.

        Call under ``lock``, so no other process is between writing its files and its
        manifest. With no valid manifest nothing of this kind is kept.
        """
        m = self.read_manifest_quietly()
        keep: set[str] = set()
        if m is not None and m.get("kind") == kind:
            tree, files = m.get("tree"), m.get("files")
            if isinstance(tree, str):
                keep.add(tree)
            elif isinstance(files, dict):
                keep |= {f["file"] for f in files.values() if isinstance(f, dict) and "file" in f}
        self.remove_unreferenced(kind, keep)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive advisory lock on the sidecar dir: one process checkpoints at a time,
        so one cannot delete data files another's new manifest is about to name."""
        if fcntl is None or not self.directory.is_dir():
            yield
            return
        with translate_os_errors("locking", self.directory):
            fd = os.open(self.directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


__all__ = [
    "LOCK",
    "MANIFEST",
    "SIDECAR_FORMAT",
    "TREE_SUFFIX",
    "CheckpointFiles",
    "canonical",
    "coverage",
    "data_aad",
]
