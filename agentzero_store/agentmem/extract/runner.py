"""Running an extractor over an agent memory's turns: which turns, and how what it finds
is written — through ``remember`` and ``assert_fact``, with the turns as ``sources``,
so a duplicate is a no-op, a new object supersedes the old one, every change lands in
the belief history, and forgetting or erasing a turn takes what was read from it along
(``provenance``). Re-running over the same turns changes nothing: a statement older
than the belief that replaced it is ``stale`` and never brings the old belief back.

``Background`` runs it on a worker thread after ``add_turns``: the turns are durable
before they are queued, so the write never waits on the extractor, and a crash loses at
most an extraction the next ``extract()`` or ``consolidate()`` redoes."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...base.errors import AgentZeroStoreError, InvalidArgumentError
from ...base.limits import check_text
from ..records import Fact, Memory, entity_key
from .protocol import Extraction, Extractor, ExtractReport, FactCandidate, NoteCandidate
from .rules import speaker_of

# ``AgentMemory`` (memory.py) imports this module: here it is ``Memoryish`` (Any), so
# the layer's import graph has no cycle.
Memoryish = Any
log = logging.getLogger(__name__)

PAGE = 500
EXTRACT_MODES = ("manual", "consolidate", "background")


def check_sources(sources: Sequence[str]) -> tuple[str, ...]:
    """``sources`` as a tuple of ids (a str alone is a mistake, not its characters)."""
    if isinstance(sources, str):
        raise InvalidArgumentError(
            "sources must be a sequence of memory ids, not one string",
            hint="sources=[turn_id]",
        )
    return tuple(dict.fromkeys(check_text("source id", s) for s in sources))


def check_mode(mode: str) -> str:
    """``mode`` if it is one of ``EXTRACT_MODES``."""
    if mode not in EXTRACT_MODES:
        raise InvalidArgumentError(
            f"extract must be one of {', '.join(EXTRACT_MODES)}; got {mode!r}"
        )
    return mode


def turns_of(mem: Memoryish, conversation_id: str | None, since: datetime | None) -> list[Memory]:
    """The live turns (episodic memories) of the scope, of one conversation if given,
    made at or after ``since`` if given; oldest first."""
    out: list[Memory] = []
    offset = 0
    while True:
        page = mem.memories(
            types="episodic", conversation_id=conversation_id, limit=PAGE, offset=offset
        )
        out.extend(m for m in page if since is None or m.created_at >= since)
        if len(page) < PAGE:
            break
        offset += PAGE
    out.sort(key=lambda m: (m.created_at, m.id))
    return out


def known_facts(mem: Memoryish, turns: Sequence[Memory]) -> list[Fact]:
    """The facts believed now about the speakers of ``turns``."""
    speakers = sorted({w for w in (speaker_of(t) for t in turns) if w})
    return [f for w in speakers for f in mem.facts(subject=w)]


def run(
    mem: Memoryish, extractor: Extractor, turns: Sequence[Memory], *, dry_run: bool
) -> ExtractReport:
    """Extract from ``turns`` and write (unless ``dry_run``) what was found, in the
    order of its source turns (the later statement wins)."""
    report = ExtractReport(turns=len(turns), dry_run=dry_run)
    if not turns:
        return report
    found: Extraction = extractor.extract(turns, known_facts(mem, turns))
    when = {t.id: t.created_at for t in turns}

    def at(sources: Sequence[str]) -> datetime:
        return max(when[s] for s in sources)

    valid_f = [f for f in found.facts if f.sources and all(s in when for s in f.sources)]
    valid_n = [n for n in found.notes if n.sources and all(s in when for s in n.sources)]
    report.dropped = len(found.facts) + len(found.notes) - len(valid_f) - len(valid_n)
    for f in sorted(valid_f, key=lambda f: at(f.sources)):
        report.facts.append({**f.to_dict(), **_fact(mem, f, at(f.sources), dry_run)})
    for n in sorted(valid_n, key=lambda n: at(n.sources)):
        report.notes.append({**n.to_dict(), **_note(mem, n, dry_run)})
    return report


def _fact(mem: Memoryish, f: FactCandidate, when: datetime, dry_run: bool) -> dict[str, Any]:
    current = mem.facts(subject=f.subject, predicate=f.predicate)
    same = [c for c in current if entity_key(c.object) == entity_key(f.object)]
    if f.negated:
        if dry_run or not same:
            return {"status": "retract" if same else "nothing", "id": None}
        for c in same:
            mem.retract(c.id)
        words = f.predicate.replace("_", " ")
        note = f"{f.subject} no longer {words} {f.object}"
        mem.remember(note, about=(f.subject,), confidence=f.confidence, sources=f.sources)
        return {"status": "retracted", "id": same[0].id}
    if same:  # believed already: never re-weighed by a guess (a hand-asserted 0.9 stays)
        return {"status": "duplicate", "id": same[0].id}
    if f.single_valued and any(c.valid_from > when for c in current):
        return {"status": "stale", "id": None}  # a newer statement replaced this one
    if dry_run:
        return {"status": "new", "id": None}
    r = mem.assert_fact(
        f.subject,
        f.predicate,
        f.object,
        confidence=f.confidence,
        single_valued=f.single_valued,
        valid_from=when,
        sources=f.sources,
    )
    return {"status": r.status, "id": r.id, "superseded": list(r.superseded)}


def _note(mem: Memoryish, n: NoteCandidate, dry_run: bool) -> dict[str, Any]:
    if dry_run:
        return {"status": "new", "id": None}
    r = mem.remember(n.text, about=n.about, confidence=n.confidence, sources=n.sources)
    return {"status": r.status, "id": r.id}


class Background:
    """One worker thread that extracts from the turns ``add_turns`` queues."""

    def __init__(self, mem: Memoryish) -> None:
        self._mem = mem
        self._queue: queue.Queue[list[str] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="agentzero-extract", daemon=True)
        self._thread.start()

    def submit(self, ids: Sequence[str]) -> None:
        """Queue turns (already durable) for extraction; returns at once."""
        self._queue.put(list(ids))

    def drain(self) -> None:
        """Wait until every queued turn has been read (tests, ``close``)."""
        self._queue.join()

    def stop(self) -> None:
        """Finish the queue, then end the worker."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        while True:
            ids = self._queue.get()
            try:
                if ids is None:
                    return
                self._mem.extract_turns(ids)
            except AgentZeroStoreError as e:  # the turns stay; the next extract() redoes it
                log.warning("background extraction failed: %s", e)
            except Exception:
                log.exception("background extraction failed")
            finally:
                self._queue.task_done()


__all__ = ["Background", "check_mode", "check_sources", "known_facts", "run", "turns_of"]
