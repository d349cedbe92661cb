"""How the agent memory's commands (``agent_memory``) show results to a person: tables
(one tab-separated line per row off a terminal, see ``common.show_table``), short
sentences, and a progress bar for consolidation. ``--json`` never comes here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..agentmem import (
    ConsolidationReport,
    EraseReport,
    Fact,
    ForgetReceipt,
    Memory,
    RecallHit,
    WriteResult,
)
from .common import STATE, count_of, err, out, show_table


def _when(t: datetime | None) -> str:
    return t.isoformat(timespec="seconds") if t is not None else ""


def written(r: WriteResult) -> None:
    """What a grant, remember or fact did."""
    if r.status == "duplicate":
        out.print(f"already remembered: {r.id} (nothing written)")
    elif r.status == "updated":
        out.print(f"updated the confidence of {r.id}")
    else:
        out.print(f"remembered {r.id}")
    for old in r.superseded:
        out.print(f"superseded {old}")


def memories(found: list[Memory]) -> None:
    """A table of memories."""
    if not found:
        out.print("no memories")
        return
    t = Table("created", "type", "conversation", "confidence", "id", "content")
    for m in found:
        content = f"[archived] {m.content}" if m.archived else m.content
        t.add_row(
            _when(m.created_at), m.type, m.conversation_id, f"{m.confidence:.2f}", m.id, content
        )
    show_table(t)


def hits(found: list[RecallHit], explain: bool) -> None:
    """A table of recall hits, best first (with ``explain``: each signal's share, and the
    memories a derived one came from)."""
    if not found:
        out.print("no results")
        return
    t = Table("#", "score", "ranks", "type", "id", "content")
    if explain:
        t.add_column("explain")
    for i, h in enumerate(found, 1):
        row = [
            str(i),
            f"{h.score:.4f}",
            " ".join(f"{k}={v}" for k, v in h.ranks.items()),
            h.memory.type,
            h.id,
            h.memory.content,
        ]
        if explain:
            shares = " ".join(
                f"{k}:{e['rank']:.0f}x{e['weight']:g}=+{e['score']:.4f}"
                for k, e in (h.explain or {}).items()
            )
            # Where a derived memory or an extracted fact came from: its source turns.
            came = f" from {','.join(h.memory.sources)}" if h.memory.sources else ""
            row.append(shares + came)
        t.add_row(*row)
    show_table(t)


def facts(found: list[Fact]) -> None:
    """A table of facts (a closed one says why)."""
    if not found:
        out.print("no facts")
        return
    t = Table(
        "subject", "predicate", "object", "confidence", "valid from", "valid to", "status", "id"
    )
    for f in found:
        status = "current" if f.current else "retracted" if f.retracted else "superseded"
        t.add_row(
            f.subject,
            f.predicate,
            f.object,
            f"{f.confidence:.2f}",
            _when(f.valid_from),
            _when(f.valid_to),
            status,
            f.id,
        )
    show_table(t)


def forgotten(r: ForgetReceipt) -> None:
    """A forget's receipt: how many, and the undo command with its token."""
    if r.count == 0:
        out.print("nothing matched; nothing was forgotten")
        return
    out.print(f"forgot {count_of(r.count)}; until {_when(r.recoverable_until)} undo with:")
    out.print(f"  agentzero memory undo {r.token}")


def erased(r: EraseReport) -> None:
    """An erase's report."""
    out.print(f"erased {count_of(r.count)} for good")
    if r.pending:
        err.print(
            "[yellow]note:[/] another process is reading the store; old pages still hold "
            "the text until the next erase, close or open removes them"
        )


def consolidated(r: ConsolidationReport) -> None:
    """What a consolidation did (or would do)."""
    head = "would" if r.dry_run else "did"
    counts = {k: v for k, v in r.to_dict().items() if k != "dry_run"}
    out.print(f"consolidation {head}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@contextmanager
def steps(description: str) -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar over named steps on stderr (hidden with ``--json`` or off a
    terminal); yields the ``progress(step, done, total)`` callback ``consolidate`` takes."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=STATE.json or not err.is_terminal,
    ) as bar:
        task = bar.add_task(description, total=None)

        def tell(step: str, done: int, total: int) -> None:
            bar.update(task, description=f"{description}: {step}", completed=done, total=total)

        yield tell
