"""Issue 13, fail closed: directory ingest never leaves the directory and survives bad files.

Real files throughout: real symlinks (to /proc/self/environ, /dev/null, outside folders,
themselves), a real FIFO and socket, sparse files, the real CLI entry point. Faults the
OS will not produce on demand (EACCES as root, a file growing or swapped between the
check and the read) come from small named ``SourceIO`` fakes around the real calls.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentzero_store.base.errors import InvalidArgumentError, StoreIOError
from rag import MAX_FILE_BYTES, ChunkParams, DirReport, DocumentStore, FileIssue
from rag.chunking import chunk_text
from rag.feed import MAX_CHUNKS
from rag.files import ingest_dir, read_document
from rag.folder import Scanner, SourceIO

from ..conftest import AGENTZERO, FAST, PASSPHRASE, js, run_cli

KEY = bytes(range(32))


def run(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``agentzero`` with the test passphrase (it is in the CLI's environment: a target)."""
    return run_cli(data_dir, *args, passphrase=PASSPHRASE, check=check)


@pytest.fixture
def store(data_dir: Path) -> Iterator[DocumentStore]:
    s = DocumentStore.open(data_dir, key=KEY, config=FAST)
    yield s
    s.close()


def hostile_folder(tmp_path: Path) -> Path:
    """Three good documents among every way out of a folder a file system offers."""
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\napples and pears\n")
    (root / "sub" / "b.txt").write_text("beta is the second letter\n")
    (root / "link.md").symlink_to("a.md")  # stays inside: followed
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("quokka outside words")
    (root / "env.txt").symlink_to("/proc/self/environ")  # the finding: the passphrase
    (root / "null.md").symlink_to("/dev/null")  # a device
    (root / "secret.md").symlink_to("../outside/secret.md")
    (root / "elsewhere").symlink_to(outside)  # a folder outside
    (root / "alias").symlink_to("sub")  # a folder inside
    (root / "sub" / "up").symlink_to("..")  # a loop
    (root / "loop.md").symlink_to("loop.md")
    (root / "dangling.md").symlink_to("nowhere.md")
    os.mkfifo(root / "pipe.md")  # open() of a FIFO blocks until a writer comes
    return root


HOSTILE_SKIPS = {
    "alias": "symlink_to_folder",
    "dangling.md": "bad_symlink",
    "elsewhere": "symlink_outside",
    "env.txt": "symlink_outside",
    "loop.md": "bad_symlink",
    "null.md": "symlink_outside",
    "pipe.md": "special_file",
    "secret.md": "symlink_outside",
    "sub/up": "symlink_to_folder",
}


def codes(root: Path, issues: list[dict[str, str]]) -> dict[str, str]:
    """relative path → code of each listed issue."""
    return {Path(i["path"]).relative_to(root.resolve()).as_posix(): i["code"] for i in issues}


# ---------------------------------------------------------------- finding 1: symlinks out


def test_cli_ingest_dir_never_follows_a_path_out_of_the_folder(
    data_dir: Path, tmp_path: Path
) -> None:
    root = hostile_folder(tmp_path)
    run(data_dir, "init")
    rep = js(run(data_dir, "rag", "ingest", str(root), "--embedder", "none", "--json"))

    assert (rep["added"], rep["updated"], rep["unchanged"], rep["failed"]) == (3, 0, 0, [])
    assert codes(root, rep["skipped"]) == HOSTILE_SKIPS
    reasons = {Path(i["path"]).name: i["reason"] for i in rep["skipped"]}
    assert reasons["env.txt"].startswith("symlink leads outside the folder, to /proc/")
    assert reasons["pipe.md"] == "a FIFO" and reasons["loop.md"] == "symlink loop"
    listed = js(run(data_dir, "rag", "list", "--json"))
    assert {d["id"] for d in listed} == {"a.md", "link.md", "sub/b.txt"}
    # a link inside is a document of its own path (so `rag watch` owns and deletes it)
    link = next(d for d in listed if d["id"] == "link.md")
    assert link["source_path"] == str(root.resolve() / "link.md")
    # nothing of the environment (passphrase included) or the outside folder got in
    assert run(data_dir, "rag", "get", "env.txt", check=False).returncode == 4
    for words in (PASSPHRASE, "quokka outside"):
        assert js(run(data_dir, "rag", "query", words, "--json")) == []

    human = run(data_dir, "rag", "ingest", str(root), "--embedder", "none")
    assert human.stdout.splitlines()[0] == "added 0, updated 0, unchanged 3, 9 skipped"
    assert f"  skipped {root.resolve() / 'pipe.md'}: a FIFO" in human.stdout.splitlines()
    assert human.stderr == ""


