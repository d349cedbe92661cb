"""Vectors for the memories written while no embedder was given.

A memory appended without an embedder (``AgentMemory.open`` without ``embedder=``, the
CLI's and tools' ``--embedder none``) has no vector, so semantic recall cannot find it,
however the store is opened later. A store opened with an embedder of its own model
(or a store with no vector yet) embeds those memories itself (``Backfill``): in a daemon
thread, ``StoreConfig.backfill_batch`` memories at a time, oldest first.

Why a thread, off the hot path: ``add_turn`` and the first query never wait for the
backlog (at most for the one batch holding the embedder), and keyword recall finds the
memories meanwhile. Why batches: each batch is one write transaction that gives its rows
their vectors together with their change-feed entries (the HNSW sidecar replays them as
it replays any insert), so a crash keeps every batch that committed, and what it loses
is only still missing: the next open with an embedder goes on from there. A store whose
vectors are another model's is left alone: ``agentzero store reembed`` switches models.

Missing means: a live memory (not expired, its text not in the archive) without a row in
``memory_vec`` (``sqlite/backfill.py``); on PostgreSQL, without an ``embedding``
(``postgres/backfill.py``). Here: the rule both share (``fits``) and the thread.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable

from ..base.errors import AgentZeroStoreError
from ..embed.vectors import Embedder

log = logging.getLogger(__name__)


def fits(embedder: Embedder | None, model: str | None, dim: int | None) -> bool:
    """True if ``embedder`` may fill in vectors beside those of (``model``, ``dim``)."""
    return (
        embedder is not None
        and model in (None, embedder.model_id)
        and dim
        in (
            None,
            embedder.dimension,
        )
    )


class NoEmbedderWarning(UserWarning):
    """A store with vectors was opened without an embedder (see ``warn_without_embedder``)."""


def warn_without_embedder(model: str) -> None:
    """Say, once per process, what opening a store that holds vectors without an
    embedder costs: what this handle writes gets no vector until one is given."""
    warnings.warn(
        f"this store's memories have {model} vectors, but no embedder was given: semantic "
        "recall will not find the memories written now until the store is opened with "
        f"{model} again (it then embeds them in the background)",
        NoEmbedderWarning,
        stacklevel=3,
    )


class Backfill:
    """Runs ``step(batch)`` in a daemon thread until it returns 0, ``stop`` is called,
    or it raises (logged: the memories stay as they were, the next open tries again)."""

    def __init__(
        self, step: Callable[[int], int], batch: int, finish: Callable[[], None] | None = None
    ) -> None:
        self._step = step
        self._batch = batch
        self._finish = finish  # run by the thread as it ends
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentzero-backfill", daemon=True)
        self.embedded = 0  # memories looked at so far

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                n = self._step(self._batch)
                if n == 0:
                    return
                self.embedded += n
        except AgentZeroStoreError as exc:
            if not self._stop.is_set():  # a store closed under it is no failure
                log.warning("embedding memories without a vector stopped: %s", exc)
        except Exception:  # an embedder's own failure: never an unhandled thread error
            log.exception("embedding memories without a vector failed")
        finally:
            if self._finish is not None:
                self._finish()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the backlog is embedded (or the thread ended); True if it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop after the batch in hand (it commits or not, whole) and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


__all__ = ["Backfill", "NoEmbedderWarning", "fits", "warn_without_embedder"]
