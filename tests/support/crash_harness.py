"""kill -9 at a random instant, then check the promises. Shared by the ``crash`` tests
and ``scripts/crash-loop`` (the long run, figures in benchmarks/RELIABILITY.md).

One loop: a fresh data dir, a fresh child (``tests/support/crash_child.py``) running one
operation in a loop, a SIGKILL at a random instant, then in this process: exactly one
credential opens the store (for change-passphrase: the last acknowledged passphrase or
the one in flight, never both, never neither), every acknowledged write is present
(and every acknowledged delete still deleted), and ``verify`` is clean.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentzero_store import MemoryEntry, SqliteMemoryStore
from agentzero_store.base.config import Layout
from agentzero_store.base.errors import AgentZeroStoreError, WrongKeyError
from agentzero_store.ops import verify_store
from agentzero_store.storage.credentials import Credential
from agentzero_store.storage.keys import unlock
from rag.store import DocumentStore

from .crash_child import FAST, PASSPHRASE, SCENARIOS, passphrase

CHILD = str(Path(__file__).with_name("crash_child.py"))


@dataclass
class LoopResult:
    """The outcome of one kill."""

    scenario: str
    acked: int
    lost: list[str] = field(default_factory=list)
    opened: bool = True
    clean: bool = True
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Nothing lost, opened with exactly one credential, verify clean."""
        return not self.lost and self.opened and self.clean


def prepare(scenario: str, root: Path) -> list[str]:
    """Create the store; the key scenarios get data first. Returns the tokens written."""
    tokens: list[str] = []
    with SqliteMemoryStore.open(root, passphrase=PASSPHRASE, config=FAST, hnsw=True) as mem:
        if scenario in ("change_passphrase", "rotate"):
            vecs = np.random.default_rng(0).normal(size=(30, 384)).astype("float32")
            ids = mem.append_many([MemoryEntry(content=f"kept {i}") for i in range(30)], vecs)
            tokens += [f"mem:{i}" for i in ids]
    if scenario in ("change_passphrase", "rotate"):
        with DocumentStore.open(root, passphrase=PASSPHRASE, config=FAST) as docs:
            for i in range(10):
                docs.ingest(f"kept-{i}", f"a kept document number {i}")
                tokens.append(f"doc:kept-{i}")
    return tokens


def run_loop(scenario: str, workdir: Path, seed: int, max_delay: float = 0.5) -> LoopResult:
    """One loop: prepare, run the child, kill it at a random instant, check."""
    root = workdir / f"{scenario}-{seed}"
    tokens, n_acked = kill_child(scenario, root, seed, max_delay)
    return check(scenario, root, tokens, n_acked)


