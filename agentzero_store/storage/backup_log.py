"""Which backups this machine took of each store: the last one's time and seqs.

Kept outside every data dir, in the user's state dir (env ``AGENTZERO_STATE_DIR``, else
the platform's, e.g. ``~/.local/state/agentzero``), as ``backups.json``: ``{store id:
{"at": ISO 8601, "memory_seq": int | None, "log_seq": int | None}}``. A backup reads the
store and never writes to it (it needs no writer lock and works on a read-only data dir),
so its note cannot live in the data dir. The note holds no path and no content: a store
id (random), a time and two counters. ``agentzero ui`` shows the last backup's age.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from ..base.errors import StoreIOError
from .fileio import atomic_write, translate_os_errors

log = logging.getLogger(__name__)
FILE = "backups.json"


def state_dir() -> Path:
    """Env ``AGENTZERO_STATE_DIR``, else the platform's user state dir for agentzero."""
    env = os.environ.get("AGENTZERO_STATE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("agentzero", appauthor=False))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # unreadable or not JSON: start again, say so
        log.warning("%s cannot be read (%s); it is started again", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def note_backup(store_id: str, at: str, memory_seq: int | None, log_seq: int | None) -> bool:
    """Note that a backup of ``store_id`` was completed ``at``. False (with a warning)
    if the state dir cannot be written: the backup itself is complete without it."""
    path = state_dir() / FILE
    notes = _read(path)
    notes[store_id] = {"at": at, "memory_seq": memory_seq, "log_seq": log_seq}
    try:
        with translate_os_errors("writing", path):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(path, json.dumps(notes, indent=1, sort_keys=True).encode() + b"\n")
    except StoreIOError as exc:
        log.warning("the backup is complete, but it could not be noted: %s", exc)
        return False
    return True


def last_backup(store_id: str) -> dict[str, Any] | None:
    """The last backup noted for ``store_id`` on this machine, None if none."""
    note = _read(state_dir() / FILE).get(store_id)
    return note if isinstance(note, dict) and isinstance(note.get("at"), str) else None


__all__ = ["FILE", "last_backup", "note_backup", "state_dir"]
