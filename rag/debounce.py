"""Paths waiting for a quiet period before the folder watcher looks at them again.

Editors save in bursts (a probe file, a backup, write-to-temp and rename): the watcher
acts on a path only once no event touched it for ``DEBOUNCE`` seconds, or ``MAX_DELAY``
seconds after its first event, so a file written without pause still syncs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

DEBOUNCE = 0.3  # seconds a path must be quiet before it is looked at again
MAX_DELAY = 5.0  # seconds: a file written without pause is still synced this often


class Debouncer:
    """Paths waiting for a quiet period, coalesced (thread-safe; the clock is injected).

    A path is due once no event touched it for ``delay`` seconds, or ``max_delay``
    seconds after its first event, so a file appended to without pause still syncs.
    """

    def __init__(
        self,
        delay: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.delay, self.max_delay, self.clock = delay, max_delay, clock
        self._lock = threading.Lock()
        self._pending: dict[Path, tuple[float, float, bool]] = {}  # first, last, is_dir

    def add(self, path: Path, is_dir: bool = False) -> None:
        """Note an event on ``path`` (restarts its quiet period)."""
        now = self.clock()
        with self._lock:
            first, _, was_dir = self._pending.get(path, (now, now, False))
            self._pending[path] = (first, now, is_dir or was_dir)

    def _due_at(self, first: float, last: float) -> float:
        return min(last + self.delay, first + self.max_delay)

    def pop_due(self) -> dict[Path, bool]:
        """Remove and return the paths whose quiet period is over (path → is_dir)."""
        now = self.clock()
        with self._lock:
            due = {p: v for p, v in self._pending.items() if self._due_at(v[0], v[1]) <= now}
            for p in due:
                del self._pending[p]
        return {p: v[2] for p, v in due.items()}

    def next_due_in(self) -> float | None:
        """Seconds until the next path is due (0 if one is), None when nothing waits."""
        now = self.clock()
        with self._lock:
            if not self._pending:
                return None
            return max(
                0.0, min(self._due_at(f, last) for f, last, _ in self._pending.values()) - now
            )

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


__all__ = ["DEBOUNCE", "MAX_DELAY", "Debouncer"]
