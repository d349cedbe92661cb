"""Long actions (verify, consolidate) run in a background thread; the page polls them.

A job is a function of a ``tell(step, done, total)`` callback; its state is read by the
poll route without waiting for the store, so a page shows progress while the job runs.
Jobs keep only counts and the step's name, never memory text.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import AgentZeroStoreError

Tell = Callable[[str, int, int], None]
MAX_JOBS = 50  # finished jobs kept for their pages; older ones are dropped


@dataclass
class Job:
    """One background action and how far it got."""

    id: str
    name: str
    state: str = "running"  # running | done | failed
    step: str = "starting"
    done: int = 0
    total: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict for the poll route."""
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "step": self.step,
            "done": self.done,
            "total": self.total,
            "result": self.result,
            "error": self.error,
            "hint": self.hint,
        }


@dataclass
class Jobs:
    """The server's jobs, by id."""

    _jobs: dict[str, Job] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, name: str, work: Callable[[Tell], dict[str, Any]]) -> Job:
        """Run ``work`` in a daemon thread; return its job at once."""
        job = Job(secrets.token_hex(8), name)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > MAX_JOBS:
                oldest = next(iter(self._jobs))
                if self._jobs[oldest].state == "running":
                    break
                del self._jobs[oldest]

        def tell(step: str, done: int, total: int) -> None:
            job.step, job.done, job.total = step, done, total

        def run() -> None:
            try:
                job.result = work(tell)
                job.state = "done"
            except AgentZeroStoreError as exc:
                job.error, job.hint, job.state = exc.message, exc.hint, "failed"
            except Exception as exc:  # the type only: a message might quote content
                job.error, job.state = f"failed unexpectedly ({type(exc).__name__})", "failed"

        threading.Thread(target=run, name=f"agentzero-ui-{name}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        with self._lock:
            return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        """Every kept job, newest first."""
        with self._lock:
            return list(reversed(self._jobs.values()))


__all__ = ["Job", "Jobs", "Tell"]
