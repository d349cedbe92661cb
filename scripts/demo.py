"""The demo (`make demo`): an encrypted store built from fixtures/, recalled and queried.

Creates a fresh encrypted data dir (a temp dir unless --data-dir is given), appends the
fixture memories with the local all-MiniLM-L6-v2 embedder, recalls them semantically,
by keyword and hybrid (scoped to one org/agent), ingests the fixture documents and queries
them, gives an agent a memory (turns, a fact that supersedes, a procedure, recall, forget
and undo), then shows that no plaintext reached the disk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentzero_store import AgentMemory, LocalEmbedder, MemoryEntry, MemoryHit, SqliteMemoryStore
from rag import DocumentStore

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
console = Console(highlight=False)


def show_hits(title: str, hits: list[MemoryHit]) -> None:
    """Print recall hits as a table."""
    t = Table(title=title, title_justify="left")
    for col in ("#", "score", "ranks", "conversation", "content"):
        t.add_column(col)
    for i, h in enumerate(hits, 1):
        ranks = " ".join(f"{k}={v}" for k, v in h.ranks.items())
        t.add_row(str(i), f"{h.score:.3f}", ranks, h.entry.conversation_id, h.entry.content)
    console.print(t)


def plaintext_hits(root: Path, texts: list[str]) -> int:
    """How many (file, text) pairs leak: each text searched in every file's raw bytes."""
    blobs = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    return sum(1 for t in texts for b in blobs if t.encode() in b)


def main() -> int:
    """Run the demo; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, help="where to create the store (default: temp)")
    args = ap.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="agentzero-demo-")) / "data"
    key = os.urandom(32)  # a raw 32-byte key; a passphrase works the same way

    console.rule("[bold]agentzero_store demo")
    t0 = time.perf_counter()
    embedder = LocalEmbedder()
    entries = [
        MemoryEntry.from_dict(json.loads(line))
        for line in (FIXTURES / "memories.jsonl").read_text().splitlines()
        if line
    ]
    with SqliteMemoryStore.open(data_dir, key=key, embedder=embedder) as store:
        store.append_many(entries)
        console.print(
            f"created encrypted store [cyan]{data_dir}[/] and appended "
            f"{len(entries)} memories ({time.perf_counter() - t0:.1f} s incl. model load)"
        )
        scope = {"org_id": "acme", "agent_id": "assistant-1"}
        show_hits(
            "semantic: 'what can't I eat?' (org acme, agent assistant-1)",
            store.recall("what can't I eat?", 3, mode="semantic", **scope),
        )
        show_hits(
            "keyword: 'Berlin report'", store.recall("Berlin report", 3, mode="keyword", **scope)
        )
        show_hits(
            "hybrid: 'when is my trip to Lisbon'",
            store.recall("when is my trip to Lisbon", 3, mode="hybrid", **scope),
        )
        show_hits(
            "hybrid, org globex only: 'trip'",
            store.recall("trip", 3, mode="hybrid", org_id="globex"),
        )
    run_rag_demo(data_dir, key, embedder)
    agent_texts = run_agent_memory_demo(data_dir, key, embedder)

    texts = [e.content for e in entries] + agent_texts
    leaks = plaintext_hits(data_dir, texts + ["Alfama is the oldest district"])
    console.print(
        f"plaintext scan of {data_dir}: [bold]{leaks}[/] of {len(texts) + 1} texts found on disk"
    )
    # Say where the files are: a temp dir outlives the demo, and its key (random, never
    # written down) is gone with this process, so nothing can open it again.
    left = data_dir if args.data_dir else data_dir.parent
    console.print(
        f"the demo's encrypted files are left in [cyan]{left}[/] (their random key is "
        f"gone: look at them, then remove them with `rm -rf {left}`)",
        soft_wrap=True,
    )
    return 0 if leaks == 0 else 1


def run_rag_demo(data_dir: Path, key: bytes, embedder: LocalEmbedder) -> None:
    """Ingest fixtures/docs into the encrypted document store and query it in every mode."""
    with DocumentStore.open(data_dir, key=key, embedder=embedder) as docs:
        report = docs.ingest_dir(FIXTURES / "docs")
        console.print(f"ingested {report.total} documents from fixtures/docs")
        for mode in ("bm25", "semantic", "hybrid"):
            hits = docs.query("boiler pressure too low", limit=2, mode=mode)
            t = Table(title=f"rag query ({mode}): 'boiler pressure too low'", title_justify="left")
            for col in ("#", "id", "score", "text"):
                t.add_column(col)
            for i, h in enumerate(hits, 1):
                t.add_row(str(i), h.id, f"{h.score:.3f}", h.snippet(160))
            console.print(t)


def run_agent_memory_demo(data_dir: Path, key: bytes, embedder: LocalEmbedder) -> list[str]:
    """Turns, a fact that supersedes, a procedure, recall, forget and undo; returns the
    texts written (for the plaintext scan)."""
    turns = ["I moved to Porto last year", "Actually I just moved again, to Lisbon"]
    with AgentMemory.open(
        data_dir, key=key, org_id="acme", agent_id="assistant-1", embedder=embedder
    ) as mem:
        for text in turns:
            mem.add_turn("trip-chat", "user", text, speaker="Ana")
        mem.assert_fact("Ana", "lives_in", "Porto")
        r = mem.assert_fact("Ana", "lives_in", "Lisbon")
        (fact,) = mem.facts(subject="Ana")
        console.print(
            f"agent memory: Ana lives_in [cyan]{fact.object}[/] "
            f"(superseded {len(r.superseded)} older fact; history: "
            f"{', '.join(h.op for h in mem.history())})"
        )
        p = mem.record_outcome("run the tests before a release", success=True)
        console.print(f"procedure '{p.action}': reliability {p.reliability:.2f}")
        t = Table(title="agent recall: 'where does Ana live now?'", title_justify="left")
        for col in ("#", "type", "ranks", "content"):
            t.add_column(col)
        for i, h in enumerate(mem.recall("where does Ana live now?", k=3), 1):
            ranks = " ".join(f"{k}={v}" for k, v in h.ranks.items())
            t.add_row(str(i), h.memory.type, ranks, h.memory.content)
        console.print(t)
        receipt = mem.forget(conversation_id="trip-chat")
        gone = len(mem.recall("moved", k=5, mode="keyword"))
        mem.undo(receipt.token)
        back = len(mem.recall("moved", k=5, mode="keyword"))
        console.print(f"forget -> {gone} hits for 'moved'; undo -> {back} hits")
    return turns


if __name__ == "__main__":
    sys.exit(main())