def test_python_ingest_dir_returns_the_report(store: DocumentStore, tmp_path: Path) -> None:
    root = hostile_folder(tmp_path)
    report = store.ingest_dir(root)
    assert isinstance(report, DirReport) and report.total == 3 and report.failed == []
    assert codes(root, [i.to_dict() for i in report.skipped]) == HOSTILE_SKIPS
    assert all(isinstance(i, FileIssue) and i.reason and not i.failed for i in report.skipped)


def test_a_socket_and_kernel_state_are_skipped(store: DocumentStore, tmp_path: Path) -> None:
    root = tmp_path / "n"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock.md"))
        report = ingest_dir(store, root)
    assert [(Path(i.path).name, i.code, i.reason) for i in report.skipped] == [
        ("sock.md", "special_file", "a socket")
    ]
    # /proc inside a root is skipped whole (walking "/" would meet it), and no root
    # may be under /proc or /sys
    issue = Scanner(Path("/")).check(Path("/proc"))
    assert isinstance(issue, FileIssue) and issue.code == "pseudo_fs"
    for kernel in ("/proc/self", "/sys"):
        with pytest.raises(InvalidArgumentError, match="kernel state"):
            ingest_dir(store, kernel)


def test_cli_one_named_file_that_is_no_document_is_refused(data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "env.txt").symlink_to("/proc/self/environ")
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "big.md").write_text("x" * 2_000)
    run(data_dir, "init")
    cases = [
        (["--file", str(tmp_path / "env.txt")], "kernel state, not a document"),
        ([str(tmp_path / "env.txt")], "kernel state, not a document"),
        (["--file", str(tmp_path / "pipe.md")], "a FIFO"),  # must not block on open
        ([str(tmp_path / "pipe.md")], "a FIFO"),
        (["--file", "/dev/null"], "a character device"),
        (["--file", str(tmp_path / "big.md"), "--max-bytes", "1000"], "the limit is 1,000"),
        (["--file", str(tmp_path / "gone.md")], "no such file"),
        (["/proc/self"], "kernel state, not documents"),
    ]
    for args, message in cases:
        p = run(data_dir, "rag", "ingest", *args, "--embedder", "none", "--json", check=False)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        err = js(p)
        assert err["error"] == "invalid_argument" and message in err["message"], (args, err)
    assert js(run(data_dir, "rag", "list", "--json")) == []


# ---------------------------------------------------------------- finding 2: bad files


