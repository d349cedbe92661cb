"""``agentzero store migrate``: move the memory store and its agent memory between a data
dir and PostgreSQL.

``--to`` names the target; the source is ``--from``, else the global ``--database-url``
or ``--data-dir``. So ``agentzero --data-dir D store migrate --to postgresql://...``
moves a data dir's memory store to PostgreSQL, and ``agentzero store migrate --from
postgresql://... --to D`` moves it back. The work and its guarantees are
``ops.migrate``: the same key header on both sides, idempotent and resumable, checked.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..ops.migrate import PAGE, MigrateReport, migrate_store
from ..ops.migrate_check import SAMPLE
from .common import JsonOpt, emit, memory_target, out, progress, show_table, store_kwargs


def migrate_cmd(
    to: Annotated[
        str,
        typer.Option(
            "--to", help="The target: a PostgreSQL URL or a data dir.", show_default=False
        ),
    ],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The source (default: --database-url if given, else the data dir).",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=10_000, help="Memories per transaction.")
    ] = PAGE,
    sample: Annotated[
        int,
        typer.Option(
            "--sample", min=0, max=1_000, help="Memories turned into queries for the check."
        ),
    ] = SAMPLE,
    json_out: JsonOpt = False,
) -> None:
    """Copy every memory (with its vector) and the agent memory above them to --to,
    then check the copy: counts per scope, every memory and its agent-memory state,
    every fact, edge, history line and the rest, and the answers to sample queries.
    The target keeps the store's keys (the same passphrase opens it). Refused while
    forgets are pending in the undo area. Run it again after an interruption: it
    resumes, and nothing is doubled."""
    source = from_ if from_ is not None else memory_target()
    with progress("migrating", None) as advance:
        r = migrate_store(
            source,
            to,
            **store_kwargs(),
            page=batch,
            sample=sample,
            total=advance.total,
            advance=advance,
        )
    emit(r, lambda: _show(r))


def _show(r: MigrateReport) -> None:
    out.print(
        f"migrated store {r.store_id}: {r.memories} memories from {r.source} to {r.target} "
        f"({r.written} written now, the rest by an earlier run) in {r.seconds:.1f} s"
    )
    if r.agent_memory:
        moved = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in r.agent_memory.items())
        out.print(f"agent memory: {moved}")
    c = r.checked
    out.print(
        f"checked: {c['memories']} memories, {c['semantic_queries']} semantic and "
        f"{c['keyword_queries']} keyword queries answered the same on both sides"
    )
    if "agent_memories" in c:
        out.print(
            f"checked the agent memory: {c['agent_memories']} memories' state, "
            f"{c['agent_memory_rows']} rows, {c['agent_memory_reads']} reads and "
            f"{c['agent_memory_queries']} keyword recalls the same on both sides"
        )
    t = Table("org", "agent", "memories")
    for s in r.scopes:
        t.add_row(s["org_id"], s["agent_id"], str(s["count"]))
    show_table(t)


__all__ = ["migrate_cmd"]
