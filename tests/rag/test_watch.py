"""``rag watch``: FolderSync on real files and a real store, then the real CLI end to end."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.events import (
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from rag import DocInput, DocumentStore
from rag.debounce import Debouncer
from rag.files import ingest_dir
from rag.watch import Change, FolderSync

from ..conftest import AGENTZERO, FAST, PASSPHRASE, child_env, js, run_cli

TIMEOUT = 20.0  # seconds the end-to-end test waits for the watcher to catch up


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\napples and pears\n")
    (root / "sub" / "b.txt").write_text("beta is the second letter\n")
    return root


@pytest.fixture
def store(data_dir: Path) -> Iterator[DocumentStore]:
    s = DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST)
    yield s
    s.close()


def state(store: DocumentStore) -> dict[str, str]:
    """id → text of every live document."""
    return {r.id: r.text for r in store.documents()}


def kinds(changes: list[Change]) -> set[tuple[str, str | None]]:
    return {(c.event, c.id) for c in changes}


# ---------------------------------------------------------------- initial sync


def test_initial_sync_ingests_and_deletes_only_owned_stale_docs(
    store: DocumentStore, folder: Path, tmp_path: Path
) -> None:
    (folder / ".git").mkdir()
    (folder / ".git" / "x.md").write_text("hidden dirs are not watched")
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / "gone.md").write_text("was here once")
    ingest_dir(store, folder)
    (folder / "gone.md").unlink()
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "c.md").write_text("another folder's document")
    ingest_dir(store, other)  # same-looking relative id space, other source: not ours
    store.ingest_many([DocInput("old.md", "typed in, no source file")])

    changes = FolderSync(store, folder).initial_sync()

    assert kinds(changes) == {
        ("unchanged", "a.md"),
        ("unchanged", "sub/b.txt"),
        ("deleted", "gone.md"),
    }
    assert set(state(store)) == {"a.md", "sub/b.txt", "c.md", "old.md"}


# ---------------------------------------------------------------- apply(events)


def test_apply_create_modify_delete_and_rename(store: DocumentStore, folder: Path) -> None:
    sync = FolderSync(store, folder)
    sync.initial_sync()
    a, c = folder / "a.md", folder / "c.md"

    c.write_text("gamma rays")
    assert kinds(sync.apply([FileCreatedEvent(str(c)), FileModifiedEvent(str(c))])) == {
        ("ingested", "c.md")
    }
    assert sync.apply([FileModifiedEvent(str(c))]) == [
        Change("unchanged", "c.md", str(c))
    ]  # identical content is a no-op in the store

    a.rename(folder / "sub" / "a2.md")
    moved = FileMovedEvent(str(a), str(folder / "sub" / "a2.md"))
    assert kinds(sync.apply([moved])) == {("deleted", "a.md"), ("ingested", "sub/a2.md")}

    c.unlink()
    assert kinds(sync.apply([FileDeletedEvent(str(c))])) == {("deleted", "c.md")}
    assert state(store) == {
        "sub/a2.md": "# Alpha\napples and pears\n",
        "sub/b.txt": "beta is the second letter\n",
    }


def test_apply_editor_save_dances(store: DocumentStore, folder: Path) -> None:
    sync = FolderSync(store, folder)
    sync.initial_sync()
    a = folder / "a.md"

    # write to a temp file, then os.replace over the real one: arrives as moved(tmp → real)
    tmp = folder / ".a.md.tmp"
    tmp.write_text("# Alpha\natomic save\n")
    os.replace(tmp, a)
    events = [FileCreatedEvent(str(tmp)), FileMovedEvent(str(tmp), str(a))]
    assert kinds(sync.apply(events)) == {("ingested", "a.md")}

    # vim: probe file 4913, a.md renamed to a.md~, a new a.md written, the backup removed
    probe, backup = folder / "4913", folder / "a.md~"
    probe.write_text("")
    probe.unlink()
    a.rename(backup)
    a.write_text("# Alpha\nvim save\n")
    backup.unlink()
    events = [
        FileCreatedEvent(str(probe)),
        FileDeletedEvent(str(probe)),
        FileMovedEvent(str(a), str(backup)),
        FileCreatedEvent(str(a)),
        FileModifiedEvent(str(a)),
        FileDeletedEvent(str(backup)),
    ]
    assert kinds(sync.apply(events)) == {("ingested", "a.md")}

    # emacs lock symlink and a document created and deleted within one burst: nothing
    (folder / ".#a.md").symlink_to("user@host.123")
    flash = folder / "flash.md"
    events = [FileCreatedEvent(str(folder / ".#a.md")), FileCreatedEvent(str(flash))]
    assert sync.apply(events) == []
    assert state(store)["a.md"] == "# Alpha\nvim save\n"
    assert set(state(store)) == {"a.md", "sub/b.txt"}


def test_apply_skips_bad_files_and_ignores_reads(store: DocumentStore, folder: Path) -> None:
    sync = FolderSync(store, folder)
    sync.initial_sync()
    bad, empty, a = folder / "bad.md", folder / "empty.md", folder / "a.md"
    bad.write_bytes(b"\xff\xfe not utf-8")
    empty.write_text("  \n")
    changes = sync.apply([FileCreatedEvent(str(bad)), FileCreatedEvent(str(empty))])
    # not UTF-8 is an error to look at; an empty file is left out by policy
    assert {(c.event, c.id, c.code) for c in changes} == {
        ("failed", "bad.md", "not_utf8"),
        ("skipped", "empty.md", "empty"),
    }
    assert all(c.reason for c in changes)
    # opening and reading a file (as the watcher itself does) is no change at all
    assert sync.apply([FileOpenedEvent(str(a)), FileClosedNoWriteEvent(str(a))]) == []
    # hidden folders and paths outside the root are not the watcher's business
    (folder / ".git").mkdir()
    (folder / ".git" / "x.md").write_text("inside a hidden folder")
    outside = folder.parent / "outside.md"
    outside.write_text("not in the folder")
    events = [FileCreatedEvent(str(folder / ".git" / "x.md")), FileCreatedEvent(str(outside))]
    assert sync.apply(events) == []
    assert set(state(store)) == {"a.md", "sub/b.txt"}


def test_apply_directory_moves_and_deletes(store: DocumentStore, folder: Path) -> None:
    sync = FolderSync(store, folder)
    sync.initial_sync()
    (folder / "sub").rename(folder / "moved")
    moved = DirMovedEvent(str(folder / "sub"), str(folder / "moved"))
    assert kinds(sync.apply([moved])) == {("deleted", "sub/b.txt"), ("ingested", "moved/b.txt")}
    (folder / "moved" / "b.txt").unlink()
    (folder / "moved").rmdir()
    assert kinds(sync.apply([DirDeletedEvent(str(folder / "moved"))])) == {
        ("deleted", "moved/b.txt")
    }


def test_store_errors_are_reported_not_raised(store: DocumentStore, folder: Path) -> None:
    sync = FolderSync(store, folder)
    store.close()  # every write now fails with StoreClosedError
    changes = sync.apply([FileModifiedEvent(str(folder / "a.md"))])
    assert [(c.event, c.code) for c in changes] == [("failed", "store_closed")]
    assert "hint" in (changes[0].reason or "")


def hostile(folder: Path, tmp_path: Path) -> dict[str, Path]:
    """Ways out of the folder and files no reader should touch, beside the good ones."""
    (tmp_path / "outside.md").write_text("quokka outside words")
    paths = {
        name: folder / name
        for name in ("env.txt", "null.md", "out.md", "pipe.md", "big.md", "inner.md", "back")
    }
    paths["env.txt"].symlink_to("/proc/self/environ")
    paths["null.md"].symlink_to("/dev/null")
    paths["out.md"].symlink_to(tmp_path / "outside.md")
    os.mkfifo(paths["pipe.md"])
    paths["big.md"].write_text("word " * 400)  # 2,000 bytes, over the test's limit
    paths["inner.md"].symlink_to("a.md")  # inside: followed
    paths["back"].symlink_to(".")  # a folder loop
    return paths


HOSTILE = {
    ("skipped", "env.txt", "symlink_outside"),
    ("skipped", "null.md", "symlink_outside"),
    ("skipped", "out.md", "symlink_outside"),
    ("skipped", "pipe.md", "special_file"),
    ("failed", "big.md", "too_large"),
    ("skipped", "back", "symlink_to_folder"),
}


def test_initial_sync_never_leaves_the_folder(
    store: DocumentStore, folder: Path, tmp_path: Path
) -> None:
    hostile(folder, tmp_path)
    changes = FolderSync(store, folder, max_bytes=1_000).initial_sync()
    assert {(c.event, c.id, c.code) for c in changes} == HOSTILE | {
        ("ingested", "a.md", None),
        ("ingested", "inner.md", None),
        ("ingested", "sub/b.txt", None),
    }
    assert all(c.reason for c in changes if c.code)
    assert set(state(store)) == {"a.md", "inner.md", "sub/b.txt"}


def test_apply_never_leaves_the_folder(store: DocumentStore, folder: Path, tmp_path: Path) -> None:
    sync = FolderSync(store, folder, max_bytes=1_000)
    sync.initial_sync()
    paths = hostile(folder, tmp_path)
    changes = sync.apply([FileCreatedEvent(str(p)) for p in paths.values()])
    # "back" is no document name and no folder event: a created symlink is not followed
    assert {(c.event, c.id, c.code) for c in changes} == (
        HOSTILE - {("skipped", "back", "symlink_to_folder")}
    ) | {("ingested", "inner.md", None)}
    # a document whose file becomes a symlink out keeps its last version (as an emptied
    # file does), and nothing of the target is read
    a = folder / "a.md"
    a.unlink()
    a.symlink_to("/proc/self/environ")
    changes = sync.apply([FileDeletedEvent(str(a)), FileCreatedEvent(str(a))])
    assert [(c.event, c.id, c.code) for c in changes] == [("skipped", "a.md", "symlink_outside")]
    assert state(store) == {
        "a.md": "# Alpha\napples and pears\n",
        "inner.md": "# Alpha\napples and pears\n",
        "sub/b.txt": "beta is the second letter\n",
    }


# ---------------------------------------------------------------- debounce


class ManualClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_debouncer_waits_for_quiet_and_coalesces() -> None:
    clock = ManualClock()
    d = Debouncer(0.3, 2.0, clock)
    p, q = Path("/x/a.md"), Path("/x/dir")
    d.add(p)
    clock.now = 0.2
    d.add(p)  # restarts a's quiet period
    d.add(q, is_dir=True)
    assert d.pop_due() == {} and d.next_due_in() == pytest.approx(0.3)
    clock.now = 0.5
    assert d.pop_due() == {p: False, q: True}
    assert d.next_due_in() is None and len(d) == 0


def test_debouncer_caps_the_delay_of_a_busy_file() -> None:
    clock = ManualClock()
    d = Debouncer(0.3, 2.0, clock)
    p = Path("/x/log.md")
    while clock.now < 1.9:
        d.add(p)
        clock.now += 0.1
    assert d.pop_due() == {}
    clock.now = 2.0
    assert d.pop_due() == {p: False}


class SteppedClock:
    """A monotonic clock the test moves by hand: the debounce window is then a matter of
    the test's steps, not of how fast a loaded machine runs the writer's sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def wait_until_quiet(sync: FolderSync, quiet: float = 0.3, timeout: float = 10) -> None:
    """Until the observer has queued the path and no event came for ``quiet`` real
    seconds (inotify delivers on its own thread, after the write returns)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        seen = sync.events_seen
        if seen != last:
            last, since = seen, time.monotonic()
        elif seen and time.monotonic() - since >= quiet:
            return
        time.sleep(0.02)
    raise AssertionError(f"the observer never went quiet ({last} events)")


def test_live_observer_debounces_a_burst(store: DocumentStore, folder: Path) -> None:
    """Five writes 50 ms apart on the watcher's clock, inside its 0.3 s quiet period, are
    one change with the last content (the real inotify observer and loop; only the clock
    is the test's, so a slow machine cannot split the burst)."""
    seen: list[Change] = []
    got = threading.Event()

    def on_change(c: Change) -> None:
        seen.append(c)
        got.set()

    clock = SteppedClock()
    sync = FolderSync(store, folder, debounce=0.3, on_change=on_change, clock=clock)
    sync.start()
    sync.initial_sync()
    seen.clear()
    runner = threading.Thread(target=sync.run)
    runner.start()
    try:
        c = folder / "c.md"
        for i in range(5):  # a burst: one write every 50 ms, well inside the quiet period
            c.write_text(f"gamma version {i}\n")
            clock.advance(0.05)
        wait_until_quiet(sync)
        assert not seen, "nothing is due before the quiet period has passed"
        clock.advance(0.3)
        sync.wake()
        assert got.wait(5)
        clock.advance(1.0)  # nothing more may follow, however long the quiet lasts
        sync.wake()
        time.sleep(0.3)
    finally:
        sync.stop()
        runner.join(5)
    assert not runner.is_alive()
    assert seen == [Change("ingested", "c.md", str(folder.resolve() / "c.md"))]
    assert state(store)["c.md"] == "gamma version 4\n"


# ---------------------------------------------------------------- end to end (real CLI)


def cli(data_dir: Path, *args: str) -> Any:
    """``agentzero rag ARGS --json`` in a fresh process (a read-only open beside the watcher)."""
    return js(run_cli(data_dir, "rag", *args, "--json", passphrase=PASSPHRASE))


def cli_env() -> dict[str, str]:
    env = child_env()
    env["AGENTZERO_PASSPHRASE"] = PASSPHRASE
    return env


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[dict[str, Any]]:
    """The watcher's JSON lines, read on a thread so the test can wait with a timeout."""
    q: queue.Queue[dict[str, Any]] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            q.put(json.loads(line))

    threading.Thread(target=pump, daemon=True).start()
    return q


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_watch_cli_end_to_end(data_dir: Path, folder: Path) -> None:
    # The store is made here with the fast test KDF (kept in keys.json, so every CLI
    # call opens quickly), with one owned document whose file is already gone and one
    # document that did not come from the folder.
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        (folder / "stale.md").write_text("deleted while nobody watched")
        ingest_dir(s, folder)
        s.ingest_many([DocInput("mine.md", "typed in by hand")])
    (folder / "stale.md").unlink()
    (folder / "old.md").write_text("to be renamed\n")

    proc = subprocess.Popen(
        [AGENTZERO, "--data-dir", str(data_dir), "rag", "watch", str(folder)]
        + ["--embedder", "none", "--debounce", "0.2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
    )
    try:
        events = lines_of(proc)
        first = [events.get(timeout=TIMEOUT) for _ in range(5)]
        assert first[-1]["event"] == "synced", first
        assert {(e["event"], e["id"]) for e in first[:-1]} == {
            ("unchanged", "a.md"),
            ("unchanged", "sub/b.txt"),
            ("ingested", "old.md"),
            ("deleted", "stale.md"),
        }

        (folder / "c.md").write_text("# Gamma\nzebra crossing\n")
        tmp = folder / ".a.md.swp.tmp"
        tmp.write_text("# Alpha\nquince jam\n")
        os.replace(tmp, folder / "a.md")  # an editor's atomic save
        (folder / "sub" / "b.txt").unlink()
        (folder / "old.md").rename(folder / "new.md")

        want = {
            "a.md": len("# Alpha\nquince jam\n"),
            "c.md": len("# Gamma\nzebra crossing\n"),
            "new.md": len("to be renamed\n"),
            "mine.md": len("typed in by hand"),
        }
        wait_for(
            lambda: {r["id"]: r["chars"] for r in cli(data_dir, "list")} == want,
            "the store to follow the folder",
        )
        assert cli(data_dir, "get", "a.md")["text"] == "# Alpha\nquince jam\n"
        assert [h["id"] for h in cli(data_dir, "query", "zebra")] == ["c.md"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert "Traceback" not in err

    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        assert set(state(s)) == set(want)
        # close() checkpointed the index: a reopen has nothing to replay
        assert all(st.covered_seq == st.source_seq for st in s.index_status())


def test_watch_cli_never_leaves_the_folder(data_dir: Path, folder: Path, tmp_path: Path) -> None:
    DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    (folder / "env.txt").symlink_to("/proc/self/environ")  # the environment holds the passphrase
    proc = subprocess.Popen(
        [AGENTZERO, "--data-dir", str(data_dir), "rag", "watch", str(folder)]
        + ["--embedder", "none", "--debounce", "0.2", "--max-bytes", "1000", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
    )
    try:
        events = lines_of(proc)
        first = [events.get(timeout=TIMEOUT) for _ in range(4)]
        assert first[-1] == {
            "event": "synced",
            "path": str(folder.resolve()),
            "ingested": 2,
            "deleted": 0,
            "unchanged": 0,
            "skipped": 1,
            "failed": 0,
        }
        env = next(e for e in first if e["id"] == "env.txt")
        assert env["event"] == "skipped" and env["code"] == "symlink_outside"
        assert env["reason"].startswith("symlink leads outside the folder, to /proc/")

        (folder / "env2.md").symlink_to("/proc/self/environ")
        os.mkfifo(folder / "pipe.md")
        (folder / "big.md").write_text("word " * 400)
        (folder / "c.md").write_text("gamma rays")
        seen: dict[str, dict[str, Any]] = {}
        while len(seen) < 4:
            e = events.get(timeout=TIMEOUT)
            seen[e["id"]] = e
        assert {(e["event"], i, e.get("code")) for i, e in seen.items()} == {
            ("skipped", "env2.md", "symlink_outside"),
            ("skipped", "pipe.md", "special_file"),
            ("failed", "big.md", "too_large"),
            ("ingested", "c.md", None),
        }
        assert {r["id"] for r in cli(data_dir, "list")} == {"a.md", "sub/b.txt", "c.md"}
        assert cli(data_dir, "query", PASSPHRASE) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