def test_cli_bad_files_fail_alone_and_the_exit_status_says_so(
    data_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("alpha apples")
    (root / "sub" / "c.md").write_text("gamma grapes")
    (root / "big.md").write_text("word " * 400)  # 2,000 bytes
    (root / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    (root / "blank.md").write_text("  \n\n")
    run(data_dir, "init")
    p = run(
        data_dir, "rag", "ingest", str(root), "--max-bytes", "1000", "--embedder", "none",
        "--json", check=False,
    )  # fmt: skip
    assert p.returncode == 7, p.stderr
    rep = js(p)
    assert rep["added"] == 2
    assert codes(root, rep["failed"]) == {"big.md": "too_large", "latin1.txt": "not_utf8"}
    assert codes(root, rep["skipped"]) == {"blank.md": "empty"}
    big = next(i for i in rep["failed"] if i["code"] == "too_large")
    assert big["reason"] == "2,000 bytes; the limit is 1,000 bytes (--max-bytes)"
    assert {d["id"] for d in js(run(data_dir, "rag", "list", "--json"))} == {"a.md", "sub/c.md"}

    human = run(
        data_dir, "rag", "ingest", str(root), "--max-bytes", "1000", "--embedder", "none",
        check=False,
    )  # fmt: skip
    assert human.returncode == 7
    lines = human.stdout.splitlines()
    assert lines[0] == "added 0, updated 0, unchanged 2, 1 skipped, 2 failed"
    assert f"  failed {root.resolve() / 'latin1.txt'}: not UTF-8 text (bad byte at 3)" in lines
    assert "2 files failed" in human.stderr


def test_a_file_over_the_chunk_limit_fails_alone(data_dir: Path, tmp_path: Path) -> None:
    # One chunk per word: 65,536 one-letter words are one chunk more than a key numbers.
    one_word = ChunkParams(max_words=1, overlap_words=0, max_chars=10)
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    (root / "b.md").write_text("beta")
    (root / "huge.md").write_text("w " * MAX_CHUNKS)
    (root / "z.md").write_text("zeta")
    with DocumentStore.open(data_dir, key=KEY, config=FAST, chunking=one_word) as s:
        report = s.ingest_dir(root)
        assert sorted(r.id for r in s.documents()) == ["a.md", "b.md", "z.md"]
    assert report.added == 3
    assert [(Path(i.path).name, i.code) for i in report.failed] == [("huge.md", "rejected")]
    assert f"has {MAX_CHUNKS} chunks; at most {MAX_CHUNKS - 1}" in report.failed[0].reason


@pytest.mark.parametrize(
    "unit",
    [
        ["a"] * 200,  # one-letter words: 140 new words per chunk
        ["a"] * 64 + ["b" * 1_199],  # the worst mix found: overlap cascades before a long word
        ["a"] * 32 + ["b" * 1_199],
        ["the", "boiler", "pressure", "gauge", "reads", "one", "point", "two", "bar"],  # prose
    ],
)
def test_the_size_limit_refuses_every_file_the_chunk_limit_would(unit: list[str]) -> None:
    text = " ".join(unit * (300_000 // len(" ".join(unit))))
    bytes_per_chunk = len(text.encode()) / len(chunk_text(text))
    assert MAX_FILE_BYTES / bytes_per_chunk < MAX_CHUNKS - 1


class RecordingIO(SourceIO):
    """The real OS calls, remembering every path opened and every byte read."""

    def __init__(self) -> None:
        self.opened: list[Path] = []
        self.bytes_read = 0

    def open(self, path: Path) -> int:
        self.opened.append(path)
        return super().open(path)

    def read(self, fd: int, n: int) -> bytes:
        data = super().read(fd, n)
        self.bytes_read += len(data)
        return data


def test_a_file_over_the_limit_is_never_opened(store: DocumentStore, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    with open(root / "huge.md", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: no disk used
    io = RecordingIO()
    report = ingest_dir(store, root, max_bytes=1_000, io=io)
    assert [p.name for p in io.opened] == ["a.md"] and io.bytes_read == len("alpha")
    assert [(Path(i.path).name, i.code) for i in report.failed] == [("huge.md", "too_large")]
    assert report.added == 1


def test_cli_a_huge_file_costs_no_memory(data_dir: Path, tmp_path: Path) -> None:
    """The finding: a 120 MB file peaked at 3 GB RSS before it was refused."""
    small, big = tmp_path / "small", tmp_path / "big"
    for root in (small, big):
        root.mkdir()
        (root / "a.md").write_text("alpha apples")
    with open(big / "huge.md", "wb") as f:
        f.truncate(128 << 20)  # 128 MiB of NULs, valid UTF-8 and one long "word"; sparse
    run(data_dir, "init")

    def peak_kib(root: Path) -> tuple[int, int, str]:
        out = tmp_path / "out.json"
        with open(out, "w") as stdout:
            proc = subprocess.Popen(
                [AGENTZERO, "--data-dir", str(data_dir), "rag", "ingest", str(root)]
                + ["--embedder", "none", "--json"],
                stdout=stdout,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "AGENTZERO_PASSPHRASE": PASSPHRASE},
            )
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, usage.ru_maxrss, out.read_text()

    base_status, base_kib, _ = peak_kib(small)
    status, kib, out = peak_kib(big)
    assert (base_status, status) == (0, 7), out
    failed = json.loads(out)["failed"]
    assert [(Path(i["path"]).name, i["code"]) for i in failed] == [("huge.md", "too_large")]
    assert kib < base_kib + 32 * 1024, (base_kib, kib)  # reading it would take > 128 MiB


class GrowsWhileRead(SourceIO):
    """Appends to the file after the checks: at ``open`` (fstat sees it) or mid-read."""

    def __init__(self, when: str) -> None:
        self.when = when
        self.bytes_read = 0

    def _grow(self, fd: int) -> None:
        with open(f"/proc/self/fd/{fd}", "ab") as f:
            f.write(b"more words " * 1_000)

    def fstat(self, fd: int) -> os.stat_result:
        if self.when == "before fstat":
            self._grow(fd)
        return super().fstat(fd)

    def read(self, fd: int, n: int) -> bytes:
        if self.when == "mid-read" and self.bytes_read == 0:
            self._grow(fd)
        data = super().read(fd, n)
        self.bytes_read += len(data)
        return data


@pytest.mark.parametrize("when", ["before fstat", "mid-read"])
def test_a_file_growing_after_the_check_is_read_with_a_bound(tmp_path: Path, when: str) -> None:
    (tmp_path / "a.md").write_text("alpha " * 100)  # 600 bytes: under the limit when checked
    io = GrowsWhileRead(when)
    with pytest.raises(InvalidArgumentError, match="the limit is 1,000 bytes") as exc:
        read_document(tmp_path / "a.md", max_bytes=1_000, io=io)
    assert ("it grew" in exc.value.message) and io.bytes_read <= 1_001


class SwapsAfterCheck(SourceIO):
    """Replaces the checked file just before it is opened (a racing attacker)."""

    def __init__(self, swap: str) -> None:
        self.swap = swap

    def open(self, path: Path) -> int:
        if self.swap == "symlink":
            path.unlink()
            path.symlink_to("/proc/self/environ")
        else:  # made before the old one goes, so it cannot reuse the old inode number
            other = path.with_name("other")
            other.write_text("another file, another inode")
            os.replace(other, path)
        return super().open(path)


@pytest.mark.parametrize("swap", ["symlink", "file"])
def test_a_file_swapped_after_the_check_is_not_read(
    store: DocumentStore, tmp_path: Path, swap: str
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    report = ingest_dir(store, root, io=SwapsAfterCheck(swap))
    assert [(Path(i.path).name, i.code) for i in report.failed] == [("a.md", "changed")]
    assert len(store) == 0


class DeniesAccess(SourceIO):
    """EACCES for one file's open and one folder's listing (tests may run as root)."""

    def open(self, path: Path) -> int:
        if path.name == "locked.md":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return super().open(path)

    def listdir(self, path: Path) -> list[str]:
        if path.name in ("private", "notes-root-denied"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return super().listdir(path)


def test_permission_denied_fails_one_file_and_is_a_store_io_error_alone(
    store: DocumentStore, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    (root / "private").mkdir(parents=True)
    (root / "private" / "p.md").write_text("private")
    (root / "a.md").write_text("alpha")
    (root / "locked.md").write_text("locked")
    report = ingest_dir(store, root, io=DeniesAccess())
    assert report.added == 1
    assert codes(root, [i.to_dict() for i in report.failed]) == {
        "locked.md": "io_error",
        "private": "io_error",
    }
    assert all("EACCES" in i.reason for i in report.failed)
    with pytest.raises(StoreIOError, match="EACCES"):
        read_document(root / "locked.md", io=DeniesAccess())
    denied = tmp_path / "notes-root-denied"
    denied.mkdir()
    with pytest.raises(StoreIOError, match="cannot list the folder"):
        ingest_dir(store, denied, io=DeniesAccess())