def kill_child(scenario: str, root: Path, seed: int, max_delay: float) -> tuple[list[str], int]:
    """Prepare, run the child, SIGKILL it at a random instant; the tokens it acknowledged."""
    tokens = prepare(scenario, root)
    # -P: the script's folder (tests/support/) must never shadow the code under test
    # (tests/ holds a ``rag`` test package); PYTHONPATH names the checkout this runs from.
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.Popen(
        [sys.executable, "-P", str(CHILD), scenario, str(root), str(seed)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()  # wait until it is really working
    if not first:
        child.wait()
        raise RuntimeError(f"{scenario} child died before its first write:\n{child.stderr.read()}")
    time.sleep(random.Random(seed).uniform(0.0, max_delay))
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    # Only complete lines count: a line cut by the kill was never fully printed.
    lines = [first] + [ln for ln in rest.splitlines(keepends=True) if ln.endswith("\n")]
    acked = [ln.split()[1] for ln in lines if ln.startswith("ACK ")]
    return tokens + acked, sum(not a.startswith("try-") for a in acked)


DAMAGES = {
    "memory_append": ("wal_deleted", "db_deleted"),
    "doc_ingest": ("log_deleted", "log_emptied", "log_truncated"),
    "compact": ("log_deleted", "log_emptied", "log_truncated"),
}


@dataclass
class DamageResult:
    """What a damaged source did to the next open."""

    scenario: str
    damage: str
    acked: int
    detected: bool = False
    lost: list[str] = field(default_factory=list)  # acknowledged, gone, and NOT detected
    overwritten: bool = False  # the refused open changed a source byte
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Detected or nothing lost, and nothing overwritten."""
        return not self.lost and not self.overwritten


def _damage(root: Path, damage: str, rng: random.Random) -> str:
    layout = Layout(root)
    if damage == "wal_deleted":
        wal = root / "memory.db-wal"
        size = wal.stat().st_size if wal.exists() else 0
        wal.unlink(missing_ok=True)
        return f"WAL of {size} bytes deleted"
    if damage == "db_deleted":
        layout.memory_db.unlink()
        (root / "memory.db-wal").unlink(missing_ok=True)
        return "memory.db deleted"
    log = layout.rag_log
    if damage == "log_deleted":
        log.unlink()
        return "log deleted"
    if damage == "log_emptied":
        log.write_bytes(b"")
        return "log emptied"
    starts, at = [], 0
    for line in log.read_bytes().splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    keep = rng.randrange(1, max(2, len(starts)))  # the header and fewer than all records
    with open(log, "r+b") as f:
        f.truncate(starts[keep])
    return f"log cut to {keep - 1} of {len(starts) - 1} records"


def _sources(root: Path) -> dict[str, bytes | None]:
    layout = Layout(root)
    return {
        str(p): (p.read_bytes() if p.exists() else None)
        for p in (layout.memory_db, root / "memory.db-wal", layout.rag_log)
    }


def run_damage_loop(scenario: str, damage: str, workdir: Path, seed: int) -> DamageResult:
    """kill -9 a writer, damage a source the way a careless user or a disk would, reopen:
    the loss is detected (``SourceLossError``, sources untouched) or nothing acknowledged
    is missing."""
    root = workdir / f"{scenario}-{damage}-{seed}"
    tokens, n_acked = kill_child(scenario, root, seed, 0.5)
    result = DamageResult(scenario, damage, n_acked)
    result.detail = _damage(root, damage, random.Random(seed))
    before = _sources(root)
    loss = check(scenario, root, tokens, n_acked)
    if not loss.opened:
        result.detected = "SourceLossError" in loss.detail
        result.detail += f"; {loss.detail}"
        if not result.detected:
            result.lost = ["(refused with another error)"]
        result.overwritten = _sources(root) != before
        return result
    result.lost = loss.lost
    return result


def _credential(scenario: str, root: Path, acked: list[str], result: LoopResult) -> str | None:
    if scenario != "change_passphrase":
        return PASSPHRASE
    k = max([int(t.split(":")[1]) for t in acked if t.startswith("pw:")], default=0)
    layout = Layout(root)
    opens = []
    for i in range(max(0, k - 1), k + 2):
        try:
            unlock(layout, Credential.from_passphrase(passphrase(i)))
            opens.append(i)
        except WrongKeyError:
            pass
    if len(opens) != 1 or opens[0] not in (k, k + 1):
        result.opened = False
        result.detail = f"passphrases {opens} open the store; acknowledged up to {k}"
        return None
    return passphrase(opens[0])


def check(scenario: str, root: Path, tokens: list[str], n_acked: int) -> LoopResult:
    """Reopen and check every promise after a kill."""
    result = LoopResult(scenario, n_acked)
    cred = _credential(scenario, root, tokens, result)
    if cred is None:
        return result
    # A delete that was announced may have landed even if it was never acknowledged.
    deleted = {t.split(":", 1)[1] for t in tokens if t.startswith(("del:", "try-del:"))}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn tail is cut: that is the point
            # The memory store opens first: it finishes an interrupted rotation.
            with (
                SqliteMemoryStore.open(root, passphrase=cred, config=FAST, create=False) as mem,
                DocumentStore.open(root, passphrase=cred, config=FAST, create=False) as docs,
            ):
                for t in tokens:
                    kind, _, key = t.partition(":")
                    present = {
                        "mem": lambda k: mem.get(k) is not None,
                        "doc": lambda k: k in deleted or docs.get(k) is not None,
                        "del": lambda k: docs.get(k) is None,
                    }.get(kind)
                    if present is not None and not present(key):
                        result.lost.append(t)
    except AgentZeroStoreError as exc:
        result.opened, result.detail = False, f"{type(exc).__name__}: {exc}"
        return result
    report = verify_store(root, Credential.from_passphrase(cred))
    if not report.clean:
        result.clean = False
        result.detail = "; ".join(f"{f.file} {f.where}: {f.problem}" for f in report.findings)
    return result


__all__ = [
    "DAMAGES",
    "SCENARIOS",
    "DamageResult",
    "LoopResult",
    "check",
    "kill_child",
    "prepare",
    "run_damage_loop",
    "run_loop",
]
